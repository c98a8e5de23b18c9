/*
 * test_setsockopt - the program's own TCP_NODELAY calls, and their errors.
 *
 *   test_setsockopt forced|plain
 *
 * forced: run under a rule that makes connections nodelay (NAGLEFIX_MODE=
 * nodelay): TCP_NODELAY is 1 right after connect, the program's
 * setsockopt(TCP_NODELAY, 0) succeeds but the option stays 1, and the round
 * trip stays fast. plain: without the shim (or under pass) the option is
 * what the program set and the round trip stalls.
 *
 * Either way every call returns what the kernel says with the kernel's
 * errno, a success leaves errno alone, and a connect that fails leaves the
 * socket's TCP_NODELAY as the program had set it.
 */
#include "../common/echo.h"

#define LO 23400
#define HI 23499

/* The kernel's own answers, whatever the shim does. */
static void errors_are_the_kernels(int fd)
{
	int on = 1, p[2], udp;
	char one = 1;

	CHECK_ERRNO(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, 1), EINVAL);
	CHECK_ERRNO(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, NULL, sizeof(int)), EFAULT);
	CHECK_ERRNO(setsockopt(9999, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)), EBADF);
	CHECK_ERRNO(setsockopt(-1, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)), EBADF);
	CHECK(pipe(p) == 0, "pipe");
	CHECK_ERRNO(setsockopt(p[1], IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)), ENOTSOCK);
	close(p[0]);
	close(p[1]);
	udp = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK(udp >= 0, "udp socket");
	CHECK_ERRNO(setsockopt(udp, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)), ENOPROTOOPT);
	close(udp);
}

/* A connect that is refused leaves TCP_NODELAY as the program set it, and
 * the same socket connected again later gets its rule then. */
static void refused_then_connected(int forced, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = nft_addr("127.0.0.1", 1, &ss); /* nobody listens on port 1 */
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	CHECK(fd >= 0, "socket");
	CHECK_ERRNO(connect(fd, (struct sockaddr *)&ss, len), ECONNREFUSED);
	nft_expect_nodelay(fd, 0, "after a refused connect (program never set it)");
	nft_set_nodelay(fd, 1);
	CHECK_ERRNO(connect(fd, (struct sockaddr *)&ss, len), ECONNREFUSED);
	nft_expect_nodelay(fd, 1, "after a refused connect (program set it to 1)");
	nft_set_nodelay(fd, 0);
	len = nft_addr("127.0.0.1", port, &ss);
	CHECK_OK(connect(fd, (struct sockaddr *)&ss, len));
	nft_expect_nodelay(fd, forced, "when the same socket finally connects");
	nft_expect_rtt(fd, NFT_WRITE, forced ? "fast" : "stall");
	close(fd);
}

int main(int argc, char **argv)
{
	int forced, port, fd, on = 1, off = 0;
	pid_t peer;

	nft_init(argc, argv);
	CHECK(argc == 2 && (strcmp(argv[1], "forced") == 0 || strcmp(argv[1], "plain") == 0),
	      "usage: test_setsockopt forced|plain");
	forced = argv[1][0] == 'f';
	peer = nft_peer_listen("127.0.0.1", LO, HI, &port);

	fd = nft_connect("127.0.0.1", port);
	nft_expect_nodelay(fd, forced, "right after connect");
	CHECK_OK(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &off, sizeof(off)));
	nft_expect_nodelay(fd, forced, "after the program set it to 0");
	nft_expect_rtt(fd, NFT_WRITE, forced ? "fast" : "stall");
	CHECK_OK(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)));
	nft_expect_nodelay(fd, 1, "after the program set it to 1");
	CHECK_OK(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &off, sizeof(off)));
	nft_expect_nodelay(fd, forced, "after the program set it to 0 again");
	/* Other options go through untouched. */
	CHECK_OK(setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)));
	errors_are_the_kernels(fd);
	nft_expect_nodelay(fd, forced, "after the failed calls");
	close(fd);

	refused_then_connected(forced, port);
	nft_peer_stop(peer);
	return 0;
}
