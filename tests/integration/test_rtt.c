/*
 * test_rtt - the write-write-read round trip of a connecting client.
 *
 *   test_rtt stall|fast [ADDR [LO-HI [write|send|sendto|sendmsg|writev]]]
 *
 * Connects to an echo peer on ADDR (default 127.0.0.1) listening on a free
 * port in LO-HI (default 23400-23499), then times rounds (CT_ROUNDS;
 * CT_STALL_ROUNDS when a stall is wanted) of "hello " + "world\r\n" sent
 * in two calls and the echoed line read back.
 * ADDR ::ffff:a.b.c.d connects an AF_INET6 socket to the IPv4-mapped
 * address of a peer listening on a.b.c.d. The median must be a stall
 * (>= 30 ms) or fast (< 5 ms) as the first argument says.
 */
#include "../common/echo.h"

int main(int argc, char **argv)
{
	const char *expect, *addr = "127.0.0.1", *range = "23400-23499";
	const char *listen_addr;
	enum nft_how how = NFT_WRITE;
	int lo, hi, port, fd;
	pid_t peer;

	nft_init(argc, argv);
	CHECK(argc >= 2 && argc <= 5, "usage: test_rtt stall|fast [ADDR [LO-HI [CALL]]]");
	expect = argv[1];
	if (argc > 2)
		addr = argv[2];
	if (argc > 3)
		range = argv[3];
	if (argc > 4)
		how = nft_how_parse(argv[4]);
	nft_range(range, &lo, &hi);
	listen_addr = strncmp(addr, "::ffff:", 7) == 0 ? addr + 7 : addr;

	peer = nft_peer_listen(listen_addr, lo, hi, &port);
	fd = nft_connect(addr, port);
	ct_say("connected to %s port %d, TCP_NODELAY %d", addr, port, nft_nodelay(fd));
	nft_expect_rtt(fd, how, expect);
	CHECK(nft_nodelay(fd) == (expect[0] == 'f'), "TCP_NODELAY %d does not match '%s'",
	      nft_nodelay(fd), expect);
	close(fd);
	nft_peer_stop(peer);
	return 0;
}
