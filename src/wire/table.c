/*
 * table.c - the detector's table of TCP connections: found by their two
 * ends through the index (index.c), kept in one array that never moves
 * (a slot's index is its name; the array is reserved at once, and only
 * the slots once used take memory), and forgotten oldest first: a live connection
 * after idle_ns without a segment, a closed one (RST, or FIN both ways)
 * closed_ns after it closed. So memory follows the connections alive in
 * the capture, not its length.
 */
#include "wire_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define NF_MS 1000000ull

void nf_wire_opts_default(struct nf_wire_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->delack_min_ns = 10 * NF_MS;
	o->tie_floor_ns = 1 * NF_MS;
	o->idle_ns = 300000 * NF_MS;
	o->closed_ns = 2000 * NF_MS;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#define AHEAD (32u << 10) /* the connections' memory made ready at a time */

void *nf_wire_zalloc(size_t len)
{
	void *p = malloc(len);

	if (p) {
		nf_wire_populate(p, len);
		memset(p, 0, len);
	}
	return p;
}

void nf_wire_populate(void *p, size_t len)
{
	static uintptr_t page;
	uintptr_t a, b;

	if (!page)
		page = (uintptr_t)sysconf(_SC_PAGESIZE);
	a = ((uintptr_t)p + page - 1) & ~(page - 1);
	b = ((uintptr_t)p + len) & ~(page - 1);
	if (b > a)
		madvise((void *)a, b - a, MADV_POPULATE_WRITE);
}

/* Reserves the connections' array: NF_WIRE_SLOTS, or as many as the
 * address space allows down to a 16th of it (a limit on it, ulimit -v).
 * Pages are taken when a slot is first used. 0, or -1. */
static int reserve_slots(struct nf_wire *w)
{
	for (uint32_t n = NF_WIRE_SLOTS; n >= NF_WIRE_SLOTS / 16; n /= 2) {
		void *m = mmap(NULL, (size_t)n * sizeof(struct conn), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (m != MAP_FAILED) {
			w->conns = m;
			w->maxslots = n;
			return 0;
		}
	}
	return -1;
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
	w->due = calloc(NF_WIRE_DUE, sizeof(*w->due));
	if (reserve_slots(w) < 0 || nf_index_init(&w->index, 1024) < 0 || !w->listen || !w->due) {
		nf_wire_free(w);
		return NULL;
	}
	return w;
}

void nf_wire_free(struct nf_wire *w)
{
	if (!w)
		return;
	if (w->conns)
		munmap(w->conns, (size_t)w->maxslots * sizeof(struct conn));
	nf_index_free(&w->index);
	free(w->listen);
	nf_wire_rows_free(w);
	free(w);
}

/* The slot's index + 1 of c. */
static uint32_t index_of(const struct nf_wire *w, const struct conn *c)
{
	(void)w;
	return c->idx;
}

/* The hash of c (nf_wire_prepare's of its segments). */
static uint64_t hash_of(const struct conn *c)
{
	return nf_conn_hash(c->ends[0].addr, c->ends[0].port, c->ends[1].addr, c->ends[1].port);
}

void nf_wire_prepare(const struct nf_pkt *p, struct nf_seg *s, struct nf_seg_more *more)
{
	nf_seg_make(p, s, more);
}

/* A free slot's index + 1, or 0 if none can be made. */
static uint32_t take_slot(struct nf_wire *w)
{
	uint32_t x = w->free_head;

	if (x) {
		w->free_head = nf_slot(w, x)->next;
		return x;
	}
	if (w->nslots == w->maxslots)
		return 0;
	if ((size_t)(w->nslots + 1) * sizeof(struct conn) > w->ready) { /* the next AHEAD bytes */
		size_t end = (size_t)w->maxslots * sizeof(struct conn);

		nf_wire_populate((char *)w->conns + w->ready,
				 end - w->ready < AHEAD ? end - w->ready : AHEAD);
		w->ready += AHEAD;
	}
	return ++w->nslots;
}

static void list_unlink(struct nf_wire *w, struct age_list *l, struct conn *c, uint32_t x)
{
	if (c->prev)
		nf_slot(w, c->prev)->next = c->next;
	else if (l->head == x)
		l->head = c->next;
	if (c->next)
		nf_slot(w, c->next)->prev = c->prev;
	else if (l->tail == x)
		l->tail = c->prev;
	c->prev = c->next = 0;
}

static void list_append(struct nf_wire *w, struct age_list *l, struct conn *c, uint32_t x)
{
	c->prev = l->tail;
	c->next = 0;
	if (l->tail)
		nf_slot(w, l->tail)->next = x;
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
		t = nf_slot(w, w->closed.head)->close_ns + w->o.closed_ns;
	if (w->live.head && queued_ns(nf_slot(w, w->live.head)) + w->o.idle_ns < t)
		t = queued_ns(nf_slot(w, w->live.head)) + w->o.idle_ns;
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
	while ((x = w->closed.head) && (c = nf_slot(w, x))->close_ns + w->o.closed_ns <= now_ns)
		forget(w, c, x);
	while ((x = w->live.head) && queued_ns(c = nf_slot(w, x)) + w->o.idle_ns <= now_ns) {
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

/* A new connection in slot x for segment s (more: its more). */
static struct conn *make_conn(struct nf_wire *w, uint32_t x, const struct nf_seg *s,
			      const struct nf_seg_more *more)
{
	struct conn *c = nf_slot(w, x);

	memset(c, 0, sizeof(*c));
	c->idx = x;
	for (int k = 0; k < 2; k++) {
		memcpy(&c->ends[k], &s->head[k], 8);
		if (s->bits & NF_SEG_V6)
			memcpy(c->ends[k].addr + 4, more->tail[k], 12);
	}
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

struct conn *nf_wire_add(struct nf_wire *w, const struct nf_seg *s, const struct nf_seg_more *more)
{
	uint32_t x = take_slot(w);

	if (x && nf_index_add(&w->index, nf_seg_hash(s), x) == 0)
		return make_conn(w, x, s, more);
	if (x) { /* back to the free list */
		nf_slot(w, x)->next = w->free_head;
		w->free_head = x;
	}
	w->st.dropped_conns++;
	return NULL;
}

/* Where e goes in the listeners' open addressing (its slot, or the
 * empty one where it would be). */
static uint32_t listen_slot(const struct nf_wire *w, const struct nf_end *e)
{
	uint32_t i = (uint32_t)nf_conn_hash(e->addr, e->port, e->addr, e->port) & (LISTEN_MAX - 1);

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
	for (uint32_t i = 0; i < w->nslots; i++) {
		const struct conn *c = &w->conns[i];

		if (!c->used)
			continue;
		s->one_way += one_way(c);
		s->unanswered += pending(c);
	}
}
