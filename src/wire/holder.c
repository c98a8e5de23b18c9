/*
 * holder.c - the rows of findings: each end that held, with the end it
 * waited on, its stalls counted, their median kept from a sample, the
 * sizes of its most frequent stall, and how its side was told.
 *
 * A row is keyed by side and the two ends, less the port that varies: a
 * client's own port (its next connection has another), a server's
 * client's port. So a client that opens a connection a request is one
 * row, and memory follows the distinct pairs of hosts and services, not
 * the connections.
 */
#include "wire_int.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Which end of c accepted it when no handshake was seen: 0 or 1. The
 * end seen accepting other connections; else the port under 1024 facing
 * one above; else the one outside Linux's ephemeral range facing one in
 * it; else the lower port. *how says which. */
static int guess_server(const struct nf_wire *w, const struct conn *c, uint8_t *how)
{
	uint16_t p0 = c->ends[0].port, p1 = c->ends[1].port;

	*how = NF_SIDE_LISTENER;
	if (nf_wire_listen_has(w, &c->ends[0]) != nf_wire_listen_has(w, &c->ends[1]))
		return nf_wire_listen_has(w, &c->ends[1]);
	*how = NF_SIDE_PORTS;
	if ((p0 < 1024) != (p1 < 1024))
		return p1 < 1024;
	if ((p0 >= 32768) != (p1 >= 32768))
		return p1 < 32768;
	return p1 < p0;
}

/* The side of the end of direction i, and how it was told. */
static uint8_t side_of(const struct nf_wire *w, const struct conn *c, int i, uint8_t *how)
{
	if (c->client < 2) {
		*how = NF_SIDE_SYN;
		return c->client == i ? NF_WIRE_CONNECT : NF_WIRE_ACCEPT;
	}
	return guess_server(w, c, how) == i ? NF_WIRE_ACCEPT : NF_WIRE_CONNECT;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static uint32_t row_hash(uint8_t side, const struct nf_end *self, const struct nf_end *peer)
{
	uint64_t v[4], h = side;

	memcpy(v, self->addr, 16);
	memcpy(v + 2, peer->addr, 16);
	for (int k = 0; k < 4; k++)
		h = mix(h, v[k]);
	h = mix(h, (uint64_t)self->port << 16 | peer->port);
	return (uint32_t)h;
}

/* The key ends of a row: the side's varying port zeroed. */
static void row_key(uint8_t side, const struct nf_end *self, const struct nf_end *peer,
		    struct nf_end *kself, struct nf_end *kpeer)
{
	*kself = *self;
	*kpeer = *peer;
	if (side == NF_WIRE_CONNECT)
		kself->port = 0;
	else
		kpeer->port = 0;
}

static int row_is(const struct nf_holder *r, uint8_t side, const struct nf_end *kself,
		  const struct nf_end *kpeer)
{
	struct nf_end s, p;

	if (r->side != side)
		return 0;
	row_key(side, &r->self, &r->peer, &s, &p);
	return nf_end_eq(&s, kself) && nf_end_eq(&p, kpeer);
}

/* A bucket of the rows' index: the row's hash above its number + 1, so
 * that a probe reads a row only where the hash matches. */
static uint64_t bucket(uint32_t hash, uint32_t x)
{
	return (uint64_t)hash << 32 | x;
}

/* Doubles the rows' index; 0, or -1 on no memory. */
static int grow_index(struct nf_wire *w)
{
	uint32_t n = w->nrbuckets ? w->nrbuckets * 2 : 64;
	uint64_t *b = calloc(n, sizeof(*b));

	if (!b)
		return -1;
	for (uint32_t k = 0; k < w->nrows; k++) {
		struct nf_holder *r = w->rows[k];
		struct nf_end s, p;
		uint32_t hash, h;

		row_key(r->side, &r->self, &r->peer, &s, &p);
		hash = row_hash(r->side, &s, &p);
		for (h = hash & (n - 1); b[h]; h = (h + 1) & (n - 1))
			;
		b[h] = bucket(hash, k + 1);
	}
	free(w->rbucket);
	w->rbucket = b;
	w->nrbuckets = n;
	return 0;
}

/* A new row; its number + 1, 0 on no memory or at NF_WIRE_ROWS_MAX. */
/* Rows are malloc'ed in blocks: row k starts one of block(k) rows
 * where k is 0 or a power of two up to ROW_BLOCK, and then every
 * ROW_BLOCK. A block's pages are taken in at once (a page fault
 * costs more than a call that takes eleven: nf_wire_populate). */
#define ROW_BLOCK 64

static uint32_t block(uint32_t k)
{
	return k == 0 ? 1 : k < ROW_BLOCK ? k : ROW_BLOCK;
}

/* Memory for row w->nrows, zero: a new block's first, or the next of
 * its block. NULL if none. */
static struct nf_holder *row_mem(struct nf_wire *w)
{
	uint32_t k = w->nrows, first = k < ROW_BLOCK ? (k ? 1u << (31 - __builtin_clz(k)) : 0)
						    : k / ROW_BLOCK * ROW_BLOCK;

	if (first != k)
		return w->rows[first] + (k - first);
	return nf_wire_zalloc(block(k) * sizeof(struct nf_holder));
}

static uint32_t new_row(struct nf_wire *w, uint8_t side, uint8_t how, const struct nf_end *self,
			const struct nf_end *peer)
{
	struct nf_holder *r;

	if (w->nrows >= NF_WIRE_ROWS_MAX)
		return 0;
	if (w->nrows == w->caprows) {
		uint32_t n = w->caprows ? w->caprows * 2 : 16;
		struct nf_holder **rows = realloc(w->rows, n * sizeof(*rows));

		if (!rows)
			return 0;
		w->rows = rows;
		w->caprows = n;
	}
	if (!(r = row_mem(w)))
		return 0;
	r->self = *self;
	r->peer = *peer;
	r->side = side;
	r->side_how = how;
	r->rng = 0x2545f4914f6cdd1dull ^ w->nrows;
	w->rows[w->nrows] = r;
	return ++w->nrows;
}

/* The row of the holder at the end of direction i of c, found or made:
 * its number + 1, 0 if it cannot be made. */
static uint32_t row_of(struct nf_wire *w, const struct conn *c, int i)
{
	uint8_t how, side = side_of(w, c, i, &how);
	struct nf_end ks, kp;
	uint32_t hash, h, x;
	uint64_t e;

	row_key(side, &c->ends[i], &c->ends[!i], &ks, &kp);
	if ((w->nrows + 1) * 2 > w->nrbuckets && grow_index(w) < 0)
		return 0;
	hash = row_hash(side, &ks, &kp);
	for (h = hash & (w->nrbuckets - 1); (e = w->rbucket[h]); h = (h + 1) & (w->nrbuckets - 1))
		if ((uint32_t)(e >> 32) == hash && row_is(w->rows[(uint32_t)e - 1], side, &ks, &kp))
			return (uint32_t)e;
	if (!(x = new_row(w, side, how, &c->ends[i], &c->ends[!i])))
		return 0;
	w->rbucket[h] = bucket(hash, x);
	return x;
}

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Adds the stall of ms to r's counts and sample. */
static void add(struct nf_holder *r, const struct nf_stall *s)
{
	double ms = (double)(s->end_ns - s->start_ns) / 1e6;

	if (r->stalls++ == 0)
		r->first_ns = s->start_ns;
	r->last_ns = s->start_ns;
	r->total_ms += ms;
	r->ack_total_ms += (double)(s->ack_ns - s->start_ns) / 1e6;
	if (r->nsamples < NF_HOLDER_SAMPLES) {
		r->samples[r->nsamples++] = (float)ms;
	} else {
		uint64_t j = next_rand(&r->rng) % r->stalls;

		if (j < NF_HOLDER_SAMPLES)
			r->samples[j] = (float)ms;
	}
	if (r->size_votes == 0) {
		r->size1 = s->size1;
		r->size2 = s->size2;
	}
	r->size_votes += r->size1 == s->size1 && r->size2 == s->size2 ? 1 : -1u;
}

/* Counts stall d in its row; the callbacks. */
static void count(struct nf_wire *w, const struct row_due *d)
{
	struct nf_holder *r = w->rows[d->row - 1];

	r->conns += d->joined;
	add(r, &d->s);
	if (r->stalls == 1 && w->o.on_first)
		w->o.on_first(w->o.arg, r, &d->s);
	else if (d->joined && w->o.on_conn)
		w->o.on_conn(w->o.arg, r, &d->s, &d->self, &d->peer);
	if (w->o.on_stall)
		w->o.on_stall(w->o.arg, r, &d->s, &d->self, &d->peer);
}

void nf_wire_rows_due(struct nf_wire *w)
{
	for (uint32_t k = 0; k < w->ndue; k++) {
		const char *r = (const char *)w->rows[w->due[k].row - 1];

		/* what add() reads and writes: the counts and the samples */
		for (size_t b = offsetof(struct nf_holder, stalls);
		     b < offsetof(struct nf_holder, samples) + sizeof(float) * NF_HOLDER_SAMPLES; b += 64)
			__builtin_prefetch(r + b, 1);
	}
	for (uint32_t k = 0; k < w->ndue; k++)
		count(w, &w->due[k]);
	w->ndue = 0;
}

void nf_wire_row_stall(struct nf_wire *w, struct conn *c, int i, const struct nf_stall *s)
{
	uint32_t x = c->a[i].row ? c->a[i].row : row_of(w, c, i);
	struct row_due *d;

	if (!x) {
		w->st.unrowed++;
		return;
	}
	if (w->ndue == NF_WIRE_DUE)
		nf_wire_rows_due(w);
	d = &w->due[w->ndue++];
	d->row = x;
	d->joined = !c->a[i].row;
	d->s = *s;
	if (w->o.on_conn || w->o.on_stall) { /* only they read the ends (count) */
		d->self = c->ends[i];
		d->peer = c->ends[!i];
	}
	c->a[i].row = x;
}

static int by_total(const void *a, const void *b)
{
	const struct nf_holder *x = *(struct nf_holder *const *)a, *y = *(struct nf_holder *const *)b;

	if (x->total_ms != y->total_ms)
		return x->total_ms < y->total_ms ? 1 : -1;
	return x->first_ns < y->first_ns ? -1 : x->first_ns > y->first_ns;
}

size_t nf_wire_holders(struct nf_wire *w, struct nf_holder *const **out)
{
	struct nf_holder **s = realloc(w->sorted, (w->nrows ? w->nrows : 1) * sizeof(*s));

	if (!s) {
		*out = w->rows;
		return w->nrows;
	}
	if (w->nrows) /* no rows yet: w->rows is NULL, which memcpy may not be given */
		memcpy(s, w->rows, w->nrows * sizeof(*s));
	qsort(s, w->nrows, sizeof(*s), by_total);
	w->sorted = s;
	*out = s;
	return w->nrows;
}

/* v[0..n) in ascending order: an insertion sort, as n is at most
 * NF_HOLDER_SAMPLES (qsort's call a comparison made the medians of a
 * table of 2,813 rows 2% of a scan's instructions). */
static void sort_samples(float *v, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++) {
		float x = v[i];
		uint32_t j = i;

		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

double nf_holder_median_ms(const struct nf_holder *h)
{
	float v[NF_HOLDER_SAMPLES];
	uint32_t n = h->nsamples;

	if (n == 0)
		return 0;
	memcpy(v, h->samples, n * sizeof(*v));
	sort_samples(v, n);
	return n % 2 ? v[n / 2] : ((double)v[n / 2 - 1] + v[n / 2]) / 2;
}

void nf_wire_rows_free(struct nf_wire *w)
{
	for (uint32_t k = 0; k < w->nrows; k += block(k))
		free(w->rows[k]);
	free(w->rows);
	free(w->rbucket);
	free(w->sorted);
	free(w->due);
	w->due = NULL;
	w->ndue = 0;
	w->rows = w->sorted = NULL;
	w->rbucket = NULL;
	w->nrows = w->caprows = w->nrbuckets = 0;
}
