/*
 * stress_conns.c - 1,000 concurrent connections driven by 8 threads:
 * every byte accepted reaches the sink once, in order.
 *
 *   stress_conns [CONNS [THREADS [KIB]]]   (default 1000 8 48)
 *
 * run.sh runs it under coalesce, audit and without the library. Each
 * thread connects its share of the connections (all open at once), then
 * goes round them writing pieces of 1..4096 bytes (log-uniform) with every
 * call family, now and then polling (a flush of every connection of the
 * process, racing the other threads and the timer) or peeking with
 * recv(MSG_DONTWAIT) (a read trigger), until each connection carried KIB
 * KiB; then closes them. The sink (no library) hashes each connection.
 */
#include <pthread.h>

#include "../common/sink.h"

struct wconn {
	int fd;
	uint64_t seed;
	struct st_sent sent;
};

static struct st_sink sink;
static struct wconn *conns;
static int nconns, nthreads;
static long long target;

/* One piece on c, all of it (going on after short writes). */
static void piece(struct wconn *c)
{
	static __thread unsigned char buf[4096];
	size_t n = ct_rand_size(&c->seed, sizeof(buf)), off = 0;
	enum ct_how how = (enum ct_how)(ct_rand(&c->seed) % CT_NHOW);

	ct_fill(&c->seed, buf, n);
	while (off < n) {
		ssize_t r = ct_send(c->fd, buf + off, n - off, how, 0, 3);

		if (r < 0 && errno == EINTR)
			continue;
		CHECK(r > 0, "send of %zu bytes on fd %d", n - off, c->fd);
		off += (size_t)r;
	}
	st_account(&c->sent, buf, n);
}

/* Now and then, what an event loop does between writes. */
static void sometimes_wait(struct wconn *c)
{
	uint64_t x = ct_rand(&c->seed) % 64;
	char b;

	if (x == 0) {
		struct pollfd p = { .fd = c->fd, .events = POLLOUT };

		CHECK(poll(&p, 1, 1) >= 0, "poll");
	} else if (x == 1) {
		CHECK(recv(c->fd, &b, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN, "recv: the sink sent data");
	}
}

static void *writer(void *arg)
{
	int t = (int)(intptr_t)arg, busy = 1;

	for (int i = t; i < nconns; i += nthreads)
		conns[i].fd = st_connect(&sink, (uint32_t)i);
	while (busy) {
		busy = 0;
		for (int i = t; i < nconns; i += nthreads) {
			struct wconn *c = &conns[i];

			if (c->sent.total >= target)
				continue;
			busy = 1;
			piece(c);
			sometimes_wait(c);
		}
	}
	for (int i = t; i < nconns; i += nthreads)
		CHECK(close(conns[i].fd) == 0, "close");
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[64];
	struct st_result *res;
	double t0;

	st_maybe_sink(argc, argv);
	ct_prog = "stress_conns";
	ct_variant = getenv("NAGLEFIX_MODE") ? getenv("NAGLEFIX_MODE") : "no-shim";
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, ct_on_alarm);
	alarm(120);
	nconns = argc > 1 ? atoi(argv[1]) : 1000;
	nthreads = argc > 2 ? atoi(argv[2]) : 8;
	target = (argc > 3 ? atoll(argv[3]) : 48) * 1024;
	CHECK(nconns > 0 && nconns <= ST_MAX_CONNS && nthreads > 0 && nthreads <= 64, "arguments");
	st_raise_nofile();
	conns = calloc((size_t)nconns, sizeof(*conns));
	res = calloc((size_t)nconns, sizeof(*res));
	CHECK(conns && res, "out of memory");
	for (int i = 0; i < nconns; i++) {
		conns[i].seed = 0x5eed0000u + (uint64_t)i;
		conns[i].sent.hash = CT_FNV_INIT;
	}
	st_sink_start(&sink, nconns);
	t0 = ct_now_ms();
	for (int t = 0; t < nthreads; t++)
		CHECK(pthread_create(&th[t], NULL, writer, (void *)(intptr_t)t) == 0, "pthread_create");
	for (int t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	st_sink_results(&sink, res, 60);
	for (int i = 0; i < nconns; i++)
		st_expect_same(&res[i], (uint32_t)i, &conns[i].sent, 1);
	ct_say("%d connections, %d threads, %lld KiB each: all bytes once, in order (%.0f ms)",
	       nconns, nthreads, target / 1024, ct_now_ms() - t0);
	return 0;
}
