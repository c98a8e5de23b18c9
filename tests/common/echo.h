/*
 * echo.h - an echo peer and the write-write-read round trip (tests/common/,
 * on harness.h): the integration tests (tests/integration/).
 *
 * Each test is one program run twice or more by run.sh: without the shim,
 * and with LD_PRELOAD=build/libnaglefix.so and some configuration. It takes
 * what it should see as arguments ("stall" or "fast", "on" or "off"), so
 * the same binary checks both sides of every feature.
 *
 * The other end of each connection is a "peer": this same executable,
 * re-executed with "--peer" without LD_PRELOAD (ct_exec_self), so it never
 * runs with the library loaded and only the test's own side is under test.
 * Unlike peer.h's, it listens on any address (IPv6, mapped, a port range)
 * or connects to the test (for accept), and echoes lines.
 * nft_init() must be the first call of main(): it turns a peer invocation
 * into the peer and arms the timeout.
 *
 * Everything here is static inline: each test includes it and uses some.
 */
#ifndef NF_TEST_ECHO_H
#define NF_TEST_ECHO_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "harness.h"

#define NFT_STALL_MS 30.0 /* "stall": median at least this (Nagle + delayed ACK ~40 ms) */

/* ---- addresses ------------------------------------------------------------ */

/* "127.0.0.1", "::1" or "::ffff:127.0.0.1" and a port into *ss. */
static inline socklen_t nft_addr(const char *addr, int port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, addr, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		return sizeof(*in);
	}
	CHECK(inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1, "bad address '%s'", addr);
	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons((uint16_t)port);
	return sizeof(*in6);
}

/* "LO-HI" or "N" into *lo, *hi. */
static inline void nft_range(const char *s, int *lo, int *hi)
{
	char *end;

	*lo = (int)strtol(s, &end, 10);
	*hi = *end == '-' ? (int)strtol(end + 1, &end, 10) : *lo;
	CHECK(*end == '\0' && *lo > 0 && *hi >= *lo && *hi < 65536, "bad port range '%s'", s);
}

/* A listening TCP socket on addr, on the first free port of lo..hi. */
static inline int nft_listen(const char *addr, int lo, int hi, int *port)
{
	struct sockaddr_storage ss;
	int one = 1;

	for (int p = lo; p <= hi; p++) {
		socklen_t len = nft_addr(addr, p, &ss);
		int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

		CHECK(fd >= 0, "socket");
		CHECK(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0, "SO_REUSEADDR");
		if (bind(fd, (struct sockaddr *)&ss, len) == 0 && listen(fd, 16) == 0) {
			*port = p;
			return fd;
		}
		close(fd);
	}
	CHECK(0, "no free port on %s in %d-%d", addr, lo, hi);
	return -1;
}

/* A TCP socket of the family of addr (AF_INET6 for a mapped one),
 * connected (blocking) to addr:port. */
static inline int nft_connect(const char *addr, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = nft_addr(addr, port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM, 0);

	CHECK(fd >= 0, "socket");
	CHECK(connect(fd, (struct sockaddr *)&ss, len) == 0, "connect to %s:%d", addr, port);
	return fd;
}

/* TCP_NODELAY of fd as the kernel has it (0 or 1). */
static inline int nft_nodelay(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);

	CHECK(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len) == 0, "getsockopt TCP_NODELAY on %d", fd);
	return v != 0;
}

/* Sets TCP_NODELAY on fd the way a program would; must succeed. */
static inline void nft_set_nodelay(int fd, int on)
{
	CHECK(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) == 0, "setsockopt TCP_NODELAY=%d", on);
}

/* "on" -> 1, "off" -> 0. */
static inline int nft_onoff(const char *s)
{
	CHECK(strcmp(s, "on") == 0 || strcmp(s, "off") == 0, "expected on or off, got '%s'", s);
	return s[1] == 'n';
}

/* TCP_NODELAY of fd must be want; when says at what point, for the message. */
#define nft_expect_nodelay(fd, want, when) nft_expect_nodelay_at(__FILE__, __LINE__, fd, want, when)
static inline void nft_expect_nodelay_at(const char *file, int line, int fd, int want,
					 const char *when)
{
	int got = nft_nodelay(fd);

	CHECK_AT(file, line, got == want, "TCP_NODELAY is %d %s, want %d", got, when, want);
}

/* ---- the peer: an echo service without the library ------------------------ */

static inline void nft_die_with_parent(void)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(CT_PEER_LIFETIME_S);
}

/* Echoes every complete line back in one write, until EOF. A partial line
 * gets no reply: that is what makes a split write wait for its ACK. */
static inline void nft_echo_lines(int fd)
{
	char buf[4096];
	size_t have = 0;

	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - have);
		char *nl;

		if (n <= 0)
			return;
		have += (size_t)n;
		while ((nl = memchr(buf, '\n', have)) != NULL) {
			size_t line = (size_t)(nl - buf) + 1;

			if (write(fd, buf, line) != (ssize_t)line)
				return;
			memmove(buf, buf + line, have - line);
			have -= line;
		}
		if (have == sizeof(buf))
			return;
	}
}

/* --peer listen ADDR LO-HI WFD: echo server; writes its port to WFD. */
static inline int nft_peer_listen_main(char **argv)
{
	int lo, hi, port, lfd, wfd = atoi(argv[4]);
	char msg[16];

	nft_range(argv[3], &lo, &hi);
	lfd = nft_listen(argv[2], lo, hi, &port);
	snprintf(msg, sizeof(msg), "%d\n", port);
	CHECK(write(wfd, msg, strlen(msg)) == (ssize_t)strlen(msg), "peer: report port");
	close(wfd);
	signal(SIGCHLD, SIG_IGN);
	for (;;) {
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0)
			continue;
		if (fork() == 0) {
			nft_die_with_parent();
			close(lfd);
			nft_echo_lines(fd);
			_exit(0);
		}
		close(fd);
	}
}

/* --peer connect ADDR PORT: connects, then echoes lines until EOF. */
static inline int nft_peer_connect_main(char **argv)
{
	int fd = nft_connect(argv[2], atoi(argv[3]));

	nft_echo_lines(fd);
	return 0;
}

static inline int nft_peer_main(int argc, char **argv)
{
	ct_prog = "peer";
	nft_die_with_parent();
	signal(SIGPIPE, SIG_IGN);
	CHECK(getenv("LD_PRELOAD") == NULL, "the peer must run without the shim");
	if (argc == 5 && strcmp(argv[1], "listen") == 0)
		return nft_peer_listen_main(argv);
	if (argc == 4 && strcmp(argv[1], "connect") == 0)
		return nft_peer_connect_main(argv);
	CHECK(0, "bad peer arguments");
	return 2;
}

/* Forks and re-executes this program as a peer, without LD_PRELOAD. */
static inline pid_t nft_peer_spawn(char *const *args, int keep_fd)
{
	pid_t pid = fork();

	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		ct_exec_self(args, keep_fd);
	}
	return pid;
}

/* Starts an echo server on addr, on a free port in lo..hi: returns its pid,
 * the port in *port. */
static inline pid_t nft_peer_listen(const char *addr, int lo, int hi, int *port)
{
	char range[32], wfd[16], buf[16] = "";
	int p[2];
	ssize_t n;
	pid_t pid;

	CHECK(pipe2(p, O_CLOEXEC) == 0, "pipe");
	snprintf(range, sizeof(range), "%d-%d", lo, hi);
	snprintf(wfd, sizeof(wfd), "%d", p[1]);
	{
		char *args[] = { (char *)ct_prog, "--peer", "listen", (char *)addr, range, wfd, NULL };

		pid = nft_peer_spawn(args, p[1]);
	}
	close(p[1]);
	n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	CHECK(n > 0, "the peer did not start");
	*port = atoi(buf);
	return pid;
}

/* Starts a peer that connects to addr:port and echoes lines. */
static inline pid_t nft_peer_connect(const char *addr, int port)
{
	char ports[16];
	char *args[] = { (char *)ct_prog, "--peer", "connect", (char *)addr, ports, NULL };

	snprintf(ports, sizeof(ports), "%d", port);
	return nft_peer_spawn(args, -1);
}

static inline void nft_peer_stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* First call of every test's main(): becomes the peer if asked to, else
 * arms the timeout. Returns only in the test itself. */
static inline void nft_init(int argc, char **argv)
{
	ct_set_prog(argv[0]);
	if (argc > 1 && strcmp(argv[1], "--peer") == 0)
		exit(nft_peer_main(argc - 1, argv + 1));
	ct_arm_timeout();
}

/* ---- sending the way a program would, and the round trip ----------------- */

enum nft_how { NFT_WRITE, NFT_SEND, NFT_SENDTO, NFT_SENDMSG, NFT_WRITEV };

static inline enum nft_how nft_how_parse(const char *s)
{
	static const char *const names[] = { "write", "send", "sendto", "sendmsg", "writev" };

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i]) == 0)
			return (enum nft_how)i;
	CHECK(0, "unknown call family '%s'", s);
	return NFT_WRITE;
}

/* One call of family how; returns what it returned. */
static inline ssize_t nft_send(int fd, const void *buf, size_t len, enum nft_how how)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	switch (how) {
	case NFT_SEND:
		return send(fd, buf, len, 0);
	case NFT_SENDTO:
		return sendto(fd, buf, len, 0, NULL, 0);
	case NFT_SENDMSG:
		return sendmsg(fd, &msg, 0);
	case NFT_WRITEV:
		return writev(fd, &iov, 1);
	case NFT_WRITE:
	default:
		return write(fd, buf, len);
	}
}

/* Sends all of s with calls of family how (polling if fd is non-blocking). */
static inline void nft_send_all(int fd, const char *s, enum nft_how how)
{
	size_t len = strlen(s);

	while (len > 0) {
		ssize_t n = nft_send(fd, s, len, how);

		if (n < 0 && errno == EAGAIN) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			poll(&p, 1, 1000);
			continue;
		}
		CHECK(n > 0, "send");
		s += n;
		len -= (size_t)n;
	}
}

/* Reads one line ending in '\n' (byte by byte: no read-ahead to lose). */
static inline void nft_read_line(int fd, char *buf, size_t cap)
{
	size_t have = 0;

	while (have + 1 < cap) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		CHECK(poll(&p, 1, 5000) == 1, "no reply within 5 s");
		n = read(fd, buf + have, 1);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		CHECK(n == 1, "connection closed while reading a line");
		if (buf[have++] == '\n')
			break;
	}
	buf[have] = '\0';
}

/*
 * The median in ms of rounds write("hello ") write("world\r\n") then read
 * the echoed line: a request sent in two small writes, the classic
 * write-write-read that Nagle's algorithm holds for a delayed ACK.
 */
static inline double nft_rtt_median(int fd, enum nft_how how, int rounds)
{
	double t[64];
	char line[64];

	CHECK(rounds > 0 && rounds <= 64, "rounds");
	for (int i = 0; i < rounds; i++) {
		double t0 = ct_now_ms();

		nft_send_all(fd, "hello ", how);
		nft_send_all(fd, "world\r\n", how);
		nft_read_line(fd, line, sizeof(line));
		t[i] = ct_now_ms() - t0;
		CHECK(strcmp(line, "hello world\r\n") == 0, "bad echo '%s'", line);
	}
	return ct_median(t, rounds);
}

/* The median round trip on fd must be "stall" (>= 30 ms over CT_STALL_ROUNDS
 * rounds) or "fast" (< 5 ms over CT_ROUNDS). */
#define nft_expect_rtt(fd, how, expect) nft_expect_rtt_at(__FILE__, __LINE__, fd, how, expect)
static inline void nft_expect_rtt_at(const char *file, int line, int fd, enum nft_how how,
				     const char *expect)
{
	int rounds = expect[0] == 's' ? CT_STALL_ROUNDS : CT_ROUNDS;
	double ms;

	CHECK_AT(file, line, strcmp(expect, "stall") == 0 || strcmp(expect, "fast") == 0,
		 "expected stall or fast, got '%s'", expect);
	ms = nft_rtt_median(fd, how, rounds);
	ct_say("median round trip %.2f ms over %d rounds (want %s)", ms, rounds, expect);
	if (expect[0] == 's')
		CHECK_AT(file, line, ms >= NFT_STALL_MS, "median %.2f ms, want a stall (>= %.0f ms)",
			 ms, NFT_STALL_MS);
	else
		CHECK_AT(file, line, ms < CT_FAST_MS, "median %.2f ms, want fast (< %.0f ms)", ms,
			 CT_FAST_MS);
}

#endif
