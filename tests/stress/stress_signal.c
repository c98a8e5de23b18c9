/*
 * stress_signal.c - interposed functions called from a signal handler
 * that interrupts the program's writes: nothing lost, nothing duplicated,
 * no deadlock.
 *
 *   stress_signal other|same|quiet [SECONDS]   (default 2)
 *
 * SIGALRM comes every 100 us (setitimer, SA_RESTART) while the main
 * thread writes a hashed stream to connection M with every call family.
 * The handler, each time:
 *   other  writes a 16-byte record to a second connection H (write, send,
 *          writev, sendmsg, sendto in turn), peeks at H (recv with
 *          MSG_DONTWAIT), polls H with a zero timeout and now and then
 *          with 1 ms (a flush of every connection), reads F_GETFL with
 *          fcntl, and dup()s and close()s a pipe;
 *   same   writes its record to M itself, the connection whose write it
 *          interrupted (the stream then interleaves at write boundaries:
 *          the sink checks count and byte sum, not order);
 *   quiet  does the same calls as other but never writes (reads, polls,
 *          fcntl, dup, close only).
 * A watchdog thread fails the test when the main thread makes no progress
 * for 5 s, and says where it is stuck (a self-deadlock in the library).
 *
 * What it found, all fixed since (the guard of src/core/nf_guard.h): the
 * handler's call waited for a lock the thread it interrupted held.
 *   coalesce same   nf_coalesce_send -> pthread_mutex_lock(&c->lock), held
 *                   by the interrupted send_through() on the same socket
 *   coalesce other  append -> pending_add -> plock, held by the interrupted
 *                   pending_del() (any connection going empty or not)
 *   audit (all)     nf_audit_send_begin / nf_audit_read_begin -> alock, held
 *                   by the interrupted nf_audit_send_begin/_end
 * nodelay takes no lock and passes. Then, under coalesce other, one run in
 * four: the handler's first record overtook H's id, still held, so the
 * sink saw no connection 1 (fixed: handler_push, now nf_co_handler_push in src/actions/coalesce/coalesce_handler.c).
 */
#include <pthread.h>
#include <sys/time.h>

#include "../common/sink.h"

enum { OTHER, SAME, QUIET };

static int mode, mfd, hfd, pipefd[2];
static volatile sig_atomic_t in_handler;
static struct st_sent msent, hsent;
static _Atomic unsigned long long progress, signals;
static uint32_t hseq;

/* The handler's record: "H", its sequence number, padding. */
static void handler_write(int fd)
{
	unsigned char rec[16] = { 'H' };
	struct iovec v = { .iov_base = rec, .iov_len = sizeof(rec) };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
	size_t off = 0;

	memcpy(rec + 4, &hseq, sizeof(hseq));
	while (off < sizeof(rec)) {
		ssize_t r;

		v.iov_base = rec + off;
		v.iov_len = sizeof(rec) - off;
		switch (hseq % 5) {
		case 0: r = write(fd, rec + off, sizeof(rec) - off); break;
		case 1: r = send(fd, rec + off, sizeof(rec) - off, 0); break;
		case 2: r = writev(fd, &v, 1); break;
		case 3: r = sendmsg(fd, &m, 0); break;
		default: r = sendto(fd, rec + off, sizeof(rec) - off, 0, NULL, 0); break;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			_exit(41); /* no CHECK in a handler */
		off += (size_t)r;
	}
	st_account(fd == mfd ? &msent : &hsent, rec, sizeof(rec));
	hseq++;
}

static void on_alarm(int sig)
{
	int saved = errno, d;
	struct pollfd p = { .fd = hfd, .events = POLLIN };
	char b;

	(void)sig;
	in_handler = 1;
	signals++;
	if (mode == OTHER)
		handler_write(hfd);
	else if (mode == SAME)
		handler_write(mfd);
	if (mode != SAME) {
		(void)recv(hfd, &b, 1, MSG_DONTWAIT);
		(void)poll(&p, 1, 0);
		if (signals % 64 == 0)
			(void)poll(&p, 1, 1);
		(void)fcntl(hfd, F_GETFL);
		d = dup(pipefd[0]);
		if (d >= 0)
			close(d);
	}
	in_handler = 0;
	errno = saved;
}

/* Fails the test if the main thread stops moving for 5 s. */
static void *watchdog(void *arg)
{
	unsigned long long last = 0, now;
	int still = 0;

	(void)arg;
	for (;;) {
		ct_sleep_ms(500);
		now = progress;
		still = now == last ? still + 1 : 0;
		last = now;
		if (still >= 10) {
			fprintf(stderr, "FAIL %s %s: deadlock: the main thread made no progress for 5 s, "
				"%s (%llu signals, %llu pieces written)\n", ct_prog, ct_variant,
				in_handler ? "stuck inside the signal handler's interposed call"
					   : "stuck outside the handler", (unsigned long long)signals, now);
			syscall(SYS_exit_group, 3);
		}
	}
	return NULL;
}

static void arm(long us)
{
	struct itimerval it = { .it_interval = { 0, us }, .it_value = { 0, us } };

	CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0, "setitimer");
}

/* One piece of the main stream on M, with a random call family. */
static void main_piece(uint64_t *seed)
{
	static unsigned char buf[8192];
	size_t n = ct_rand_size(seed, sizeof(buf)), off = 0;
	enum ct_how how = (enum ct_how)(ct_rand(seed) % CT_NHOW);
	sigset_t block, old;

	ct_fill(seed, buf, n);
	while (off < n) {
		ssize_t r = ct_send(mfd, buf + off, n - off, how, 0, 2);

		if (r < 0 && errno == EINTR)
			continue;
		CHECK(r > 0, "send of %zu bytes", n - off);
		/* account before the handler can add its own record after these bytes */
		sigemptyset(&block);
		sigaddset(&block, SIGALRM);
		sigprocmask(SIG_BLOCK, &block, &old);
		st_account(&msent, buf + off, (size_t)r);
		sigprocmask(SIG_SETMASK, &old, NULL);
		off += (size_t)r;
	}
	progress++;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct st_result res[2];
	struct st_sink sink;
	uint64_t seed = 7;
	pthread_t wd;
	double end;

	st_maybe_sink(argc, argv);
	ct_prog = "stress_signal";
	CHECK(argc >= 2, "usage: stress_signal other|same|quiet [SECONDS]");
	ct_variant = argv[1];
	mode = strcmp(argv[1], "same") == 0 ? SAME : strcmp(argv[1], "quiet") == 0 ? QUIET : OTHER;
	CHECK(mode != OTHER || strcmp(argv[1], "other") == 0, "unknown variant '%s'", argv[1]);
	signal(SIGPIPE, SIG_IGN);
	msent.hash = hsent.hash = CT_FNV_INIT;
	CHECK(pipe(pipefd) == 0, "pipe");
	st_sink_start(&sink, 2);
	mfd = st_connect(&sink, 0);
	hfd = st_connect(&sink, 1);
	/* The ids leave before the first signal (a wait flushes every
	 * connection): under coalesce same, a handler's record that finds the
	 * socket's lock held by the write it interrupted goes straight to the
	 * kernel, ahead of what is held (README, "Signal handlers"), and the
	 * sink must see each id first. */
	poll(NULL, 0, 1);
	{
		sigset_t alrm, old; /* only the main thread may take SIGALRM */

		sigemptyset(&alrm);
		sigaddset(&alrm, SIGALRM);
		pthread_sigmask(SIG_BLOCK, &alrm, &old);
		CHECK(pthread_create(&wd, NULL, watchdog, NULL) == 0, "watchdog");
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	CHECK(sigaction(SIGALRM, &sa, NULL) == 0, "sigaction");
	end = ct_now_ms() + 1000.0 * (argc > 2 ? atof(argv[2]) : 2.0);
	arm(100);
	while (ct_now_ms() < end)
		main_piece(&seed);
	arm(0);
	signal(SIGALRM, SIG_IGN);
	CHECK(close(mfd) == 0 && close(hfd) == 0, "close");
	st_sink_results(&sink, res, 30);
	st_expect_same(&res[0], 0, &msent, mode != SAME);
	st_expect_same(&res[1], 1, &hsent, 1);
	ct_say("%llu signals, %llu pieces, %lld + %lld bytes: nothing lost or duplicated",
	       (unsigned long long)signals, (unsigned long long)progress, msent.total, hsent.total);
	return 0;
}
