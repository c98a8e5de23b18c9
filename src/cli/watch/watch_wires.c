/*
 * watch_wires.c - naglefix watch's detectors (watch_int.h): one shared
 * by every capture for all but loopback's segments (a connection between
 * two namespaces is one connection, seen by both: the detector drops the
 * second copy of each segment), and one for each namespace's loopback
 * (127.0.0.1:7000 in one namespace is not in another), made at its
 * first segment, so that an idle namespace costs no detector. Their rows
 * and counts are read together. A namespace's loopback detector outlives
 * the namespace if it found stalls (its rows are in the table at the
 * end), else it is freed with it, its counts kept.
 */
#include <stdlib.h>
#include <string.h>

#include "watch_int.h"

/* A detector for w (ns: a loopback's; NULL: the shared one), listed. */
static struct nf_watch_wire *make(struct nf_watch *w, struct nf_watch_ns *ns)
{
	struct nf_watch_wire *ww;
	const struct nf_wire_opts o = w->wire_opts;

	if (w->nwires == w->capwires) {
		size_t n = w->capwires ? w->capwires * 2 : 8;
		struct nf_watch_wire **a = realloc(w->wires, n * sizeof(*a));

		if (!a)
			return NULL;
		w->wires = a;
		w->capwires = n;
	}
	if (!(ww = calloc(1, sizeof(*ww))))
		return NULL;
	if (!(ww->wire = nf_wire_new(&o))) {
		free(ww);
		return NULL;
	}
	ww->w = w;
	ww->ns = ns;
	if (ns) {
		snprintf(ww->netns, sizeof(ww->netns), "%s", ns->name);
		ww->netns_ino = ns->ino;
	}
	w->wires[w->nwires++] = ww;
	return ww;
}

int nf_watch_wires_open(struct nf_watch *w)
{
	return make(w, NULL) ? 0 : -1;
}

struct nf_watch_wire *nf_watch_wire_of(struct nf_watch *w, struct nf_watch_ns *ns,
				       const struct nf_ring_frame *f)
{
	if (!ns->lo || f->ifindex != (int)ns->lo)
		return w->wires[0];
	if (!ns->lo_wire)
		ns->lo_wire = make(w, ns);
	return ns->lo_wire ? ns->lo_wire : w->wires[0];
}

static void add_stats(struct nf_wire_stats *to, const struct nf_wire_stats *s)
{
	to->packets += s->packets;
	to->duplicates += s->duplicates;
	to->conns += s->conns;
	to->live += s->live;
	to->peak += s->peak;
	to->one_way += s->one_way;
	to->retransmits += s->retransmits;
	to->dropped_conns += s->dropped_conns;
	to->unanswered += s->unanswered;
	to->unrowed += s->unrowed;
}

void nf_watch_wires_stats(const struct nf_watch *w, struct nf_wire_stats *ws)
{
	*ws = w->gone_ws;
	for (size_t i = 0; i < w->nwires; i++) {
		struct nf_wire_stats s;

		nf_wire_stats(w->wires[i]->wire, &s);
		add_stats(ws, &s);
	}
}

static int by_total(const void *a, const void *b)
{
	const struct nf_holder *x = *(struct nf_holder *const *)a, *y = *(struct nf_holder *const *)b;

	return x->total_ms > y->total_ms ? -1 : x->total_ms < y->total_ms;
}

size_t nf_watch_wires_rows(struct nf_watch *w, struct nf_holder *const **out)
{
	size_t n = 0;

	for (size_t i = 0; i < w->nwires; i++) {
		struct nf_holder *const *rows;
		size_t k = nf_wire_holders(w->wires[i]->wire, &rows);
		struct nf_holder **a = realloc(w->rows, (n + k + 1) * sizeof(*a));

		if (!a)
			break;
		w->rows = a;
		memcpy(a + n, rows, k * sizeof(*a));
		n += k;
	}
	if (n > 1)
		qsort(w->rows, n, sizeof(*w->rows), by_total);
	*out = w->rows;
	return n;
}

void nf_watch_wires_expire(struct nf_watch *w, uint64_t now_ns)
{
	for (size_t i = 0; i < w->nwires; i++) {
		w->cur_wire = w->wires[i];
		nf_wire_expire(w->wires[i]->wire, now_ns);
	}
	w->cur_wire = NULL;
}

static void drop(struct nf_watch *w, size_t i)
{
	struct nf_wire_stats s;

	nf_wire_stats(w->wires[i]->wire, &s);
	s.live = 0; /* forgotten with the detector */
	add_stats(&w->gone_ws, &s);
	nf_wire_free(w->wires[i]->wire);
	free(w->wires[i]);
	w->wires[i] = w->wires[--w->nwires];
}

void nf_watch_wire_detach(struct nf_watch *w, struct nf_watch_ns *ns)
{
	struct nf_holder *const *rows;
	struct nf_watch_wire *ww = ns->lo_wire;

	if (!ww)
		return;
	ns->lo_wire = NULL;
	ww->ns = NULL;
	if (nf_wire_holders(ww->wire, &rows) > 0)
		return;
	for (size_t i = 1; i < w->nwires; i++)
		if (w->wires[i] == ww) {
			drop(w, i);
			break;
		}
}

void nf_watch_wires_free(struct nf_watch *w)
{
	while (w->nwires)
		drop(w, w->nwires - 1);
	free(w->wires);
	free(w->rows);
	w->wires = NULL;
	w->rows = NULL;
	w->capwires = 0;
}
