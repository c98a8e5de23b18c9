/*
 * test_contract.c - a coalesce socket answers every call as the kernel
 * would (issue 9, items 6-9 and 11-13). Run with flush=1s: a held byte
 * stays held unless something makes it go.
 *
 *   shut-write    after the program's shutdown(SHUT_WR) a write fails with
 *                 EPIPE and raises SIGPIPE (MSG_NOSIGNAL: no signal); the
 *                 peer got what was written before, then end of file
 *   shut-inflight shutdown(SHUT_WR) while another thread's blocking write
 *                 is stuck behind held bytes on a full socket: the held
 *                 bytes (reported written) still reach the peer
 *   fork-full     bytes held while the socket is full, then fork: the
 *                 child's write comes after them, not before
 *   system-full   the same with system(): the shell's printf comes after
 *   daemon-full   the same in a process that calls daemon() (whose parent
 *                 side ends inside libc): the daemon's write comes after
 *   full-nonblock a non-blocking socket the kernel refused: a small write
 *                 gets EAGAIN (not held), close returns at once, nothing
 *                 lost (asyncio's sock_sendall, then close, then read)
 *   connecting    a write while a non-blocking connect is in progress gets
 *                 EAGAIN; dup and close of that socket return at once
 *   empty         empty writev/write on a shut-down socket: the kernel's
 *                 answers (writev 0, write EPIPE)
 *   iovcnt        writev with iovcnt -1 or IOV_MAX+1: EINVAL; sendmsg with
 *                 IOV_MAX+1 pieces: EMSGSIZE; held bytes stay in order
 *   efault        bad pointers (the buffer, an iovec, the iovec array, the
 *                 msghdr, a page unmapped earlier): EFAULT, never SIGSEGV,
 *                 and the held bytes stay in order
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "../common/peer.h"

#ifndef TCP_SYN_SENT
#define TCP_SYN_SENT 2 /* linux/tcp.h has no state names */
#endif

static atomic_int sigpipes;

static void count_sigpipe(int sig)
{
	(void)sig;
	atomic_fetch_add(&sigpipes, 1);
}

/* A lines peer, SIGPIPE counted, and a connection to it on which "AB\n"
 * (held) went before the program's shutdown(SHUT_WR). */
static int shut_after_ab(struct ct_peer *p)
{
	int fd;

	signal(SIGPIPE, count_sigpipe);
	ct_peer_start(p, "lines");
	fd = ct_connect(p->port);
	ct_send_str(fd, "AB\n");
	CHECK(shutdown(fd, SHUT_WR) == 0, "shutdown");
	return fd;
}

static void shut_write(int arg)
{
	struct ct_peer p;
	int fd;

	(void)arg;
	fd = shut_after_ab(&p);
	errno = 0;
	CHECK(write(fd, "C", 1) == -1 && errno == EPIPE, "write after shutdown(SHUT_WR): "
	      "want -1 EPIPE, got errno %s", ct_errname(errno));
	CHECK(atomic_load(&sigpipes) == 1, "SIGPIPE raised %d times, want 1", atomic_load(&sigpipes));
	CHECK(send(fd, "D", 1, MSG_NOSIGNAL) == -1 && errno == EPIPE, "send MSG_NOSIGNAL: %s",
	      ct_errname(errno));
	CHECK(atomic_load(&sigpipes) == 1, "SIGPIPE with MSG_NOSIGNAL");
	ct_expect_line(p.rep, "AB\n", CT_WAIT_MS);
	ct_expect_end(p.rep, 3, CT_WAIT_MS);
	close(fd);
	ct_peer_stop(&p);
}

#define HELD 16000 /* under buffer=16k; more than the room a full socket finds again */

/* A connection to the stalled peer on port, full, with HELD bytes 'h'
 * held after. */
static int fill_and_hold(int port, struct ct_sent *s)
{
	static const char h[1000] = { [0 ... 999] = 'h' };
	int fd;

	fd = ct_connect(port);
	ct_set_int(fd, SOL_SOCKET, SO_SNDBUF, 4096, "SO_SNDBUF");
	s->seed = 42;
	s->hash = CT_FNV_INIT;
	ct_fill_kernel(fd, s);
	for (int i = 0; i < HELD / 1000; i++) {
		CHECK(write(fd, h, sizeof(h)) == sizeof(h), "held write");
		s->hash = ct_fnv(s->hash, h, sizeof(h));
	}
	s->total += HELD;
	return fd;
}

/* A stalled peer, and fill_and_hold on a connection to it. */
static int full_with_held(struct ct_peer *p, struct ct_sent *s)
{
	ct_peer_start(p, "stall");
	return fill_and_hold(p->port, s);
}

struct big_writer {
	int fd;
	char *buf;
	size_t len;
	ssize_t ret;
};

static void *write_big(void *arg)
{
	struct big_writer *w = arg;

	w->ret = write(w->fd, w->buf, w->len);
	return NULL;
}

static void *go_later(void *arg)
{
	ct_sleep_ms(300);
	ct_peer_go(arg);
	return NULL;
}

static void shut_inflight(int arg)
{
	struct big_writer w = { .len = 1 << 20 };
	struct ct_sent s = { 0 };
	struct ct_report r;
	struct ct_peer p;
	pthread_t t, g;
	uint64_t h;

	(void)arg;
	w.fd = full_with_held(&p, &s);
	w.buf = malloc(w.len);
	CHECK(w.buf, "out of memory");
	memset(w.buf, 'b', w.len);
	CHECK(pthread_create(&t, NULL, write_big, &w) == 0, "pthread_create");
	ct_sleep_ms(100); /* the big write is stuck behind the held bytes */
	CHECK(pthread_create(&g, NULL, go_later, &p) == 0, "pthread_create");
	CHECK(shutdown(w.fd, SHUT_WR) == 0, "shutdown: %s", ct_errname(errno));
	pthread_join(t, NULL);
	pthread_join(g, NULL);
	ct_report_expect(p.rep, CT_END, CT_WAIT_MS, &r);
	ct_say("filled %lld, peer got %lld, the big write returned %zd", s.total, r.len, w.ret);
	CHECK(r.len >= s.total, "the peer got %lld bytes, but %lld were reported written "
	      "before the shutdown", r.len, s.total);
	h = s.hash;
	for (long long i = s.total; i < r.len; i++)
		h = ct_fnv(h, "b", 1);
	CHECK(r.hash == h, "the peer's bytes are not those written, in order");
	free(w.buf);
	close(w.fd);
	ct_peer_stop(&p);
}

/* A child that writes "C" on the inherited socket, started by how. */
static void start_child(int fd, int how)
{
	char cmd[64];
	pid_t pid;
	int st;

	if (how == 0) {
		pid = fork();
		CHECK(pid >= 0, "fork");
		if (pid == 0) {
			CHECK(write(fd, "C", 1) == 1, "child write");
			_exit(0);
		}
		CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "child");
		return;
	}
	snprintf(cmd, sizeof(cmd), "printf C >&%d", fd);
	CHECK(system(cmd) == 0, "system(%s)", cmd);
}

static void child_full(int how)
{
	struct ct_sent s = { 0 };
	struct ct_report r;
	struct ct_peer p;
	pthread_t g;
	int fd;

	fd = full_with_held(&p, &s);
	CHECK(pthread_create(&g, NULL, go_later, &p) == 0, "pthread_create");
	start_child(fd, how); /* waits for the held bytes to get in first */
	pthread_join(g, NULL);
	CHECK(shutdown(fd, SHUT_WR) == 0, "shutdown");
	ct_report_expect(p.rep, CT_END, CT_WAIT_MS, &r);
	CHECK(r.len == s.total + 1, "the peer got %lld bytes, want %lld", r.len, s.total + 1);
	CHECK(r.hash == ct_fnv(s.hash, "C", 1), "the child's byte is not last: it overtook "
	      "the parent's held bytes");
	close(fd);
	ct_peer_stop(&p);
}

/*
 * A writer process fills a connection and holds bytes, then calls daemon:
 * its parent side ends inside libc (no exit hook), the daemon writes "C".
 * The held bytes must not be lost, nor come after "C".
 */
static void daemon_full(int arg)
{
	struct ct_sent s = { 0 };
	struct ct_report r;
	struct ct_peer p;
	int sync[2], fd, st;
	pthread_t g;
	pid_t pid;

	(void)arg;
	ct_peer_start(&p, "stall");
	CHECK(pipe(sync) == 0, "pipe");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		fd = fill_and_hold(p.port, &s);
		CHECK(write(sync[1], &s, sizeof(s)) == sizeof(s), "sync");
		CHECK(daemon(1, 1) == 0, "daemon");
		CHECK(write(fd, "C", 1) == 1, "the daemon's write");
		_exit(0);
	}
	close(sync[1]);
	CHECK(read(sync[0], &s, sizeof(s)) == sizeof(s), "the writer's count");
	CHECK(pthread_create(&g, NULL, go_later, &p) == 0, "pthread_create");
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer");
	pthread_join(g, NULL);
	ct_report_expect(p.rep, CT_END, CT_WAIT_MS * 3, &r);
	CHECK(r.len == s.total + 1, "the peer got %lld bytes, want %lld", r.len, s.total + 1);
	CHECK(r.hash == ct_fnv(s.hash, "C", 1), "the daemon's byte is not last");
	ct_peer_stop(&p);
}

/*
 * A non-blocking socket that the kernel has just refused (EAGAIN, or a
 * write cut short): a small write now gets EAGAIN too, as the kernel
 * gives it, instead of being held; close returns at once and the peer,
 * reading only after it (asyncio's sock_sendall then close), gets every
 * byte the program was told were written.
 */
static void full_nonblock(int arg)
{
	static char piece[CT_BUFFER];
	struct ct_report r;
	struct ct_peer p;
	long long told = 0;
	ssize_t n;
	double t0;
	int fd;

	(void)arg;
	ct_peer_start(&p, "stall");
	fd = ct_connect(p.port);
	ct_set_int(fd, SOL_SOCKET, SO_SNDBUF, 4096, "SO_SNDBUF");
	ct_set_nonblock(fd);
	memset(piece, 'p', sizeof(piece));
	for (;;) { /* until a round 20 ms after the last takes nothing: the window is shut */
		long long before = told;

		while ((n = write(fd, piece, sizeof(piece))) > 0)
			told += n;
		CHECK(errno == EAGAIN, "filling: %s", ct_errname(errno));
		if (told == before)
			break;
		ct_sleep_ms(20);
	}
	errno = 0;
	n = write(fd, piece, 2048);
	CHECK(n == -1 && errno == EAGAIN, "a small write to the full socket: want -1 EAGAIN "
	      "as the kernel gives, got %zd (%s)", n, ct_errname(errno));
	t0 = ct_now_ms();
	CHECK(close(fd) == 0, "close");
	CHECK(ct_now_ms() - t0 < 1000, "close took %.0f ms", ct_now_ms() - t0);
	ct_peer_go(&p);
	ct_report_expect(p.rep, CT_END, CT_WAIT_MS, &r);
	CHECK(r.len == told, "the peer got %lld bytes, the program was told %lld", r.len, told);
	ct_peer_stop(&p);
}

/* A listener that never accepts, with its backlog full: a connect to it
 * stays in progress. Returns the connecting socket. */
static int stuck_connect(int *l, int *first)
{
	struct sockaddr_in a = ct_loopback(0);
	socklen_t alen = sizeof(a);
	int fd;

	*l = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(*l >= 0 && bind(*l, (struct sockaddr *)&a, alen) == 0 && listen(*l, 0) == 0, "listen");
	CHECK(getsockname(*l, (struct sockaddr *)&a, &alen) == 0, "getsockname");
	*first = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(connect(*first, (struct sockaddr *)&a, alen) == 0, "first connect");
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	CHECK(connect(fd, (struct sockaddr *)&a, alen) == -1 && errno == EINPROGRESS,
	      "the second connect should stay in progress (%s)", ct_errname(errno));
	ct_sleep_ms(20);
	CHECK(ct_tcp_info(fd).tcpi_state == TCP_SYN_SENT, "the connect finished: the test "
	      "proves nothing");
	return fd;
}

static void connecting(int arg)
{
	int l, first, fd, d;
	double t0;

	(void)arg;
	fd = stuck_connect(&l, &first);
	errno = 0;
	CHECK(write(fd, "x", 1) == -1 && (errno == EAGAIN || errno == EWOULDBLOCK),
	      "write while connecting: want -1 EAGAIN, got errno %s", ct_errname(errno));
	t0 = ct_now_ms();
	d = dup(fd);
	CHECK(d >= 0 && ct_now_ms() - t0 < 500, "dup took %.0f ms", ct_now_ms() - t0);
	close(d);
	t0 = ct_now_ms();
	CHECK(close(fd) == 0 && ct_now_ms() - t0 < 500, "close took %.0f ms", ct_now_ms() - t0);
	close(first);
	close(l);
}

static void empty(int arg)
{
	struct ct_peer p;
	struct iovec v = { .iov_base = "x", .iov_len = 0 };
	int fd;

	(void)arg;
	fd = shut_after_ab(&p);
	CHECK(writev(fd, NULL, 0) == 0, "empty writev: %s", ct_errname(errno));
	CHECK(writev(fd, &v, 1) == 0, "writev of one empty piece: %s", ct_errname(errno));
	CHECK(atomic_load(&sigpipes) == 0, "SIGPIPE from an empty writev");
	errno = 0;
	CHECK(write(fd, "", 0) == -1 && errno == EPIPE, "empty write after shutdown: want -1 "
	      "EPIPE as the kernel gives, got %s", ct_errname(errno));
	ct_expect_line(p.rep, "AB\n", CT_WAIT_MS);
	ct_expect_end(p.rep, 3, CT_WAIT_MS);
	close(fd);
	ct_peer_stop(&p);
}

static struct iovec many[IOV_MAX + 1];

static void iovcnt(int arg)
{
	struct msghdr m = { .msg_iov = many, .msg_iovlen = IOV_MAX + 1 };
	struct ct_peer p;
	volatile int neg = -1;
	int fd;

	(void)arg;
	for (int i = 0; i <= IOV_MAX; i++)
		many[i] = (struct iovec){ .iov_base = "y", .iov_len = 1 };
	ct_peer_start(&p, "lines");
	fd = ct_connect(p.port);
	ct_send_str(fd, "A");
	errno = 0;
	CHECK(writev(fd, many, neg) == -1 && errno == EINVAL, "iovcnt -1: %s", ct_errname(errno));
	errno = 0;
	CHECK(writev(fd, many, IOV_MAX + 1) == -1 && errno == EINVAL, "iovcnt IOV_MAX+1: %s",
	      ct_errname(errno));
	errno = 0;
	CHECK(sendmsg(fd, &m, 0) == -1 && errno == EMSGSIZE, "sendmsg IOV_MAX+1: %s",
	      ct_errname(errno));
	ct_send_str(fd, "B\n");
	ct_expect_line(p.rep, "AB\n", CT_WAIT_MS);
	close(fd);
	ct_expect_end(p.rep, 3, CT_WAIT_MS);
	ct_peer_stop(&p);
}

/* A call's answer r, which must be -1 EFAULT. */
static void expect_efault(const char *what, ssize_t r)
{
	CHECK(r == -1 && errno == EFAULT, "%s: want -1 EFAULT, got %zd (%s)", what, r,
	      ct_errname(errno));
	errno = 0;
}

static void efault(int arg)
{
	struct iovec bad = { .iov_base = (void *)16, .iov_len = 10 };
	struct iovec two[2] = { { .iov_base = "ab", .iov_len = 2 }, bad };
	struct msghdr m = { .msg_iov = two, .msg_iovlen = 2 };
	void *volatile low = (void *)16;
	struct ct_peer p;
	char *page;
	int fd;

	(void)arg;
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(page != MAP_FAILED, "mmap");
	memset(page, 'p', 4096);
	CHECK(munmap(page, 4096) == 0, "munmap");
	ct_peer_start(&p, "lines");
	fd = ct_connect(p.port);
	ct_send_str(fd, "A");
	errno = 0;
	expect_efault("write((void *)16)", write(fd, low, 10));
	expect_efault("send((void *)16)", send(fd, low, 10, 0));
	expect_efault("writev of a bad piece", writev(fd, two, 2));
	expect_efault("writev of a bad array", writev(fd, (struct iovec *)low, 2));
	expect_efault("sendmsg of a bad piece", sendmsg(fd, &m, 0));
#ifdef __GLIBC__ /* musl's sendmsg copies the msghdr itself: SIGSEGV with or without us */
	expect_efault("sendmsg of a bad msghdr", sendmsg(fd, (struct msghdr *)low, 0));
#endif
	expect_efault("write from an unmapped page", write(fd, page, 10));
	ct_send_str(fd, "B\n");
	ct_expect_line(p.rep, "AB\n", CT_WAIT_MS);
	close(fd);
	ct_expect_end(p.rep, 3, CT_WAIT_MS);
	ct_peer_stop(&p);
}

static const struct ct_case cases[] = {
	{ "shut-write", shut_write, 0 },   { "shut-inflight", shut_inflight, 0 },
	{ "fork-full", child_full, 0 },    { "system-full", child_full, 1 },
	{ "connecting", connecting, 0 },   { "empty", empty, 0 },
	{ "iovcnt", iovcnt, 0 },           { "efault", efault, 0 },
	{ "daemon-full", daemon_full, 0 },
	{ "full-nonblock", full_nonblock, 0 },
};

int main(int argc, char **argv)
{
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
