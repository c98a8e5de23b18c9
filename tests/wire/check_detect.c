/*
 * check_detect.c - the detector (src/wire/table.c, detect.c, holder.c)
 * on timelines written here: every branch of the signature, each trap
 * that looks like it, the side, the rows, the table's memory. No
 * network: segments are made by hand, times in ms from an origin.
 */
#include <arpa/inet.h>
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "nf_wire.h"
#include "../unit/unit.h"

#define ORIGIN_NS 1764547200000000000ull /* 2025-12-01 00:00 UTC */
#define C 0 /* the client end of a timeline */
#define S 1 /* the server end */

/* A connection being written: its two ends, the next sequence number
 * of each, and the detector it is fed to. */
struct tl {
	struct nf_wire *w;
	int family;
	uint8_t addr[2][16];
	uint16_t port[2];
	uint32_t nxt[2];
	uint16_t mss[2]; /* the MSS each end's SYN says (1460 unless set) */
	int dup; /* feed every segment twice (a capture on lo and any) */
};

static int firsts;

static void count_first(void *arg, struct nf_holder *h, const struct nf_stall *s)
{
	(void)arg;
	(void)s;
	firsts++;
	h->pid = 4242;
}

static struct nf_wire *detector(void)
{
	struct nf_wire_opts o;

	nf_wire_opts_default(&o);
	o.on_first = count_first;
	firsts = 0;
	return nf_wire_new(&o);
}

/* A timeline of client 10.0.0.1:cport and server 10.0.0.2:sport (or
 * fd00::1 and fd00::2), sequence numbers starting at isn. */
static void tl_init(struct tl *t, struct nf_wire *w, int family, uint16_t cport, uint16_t sport,
		    uint32_t isn)
{
	memset(t, 0, sizeof(*t));
	t->w = w;
	t->family = family;
	if (family == AF_INET) {
		inet_pton(AF_INET, "10.0.0.1", t->addr[C]);
		inet_pton(AF_INET, "10.0.0.2", t->addr[S]);
	} else {
		inet_pton(AF_INET6, "fd00::1", t->addr[C]);
		inet_pton(AF_INET6, "fd00::2", t->addr[S]);
	}
	t->port[C] = cport;
	t->port[S] = sport;
	t->nxt[C] = isn;
	t->nxt[S] = isn + 1000000;
	t->mss[C] = t->mss[S] = 1460;
}

/* A segment from end `from` at ms, with len bytes, the flags given (ACK
 * added unless a bare SYN), acknowledging all the other end sent, the
 * window win. Its sequence number is the next unless seq_back says how
 * far back it starts (a retransmission). */
static void seg_full(struct tl *t, double ms, int from, uint32_t len, uint8_t flags, uint16_t win,
		     uint32_t seq_back)
{
	struct nf_pkt p;

	memset(&p, 0, sizeof(p));
	p.ts_ns = ORIGIN_NS + (uint64_t)(ms * 1e6);
	p.family = (uint8_t)t->family;
	memcpy(p.saddr, t->addr[from], 16);
	memcpy(p.daddr, t->addr[!from], 16);
	p.sport = t->port[from];
	p.dport = t->port[!from];
	p.seq = t->nxt[from] - seq_back;
	p.flags = flags;
	if (flags != NF_TCP_SYN) {
		p.flags |= NF_TCP_ACK;
		p.ack = t->nxt[!from];
	}
	p.len = len;
	p.win = win;
	p.wscale = -1;
	if (flags & NF_TCP_SYN)
		p.mss = t->mss[from];
	if (!seq_back)
		t->nxt[from] += len + !!(flags & NF_TCP_SYN) + !!(flags & NF_TCP_FIN);
	nf_wire_packet(t->w, &p);
	if (t->dup)
		nf_wire_packet(t->w, &p);
}

static void seg(struct tl *t, double ms, int from, uint32_t len)
{
	seg_full(t, ms, from, len, 0, 512, 0);
}

/* The handshake at ms, the server rtt ms from the capture point and the
 * client crtt ms. */
static void handshake(struct tl *t, double ms, double srtt, double crtt)
{
	seg_full(t, ms, C, 0, NF_TCP_SYN, 512, 0);
	seg_full(t, ms + srtt, S, 0, NF_TCP_SYN | NF_TCP_ACK, 512, 0);
	seg(t, ms + srtt + crtt, C, 0);
}

/* One round of the classic stall as seen near both ends (loopback): the
 * client's 6 bytes, the server's ACK after ato ms, the client's 7 bytes
 * 15 us later, the server's 13-byte answer. Starts at ms. */
static void stall_round(struct tl *t, double ms, double ato)
{
	seg(t, ms, C, 6);
	seg(t, ms + ato, S, 0);
	seg(t, ms + ato + 0.015, C, 7);
	seg(t, ms + ato + 0.1, S, 13);
}

static size_t rows(struct nf_wire *w, struct nf_holder *const **out)
{
	return nf_wire_holders(w, out);
}

/* --- the signature --- */

START_TEST(test_detect_classic_stall)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;
	char a[INET_ADDRSTRLEN];

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	for (int i = 0; i < 5; i++)
		stall_round(&t, 10 + i * 100, 40 + i);
	ck_assert_uint_eq(rows(w, &r), 1);
	ck_assert_uint_eq(r[0]->stalls, 5);
	ck_assert_uint_eq(r[0]->side, NF_WIRE_CONNECT);
	ck_assert_uint_eq(r[0]->side_how, NF_SIDE_SYN);
	ck_assert_uint_eq(r[0]->self.port, 40000);
	ck_assert_uint_eq(r[0]->peer.port, 8080);
	inet_ntop(AF_INET, r[0]->self.addr, a, sizeof(a));
	ck_assert_str_eq(a, "10.0.0.1");
	ck_assert_uint_eq(r[0]->size1, 6);
	ck_assert_uint_eq(r[0]->size2, 7);
	ck_assert_double_eq_tol(nf_holder_median_ms(r[0]), 42.015, 0.001);
	ck_assert_double_eq_tol(r[0]->total_ms, 40 + 41 + 42 + 43 + 44 + 5 * 0.015, 0.001);
	ck_assert_uint_eq(r[0]->first_ns, ORIGIN_NS + 10000000ull);
	ck_assert_uint_eq(r[0]->last_ns, ORIGIN_NS + 410000000ull);
	ck_assert_int_eq(firsts, 1);
	ck_assert_int_eq(r[0]->pid, 4242);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_prompt_ack_is_no_stall)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	for (int i = 0; i < 5; i++)
		stall_round(&t, 10 + i * 100, 0.04); /* an ACK at once: nothing waited */
	ck_assert_uint_eq(rows(w, &r), 0);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_ack_carrying_data_is_a_slow_server)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	for (int i = 0; i < 5; i++) {
		seg(&t, 10 + i * 100, C, 60); /* a whole request */
		seg(&t, 55 + i * 100, S, 20); /* answered after 45 ms of work */
		seg(&t, 55.02 + i * 100, C, 7); /* the next request at once */
		seg(&t, 55.1 + i * 100, S, 20);
	}
	ck_assert_uint_eq(rows(w, &r), 0);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_peer_data_between_ack_and_s2)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	for (int i = 0; i < 5; i++) {
		seg(&t, 10 + i * 100, C, 6);
		seg(&t, 50 + i * 100, S, 0);  /* the timer's ACK */
		seg(&t, 50.5 + i * 100, S, 30); /* then the answer */
		seg(&t, 50.51 + i * 100, C, 7);
	}
	ck_assert_uint_eq(rows(w, &r), 0);
	nf_wire_free(w);
}
END_TEST

/* Think time: the second write comes at think ms after the first; the
 * peer's timer ACKs at 40. Only a write that Nagle held (before the
 * ACK) leaves tied to it. */
static size_t think_rows(double think)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;
	size_t n;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	for (int i = 0; i < 5; i++) {
		double at = 10 + i * 200;

		seg(&t, at, C, 6);
		seg(&t, at + 40, S, 0);
		seg(&t, at + (think < 40 ? 40.015 : think), C, 7);
		seg(&t, at + (think < 40 ? 40.1 : think + 0.1), S, 13);
	}
	n = rows(w, &r);
	nf_wire_free(w);
	return n;
}

START_TEST(test_detect_think_time_after_the_ack_is_no_stall)
{
	ck_assert_uint_eq(think_rows(10), 1);  /* held: the write came before the ACK */
	ck_assert_uint_eq(think_rows(43), 0);  /* 3 ms after the ACK: the program's own pause */
	ck_assert_uint_eq(think_rows(100), 0);
}
END_TEST

START_TEST(test_detect_full_size_s2_is_not_held)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	for (int i = 0; i < 5; i++) {
		seg(&t, 10 + i * 100, C, 6);
		seg(&t, 50 + i * 100, S, 0);
		seg(&t, 50.015 + i * 100, C, 1448); /* MSS 1460 - 12 */
		seg(&t, 50.1 + i * 100, S, 13);
	}
	ck_assert_uint_eq(rows(w, &r), 0);
	nf_wire_free(w);
}
END_TEST

/* A server that advertised a smaller MSS than its client's sends
 * segments of its own MSS, full: in slow start each waits for the
 * client's delayed ACK (congestion window, not Nagle). The shape of
 * Wireshark's classic http.cap (python3-dpkt's examples/data/http.pcap):
 * client MSS 1460, server 1380, 1380-byte segments 130 ms apart. The
 * same segments from a server whose own MSS is 1460 are small, and held. */
static size_t slow_start_rows(uint16_t server_mss)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;
	size_t n;

	tl_init(&t, w, AF_INET, 3372, 80, 1000);
	t.mss[S] = server_mss;
	handshake(&t, 0, 0.05, 0.05);
	seg(&t, 1, C, 479);                      /* the request */
	for (int i = 0; i < 4; i++) {
		seg(&t, 100 + i * 200, S, 1380);
		seg(&t, 230 + i * 200, C, 0);    /* the delayed ACK */
		seg(&t, 230.015 + i * 200, S, 1380);
		seg(&t, 260 + i * 200, C, 0);
	}
	n = rows(w, &r);
	nf_wire_free(w);
	return n;
}

START_TEST(test_detect_full_size_of_own_mss_is_not_held)
{
	ck_assert_uint_eq(slow_start_rows(1380), 0);
	ck_assert_uint_eq(slow_start_rows(1460), 1);
}
END_TEST

/* A sender whose own SYN said less than it then sends (an MSS of 536 for
 * its receive buffer, 1,000-byte segments): its own MSS is no bound, and
 * its split writes of 1000 + 6 bytes still stall. */
START_TEST(test_detect_own_mss_exceeded_is_no_bound)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	t.mss[C] = 536;
	handshake(&t, 0, 0.05, 0.05);
	for (int i = 0; i < 3; i++) {
		seg(&t, 10 + i * 100, C, 1000);
		seg(&t, 50 + i * 100, S, 0);
		seg(&t, 50.015 + i * 100, C, 6);
		seg(&t, 50.1 + i * 100, S, 13);
	}
	ck_assert_uint_eq(rows(w, &r), 1);
	ck_assert_uint_eq(r[0]->stalls, 3);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_retransmission_is_no_stall)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct nf_wire_stats st;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	for (int i = 0; i < 3; i++) {
		double at = 10 + i * 1000;

		seg(&t, at, C, 6);                       /* lost after the capture point */
		seg_full(&t, at + 210, C, 6, 0, 512, 6); /* resent after the RTO */
		seg(&t, at + 210.05, S, 0);
		seg(&t, at + 210.065, C, 7);
		seg(&t, at + 210.1, S, 13);
	}
	ck_assert_uint_eq(rows(w, &r), 0);
	nf_wire_stats(w, &st);
	ck_assert_uint_eq(st.retransmits, 3);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_zero_window_is_no_stall)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	for (int i = 0; i < 3; i++) {
		double at = 10 + i * 1000;

		seg(&t, at, C, 6);
		seg_full(&t, at + 0.05, S, 0, 0, 0, 0); /* window closed */
		seg(&t, at + 300, S, 0);                 /* the update */
		seg(&t, at + 300.015, C, 7);
		seg(&t, at + 300.1, S, 13);
	}
	ck_assert_uint_eq(rows(w, &r), 0);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_one_way_sender_is_never_answered)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct nf_wire_stats st;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	/* messages held until each ACK, but the peer never answers */
	for (int i = 0; i < 20; i++) {
		seg(&t, 10 + i * 40.02, C, 6);
		seg(&t, 10 + i * 40.02 + 40, S, 0);
	}
	ck_assert_uint_eq(rows(w, &r), 0);
	nf_wire_stats(w, &st);
	ck_assert_uint_eq(st.unanswered, 19); /* each held one after the first, counted apart */
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_answer_confirms_a_waiting_stall)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	seg(&t, 10, C, 6);
	seg(&t, 50, S, 0);
	seg(&t, 50.015, C, 7);
	ck_assert_uint_eq(rows(w, &r), 0); /* nothing heard before S1: waits */
	seg(&t, 60, S, 13);                /* the answer, 10 ms later */
	ck_assert_uint_eq(rows(w, &r), 1);
	ck_assert_double_eq_tol(nf_holder_median_ms(r[0]), 40.015, 0.001);
	ck_assert_uint_eq(r[0]->first_ns, ORIGIN_NS + 10000000ull);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_fin_confirms_a_waiting_stall)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	seg(&t, 10, C, 6);
	seg(&t, 50, S, 0);
	seg(&t, 50.015, C, 7);
	seg_full(&t, 51, S, 0, NF_TCP_FIN, 512, 0);
	ck_assert_uint_eq(rows(w, &r), 1);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_more_data_drops_a_waiting_stall)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	seg(&t, 10, C, 6);
	seg(&t, 50, S, 0);
	seg(&t, 50.015, C, 7);
	seg(&t, 200, C, 1448); /* the holder went on alone */
	seg(&t, 201, S, 13);
	ck_assert_uint_eq(rows(w, &r), 0);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_nodelay_sender_is_no_stall)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	for (int i = 0; i < 5; i++) {
		seg(&t, 10 + i * 100, C, 6);
		seg(&t, 10.01 + i * 100, C, 7); /* not held: TCP_NODELAY */
		seg(&t, 10.1 + i * 100, S, 13);
	}
	ck_assert_uint_eq(rows(w, &r), 0);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_bulk_with_short_tail)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;
	double at = 10;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	for (int i = 0; i < 5; i++, at += 100) {
		seg(&t, at, C, 1448);
		seg(&t, at + 0.01, C, 1448);
		seg(&t, at + 0.05, S, 0);
		seg(&t, at + 0.06, C, 100); /* the tail */
		seg(&t, at + 40, S, 0);     /* its delayed ACK */
		seg(&t, at + 40.01, C, 1448); /* the next block: full size */
		seg(&t, at + 40.02, C, 1448);
		seg(&t, at + 40.06, S, 0);
	}
	ck_assert_uint_eq(rows(w, &r), 0);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_server_holder)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	for (int i = 0; i < 4; i++) {
		double at = 10 + i * 100;

		seg(&t, at, C, 80);          /* the request */
		seg(&t, at + 0.1, S, 17);    /* the header */
		seg(&t, at + 40.1, C, 0);    /* the client's delayed ACK */
		seg(&t, at + 40.115, S, 50); /* the body */
	}
	ck_assert_uint_eq(rows(w, &r), 1);
	ck_assert_uint_eq(r[0]->side, NF_WIRE_ACCEPT);
	ck_assert_uint_eq(r[0]->self.port, 8080);
	ck_assert_uint_eq(r[0]->stalls, 4); /* each heard the request first: counted at once */
	ck_assert_uint_eq(r[0]->size1, 17);
	ck_assert_uint_eq(r[0]->size2, 50);
	nf_wire_free(w);
}
END_TEST

/* --- where the capture point is --- */

START_TEST(test_detect_near_receiver_long_rtt)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	/* near the server, 100 ms from the client: S2 comes one RTT after the ACK */
	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 100);
	for (int i = 0; i < 3; i++) {
		double at = 200 + i * 500;

		seg(&t, at, C, 6);
		seg(&t, at + 200, S, 0);     /* a 200 ms ACK timer */
		seg(&t, at + 300, C, 7);
		seg(&t, at + 300.1, S, 13);
	}
	ck_assert_uint_eq(rows(w, &r), 1);
	ck_assert_uint_eq(r[0]->stalls, 3);
	ck_assert_double_eq_tol(nf_holder_median_ms(r[0]), 300, 0.001);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_near_receiver_tie_waits_for_rtt)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	/* no handshake, no reaction of the client seen yet: S2 100 ms after
	 * the ACK waits for the client's round trip */
	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	seg(&t, 0, C, 6);
	seg(&t, 200, S, 0);
	seg(&t, 300, C, 7);
	seg(&t, 300.1, S, 13);
	ck_assert_uint_eq(rows(w, &r), 0);
	/* the client's next request, 100 ms after the answer: its round trip,
	 * and the first stall was tied by it */
	seg(&t, 400.1, C, 6);
	ck_assert_uint_eq(rows(w, &r), 1);
	ck_assert_uint_eq(r[0]->stalls, 1);
	ck_assert_double_eq_tol(nf_holder_median_ms(r[0]), 300, 0.001);
	seg(&t, 600.1, S, 0);
	seg(&t, 700.1, C, 7);
	seg(&t, 700.2, S, 13);
	ck_assert_uint_eq(r[0]->stalls, 2);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_untied_dropped_when_rtt_is_short)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	/* the same, but the client turns out to react in 0.05 ms: its second
	 * write 100 ms after the ACK was its own pause */
	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	seg(&t, 0, C, 6);
	seg(&t, 200, S, 0);
	seg(&t, 300, C, 7);
	seg(&t, 300.1, S, 13);
	seg(&t, 300.15, C, 6);
	seg(&t, 301, S, 13);
	ck_assert_uint_eq(rows(w, &r), 0);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_near_holder_long_rtt)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 100, 0.05); /* near the client, 100 ms from the server */
	/* a prompt ACK after one RTT is no delayed ACK */
	seg(&t, 200, C, 6);
	seg(&t, 300, S, 0);
	seg(&t, 300.015, C, 7);
	seg(&t, 400, S, 13);
	ck_assert_uint_eq(rows(w, &r), 0);
	/* a 200 ms timer: the ACK one RTT + 200 ms after S1 */
	seg(&t, 500, C, 6);
	seg(&t, 800, S, 0);
	seg(&t, 800.015, C, 7);
	seg(&t, 900, S, 13);
	ck_assert_uint_eq(rows(w, &r), 1);
	ck_assert_double_eq_tol(nf_holder_median_ms(r[0]), 300.015, 0.001);
	nf_wire_free(w);
}
END_TEST

/* --- what real captures are like --- */

START_TEST(test_detect_sequence_wrap)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 0xfffffff0u);
	handshake(&t, 0, 0.05, 0.05);
	for (int i = 0; i < 4; i++)
		stall_round(&t, 10 + i * 100, 40);
	ck_assert_uint_eq(rows(w, &r), 1);
	ck_assert_uint_eq(r[0]->stalls, 4);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_duplicates_counted_once)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct nf_wire_stats st;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	t.dup = 1;
	handshake(&t, 0, 0.05, 0.05);
	for (int i = 0; i < 4; i++)
		stall_round(&t, 10 + i * 100, 40);
	ck_assert_uint_eq(rows(w, &r), 1);
	ck_assert_uint_eq(r[0]->stalls, 4);
	nf_wire_stats(w, &st);
	ck_assert_uint_eq(st.duplicates, 3 + 4 * 4);
	ck_assert_uint_eq(st.retransmits, 0);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_mid_connection_side_from_ports)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000); /* no SYN: 40000 is ephemeral */
	seg(&t, 0, S, 13);
	for (int i = 0; i < 3; i++)
		stall_round(&t, 10 + i * 100, 40);
	ck_assert_uint_eq(rows(w, &r), 1);
	ck_assert_uint_eq(r[0]->side, NF_WIRE_CONNECT);
	ck_assert_uint_eq(r[0]->side_how, NF_SIDE_PORTS);
	ck_assert_uint_eq(r[0]->stalls, 3);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_mid_connection_side_from_listener)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl a, b;

	/* 50000 accepts 9000's connection (seen); then, mid-stream, 50000
	 * holds on another: it is the server there too, though its port is
	 * the higher and the ephemeral one */
	tl_init(&a, w, AF_INET, 9000, 50000, 1000);
	handshake(&a, 0, 0.05, 0.05);
	tl_init(&b, w, AF_INET, 9001, 50000, 5000);
	seg(&b, 5, C, 80);
	seg(&b, 10, S, 17);
	seg(&b, 50, C, 0);
	seg(&b, 50.015, S, 50);
	ck_assert_uint_eq(rows(w, &r), 1);
	ck_assert_uint_eq(r[0]->side, NF_WIRE_ACCEPT);
	ck_assert_uint_eq(r[0]->side_how, NF_SIDE_LISTENER);
	ck_assert_uint_eq(r[0]->self.port, 50000);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_ipv6)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	tl_init(&t, w, AF_INET6, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	for (int i = 0; i < 3; i++)
		stall_round(&t, 10 + i * 100, 40);
	ck_assert_uint_eq(rows(w, &r), 1);
	ck_assert_uint_eq(r[0]->self.family, AF_INET6);
	ck_assert_uint_eq(r[0]->stalls, 3);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_time_going_back_is_the_last)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	seg(&t, 10, C, 6);
	seg(&t, 50, S, 0);
	seg(&t, 5, C, 7); /* stamped before S1: taken as 50 ms */
	seg(&t, 50.1, S, 13);
	ck_assert_uint_eq(rows(w, &r), 1);
	ck_assert_double_eq_tol(nf_holder_median_ms(r[0]), 40, 0.001);
	nf_wire_free(w);
}
END_TEST

/* --- rows --- */

START_TEST(test_detect_client_connections_share_a_row)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	for (int k = 0; k < 3; k++) {
		tl_init(&t, w, AF_INET, (uint16_t)(40000 + k), 8080, 1000 + k * 77777);
		handshake(&t, k * 1000, 0.05, 0.05);
		stall_round(&t, k * 1000 + 10, 40);
		stall_round(&t, k * 1000 + 110, 40);
	}
	ck_assert_uint_eq(rows(w, &r), 1);
	ck_assert_uint_eq(r[0]->conns, 3);
	ck_assert_uint_eq(r[0]->stalls, 6);
	ck_assert_uint_eq(r[0]->self.port, 40000);
	ck_assert_int_eq(firsts, 1);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_rows_by_total)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl a, b;

	tl_init(&a, w, AF_INET, 40000, 8080, 1000);
	handshake(&a, 0, 0.05, 0.05);
	tl_init(&b, w, AF_INET, 40001, 9090, 1000);
	handshake(&b, 0, 0.05, 0.05);
	stall_round(&a, 10, 40);
	for (int i = 0; i < 3; i++)
		stall_round(&b, 10 + 100 * i, 40);
	ck_assert_uint_eq(rows(w, &r), 2);
	ck_assert_uint_eq(r[0]->peer.port, 9090);
	ck_assert_uint_eq(r[1]->peer.port, 8080);
	ck_assert_int_eq(firsts, 2);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_median_past_the_sample)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	for (int i = 0; i < 3000; i++)
		stall_round(&t, 10 + i * 100, i % 2 ? 40 : 44);
	ck_assert_uint_eq(rows(w, &r), 1);
	ck_assert_uint_eq(r[0]->stalls, 3000);
	ck_assert_uint_eq(r[0]->nsamples, NF_HOLDER_SAMPLES);
	ck_assert(nf_holder_median_ms(r[0]) > 40 && nf_holder_median_ms(r[0]) < 44.1);
	nf_wire_free(w);
}
END_TEST

/* One stalling connection of client port cport to server end k (a row
 * each: 10.x.y.z:port), starting at ms. */
static void stall_to(struct nf_wire *w, uint32_t k, uint16_t cport, double ms)
{
	struct tl t;

	tl_init(&t, w, AF_INET, cport, (uint16_t)(1 + k % 60000), 1000);
	t.addr[S][1] = (uint8_t)(k / 60000);
	handshake(&t, ms, 0.05, 0.05);
	stall_round(&t, ms + 10, 40);
}

/* Rows are kept up to NF_WIRE_ROWS_MAX: the stall of a new holder past
 * them is counted apart, a row kept still counts its new connections. */
START_TEST(test_detect_rows_bounded)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct nf_wire_stats st;
	uint32_t k;

	for (k = 0; k < NF_WIRE_ROWS_MAX + 10; k++)
		stall_to(w, k, 40000, k * 200.0);
	stall_to(w, 0, 40001, k * 200.0);
	nf_wire_stats(w, &st);
	ck_assert_uint_eq(st.unrowed, 10);
	ck_assert_uint_eq(rows(w, &r), NF_WIRE_ROWS_MAX);
	ck_assert_int_eq(firsts, NF_WIRE_ROWS_MAX);
	for (k = 0; k < NF_WIRE_ROWS_MAX && r[k]->conns == 1; k++)
		;
	ck_assert_uint_lt(k, NF_WIRE_ROWS_MAX);
	ck_assert_uint_eq(r[k]->conns, 2);
	ck_assert_uint_eq(r[k]->stalls, 2);
	nf_wire_free(w);
}
END_TEST

/* --- the table's memory --- */

START_TEST(test_detect_idle_and_closed_expire)
{
	struct nf_wire_opts o;
	struct nf_wire *w;
	struct nf_wire_stats st;
	struct tl t;

	nf_wire_opts_default(&o);
	o.idle_ns = 1000000000ull;  /* 1 s */
	o.closed_ns = 100000000ull; /* 100 ms */
	w = nf_wire_new(&o);
	for (int k = 0; k < 100; k++) {
		tl_init(&t, w, AF_INET, (uint16_t)(20000 + k), 8080, 1000);
		handshake(&t, k, 0.05, 0.05);
		if (k % 2) { /* half closed */
			seg_full(&t, k + 0.2, C, 0, NF_TCP_FIN, 512, 0);
			seg_full(&t, k + 0.3, S, 0, NF_TCP_FIN, 512, 0);
		}
	}
	nf_wire_stats(w, &st);
	ck_assert_uint_eq(st.live, 100);
	nf_wire_expire(w, ORIGIN_NS + 400000000ull); /* 0.4 s: the closed ones */
	nf_wire_stats(w, &st);
	ck_assert_uint_eq(st.live, 50);
	nf_wire_expire(w, ORIGIN_NS + 900000000ull); /* 0.9 s: none idle 1 s yet */
	nf_wire_stats(w, &st);
	ck_assert_uint_eq(st.live, 50);
	/* 2.2 s: all (idle 1 s, found at most 1 s late: queued to the second up) */
	nf_wire_expire(w, ORIGIN_NS + 2200000000ull);
	nf_wire_stats(w, &st);
	ck_assert_uint_eq(st.live, 0);
	ck_assert_uint_eq(st.peak, 100);
	ck_assert_uint_eq(st.conns, 100);
	/* slots are reused: 100 more fit in what the first took */
	for (int k = 0; k < 100; k++) {
		tl_init(&t, w, AF_INET, (uint16_t)(30000 + k), 8080, 1000);
		handshake(&t, 3000 + k, 0.05, 0.05);
	}
	nf_wire_stats(w, &st);
	ck_assert_uint_eq(st.live, 100);
	ck_assert_uint_eq(st.peak, 100);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_one_way_counted)
{
	struct nf_wire *w = detector();
	struct nf_wire_stats st;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	for (int i = 0; i < 5; i++) { /* only the client's direction captured */
		seg(&t, 10 + i * 100, C, 6);
		seg(&t, 50.015 + i * 100, C, 7);
	}
	nf_wire_stats(w, &st);
	ck_assert_uint_eq(st.one_way, 1);
	nf_wire_free(w);
}
END_TEST

START_TEST(test_detect_port_reuse_starts_over)
{
	struct nf_wire *w = detector();
	struct nf_holder *const *r;
	struct nf_wire_stats st;
	struct tl t;

	tl_init(&t, w, AF_INET, 40000, 8080, 1000);
	handshake(&t, 0, 0.05, 0.05);
	stall_round(&t, 10, 40);
	seg_full(&t, 100, C, 0, NF_TCP_FIN, 512, 0);
	seg_full(&t, 100.1, S, 0, NF_TCP_FIN, 512, 0);
	/* the same ends again, other numbers */
	tl_init(&t, w, AF_INET, 40000, 8080, 987654321);
	handshake(&t, 150, 0.05, 0.05);
	stall_round(&t, 160, 40);
	ck_assert_uint_eq(rows(w, &r), 1);
	ck_assert_uint_eq(r[0]->stalls, 2);
	nf_wire_stats(w, &st);
	ck_assert_uint_eq(st.retransmits, 0);
	ck_assert_uint_eq(st.live, 1);
	nf_wire_free(w);
}
END_TEST

static Suite *detect_suite(void)
{
	Suite *s = suite_create("detect");
	TCase *sig = tcase_create("signature"), *point = tcase_create("capture_point"),
	      *real = tcase_create("real_captures"), *row = tcase_create("rows"),
	      *mem = tcase_create("memory");

	unit_add(sig, test_detect_classic_stall);
	unit_add(sig, test_detect_prompt_ack_is_no_stall);
	unit_add(sig, test_detect_ack_carrying_data_is_a_slow_server);
	unit_add(sig, test_detect_peer_data_between_ack_and_s2);
	unit_add(sig, test_detect_think_time_after_the_ack_is_no_stall);
	unit_add(sig, test_detect_full_size_s2_is_not_held);
	unit_add(sig, test_detect_full_size_of_own_mss_is_not_held);
	unit_add(sig, test_detect_own_mss_exceeded_is_no_bound);
	unit_add(sig, test_detect_retransmission_is_no_stall);
	unit_add(sig, test_detect_zero_window_is_no_stall);
	unit_add(sig, test_detect_one_way_sender_is_never_answered);
	unit_add(sig, test_detect_answer_confirms_a_waiting_stall);
	unit_add(sig, test_detect_fin_confirms_a_waiting_stall);
	unit_add(sig, test_detect_more_data_drops_a_waiting_stall);
	unit_add(sig, test_detect_nodelay_sender_is_no_stall);
	unit_add(sig, test_detect_bulk_with_short_tail);
	unit_add(sig, test_detect_server_holder);
	suite_add_tcase(s, sig);
	unit_add(point, test_detect_near_receiver_long_rtt);
	unit_add(point, test_detect_near_receiver_tie_waits_for_rtt);
	unit_add(point, test_detect_untied_dropped_when_rtt_is_short);
	unit_add(point, test_detect_near_holder_long_rtt);
	suite_add_tcase(s, point);
	unit_add(real, test_detect_sequence_wrap);
	unit_add(real, test_detect_duplicates_counted_once);
	unit_add(real, test_detect_mid_connection_side_from_ports);
	unit_add(real, test_detect_mid_connection_side_from_listener);
	unit_add(real, test_detect_ipv6);
	unit_add(real, test_detect_time_going_back_is_the_last);
	suite_add_tcase(s, real);
	unit_add(row, test_detect_client_connections_share_a_row);
	unit_add(row, test_detect_rows_by_total);
	unit_add(row, test_detect_rows_bounded);
	unit_add(row, test_detect_median_past_the_sample);
	suite_add_tcase(s, row);
	unit_add(mem, test_detect_idle_and_closed_expire);
	unit_add(mem, test_detect_one_way_counted);
	unit_add(mem, test_detect_port_reuse_starts_over);
	suite_add_tcase(s, mem);
	return s;
}

int main(void)
{
	return unit_run(srunner_create(detect_suite()), "check_detect");
}
