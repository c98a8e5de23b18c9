/*
 * model.c - a capture written from a model of two TCP ends, for the round
 * trips this machine cannot make on the wire (no netem): the packets of
 * a simulated connection over a path with a given one-way delay, as seen
 * at a capture point near the holder, near the receiver or in between,
 * with exact timestamps, and on stdout the ground truth of what stalled.
 *
 * usage: model -o FILE [options]
 *   -o FILE              the capture (pcap or pcapng) to write
 *   --scenario S         what the two applications do, each round:
 *       split         client writes W1 then W2, reads the reply (the stall)
 *       split-server  client writes its request at once; the server writes
 *                     its reply in two pieces W1, W2 (server-side holder)
 *       onewrite      client writes W1+W2 in one write (control)
 *       nodelay       split, the client with TCP_NODELAY (control)
 *       quickack      split, the server ACKing every segment at once (control)
 *       think         split with --think MS between the two writes
 *       oneway        client writes W1 each --pause MIN:MAX ms (drawn
 *                     uniformly), the server only reads (never writes)
 *       bulk          client writes W1+W2; the server replies with
 *                     --bulk-segs full segments and a --tail in one write
 *       rto           onewrite, every --lose-every'th request lost once on
 *                     the path (resent by H's retransmission timer)
 *       zerowin       client (TCP_NODELAY) writes W1 each --pause ms; the
 *                     server's buffer is --rcvbuf bytes and its program
 *                     reads it all each --read-pause ms: window 0, then
 *                     the window update
 *   --rtt MS             round trip of the path (default 20)
 *   --ack-timer MS       the receiver's delayed-ACK timer (default 40:
 *                        Linux's minimum; 200 as another stack's)
 *   --at WHERE           capture point: holder, receiver, middle, or a
 *                        fraction of the path from the client (0..1)
 *                        (default holder; "holder" is the end that writes
 *                        in pieces: the client but in split-server/bulk)
 *   --rounds N           rounds (messages) per connection (default 10)
 *   --conns N            connections (default 1), --concurrent N of them
 *                        live at once (default 1: one after the other)
 *   --mix S:W,S:W...     each connection's scenario drawn with these
 *                        weights (the benchmark's capture)
 *   --w1 N --w2 N        the holder's two pieces (default 6, 7)
 *   --resp N             the other end's message (default 100)
 *   --think MS, --pause MIN[:MAX], --gap MS (between a reply and the next
 *                        request; default 1), --read-pause MS (default the
 *                        ACK timer), --rcvbuf N (default 65535)
 *   --bulk-segs N --tail N (default 15, 300), --cwnd N initial (default 10)
 *   --lose-every K       drop the first transmission of every K-th data
 *                        segment of the client (in the middle of the path)
 *   --nodelay            the holder sets TCP_NODELAY
 *   --quickack           the receiver ACKs every data segment at once
 *   --quick N            the receiver ACKs its first N data segments at
 *                        once (Linux's quick ACKs at a connection's start)
 *   --proc-us N          an end's reaction time: ACK in to held data out,
 *                        request in to reply out (default 15)
 *   --mid                no handshake in the capture (it starts mid-connection)
 *   --only client|server the capture sees one direction: that end's packets
 *   --isn-wrap           initial sequence numbers just below 2^32
 *   --ipv6, --link eth|raw (default eth), --format pcap|pcapng (default
 *   pcap), --nsec (ns timestamps), --big-endian (pcap), --snaplen N,
 *   --mss N (default 1460, 1440 with --ipv6), --seed N
 *   --truth conns|summary (default conns)
 *
 * Modelled: H's Nagle as Linux's (Minshall: a segment smaller than the MSS
 * waits while an earlier such segment is unacknowledged; full segments
 * go; TCP_NODELAY holds nothing), cwnd (slow start, 1 after an RTO), the
 * peer's window and the persist timer's zero-window probes, RTT samples
 * (Karn) and the RTO (SRTT + 200 ms + a 1 ms tick, doubling); R's
 * delayed ACK: a timer started by the first unacknowledged segment, an
 * ACK at once when more than one full segment (the receiver's MSS
 * estimate, 536 at first) is unacknowledged, for a segment out of order,
 * and under quickack, the ACK carried by R's own data. Not modelled: Linux's adaptive ATO and its
 * "pingpong" and PUSHED rules (a one-way reader that drains a small
 * segment ACKs at once), autocorking, SACK and fast retransmit.
 *
 * The truth, one line per connection (--truth conns):
 *   truth conn=K scenario=S client=A:P server=A:P stalls=N holder=A:P|-
 *     side=connect|accept|- stall_ms=MEDIAN expected_ms=E
 * A stall is a segment Nagle held and an ACK sent by R's delayed-ACK
 * timer released: stall_ms is the median time at the capture point from
 * the last small segment before the hold (S1) to the released one (S2);
 * expected_ms the ACK timer plus one round trip plus the reaction time.
 * Then one line: summary conns= packets= stalling_conns= stalls=
 * peak_live= seconds= (capture time). Exit status 0, 2 on a usage error,
 * 1 if the capture cannot be written.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define MS 1000000ull
#define BASE_NS (1700000000ull * 1000000000ull)
#define RTO_MIN (200 * MS)
#define MAX_SAMPLES 64

enum scen { SC_SPLIT, SC_SPLIT_SERVER, SC_ONEWRITE, SC_NODELAY, SC_QUICKACK, SC_THINK,
	    SC_ONEWAY, SC_BULK, SC_RTO, SC_ZEROWIN, SC_N };
static const char *const scen_names[SC_N] = {
	"split", "split-server", "onewrite", "nodelay", "quickack", "think",
	"oneway", "bulk", "rto", "zerowin",
};

static struct {
	double rtt_ms, ack_ms, at, think_ms, pause_min, pause_max, gap_ms, read_pause_ms;
	int at_kind; /* 0 holder, 1 receiver, 2 fraction */
	int only;    /* -1 both directions, else the end whose packets are seen */
	uint32_t rounds, conns, concurrent, w1, w2, resp, rcvbuf, bulk_segs, tail, cwnd;
	uint32_t lose_every, quick, proc_us, mss, snaplen;
	bool nodelay, quickack, mid, isn_wrap, ipv6, raw, pcapng, nsec, big, truth_conns;
	uint64_t seed;
	double mix[SC_N];
	int scenario;
	const char *out;
} opt;

/* ---- the random numbers (xorshift64*: the same capture for a seed) ---- */
static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}
static double rng_unit(void) { return (double)(rng() >> 11) / (double)(1ull << 53); }

/* ---- the two ends ---- */
struct seg { uint32_t seq, len; uint64_t sent; bool retx; };

struct end {
	uint32_t iss, snd_una, snd_nxt, snd_sml, snd_wnd, cwnd;
	uint64_t unsent;          /* written, not yet sent */
	uint32_t rcv_nxt, rcv_wup; /* rcv_wup: rcv_nxt when an ACK last went */
	uint32_t rcv_mss, rcv_used, rcv_segs;
	uint64_t delack_at, delack_ev, rto_at, rto_ev, persist_at, out_at; /* *_ev: the one event queued */
	uint32_t rto_backoff, persist_backoff, sent_data;
	double srtt_ns;
	struct seg *q; uint32_t nq, cap;
	bool nodelay, quickack, fin_sent, fin_rcvd, win_was_zero;
	uint32_t quick_left;
	/* the truth: a hold, what released it */
	bool holding, released_by_delack;
	uint64_t sml_cap, data_cap, hold_s1_cap;
	uint32_t stalls, nsamples;
	float samples[MAX_SAMPLES];
	/* the application */
	uint64_t app_rcvd, app_want;
	uint16_t ip_id;
};

struct conn {
	int scen;
	uint32_t idx, round;
	uint8_t caddr[16], saddr[16];
	uint16_t cport, sport;
	int holder;   /* the end that writes in pieces: 0 client, 1 server */
	uint32_t lose_every;
	double frac;  /* capture point, fraction of the path from the client */
	bool hs_done, done, sent_req_piece;
	struct end e[2];
};

/* ---- events and capture records: two heaps ---- */
enum ev_kind { EV_PKT, EV_DELACK, EV_RTO, EV_PERSIST, EV_OUTPUT, EV_APP, EV_APP2, EV_READ,
	       EV_START };
struct pkt { uint32_t seq, ack, len; uint16_t win; uint8_t flags, from; bool delack, syn_mss; };
struct ev { uint64_t t, n; uint32_t conn; uint8_t kind, end; struct pkt p; };
struct heap { struct ev *a; size_t n, cap; };

static struct heap events, records;
static uint64_t ev_counter, now;
static struct conn **conns;
static uint32_t started, live, peak_live, finished;
static uint64_t packets_written;
static FILE *out;

static bool ev_less(const struct ev *x, const struct ev *y)
{
	return x->t < y->t || (x->t == y->t && x->n < y->n);
}

static void heap_push(struct heap *h, const struct ev *e)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 1024;
		h->a = realloc(h->a, h->cap * sizeof *h->a);
		if (!h->a) { perror("model"); exit(1); }
	}
	size_t i = h->n++;
	while (i > 0 && ev_less(e, &h->a[(i - 1) / 2])) {
		h->a[i] = h->a[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->a[i] = *e;
}

static struct ev heap_pop(struct heap *h)
{
	struct ev top = h->a[0], last = h->a[--h->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n) break;
		if (c + 1 < h->n && ev_less(&h->a[c + 1], &h->a[c])) c++;
		if (!ev_less(&h->a[c], &last)) break;
		h->a[i] = h->a[c];
		i = c;
	}
	if (h->n) h->a[i] = last;
	return top;
}

static void schedule(uint64_t t, uint32_t c, int kind, int end)
{
	struct ev e = { .t = t, .n = ev_counter++, .conn = c, .kind = (uint8_t)kind,
			.end = (uint8_t)end };
	heap_push(&events, &e);
}

static uint64_t one_way_ns(void) { return (uint64_t)llround(opt.rtt_ms * MS / 2); }
static uint64_t ack_ns(void) { return (uint64_t)llround(opt.ack_ms * MS); }
static uint64_t proc_ns(void) { return (uint64_t)opt.proc_us * 1000; }

/* ---- the frame: Ethernet or raw, IPv4 or IPv6, TCP ---- */
static uint8_t frame[65600];

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16); put16(p + 2, v & 0xffff); }

static uint32_t csum_add(uint32_t s, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2) s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1) s += (uint32_t)p[n - 1] << 8;
	return s;
}

static uint16_t csum_fold(uint32_t s)
{
	while (s >> 16) s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static size_t build_frame(const struct conn *c, const struct pkt *p)
{
	const uint8_t *src = p->from ? c->saddr : c->caddr, *dst = p->from ? c->caddr : c->saddr;
	uint8_t *f = frame, *ip, *tcp;
	size_t thl = p->syn_mss ? 24 : 20, alen = opt.ipv6 ? 16 : 4;
	if (!opt.raw) {
		memcpy(f, p->from ? "\x02\0\0\0\0\x01" : "\x02\0\0\0\0\x02", 6);
		memcpy(f + 6, p->from ? "\x02\0\0\0\0\x02" : "\x02\0\0\0\0\x01", 6);
		put16(f + 12, opt.ipv6 ? 0x86dd : 0x0800);
		f += 14;
	}
	ip = f;
	if (opt.ipv6) {
		put32(ip, 0x60000000);
		put16(ip + 4, (uint32_t)(thl + p->len));
		ip[6] = 6, ip[7] = 64;
		memcpy(ip + 8, src, 16), memcpy(ip + 24, dst, 16);
		tcp = ip + 40;
	} else {
		const struct end *e = &c->e[p->from];
		ip[0] = 0x45, ip[1] = 0;
		put16(ip + 2, (uint32_t)(20 + thl + p->len));
		put16(ip + 4, e->ip_id), put16(ip + 6, 0x4000);
		ip[8] = 64, ip[9] = 6, put16(ip + 10, 0);
		memcpy(ip + 12, src, 4), memcpy(ip + 16, dst, 4);
		put16(ip + 10, csum_fold(csum_add(0, ip, 20)));
		tcp = ip + 20;
	}
	put16(tcp, p->from ? c->sport : c->cport);
	put16(tcp + 2, p->from ? c->cport : c->sport);
	put32(tcp + 4, p->seq), put32(tcp + 8, p->ack);
	tcp[12] = (uint8_t)((thl / 4) << 4), tcp[13] = p->flags;
	put16(tcp + 14, p->win), put16(tcp + 16, 0), put16(tcp + 18, 0);
	if (p->syn_mss) tcp[20] = 2, tcp[21] = 4, put16(tcp + 22, opt.mss);
	size_t tcplen = thl + p->len;
	memset(tcp + thl, 0, p->len);
	uint8_t ph[4] = { 0, 0, 0, 6 };
	uint32_t s = csum_add(0, src, alen);
	s = csum_add(s, dst, alen);
	s = csum_add(s, ph, 4);
	s += (uint32_t)tcplen;
	put16(tcp + 16, csum_fold(csum_add(s, tcp, thl))); /* the payload is zeros */
	return (size_t)(tcp - frame) + tcplen;
}

/* ---- the capture file ---- */
static void w16(uint16_t v)
{
	uint8_t b[2];
	if (opt.big) b[0] = (uint8_t)(v >> 8), b[1] = (uint8_t)v;
	else b[1] = (uint8_t)(v >> 8), b[0] = (uint8_t)v;
	fwrite(b, 1, 2, out);
}
static void w32(uint32_t v)
{
	if (opt.big) w16((uint16_t)(v >> 16)), w16((uint16_t)v);
	else w16((uint16_t)v), w16((uint16_t)(v >> 16));
}

static uint32_t linktype(void) { return opt.raw ? 101 : 1; }

static void write_header(void)
{
	if (!opt.pcapng) {
		w32(opt.nsec ? 0xa1b23c4d : 0xa1b2c3d4);
		w16(2), w16(4), w32(0), w32(0), w32(opt.snaplen), w32(linktype());
		return;
	}
	w32(0x0A0D0D0A), w32(28), w32(0x1A2B3C4D), w16(1), w16(0), w32(0xffffffff),
		w32(0xffffffff), w32(28);
	/* IDB with if_tsresol (9) and the end of options */
	w32(1), w32(32), w16((uint16_t)linktype()), w16(0), w32(opt.snaplen);
	w16(9), w16(1), w32(opt.nsec ? 9 : 6), w32(0), w32(32);
}

static void write_record(uint64_t t, const struct conn *c, const struct pkt *p)
{
	size_t len = build_frame(c, p), cap = len < opt.snaplen ? len : opt.snaplen;
	uint64_t ts = opt.nsec ? t : t / 1000;
	if (!opt.pcapng) {
		uint64_t div = opt.nsec ? 1000000000ull : 1000000ull;
		w32((uint32_t)(ts / div)), w32((uint32_t)(ts % div));
		w32((uint32_t)cap), w32((uint32_t)len);
		fwrite(frame, 1, cap, out);
	} else {
		uint32_t pad = (uint32_t)((4 - cap % 4) % 4), blen = (uint32_t)(32 + cap + pad);
		static const uint8_t zero[4];
		w32(6), w32(blen), w32(0), w32((uint32_t)(ts >> 32)), w32((uint32_t)ts);
		w32((uint32_t)cap), w32((uint32_t)len);
		fwrite(frame, 1, cap, out), fwrite(zero, 1, pad, out);
		w32(blen);
	}
	packets_written++;
}

/* Writes every record captured up to the time t (none can come before it:
 * a packet is seen no earlier than it is sent). */
static void flush_records(uint64_t t)
{
	while (records.n && records.a[0].t <= t) {
		struct ev r = heap_pop(&records);
		write_record(BASE_NS + r.t, conns[r.conn], &r.p);
	}
}

/* ---- sending ---- */
static uint16_t adv_window(const struct end *e)
{
	uint32_t free_bytes = opt.rcvbuf > e->rcv_used ? opt.rcvbuf - e->rcv_used : 0;
	return (uint16_t)(free_bytes > 65535 ? 65535 : free_bytes);
}

/* Sends one packet from end `from` of c: on the path (lost or not) and to
 * the capture point; any data or ACK carries R's pending ACK. */
static void send_pkt(struct conn *c, int from, uint32_t seq, uint32_t len, uint8_t flags,
		     bool delack, bool lose)
{
	struct end *e = &c->e[from];
	struct pkt p = { .seq = seq, .ack = e->rcv_nxt, .len = len, .win = adv_window(e),
			 .flags = flags, .from = (uint8_t)from, .delack = delack,
			 .syn_mss = (flags & 0x02) != 0 };
	if (!(flags & 0x10)) p.ack = 0;
	e->ip_id++;
	e->rcv_wup = e->rcv_nxt, e->rcv_segs = 0, e->delack_at = 0;
	e->win_was_zero = p.win == 0;
	uint64_t ow = one_way_ns();
	double to_cap = from ? 1 - c->frac : c->frac;
	uint64_t cap_t = now + (uint64_t)llround(to_cap * (double)ow);
	/* a loss is in the middle of the path: seen there and before it */
	bool seen = !lose || to_cap <= 0.5;
	bool skip = (opt.mid && !c->hs_done) || (opt.only >= 0 && from != opt.only);
	if (seen && !skip) {
		struct ev r = { .t = cap_t, .n = ev_counter++, .conn = c->idx, .p = p };
		heap_push(&records, &r);
	}
	if (len) e->data_cap = cap_t;
	if (len && len < opt.mss) e->sml_cap = cap_t;
	if (!lose) {
		struct ev a = { .t = now + ow, .n = ev_counter++, .conn = c->idx, .kind = EV_PKT,
				.end = (uint8_t)!from, .p = p };
		heap_push(&events, &a);
	}
}

static uint64_t rto_ns(const struct end *e)
{
	/* + 1 ms: Linux's timers fire on the tick after their time, so an RTO of
	 * exactly the delayed ACK's return (20 + 200 ms against a 200 ms ACK
	 * timer over a 20 ms RTT, from the handshake's sample) loses the race */
	uint64_t base = e->srtt_ns > 0 ? (uint64_t)e->srtt_ns + RTO_MIN + MS : 1000 * MS;
	return base << (e->rto_backoff > 6 ? 6 : e->rto_backoff);
}

static void arm_rto(struct conn *c, int i)
{
	struct end *e = &c->e[i];
	e->rto_at = now + rto_ns(e);
	if (e->rto_ev && e->rto_ev <= e->rto_at) return; /* that event moves it on */
	e->rto_ev = e->rto_at;
	schedule(e->rto_at, c->idx, EV_RTO, i);
}

static void queue_seg(struct end *e, uint32_t seq, uint32_t len)
{
	if (e->nq == e->cap) {
		e->cap = e->cap ? e->cap * 2 : 4;
		e->q = realloc(e->q, e->cap * sizeof *e->q);
		if (!e->q) { perror("model"); exit(1); }
	}
	e->q[e->nq++] = (struct seg){ .seq = seq, .len = len, .sent = now };
}

/* Counts the stall when the segment Nagle held leaves after a delayed ACK. */
static void note_release(struct end *e)
{
	if (!e->holding) return;
	e->holding = false;
	if (!e->released_by_delack) return;
	e->released_by_delack = false;
	e->stalls++;
	if (e->nsamples < MAX_SAMPLES)
		e->samples[e->nsamples++] = (float)((double)(e->data_cap - e->hold_s1_cap) / MS);
}

/* Linux's tcp_write_xmit, as far as it matters here: cwnd, the peer's
 * window, Nagle with Minshall's rule. */
static void output(struct conn *c, int i)
{
	struct end *e = &c->e[i];
	while (e->unsent) {
		int32_t wnd_left = (int32_t)(e->snd_una + e->snd_wnd - e->snd_nxt);
		uint32_t len = (uint32_t)(e->unsent < opt.mss ? e->unsent : opt.mss);
		if (wnd_left < (int32_t)len) { /* it does not fit: an ACK, or the persist timer */
			if (e->nq == 0 && !e->persist_at) {
				e->persist_at = now + (rto_ns(e) << e->persist_backoff);
				schedule(e->persist_at, c->idx, EV_PERSIST, i);
			}
			return;
		}
		if (e->nq >= e->cwnd) return;
		bool partial = len < opt.mss;
		if (partial && !e->nodelay && e->nq && (int32_t)(e->snd_sml - e->snd_una) > 0) {
			if (!e->holding) e->holding = true, e->hold_s1_cap = e->sml_cap;
			return;
		}
		bool lose = false;
		if (i == 0 && c->lose_every && ++e->sent_data % c->lose_every == 0) lose = true;
		uint32_t seq = e->snd_nxt;
		send_pkt(c, i, seq, len, 0x18, false, lose);
		queue_seg(e, seq, len);
		e->snd_nxt += len, e->unsent -= len;
		if (partial) e->snd_sml = e->snd_nxt;
		note_release(e);
		if (!e->rto_at) arm_rto(c, i);
	}
}

static void app_write(struct conn *c, int i, uint64_t bytes)
{
	c->e[i].unsent += bytes;
	output(c, i);
}

/* ---- receiving ---- */
static void send_ack(struct conn *c, int i, bool delack)
{
	send_pkt(c, i, c->e[i].snd_nxt, 0, 0x10, delack, false);
}

static void app_deliver(struct conn *c, int i, uint32_t len);

/* The ACK half of a segment for end i. */
static void take_ack(struct conn *c, int i, const struct pkt *p)
{
	struct end *e = &c->e[i];
	if (!(p->flags & 0x10)) return;
	e->snd_wnd = p->win;
	if ((int32_t)(p->ack - e->snd_una) > 0 && (int32_t)(p->ack - e->snd_nxt) <= 0) {
		uint32_t k = 0;
		while (k < e->nq && (int32_t)(p->ack - (e->q[k].seq + e->q[k].len)) >= 0) {
			if (!e->q[k].retx) {
				double sample = (double)(now - e->q[k].sent);
				e->srtt_ns = e->srtt_ns > 0 ? 0.875 * e->srtt_ns + 0.125 * sample : sample;
			}
			k++;
		}
		memmove(e->q, e->q + k, (e->nq - k) * sizeof *e->q);
		e->nq -= k;
		e->cwnd += k;
		e->snd_una = p->ack;
		e->rto_backoff = 0;
		e->rto_at = 0;
		if (e->nq) arm_rto(c, i);
		if (e->holding && (int32_t)(e->snd_sml - e->snd_una) <= 0)
			e->released_by_delack = p->delack && p->len == 0;
	}
	if (e->snd_wnd) e->persist_at = 0, e->persist_backoff = 0;
	if (e->unsent && !e->out_at) {
		e->out_at = now + proc_ns();
		schedule(e->out_at, c->idx, EV_OUTPUT, i);
	}
}

/* The data half: in order, out of order, and when the ACK goes. */
static void take_data(struct conn *c, int i, const struct pkt *p)
{
	struct end *e = &c->e[i];
	if (!p->len) return;
	if (p->seq != e->rcv_nxt) { /* a duplicate or out of order: ACK at once */
		send_ack(c, i, false);
		return;
	}
	e->rcv_nxt += p->len;
	if (p->len > e->rcv_mss) e->rcv_mss = p->len < opt.mss ? p->len : opt.mss;
	e->rcv_used += p->len;
	app_deliver(c, i, p->len);
	if (e->rcv_wup == e->rcv_nxt) return; /* the application's reply carried the ACK */
	if (e->quickack || e->quick_left) {
		if (e->quick_left) e->quick_left--;
		send_ack(c, i, false);
	} else if (e->rcv_nxt - e->rcv_wup > e->rcv_mss || adv_window(e) == 0) {
		send_ack(c, i, false);
	} else if (!e->delack_at) {
		e->delack_at = now + ack_ns();
		if (e->delack_ev && e->delack_ev <= e->delack_at) return; /* that event moves it on */
		e->delack_ev = e->delack_at;
		schedule(e->delack_at, c->idx, EV_DELACK, i);
	}
}

static void conn_finish(struct conn *c);
static void start_round(struct conn *c);

static void take_fin(struct conn *c, int i, const struct pkt *p)
{
	struct end *e = &c->e[i];
	if (!(p->flags & 0x01) || p->seq + p->len != e->rcv_nxt || e->fin_rcvd) return;
	e->fin_rcvd = true;
	e->rcv_nxt++;
	if (i == 1 && !e->fin_sent) { /* the server closes too */
		e->fin_sent = true;
		send_pkt(c, 1, e->snd_nxt, 0, 0x11, false, false);
		e->snd_nxt++;
	} else {
		send_ack(c, i, false);
		conn_finish(c);
	}
}

static void take_syn(struct conn *c, int i, const struct pkt *p)
{
	struct end *e = &c->e[i];
	e->rcv_nxt = p->seq + 1;
	e->rcv_wup = e->rcv_nxt;
	e->snd_wnd = p->win;
	if (i == 1) { /* SYN-ACK */
		send_pkt(c, 1, e->iss, 0, 0x12, false, false);
		e->snd_nxt = e->snd_una = e->snd_sml = e->iss + 1;
		return;
	}
	e->snd_una = e->snd_sml = e->snd_nxt = e->iss + 1; /* the handshake's ACK */
	send_ack(c, 0, false);
	c->hs_done = true;
	c->e[0].srtt_ns = c->e[1].srtt_ns = (double)one_way_ns() * 2; /* the handshake's */
	start_round(c);
}

static void receive(struct conn *c, int i, const struct pkt *p)
{
	if (p->flags & 0x02) {
		take_syn(c, i, p);
		return;
	}
	struct end *e = &c->e[i];
	take_ack(c, i, p);
	if (!p->len && !(p->flags & 0x01) && p->seq != e->rcv_nxt) { /* a window probe */
		send_ack(c, i, false);
		return;
	}
	take_data(c, i, p);
	take_fin(c, i, p);
}

/* ---- the applications ---- */
static int scen(const struct conn *c) { return c->scen; }

static bool holder_nodelay(const struct conn *c)
{
	return opt.nodelay || scen(c) == SC_NODELAY || scen(c) == SC_ZEROWIN;
}

static uint64_t request_size(void) { return (uint64_t)opt.w1 + opt.w2; }

static uint64_t reply_size(const struct conn *c)
{
	switch (scen(c)) {
	case SC_SPLIT_SERVER: return (uint64_t)opt.w1 + opt.w2;
	case SC_BULK: return (uint64_t)opt.bulk_segs * opt.mss + opt.tail;
	default: return opt.resp;
	}
}

static bool one_way(const struct conn *c) { return scen(c) == SC_ONEWAY || scen(c) == SC_ZEROWIN; }

static uint64_t pause_ns(void)
{
	double ms = opt.pause_min + (opt.pause_max - opt.pause_min) * rng_unit();
	return (uint64_t)llround(ms * MS);
}

static void client_close(struct conn *c)
{
	struct end *e = &c->e[0];
	if (e->fin_sent) return;
	e->fin_sent = true;
	send_pkt(c, 0, e->snd_nxt, 0, 0x11, false, false);
	e->snd_nxt++;
}

/* A round of the client: its request (one write, two, or one message of a
 * one-way sender). */
static void start_round(struct conn *c)
{
	if (c->round == opt.rounds) {
		if (!c->e[0].unsent) client_close(c);
		return;
	}
	c->round++;
	switch (scen(c)) {
	case SC_SPLIT: case SC_NODELAY: case SC_QUICKACK:
		app_write(c, 0, opt.w1);
		app_write(c, 0, opt.w2);
		break;
	case SC_THINK:
		app_write(c, 0, opt.w1);
		schedule(now + (uint64_t)llround(opt.think_ms * MS), c->idx, EV_APP2, 0);
		break;
	case SC_ONEWAY: case SC_ZEROWIN:
		app_write(c, 0, opt.w1);
		schedule(now + pause_ns(), c->idx, EV_APP, 0);
		break;
	default:
		app_write(c, 0, request_size());
	}
	c->e[0].app_want += one_way(c) ? 0 : reply_size(c);
	c->e[1].app_want += one_way(c) ? 0 : request_size();
}

/* The server's reply, once its request is whole. */
static void server_reply(struct conn *c)
{
	if (scen(c) == SC_SPLIT_SERVER) {
		app_write(c, 1, opt.w1);
		app_write(c, 1, opt.w2);
	} else {
		app_write(c, 1, reply_size(c));
	}
}

static void app_deliver(struct conn *c, int i, uint32_t len)
{
	struct end *e = &c->e[i];
	e->app_rcvd += len;
	if (scen(c) != SC_ZEROWIN) e->rcv_used -= len; /* read at once */
	if (one_way(c)) return;
	if (i == 1 && e->app_rcvd == e->app_want) schedule(now + proc_ns(), c->idx, EV_APP, 1);
	if (i == 0 && e->app_rcvd == e->app_want)
		schedule(now + (uint64_t)llround(opt.gap_ms * MS), c->idx, EV_APP, 0);
}

/* zerowin's reader: takes all, and says so when the window opened from 0. */
static void server_read(struct conn *c)
{
	struct end *e = &c->e[1];
	bool was_zero = e->win_was_zero;
	e->rcv_used = 0;
	if (was_zero) send_ack(c, 1, false);
	if (!c->done) schedule(now + (uint64_t)llround(opt.read_pause_ms * MS), c->idx, EV_READ, 1);
}

/* ---- timers ---- */
static void on_rto(struct conn *c, int i)
{
	struct end *e = &c->e[i];
	if (e->rto_ev == now) e->rto_ev = 0;
	if (e->nq && e->rto_at > now && !e->rto_ev) { /* armed again meanwhile: later */
		e->rto_ev = e->rto_at;
		schedule(e->rto_at, c->idx, EV_RTO, i);
		return;
	}
	if (!e->nq || e->rto_at != now) return;
	e->q[0].retx = true;
	e->q[0].sent = now;
	send_pkt(c, i, e->q[0].seq, e->q[0].len, 0x18, false, false);
	e->cwnd = 1;
	e->rto_backoff++;
	arm_rto(c, i);
}

static void on_persist(struct conn *c, int i)
{
	struct end *e = &c->e[i];
	if (e->persist_at != now) return;
	int32_t wnd_left = (int32_t)(e->snd_una + e->snd_wnd - e->snd_nxt);
	if (wnd_left > 0 && e->unsent && !e->nq) { /* what fits (Linux's tcp_write_wakeup) */
		uint32_t len = (uint32_t)(e->unsent < (uint64_t)wnd_left ? e->unsent : (uint64_t)wnd_left);
		send_pkt(c, i, e->snd_nxt, len, 0x18, false, false);
		queue_seg(e, e->snd_nxt, len);
		e->snd_nxt += len, e->unsent -= len;
		if (len < opt.mss) e->snd_sml = e->snd_nxt;
		e->persist_at = 0;
		if (!e->rto_at) arm_rto(c, i);
		return;
	}
	send_pkt(c, i, e->snd_una - 1, 0, 0x10, false, false); /* a zero-window probe */
	e->persist_backoff++;
	e->persist_at = now + (rto_ns(e) << (e->persist_backoff > 6 ? 6 : e->persist_backoff));
	schedule(e->persist_at, c->idx, EV_PERSIST, i);
}

/* ---- connections ---- */
static void ip_of(uint8_t a[16], int server, uint32_t k)
{
	memset(a, 0, 16);
	if (opt.ipv6) {
		a[0] = 0xfd, a[15] = (uint8_t)(server ? 2 : 1);
		if (!server) a[12] = (uint8_t)(k >> 16), a[13] = (uint8_t)(k >> 8), a[14] = (uint8_t)k;
		return;
	}
	a[0] = 10;
	k++;
	if (server) a[3] = 2;
	else a[1] = (uint8_t)(1 + (k >> 16) % 200), a[2] = (uint8_t)(k >> 8), a[3] = (uint8_t)k;
}

static int pick_scenario(void)
{
	if (opt.scenario >= 0) return opt.scenario;
	double total = 0, x;
	for (int s = 0; s < SC_N; s++) total += opt.mix[s];
	x = rng_unit() * total;
	for (int s = 0; s < SC_N; s++) {
		if (x < opt.mix[s]) return s;
		x -= opt.mix[s];
	}
	return SC_ONEWRITE;
}

static void end_init(struct end *e, uint32_t iss)
{
	memset(e, 0, sizeof *e);
	e->iss = iss;
	e->cwnd = opt.cwnd;
	e->rcv_mss = opt.mss < 536 ? opt.mss : 536;
}

static void conn_start(uint32_t k)
{
	struct conn *c = calloc(1, sizeof *c);
	if (!c) { perror("model"); exit(1); }
	conns[k] = c;
	c->idx = k;
	c->scen = pick_scenario();
	ip_of(c->caddr, 0, opt.conns > 1 ? k / 16 : 0);
	ip_of(c->saddr, 1, 0);
	c->cport = (uint16_t)(opt.conns > 1 ? 32768 + (k * 7919u) % 28000 : 40000);
	c->sport = 8080;
	c->holder = scen(c) == SC_SPLIT_SERVER || scen(c) == SC_BULK;
	c->lose_every = opt.lose_every ? opt.lose_every : scen(c) == SC_RTO ? 3 : 0;
	bool at_h = opt.at_kind == 0;
	c->frac = opt.at_kind == 2 ? opt.at : (at_h == (c->holder == 0) ? 0.0 : 1.0);
	uint32_t wrap = opt.isn_wrap ? 0xffffffffu - 20 - (uint32_t)(rng() % 40) : 0;
	end_init(&c->e[0], opt.isn_wrap ? wrap : (uint32_t)rng());
	end_init(&c->e[1], opt.isn_wrap ? wrap - 1000 : (uint32_t)rng());
	int h = c->holder, r = !h;
	c->e[h].nodelay = holder_nodelay(c);
	c->e[r].quickack = opt.quickack || scen(c) == SC_QUICKACK;
	c->e[r].quick_left = opt.quick;
	if (scen(c) == SC_ZEROWIN)
		schedule(now + (uint64_t)llround(opt.read_pause_ms * MS), k, EV_READ, 1);
	live++;
	if (live > peak_live) peak_live = live;
	send_pkt(c, 0, c->e[0].iss, 0, 0x02, false, false);
	c->e[0].snd_una = c->e[0].snd_nxt = c->e[0].iss;
}

static void conn_finish(struct conn *c)
{
	if (c->done) return;
	c->done = true;
	live--;
	finished++;
	if (started < opt.conns) schedule(now + proc_ns(), started++, EV_START, 0);
}

static void dispatch(const struct ev *v)
{
	if (v->kind == EV_START) {
		conn_start(v->conn);
		return;
	}
	struct conn *c = conns[v->conn];
	struct end *e = &c->e[v->end];
	switch (v->kind) {
	case EV_PKT: receive(c, v->end, &v->p); break;
	case EV_DELACK:
		if (e->delack_ev == now) e->delack_ev = 0;
		if (e->delack_at == now) send_ack(c, v->end, true);
		else if (e->delack_at > now && !e->delack_ev)
			schedule(e->delack_ev = e->delack_at, c->idx, EV_DELACK, v->end);
		break;
	case EV_RTO: on_rto(c, v->end); break;
	case EV_PERSIST: on_persist(c, v->end); break;
	case EV_OUTPUT:
		e->out_at = 0;
		output(c, v->end);
		break;
	case EV_APP:
		if (v->end == 1) server_reply(c);
		else start_round(c);
		break;
	case EV_APP2: app_write(c, 0, opt.w2); break;
	case EV_READ:
		if (!c->done) server_read(c);
		break;
	}
	if (one_way(c) && c->round == opt.rounds && !c->e[0].unsent && !c->e[0].nq)
		client_close(c);
}

/* ---- the truth ---- */
static const char *fmt_end(const struct conn *c, int i, char *buf)
{
	char a[INET6_ADDRSTRLEN];
	inet_ntop(opt.ipv6 ? AF_INET6 : AF_INET, i ? c->saddr : c->caddr, a, sizeof a);
	sprintf(buf, opt.ipv6 ? "[%s]:%u" : "%s:%u", a, i ? c->sport : c->cport);
	return buf;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

static void truth(uint64_t *stalling, uint64_t *stalls)
{
	char b1[80], b2[80], b3[80];
	for (uint32_t k = 0; k < opt.conns; k++) {
		const struct conn *c = conns[k];
		if (!c) continue;
		for (int i = 0; i < 2; i++) {
			const struct end *e = &c->e[i];
			if (i == 1 && !e->stalls) continue;
			if (i == 0 && !e->stalls && c->e[1].stalls) continue;
			float s[MAX_SAMPLES];
			memcpy(s, e->samples, e->nsamples * sizeof *s);
			qsort(s, e->nsamples, sizeof *s, cmp_float);
			double med = e->nsamples ? (e->nsamples % 2 ? s[e->nsamples / 2]
					: (s[e->nsamples / 2 - 1] + s[e->nsamples / 2]) / 2) : 0;
			*stalling += e->stalls > 0;
			*stalls += e->stalls;
			if (!opt.truth_conns) continue;
			printf("truth conn=%u scenario=%s client=%s server=%s stalls=%u holder=%s side=%s "
			       "stall_ms=%.3f expected_ms=%.3f\n", k, scen_names[c->scen],
			       fmt_end(c, 0, b1), fmt_end(c, 1, b2), e->stalls,
			       e->stalls ? fmt_end(c, i, b3) : "-",
			       e->stalls ? (i ? "accept" : "connect") : "-", med,
			       e->stalls ? opt.ack_ms + opt.rtt_ms + opt.proc_us / 1000.0 : 0.0);
		}
	}
}

/* ---- options ---- */
static void usage_error(const char *why, const char *arg)
{
	fprintf(stderr, "model: %s%s%s (see the usage comment in tests/wire/model.c)\n", why,
		arg ? ": " : "", arg ? arg : "");
	exit(2);
}

static double num(const char *s, double lo, double hi)
{
	char *endp;
	errno = 0;
	double v = strtod(s, &endp);
	if (errno || endp == s || *endp || v < lo || v > hi) usage_error("bad number", s);
	return v;
}

static int scen_of(const char *s)
{
	for (int i = 0; i < SC_N; i++)
		if (!strcmp(s, scen_names[i])) return i;
	usage_error("unknown scenario", s);
	return -1;
}

static void parse_mix(char *s)
{
	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
		char *colon = strchr(tok, ':');
		if (!colon) usage_error("--mix wants S:W,...", tok);
		*colon = 0;
		opt.mix[scen_of(tok)] = num(colon + 1, 0, 1e9);
	}
	opt.scenario = -1;
}

static void parse_at(const char *s)
{
	if (!strcmp(s, "holder")) opt.at_kind = 0;
	else if (!strcmp(s, "receiver")) opt.at_kind = 1;
	else if (!strcmp(s, "middle")) opt.at_kind = 2, opt.at = 0.5;
	else opt.at_kind = 2, opt.at = num(s, 0, 1);
}

static void parse_pause(const char *s)
{
	char buf[64];
	snprintf(buf, sizeof buf, "%s", s);
	char *colon = strchr(buf, ':');
	if (colon) *colon = 0;
	opt.pause_min = num(buf, 0, 1e6);
	opt.pause_max = colon ? num(colon + 1, opt.pause_min, 1e6) : opt.pause_min;
}

static void defaults(void)
{
	opt.rtt_ms = 20, opt.ack_ms = 40, opt.gap_ms = 1, opt.read_pause_ms = -1;
	opt.rounds = 10, opt.conns = 1, opt.concurrent = 1, opt.w1 = 6, opt.w2 = 7;
	opt.resp = 100, opt.rcvbuf = 65535, opt.bulk_segs = 15, opt.tail = 300, opt.cwnd = 10;
	opt.proc_us = 15, opt.snaplen = 65535, opt.truth_conns = true, opt.scenario = SC_SPLIT;
	opt.pause_min = opt.pause_max = 50;
	opt.only = -1;
}

static void parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "scenario", 1, 0, 'S' }, { "rtt", 1, 0, 'r' }, { "ack-timer", 1, 0, 'a' },
		{ "at", 1, 0, 'A' }, { "rounds", 1, 0, 'n' }, { "conns", 1, 0, 'c' },
		{ "concurrent", 1, 0, 'C' }, { "mix", 1, 0, 'x' }, { "w1", 1, 0, '1' },
		{ "w2", 1, 0, '2' }, { "resp", 1, 0, 'R' }, { "think", 1, 0, 't' },
		{ "pause", 1, 0, 'p' }, { "gap", 1, 0, 'g' }, { "read-pause", 1, 0, 'P' },
		{ "rcvbuf", 1, 0, 'b' }, { "bulk-segs", 1, 0, 'B' }, { "tail", 1, 0, 'T' },
		{ "cwnd", 1, 0, 'w' }, { "lose-every", 1, 0, 'L' }, { "nodelay", 0, 0, 'N' },
		{ "quickack", 0, 0, 'Q' }, { "quick", 1, 0, 'q' }, { "proc-us", 1, 0, 'u' },
		{ "mid", 0, 0, 'M' }, { "isn-wrap", 0, 0, 'W' }, { "ipv6", 0, 0, '6' },
		{ "link", 1, 0, 'l' }, { "format", 1, 0, 'f' }, { "nsec", 0, 0, 'z' },
		{ "big-endian", 0, 0, 'E' }, { "snaplen", 1, 0, 's' }, { "mss", 1, 0, 'm' },
		{ "seed", 1, 0, 'e' }, { "only", 1, 0, 'O' }, { "truth", 1, 0, 'h' }, { 0, 0, 0, 0 },
	};
	int ch;
	defaults();
	while ((ch = getopt_long(argc, argv, "o:", lo, NULL)) != -1) {
		switch (ch) {
		case 'o': opt.out = optarg; break;
		case 'S': opt.scenario = scen_of(optarg); break;
		case 'r': opt.rtt_ms = num(optarg, 0, 10000); break;
		case 'a': opt.ack_ms = num(optarg, 0, 10000); break;
		case 'A': parse_at(optarg); break;
		case 'n': opt.rounds = (uint32_t)num(optarg, 1, 1e6); break;
		case 'c': opt.conns = (uint32_t)num(optarg, 1, 1e7); break;
		case 'C': opt.concurrent = (uint32_t)num(optarg, 1, 1e7); break;
		case 'x': parse_mix(optarg); break;
		case '1': opt.w1 = (uint32_t)num(optarg, 1, 1e6); break;
		case '2': opt.w2 = (uint32_t)num(optarg, 1, 1e6); break;
		case 'R': opt.resp = (uint32_t)num(optarg, 1, 1e7); break;
		case 't': opt.think_ms = num(optarg, 0, 1e6); break;
		case 'p': parse_pause(optarg); break;
		case 'g': opt.gap_ms = num(optarg, 0, 1e6); break;
		case 'P': opt.read_pause_ms = num(optarg, 0.001, 1e6); break;
		case 'b': opt.rcvbuf = (uint32_t)num(optarg, 1, 65535); break;
		case 'B': opt.bulk_segs = (uint32_t)num(optarg, 0, 1e4); break;
		case 'T': opt.tail = (uint32_t)num(optarg, 1, 1e4); break;
		case 'w': opt.cwnd = (uint32_t)num(optarg, 1, 1e4); break;
		case 'L': opt.lose_every = (uint32_t)num(optarg, 1, 1e6); break;
		case 'N': opt.nodelay = true; break;
		case 'Q': opt.quickack = true; break;
		case 'q': opt.quick = (uint32_t)num(optarg, 0, 1e6); break;
		case 'u': opt.proc_us = (uint32_t)num(optarg, 0, 1e7); break;
		case 'M': opt.mid = true; break;
		case 'W': opt.isn_wrap = true; break;
		case '6': opt.ipv6 = true; break;
		case 'l':
			if (strcmp(optarg, "eth") && strcmp(optarg, "raw")) usage_error("--link eth|raw", optarg);
			opt.raw = !strcmp(optarg, "raw");
			break;
		case 'f':
			if (strcmp(optarg, "pcap") && strcmp(optarg, "pcapng")) usage_error("--format pcap|pcapng", optarg);
			opt.pcapng = !strcmp(optarg, "pcapng");
			break;
		case 'z': opt.nsec = true; break;
		case 'E': opt.big = true; break;
		case 's': opt.snaplen = (uint32_t)num(optarg, 54, 65535); break;
		case 'm': opt.mss = (uint32_t)num(optarg, 88, 65000); break;
		case 'O':
			if (strcmp(optarg, "client") && strcmp(optarg, "server")) usage_error("--only client|server", optarg);
			opt.only = !strcmp(optarg, "server");
			break;
		case 'e': opt.seed = (uint64_t)num(optarg, 0, 1e18); break;
		case 'h':
			if (strcmp(optarg, "conns") && strcmp(optarg, "summary")) usage_error("--truth conns|summary", optarg);
			opt.truth_conns = !strcmp(optarg, "conns");
			break;
		default: usage_error("bad option", NULL);
		}
	}
	if (optind < argc) usage_error("unexpected argument", argv[optind]);
	if (!opt.out) usage_error("-o FILE is required", NULL);
	if (!opt.mss) opt.mss = opt.ipv6 ? 1440 : 1460;
	if (opt.read_pause_ms < 0) opt.read_pause_ms = opt.ack_ms;
	if (opt.pcapng && opt.big) usage_error("--big-endian is for pcap", NULL);
	if (opt.seed) rng_state ^= opt.seed * 0x9E3779B97F4A7C15ull;
}

int main(int argc, char **argv)
{
	parse(argc, argv);
	out = !strcmp(opt.out, "-") ? stdout : fopen(opt.out, "wb");
	if (!out) {
		fprintf(stderr, "model: %s: %s\n", opt.out, strerror(errno));
		return 1;
	}
	static char buf[1 << 20];
	setvbuf(out, buf, _IOFBF, sizeof buf);
	conns = calloc(opt.conns, sizeof *conns);
	if (!conns) { perror("model"); return 1; }
	write_header();
	uint32_t first = opt.concurrent < opt.conns ? opt.concurrent : opt.conns;
	/* the first ones spread over 100 ms, so their rounds do not all meet */
	for (started = 0; started < first; started++)
		schedule(first > 1 ? (uint64_t)(rng() % (100 * MS)) : 0, started, EV_START, 0);
	while (events.n) {
		struct ev v = heap_pop(&events);
		now = v.t;
		if (now > 100000 * 1000 * MS) { /* a bug of the model, not a capture */
			fprintf(stderr, "model: still running at 100,000 s of capture time\n");
			return 1;
		}
		flush_records(now);
		dispatch(&v);
	}
	flush_records(UINT64_MAX);
	if (fflush(out) || (out != stdout && fclose(out))) {
		fprintf(stderr, "model: %s: %s\n", opt.out, strerror(errno));
		return 1;
	}
	uint64_t stalling = 0, stalls = 0;
	truth(&stalling, &stalls);
	printf("summary conns=%u packets=%llu stalling_conns=%llu stalls=%llu peak_live=%u "
	       "seconds=%.3f\n", finished, (unsigned long long)packets_written,
	       (unsigned long long)stalling, (unsigned long long)stalls, peak_live,
	       (double)now / 1e9);
	return 0;
}
