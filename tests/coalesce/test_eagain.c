/*
 * test_eagain.c - a full connection fails writes the way the kernel would,
 * and loses nothing: every byte a write took reaches the peer, once.
 *
 * SO_SNDBUF 4 KiB here (so that the kernel often takes only part of what
 * the library holds), 16 KiB SO_RCVBUF at the peer; pieces by every call
 * family, of sizes spread log-uniformly:
 *   nonblock   O_NONBLOCK socket, the peer reads nothing until told to,
 *              pieces up to 4 KiB: writes go on until one fails, which
 *              must be EAGAIN; so must every failure after it (200 more
 *              tries, 1-byte ones included). Then the peer drains, we
 *              write 256 KiB more in pieces up to 64 KiB (poll on EAGAIN;
 *              again every failure must be EAGAIN) and end the stream.
 *   sndtimeo   blocking socket with SO_SNDTIMEO 2 ms, a peer that reads
 *              1 KiB a millisecond, pieces up to 64 KiB: the kernel fails a
 *              write that timed out (taking nothing) with EAGAIN, so must
 *              the library; 1 MiB is taken in all.
 *   sigrestart blocking socket, a SA_RESTART signal every 2 ms, a peer that
 *              reads 1 KiB a millisecond, pieces up to 64 KiB: the kernel
 *              never fails such a write (it returns what it took, or
 *              restarts the call), so every write must return > 0 until
 *              256 KiB are taken.
 *   nodelay-full  O_NONBLOCK, the peer reads nothing; with bytes held
 *              that the kernel cannot take, the program sets TCP_NODELAY
 *              (the library drains, up to its 5 s limit); then the peer
 *              reads: the held bytes must not be missing from the stream
 * Every time, the peer's byte count and FNV-1a hash equal what was taken.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "../common/peer.h"

#define LIMIT (64LL << 20)
#define MORE (256 * 1024)

/* After the first EAGAIN: more tries may succeed (room in the buffer) or
 * fail, but only ever with EAGAIN. */
static void expect_only_eagain(int fd, struct ct_sent *s, int tries)
{
	for (int i = 0; i < tries; i++) {
		size_t n = i % 2 ? 1 : ct_rand_size(&s->seed, 4096);

		if (ct_write_some(fd, s, n, (enum ct_how)(i % CT_NHOW)) < 0)
			CHECK(errno == EAGAIN, "write %d after the first EAGAIN failed with %s",
			      i, ct_errname(errno));
	}
}

/* Once the peer reads: MORE bytes, waiting for room on EAGAIN. */
static void write_more(int fd, struct ct_sent *s)
{
	long long goal = s->total + MORE;

	while (s->total < goal) {
		enum ct_how how = (enum ct_how)(ct_rand(&s->seed) % CT_NHOW);
		struct pollfd p = { .fd = fd, .events = POLLOUT };

		if (ct_write_some(fd, s, ct_rand_size(&s->seed, 65536), how) >= 0)
			continue;
		CHECK(errno == EAGAIN, "write failed with %s", ct_errname(errno));
		CHECK(poll(&p, 1, CT_WAIT_MS) == 1, "no room within %d ms although the peer reads",
		      CT_WAIT_MS);
	}
}

/* A connection to a peer of role (stall or drip), with a small SO_SNDBUF. */
static int full_connection(struct ct_peer *p, const char *role)
{
	int fd;

	ct_peer_start(p, role);
	fd = ct_connect(p->port);
	ct_set_int(fd, SOL_SOCKET, SO_SNDBUF, 4096, "SO_SNDBUF");
	return fd;
}

static void run_nonblock(int unused)
{
	struct ct_sent s = { .hash = CT_FNV_INIT, .seed = 7 };
	struct ct_peer p;
	int fd = full_connection(&p, "stall"), err;

	(void)unused;
	ct_set_nonblock(fd);
	err = ct_fill_until_error(fd, &s, 4096, LIMIT);
	CHECK(err == EAGAIN, "first failure on a full non-blocking socket: %s, want EAGAIN",
	      ct_errname(err));
	ct_say("first EAGAIN after %lld bytes", s.total);
	expect_only_eagain(fd, &s, 200);
	ct_peer_go(&p);
	write_more(fd, &s);
	ct_expect_all_taken(&p, fd, &s);
	close(fd);
	ct_peer_stop(&p);
}

/* Fills fd (non-blocking, peer not reading) until the library holds bytes
 * the kernel will not take, however long it waits: returns how many. */
static long long fill_and_hold(int fd, struct ct_sent *s)
{
	ct_fill_kernel(fd, s); /* around the library: it will hold what follows */
	CHECK(ct_fill_until_error(fd, s, 1, LIMIT) == EAGAIN, "not EAGAIN");
	return s->total - ct_kernel_bytes(fd);
}

/* The program turns TCP_NODELAY on while its peer has not read for longer
 * than the library's drain limit: the held bytes must still reach it, in
 * their place in the stream. */
static void run_nodelay_full(int unused)
{
	struct ct_sent s = { .hash = CT_FNV_INIT, .seed = 17 };
	struct ct_peer p;
	int fd = full_connection(&p, "stall");
	long long held;
	double t0;

	(void)unused;
	ct_set_nonblock(fd);
	held = fill_and_hold(fd, &s);
	CHECK(held > 0, "nothing held: the test proves nothing");
	t0 = ct_now_ms();
	ct_set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
	ct_say("%lld bytes held; setsockopt(TCP_NODELAY) took %.0f ms", held, ct_now_ms() - t0);
	ct_peer_go(&p);
	write_more(fd, &s);
	ct_expect_all_taken(&p, fd, &s);
	close(fd);
	ct_peer_stop(&p);
}

/* Writes goal bytes in pieces up to 64 KiB to a slow reader; every failure
 * must be EAGAIN. Returns how many there were. */
static int write_slowly(int fd, struct ct_sent *s, long long goal)
{
	int eagain = 0;

	while (s->total < goal) {
		enum ct_how how = (enum ct_how)(ct_rand(&s->seed) % CT_NHOW);

		if (ct_write_some(fd, s, ct_rand_size(&s->seed, 65536), how) >= 0)
			continue;
		CHECK(errno == EAGAIN, "a blocking write that timed out (SO_SNDTIMEO) failed with %s "
		      "after %lld bytes; the kernel says EAGAIN", ct_errname(errno), s->total);
		eagain++;
	}
	return eagain;
}

static void run_sndtimeo(int unused)
{
	struct ct_sent s = { .hash = CT_FNV_INIT, .seed = 11 };
	struct timeval tv = { .tv_usec = 2000 };
	struct ct_peer p;
	int fd = full_connection(&p, "drip"), err;

	(void)unused;
	CHECK(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0, "SO_SNDTIMEO");
	err = write_slowly(fd, &s, 4 * MORE);
	ct_say("%d timeouts (EAGAIN) while writing %lld bytes", err, s.total);
	ct_expect_all_taken(&p, fd, &s);
	close(fd);
	ct_peer_stop(&p);
}

/* ---- sigrestart ---- */

struct pester {
	pthread_t main;
	atomic_int stop;
	int signals;
};

static void on_usr1(int sig)
{
	(void)sig;
}

/* Signals the main thread every 2 ms until told to stop. */
static void *pester_main(void *arg)
{
	struct pester *ps = arg;

	while (!atomic_load(&ps->stop)) {
		pthread_kill(ps->main, SIGUSR1);
		ps->signals++;
		ct_sleep_ms(2);
	}
	return NULL;
}

static void restartable_usr1(void)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
}

static void run_sigrestart(int unused)
{
	struct ct_sent s = { .hash = CT_FNV_INIT, .seed = 13 };
	struct pester ps = { .main = pthread_self() };
	struct ct_peer p;
	pthread_t t;
	int fd;

	(void)unused;
	fd = full_connection(&p, "drip");
	restartable_usr1();
	CHECK(pthread_create(&t, NULL, pester_main, &ps) == 0, "pthread_create");
	while (s.total < MORE) {
		enum ct_how how = (enum ct_how)(ct_rand(&s.seed) % CT_NHOW);

		CHECK(ct_write_some(fd, &s, ct_rand_size(&s.seed, 65536), how) > 0,
		      "a blocking write failed under SA_RESTART signals after %lld bytes",
		      s.total);
	}
	atomic_store(&ps.stop, 1);
	pthread_join(t, NULL);
	ct_say("%d signals while writing", ps.signals);
	ct_expect_all_taken(&p, fd, &s);
	close(fd);
	ct_peer_stop(&p);
}

static const struct ct_case cases[] = {
	{ "nonblock", run_nonblock, 0 },
	{ "sndtimeo", run_sndtimeo, 0 },
	{ "sigrestart", run_sigrestart, 0 },
	{ "nodelay-full", run_nodelay_full, 0 },
};

int main(int argc, char **argv)
{
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
