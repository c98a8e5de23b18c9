/*
 * test_untouched - what is not TCP over IP is left alone.
 *
 *   test_untouched [FD]
 *
 * UNIX stream and datagram socketpairs, UNIX sockets from socket(), UDP
 * sockets over IPv4 and IPv6 (connected to an address a rule matches),
 * a pipe and a file: every write, send, sendto, sendmsg and writev returns
 * what the kernel returns, with the kernel's errno, and never gets
 * TCP_NODELAY. Run by run.sh without the shim and under NAGLEFIX_MODE=
 * nodelay; the expected values below are the kernel's.
 *
 * FD, if given, is a file or pipe the program inherited open for writing:
 * a descriptor the library finds open at start-up and classifies on its
 * first write; that must not show either.
 *
 * It prints nothing unless it fails, and opens nothing before main(), so
 * run.sh can compare the setsockopt/getsockopt/getsockname/getpeername
 * calls made with and without the shim under strace: they must be the same.
 */
#include <sys/un.h>

#include "../common/echo.h"

/* Each call family once on fd, 5 bytes each (writev: 2 + 3). */
static void send_each_way(int fd, ssize_t want, int want_errno)
{
	static const char *const names[] = { "write", "send", "sendto", "sendmsg", "writev" };

	for (int how = NFT_WRITE; how <= NFT_WRITEV; how++) {
		ssize_t n;

		errno = EDOM;
		n = nft_send(fd, "abcde", 5, (enum nft_how)how);
		CHECK(n == want && errno == (want_errno ? want_errno : EDOM),
		      "%s on fd %d returned %zd errno %s, want %zd %s", names[how], fd, n,
		      ct_errname(errno), want, want_errno ? ct_errname(want_errno) : "unchanged");
	}
	{
		struct iovec iov[2] = { { (void *)"ab", 2 }, { (void *)"cde", 3 } };
		ssize_t n;

		errno = EDOM;
		n = writev(fd, iov, 2);
		CHECK(n == want && errno == (want_errno ? want_errno : EDOM),
		      "writev of 2 buffers returned %zd errno %s", n, ct_errname(errno));
	}
}

/* Reads exactly len bytes and compares them. */
static void expect_bytes(int fd, const char *s)
{
	char buf[256];
	size_t len = strlen(s), have = 0;

	while (have < len) {
		ssize_t n = read(fd, buf + have, len - have);

		CHECK(n > 0, "read");
		have += (size_t)n;
	}
	CHECK(memcmp(buf, s, len) == 0, "wrong bytes");
}

/* TCP_NODELAY cannot even be read or set on fd: the kernel says get_e
 * and set_e. */
static void no_tcp_option(int fd, int get_e, int set_e)
{
	int v = 1;
	socklen_t len = sizeof(v);

	CHECK_ERRNO(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len), get_e);
	CHECK_ERRNO(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v)), set_e);
}

static int sockopt_int(int fd, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	CHECK(getsockopt(fd, SOL_SOCKET, name, &v, &len) == 0, "getsockopt");
	return v;
}

static void unix_stream(void)
{
	int sv[2], fd;
	struct sockaddr_storage ss;
	socklen_t len = nft_addr("127.0.0.1", 23400, &ss);

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
	send_each_way(sv[0], 5, 0);
	expect_bytes(sv[1], "abcdeabcdeabcdeabcdeabcdeabcde");
	no_tcp_option(sv[0], EOPNOTSUPP, EOPNOTSUPP);
	CHECK_ERRNO(connect(sv[0], (struct sockaddr *)&ss, len), EINVAL);
	close(sv[1]);
	send_each_way(sv[0], -1, EPIPE);
	close(sv[0]);

	/* From socket(): the library sees it created, and must still keep out. */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(fd >= 0, "socket AF_UNIX");
	CHECK_ERRNO(connect(fd, (struct sockaddr *)&ss, len), EINVAL);
	send_each_way(fd, -1, ENOTCONN);
	no_tcp_option(fd, EOPNOTSUPP, EOPNOTSUPP);
	close(fd);
}

static void unix_dgram(void)
{
	int sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0, "socketpair");
	send_each_way(sv[0], 5, 0);
	close(sv[0]);
	close(sv[1]);
}

/* A UDP socket connected to addr: still UDP, no TCP option, data flows. */
static void udp(const char *addr)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int rx, tx, port = 0;
	char buf[64];

	for (port = 23400; port < 23500; port++) {
		len = nft_addr(addr, port, &ss);
		rx = socket(ss.ss_family, SOCK_DGRAM, 0);
		CHECK(rx >= 0, "socket udp");
		if (bind(rx, (struct sockaddr *)&ss, len) == 0)
			break;
		close(rx);
	}
	CHECK(port < 23500, "no free UDP port");
	tx = socket(ss.ss_family, SOCK_DGRAM, 0);
	CHECK(tx >= 0, "socket udp");
	CHECK_ERRNO(send(tx, "x", 1, 0), EDESTADDRREQ);
	CHECK_ERRNO(write(tx, "x", 1), EDESTADDRREQ);
	CHECK_OK(connect(tx, (struct sockaddr *)&ss, len));
	CHECK(sockopt_int(tx, SO_PROTOCOL) == IPPROTO_UDP, "not UDP any more");
	CHECK(sockopt_int(tx, SO_TYPE) == SOCK_DGRAM, "not SOCK_DGRAM any more");
	/* The kernel's answers differ between UDP over IPv4 and IPv6. */
	if (ss.ss_family == AF_INET)
		no_tcp_option(tx, EOPNOTSUPP, ENOPROTOOPT);
	else
		no_tcp_option(tx, ENOPROTOOPT, ENOPROTOOPT);
	send_each_way(tx, 5, 0);
	for (int i = 0; i < 6; i++)
		CHECK(recv(rx, buf, sizeof(buf), 0) == 5, "datagram %d", i);
	close(tx);
	close(rx);
}

static void pipe_and_file(void)
{
	char path[] = "/tmp/nftest-untouched-XXXXXX";
	const void *volatile bad = (const void *)8; /* unmapped: EFAULT */
	int p[2], fd, ro;

	CHECK(pipe(p) == 0, "pipe");
	CHECK_OK(write(p[1], "abc", 3));
	CHECK_ERRNO(send(p[1], "abc", 3, 0), ENOTSOCK);
	CHECK_ERRNO(sendto(p[1], "abc", 3, 0, NULL, 0), ENOTSOCK);
	CHECK_ERRNO(write(p[1], bad, 3), EFAULT);
	expect_bytes(p[0], "abc");
	no_tcp_option(p[1], ENOTSOCK, ENOTSOCK);
	close(p[0]);
	CHECK_ERRNO(write(p[1], "abc", 3), EPIPE);
	close(p[1]);

	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	CHECK(CHECK_OK(write(fd, "abcde", 5)) == 5, "file write");
	CHECK_ERRNO(send(fd, "abc", 3, 0), ENOTSOCK);
	CHECK_ERRNO(sendmsg(fd, &(struct msghdr){ 0 }, 0), ENOTSOCK);
	no_tcp_option(fd, ENOTSOCK, ENOTSOCK);
	ro = open(path, O_RDONLY);
	CHECK(ro >= 0, "open");
	CHECK_ERRNO(write(ro, "abc", 3), EBADF);
	close(ro);
	close(fd);
	unlink(path);
	CHECK_ERRNO(write(fd, "abc", 3), EBADF);
	CHECK_ERRNO(write(-1, "abc", 3), EBADF);
	CHECK_ERRNO(send(-1, "abc", 3, 0), EBADF);
}

static void socket_errors(void)
{
	CHECK_ERRNO(socket(AF_INET, SOCK_STREAM, IPPROTO_UDP), EPROTONOSUPPORT);
	CHECK_ERRNO(socket(12345, SOCK_STREAM, 0), EAFNOSUPPORT);
	CHECK_ERRNO(socket(AF_INET, 12345, 0), EINVAL);
}

/* An inherited non-socket: writes succeed and keep errno, sends fail
 * with ENOTSOCK, every time. */
static void inherited(int fd)
{
	for (int i = 0; i < 3; i++) {
		CHECK(CHECK_OK(write(fd, "abcde", 5)) == 5, "write to inherited fd %d", fd);
		CHECK_ERRNO(send(fd, "abcde", 5, 0), ENOTSOCK);
	}
}

int main(int argc, char **argv)
{
	nft_init(argc, argv);
	CHECK(argc <= 2, "usage: test_untouched [FD]");
	if (argc == 2)
		inherited(atoi(argv[1]));
	unix_stream();
	unix_dgram();
	udp("127.0.0.1");
	udp("::1");
	pipe_and_file();
	socket_errors();
	return 0;
}
