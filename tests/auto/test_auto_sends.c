/*
 * test_auto_sends.c - every send hook is noted by auto: a split answer
 * made of two calls of one send entry point does not stall.
 *
 *   test_auto_sends SYMBOL   "hello " then "world\r\n", each sent with
 *                            SYMBOL (write, __write, writev, send, __send,
 *                            sendto, sendmsg, sendmmsg, sendfile,
 *                            sendfile64, splice, pwritev2, pwritev64v2,
 *                            dprintf, vdprintf, __dprintf_chk,
 *                            __vdprintf_chk, aio_write, aio_write64,
 *                            lio_listio, lio_listio64), then the echo
 *                            read: median round < 5 ms over CT_ROUNDS
 *
 * The second piece waits behind the first, unacknowledged one (Nagle),
 * and the echo peer delays its ACK (it has no line yet): about 40 ms a
 * round unless auto pushes it at the read, which it does only if the
 * send was noted. tests/inventory/auto_sends.tsv lists every send hook
 * (make test-inventory checks it against entrypoints.tsv); tests/auto/run.sh
 * runs one case per row. Run under LD_PRELOAD=libnaglefix.so
 * NAGLEFIX_MODE=auto with the timer a second away (conf/flush-1s.conf),
 * so only the read's check can push; under NAGLEFIX_MODE=pass every case
 * fails (each round stalls about 40 ms).
 */
#include <aio.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/uio.h>

#include "../common/peer.h"

#define WARMUP 3 /* a new connection's first ACKs come at once */

/* glibc's exported internal names, which no header declares. */
ssize_t __write(int fd, const void *buf, size_t n);
ssize_t __send(int fd, const void *buf, size_t n, int flags);
int __dprintf_chk(int fd, int flag, const char *fmt, ...);
int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap);

typedef ssize_t send_fn(int fd, const char *s, size_t n);

static ssize_t by_write(int fd, const char *s, size_t n) { return write(fd, s, n); }
static ssize_t by___write(int fd, const char *s, size_t n) { return __write(fd, s, n); }
static ssize_t by_send(int fd, const char *s, size_t n) { return send(fd, s, n, 0); }
static ssize_t by___send(int fd, const char *s, size_t n) { return __send(fd, s, n, 0); }

static ssize_t by_sendto(int fd, const char *s, size_t n)
{
	return sendto(fd, s, n, 0, NULL, 0);
}

static ssize_t by_writev(int fd, const char *s, size_t n)
{
	struct iovec iov = { (void *)s, n };

	return writev(fd, &iov, 1);
}

static ssize_t by_sendmsg(int fd, const char *s, size_t n)
{
	struct iovec iov = { (void *)s, n };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	return sendmsg(fd, &m, 0);
}

static ssize_t by_sendmmsg(int fd, const char *s, size_t n)
{
	struct iovec iov = { (void *)s, n };
	struct mmsghdr m = { .msg_hdr = { .msg_iov = &iov, .msg_iovlen = 1 } };

	return sendmmsg(fd, &m, 1, 0) == 1 ? (ssize_t)m.msg_len : -1;
}

static ssize_t by_pwritev2(int fd, const char *s, size_t n)
{
	struct iovec iov = { (void *)s, n };

	return pwritev2(fd, &iov, 1, -1, 0); /* -1: the file position, a socket's writev */
}

static ssize_t by_pwritev64v2(int fd, const char *s, size_t n)
{
	struct iovec iov = { (void *)s, n };

	return pwritev64v2(fd, &iov, 1, -1, 0);
}

/* A memory file holding s, for the file-copy calls. */
static int file_of(const char *s, size_t n)
{
	int m = memfd_create("auto-sends", 0);

	CHECK(m >= 0 && write(m, s, n) == (ssize_t)n, "memfd: %s", strerror(errno));
	return m;
}

static ssize_t by_sendfile(int fd, const char *s, size_t n)
{
	int m = file_of(s, n);
	off_t off = 0;
	ssize_t r = sendfile(fd, m, &off, n);

	close(m);
	return r;
}

static ssize_t by_sendfile64(int fd, const char *s, size_t n)
{
	int m = file_of(s, n);
	off64_t off = 0;
	ssize_t r = sendfile64(fd, m, &off, n);

	close(m);
	return r;
}

static ssize_t by_splice(int fd, const char *s, size_t n)
{
	int pp[2];
	ssize_t r;

	CHECK(pipe(pp) == 0 && write(pp[1], s, n) == (ssize_t)n, "pipe: %s", strerror(errno));
	r = splice(pp[0], NULL, fd, NULL, n, 0);
	close(pp[0]);
	close(pp[1]);
	return r;
}

static ssize_t by_dprintf(int fd, const char *s, size_t n)
{
	return dprintf(fd, "%.*s", (int)n, s);
}

static ssize_t vdprintf_of(int fd, int chk, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = chk ? __vdprintf_chk(fd, 1, fmt, ap) : vdprintf(fd, fmt, ap);
	va_end(ap);
	return r;
}

static ssize_t by_vdprintf(int fd, const char *s, size_t n)
{
	return vdprintf_of(fd, 0, "%.*s", (int)n, s);
}

static ssize_t by___dprintf_chk(int fd, const char *s, size_t n)
{
	return __dprintf_chk(fd, 1, "%.*s", (int)n, s);
}

static ssize_t by___vdprintf_chk(int fd, const char *s, size_t n)
{
	return vdprintf_of(fd, 1, "%.*s", (int)n, s);
}

/* The request's result, once libc's aio thread has written it. */
static ssize_t aio_done(struct aiocb *cb)
{
	const struct aiocb *list[1] = { cb };

	while (aio_error(cb) == EINPROGRESS)
		aio_suspend(list, 1, NULL);
	return aio_return(cb);
}

static ssize_t aio_done64(struct aiocb64 *cb)
{
	const struct aiocb64 *list[1] = { cb };

	while (aio_error64(cb) == EINPROGRESS)
		aio_suspend64(list, 1, NULL);
	return aio_return64(cb);
}

static ssize_t by_aio_write(int fd, const char *s, size_t n)
{
	struct aiocb cb = { .aio_fildes = fd, .aio_buf = (void *)s, .aio_nbytes = n };

	CHECK(aio_write(&cb) == 0, "aio_write: %s", strerror(errno));
	return aio_done(&cb);
}

static ssize_t by_aio_write64(int fd, const char *s, size_t n)
{
	struct aiocb64 cb = { .aio_fildes = fd, .aio_buf = (void *)s, .aio_nbytes = n };

	CHECK(aio_write64(&cb) == 0, "aio_write64: %s", strerror(errno));
	return aio_done64(&cb);
}

static ssize_t by_lio_listio(int fd, const char *s, size_t n)
{
	struct aiocb cb = { .aio_fildes = fd, .aio_buf = (void *)s, .aio_nbytes = n,
			    .aio_lio_opcode = LIO_WRITE };
	struct aiocb *list[1] = { &cb };

	CHECK(lio_listio(LIO_NOWAIT, list, 1, NULL) == 0, "lio_listio: %s", strerror(errno));
	return aio_done(&cb);
}

static ssize_t by_lio_listio64(int fd, const char *s, size_t n)
{
	struct aiocb64 cb = { .aio_fildes = fd, .aio_buf = (void *)s, .aio_nbytes = n,
			      .aio_lio_opcode = LIO_WRITE };
	struct aiocb64 *list[1] = { &cb };

	CHECK(lio_listio64(LIO_NOWAIT, list, 1, NULL) == 0, "lio_listio64: %s", strerror(errno));
	return aio_done64(&cb);
}

/* s sent whole with by (the pieces are small: one call takes them). */
static void send_piece(int fd, send_fn *by, const char *s)
{
	size_t n = strlen(s);
	ssize_t r = by(fd, s, n);

	CHECK(r == (ssize_t)n, "%s of %zu bytes returned %zd (%s)", ct_variant, n, r,
	      r < 0 ? strerror(errno) : "short");
}

static double split_round(int fd, send_fn *by)
{
	double t0 = ct_now_ms();

	send_piece(fd, by, "hello ");
	send_piece(fd, by, "world\r\n");
	ct_read_reply(fd, "hello world\r\n");
	return ct_now_ms() - t0;
}

static void run_split(send_fn *by)
{
	struct ct_peer p;
	double t[CT_ROUNDS];
	int fd;

	ct_peer_start(&p, "echo");
	fd = ct_connect(p.port);
	for (int i = 0; i < WARMUP; i++)
		split_round(fd, by);
	for (int i = 0; i < CT_ROUNDS; i++)
		t[i] = split_round(fd, by);
	ct_expect_median(t, CT_ROUNDS, CT_FAST_MS, "a split answer of two calls");
	close(fd);
	ct_peer_stop(&p);
}

/* ct_case's arg is an int: the index of the call in sends[]. */
static const struct {
	const char *name;
	send_fn *by;
} sends[] = {
	{ "write", by_write },
	{ "__write", by___write },
	{ "writev", by_writev },
	{ "send", by_send },
	{ "__send", by___send },
	{ "sendto", by_sendto },
	{ "sendmsg", by_sendmsg },
	{ "sendmmsg", by_sendmmsg },
	{ "sendfile", by_sendfile },
	{ "sendfile64", by_sendfile64 },
	{ "splice", by_splice },
	{ "pwritev2", by_pwritev2 },
	{ "pwritev64v2", by_pwritev64v2 },
	{ "dprintf", by_dprintf },
	{ "vdprintf", by_vdprintf },
	{ "__dprintf_chk", by___dprintf_chk },
	{ "__vdprintf_chk", by___vdprintf_chk },
	{ "aio_write", by_aio_write },
	{ "aio_write64", by_aio_write64 },
	{ "lio_listio", by_lio_listio },
	{ "lio_listio64", by_lio_listio64 },
};

static void run_case(int i)
{
	run_split(sends[i].by);
}

int main(int argc, char **argv)
{
	struct ct_case cases[CT_NCASES(sends)];

	for (size_t i = 0; i < CT_NCASES(sends); i++)
		cases[i] = (struct ct_case){ sends[i].name, run_case, (int)i };
	return ct_main(argc, argv, cases, CT_NCASES(sends));
}
