/*
 * test_nonblock - a non-blocking connect (EINPROGRESS), as event loops do.
 *
 *   test_nonblock on|off [sock_nonblock|fcntl]
 *
 * The socket is made non-blocking with SOCK_NONBLOCK (default) or with
 * fcntl(O_NONBLOCK); connect must fail with EINPROGRESS and TCP_NODELAY be
 * on or off right then, before the handshake is over. After poll() says
 * writable, SO_ERROR is 0, connect again says 0 then EISCONN, TCP_NODELAY is
 * unchanged and the round trip (still non-blocking) is fast or stalls.
 */
#include "../common/echo.h"

int main(int argc, char **argv)
{
	struct sockaddr_storage ss;
	struct pollfd p;
	socklen_t len, elen;
	int want, port, fd, err = -1, use_fcntl = 0;
	pid_t peer;

	nft_init(argc, argv);
	CHECK(argc == 2 || argc == 3, "usage: test_nonblock on|off [sock_nonblock|fcntl]");
	want = nft_onoff(argv[1]);
	if (argc == 3) {
		CHECK(strcmp(argv[2], "fcntl") == 0 || strcmp(argv[2], "sock_nonblock") == 0,
		      "bad way '%s'", argv[2]);
		use_fcntl = argv[2][0] == 'f';
	}
	peer = nft_peer_listen("127.0.0.1", 23400, 23499, &port);
	len = nft_addr("127.0.0.1", port, &ss);

	fd = socket(AF_INET, SOCK_STREAM | (use_fcntl ? 0 : SOCK_NONBLOCK), 0);
	CHECK(fd >= 0, "socket");
	if (use_fcntl)
		CHECK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0, "O_NONBLOCK");
	CHECK_ERRNO(connect(fd, (struct sockaddr *)&ss, len), EINPROGRESS);
	nft_expect_nodelay(fd, want, "right after EINPROGRESS");

	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	CHECK(poll(&p, 1, 5000) == 1 && (p.revents & POLLOUT), "not writable within 5 s");
	elen = sizeof(err);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == 0 && err == 0,
	      "SO_ERROR %s", ct_errname(err));
	/* Linux reports the completed connect once with 0, then EISCONN. */
	CHECK_OK(connect(fd, (struct sockaddr *)&ss, len));
	CHECK_ERRNO(connect(fd, (struct sockaddr *)&ss, len), EISCONN);
	nft_expect_nodelay(fd, want, "once connected");
	nft_expect_rtt(fd, NFT_SEND, want ? "fast" : "stall");
	nft_expect_nodelay(fd, want, "after the round trips");
	close(fd);
	nft_peer_stop(peer);
	return 0;
}
