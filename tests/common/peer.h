/*
 * peer.h - a peer that says what it received (tests/common/, on harness.h):
 * the coalesce, auto and musl tests, and the stress tests through sink.h.
 *
 * Each test is one program run by its suite's run.sh under
 * LD_PRELOAD=libnaglefix.so; argv[1] names the variant to run (ct_main).
 * The other end of every connection is a peer: this same executable
 * re-executed as "PROG --peer ROLE FD" after unsetenv("LD_PRELOAD"), so
 * only the test's own side runs with the library. The peer listens on
 * 127.0.0.1 (an ephemeral port), serves each connection in a child
 * according to ROLE, and tells the test what it saw through a report
 * channel: an AF_UNIX SOCK_SEQPACKET pair, one struct ct_report a message.
 * The library leaves AF_UNIX alone, so waiting on that channel flushes
 * nothing.
 *
 * Whether bytes are being held is read from the kernel (TCP_INFO): bytes
 * the library buffers are bytes the kernel has not been handed. That is
 * what makes a test fail under NAGLEFIX_MODE=pass instead of passing for
 * the wrong reason.
 *
 * main() hands its cases to ct_main(), which also turns a peer invocation
 * into the peer. Everything is static inline: each test uses some of it.
 */
#ifndef NF_TEST_PEER_H
#define NF_TEST_PEER_H

#include <arpa/inet.h>
#include <dirent.h>
#ifdef __GLIBC__
#include <linux/tcp.h> /* glibc's netinet/tcp.h lacks tcpi_notsent_bytes... */
#else
#include <netinet/tcp.h> /* musl's has them (and musl-gcc sees no linux/) */
#endif
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "harness.h"

#define CT_HOLD_MS 50          /* the untimed first round waits this long first */
#define CT_SLOW_MS 200.0       /* ... and must still be faster than this: fail early */
#define CT_WAIT_MS (3000 * ct_wait_scale()) /* longest wait for a report that must come */
#define CT_BUFFER 16384        /* buffer= of conf/flush-1s.conf */
#define CT_ACK_EVERY (256 * 1024) /* hash peers ack every this many bytes */
#define CT_REC_MAX 65536       /* largest record payload (records role) */
#define CT_TEXT 240

static int ct_is_peer; /* this process is the peer */

/* ---- records: what the shared2 writers send and the records peer checks ---- */

#define CT_REC_MAGIC 0x4e465243u /* "NFRC" */

struct ct_rec_head {
	uint32_t magic;
	uint32_t tid;
	uint32_t seq;
	uint32_t len; /* payload bytes after the head */
};

/* The payload of record seq of writer tid: the same on both sides. */
static inline void ct_rec_payload(uint32_t tid, uint32_t seq, void *buf, size_t len)
{
	uint64_t s = ((uint64_t)tid << 32) | seq;

	ct_fill(&s, buf, len);
}

/* ---- the report channel -------------------------------------------------------- */

enum ct_kind {
	CT_PORT = 'P',  /* the peer listens on port len */
	CT_LINE = 'L',  /* a line of len bytes (text: its start) */
	CT_CHUNK = 'D', /* one read() of len bytes */
	CT_END = 'E',   /* end of stream after len bytes, hash of all; err: read's errno */
	CT_RESET = 'C', /* the reset peer aborted its connection */
	CT_ERROR = 'X', /* the peer found something wrong (text) */
	CT_GO = 'G',    /* test to peer: start reading / resetting */
	CT_SERVING = 'S', /* the peer's process for connection conn runs (roles
			     that announce it only: "lines-ready") */
};

struct ct_report {
	int kind;
	int conn;       /* the peer's connection number, from 0 */
	int err;
	long long len;
	long long aux;  /* CT_END: records seen, or the urgent mark's offset */
	uint64_t hash;
	char text[CT_TEXT];
};

static inline void ct_report_text(struct ct_report *r, const void *p, size_t n)
{
	if (n > CT_TEXT - 1)
		n = CT_TEXT - 1;
	memcpy(r->text, p, n);
	r->text[n] = '\0';
}

static inline void ct_report_send(int rep, const struct ct_report *r)
{
	if (send(rep, r, sizeof(*r), MSG_NOSIGNAL) == (ssize_t)sizeof(*r))
		return;
	if (ct_is_peer && errno == EPIPE)
		_exit(0); /* the test has finished (or failed) already */
	CHECK(0, "report channel send");
}

/* The next report within ms (0: only if one is there): 0, or -1 if none. */
static inline int ct_report_recv(int rep, struct ct_report *r, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	ssize_t n;

	CHECK(setsockopt(rep, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0, "SO_RCVTIMEO");
	do
		n = recv(rep, r, sizeof(*r), ms == 0 ? MSG_DONTWAIT : 0);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return -1;
	CHECK(n == (ssize_t)sizeof(*r), "report channel: %zd bytes", n);
	return 0;
}

/* The next report, which must be of kind and come within ms. */
static inline void ct_report_expect(int rep, int kind, int ms, struct ct_report *r)
{
	CHECK(ct_report_recv(rep, r, ms) == 0, "no '%c' report from the peer within %d ms", kind, ms);
	CHECK(r->kind != CT_ERROR, "the peer says: %s", r->text);
	CHECK(r->kind == kind, "report '%c' (len %lld, '%s'), want '%c'", r->kind, r->len, r->text, kind);
}

/* s with its line ends shown as \\r and \\n, for messages (one at a time). */
static inline const char *ct_shown(const char *s, char *out, size_t cap)
{
	size_t o = 0;

	for (; *s && o + 3 < cap; s++) {
		if (*s == '\n' || *s == '\r') {
			out[o++] = '\\';
			out[o++] = *s == '\n' ? 'n' : 'r';
		} else {
			out[o++] = *s;
		}
	}
	out[o] = '\0';
	return out;
}

/* The next report must be the line want, within ms. */
static inline void ct_expect_line(int rep, const char *want, int ms)
{
	char got_s[64], want_s[64];
	struct ct_report r;

	ct_report_expect(rep, CT_LINE, ms, &r);
	CHECK(r.len == (long long)strlen(want) && strcmp(r.text, want) == 0,
	      "the peer received the line '%s' (%lld bytes), want '%s'",
	      ct_shown(r.text, got_s, sizeof(got_s)), r.len, ct_shown(want, want_s, sizeof(want_s)));
}

/* The next report must be a clean end of stream after total bytes. */
static inline void ct_expect_end(int rep, long long total, int ms)
{
	struct ct_report r;

	ct_report_expect(rep, CT_END, ms, &r);
	CHECK(r.err == 0, "the peer's read failed with %s instead of EOF", ct_errname(r.err));
	CHECK(r.len == total, "the peer received %lld bytes in all, want %lld", r.len, total);
}

/* ---- sockets --------------------------------------------------------------------- */

static inline struct sockaddr_in ct_loopback(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* A blocking TCP socket connected to 127.0.0.1:port. */
static inline int ct_connect(int port)
{
	struct sockaddr_in a = ct_loopback(port);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	CHECK(fd >= 0, "socket");
	CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "connect to port %d", port);
	return fd;
}

static inline void ct_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	CHECK(fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0, "O_NONBLOCK");
}

static inline void ct_set_int(int fd, int level, int name, int val, const char *what)
{
	CHECK(setsockopt(fd, level, name, &val, sizeof(val)) == 0, "setsockopt %s=%d", what, val);
}

static inline struct tcp_info ct_tcp_info(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	CHECK(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0, "TCP_INFO");
	CHECK(len >= offsetof(struct tcp_info, tcpi_bytes_retrans) + sizeof(ti.tcpi_bytes_retrans),
	      "TCP_INFO too short (%u bytes): kernel older than 4.19", (unsigned)len);
	return ti;
}

/* Data segments the kernel has sent on fd since it was connected. */
static inline unsigned ct_segs_out(int fd)
{
	return ct_tcp_info(fd).tcpi_data_segs_out;
}

/* Bytes the kernel has been handed on fd since it was connected: sent once
 * (retransmissions not counted again) plus queued but not yet sent. One
 * getsockopt, so one consistent snapshot. */
static inline long long ct_kernel_bytes(int fd)
{
	struct tcp_info ti = ct_tcp_info(fd);

	return (long long)(ti.tcpi_bytes_sent - ti.tcpi_bytes_retrans) + ti.tcpi_notsent_bytes;
}

/* The writes since the kernel had before bytes must still be in the
 * library: proves the coalesce buffer holds them. */
static inline void ct_expect_held(int fd, long long before)
{
	long long now = ct_kernel_bytes(fd);

	CHECK(now == before, "%lld bytes reached the kernel before any flush trigger: "
	      "the writes were not buffered", now - before);
}

/*
 * As ct_expect_held, for a short flush= (ms): bytes written at t0 that
 * reached the kernel are a failure only if less than half the flush time
 * has passed; later, the timer may have sent them (this process was not
 * running), and the check cannot tell.
 */
static inline void ct_expect_held_briefly(int fd, long long before, double t0, double flush_ms)
{
	long long now = ct_kernel_bytes(fd);
	double dt = ct_now_ms() - t0;

	CHECK(now == before || dt > flush_ms / 2, "%lld bytes reached the kernel within %.3f ms "
	      "of the write (flush=%gms): the write was not buffered", now - before, dt, flush_ms);
}

/* The variant needs the configuration conf/NAME: run.sh must give it. */
static inline void ct_expect_conf(const char *name)
{
	const char *conf = getenv("NAGLEFIX_CONF");

	CHECK(conf && strstr(conf, name), "run me with NAGLEFIX_CONF=.../%s", name);
}

/* The times the timer thread went to sleep so far (its voluntary context
 * switches: a look at a deadline is one; being preempted, which a busy
 * neighbour causes, is not); -1 if there is no timer thread. */
static inline long ct_timer_switches(void)
{
	DIR *d = opendir("/proc/self/task");
	long found = -1;
	struct dirent *e;

	CHECK(d, "opendir /proc/self/task");
	while (found < 0 && (e = readdir(d)) != NULL) {
		char path[300], line[128];
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f) && strcmp(line, "naglefix-timer\n") == 0)
			found = 0;
		fclose(f);
		if (found < 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		f = fopen(path, "r");
		CHECK(f, "open %s", path);
		while (fgets(line, sizeof(line), f)) {
			long n;

			if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
				found += n;
		}
		fclose(f);
	}
	closedir(d);
	return found;
}

/* ---- sending the way a program would ------------------------------------------------ */

enum ct_how { CT_WRITE, CT_SEND, CT_SENDTO, CT_WRITEV, CT_SENDMSG, CT_NHOW };

/* One call of family how; writev and sendmsg split buf into up to nparts. */
static inline ssize_t ct_send(int fd, const void *buf, size_t len, enum ct_how how,
			      int flags, int nparts)
{
	struct iovec iov[128];
	struct msghdr m = { .msg_iov = iov };
	size_t part, off = 0;

	if (how == CT_WRITE)
		return write(fd, buf, len);
	if (how == CT_SEND)
		return send(fd, buf, len, flags);
	if (how == CT_SENDTO)
		return sendto(fd, buf, len, flags, NULL, 0);
	if (nparts < 1 || nparts > 128 || (size_t)nparts > len)
		nparts = 1;
	part = len / (size_t)nparts;
	for (int i = 0; i < nparts; i++, off += part) {
		iov[i].iov_base = (char *)buf + off;
		iov[i].iov_len = i == nparts - 1 ? len - off : part;
	}
	m.msg_iovlen = (size_t)nparts;
	if (how == CT_WRITEV)
		return writev(fd, iov, nparts);
	return sendmsg(fd, &m, flags);
}

/* Sends all of buf, going on after short writes (and EAGAIN: poll). */
static inline void ct_send_all(int fd, const void *buf, size_t len, enum ct_how how, int flags)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = ct_send(fd, p, len, how, flags, 2);

		if (n < 0 && errno == EAGAIN) {
			struct pollfd pf = { .fd = fd, .events = POLLOUT };

			poll(&pf, 1, 1000);
			continue;
		}
		CHECK(n > 0, "send of %zu bytes returned %zd", len, n);
		p += n;
		len -= (size_t)n;
	}
}

static inline void ct_send_str(int fd, const char *s)
{
	ct_send_all(fd, s, strlen(s), CT_WRITE, 0);
}

/* Adds n bytes just read to a line being collected; have is the count so
 * far. Returns the new count; buf stays NUL-terminated. */
static inline size_t ct_got(ssize_t n, char *buf, size_t have, size_t cap, const char *call)
{
	CHECK(n > 0, "%s returned %zd while waiting for the reply", call, n);
	have += (size_t)n;
	CHECK(have < cap, "reply longer than %zu bytes", cap);
	buf[have] = '\0';
	return have;
}

static inline int ct_line_done(const char *buf, size_t have)
{
	return have > 0 && buf[have - 1] == '\n';
}

/* Reads one reply line on fd; it must be want (a copy sent twice is not). */
static inline void ct_read_reply(int fd, const char *want)
{
	char buf[64];
	size_t have = 0;

	while (!ct_line_done(buf, have))
		have = ct_got(read(fd, buf + have, sizeof(buf) - 1 - have), buf, have, sizeof(buf), "read");
	CHECK(strcmp(buf, want) == 0, "reply '%s', want '%s' (a copy sent twice?)", buf, want);
}

/* ---- the peer: roles -------------------------------------------------------------- */

/* A growing buffer of bytes read, for the roles that look at lines. */
struct ct_acc {
	char *buf;
	size_t len, cap;
};

static inline void ct_acc_add(struct ct_acc *a, const void *p, size_t n)
{
	if (a->len + n > a->cap) {
		a->cap = (a->len + n) * 2;
		a->buf = realloc(a->buf, a->cap);
		CHECK(a->buf, "out of memory");
	}
	memcpy(a->buf + a->len, p, n);
	a->len += n;
}

static inline void ct_acc_drop(struct ct_acc *a, size_t n)
{
	memmove(a->buf, a->buf + n, a->len - n);
	a->len -= n;
}

/* Length of the first complete line in a (with its '\n'), or 0. */
static inline size_t ct_acc_line(const struct ct_acc *a)
{
	char *nl = a->len ? memchr(a->buf, '\n', a->len) : NULL;

	return nl ? (size_t)(nl - a->buf) + 1 : 0;
}

/* What every role keeps of its connection: the byte count and hash. */
struct ct_stream {
	int fd, rep, conn;
	long long total;
	uint64_t hash;
	long long acked;
	int ack; /* send one byte back every CT_ACK_EVERY received */
};

/* One read of s into buf; > 0, or 0 at the end (errno in *err). */
static inline ssize_t ct_stream_read(struct ct_stream *s, void *buf, size_t cap, int *err)
{
	ssize_t n;

	do
		n = read(s->fd, buf, cap);
	while (n < 0 && errno == EINTR);
	*err = n < 0 ? errno : 0;
	if (n <= 0)
		return 0;
	s->total += n;
	s->hash = ct_fnv(s->hash, buf, (size_t)n);
	while (s->ack && s->total >= s->acked + CT_ACK_EVERY) {
		CHECK(write(s->fd, "A", 1) == 1, "peer: ack");
		s->acked += CT_ACK_EVERY;
	}
	return n;
}

/* Reports the end of the stream (err: the failed read's errno, or 0),
 * with the first n bytes of text if any. */
static inline void ct_stream_end_text(struct ct_stream *s, int err, long long aux,
				      const void *text, size_t n)
{
	struct ct_report r = { .kind = CT_END, .conn = s->conn, .err = err,
			       .len = s->total, .hash = s->hash, .aux = aux };

	if (text)
		ct_report_text(&r, text, n);
	ct_report_send(s->rep, &r);
}

static inline void ct_stream_end(struct ct_stream *s, int err, long long aux)
{
	ct_stream_end_text(s, err, aux, NULL, 0);
}

static inline void ct_report_line(struct ct_stream *s, const char *line, size_t n)
{
	struct ct_report r = { .kind = CT_LINE, .conn = s->conn, .len = (long long)n,
			       .hash = ct_fnv(CT_FNV_INIT, line, n) };

	ct_report_text(&r, line, n);
	ct_report_send(s->rep, &r);
}

/* Reports each complete line (lines) or echoes it back (echo), until EOF. */
static inline void ct_serve_lines(struct ct_stream *s, int echo)
{
	static char buf[65536];
	struct ct_acc a = { 0 };
	size_t line;
	ssize_t n;
	int err;

	while ((n = ct_stream_read(s, buf, sizeof(buf), &err)) > 0) {
		ct_acc_add(&a, buf, (size_t)n);
		while ((line = ct_acc_line(&a)) > 0) {
			if (echo)
				CHECK(write(s->fd, a.buf, line) == (ssize_t)line, "peer: echo");
			else
				ct_report_line(s, a.buf, line);
			ct_acc_drop(&a, line);
		}
	}
	ct_stream_end(s, err, 0);
	free(a.buf);
}

static inline void ct_role_echo(struct ct_stream *s)
{
	ct_serve_lines(s, 1);
}

static inline void ct_role_lines(struct ct_stream *s)
{
	ct_serve_lines(s, 0);
}

/* Reports every read as it happens. */
static inline void ct_role_chunks(struct ct_stream *s)
{
	char buf[4096];
	ssize_t n;
	int err;

	while ((n = ct_stream_read(s, buf, sizeof(buf), &err)) > 0) {
		struct ct_report r = { .kind = CT_CHUNK, .conn = s->conn, .len = n };

		ct_report_text(&r, buf, (size_t)n);
		ct_report_send(s->rep, &r);
	}
	ct_stream_end(s, err, 0);
}

/* Hashes everything, acking every CT_ACK_EVERY bytes. */
static inline void ct_role_hash(struct ct_stream *s)
{
	static char buf[65536];
	int err;

	s->ack = 1;
	while (ct_stream_read(s, buf, sizeof(buf), &err) > 0)
		;
	ct_stream_end(s, err, 0);
}

/* Waits for the test's CT_GO on the report channel. */
static inline void ct_wait_go(int rep)
{
	struct ct_report r;
	ssize_t n = recv(rep, &r, sizeof(r), 0);

	if (n == 0)
		_exit(0); /* the test has finished (or failed) already */
	CHECK(n == (ssize_t)sizeof(r) && r.kind == CT_GO, "peer: waiting for go");
}

/* Reads nothing until told to, then hashes everything (no acks). */
static inline void ct_role_stall(struct ct_stream *s)
{
	static char buf[65536];
	int err;

	ct_wait_go(s->rep);
	while (ct_stream_read(s, buf, sizeof(buf), &err) > 0)
		;
	ct_stream_end(s, err, 0);
}

/* A slow reader: at most 1 KiB a millisecond, hashing everything. */
static inline void ct_role_drip(struct ct_stream *s)
{
	char buf[1024];
	int err;

	while (ct_stream_read(s, buf, sizeof(buf), &err) > 0)
		ct_sleep_ms(1);
	ct_stream_end(s, err, 0);
}

/* When told to, aborts the connection (RST) and says so. */
static inline void ct_role_reset(struct ct_stream *s)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct ct_report r = { .kind = CT_RESET, .conn = s->conn };

	ct_wait_go(s->rep);
	CHECK(setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == 0, "SO_LINGER");
	close(s->fd);
	ct_report_send(s->rep, &r);
}

/* Urgent data inline: reports the whole stream and where the mark was. */
static inline void ct_role_oob(struct ct_stream *s)
{
	struct ct_acc a = { 0 };
	long long mark = -1;
	char buf[256];
	ssize_t n;
	int err, at;

	ct_set_int(s->fd, SOL_SOCKET, SO_OOBINLINE, 1, "SO_OOBINLINE");
	for (;;) {
		struct pollfd p = { .fd = s->fd, .events = POLLIN | POLLPRI };

		CHECK(poll(&p, 1, CT_WAIT_MS * 2) == 1, "peer: nothing to read");
		if (mark < 0 && ioctl(s->fd, SIOCATMARK, &at) == 0 && at)
			mark = s->total;
		n = ct_stream_read(s, buf, sizeof(buf), &err);
		if (n == 0)
			break;
		ct_acc_add(&a, buf, (size_t)n);
	}
	ct_stream_end_text(s, err, mark, a.buf, a.len);
	free(a.buf);
}

/* The records peer's view of one connection. */
struct ct_recs {
	struct ct_acc a;
	uint32_t next_seq[8];
	long long count;
	unsigned char *want;
};

/* Checks the complete records at the front of r->a; 0, or -1 (reported). */
static inline int ct_recs_check(struct ct_stream *s, struct ct_recs *r)
{
	struct ct_report x = { .kind = CT_ERROR, .conn = s->conn };
	struct ct_rec_head h;

	while (r->a.len >= sizeof(h)) {
		memcpy(&h, r->a.buf, sizeof(h));
		if (h.magic != CT_REC_MAGIC || h.tid >= 8 || h.len > CT_REC_MAX ||
		    h.seq != r->next_seq[h.tid]) {
			snprintf(x.text, sizeof(x.text),
				 "bad record head after %lld records (magic %08x tid %u seq %u len %u; want seq %u)",
				 r->count, h.magic, h.tid, h.seq, h.len,
				 h.tid < 8 ? r->next_seq[h.tid] : 0);
			ct_report_send(s->rep, &x);
			return -1;
		}
		if (r->a.len < sizeof(h) + h.len)
			return 0;
		ct_rec_payload(h.tid, h.seq, r->want, h.len);
		if (memcmp(r->a.buf + sizeof(h), r->want, h.len) != 0) {
			snprintf(x.text, sizeof(x.text), "record tid %u seq %u: payload corrupted",
				 h.tid, h.seq);
			ct_report_send(s->rep, &x);
			return -1;
		}
		r->next_seq[h.tid]++;
		r->count++;
		ct_acc_drop(&r->a, sizeof(h) + h.len);
	}
	return 0;
}

/* Checks tagged records (struct ct_rec_head + payload), acking like hash. */
static inline void ct_role_records(struct ct_stream *s)
{
	static char buf[65536];
	struct ct_recs r = { .want = malloc(CT_REC_MAX) };
	int err, bad = 0;
	ssize_t n;

	CHECK(r.want, "out of memory");
	s->ack = 1;
	while ((n = ct_stream_read(s, buf, sizeof(buf), &err)) > 0) {
		if (bad)
			continue;
		ct_acc_add(&r.a, buf, (size_t)n);
		bad = ct_recs_check(s, &r) < 0;
	}
	ct_stream_end(s, err, r.count);
	free(r.a.buf);
	free(r.want);
}

struct ct_role {
	const char *name;
	void (*serve)(struct ct_stream *s);
	int small_rcvbuf; /* so that a test can fill the connection quickly */
	int announce;     /* a CT_SERVING report once the connection's process runs */
};

static const struct ct_role ct_roles[] = {
	{ "echo", ct_role_echo, 0, 0 },       { "lines", ct_role_lines, 0, 0 },
	{ "chunks", ct_role_chunks, 0, 0 },   { "hash", ct_role_hash, 0, 0 },
	{ "records", ct_role_records, 0, 0 }, { "stall", ct_role_stall, 1, 0 },
	{ "reset", ct_role_reset, 0, 0 },     { "oob", ct_role_oob, 0, 0 },
	{ "drip", ct_role_drip, 1, 0 },       { "lines-ready", ct_role_lines, 0, 1 },
};

static inline const struct ct_role *ct_role_find(const char *name)
{
	for (size_t i = 0; i < sizeof(ct_roles) / sizeof(ct_roles[0]); i++)
		if (strcmp(ct_roles[i].name, name) == 0)
			return &ct_roles[i];
	CHECK(0, "unknown peer role '%s'", name);
	return NULL;
}

/* ---- the peer: process ------------------------------------------------------------ */

/* A listening socket on 127.0.0.1, ephemeral port. */
static inline int ct_listen(int small_rcvbuf, int *port)
{
	struct sockaddr_in a = ct_loopback(0);
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0, "socket");
	if (small_rcvbuf)
		ct_set_int(fd, SOL_SOCKET, SO_RCVBUF, 16384, "SO_RCVBUF");
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "bind");
	CHECK(listen(fd, 64) == 0, "listen");
	CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0, "getsockname");
	*port = ntohs(a.sin_port);
	return fd;
}

/* Serves one accepted connection in a child of the peer. */
static inline void ct_peer_serve(const struct ct_role *role, int fd, int rep, int conn)
{
	struct ct_stream s = { .fd = fd, .rep = rep, .conn = conn, .hash = CT_FNV_INIT };

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (role->announce) {
		struct ct_report r = { .kind = CT_SERVING, .conn = conn };

		ct_report_send(rep, &r);
	}
	role->serve(&s);
	_exit(0);
}

/* "PROG --peer ROLE FD": serves each connection with ROLE, reports to FD. */
static inline void ct_peer_main(const char *name, int rep)
{
	const struct ct_role *role;
	struct ct_report r = { .kind = CT_PORT };
	int lfd, port, conn = 0;

	ct_prog = "peer";
	ct_variant = name;
	ct_is_peer = 1;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(CT_PEER_LIFETIME_S);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGCHLD, SIG_IGN);
	CHECK(getenv("LD_PRELOAD") == NULL, "the peer must run without the library");
	role = ct_role_find(name);
	lfd = ct_listen(role->small_rcvbuf, &port);
	r.len = port;
	ct_report_send(rep, &r);
	for (;;) {
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0)
			continue;
		if (fork() == 0) {
			close(lfd);
			ct_peer_serve(role, fd, rep, conn);
		}
		close(fd);
		conn++;
	}
}

struct ct_peer {
	pid_t pid;
	int port;
	int rep; /* the test's end of the report channel */
};

/* Starts a peer with role: its pid, port and report channel in *p. */
static inline void ct_peer_start(struct ct_peer *p, const char *role)
{
	struct ct_report r;
	char fdarg[16];
	int sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
	snprintf(fdarg, sizeof(fdarg), "%d", sv[1]);
	p->pid = fork();
	CHECK(p->pid >= 0, "fork");
	if (p->pid == 0) {
		char *args[] = { (char *)ct_prog, "--peer", (char *)role, fdarg, NULL };

		ct_exec_self(args, sv[1]);
	}
	close(sv[1]);
	p->rep = sv[0];
	ct_report_expect(p->rep, CT_PORT, CT_WAIT_MS, &r);
	p->port = (int)r.len;
}

/* Tells the peer's connection to go on (roles stall and reset). */
static inline void ct_peer_go(const struct ct_peer *p)
{
	struct ct_report r = { .kind = CT_GO };

	ct_report_send(p->rep, &r);
}

static inline void ct_peer_stop(struct ct_peer *p)
{
	kill(p->pid, SIGKILL);
	waitpid(p->pid, NULL, 0);
	close(p->rep);
}

/* ---- a round trip that only a flush trigger can make fast ----------------------- */

/* Waits for and reads the echoed line into buf (NUL-terminated) with the
 * call under test. */
typedef void (*ct_reply_fn)(int fd, char *buf, size_t cap);

/*
 * One round: the request "hello world\r\n" in two writes, which the library
 * must hold (checked in the kernel); after hold_ms more it must still hold
 * them; then reply gets the echo. Returns ms from the first write (from
 * the end of the hold, if any) to the whole reply.
 */
static inline double ct_round(int fd, ct_reply_fn reply, int hold_ms)
{
	long long before = ct_kernel_bytes(fd);
	double t0 = ct_now_ms();
	char line[64];

	ct_send_all(fd, "hello ", 6, CT_WRITE, 0);
	ct_send_all(fd, "world\r\n", 7, CT_SEND, 0);
	ct_expect_held(fd, before);
	if (hold_ms > 0) {
		ct_sleep_ms(hold_ms);
		ct_expect_held(fd, before);
		t0 = ct_now_ms();
	}
	reply(fd, line, sizeof(line));
	CHECK(strcmp(line, "hello world\r\n") == 0, "reply '%s', want the echo", line);
	return ct_now_ms() - t0;
}

/* A held round, then CT_ROUNDS timed ones: the median must be fast. With
 * flush=1s, a trigger that did not flush would cost a whole second. */
static inline void ct_expect_fast_replies(int fd, ct_reply_fn reply, const char *what)
{
	double t[CT_ROUNDS], first = ct_round(fd, reply, CT_HOLD_MS);

	CHECK(first < CT_SLOW_MS, "%s: the held request took %.1f ms to come back "
	      "after the trigger: the trigger did not flush it", what, first);
	for (int i = 0; i < CT_ROUNDS; i++)
		t[i] = ct_round(fd, reply, 0);
	ct_expect_median(t, CT_ROUNDS, CT_FAST_MS, what);
}

/* An echo peer, one connection, and the fast-replies check on it. */
static inline void ct_echo_check(ct_reply_fn reply, int nonblock)
{
	struct ct_peer p;
	int fd;

	ct_peer_start(&p, "echo");
	fd = ct_connect(p.port);
	if (nonblock)
		ct_set_nonblock(fd);
	ct_expect_fast_replies(fd, reply, ct_variant);
	close(fd);
	ct_expect_end(p.rep, 13LL * (CT_ROUNDS + 1), CT_WAIT_MS);
	ct_peer_stop(&p);
}

/* ---- filling a connection whose peer does not read ------------------------------ */

/* What a test has had accepted: byte count and hash, and its generator. */
struct ct_sent {
	long long total;
	uint64_t hash;
	uint64_t seed;
};

/* One write of n fresh bytes by call how; accounts for what was taken.
 * One thread at a time. */
static inline ssize_t ct_write_some(int fd, struct ct_sent *s, size_t n, enum ct_how how)
{
	static unsigned char buf[65536];
	ssize_t r;

	CHECK(n > 0 && n <= sizeof(buf), "piece of %zu bytes", n);
	ct_fill(&s->seed, buf, n);
	r = ct_send(fd, buf, n, how, 0, 2);
	CHECK(r <= (ssize_t)n, "%zd bytes taken of %zu", r, n);
	if (r > 0) {
		s->total += r;
		s->hash = ct_fnv(s->hash, buf, (size_t)r);
	}
	return r;
}

/* Writes pieces of 1..max bytes (every call family) until one fails:
 * returns its errno. More than limit bytes taken is a failure. */
static inline int ct_fill_until_error(int fd, struct ct_sent *s, size_t max, long long limit)
{
	for (;;) {
		enum ct_how how = (enum ct_how)(ct_rand(&s->seed) % CT_NHOW);

		if (ct_write_some(fd, s, ct_rand_size(&s->seed, max), how) < 0)
			return errno;
		CHECK(s->total <= limit, "%lld bytes taken by a connection whose peer reads "
		      "nothing: no bound", s->total);
	}
}

/*
 * Fills fd's kernel queue to a peer that does not read, around the
 * library (sendmmsg is never held, and its answer is not the library's to
 * see): the library still takes small writes after it, as after a send the
 * kernel took whole that left the socket exactly full. Until a round 20 ms
 * after the last takes nothing (the peer's window shut too). Counts and
 * hashes what was taken in s; fd is blocking again after.
 */
static inline void ct_fill_kernel(int fd, struct ct_sent *s)
{
	static unsigned char buf[4096];
	struct iovec v = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct mmsghdr m = { .msg_hdr = { .msg_iov = &v, .msg_iovlen = 1 } };
	int fl = fcntl(fd, F_GETFL);
	long long before;

	CHECK(fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0, "O_NONBLOCK");
	do {
		before = s->total;
		for (;;) {
			ct_fill(&s->seed, buf, sizeof(buf));
			if (sendmmsg(fd, &m, 1, MSG_DONTWAIT) != 1)
				break;
			s->total += m.msg_len;
			s->hash = ct_fnv(s->hash, buf, m.msg_len);
			if (m.msg_len < sizeof(buf))
				break;
		}
		ct_sleep_ms(20);
	} while (s->total > before);
	CHECK(fcntl(fd, F_SETFL, fl) == 0, "restoring the file flags");
}

/* Ends the stream; the peer (reading by now) must have got exactly what
 * was taken, byte for byte. */
static inline void ct_expect_all_taken(const struct ct_peer *p, int fd, const struct ct_sent *s)
{
	struct ct_report r;

	CHECK(shutdown(fd, SHUT_WR) == 0, "shutdown");
	ct_report_expect(p->rep, CT_END, CT_WAIT_MS * 3, &r);
	ct_say("%lld bytes taken, peer got %lld", s->total, r.len);
	CHECK(r.len == s->total, "the peer got %lld bytes, %lld were taken", r.len, s->total);
	CHECK(r.hash == s->hash, "the peer's bytes differ from those taken (hash %016llx, want %016llx)",
	      (unsigned long long)r.hash, (unsigned long long)s->hash);
}


/* ---- the test's main ---------------------------------------------------------------- */

struct ct_case {
	const char *name;
	void (*run)(int arg);
	int arg;
};

/*
 * First call of main(): becomes the peer if asked to; else arms the timeout
 * and runs the case named by argv[1]. Returns 0 when the case passed.
 */
static inline int ct_main(int argc, char **argv, const struct ct_case *cases, size_t n)
{
	ct_set_prog(argv[0]);
	if (argc == 4 && strcmp(argv[1], "--peer") == 0)
		ct_peer_main(argv[2], atoi(argv[3]));
	ct_arm_timeout();
	CHECK(argc >= 2, "usage: %s VARIANT", ct_prog);
	ct_variant = argv[1];
	for (size_t i = 0; i < n; i++) {
		if (strcmp(cases[i].name, argv[1]) == 0) {
			cases[i].run(cases[i].arg);
			return 0;
		}
	}
	CHECK(0, "unknown variant '%s'", argv[1]);
	return 2;
}

#define CT_NCASES(c) (sizeof(c) / sizeof((c)[0]))

#endif
