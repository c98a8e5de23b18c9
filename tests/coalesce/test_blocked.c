/*
 * test_blocked.c - a thread blocked writing to a peer that does not read
 * must not block the rest of the process.
 *
 * A writer thread has one byte held, then writes 1 MiB on a blocking
 * socket (SO_SNDBUF 4 KiB) whose peer reads nothing: the write blocks in
 * the kernel. Then, from another thread:
 *   shutdown   shutdown(SHUT_RDWR), the usual way to abort a blocked
 *              writer, returns within 1 s and the writer's call returns
 *   close      close() returns within 1 s (the kernel does not wait for
 *              other threads' calls on the descriptor)
 *   exit       exit(0) ends the process within 1 s (run in a child)
 *   idle       while the writer stays blocked for 500 ms, the process's
 *              threads wake up fewer than 200 times in all: nothing polls
 *              for the writer's lock (run with the default flush=500us)
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>

#include "../common/peer.h"

#define BIG (1 << 20)
#define DEADLINE_MS 1000.0
#define IDLE_WAKEUPS 200 /* in 500 ms; idle: under 10, a 50 us retry: ~4000 */

struct blocked {
	int fd;
	atomic_int done; /* the writer's call returned */
	ssize_t ret;
	int err;
};

/* The writer: one held byte, then a big write that blocks. */
static void *writer_main(void *arg)
{
	struct blocked *b = arg;
	char *big = calloc(1, BIG);

	CHECK(big, "out of memory");
	CHECK(write(b->fd, "x", 1) == 1, "write");
	b->ret = write(b->fd, big, BIG);
	b->err = errno;
	atomic_store(&b->done, 1);
	free(big);
	return NULL;
}

/* A connection to a stalling peer with a writer blocked on it. */
static void start_blocked(struct ct_peer *p, struct blocked *b, pthread_t *t)
{
	ct_peer_start(p, "stall");
	b->fd = ct_connect(p->port);
	ct_set_int(b->fd, SOL_SOCKET, SO_SNDBUF, 4096, "SO_SNDBUF");
	CHECK(pthread_create(t, NULL, writer_main, b) == 0, "pthread_create");
	ct_sleep_ms(100);
	CHECK(!atomic_load(&b->done), "the big write did not block: the test proves nothing");
}

/* Waits up to ms for *flag; returns how long it took, or -1. */
static double wait_flag(atomic_int *flag, double ms)
{
	double t0 = ct_now_ms();

	while (!atomic_load(flag)) {
		if (ct_now_ms() - t0 > ms)
			return -1;
		ct_sleep_ms(1);
	}
	return ct_now_ms() - t0;
}

struct call {
	int fd;
	int how; /* 0 shutdown, 1 close */
	atomic_int done;
};

static void *call_main(void *arg)
{
	struct call *c = arg;

	if (c->how == 0)
		shutdown(c->fd, SHUT_RDWR);
	else
		close(c->fd);
	atomic_store(&c->done, 1);
	return NULL;
}

static void run_call(int how)
{
	const char *name = how == 0 ? "shutdown(SHUT_RDWR)" : "close";
	struct blocked b = { 0 };
	struct call c = { .how = how };
	struct ct_peer p;
	pthread_t tw, tc;
	double dt;

	start_blocked(&p, &b, &tw);
	c.fd = b.fd;
	CHECK(pthread_create(&tc, NULL, call_main, &c) == 0, "pthread_create");
	dt = wait_flag(&c.done, DEADLINE_MS);
	CHECK(dt >= 0, "%s still blocked after %.0f ms while another thread is blocked writing",
	      name, DEADLINE_MS);
	ct_say("%s returned after %.1f ms", name, dt);
	if (how == 0) {
		dt = wait_flag(&b.done, DEADLINE_MS);
		CHECK(dt >= 0, "the blocked write did not return after shutdown");
		ct_say("the blocked write returned %zd (%s)", b.ret, ct_errname(b.ret < 0 ? b.err : 0));
	}
	ct_peer_go(&p); /* lets a writer still in the kernel finish */
	pthread_join(tw, NULL);
	pthread_join(tc, NULL);
	if (how == 0)
		close(b.fd);
	ct_peer_stop(&p);
}

static void exit_while_blocked(void)
{
	struct blocked b = { 0 };
	struct ct_peer p;
	pthread_t t;

	start_blocked(&p, &b, &t);
	exit(0);
}

static void run_exit(int unused)
{
	double t0;
	pid_t pid;
	int st;

	(void)unused;
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		exit_while_blocked();
	t0 = ct_now_ms();
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (ct_now_ms() - t0 > 100 + DEADLINE_MS) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			CHECK(0, "exit(0) did not end the process within %.0f ms while a thread "
			      "was blocked writing", DEADLINE_MS);
		}
		ct_sleep_ms(5);
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child ended with status 0x%x", st);
}

/* Voluntary context switches of thread tid so far. */
static long thread_wakeups(long tid)
{
	char path[64], line[128];
	long n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/status", tid);
	f = fopen(path, "r");
	if (!f)
		return 0; /* the thread ended */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* Wake-ups of all the process's threads so far. */
static long wakeups(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	long sum = 0;

	CHECK(d, "/proc/self/task");
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			sum += thread_wakeups(atol(e->d_name));
	closedir(d);
	return sum;
}

static void run_idle(int unused)
{
	struct blocked b = { 0 };
	struct ct_peer p;
	long w0, used;
	pthread_t t;

	(void)unused;
	start_blocked(&p, &b, &t);
	w0 = wakeups();
	ct_sleep_ms(500);
	used = wakeups() - w0;
	ct_say("%ld thread wake-ups in 500 ms while a write was blocked", used);
	CHECK(used < IDLE_WAKEUPS, "%ld thread wake-ups in 500 ms while a write was blocked: "
	      "something polls", used);
	ct_peer_go(&p);
	pthread_join(t, NULL);
	close(b.fd);
	ct_peer_stop(&p);
}

static const struct ct_case cases[] = {
	{ "shutdown", run_call, 0 },
	{ "close", run_call, 1 },
	{ "exit", run_exit, 0 },
	{ "idle", run_idle, 0 },
};

int main(int argc, char **argv)
{
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
