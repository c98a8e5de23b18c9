/*
 * test_fd - a socket's state follows its descriptor: dup, dup2, dup3,
 * fcntl(F_DUPFD), close, close_range, fork, and a reconnect.
 *
 *   test_fd on|off [PART]
 *
 * PART is one of dups, unix, reuse, unseen, cloexec, fork, reconnect,
 * copies (default: all, in that order), so run.sh can report each alone.
 *
 * Run with NAGLEFIX_CONF=conf/fd.conf: connections to 127.0.0.1 ports
 * 23400-23499 are nodelay, everything else pass (or conf/fd-coalesce.conf:
 * the same with coalesce, which keeps TCP_NODELAY on too). Two peers: A
 * (matching) and B (not matching, ports 23500-23599). "on": the shim is
 * loaded and the rule must be seen through every copy of A's descriptor;
 * "off": no shim, TCP_NODELAY is what the program sets, everywhere.
 *
 * A forced socket is recognised by setting TCP_NODELAY to 0 on it: it reads
 * back 1 only if the library knows that descriptor is nodelay.
 */
#include <sys/syscall.h>

#include "../common/echo.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC 4
#endif

static int forced; /* the "on" argument */

/* Does the library keep TCP_NODELAY on at fd? Expect it iff want. */
static void expect_forced(int fd, int want, const char *what)
{
	nft_set_nodelay(fd, 0);
	CHECK(nft_nodelay(fd) == want, "%s: TCP_NODELAY %d after setting 0, want %d", what,
	      nft_nodelay(fd), want);
}

/* A fresh nodelay connection to peer A. */
static int connect_a(int port_a)
{
	int fd = nft_connect("127.0.0.1", port_a);

	nft_expect_nodelay(fd, forced, "connected to A");
	return fd;
}

/* Copies of a descriptor share its rule, and outlive the original. */
static void dups(int port_a, int port_b __attribute__((unused)))
{
	int a = connect_a(port_a), d, d2 = 100, d3 = 101;

	d = CHECK_OK(dup(a));
	expect_forced(d, forced, "dup");
	CHECK(CHECK_OK(dup2(a, d2)) == d2, "dup2 returned another fd");
	expect_forced(d2, forced, "dup2");
	CHECK(CHECK_OK(dup3(a, d3, O_CLOEXEC)) == d3, "dup3 returned another fd");
	CHECK(fcntl(d3, F_GETFD) == FD_CLOEXEC, "dup3 lost O_CLOEXEC");
	expect_forced(d3, forced, "dup3");
	CHECK_OK(close(a));
	expect_forced(d, forced, "dup after the original is closed");
	expect_forced(d2, forced, "dup2 after the original is closed");
	nft_expect_rtt(d3, NFT_WRITE, forced ? "fast" : "stall");

	/* The kernel's errors, unchanged. */
	CHECK(CHECK_OK(dup2(d, d)) == d, "dup2(fd, fd)");
	CHECK_ERRNO(dup3(d, d, 0), EINVAL);
	CHECK_ERRNO(dup(-1), EBADF);
	CHECK_ERRNO(dup2(9999, d), EBADF);
	CHECK_ERRNO(close(a), EBADF);
	CHECK_ERRNO(close(-1), EBADF);
	close(d);
	close(d2);
	close(d3);
}

/*
 * Bytes written through two copies of one descriptor arrive in the order
 * they were written ("hello " through the first, "world\r\n" through the
 * second), and the copy is known to the library as the original is.
 */
static void order_through_copy(int a, int d, const char *what)
{
	char line[64];

	nft_send_all(a, "hello ", NFT_WRITE);
	nft_send_all(d, "world\r\n", NFT_WRITE);
	nft_read_line(a, line, sizeof(line));
	CHECK(strcmp(line, "hello world\r\n") == 0, "%s: bytes out of order: '%s'", what, line);
	expect_forced(d, forced, what);
}

/* Every way of duplicating a descriptor, fcntl's included, each on a new
 * connection (a dup'ed coalesce socket falls back to nodelay for good). */
static void copies_keep_order(int port_a, int port_b __attribute__((unused)))
{
	static const char *const ways[] = { "fcntl(F_DUPFD)", "fcntl(F_DUPFD_CLOEXEC)", "dup", "dup3" };

	for (unsigned i = 0; i < sizeof(ways) / sizeof(ways[0]); i++) {
		int a = connect_a(port_a), d;

		switch (i) {
		case 0:
			d = CHECK_OK(fcntl(a, F_DUPFD, 0));
			break;
		case 1:
			d = CHECK_OK(fcntl(a, F_DUPFD_CLOEXEC, 0));
			break;
		case 2:
			d = CHECK_OK(dup(a));
			break;
		default:
			d = CHECK_OK(dup3(a, 102, O_CLOEXEC));
			break;
		}
		order_through_copy(a, d, ways[i]);
		close(d);
		close(a);
	}
}

/* A socket disconnected (connect to AF_UNSPEC) and connected again, to the
 * other peer, gets the rule of its new destination, both ways round. */
static void reconnect(int port_a, int port_b)
{
	struct sockaddr_storage ss;
	struct sockaddr unspec = { .sa_family = AF_UNSPEC };
	socklen_t len;
	int fd = nft_connect("127.0.0.1", port_b);

	nft_expect_nodelay(fd, 0, "connected to B");
	CHECK_OK(connect(fd, &unspec, sizeof(unspec)));
	len = nft_addr("127.0.0.1", port_a, &ss);
	CHECK_OK(connect(fd, (struct sockaddr *)&ss, len));
	nft_expect_nodelay(fd, forced, "reconnected from B to A");
	nft_expect_rtt(fd, NFT_WRITE, forced ? "fast" : "stall");
	CHECK_OK(connect(fd, &unspec, sizeof(unspec)));
	len = nft_addr("127.0.0.1", port_b, &ss);
	CHECK_OK(connect(fd, (struct sockaddr *)&ss, len));
	expect_forced(fd, 0, "reconnected from A to B");
	nft_expect_rtt(fd, NFT_WRITE, "stall");
	close(fd);
}

/* A UNIX socket dup2'ed over a nodelay TCP socket's number is a UNIX
 * socket: it works, and the TCP option cannot be set on it. */
static void unix_over_tcp(int port_a, int port_b __attribute__((unused)))
{
	int a = connect_a(port_a), sv[2];
	char buf[8];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
	CHECK(CHECK_OK(dup2(sv[0], a)) == a, "dup2");
	CHECK(CHECK_OK(write(a, "hi", 2)) == 2, "write");
	CHECK(CHECK_OK(send(a, "hi", 2, 0)) == 2, "send");
	CHECK(read(sv[1], buf, sizeof(buf)) == 4, "read");
	CHECK_ERRNO(setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &(int){ 0 }, sizeof(int)), EOPNOTSUPP);
	close(a);
	close(sv[0]);
	close(sv[1]);
}

/*
 * A TCP socket to B made by raw system calls, as a program that bypasses
 * libc would: the library cannot see it, so its number must be one the
 * library knows nothing about (no stale rule from an earlier socket).
 */
static int raw_socket_to(int port)
{
	struct sockaddr_storage ss;
	socklen_t len = nft_addr("127.0.0.1", port, &ss);
	int fd = (int)syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);

	CHECK(fd >= 0, "raw socket");
	CHECK(syscall(SYS_connect, fd, (struct sockaddr *)&ss, len) == 0, "raw connect");
	return fd;
}

/* A closed number reused by socket() starts fresh, both ways round. */
static void reuse(int port_a, int port_b)
{
	int a = connect_a(port_a), s, t;

	close(a);
	s = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(s == a, "socket() did not reuse fd %d (got %d)", a, s);
	nft_set_nodelay(s, 1);
	{
		struct sockaddr_storage ss;
		socklen_t len = nft_addr("127.0.0.1", port_b, &ss);

		CHECK_OK(connect(s, (struct sockaddr *)&ss, len));
	}
	expect_forced(s, 0, "a socket to B on the number A had");
	nft_expect_rtt(s, NFT_WRITE, "stall");
	close(s);
	t = connect_a(port_a);
	CHECK(t == a, "socket() did not reuse fd %d (got %d)", a, t);
	expect_forced(t, forced, "a socket to A on the number B had");
	close(t);

#ifdef __GLIBC__
	/* The same through close_range. */
	a = connect_a(port_a);
	CHECK_OK(close_range((unsigned)a, (unsigned)a, 0));
	CHECK_ERRNO(write(a, "x", 1), EBADF);
	s = nft_connect("127.0.0.1", port_b);
	CHECK(s == a, "socket() did not reuse fd %d (got %d)", a, s);
	expect_forced(s, 0, "a socket to B after close_range");
	close(s);
#else
	ct_say("close_range step skipped: not in this libc");
#endif
}

/* Numbers reused behind the library's back carry no stale rule: after
 * close, close_range, and dup2 of a descriptor it never saw. */
static void reuse_unseen(int port_a, int port_b)
{
	int a = connect_a(port_a), s;

	CHECK_OK(close(a));
	s = raw_socket_to(port_b);
	CHECK(s == a, "raw socket did not reuse fd %d (got %d)", a, s);
	expect_forced(s, 0, "an unseen socket on the number of a closed nodelay one");
	close(s);

#ifdef __GLIBC__
	a = connect_a(port_a);
	CHECK_OK(close_range((unsigned)a, (unsigned)a, 0));
	s = raw_socket_to(port_b);
	CHECK(s == a, "raw socket did not reuse fd %d (got %d)", a, s);
	expect_forced(s, 0, "an unseen socket on a number close_range closed");
	close(s);
#else
	ct_say("close_range step skipped: not in this libc");
#endif

	a = connect_a(port_a);
	s = raw_socket_to(port_b);
	CHECK(CHECK_OK(dup2(s, a)) == a, "dup2");
	expect_forced(a, 0, "an unseen socket dup2'ed over a nodelay one");
	close(s);
	close(a);
}

/* close_range(CLOSE_RANGE_CLOEXEC) closes nothing: the rule stays. */
static void cloexec_range(int port_a, int port_b __attribute__((unused)))
{
#ifdef __GLIBC__
	int a = connect_a(port_a);

	CHECK_OK(close_range((unsigned)a, (unsigned)a, CLOSE_RANGE_CLOEXEC));
	CHECK(fcntl(a, F_GETFD) == FD_CLOEXEC, "close_range did not set FD_CLOEXEC");
	expect_forced(a, forced, "after close_range(CLOSE_RANGE_CLOEXEC)");
	close(a);
#else
	(void)port_a;
	ct_skip("musl has no close_range(): a program can only make the system call, "
		 "which no preload library sees");
#endif
}

/* A forked child has the parent's descriptors and their rules. */
static void forked(int port_a, int port_b __attribute__((unused)))
{
	int a = connect_a(port_a), status;
	pid_t pid = fork();

	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		expect_forced(a, forced, "in a forked child");
		nft_expect_rtt(a, NFT_SEND, forced ? "fast" : "stall");
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the forked child failed");
	close(a);
}

static const struct part {
	const char *name;
	void (*run)(int port_a, int port_b);
} parts[] = {
	{ "dups", dups },
	{ "unix", unix_over_tcp },
	{ "reuse", reuse },
	{ "unseen", reuse_unseen },
	{ "cloexec", cloexec_range },
	{ "fork", forked },
	{ "reconnect", reconnect },
	{ "copies", copies_keep_order },
};

int main(int argc, char **argv)
{
	const char *only = argc > 2 ? argv[2] : NULL;
	int port_a, port_b, found = 0;
	pid_t peer_a, peer_b;

	nft_init(argc, argv);
	CHECK(argc == 2 || argc == 3, "usage: test_fd on|off [PART]");
	forced = nft_onoff(argv[1]);
	peer_a = nft_peer_listen("127.0.0.1", 23400, 23499, &port_a);
	peer_b = nft_peer_listen("127.0.0.1", 23500, 23599, &port_b);
	for (unsigned i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		if (only && strcmp(only, parts[i].name) != 0)
			continue;
		found = 1;
		parts[i].run(port_a, port_b);
	}
	CHECK(found, "no part named '%s'", only);
	nft_peer_stop(peer_a);
	nft_peer_stop(peer_b);
	return 0;
}
