/*
 * test_fdops.c - what a program does to the descriptor itself flushes
 * what coalesce holds for it, before the bytes could be lost or passed.
 *
 * Under a flush=1s rule, each round opens a connection, writes the start
 * of a line (held: checked in the kernel), then does the operation named
 * by argv[1]. The peer must report the whole line, in order, well under
 * 5 ms after the operation (median; the first round also holds 50 ms
 * before it, and must still be fast).
 *
 *   close shutdown close_range dup2 dup3   the line, then EOF
 *   dup fcntl-dupfd                        the line (both copies fall back)
 *   nodelay cork                           setsockopt TCP_NODELAY / TCP_CORK
 *   sendfile splice                        "head:" held, "tail\n" from a file
 *                                          or a pipe: in that order
 *   overflow-large                         a write bigger than buffer= goes
 *                                          out with what was held before it
 *   overflow-fill                          small writes that fill buffer=:
 *                                          the one that does not fit sends all
 */
#include <sys/sendfile.h>

#include "../common/peer.h"

struct fdop {
	const char *name;
	int (*trigger)(int fd, const char *tail, size_t n); /* an fd to close after, or -1 */
	size_t held, piece; /* bytes written and held before the trigger, per write */
	size_t tail;        /* bytes the trigger sends itself */
	int ends;           /* the trigger ends the stream: EOF before we close */
	int closes;         /* the trigger closed fd */
};

static int do_close(int fd, const char *tail, size_t n)
{
	(void)tail, (void)n;
	CHECK(close(fd) == 0, "close");
	return -1;
}

static int do_shutdown(int fd, const char *tail, size_t n)
{
	(void)tail, (void)n;
	CHECK(shutdown(fd, SHUT_WR) == 0, "shutdown");
	return -1;
}

static int do_close_range(int fd, const char *tail, size_t n)
{
	(void)tail, (void)n;
#ifdef __GLIBC__
	CHECK(close_range((unsigned)fd, (unsigned)fd, 0) == 0, "close_range");
#else
	(void)fd;
	ct_skip("musl has no close_range(): a program can only make the system call, "
		"which no preload library sees");
#endif
	return -1;
}

static int dev_null(void)
{
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	CHECK(fd >= 0, "/dev/null");
	return fd;
}

static int do_dup2(int fd, const char *tail, size_t n)
{
	int null = dev_null();

	(void)tail, (void)n;
	CHECK(dup2(null, fd) == fd, "dup2");
	return null;
}

static int do_dup3(int fd, const char *tail, size_t n)
{
	int null = dev_null();

	(void)tail, (void)n;
	CHECK(dup3(null, fd, O_CLOEXEC) == fd, "dup3");
	return null;
}

static int do_dup(int fd, const char *tail, size_t n)
{
	int copy = dup(fd);

	(void)tail, (void)n;
	CHECK(copy >= 0, "dup");
	return copy;
}

static int do_fcntl_dupfd(int fd, const char *tail, size_t n)
{
	int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);

	(void)tail, (void)n;
	CHECK(copy >= 0, "fcntl F_DUPFD_CLOEXEC");
	return copy;
}

static int do_nodelay(int fd, const char *tail, size_t n)
{
	(void)tail, (void)n;
	ct_set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
	return -1;
}

static int do_cork(int fd, const char *tail, size_t n)
{
	(void)tail, (void)n;
	ct_set_int(fd, IPPROTO_TCP, TCP_CORK, 1, "TCP_CORK");
	return -1;
}

/* A deleted file holding data, for sendfile. */
static int file_with(const char *data, size_t n)
{
	char path[] = "/tmp/naglefix-sendfile-XXXXXX";
	int fd = mkstemp(path);

	CHECK(fd >= 0, "mkstemp");
	unlink(path);
	CHECK(write(fd, data, n) == (ssize_t)n, "write the file");
	return fd;
}

static int do_sendfile(int fd, const char *tail, size_t n)
{
	int file = file_with(tail, n);
	off_t off = 0;

	CHECK(sendfile(fd, file, &off, n) == (ssize_t)n, "sendfile");
	close(file);
	return -1;
}

static int do_splice(int fd, const char *tail, size_t n)
{
	int p[2];

	CHECK(pipe2(p, O_CLOEXEC) == 0, "pipe");
	CHECK(write(p[1], tail, n) == (ssize_t)n, "write the pipe");
	CHECK(splice(p[0], NULL, fd, NULL, n, 0) == (ssize_t)n, "splice");
	close(p[0]);
	close(p[1]);
	return -1;
}

static int do_write(int fd, const char *tail, size_t n)
{
	ct_send_all(fd, tail, n, CT_WRITE, 0);
	return -1;
}

/* The line of a round: letters, then '\n'. */
static char *make_line(size_t n)
{
	char *s = malloc(n);

	CHECK(s, "out of memory");
	for (size_t i = 0; i < n; i++)
		s[i] = (char)('a' + i % 26);
	s[n - 1] = '\n';
	return s;
}

/* The peer reports the line (and EOF if ends): the whole of it, once. */
static void expect_line(int rep, const char *line, size_t n, int ends)
{
	struct ct_report r;

	ct_report_expect(rep, CT_LINE, CT_WAIT_MS, &r);
	CHECK(r.len == (long long)n && r.hash == ct_fnv(CT_FNV_INIT, line, n),
	      "the peer received a %lld-byte line starting '%.40s', want %zu bytes starting '%.40s'",
	      r.len, r.text, n, line);
	if (ends)
		ct_expect_end(rep, (long long)n, CT_WAIT_MS);
}

/* A new connection with op->held bytes of line written and held, the
 * peer's process for it running (the peer forks one per connection: 2-3
 * ms on this virtual machine, which no round's time should include). */
static int connect_held(const struct ct_peer *p, const struct fdop *op, const char *line, int hold_ms)
{
	int fd = ct_connect(p->port);
	struct ct_report r;

	ct_report_expect(p->rep, CT_SERVING, CT_WAIT_MS, &r);

	for (size_t off = 0; off < op->held; off += op->piece)
		ct_send_all(fd, line + off, op->held - off < op->piece ? op->held - off : op->piece,
			    CT_WRITE, 0);
	ct_expect_held(fd, 0);
	if (hold_ms > 0) {
		ct_sleep_ms(hold_ms);
		ct_expect_held(fd, 0);
	}
	return fd;
}

/* One round; returns ms from the trigger to the peer's report(s). */
static double fd_round(const struct ct_peer *p, const struct fdop *op, const char *line, int hold_ms)
{
	size_t n = op->held + op->tail;
	int fd = connect_held(p, op, line, hold_ms), extra;
	double t0 = ct_now_ms(), dt;

	extra = op->trigger(fd, line + op->held, op->tail);
	expect_line(p->rep, line, n, op->ends);
	dt = ct_now_ms() - t0;
	if (!op->closes)
		close(fd);
	if (extra >= 0)
		close(extra);
	if (!op->ends)
		ct_expect_end(p->rep, (long long)n, CT_WAIT_MS);
	return dt;
}

static const struct fdop ops[] = {
	{ "close", do_close, 4, 4, 0, 1, 1 },
	{ "shutdown", do_shutdown, 4, 4, 0, 1, 0 },
	{ "close_range", do_close_range, 4, 4, 0, 1, 1 },
	{ "dup2", do_dup2, 4, 4, 0, 1, 0 },
	{ "dup3", do_dup3, 4, 4, 0, 1, 0 },
	{ "dup", do_dup, 4, 4, 0, 0, 0 },
	{ "fcntl-dupfd", do_fcntl_dupfd, 4, 4, 0, 0, 0 },
	{ "nodelay", do_nodelay, 4, 4, 0, 0, 0 },
	{ "cork", do_cork, 4, 4, 0, 0, 0 },
	{ "sendfile", do_sendfile, 5, 5, 5, 0, 0 },
	{ "splice", do_splice, 5, 5, 5, 0, 0 },
	{ "overflow-large", do_write, 4, 4, 20001, 0, 0 },
	{ "overflow-fill", do_write, CT_BUFFER / 100 * 100, 100, 100, 0, 0 },
};

static void run(int which)
{
	const struct fdop *op = &ops[which];
	char *line = make_line(op->held + op->tail);
	double t[CT_ROUNDS], first;
	struct ct_peer p;

	ct_peer_start(&p, "lines-ready");
	first = fd_round(&p, op, line, CT_HOLD_MS);
	CHECK(first < CT_SLOW_MS, "the held line reached the peer %.1f ms after %s: "
	      "it did not flush it", first, op->name);
	for (int i = 0; i < CT_ROUNDS; i++)
		t[i] = fd_round(&p, op, line, 0);
	ct_expect_median(t, CT_ROUNDS, CT_FAST_MS, op->name);
	ct_peer_stop(&p);
	free(line);
}

int main(int argc, char **argv)
{
	struct ct_case cases[CT_NCASES(ops)];

	for (size_t i = 0; i < CT_NCASES(ops); i++)
		cases[i] = (struct ct_case){ ops[i].name, run, (int)i };
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
