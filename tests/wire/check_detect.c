/*
 * check_detect.c - the detector (src/wire/table.c, detect.c, holder.c)
 * on timelines written here: every branch of the signature, each trap
 * that looks like it, where the capture point is, what real captures are
 * like (one connection's timeline and what the detector must find, a row
 * of the table `cases` each, run by run_case, each its own test by its
 * own name), then the rows and the table's memory (several connections:
 * a test each). No network: segments are made by hand, times in ms from
 * an origin. A new branch or trap of the signature is a row of cases.
 */
#include <arpa/inet.h>
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "wire/nf_wire.h"
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
	double copy_ms; /* ... the second copy this much later (a veth's two ends) */
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
	if (t->dup) {
		p.ts_ns += (uint64_t)(t->copy_ms * 1e6);
		nf_wire_packet(t->w, &p);
	}
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

/* --- the signature, where the capture point is, what real captures are
 * like: one connection's timeline a row, run by run_case --- */

/* A step of a timeline: a segment, or a check of what the detector says
 * at that point. */
enum step_kind { STEP_END, STEP_SEG, STEP_CHECK };

/* What a check reads: the rows, the first row's fields, the counts. */
enum what {
	W_ROWS,        /* rows the detector shows */
	W_STALLS,      /* the first row's */
	W_SIDE,        /* NF_WIRE_CONNECT or NF_WIRE_ACCEPT */
	W_SIDE_HOW,    /* NF_SIDE_SYN, _PORTS, _LISTENER */
	W_SELF,        /* the holder is end C or S (address, port, family; the peer the other) */
	W_SIZE1,
	W_SIZE2,
	W_MEDIAN_MS,
	W_TOTAL_MS,
	W_ACK_TOTAL_MS, /* the first row's: its ACKs' delays, S1 to each ACK's first copy */
	W_FIRST_MS,    /* the first stall's start, ms from the origin */
	W_LAST_MS,
	W_FIRSTS,      /* on_first calls; the row got its pid from them */
	W_RETRANSMITS, /* nf_wire_stats' */
	W_UNANSWERED,
	W_DUPLICATES,
};

static const char *const what_name[] = {
	"rows", "stalls", "side", "side_how", "holder end", "size1", "size2", "median ms",
	"total ms", "ack total ms", "first ms", "last ms", "on_first calls", "retransmits", "unanswered",
	"duplicates",
};

struct step {
	enum step_kind kind;
	double ms;      /* a segment: when (in a round: from the round's start) */
	int from;       /* C or S */
	uint32_t len;
	uint8_t flags;  /* NF_TCP_FIN (ACK is added) */
	uint8_t zwin;   /* a window of 0 */
	uint32_t back;  /* a resend of the last back bytes */
	double copy;    /* with dup: its second copy this much later, not the row's copy */
	enum what what; /* a check: what, and the value it must have */
	double value;
};

#define SEG(t, f, n) { .kind = STEP_SEG, .ms = (t), .from = (f), .len = (n) }
#define FIN(t, f) { .kind = STEP_SEG, .ms = (t), .from = (f), .flags = NF_TCP_FIN }
#define ZERO_WIN(t, f) { .kind = STEP_SEG, .ms = (t), .from = (f), .zwin = 1 }
#define RESEND(t, f, n) { .kind = STEP_SEG, .ms = (t), .from = (f), .len = (n), .back = (n) }
#define LATE_COPY(t, f, n, late) \
	{ .kind = STEP_SEG, .ms = (t), .from = (f), .len = (n), .copy = (late) }
#define WANT(w, v) { .kind = STEP_CHECK, .what = (w), .value = (v) }

/* The classic stall as seen near both ends (loopback), a round from t:
 * the client's 6 bytes, the server's ACK after ato ms, the client's 7
 * bytes 15 us later, the server's 13-byte answer. */
#define STALL_ROUND(t, ato)                                                                 \
	SEG((t), C, 6), SEG((t) + (ato), S, 0), SEG((t) + (ato) + 0.015, C, 7),             \
		SEG((t) + (ato) + 0.1, S, 13)

enum group { SIGNATURE, CAPTURE_POINT, REAL_CAPTURES, GROUPS };

/*
 * A row: a connection of client 10.0.0.1:cport and server
 * 10.0.0.2:sport (fd00::1, fd00::2 for AF_INET6; 40000 and 8080 unless
 * set), its handshake at 0 with the server srtt ms and the client crtt
 * ms from the capture point (0.05 unless set; none with no_handshake),
 * each SYN's MSS (1460 unless set). Then the steps of once; those of
 * round, rounds times (once if 0), each every ms after the last; then
 * those of then.
 */
struct detect_case {
	const char *name;
	int line;
	enum group group;
	int family;
	uint16_t cport, sport;
	uint32_t isn;           /* 1000 unless set */
	uint16_t mss[2];
	int no_handshake;
	double srtt, crtt;
	int dup;                /* every segment fed twice (lo and any) */
	double copy;            /* ... the second copy this many ms later (0: at once) */
	int rounds;
	double every;
	struct step once[4], round[12], then[36];
};

#define ROW(n, g) .name = "test_detect_" n, .line = __LINE__, .group = (g)

static const struct detect_case cases[] = {
	/* --- the signature --- */
	{ ROW("classic_stall", SIGNATURE), /* five rounds, the ACK 40 to 44 ms late */
	  .then = { STALL_ROUND(10, 40), STALL_ROUND(110, 41), STALL_ROUND(210, 42),
		    STALL_ROUND(310, 43), STALL_ROUND(410, 44),
		    WANT(W_ROWS, 1), WANT(W_STALLS, 5), WANT(W_SIDE, NF_WIRE_CONNECT),
		    WANT(W_SIDE_HOW, NF_SIDE_SYN), WANT(W_SELF, C), WANT(W_SIZE1, 6),
		    WANT(W_SIZE2, 7), WANT(W_MEDIAN_MS, 42.015),
		    WANT(W_TOTAL_MS, 40 + 41 + 42 + 43 + 44 + 5 * 0.015), WANT(W_FIRST_MS, 10),
		    WANT(W_LAST_MS, 410), WANT(W_FIRSTS, 1) } },
	{ ROW("prompt_ack_is_no_stall", SIGNATURE), /* an ACK at once: nothing waited */
	  .rounds = 5, .every = 100, .round = { STALL_ROUND(10, 0.04) },
	  .then = { WANT(W_ROWS, 0) } },
	{ ROW("ack_carrying_data_is_a_slow_server", SIGNATURE),
	  .rounds = 5, .every = 100,
	  .round = { SEG(10, C, 60),      /* a whole request */
		     SEG(55, S, 20),      /* answered after 45 ms of work */
		     SEG(55.02, C, 7),    /* the next request at once */
		     SEG(55.1, S, 20) },
	  .then = { WANT(W_ROWS, 0) } },
	{ ROW("peer_data_between_ack_and_s2", SIGNATURE),
	  .rounds = 5, .every = 100,
	  .round = { SEG(10, C, 6), SEG(50, S, 0), /* the timer's ACK */
		     SEG(50.5, S, 30),             /* then the answer */
		     SEG(50.51, C, 7) },
	  .then = { WANT(W_ROWS, 0) } },
	/* think time: the second write at 10, 43, 100 ms after the first, the
	 * peer's timer ACKing at 40: only a write Nagle held (one that came
	 * before the ACK) leaves tied to it */
	{ ROW("write_before_the_ack_is_held", SIGNATURE),
	  .rounds = 5, .every = 200,
	  .round = { SEG(10, C, 6), SEG(50, S, 0), SEG(50.015, C, 7), SEG(50.1, S, 13) },
	  .then = { WANT(W_ROWS, 1) } },
	{ ROW("think_time_after_the_ack_is_no_stall", SIGNATURE), /* 3 ms after it */
	  .rounds = 5, .every = 200,
	  .round = { SEG(10, C, 6), SEG(50, S, 0), SEG(53, C, 7), SEG(53.1, S, 13) },
	  .then = { WANT(W_ROWS, 0) } },
	{ ROW("long_think_time_is_no_stall", SIGNATURE),
	  .rounds = 5, .every = 200,
	  .round = { SEG(10, C, 6), SEG(50, S, 0), SEG(110, C, 7), SEG(110.1, S, 13) },
	  .then = { WANT(W_ROWS, 0) } },
	{ ROW("full_size_s2_is_not_held", SIGNATURE),
	  .rounds = 5, .every = 100,
	  .round = { SEG(10, C, 6), SEG(50, S, 0), SEG(50.015, C, 1448), /* MSS 1460 - 12 */
		     SEG(50.1, S, 13) },
	  .then = { WANT(W_ROWS, 0) } },
	/* A server that advertised a smaller MSS than its client's sends
	 * segments of its own MSS, full: in slow start each waits for the
	 * client's delayed ACK (congestion window, not Nagle). The shape of
	 * Wireshark's classic http.cap (python3-dpkt's examples/data/http.pcap):
	 * client MSS 1460, server 1380, 1380-byte segments 130 ms apart. */
	{ ROW("full_size_of_own_mss_is_not_held", SIGNATURE),
	  .cport = 3372, .sport = 80, .mss = { 1460, 1380 },
	  .once = { SEG(1, C, 479) }, /* the request */
	  .rounds = 4, .every = 200,
	  .round = { SEG(100, S, 1380), SEG(230, C, 0), /* the delayed ACK */
		     SEG(230.015, S, 1380), SEG(260, C, 0) },
	  .then = { WANT(W_ROWS, 0) } },
	{ ROW("same_segments_under_a_larger_own_mss_are_held", SIGNATURE), /* small, held */
	  .cport = 3372, .sport = 80, .mss = { 1460, 1460 },
	  .once = { SEG(1, C, 479) },
	  .rounds = 4, .every = 200,
	  .round = { SEG(100, S, 1380), SEG(230, C, 0), SEG(230.015, S, 1380), SEG(260, C, 0) },
	  .then = { WANT(W_ROWS, 1) } },
	/* A sender whose own SYN said less than it then sends (an MSS of 536
	 * for its receive buffer, 1,000-byte segments): its own MSS is no
	 * bound, and its split writes of 1000 + 6 bytes still stall. */
	{ ROW("own_mss_exceeded_is_no_bound", SIGNATURE),
	  .mss = { 536, 1460 },
	  .rounds = 3, .every = 100,
	  .round = { SEG(10, C, 1000), SEG(50, S, 0), SEG(50.015, C, 6), SEG(50.1, S, 13) },
	  .then = { WANT(W_ROWS, 1), WANT(W_STALLS, 3) } },
	/* SYNs of 300 (full segments of 260): a segment below the default
	 * MSS (NF_TCP_MSS_DEFAULT, 536) is small all the same, and held. */
	{ ROW("below_the_default_mss_is_small", SIGNATURE),
	  .mss = { 300, 300 },
	  .rounds = 3, .every = 100,
	  .round = { SEG(10, C, 6), SEG(50, S, 0), SEG(50.015, C, 400), SEG(50.1, S, 13) },
	  .then = { WANT(W_ROWS, 1), WANT(W_STALLS, 3), WANT(W_SIZE2, 400) } },
	{ ROW("retransmission_is_no_stall", SIGNATURE),
	  .rounds = 3, .every = 1000,
	  .round = { SEG(10, C, 6),       /* lost after the capture point */
		     RESEND(220, C, 6),   /* resent after the RTO */
		     SEG(220.05, S, 0), SEG(220.065, C, 7), SEG(220.1, S, 13) },
	  .then = { WANT(W_ROWS, 0), WANT(W_RETRANSMITS, 3) } },
	{ ROW("zero_window_is_no_stall", SIGNATURE),
	  .rounds = 3, .every = 1000,
	  .round = { SEG(10, C, 6), ZERO_WIN(10.05, S), /* window closed */
		     SEG(310, S, 0),                   /* the update */
		     SEG(310.015, C, 7), SEG(310.1, S, 13) },
	  .then = { WANT(W_ROWS, 0) } },
	/* messages held until each ACK, but the peer never answers */
	{ ROW("one_way_sender_is_never_answered", SIGNATURE),
	  .rounds = 20, .every = 40.02,
	  .round = { SEG(10, C, 6), SEG(50, S, 0) },
	  .then = { WANT(W_ROWS, 0),
		    WANT(W_UNANSWERED, 19) } }, /* each held one after the first, counted apart */
	{ ROW("answer_confirms_a_waiting_stall", SIGNATURE),
	  .then = { SEG(10, C, 6), SEG(50, S, 0), SEG(50.015, C, 7),
		    WANT(W_ROWS, 0),   /* nothing heard before S1: waits */
		    SEG(60, S, 13),    /* the answer, 10 ms later */
		    WANT(W_ROWS, 1), WANT(W_MEDIAN_MS, 40.015), WANT(W_FIRST_MS, 10) } },
	{ ROW("fin_confirms_a_waiting_stall", SIGNATURE),
	  .then = { SEG(10, C, 6), SEG(50, S, 0), SEG(50.015, C, 7), FIN(51, S),
		    WANT(W_ROWS, 1) } },
	{ ROW("more_data_drops_a_waiting_stall", SIGNATURE),
	  .then = { SEG(10, C, 6), SEG(50, S, 0), SEG(50.015, C, 7),
		    SEG(200, C, 1448), /* the holder went on alone */
		    SEG(201, S, 13), WANT(W_ROWS, 0) } },
	{ ROW("nodelay_sender_is_no_stall", SIGNATURE),
	  .rounds = 5, .every = 100,
	  .round = { SEG(10, C, 6), SEG(10.01, C, 7), /* not held: TCP_NODELAY */
		     SEG(10.1, S, 13) },
	  .then = { WANT(W_ROWS, 0) } },
	{ ROW("bulk_with_short_tail", SIGNATURE),
	  .rounds = 5, .every = 100,
	  .round = { SEG(10, C, 1448), SEG(10.01, C, 1448), SEG(10.05, S, 0),
		     SEG(10.06, C, 100),   /* the tail */
		     SEG(50, S, 0),        /* its delayed ACK */
		     SEG(50.01, C, 1448),  /* the next block: full size */
		     SEG(50.02, C, 1448), SEG(50.06, S, 0) },
	  .then = { WANT(W_ROWS, 0) } },
	{ ROW("server_holder", SIGNATURE),
	  .rounds = 4, .every = 100,
	  .round = { SEG(10, C, 80),      /* the request */
		     SEG(10.1, S, 17),    /* the header */
		     SEG(50.1, C, 0),     /* the client's delayed ACK */
		     SEG(50.115, S, 50) }, /* the body */
	  .then = { WANT(W_ROWS, 1), WANT(W_SIDE, NF_WIRE_ACCEPT), WANT(W_SELF, S),
		    WANT(W_STALLS, 4), /* each heard the request first: counted at once */
		    WANT(W_SIZE1, 17), WANT(W_SIZE2, 50) } },

	/* --- where the capture point is --- */
	/* near the server, 100 ms from the client: S2 comes one RTT after the ACK */
	{ ROW("near_receiver_long_rtt", CAPTURE_POINT),
	  .crtt = 100,
	  .rounds = 3, .every = 500,
	  .round = { SEG(200, C, 6), SEG(400, S, 0), /* a 200 ms ACK timer */
		     SEG(500, C, 7), SEG(500.1, S, 13) },
	  .then = { WANT(W_ROWS, 1), WANT(W_STALLS, 3), WANT(W_MEDIAN_MS, 300) } },
	/* no handshake, no reaction of the client seen yet: S2 100 ms after
	 * the ACK waits for the client's round trip */
	{ ROW("near_receiver_tie_waits_for_rtt", CAPTURE_POINT),
	  .no_handshake = 1,
	  .then = { SEG(0, C, 6), SEG(200, S, 0), SEG(300, C, 7), SEG(300.1, S, 13),
		    WANT(W_ROWS, 0),
		    /* the client's next request, 100 ms after the answer: its
		     * round trip, and the first stall was tied by it */
		    SEG(400.1, C, 6), WANT(W_ROWS, 1), WANT(W_STALLS, 1), WANT(W_MEDIAN_MS, 300),
		    SEG(600.1, S, 0), SEG(700.1, C, 7), SEG(700.2, S, 13), WANT(W_STALLS, 2) } },
	/* the same, but the client turns out to react in 0.05 ms: its second
	 * write 100 ms after the ACK was its own pause */
	{ ROW("untied_dropped_when_rtt_is_short", CAPTURE_POINT),
	  .no_handshake = 1,
	  .then = { SEG(0, C, 6), SEG(200, S, 0), SEG(300, C, 7), SEG(300.1, S, 13),
		    SEG(300.15, C, 6), SEG(301, S, 13), WANT(W_ROWS, 0) } },
	/* near the client, 100 ms from the server */
	{ ROW("near_holder_long_rtt", CAPTURE_POINT),
	  .srtt = 100,
	  .then = { /* a prompt ACK after one RTT is no delayed ACK */
		    SEG(200, C, 6), SEG(300, S, 0), SEG(300.015, C, 7), SEG(400, S, 13),
		    WANT(W_ROWS, 0),
		    /* a 200 ms timer: the ACK one RTT + 200 ms after S1 */
		    SEG(500, C, 6), SEG(800, S, 0), SEG(800.015, C, 7), SEG(900, S, 13),
		    WANT(W_ROWS, 1), WANT(W_MEDIAN_MS, 300.015) } },

	/* --- what real captures are like --- */
	{ ROW("sequence_wrap", REAL_CAPTURES),
	  .isn = 0xfffffff0u,
	  .rounds = 4, .every = 100, .round = { STALL_ROUND(10, 40) },
	  .then = { WANT(W_ROWS, 1), WANT(W_STALLS, 4) } },
	{ ROW("duplicates_counted_once", REAL_CAPTURES),
	  .dup = 1,
	  .rounds = 4, .every = 100, .round = { STALL_ROUND(10, 40) },
	  .then = { WANT(W_ROWS, 1), WANT(W_STALLS, 4), WANT(W_DUPLICATES, 3 + 4 * 4),
		    WANT(W_RETRANSMITS, 0) } },
	/* a veth between two namespaces, captured at both ends (watch): each
	 * segment seen leaving its sender and 0.03 ms later reaching the
	 * other end; the server's timer ACK reaches the client 1.6 ms after
	 * it left (the receiving stack's softirq ran late, under load), and
	 * the client's S2 leaves 0.015 ms after that */
	{ ROW("copies_at_a_veths_two_ends_ack_late", REAL_CAPTURES),
	  .dup = 1, .copy = 0.03,
	  .rounds = 4, .every = 100,
	  .round = { SEG(10, C, 6), LATE_COPY(50, S, 0, 1.6), SEG(51.615, C, 7), SEG(51.7, S, 13) },
	  .then = { WANT(W_ROWS, 1), WANT(W_STALLS, 4), WANT(W_RETRANSMITS, 0) } },
	/* the same, the client's S2 3 ms after the ACK reached it: its pause */
	{ ROW("copies_at_a_veths_two_ends_pause_after_late_ack", REAL_CAPTURES),
	  .dup = 1, .copy = 0.03,
	  .rounds = 4, .every = 100,
	  .round = { SEG(10, C, 6), LATE_COPY(50, S, 0, 1.6), SEG(54.6, C, 7), SEG(54.7, S, 13) },
	  .then = { WANT(W_ROWS, 0) } },
	/* the same with no handshake seen (a connection older than the
	 * capture), the client's S2 1.2 ms after the ACK's late copy: its
	 * first stall waits for its round trip (0.5 ms, its ACK of the
	 * answer), then is tied from that copy, not the first; each ACK's
	 * delay is still told from its first copy (40 ms) */
	{ ROW("copies_at_a_veths_two_ends_ack_late_untied", REAL_CAPTURES),
	  .no_handshake = 1, .dup = 1, .copy = 0.03,
	  .rounds = 4, .every = 100,
	  .round = { SEG(10, C, 6), LATE_COPY(50, S, 0, 1.6), SEG(52.8, C, 7), SEG(52.9, S, 13),
		     SEG(53.4, C, 0) },
	  .then = { WANT(W_ROWS, 1), WANT(W_STALLS, 4), WANT(W_ACK_TOTAL_MS, 4 * 40),
		    WANT(W_RETRANSMITS, 0) } },
	{ ROW("mid_connection_side_from_ports", REAL_CAPTURES), /* no SYN: 40000 is ephemeral */
	  .no_handshake = 1,
	  .once = { SEG(0, S, 13) },
	  .rounds = 3, .every = 100, .round = { STALL_ROUND(10, 40) },
	  .then = { WANT(W_ROWS, 1), WANT(W_SIDE, NF_WIRE_CONNECT), WANT(W_SIDE_HOW, NF_SIDE_PORTS),
		    WANT(W_STALLS, 3) } },
	{ ROW("ipv6", REAL_CAPTURES),
	  .family = AF_INET6,
	  .rounds = 3, .every = 100, .round = { STALL_ROUND(10, 40) },
	  .then = { WANT(W_ROWS, 1), WANT(W_SELF, C), WANT(W_STALLS, 3) } },
	{ ROW("time_going_back_is_the_last", REAL_CAPTURES),
	  .then = { SEG(10, C, 6), SEG(50, S, 0),
		    SEG(5, C, 7), /* stamped before S1: taken as 50 ms */
		    SEG(50.1, S, 13), WANT(W_ROWS, 1), WANT(W_MEDIAN_MS, 40) } },
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))
#define STEPS(a) (sizeof(a) / sizeof((a)[0]))

/* Is end e of the row the timeline's end `end` (family, address, port)? */
static int is_end(const struct nf_end *e, const struct tl *t, int end)
{
	return e->family == t->family && e->port == t->port[end] &&
	       memcmp(e->addr, t->addr[end], t->family == AF_INET ? 4 : 16) == 0;
}

/* The value the check w reads from the detector of t (r: its rows, n of them). */
static double value_of(const struct tl *t, enum what w, struct nf_holder *const *r)
{
	struct nf_wire_stats st;

	nf_wire_stats(t->w, &st);
	switch (w) {
	case W_STALLS: return (double)r[0]->stalls;
	case W_SIDE: return r[0]->side;
	case W_SIDE_HOW: return r[0]->side_how;
	case W_SELF: return is_end(&r[0]->self, t, C) && is_end(&r[0]->peer, t, S) ? C
			  : is_end(&r[0]->self, t, S) && is_end(&r[0]->peer, t, C) ? S : -1;
	case W_SIZE1: return r[0]->size1;
	case W_SIZE2: return r[0]->size2;
	case W_MEDIAN_MS: return nf_holder_median_ms(r[0]);
	case W_TOTAL_MS: return r[0]->total_ms;
	case W_ACK_TOTAL_MS: return r[0]->ack_total_ms;
	case W_FIRST_MS: return (double)(r[0]->first_ns - ORIGIN_NS) / 1e6;
	case W_LAST_MS: return (double)(r[0]->last_ns - ORIGIN_NS) / 1e6;
	case W_FIRSTS: return r[0]->pid == 4242 ? firsts : -1; /* on_first named it */
	case W_RETRANSMITS: return (double)st.retransmits;
	case W_UNANSWERED: return (double)st.unanswered;
	case W_DUPLICATES: return (double)st.duplicates;
	default: return -1;
	}
}

/* The check s of row c, on the detector of t. */
static void check_step(const struct detect_case *c, const struct tl *t, const struct step *s)
{
	struct nf_holder *const *r;
	size_t n = rows(t->w, &r);
	double got;

	if (s->what == W_ROWS) {
		got = (double)n;
	} else if (s->what >= W_RETRANSMITS) { /* the counts: no row needed */
		got = value_of(t, s->what, r);
	} else {
		ck_assert_msg(n > 0, "%s (line %d): no row to read %s from", c->name, c->line,
			      what_name[s->what]);
		got = value_of(t, s->what, r);
	}
	ck_assert_msg(fabs(got - s->value) < 0.0005, "%s (line %d): %s %g, want %g", c->name,
		      c->line, what_name[s->what], got, s->value);
}

/* Plays the n steps at s (up to a STEP_END), each segment shift ms later. */
static void play(const struct detect_case *c, struct tl *t, const struct step *s, size_t n,
		 double shift)
{
	for (const struct step *end = s + n; s < end && s->kind != STEP_END; s++) {
		if (s->kind == STEP_CHECK)
			check_step(c, t, s);
		else {
			t->copy_ms = s->copy ? s->copy : c->copy;
			seg_full(t, s->ms + shift, s->from, s->len, s->flags, s->zwin ? 0 : 512, s->back);
		}
	}
}

/* Row _i of cases: its timeline into a fresh detector, its checks on the way. */
static void run_case(int _i)
{
	const struct detect_case *c = &cases[_i];
	struct nf_wire *w = detector();
	struct tl t;

	tl_init(&t, w, c->family ? c->family : AF_INET, c->cport ? c->cport : 40000,
		c->sport ? c->sport : 8080, c->isn ? c->isn : 1000);
	for (int e = C; e <= S; e++)
		t.mss[e] = c->mss[e] ? c->mss[e] : 1460;
	t.dup = c->dup;
	t.copy_ms = c->copy;
	if (!c->no_handshake)
		handshake(&t, 0, c->srtt ? c->srtt : 0.05, c->crtt ? c->crtt : 0.05);
	play(c, &t, c->once, STEPS(c->once), 0);
	for (int i = 0; i < (c->rounds ? c->rounds : 1); i++)
		play(c, &t, c->round, STEPS(c->round), i * c->every);
	play(c, &t, c->then, STEPS(c->then), 0);
	nf_wire_free(w);
}

/* Each row a test of its group's case, by its own name: T picks rows, and
 * each fails alone. */
static void add_cases(TCase *const tc[GROUPS])
{
	static TTest tests[NCASES];

	for (size_t i = 0; i < NCASES; i++) {
		tests[i] = (TTest){ cases[i].name, run_case, __FILE__, cases[i].line };
		unit_add_loop(tc[cases[i].group], &tests[i], (int)i, (int)i + 1);
	}
}

/* The side from a listener seen on another connection (two timelines). */
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

/* The median of a row's samples in any order: odd and even counts, a
 * full sample in descending order, repeated values (the samples as the
 * reservoir leaves them, not sorted). */
START_TEST(test_detect_median_of_unsorted_samples)
{
	static const float odd[] = { 50, 41, 47, 42, 44 }, even[] = { 60, 41, 45, 43 };
	static const float dup[] = { 44, 40, 44, 40, 44, 40, 44 };
	struct nf_holder h;

	memset(&h, 0, sizeof(h));
	memcpy(h.samples, odd, sizeof(odd));
	h.nsamples = 5;
	ck_assert(nf_holder_median_ms(&h) == 44);
	memcpy(h.samples, even, sizeof(even));
	h.nsamples = 4;
	ck_assert(nf_holder_median_ms(&h) == 44);
	memcpy(h.samples, dup, sizeof(dup));
	h.nsamples = 7;
	ck_assert(nf_holder_median_ms(&h) == 44);
	for (int i = 0; i < NF_HOLDER_SAMPLES; i++)
		h.samples[i] = (float)(1000 - i);
	h.nsamples = NF_HOLDER_SAMPLES;
	ck_assert(nf_holder_median_ms(&h) == (1000.0 - 31 + 1000.0 - 32) / 2);
	h.nsamples = 0;
	ck_assert(nf_holder_median_ms(&h) == 0);
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
	TCase *tc[GROUPS] = { tcase_create("signature"), tcase_create("capture_point"),
			      tcase_create("real_captures") };
	TCase *row = tcase_create("rows"), *mem = tcase_create("memory");

	add_cases(tc);
	unit_add(tc[REAL_CAPTURES], test_detect_mid_connection_side_from_listener);
	for (int g = 0; g < GROUPS; g++)
		suite_add_tcase(s, tc[g]);
	unit_add(row, test_detect_client_connections_share_a_row);
	unit_add(row, test_detect_rows_by_total);
	unit_add(row, test_detect_rows_bounded);
	unit_add(row, test_detect_median_past_the_sample);
	unit_add(row, test_detect_median_of_unsorted_samples);
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
