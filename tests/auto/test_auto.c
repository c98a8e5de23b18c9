/*
 * test_auto.c - the auto action: nothing held by the library, the stall
 * still gone, Nagle's batching kept.
 *
 *   test_auto chatty        15 writes of 2 bytes then the reply: at most 2
 *                           data segments a message (but 1 in 10, which
 *                           the timer may split), median round < 5 ms
 *   test_auto bulk          2,000 writes of 10 bytes then the reply: a few
 *                           dozen segments at most (not 2,000), and the read
 *                           does not stall (median < 5 ms)
 *   test_auto reader-thread a thread already blocked in read(), the writer
 *                           waits on a condition variable (nothing the
 *                           library sees): only the timer can push
 *   test_auto restore       after each push TCP_NODELAY is what the program
 *                           set (never, on, off again), and a program with
 *                           TCP_NODELAY on is not touched
 *   test_auto restore-race  a thread sets TCP_NODELAY while another's read
 *                           pushes (1,000 times): the value set stays
 *   test_auto poll|select|epoll  a split write, then the wait (the timer
 *                           a second away, conf/flush-1s.conf): the wait pushes
 *   test_auto cork          a corked socket is never pushed: what the
 *                           program corked is still unsent after a wait
 *   test_auto quiet, quiet-count  messages of one send: the reads stop
 *                           asking the kernel (run.sh counts the ioctls
 *                           of quiet-count), and a single send Nagle holds
 *                           after that is pushed by the timer (see run_quiet)
 *
 * Run under LD_PRELOAD=libnaglefix.so NAGLEFIX_MODE=auto by tests/auto/run.sh;
 * under NAGLEFIX_MODE=pass chatty, bulk, reader-thread and restore fail
 * (each round stalls about 40 ms). The peer echoes lines (tests/common/peer.h).
 */
#include <linux/sockios.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <stdatomic.h>
#include <sys/ioctl.h>

#include "../common/peer.h"

#define WARMUP 3          /* a new connection's first ACKs come at once */
#define SEG_ROUNDS 50
#define BULK_WRITES 2000
#define BULK_PIECE 10
#define BULK_ROUNDS 7
#define BULK_MAX_SEGS 300.0 /* Nagle's batching kept: 4-196 a round, a median
				    of 57 on a loaded machine; lost, 1,462 */

static int unsent(int fd)
{
	int n = -1;

	CHECK(ioctl(fd, SIOCOUTQNSD, &n) == 0, "SIOCOUTQNSD: %s", strerror(errno));
	return n;
}

static int nodelay_of(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);

	CHECK(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len) == 0, "getsockopt");
	return v != 0;
}

/* Reads until want bytes of a line ending in '\n' have come. */
static void read_line_of(int fd, size_t want)
{
	static char buf[BULK_WRITES * BULK_PIECE + 64];
	size_t have = 0;

	while (have < want) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - have);

		CHECK(n > 0, "read returned %zd (%s) after %zu of %zu bytes", n,
		      n < 0 ? strerror(errno) : "EOF", have, want);
		have += (size_t)n;
	}
	CHECK(have == want && buf[want - 1] == '\n', "reply of %zu bytes, want %zu", have, want);
}

/* "ab" "cd" ... 14 pieces and "\r\n": 15 writes of 2 bytes, one line. */
static void chatty_request(int fd)
{
	static const char *const pieces[15] = { "ab", "cd", "ef", "gh", "ij", "kl", "mn", "op",
						"qr", "st", "uv", "wx", "yz", "01", "\r\n" };

	for (int i = 0; i < 15; i++)
		ct_send_all(fd, pieces[i], 2, CT_WRITE, 0);
}

static double chatty_round(int fd)
{
	double t0 = ct_now_ms();

	chatty_request(fd);
	read_line_of(fd, 30);
	return ct_now_ms() - t0;
}

/*
 * Per message: at most 2 data segments. A round the scheduler stretches
 * past flush= (1 ms) gets a third from the timer, by design (a loaded
 * machine does that now and then): such rounds may be at most 1 in 10.
 */
static void run_chatty(int unused)
{
	struct ct_peer p;
	double t[SEG_ROUNDS];
	unsigned before, segs, total = 0, over = 0;
	int fd;

	(void)unused;
	ct_peer_start(&p, "echo");
	fd = ct_connect(p.port);
	for (int i = 0; i < WARMUP; i++)
		chatty_round(fd);
	for (int i = 0; i < SEG_ROUNDS; i++) {
		before = ct_segs_out(fd);
		t[i] = chatty_round(fd);
		segs = ct_segs_out(fd) - before;
		total += segs;
		if (segs > 2 && ++over <= 3)
			ct_say("round %d: %u segments in %.3f ms", i, segs, t[i]);
	}
	ct_say("%.2f data segments per 15-piece message, %u of %d rounds above 2 (want <= %d)",
	       (double)total / SEG_ROUNDS, over, SEG_ROUNDS, SEG_ROUNDS / 10);
	CHECK(over <= SEG_ROUNDS / 10, "%u of %d messages in more than 2 segments (nodelay: 15)",
	      over, SEG_ROUNDS);
	ct_expect_median(t, SEG_ROUNDS, CT_FAST_MS, "chatty round trip");
	CHECK(nodelay_of(fd) == 0, "TCP_NODELAY left on: the program never set it");
	close(fd);
	ct_peer_stop(&p);
}

/* 2,000 writes of 10 bytes (one line), then the read: only the read is
 * timed, for that is where Nagle + delayed ACK would stall. */
static double bulk_round(int fd, unsigned *segs)
{
	char piece[BULK_PIECE];
	unsigned before = ct_segs_out(fd);
	double t0;

	memset(piece, 'x', sizeof(piece));
	for (int i = 0; i < BULK_WRITES; i++) {
		if (i == BULK_WRITES - 1)
			piece[BULK_PIECE - 1] = '\n';
		ct_send_all(fd, piece, sizeof(piece), CT_WRITE, 0);
	}
	t0 = ct_now_ms();
	read_line_of(fd, BULK_WRITES * BULK_PIECE);
	*segs = ct_segs_out(fd) - before;
	return ct_now_ms() - t0;
}

static void run_bulk(int unused)
{
	struct ct_peer p;
	double t[BULK_ROUNDS], s[BULK_ROUNDS], segs_med;
	unsigned segs;
	int fd;

	(void)unused;
	ct_peer_start(&p, "echo");
	fd = ct_connect(p.port);
	for (int i = 0; i < WARMUP; i++)
		chatty_round(fd);
	for (int i = 0; i < BULK_ROUNDS; i++) {
		t[i] = bulk_round(fd, &segs);
		s[i] = segs;
		ct_say("bulk round %d: %u data segments, read waited %.3f ms", i, segs, t[i]);
	}
	/* the median round: a writer descheduled on a loaded machine lets the
	 * ACKs catch up in one round (196 segments seen), while batching lost
	 * to TCP_NODELAY makes every round about one segment a write */
	segs_med = ct_median(s, BULK_ROUNDS);
	CHECK(segs_med <= BULK_MAX_SEGS, "%.0f segments (median) for %d writes, want <= %.0f (batching lost)",
	      segs_med, BULK_WRITES, BULK_MAX_SEGS);
	ct_expect_median(t, BULK_ROUNDS, CT_FAST_MS, "bulk writer's read");
	close(fd);
	ct_peer_stop(&p);
}

/* ---- a reader thread already blocked in read() ---------------------------- */

static pthread_mutex_t rlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rcond = PTHREAD_COND_INITIALIZER;
static int replies, reader_fd;

static atomic_int reader_stop;

/* Reads one 13-byte reply; 0 at the end of the test (the peer gone). */
static int reader_line(void)
{
	char buf[16];
	size_t have = 0;

	while (have < 13) {
		ssize_t n = read(reader_fd, buf + have, 13 - have);

		if (n <= 0 && atomic_load(&reader_stop))
			return 0;
		CHECK(n > 0, "reader: read returned %zd", n);
		have += (size_t)n;
	}
	return 1;
}

static void *reader(void *arg)
{
	(void)arg;
	while (reader_line()) {
		pthread_mutex_lock(&rlock);
		replies++;
		pthread_cond_signal(&rcond);
		pthread_mutex_unlock(&rlock);
	}
	return NULL;
}

static void wait_replies(int n)
{
	pthread_mutex_lock(&rlock);
	while (replies < n)
		pthread_cond_wait(&rcond, &rlock);
	pthread_mutex_unlock(&rlock);
}

static void run_reader_thread(int unused)
{
	struct ct_peer p;
	pthread_t th;
	double t[CT_ROUNDS], t0;
	int n = 0;

	(void)unused;
	ct_peer_start(&p, "echo");
	reader_fd = ct_connect(p.port);
	CHECK(pthread_create(&th, NULL, reader, NULL) == 0, "pthread_create");
	for (int i = -WARMUP; i < CT_ROUNDS; i++) {
		ct_sleep_ms(2); /* the reader is back in read() */
		t0 = ct_now_ms();
		ct_send_all(reader_fd, "hello ", 6, CT_WRITE, 0);
		ct_send_all(reader_fd, "world\r\n", 7, CT_WRITE, 0);
		wait_replies(++n);
		if (i >= 0)
			t[i] = ct_now_ms() - t0;
	}
	ct_expect_median(t, CT_ROUNDS, CT_FAST_MS, "round trip pushed by the timer");
	atomic_store(&reader_stop, 1);
	shutdown(reader_fd, SHUT_RDWR); /* the reader's read returns 0 */
	pthread_join(th, NULL);
	close(reader_fd);
	ct_peer_stop(&p);
}

/* ---- the program's own TCP_NODELAY and TCP_CORK ----------------------------- */

static double split_round(int fd)
{
	double t0 = ct_now_ms();

	ct_send_all(fd, "hello ", 6, CT_WRITE, 0);
	ct_send_all(fd, "world\r\n", 7, CT_WRITE, 0);
	ct_read_reply(fd, "hello world\r\n");
	return ct_now_ms() - t0;
}

/* CT_ROUNDS split rounds; TCP_NODELAY must read want after each. */
static void rounds_keeping(int fd, int want, const char *what)
{
	double t[CT_ROUNDS];

	for (int i = 0; i < CT_ROUNDS; i++) {
		t[i] = split_round(fd);
		CHECK(nodelay_of(fd) == want, "%s: TCP_NODELAY is %d after a round, want %d",
		      what, !want, want);
	}
	ct_expect_median(t, CT_ROUNDS, CT_FAST_MS, what);
}

static void run_restore(int unused)
{
	struct ct_peer p;
	int fd;

	(void)unused;
	ct_peer_start(&p, "echo");
	fd = ct_connect(p.port);
	for (int i = 0; i < WARMUP; i++)
		split_round(fd);
	rounds_keeping(fd, 0, "never set");
	ct_set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY on");
	rounds_keeping(fd, 1, "set on");
	ct_set_int(fd, IPPROTO_TCP, TCP_NODELAY, 0, "TCP_NODELAY off");
	rounds_keeping(fd, 0, "set off again");
	close(fd);
	ct_peer_stop(&p);
}

/*
 * Another thread sets TCP_NODELAY while this one's read pushes: in each of
 * RACE_EPOCHS epochs both start together (spinning on a shared counter),
 * the other thread sets a random value after a random spin of up to
 * ~20 us (about when this one's read pushes), this one does a split round;
 * when both are done, the option must be the value set.
 */
#define RACE_EPOCHS 1000

static int race_fd;
static int race_value;
static atomic_int race_epoch, race_set;

static void spin_us(uint64_t *seed)
{
	double until = ct_now_ms() + (double)(ct_rand(seed) % 20) / 1000.0;

	while (ct_now_ms() < until)
		;
}

static void *toggler(void *arg)
{
	uint64_t seed = 42;

	(void)arg;
	for (int i = 1; i <= RACE_EPOCHS; i++) {
		while (atomic_load(&race_epoch) < i)
			;
		spin_us(&seed);
		race_value = (int)(ct_rand(&seed) & 1);
		ct_set_int(race_fd, IPPROTO_TCP, TCP_NODELAY, race_value, "TCP_NODELAY");
		atomic_store(&race_set, i);
	}
	return NULL;
}

static void run_restore_race(int unused)
{
	struct ct_peer p;
	pthread_t th;
	int wrong = 0;

	(void)unused;
	ct_peer_start(&p, "echo");
	race_fd = ct_connect(p.port);
	CHECK(pthread_create(&th, NULL, toggler, NULL) == 0, "pthread_create");
	for (int i = 1; i <= RACE_EPOCHS; i++) {
		atomic_store(&race_epoch, i);
		split_round(race_fd);
		while (atomic_load(&race_set) < i)
			;
		ct_sleep_ms(0.1); /* a timer push under way ends (it restores too) */
		wrong += nodelay_of(race_fd) != race_value;
	}
	pthread_join(th, NULL);
	ct_say("%d epochs, TCP_NODELAY not the program's value after %d", RACE_EPOCHS, wrong);
	CHECK(wrong == 0, "TCP_NODELAY differed from the program's last value after %d of %d epochs",
	      wrong, RACE_EPOCHS);
	close(race_fd);
	ct_peer_stop(&p);
}

/* The wait before the read is what pushes (conf/flush-1s.conf keeps the
 * timer out of it): poll, select or epoll_wait until the reply is there. */
static void wait_readable(int fd, int how)
{
	int n = -1;

	if (how == 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		n = poll(&pfd, 1, 1000);
	} else if (how == 1) {
		fd_set r;
		struct timeval tv = { .tv_sec = 1 };

		FD_ZERO(&r);
		FD_SET(fd, &r);
		n = select(fd + 1, &r, NULL, NULL, &tv);
	} else {
		int ep = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

		CHECK(ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll");
		n = epoll_wait(ep, &ev, 1, 1000);
		close(ep);
	}
	CHECK(n == 1, "the wait returned %d", n);
}

static void run_wait(int how)
{
	struct ct_peer p;
	double t[CT_ROUNDS], t0;
	int fd;

	ct_peer_start(&p, "echo");
	fd = ct_connect(p.port);
	for (int i = -WARMUP; i < CT_ROUNDS; i++) {
		t0 = ct_now_ms();
		ct_send_all(fd, "hello ", 6, CT_WRITE, 0);
		ct_send_all(fd, "world\r\n", 7, CT_WRITE, 0);
		wait_readable(fd, how);
		if (i >= 0)
			t[i] = ct_now_ms() - t0;
		ct_read_reply(fd, "hello world\r\n");
	}
	ct_expect_median(t, CT_ROUNDS, CT_FAST_MS, "split write, then a wait");
	close(fd);
	ct_peer_stop(&p);
}

static void run_cork(int unused)
{
	struct ct_peer p;
	int fd;

	(void)unused;
	ct_peer_start(&p, "echo");
	fd = ct_connect(p.port);
	for (int i = 0; i < WARMUP; i++)
		split_round(fd);
	ct_set_int(fd, IPPROTO_TCP, TCP_CORK, 1, "TCP_CORK on");
	ct_send_all(fd, "hello ", 6, CT_WRITE, 0);
	ct_send_all(fd, "world\r\n", 7, CT_WRITE, 0);
	CHECK(poll(NULL, 0, 5) == 0, "poll"); /* a wait: auto would push here */
	ct_sleep_ms(3);                       /* and the timer (flush=1ms) */
	CHECK(unsent(fd) == 13, "%d bytes unsent, want the 13 corked", unsent(fd));
	ct_set_int(fd, IPPROTO_TCP, TCP_CORK, 0, "TCP_CORK off");
	ct_read_reply(fd, "hello world\r\n");
	close(fd);
	ct_peer_stop(&p);
}

#define QUIET_LEARN 80   /* more than the 64 checks auto learns from */
#define QUIET_ROUNDS 300
#define QUIET_TRIES 5

/* A message in one send, its echo read. */
static void one_send_round(int fd)
{
	ct_send_all(fd, "ping\n", 5, CT_WRITE, 0);
	ct_read_reply(fd, "ping\n");
}

/*
 * quiet-count: a program whose messages are one send each: QUIET_LEARN
 * rounds, then QUIET_ROUNDS more, in which its reads no longer ask the
 * kernel what it holds (run.sh counts the library's SIOCOUTQNSD under
 * strace: fewer than the rounds).
 * quiet: then a change of pattern, after which Nagle holds a single send:
 * a piece without its newline ("x": the echo peer answers nothing, so its
 * ACK is delayed), a read that finds nothing (MSG_DONTWAIT), and the rest
 * in one send ("y\n", held behind the unacknowledged "x"). The read that
 * waits for the echo does not check on a quiet connection; the timer's
 * visit (flush=, 1 ms) pushes it: the echo within CT_FAST_MS, median of
 * QUIET_TRIES tries (each one learns anew: a push ends the quiet), not the
 * peer's 40 ms.
 */
static void run_quiet(int count_only)
{
	double t[QUIET_TRIES], t0;
	struct ct_peer p;
	char b;
	int fd;

	ct_peer_start(&p, "echo");
	fd = ct_connect(p.port);
	for (int k = 0; k < QUIET_TRIES; k++) {
		for (int i = 0; i < QUIET_LEARN; i++)
			one_send_round(fd);
		if (count_only) {
			for (int i = 0; i < QUIET_ROUNDS; i++)
				one_send_round(fd);
			break;
		}
		ct_send_all(fd, "x", 1, CT_WRITE, 0);
		CHECK(recv(fd, &b, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN,
		      "an echo of a line not yet written");
		t0 = ct_now_ms();
		ct_send_all(fd, "y\n", 2, CT_WRITE, 0);
		ct_read_reply(fd, "xy\n");
		t[k] = ct_now_ms() - t0;
	}
	if (!count_only)
		ct_expect_median(t, QUIET_TRIES, CT_FAST_MS, "a held single send on a quiet connection");
	close(fd);
	ct_peer_stop(&p);
}

static const struct ct_case cases[] = {
	{ "chatty", run_chatty, 0 },
	{ "bulk", run_bulk, 0 },
	{ "reader-thread", run_reader_thread, 0 },
	{ "restore", run_restore, 0 },
	{ "restore-race", run_restore_race, 0 },
	{ "cork", run_cork, 0 },
	{ "poll", run_wait, 0 },
	{ "select", run_wait, 1 },
	{ "epoll", run_wait, 2 },
	{ "quiet", run_quiet, 0 },
	{ "quiet-count", run_quiet, 1 },
};

int main(int argc, char **argv)
{
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
