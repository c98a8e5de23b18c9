/*
 * table.c - the detector's table of TCP connections: found by their two
 * ends through the index (index.c), kept in chunks that never move (a
 * slot's index is its name), and forgotten oldest first: a live connection
 * after idle_ns without a segment, a closed one (RST, or FIN both ways)
 * closed_ns after it closed. So memory follows the connections alive in
 * the capture, not its length.
 */
#include "wire_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define NF_MS 1000000ull

void nf_wire_opts_default(struct nf_wire_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->delack_min_ns = 10 * NF_MS;
	o->tie_floor_ns = 1 * NF_MS;
	o->idle_ns = 300000 * NF_MS;
	o->closed_ns = 2000 * NF_MS;
}

struct nf_wire *nf_wire_new(const struct nf_wire_opts *o)
{
	struct nf_wire *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	if (o)
		w->o = *o;
	else
		nf_wire_opts_default(&w->o);
	w->expiry_ns = UINT64_MAX;
	w->delack_us = (uint32_t)(w->o.delack_min_ns / 1000);
	w->tie_floor_us = (uint32_t)(w->o.tie_floor_ns / 1000);
	w->listen = calloc(LISTEN_MAX, sizeof(*w->listen));
	if (nf_index_init(&w->index, 1024) < 0 || !w->listen) {
		nf_wire_free(w);
		return NULL;
	}
	return w;
}

void nf_wire_free(struct nf_wire *w)
{
	if (!w)
		return;
	for (uint32_t i = 0; i < w->nchunks; i++)
		free(w->chunk[i]);
	nf_index_free(&w->index);
	free(w->listen);
	nf_wire_rows_free(w);
	free(w);
}

static struct conn *slot(const struct nf_wire *w, uint32_t idx1)
{
	uint32_t i = idx1 - 1;

	return &w->chunk[i >> CHUNK_SHIFT][i & (CHUNK_LEN - 1)];
}

/* The slot's index + 1 of c. */
static uint32_t index_of(const struct nf_wire *w, const struct conn *c)
{
	(void)w;
	return c->idx;
}

static inline uint64_t rotl32(uint64_t v)
{
	return v << 32 | v >> 32;
}

/*
 * The hash of a connection from its two ends, the lower first. Each
 * 8-byte half of the higher address turned by half (an IPv4 address is
 * in the lower 4 bytes: the two cannot cancel out; an IPv6 interface's
 * last bytes, those that vary most, come low), a product for the
 * addresses and one for the rest, folded and mixed so that every bit of
 * the upper half, the index's tag and home, depends on every input bit.
 */
static uint64_t conn_hash(const uint8_t *lo, uint16_t lport, const uint8_t *hi, uint16_t hport)
{
	uint64_t a[2], b[2], h;

	memcpy(a, lo, 16);
	memcpy(b, hi, 16);
	h = (a[0] ^ rotl32(b[0])) * 0x9e3779b97f4a7c15ull +
	    (rotl32(a[1]) ^ b[1] ^ ((uint64_t)lport << 16 | hport)) * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 32;
	h *= 0xff51afd7ed558ccdull;
	return h ^ h >> 29;
}

/* The hash of c (nf_wire_prepare's of its segments). */
static uint64_t hash_of(const struct conn *c)
{
	return conn_hash(c->ends[0].addr, c->ends[0].port, c->ends[1].addr, c->ends[1].port);
}

/* Is p's source the higher of its two ends (end_cmp's order)? Addresses
 * compared as big-endian numbers, 8 bytes at a time. */
static int src_higher(const struct nf_pkt *p)
{
	uint64_t s[2], d[2];

	memcpy(s, p->saddr, 16);
	memcpy(d, p->daddr, 16);
	if (s[0] != d[0])
		return __builtin_bswap64(s[0]) > __builtin_bswap64(d[0]);
	if (s[1] != d[1])
		return __builtin_bswap64(s[1]) > __builtin_bswap64(d[1]);
	return p->sport > p->dport;
}

void nf_wire_prepare(const struct nf_pkt *p, struct nf_wire_pre *pre)
{
	pre->src = (uint32_t)src_higher(p);
	pre->hash = pre->src ? conn_hash(p->daddr, p->dport, p->saddr, p->sport)
			     : conn_hash(p->saddr, p->sport, p->daddr, p->dport);
	pre->sig = nf_wire_seg_sig(p);
}

static void set_end(struct nf_end *e, int family, const uint8_t *addr, uint16_t port)
{
	e->family = (uint8_t)family;
	e->port = port;
	memcpy(e->addr, addr, sizeof(e->addr));
}

/* A free slot's index + 1, or 0 if none can be made. */
static uint32_t take_slot(struct nf_wire *w)
{
	uint32_t x = w->free_head;

	if (x) {
		w->free_head = slot(w, x)->next;
		return x;
	}
	if ((w->nslots >> CHUNK_SHIFT) >= w->nchunks) {
		if (w->nchunks == MAX_CHUNKS)
			return 0;
		w->chunk[w->nchunks] = aligned_alloc(64, CHUNK_LEN * sizeof(struct conn));
		if (!w->chunk[w->nchunks])
			return 0;
		w->nchunks++;
	}
	return ++w->nslots;
}

static void list_unlink(struct nf_wire *w, struct age_list *l, struct conn *c, uint32_t x)
{
	if (c->prev)
		slot(w, c->prev)->next = c->next;
	else if (l->head == x)
		l->head = c->next;
	if (c->next)
		slot(w, c->next)->prev = c->prev;
	else if (l->tail == x)
		l->tail = c->prev;
	c->prev = c->next = 0;
}

static void list_append(struct nf_wire *w, struct age_list *l, struct conn *c, uint32_t x)
{
	c->prev = l->tail;
	c->next = 0;
	if (l->tail)
		slot(w, l->tail)->next = x;
	else
		l->head = x;
	l->tail = x;
}

/* A time as queued_s: its second, rounded up (a connection put back at
 * the end with it cannot come to the head again before its idle time
 * is over: the loop of nf_wire_expire ends). */
static uint32_t queue_time(uint64_t ns)
{
	return (uint32_t)((ns + 999999999u) / 1000000000u);
}

static uint64_t queued_ns(const struct conn *c)
{
	return (uint64_t)c->queued_s * 1000000000u;
}

/* Recomputes when the next connection may expire (the heads' queued_ns
 * plus their timeouts), so that a packet need not look at the heads. */
static void next_expiry(struct nf_wire *w)
{
	uint64_t t = UINT64_MAX;

	if (w->closed.head)
		t = slot(w, w->closed.head)->close_ns + w->o.closed_ns;
	if (w->live.head && queued_ns(slot(w, w->live.head)) + w->o.idle_ns < t)
		t = queued_ns(slot(w, w->live.head)) + w->o.idle_ns;
	w->expiry_ns = t;
}

void nf_wire_close(struct nf_wire *w, struct conn *c)
{
	uint32_t x = index_of(w, c);

	if (nf_conn_closed(c))
		return;
	list_unlink(w, &w->live, c, x);
	c->d[0].f |= DF_CLOSED;
	c->close_ns = w->now_ns;
	c->queued_s = queue_time(w->now_ns);
	list_append(w, &w->closed, c, x);
	if (w->closed.head == x)
		next_expiry(w);
}

void nf_wire_reopen(struct nf_wire *w, struct conn *c)
{
	uint32_t x = index_of(w, c);

	if (!nf_conn_closed(c))
		return;
	list_unlink(w, &w->closed, c, x);
	c->d[0].f &= (uint16_t)~DF_CLOSED;
	c->last_ns = w->now_ns;
	c->queued_s = queue_time(w->now_ns);
	list_append(w, &w->live, c, x);
	if (w->live.head == x)
		next_expiry(w);
}

/* Was c seen one way only: one end's data, nothing of the other? */
static int one_way(const struct conn *c)
{
	unsigned f0 = c->d[0].f, f1 = c->d[1].f;

	return ((f0 & DF_HAS_DATA) && !(f1 & DF_SEEN)) || ((f1 & DF_HAS_DATA) && !(f0 & DF_SEEN));
}

/* c's stalls still waiting for R to answer: 0, 1 or 2. */
static int pending(const struct conn *c)
{
	return !!(c->d[0].f & DF_PEND) + !!(c->d[1].f & DF_PEND);
}

/* Takes c out of the table (its slot to the free list). */
static void forget(struct nf_wire *w, struct conn *c, uint32_t x)
{
	nf_index_del(&w->index, hash_of(c), x);
	list_unlink(w, nf_conn_closed(c) ? &w->closed : &w->live, c, x);
	w->st.one_way += one_way(c);
	w->st.unanswered += pending(c);
	c->used = 0;
	c->next = w->free_head;
	w->free_head = x;
	w->st.live--;
}

void nf_wire_expire(struct nf_wire *w, uint64_t now_ns)
{
	struct conn *c;
	uint32_t x;

	if (now_ns < w->expiry_ns)
		return;
	while ((x = w->closed.head) && (c = slot(w, x))->close_ns + w->o.closed_ns <= now_ns)
		forget(w, c, x);
	while ((x = w->live.head) && queued_ns(c = slot(w, x)) + w->o.idle_ns <= now_ns) {
		if (c->last_ns + w->o.idle_ns <= now_ns) {
			forget(w, c, x);
		} else { /* in use since it was queued: to the end */
			list_unlink(w, &w->live, c, x);
			c->queued_s = queue_time(c->last_ns);
			list_append(w, &w->live, c, x);
		}
	}
	next_expiry(w);
}

/* A new connection in slot x for p, whose source is ends[src]. */
static struct conn *make_conn(struct nf_wire *w, uint32_t x, const struct nf_pkt *p, int src)
{
	struct conn *c = slot(w, x);

	memset(c, 0, sizeof(*c));
	c->idx = x;
	set_end(&c->ends[src], p->family, p->saddr, p->sport);
	set_end(&c->ends[!src], p->family, p->daddr, p->dport);
	c->client = 2;
	c->used = 1;
	c->last_ns = w->now_ns;
	c->queued_s = queue_time(w->now_ns);
	list_append(w, &w->live, c, x);
	if (w->live.head == x)
		next_expiry(w);
	w->st.conns++;
	if (++w->st.live > w->st.peak)
		w->st.peak = w->st.live;
	return c;
}

/*
 * Where a segment's lookup starts: the index's run from the home of its
 * hash, or from pos, where the look-ahead found the first entry of the
 * run with its tag (or the run's end), while the index has not changed
 * since (gen).
 */
struct look {
	uint32_t pos, gen;
};

/* The first entry at or after pos, in its run, with tag; or the run's end. */
static uint32_t run_find(const struct nf_index *ix, uint32_t tag, uint32_t pos)
{
	uint64_t e;

	while ((e = ix->e[pos]) && (uint32_t)(e >> 32) != tag)
		pos = (pos + 1) & (ix->n - 1);
	return pos;
}

/* Is c p's connection, p's source its end src? */
static inline int is_conn_of(const struct conn *c, const struct nf_pkt *p, int src)
{
	const struct nf_end *s = &c->ends[src], *d = &c->ends[!src];

	return s->port == p->sport && d->port == p->dport && s->family == p->family &&
	       memcmp(s->addr, p->saddr, 16) == 0 && memcmp(d->addr, p->daddr, 16) == 0;
}

/* The connection of p, prepared as pre, whose look l says where to start;
 * made if new. NULL when no memory is left (counted). */
static struct conn *lookup(struct nf_wire *w, const struct nf_pkt *p,
			   const struct nf_wire_pre *pre, const struct look *l)
{
	const struct nf_index *ix = &w->index;
	uint32_t tag = nf_index_tag(pre->hash), x;
	uint32_t pos = l->gen == ix->gen ? l->pos : nf_index_home(ix, pre->hash);
	uint64_t e;

	for (; (e = ix->e[pos]); pos = (pos + 1) & (ix->n - 1)) {
		struct conn *c;

		if ((uint32_t)(e >> 32) == tag && is_conn_of(c = slot(w, (uint32_t)e), p, (int)pre->src))
			return c;
	}
	if (!(x = take_slot(w)))
		goto dropped;
	if (nf_index_add(&w->index, pre->hash, x) < 0) {
		slot(w, x)->next = w->free_head; /* back to the free list */
		w->free_head = x;
		goto dropped;
	}
	return make_conn(w, x, p, (int)pre->src);
dropped:
	w->st.dropped_conns++;
	return NULL;
}

/* Where e goes in the listeners' open addressing (its slot, or the
 * empty one where it would be). */
static uint32_t listen_slot(const struct nf_wire *w, const struct nf_end *e)
{
	uint32_t i = (uint32_t)conn_hash(e->addr, e->port, e->addr, e->port) & (LISTEN_MAX - 1);

	while (w->listen[i].port && !nf_end_eq(&w->listen[i], e))
		i = (i + 1) & (LISTEN_MAX - 1);
	return i;
}

void nf_wire_listen_add(struct nf_wire *w, const struct nf_end *e)
{
	uint32_t i;

	if (!e->port || w->nlisten >= LISTEN_MAX / 2)
		return;
	i = listen_slot(w, e);
	if (!w->listen[i].port) {
		w->listen[i] = *e;
		w->nlisten++;
	}
}

int nf_wire_listen_has(const struct nf_wire *w, const struct nf_end *e)
{
	return e->port && w->listen[listen_slot(w, e)].port != 0;
}

void nf_wire_stats(const struct nf_wire *w, struct nf_wire_stats *s)
{
	*s = w->st;
	for (uint32_t k = 0; k < w->nchunks; k++)
		for (uint32_t i = 0; i < CHUNK_LEN && (k << CHUNK_SHIFT) + i < w->nslots; i++) {
			const struct conn *c = &w->chunk[k][i];

			if (!c->used)
				continue;
			s->one_way += one_way(c);
			s->unanswered += pending(c);
		}
}

/* The time of p, never before the newest one seen. */
static uint64_t clock_of(struct nf_wire *w, const struct nf_pkt *p)
{
	if (p->ts_ns > w->now_ns)
		w->now_ns = p->ts_ns;
	return w->now_ns;
}

/* nf_wire_packet, the segment prepared and its look known. */
static void packet(struct nf_wire *w, const struct nf_pkt *p, const struct nf_wire_pre *pre,
		   const struct look *l)
{
	struct conn *c;

	if (p->family != AF_INET && p->family != AF_INET6)
		return;
	clock_of(w, p);
	w->st.packets++;
	nf_wire_expire(w, w->now_ns);
	if ((c = lookup(w, p, pre, l)))
		nf_wire_detect(w, c, (int)pre->src, p, pre->sig);
}

void nf_wire_packet(struct nf_wire *w, const struct nf_pkt *p)
{
	struct look l = { .gen = w->index.gen - 1 }; /* from home */
	struct nf_wire_pre pre;

	nf_wire_prepare(p, &pre);
	packet(w, p, &pre, &l);
}

/* Asks the cache for the index entries of a segment whose hash is h. */
static void prefetch_index(const struct nf_wire *w, uint64_t h)
{
	__builtin_prefetch(&w->index.e[nf_index_home(&w->index, h)]);
}

/* Finds where the lookup of a segment with flags and hash will start, in
 * *l, and asks the cache for the connection found there, if any: the two
 * lines every segment reads, and the third for a SYN, FIN or RST. */
static void prefetch_conn(const struct nf_wire *w, uint8_t flags, uint64_t hash, struct look *l)
{
	const struct nf_index *ix = &w->index;
	uint64_t e;

	l->gen = ix->gen;
	l->pos = run_find(ix, nf_index_tag(hash), nf_index_home(ix, hash));
	if ((e = ix->e[l->pos])) {
		const char *c = (const char *)slot(w, (uint32_t)e);

		__builtin_prefetch(c, 1);
		__builtin_prefetch(c + 64, 1);
		if (flags & (NF_TCP_SYN | NF_TCP_FIN | NF_TCP_RST))
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

void nf_wire_packets_prepared(struct nf_wire *w, const struct nf_pkt *p,
			      const struct nf_wire_pre *pre, size_t n)
{
	struct look l[NF_WIRE_BATCH];

	for (size_t i = 0; i < n && i < FAR; i++)
		prefetch_index(w, pre[i].hash);
	for (size_t i = 0; i < n && i < NEAR; i++)
		prefetch_conn(w, p[i].flags, pre[i].hash, &l[i]);
	for (size_t i = 0; i < n; i++) {
		if (i + FAR < n)
			prefetch_index(w, pre[i + FAR].hash);
		if (i + NEAR < n)
			prefetch_conn(w, p[i + NEAR].flags, pre[i + NEAR].hash,
				      &l[(i + NEAR) % NF_WIRE_BATCH]);
		packet(w, &p[i], &pre[i], &l[i % NF_WIRE_BATCH]);
	}
}

/* Segments prepared here a batch at a time. */
void nf_wire_packets(struct nf_wire *w, const struct nf_pkt *p, size_t n)
{
	struct nf_wire_pre pre[64];

	while (n > 0) {
		size_t k = n < 64 ? n : 64;

		for (size_t i = 0; i < k; i++)
			nf_wire_prepare(&p[i], &pre[i]);
		nf_wire_packets_prepared(w, p, pre, k);
		p += k;
		n -= k;
	}
}
