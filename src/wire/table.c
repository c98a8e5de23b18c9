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

/* Orders two ends: address bytes, then port. */
static int end_cmp(const struct nf_end *a, const struct nf_end *b)
{
	int r = memcmp(a->addr, b->addr, sizeof(a->addr));

	return r ? r : (int)a->port - (int)b->port;
}

/* Is e the end (family, addr, port) of a segment? */
static int end_is(const struct nf_end *e, int family, const uint8_t *addr, uint16_t port)
{
	return e->port == port && e->family == family && memcmp(e->addr, addr, sizeof(e->addr)) == 0;
}

/*
 * The hash of one end: two products side by side (an IPv4 address is in
 * v[0]'s low half, the port above it, so they cannot cancel out), whose
 * upper bits depend on every bit below them.
 */
static uint64_t end_hash(const uint8_t *addr, uint16_t port)
{
	uint64_t v[2];

	memcpy(v, addr, 16);
	/* (v[1] turned by half: an IPv6 address's last bytes, those that
	 * vary most, meet every bit of its product) */
	return (v[0] ^ (uint64_t)port << 32) * 0x9e3779b97f4a7c15ull ^
	       ((v[1] << 32 | v[1] >> 32) + port) * 0xc2b2ae3d27d4eb4full;
}

/* Of two ends' hashes, in either order: the index takes its upper half.
 * A product's bit depends only on the bits below it: the shift brings the
 * upper half (an IPv6 interface's last bytes) down before the product. */
static uint64_t ends_hash(uint64_t ha, uint64_t hb)
{
	uint64_t s = ha + hb;

	return (s ^ s >> 32) * 0xff51afd7ed558ccdull ^ (ha ^ hb);
}

/* The hash of an unordered pair of ends (the same both ways). */
static uint64_t pair_hash(const struct nf_end *a, const struct nf_end *b)
{
	return ends_hash(end_hash(a->addr, a->port), end_hash(b->addr, b->port));
}

/* ... of a segment's two ends: pair_hash of its connection's. */
static uint64_t pkt_hash(const struct nf_pkt *p)
{
	return ends_hash(end_hash(p->saddr, p->sport), end_hash(p->daddr, p->dport));
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
		t = slot(w, w->closed.head)->last_ns + w->o.closed_ns;
	if (w->live.head && queued_ns(slot(w, w->live.head)) + w->o.idle_ns < t)
		t = queued_ns(slot(w, w->live.head)) + w->o.idle_ns;
	w->expiry_ns = t;
}

void nf_wire_touch(struct nf_wire *w, struct conn *c)
{
	if (!c->closed) /* a closed one stays in closing order */
		c->last_ns = w->now_ns;
}

void nf_wire_close(struct nf_wire *w, struct conn *c)
{
	uint32_t x = index_of(w, c);

	if (c->closed)
		return;
	list_unlink(w, &w->live, c, x);
	c->closed = 1;
	c->last_ns = w->now_ns;
	c->queued_s = queue_time(w->now_ns);
	list_append(w, &w->closed, c, x);
	if (w->closed.head == x)
		next_expiry(w);
}

void nf_wire_reopen(struct nf_wire *w, struct conn *c)
{
	uint32_t x = index_of(w, c);

	if (!c->closed)
		return;
	list_unlink(w, &w->closed, c, x);
	c->closed = 0;
	c->last_ns = w->now_ns;
	c->queued_s = queue_time(w->now_ns);
	list_append(w, &w->live, c, x);
	if (w->live.head == x)
		next_expiry(w);
}

/* Takes c out of the table (its slot to the free list). */
static void forget(struct nf_wire *w, struct conn *c, uint32_t x)
{
	nf_index_del(&w->index, pair_hash(&c->ends[0], &c->ends[1]), x);
	list_unlink(w, c->closed ? &w->closed : &w->live, c, x);
	if ((c->d[0].has_data && !c->d[1].seen) || (c->d[1].has_data && !c->d[0].seen))
		w->st.one_way++;
	w->st.unanswered += c->d[0].pend + c->d[1].pend;
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
	while ((x = w->closed.head) && (c = slot(w, x))->last_ns + w->o.closed_ns <= now_ns)
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

/* A new connection for p in slot x; *dir_out as lookup says. */
static struct conn *make_conn(struct nf_wire *w, uint32_t x, const struct nf_end *src,
			      const struct nf_end *dst, int *dir_out)
{
	struct conn *c = slot(w, x);

	memset(c, 0, sizeof(*c));
	c->idx = x;
	*dir_out = end_cmp(src, dst) > 0;
	c->ends[*dir_out] = *src;
	c->ends[!*dir_out] = *dst;
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
	uint64_t hash;
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

/* The connection of p, whose look l says where to start, made if new
 * (*dir_out: 0 if p's source is ends[0], else 1). NULL when no memory is
 * left (counted). */
static struct conn *lookup(struct nf_wire *w, const struct nf_pkt *p, const struct look *l,
			   int *dir_out)
{
	const struct nf_index *ix = &w->index;
	uint64_t hash = l->hash;
	uint32_t tag = nf_index_tag(hash), x;
	uint32_t pos = l->gen == ix->gen ? l->pos : nf_index_home(ix, hash);
	struct nf_end src, dst;
	uint64_t e;

	for (; (e = ix->e[pos]); pos = (pos + 1) & (ix->n - 1)) {
		struct conn *c;

		if ((uint32_t)(e >> 32) != tag)
			continue;
		c = slot(w, (uint32_t)e);
		for (int i = 0; i < 2; i++)
			if (end_is(&c->ends[i], p->family, p->saddr, p->sport) &&
			    end_is(&c->ends[!i], p->family, p->daddr, p->dport)) {
				*dir_out = i;
				return c;
			}
	}
	set_end(&src, p->family, p->saddr, p->sport);
	set_end(&dst, p->family, p->daddr, p->dport);
	if (!(x = take_slot(w)))
		goto dropped;
	if (nf_index_add(&w->index, hash, x) < 0) {
		slot(w, x)->next = w->free_head; /* back to the free list */
		w->free_head = x;
		goto dropped;
	}
	return make_conn(w, x, &src, &dst, dir_out);
dropped:
	w->st.dropped_conns++;
	return NULL;
}

/* Where e goes in the listeners' open addressing (its slot, or the
 * empty one where it would be). */
static uint32_t listen_slot(const struct nf_wire *w, const struct nf_end *e)
{
	uint32_t i = (uint32_t)pair_hash(e, e) & (LISTEN_MAX - 1);

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
			if ((c->d[0].has_data && !c->d[1].seen) || (c->d[1].has_data && !c->d[0].seen))
				s->one_way++;
			s->unanswered += c->d[0].pend + c->d[1].pend;
		}
}

/* The time of p, never before the newest one seen. */
static uint64_t clock_of(struct nf_wire *w, const struct nf_pkt *p)
{
	if (p->ts_ns > w->now_ns)
		w->now_ns = p->ts_ns;
	return w->now_ns;
}

/* nf_wire_packet, the segment's look known. */
static void packet(struct nf_wire *w, const struct nf_pkt *p, const struct look *l)
{
	struct conn *c;
	int i;

	if (p->family != AF_INET && p->family != AF_INET6)
		return;
	clock_of(w, p);
	w->st.packets++;
	nf_wire_expire(w, w->now_ns);
	if (!(c = lookup(w, p, l, &i)))
		return;
	nf_wire_detect(w, c, i, p);
}

void nf_wire_packet(struct nf_wire *w, const struct nf_pkt *p)
{
	struct look l = { .hash = pkt_hash(p), .gen = w->index.gen - 1 }; /* from home */

	packet(w, p, &l);
}

/* Asks the cache for the index entries of a segment whose hash is h. */
static void prefetch_index(const struct nf_wire *w, uint64_t h)
{
	__builtin_prefetch(&w->index.e[nf_index_home(&w->index, h)]);
}

/* Finds where l's lookup will start and asks the cache for the
 * connection found there, if any (its three lines: a segment reads both
 * directions). */
static void prefetch_conn(const struct nf_wire *w, struct look *l)
{
	const struct nf_index *ix = &w->index;
	uint64_t e;

	l->gen = ix->gen;
	l->pos = run_find(ix, nf_index_tag(l->hash), nf_index_home(ix, l->hash));
	if ((e = ix->e[l->pos])) {
		const char *c = (const char *)slot(w, (uint32_t)e);

		for (size_t off = 0; off < sizeof(struct conn); off += 64)
			__builtin_prefetch(c + off, 1);
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

uint64_t nf_wire_hash(const struct nf_pkt *p)
{
	return pkt_hash(p);
}

void nf_wire_packets(struct nf_wire *w, const struct nf_pkt *p, size_t n)
{
	nf_wire_packets_hashed(w, p, NULL, n);
}

/* Segment i's hash: given, or made here. */
static uint64_t hash_at(const struct nf_pkt *p, const uint64_t *hash, size_t i)
{
	return hash ? hash[i] : pkt_hash(&p[i]);
}

void nf_wire_packets_hashed(struct nf_wire *w, const struct nf_pkt *p, const uint64_t *hash,
			    size_t n)
{
	struct look l[NF_WIRE_BATCH];

	for (size_t i = 0; i < n && i < FAR; i++) {
		l[i].hash = hash_at(p, hash, i);
		prefetch_index(w, l[i].hash);
	}
	for (size_t i = 0; i < n && i < NEAR; i++)
		prefetch_conn(w, &l[i]);
	for (size_t i = 0; i < n; i++) {
		if (i + FAR < n) {
			struct look *f = &l[(i + FAR) % NF_WIRE_BATCH];

			f->hash = hash_at(p, hash, i + FAR);
			prefetch_index(w, f->hash);
		}
		if (i + NEAR < n)
			prefetch_conn(w, &l[(i + NEAR) % NF_WIRE_BATCH]);
		packet(w, &p[i], &l[i % NF_WIRE_BATCH]);
	}
}
