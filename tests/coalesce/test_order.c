/*
 * test_order.c - a send the buffer cannot take goes to the kernel after
 * what the buffer holds, never before it: no byte is reordered.
 *
 * Under a flush=1s rule, the start of the stream is held (checked in the
 * kernel), then:
 *   oob          send(MSG_OOB) of "X" after "abc", then "def\n", close:
 *                the peer (SO_OOBINLINE) reads "abcXdef\n" with the urgent
 *                mark at offset 3; "abcX" reached the kernel at once
 *   sendto-addr  sendto with the peer's address of "cd\n" after "ab": the
 *                peer reads "abcd\n"
 *   sendmmsg     sendmmsg of "cd\n" after "ab": the peer reads "abcd\n"
 */
#include "../common/peer.h"

/* A connection to p with s written and held. */
static int held_conn(const struct ct_peer *p, const char *s)
{
	int fd = ct_connect(p->port);

	ct_send_str(fd, s);
	ct_expect_held(fd, 0);
	return fd;
}

static void run_oob(int unused)
{
	struct ct_report r;
	struct ct_peer p;
	int fd;

	(void)unused;
	ct_peer_start(&p, "oob");
	fd = held_conn(&p, "abc");
	CHECK(send(fd, "X", 1, MSG_OOB) == 1, "send MSG_OOB");
	CHECK(ct_kernel_bytes(fd) == 4, "%lld bytes in the kernel after the urgent byte, want 4 "
	      "(the held 3 first, then it)", ct_kernel_bytes(fd));
	ct_send_str(fd, "def\n");
	close(fd);
	ct_report_expect(p.rep, CT_END, CT_WAIT_MS, &r);
	ct_say("peer read '%.*s', urgent mark at %lld", (int)strcspn(r.text, "\n"), r.text, r.aux);
	CHECK(strcmp(r.text, "abcXdef\n") == 0, "the peer read '%s', want 'abcXdef\\n'", r.text);
	CHECK(r.aux == 3, "urgent mark at offset %lld, want 3", r.aux);
	ct_peer_stop(&p);
}

static void run_sendto_addr(int unused)
{
	struct ct_peer p;
	struct sockaddr_in a;
	int fd;

	(void)unused;
	ct_peer_start(&p, "lines");
	a = ct_loopback(p.port);
	fd = held_conn(&p, "ab");
	CHECK(sendto(fd, "cd\n", 3, 0, (struct sockaddr *)&a, sizeof(a)) == 3, "sendto with address");
	ct_expect_line(p.rep, "abcd\n", CT_WAIT_MS);
	close(fd);
	ct_peer_stop(&p);
}

static void run_sendmmsg(int unused)
{
	struct iovec v = { .iov_base = "cd\n", .iov_len = 3 };
	struct mmsghdr mm = { .msg_hdr = { .msg_iov = &v, .msg_iovlen = 1 } };
	struct ct_peer p;
	int fd;

	(void)unused;
	ct_peer_start(&p, "lines");
	fd = held_conn(&p, "ab");
	CHECK(sendmmsg(fd, &mm, 1, 0) == 1 && mm.msg_len == 3, "sendmmsg");
	ct_expect_line(p.rep, "abcd\n", CT_WAIT_MS);
	close(fd);
	ct_peer_stop(&p);
}

static const struct ct_case cases[] = {
	{ "oob", run_oob, 0 },
	{ "sendto-addr", run_sendto_addr, 0 },
	{ "sendmmsg", run_sendmmsg, 0 },
};

int main(int argc, char **argv)
{
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
