/*
 * detect.c - the Nagle x delayed-ACK signature, read on each direction
 * of a connection as its segments come (nf_wire.h says the signature),
 * and the detector's loop over segments: each one's connection found in
 * the table's index (a look-ahead asks the cache for it first), then its
 * signature, all in one function body (the loop runs on every segment
 * of a scan: no call between the two halves, its common flags known).
 *
 * A direction's sender H goes ST_NONE -> ST_HELD when it sends a small
 * segment S1; -> ST_ACKED when the first ACK of S1 from the other end R
 * is a pure ACK that came late (an ACK timer, beyond R's round trip);
 * and then H's next new segment S2, small, contiguous and tied to that
 * ACK, is a stall. Anything else in between sends it back to ST_NONE: a
 * prompt ACK, an ACK carrying R's data, R's data at all (a slow server
 * answering, not a timer), a zero window from R, a retransmission by H.
 *
 * A stall counts at once when R had sent data before S1 (S1 and S2 are
 * an answer), else when R next sends data or its FIN before H sends
 * more: a one-way sender whose pauses end just after R's ACKs is never
 * answered, so its look-alike stalls are dropped. When H's round trip is
 * not known yet (no handshake captured, H seen reacting to nothing), S2
 * within NF_TIE_WAIT_US of the ACK waits too, for H's first reaction to
 * R's data: tied by that round trip, it counts.
 */
#include "wire_int.h"

#include <string.h>
#include <sys/socket.h>

#include "nf_tcp.h"

#define NF_TIE_WAIT_US 1000000u /* the longest S2 after the ACK waiting for H's round trip */

/* A direction's state, and the same with another state. */
static inline unsigned state_of(const struct dir *d)
{
	return d->f & DF_STATE;
}

static inline void set_state(struct dir *d, unsigned st)
{
	d->f = (uint16_t)((d->f & ~DF_STATE) | st);
}

/* Is a payload of len bytes, from direction i of c, smaller than what
 * its sender H may send in one segment? The smaller of the two SYNs' MSS
 * (R's is the most H may send; H's own is what its path takes, as stacks
 * send no more than they advertise: a server that said 1380 to a client
 * that said 1460 sends 1380 a segment, full; unless H was seen sending
 * more than its own), less 40 bytes of options; with no SYN seen, the
 * largest payload seen, but never below NF_TCP_MSS_DEFAULT (536). */
static inline __attribute__((always_inline)) int is_small(const struct conn *c, int i, uint32_t len)
{
	const struct dir *h = &c->d[i];
	uint32_t mss = h->mss, own = c->d[!i].mss;
	uint32_t full;

	if (own && (!mss || own < mss) && h->max_len <= own && len <= own)
		mss = own;
	full = mss > 40 ? mss - 40u : h->max_len;

	if (full < NF_TCP_MSS_DEFAULT)
		full = NF_TCP_MSS_DEFAULT;
	return len < full;
}

/* Is the segment of signature sig a second copy of the one d saw last,
 * within a millisecond (a capture on "any" or on lo, where a segment can
 * be seen going and coming)? Remembers it for the next time. */
static int duplicate(struct dir *d, uint32_t sig, uint32_t now)
{
	int dup = d->dup_sig == sig && (d->f & DF_SEEN) && (uint32_t)(now - d->dup_us) < 1000;

	d->dup_sig = sig;
	d->dup_us = now;
	d->f |= DF_SEEN;
	return dup;
}

/* The time of R's ACK of H's S1 as H met it, now: its copy nearest now,
 * R's newest segment if that came later (h->ack_us is the first copy):
 * two captures (a veth's two ends) see it leave R and then reach H,
 * milliseconds apart when the receiving stack runs late, and H reacts to
 * the latter. */
static uint32_t nearest_ack(const struct dir *h, const struct dir *r, uint32_t now)
{
	return (uint32_t)(now - r->dup_us) < (uint32_t)(now - h->ack_us) ? r->dup_us : h->ack_us;
}

/* A stall of H (direction i) found at S2, p: counted, or kept until R
 * answers and, untied, until H's round trip is known (S2's time becomes
 * H's data_us as own_data goes on, and stays it while the stall waits:
 * H's next data ends the wait first). An untied stall keeps how much
 * later than the ACK its copy nearest S2 came (tied()'s), which
 * tie_known() will time it from; the stall's ack_ns stays the first. */
static void found(struct nf_wire *w, struct conn *c, int i, const struct nf_seg *p, uint32_t now,
		  int untied)
{
	struct dir *h = &c->d[i];
	struct dir_aside *a = &c->a[i];
	uint32_t lag;
	struct nf_stall s = {
		.start_ns = w->now_ns - (uint64_t)(uint32_t)(now - h->data_us) * 1000,
		.ack_ns = w->now_ns - (uint64_t)(uint32_t)(now - h->ack_us) * 1000,
		.end_ns = w->now_ns,
		.size1 = h->s1_len,
		.size2 = p->len,
	};

	if ((h->f & DF_S1_HEARD) && !untied) {
		nf_wire_row_stall(w, c, i, &s);
		return;
	}
	h->f = (uint16_t)((h->f & ~(DF_PEND_ANSWERED | DF_PEND_UNTIED)) | DF_PEND |
			  (h->f & DF_S1_HEARD ? DF_PEND_ANSWERED : 0) | (untied ? DF_PEND_UNTIED : 0));
	a->pend_start_us = h->data_us;
	a->pend_ack_us = h->ack_us;
	lag = untied ? nearest_ack(h, &c->d[!i], now) - h->ack_us : 0;
	c->tie_lag_us[i] = lag > 0xffff ? 0xffff : (uint16_t)lag;
	a->pend_size1 = h->s1_len > 0xffff ? 0xffff : (uint16_t)h->s1_len;
	a->pend_size2 = p->len > 0xffff ? 0xffff : (uint16_t)p->len;
}

/* R answered (data or FIN): H's waiting stall counts. */
static void confirm(struct nf_wire *w, struct conn *c, int i, uint32_t now)
{
	struct dir *h = &c->d[i];
	const struct dir_aside *a = &c->a[i];
	struct nf_stall s = {
		.start_ns = w->now_ns - (uint64_t)(uint32_t)(now - a->pend_start_us) * 1000,
		.ack_ns = w->now_ns - (uint64_t)(uint32_t)(now - a->pend_ack_us) * 1000,
		.end_ns = w->now_ns - (uint64_t)(uint32_t)(now - h->data_us) * 1000,
		.size1 = a->pend_size1,
		.size2 = a->pend_size2,
	};

	h->f &= (uint16_t)~DF_PEND;
	nf_wire_row_stall(w, c, i, &s);
}

/* The handshake: which end opened, the MSS each may send, listeners. A
 * new SYN on a connection that had other numbers starts it over. */
static void handshake(struct nf_wire *w, struct conn *c, int i, const struct nf_seg *p,
		      const struct nf_seg_more *more)
{
	struct dir *me = &c->d[i];

	if (!(p->flags & NF_TCP_ACK)) {
		if ((me->f & DF_HAS_NXT) && p->seq + 1 != me->nxt) {
			memset(c->d, 0, sizeof(c->d)); /* the rows (c->a) stay */
			me->f = DF_SEEN;
		}
		c->client = (uint8_t)i;
	} else {
		c->client = (uint8_t)!i;
		nf_wire_listen_add(w, &c->ends[i]);
	}
	if (more->mss)
		c->d[!i].mss = more->mss;
}

/* Is a gap from R's ACK to S2 within the floor plus 1.5 of H's round
 * trips from the capture point (0 near H, one RTT near R)? */
static int within_tie(const struct dir *h, uint32_t gap, uint32_t floor_us)
{
	return gap <= floor_us + h->rtt_us + h->rtt_us / 2;
}

/* Is S2, now, tied to R's ACK (its copy nearest S2): 1 yes, 0 no, 2 not
 * known until H's round trip is (none seen yet, and S2 within
 * NF_TIE_WAIT_US). */
static int tied(const struct dir *h, const struct dir *r, uint32_t now, uint32_t floor_us)
{
	uint32_t gap = now - nearest_ack(h, r, now);

	if (within_tie(h, gap, floor_us))
		return 1;
	return !h->rtt_us && gap <= NF_TIE_WAIT_US ? 2 : 0;
}

/* H's round trip is now known: its stall waiting for it is tied, and
 * counts if R answered; or it is not, and is dropped. found() keeps a
 * lag over 65,535 us as 65,535: the gap here is then longer than
 * tied()'s would be, and the tie stricter. */
static void tie_known(struct nf_wire *w, struct conn *c, int i)
{
	struct dir *h = &c->d[i];

	h->f &= (uint16_t)~DF_PEND_UNTIED;
	if (!within_tie(h, h->data_us - c->a[i].pend_ack_us - c->tie_lag_us[i], w->tie_floor_us))
		h->f &= (uint16_t)~DF_PEND;
	else if (h->f & DF_PEND_ANSWERED)
		confirm(w, c, i, nf_us(w->now_ns));
}

/* p, from the end of direction i (R here), may acknowledge the other
 * direction's data (H's): its reaction time, and H's S1. */
static inline __attribute__((always_inline)) void peer_ack(struct nf_wire *w, struct conn *c,
							   int i, const struct nf_seg *p,
							   uint32_t now, uint8_t flags)
{
	struct dir *r = &c->d[i], *h = &c->d[!i];

	if (state_of(h) == ST_HELD && !nf_seq_lt(p->ack, h->nxt)) {
		int late = (uint32_t)(now - h->data_us) >= w->delack_us + r->rtt_us;

		if (late && p->len == 0 && !(flags & (NF_TCP_SYN | NF_TCP_FIN | NF_TCP_RST))) {
			set_state(h, ST_ACKED);
			h->ack_us = now;
		} else {
			set_state(h, ST_NONE);
		}
	}
	if ((h->f & DF_DATA_WAIT) && !nf_seq_lt(p->ack, h->data_end)) {
		uint32_t rt = (uint32_t)(now - h->data_us);

		if (rt == 0)
			rt = 1;
		if (!r->rtt_us || rt < r->rtt_us)
			r->rtt_us = rt;
		h->f &= (uint16_t)~DF_DATA_WAIT;
		if ((r->f & (DF_PEND | DF_PEND_UNTIED)) == (DF_PEND | DF_PEND_UNTIED))
			tie_known(w, c, i);
	}
}

/* The data, SYN or FIN of p, from H (direction i): a stall at S2, a new
 * S1, or a retransmission. */
static inline __attribute__((always_inline)) void own_data(struct nf_wire *w, struct conn *c,
							   int i, const struct nf_seg *p,
							   uint32_t now, uint8_t flags)
{
	struct dir *h = &c->d[i];
	uint32_t seglen = p->len + !!(flags & NF_TCP_SYN) + !!(flags & NF_TCP_FIN);
	uint32_t end = p->seq + seglen;
	int small, tie, plain = !(flags & (NF_TCP_SYN | NF_TCP_FIN | NF_TCP_RST));
	unsigned f;

	if (!seglen)
		return;
	if ((h->f & DF_HAS_NXT) && nf_seq_lt(p->seq, h->nxt)) {
		w->st.retransmits += p->len != 0;
		if (nf_seq_lt(h->nxt, end))
			h->nxt = end;
		set_state(h, ST_NONE);
		return;
	}
	small = p->len && (p->len < NF_TCP_MSS_DEFAULT || is_small(c, i, p->len)); /* is_small's floor first */
	if (h->f & DF_PEND) { /* R did not answer before H sent more */
		w->st.unanswered++;
		h->f &= (uint16_t)~DF_PEND;
	}
	if (state_of(h) == ST_ACKED && small && plain && p->seq == h->nxt &&
	    (tie = tied(h, &c->d[!i], now, w->tie_floor_us)))
		found(w, c, i, p, now, tie == 2);
	f = h->f & ~(DF_STATE | DF_HEARD);
	if (small && plain) { /* S1: its end and time are nxt and data_us below */
		f = (f & ~DF_S1_HEARD) | ST_HELD | (h->f & DF_HEARD ? DF_S1_HEARD : 0);
		h->s1_len = p->len;
	}
	h->f = (uint16_t)(f | DF_HAS_NXT | DF_DATA_WAIT | (p->len ? DF_HAS_DATA : 0));
	h->nxt = end;
	h->data_end = end;
	h->data_us = now;
	if (p->len > h->max_len)
		h->max_len = p->len;
}

/* What p, from direction i's end, tells of the other direction (H's):
 * its data or a zero window ends H's wait; its data or FIN answers H. */
static inline __attribute__((always_inline)) void peer_acts(struct nf_wire *w, struct conn *c,
							    int i, const struct nf_seg *p,
							    uint32_t now, uint8_t flags)
{
	struct dir *h = &c->d[!i];

	if (p->len)
		h->f = (uint16_t)((h->f & ~DF_STATE) | DF_HEARD);
	else if (p->win == 0 && !(flags & (NF_TCP_SYN | NF_TCP_RST)))
		set_state(h, ST_NONE);
	if ((h->f & DF_PEND) && (p->len || (flags & NF_TCP_FIN))) {
		h->f |= DF_PEND_ANSWERED;
		if (!(h->f & DF_PEND_UNTIED))
			confirm(w, c, !i, now);
	}
}

/* Reads segment p of direction i of c (more: its more, for a SYN). */
static inline __attribute__((always_inline)) void detect(struct nf_wire *w, struct conn *c,
							 int i, const struct nf_seg *p,
							 const struct nf_seg_more *more)
{
	uint32_t now = nf_us(w->now_ns);

	if (duplicate(&c->d[i], p->sig, now)) {
		w->st.duplicates++;
		return;
	}
	c->last_ns = w->now_ns;
	if ((p->flags & (NF_TCP_SYN | NF_TCP_FIN | NF_TCP_RST | NF_TCP_ACK)) == NF_TCP_ACK) {
		/* nearly every segment: its flags as constants, so that the
		 * tests of the others fold away (PSH and the rest count not);
		 * and data or none told once, not at each test of it */
		if (p->len) {
			peer_ack(w, c, i, p, now, NF_TCP_ACK);
			peer_acts(w, c, i, p, now, NF_TCP_ACK);
			own_data(w, c, i, p, now, NF_TCP_ACK);
		} else { /* own_data has nothing to do */
			peer_ack(w, c, i, p, now, NF_TCP_ACK);
			peer_acts(w, c, i, p, now, NF_TCP_ACK);
		}
	} else {
		if (p->flags & NF_TCP_SYN) {
			if (!(p->flags & NF_TCP_ACK) && nf_conn_closed(c))
				nf_wire_reopen(w, c);
			handshake(w, c, i, p, more);
		}
		if (p->flags & NF_TCP_ACK)
			peer_ack(w, c, i, p, now, p->flags);
		peer_acts(w, c, i, p, now, p->flags);
		own_data(w, c, i, p, now, p->flags);
		if (p->flags & NF_TCP_FIN)
			c->d[i].f |= DF_FIN;
		/* here only: a plain ACK neither closes nor reopens, nor sets
		 * a FIN; after this, a connection with both FINs is closed */
		if (((p->flags & NF_TCP_RST) || (c->d[0].f & c->d[1].f & DF_FIN)) &&
		    !nf_conn_closed(c))
			nf_wire_close(w, c);
	}
}

/* ---- the loop: each segment's connection, then its signature --------------- */

/*
 * Where a segment's lookup starts: the index's run from the home of its
 * tag, or from pos, where the look-ahead found the first entry of the
 * run with its tag (or the run's end) and its slot, while the index has
 * not changed since (gen).
 */
struct look {
	uint32_t pos, gen;
	uint32_t slot; /* the entry at pos: its slot, 0 if none */
};

/* The first entry at or after pos, in its run, with tag; or the run's end. */
static inline uint32_t run_find(const struct nf_index *ix, uint32_t tag, uint32_t pos)
{
	uint64_t e;

	while ((e = ix->e[pos]) && (uint32_t)(e >> 32) != tag)
		pos = (pos + 1) & (ix->n - 1);
	return pos;
}

/* The 8 bytes at p. */
static inline uint64_t load64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* Is c the connection of segment s (more: its more)? The two ends' heads
 * (the whole of an IPv4 end: its address's other bytes are zero), then
 * the rest of an IPv6 end's address. */
static inline int is_conn_of(const struct conn *c, const struct nf_seg *s,
			     const struct nf_seg_more *more)
{
	if ((load64(&c->ends[0]) ^ s->head[0]) | (load64(&c->ends[1]) ^ s->head[1]))
		return 0;
	return !(s->bits & NF_SEG_V6) || (memcmp(c->ends[0].addr + 4, more->tail[0], 12) == 0 &&
					  memcmp(c->ends[1].addr + 4, more->tail[1], 12) == 0);
}

/* The connection of segment s, searched for in the index's run from pos;
 * made if new. NULL when no memory is left (counted). Out of line: the
 * look-ahead nearly always found it already. */
static __attribute__((noinline)) struct conn *lookup_run(struct nf_wire *w, const struct nf_seg *s,
							  const struct nf_seg_more *more, uint32_t pos)
{
	const struct nf_index *ix = &w->index;
	uint64_t e;

	for (pos = run_find(ix, s->tag, pos); (e = ix->e[pos]);
	     pos = run_find(ix, s->tag, (pos + 1) & (ix->n - 1))) {
		struct conn *c = nf_slot(w, (uint32_t)e);

		if (is_conn_of(c, s, more))
			return c;
	}
	return nf_wire_add(w, s, more);
}

/* The connection of segment s, whose look l says where to start; made if
 * new. NULL when no memory is left (counted). */
static inline __attribute__((always_inline)) struct conn *lookup(struct nf_wire *w,
								  const struct nf_seg *s,
								  const struct nf_seg_more *more,
								  const struct look *l)
{
	const struct nf_index *ix = &w->index;

	if (l->gen == ix->gen) { /* where the look-ahead found it */
		struct conn *c;

		if (!l->slot)
			return nf_wire_add(w, s, more);
		if (is_conn_of(c = nf_slot(w, l->slot), s, more))
			return c;
		return lookup_run(w, s, more, (l->pos + 1) & (ix->n - 1));
	}
	return lookup_run(w, s, more, nf_index_home(ix, nf_seg_hash(s)));
}

/* A segment, its look known: the clock (never back), the table's upkeep,
 * the connection, the signature. */
static inline __attribute__((always_inline)) void segment(struct nf_wire *w,
							  const struct nf_seg *s,
							  const struct nf_seg_more *more,
							  const struct look *l)
{
	struct conn *c;

	w->now_ns = s->ts_ns > w->now_ns ? s->ts_ns : w->now_ns;
	w->st.packets++;
	if (w->now_ns >= w->expiry_ns)
		nf_wire_expire(w, w->now_ns);
	if ((c = lookup(w, s, more, l)))
		detect(w, c, s->bits & NF_SEG_SRC, s, more);
}

void nf_wire_packet(struct nf_wire *w, const struct nf_pkt *p)
{
	struct look l = { .gen = w->index.gen - 1 }; /* from home */
	struct nf_seg_more more;
	struct nf_seg s;

	if (p->family != AF_INET && p->family != AF_INET6)
		return;
	nf_seg_make(p, &s, &more);
	segment(w, &s, &more, &l);
	nf_wire_rows_due(w);
}

/* Asks the cache for the index entries of segment s. */
static inline void prefetch_index(const struct nf_wire *w, const struct nf_seg *s)
{
	__builtin_prefetch(&w->index.e[nf_index_home(&w->index, nf_seg_hash(s))]);
}

/* Finds where the lookup of segment s will start, in *l, and asks the
 * cache for the connection found there, if any: the two lines every
 * segment reads, and the third for a SYN, FIN or RST. */
static inline void prefetch_conn(const struct nf_wire *w, const struct nf_seg *s, struct look *l)
{
	const struct nf_index *ix = &w->index;
	uint64_t e;

	l->gen = ix->gen;
	l->pos = run_find(ix, s->tag, nf_index_home(ix, nf_seg_hash(s)));
	l->slot = (uint32_t)(e = ix->e[l->pos]);
	if (e) {
		const char *c = (const char *)nf_slot(w, l->slot);

		__builtin_prefetch(c, 1);
		__builtin_prefetch(c + 64, 1);
		__builtin_prefetch(c + 128, 1);
	}
}

/*
 * A software pipeline: while segment i is read, the index entries of
 * segment i + FAR and the connection of segment i + NEAR are on their
 * way from memory, so a large table's lookups overlap instead of
 * waiting in turn. The look-ahead's place in the index is kept for
 * segment i's own lookup, unless the index changed in between.
 */
#define FAR  (NF_WIRE_BATCH / 2)
#define NEAR (NF_WIRE_BATCH / 4)

void nf_wire_segments(struct nf_wire *w, const struct nf_seg *s, const struct nf_seg_more *more,
		      size_t n)
{
	struct look l[NF_WIRE_BATCH];

	for (size_t i = 0; i < n && i < FAR; i++)
		prefetch_index(w, &s[i]);
	for (size_t i = 0; i < n && i < NEAR; i++)
		prefetch_conn(w, &s[i], &l[i]);
	size_t i = 0;

	for (; i + FAR < n; i++) { /* the most of the batch: both stages ahead */
		prefetch_index(w, &s[i + FAR]);
		prefetch_conn(w, &s[i + NEAR], &l[(i + NEAR) % NF_WIRE_BATCH]);
		segment(w, &s[i], &more[i], &l[i % NF_WIRE_BATCH]);
	}
	for (; i < n; i++) {
		if (i + NEAR < n)
			prefetch_conn(w, &s[i + NEAR], &l[(i + NEAR) % NF_WIRE_BATCH]);
		segment(w, &s[i], &more[i], &l[i % NF_WIRE_BATCH]);
	}
	nf_wire_rows_due(w);
}

/* Segments prepared here a batch at a time. */
void nf_wire_packets(struct nf_wire *w, const struct nf_pkt *p, size_t n)
{
	struct nf_seg_more more[64];
	struct nf_seg s[64];

	while (n > 0) {
		size_t k = 0;

		for (; k < 64 && n > 0; p++, n--)
			if (p->family == AF_INET || p->family == AF_INET6) {
				nf_seg_make(p, &s[k], &more[k]);
				k++;
			}
		nf_wire_segments(w, s, more, k);
	}
}
