/*
 * test_accept - sockets this program accepts: accept and accept4.
 *
 *   test_accept on|off accept|accept4 [ADDR [LO-HI]]
 *
 * Listens on ADDR (default 127.0.0.1) on a free port in LO-HI (default
 * 23600-23699); a peer without the shim connects and echoes lines. The
 * accepted socket's TCP_NODELAY must be on or off as the first argument
 * says, and the server-side write-write-read round trip fast or stalled
 * accordingly. accept4 is called with SOCK_CLOEXEC, which must still hold.
 */
#include "../common/echo.h"

int main(int argc, char **argv)
{
	const char *addr = "127.0.0.1", *range = "23600-23699";
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int want, use4, lo, hi, port, lfd, fd;
	pid_t peer;

	nft_init(argc, argv);
	CHECK(argc >= 3 && argc <= 5 &&
	      (strcmp(argv[2], "accept") == 0 || strcmp(argv[2], "accept4") == 0),
	      "usage: test_accept on|off accept|accept4 [ADDR [LO-HI]]");
	want = nft_onoff(argv[1]);
	use4 = argv[2][6] == '4';
	if (argc > 3)
		addr = argv[3];
	if (argc > 4)
		range = argv[4];
	nft_range(range, &lo, &hi);

	lfd = nft_listen(addr, lo, hi, &port);
	peer = nft_peer_connect(addr, port);
	errno = EDOM;
	fd = use4 ? accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC)
		  : accept(lfd, (struct sockaddr *)&ss, &len);
	CHECK(fd >= 0, "%s", argv[2]);
	CHECK(errno == EDOM, "a successful %s changed errno", argv[2]);
	CHECK(ss.ss_family == (strchr(addr, ':') ? AF_INET6 : AF_INET), "peer address family %d",
	      ss.ss_family);
	CHECK(((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0) == use4, "FD_CLOEXEC is wrong");
	ct_say("accepted on %s port %d with %s, TCP_NODELAY %d", addr, port, argv[2], nft_nodelay(fd));
	nft_expect_nodelay(fd, want, "on the accepted socket");
	nft_expect_nodelay(lfd, 0, "on the listening socket");
	nft_expect_rtt(fd, NFT_WRITE, want ? "fast" : "stall");

	/* Errors are the kernel's. */
	len = sizeof(ss);
	CHECK_ERRNO(accept(9999, (struct sockaddr *)&ss, &len), EBADF);
#ifdef __GLIBC__
	CHECK_ERRNO(accept4(lfd, (struct sockaddr *)&ss, &len, 0x40000000), EINVAL);
#else
	/* musl retries an accept4 the kernel refuses with EINVAL as a plain
	 * accept (for kernels without accept4): on lfd that would block. */
	CHECK_ERRNO(accept4(9999, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC), EBADF);
#endif
	CHECK_ERRNO(accept(fd, (struct sockaddr *)&ss, &len), EINVAL);

	close(fd);
	close(lfd);
	nft_peer_stop(peer);
	return 0;
}
