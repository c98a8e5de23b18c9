/*
 * test_inherited - a TCP connection that was open before the library loaded.
 *
 *   test_inherited on|off connect|accept|listen CALL LIBRARY
 *
 * Run without LD_PRELOAD. The first image opens a TCP connection to a peer
 * (connect: it connects to an echo server; accept: it accepts the peer's
 * connection on a port in 23600-23699), checks TCP_NODELAY is 0, then
 * re-executes itself with LD_PRELOAD=LIBRARY (an empty LIBRARY: none),
 * handing over the descriptor number. (listen: it hands over a listening
 * socket on a port in 23600-23699, and the new image accepts the peer's
 * connection on it: the accepted socket must be on or off at once.) The new image, whose library has never
 * seen the socket, must leave it alone until the first send, made with
 * CALL (write, send, sendto, sendmsg or writev); from then on TCP_NODELAY is
 * on or off as the first argument says and the round trip fast or stalled.
 * The rest of the configuration (NAGLEFIX_MODE, NAGLEFIX_CONF) comes from
 * the environment.
 */
#include "../common/echo.h"

/* The re-executed image: argv is --inherited on|off CALL FD [PORT]; with
 * PORT, FD is a listening socket to accept the peer's connection on. */
static int second_image(int argc, char **argv)
{
	int want = nft_onoff(argv[2]), fd = atoi(argv[4]);
	enum nft_how how = nft_how_parse(argv[3]);
	char line[64];

	if (argc == 6) {
		int lfd = fd;

		nft_peer_connect("127.0.0.1", atoi(argv[5]));
		fd = accept(lfd, NULL, NULL);
		CHECK(fd >= 0, "accept on the inherited listening socket");
		nft_expect_nodelay(fd, want, "right after accept");
		close(lfd);
	}
	nft_expect_nodelay(fd, want && argc == 6, "before the first write");
	nft_send_all(fd, "hello ", how);
	nft_expect_nodelay(fd, want, "after the first write");
	nft_send_all(fd, "world\r\n", how);
	nft_read_line(fd, line, sizeof(line));
	CHECK(strcmp(line, "hello world\r\n") == 0, "bad echo");
	nft_expect_rtt(fd, how, want ? "fast" : "stall");
	nft_expect_nodelay(fd, want, "after the round trips");
	return 0;
}

/* The connection (or listener), opened without the library. */
static int open_connection(const char *side, int *fd, int *port)
{
	int lfd;

	if (strcmp(side, "connect") == 0) {
		pid_t peer = nft_peer_listen("127.0.0.1", 23400, 23499, port);

		*fd = nft_connect("127.0.0.1", *port);
		return peer;
	}
	CHECK(strcmp(side, "accept") == 0 || strcmp(side, "listen") == 0,
	      "side is connect, accept or listen, not '%s'", side);
	lfd = nft_listen("127.0.0.1", 23600, 23699, port);
	CHECK(fcntl(lfd, F_SETFD, 0) == 0, "clear FD_CLOEXEC");
	if (side[0] == 'l') {
		*fd = lfd;
		return 0;
	}
	{
		pid_t peer = nft_peer_connect("127.0.0.1", *port);

		*fd = accept(lfd, NULL, NULL);
		CHECK(*fd >= 0, "accept");
		close(lfd);
		return peer;
	}
}

int main(int argc, char **argv)
{
	char fdnum[16], portnum[16];
	int fd, port;

	nft_init(argc, argv);
	if ((argc == 5 || argc == 6) && strcmp(argv[1], "--inherited") == 0)
		return second_image(argc, argv);
	CHECK(argc == 5, "usage: test_inherited on|off connect|accept|listen CALL LIBRARY");
	CHECK(getenv("LD_PRELOAD") == NULL, "run this without LD_PRELOAD");
	nft_onoff(argv[1]);
	nft_how_parse(argv[3]);

	/* The peer is our child; it survives the exec (same process). */
	open_connection(argv[2], &fd, &port);
	nft_expect_nodelay(fd, 0, "before the library is loaded");
	snprintf(fdnum, sizeof(fdnum), "%d", fd);
	snprintf(portnum, sizeof(portnum), "%d", port);
	if (argv[4][0])
		setenv("LD_PRELOAD", argv[4], 1);
	{
		char *args[] = { argv[0], "--inherited", argv[1], argv[3], fdnum,
				 argv[2][0] == 'l' ? portnum : NULL, NULL };

		execv("/proc/self/exe", args);
	}
	CHECK(0, "exec");
	return 1;
}
