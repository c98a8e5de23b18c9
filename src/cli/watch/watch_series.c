/*
 * watch_series.c - the series a stall is counted under (watch_int.h):
 * its holder's program, its row's side, the holder's end and the end it
 * waited on (each less the port that varies between the row's
 * connections), the network namespace it was named in, and the row's
 * fix. The program and its cgroup are the connection's own (two programs
 * of one host talking to one server are one row, two series): named at
 * the connection's first stall, kept in a cache of 1,024 connections (a
 * set's least recently used goes); a connection the cache let go counts
 * under its row's first program.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/common/nf_wire_out.h"
#include "nf_addr.h"
#include "watch_int.h"
#include "metrics/nf_metrics.h"

#define FIX_MAX 160

/* The program of a command line as nf_owner gives it: the base name of
 * its first word ("/usr/bin/python3 x.py": "python3"), a title's colon
 * cut ("nginx: worker process": "nginx"), a kernel thread's name
 * without its brackets. */
static void program_of(const char *cmd, char out[NF_WATCH_PROG_MAX])
{
	const char *slash;
	size_t n;

	if (cmd[0] == '[') {
		n = strcspn(++cmd, "]");
	} else {
		n = strcspn(cmd, " ");
		if (n > 1 && (slash = memrchr(cmd, '/', n - 1))) {
			n -= (size_t)(slash + 1 - cmd);
			cmd = slash + 1;
		}
		if (n > 1 && cmd[n - 1] == ':')
			n--;
	}
	n = n < NF_WATCH_PROG_MAX ? n : NF_WATCH_PROG_MAX - 1;
	memcpy(out, cmd, n);
	out[n] = '\0';
}

static uint32_t hash_end(uint32_t h, const struct nf_end *e)
{
	h = (h ^ e->family) * 16777619u;
	h = (h ^ e->port) * 16777619u;
	for (int i = 0; i < 16; i++)
		h = (h ^ e->addr[i]) * 16777619u;
	return h;
}

static unsigned set_of(const struct nf_watch_wire *wire, const struct nf_end *self,
		       const struct nf_end *peer)
{
	uint32_t h = (uint32_t)((uintptr_t)wire >> 6) * 16777619u;

	return hash_end(hash_end(h ^ 2166136261u, self), peer) % NF_WATCH_NAME_SETS;
}

static int end_eq(const struct nf_end *a, const struct nf_end *b)
{
	return a->family == b->family && a->port == b->port && memcmp(a->addr, b->addr, 16) == 0;
}

static int same(const struct nf_watch_name *e, const struct nf_watch_wire *wire,
		const struct nf_end *self, const struct nf_end *peer)
{
	return e->used && e->wire == wire && end_eq(&e->self, self) && end_eq(&e->peer, peer);
}

/* The cache's entry of connection self -> peer of detector wire, or NULL. */
static struct nf_watch_name *name_find(struct nf_watch_metrics *wm, const struct nf_watch_wire *wire,
				       const struct nf_end *self, const struct nf_end *peer)
{
	struct nf_watch_name *set = wm->names[set_of(wire, self, peer)];

	for (int i = 0; i < NF_WATCH_NAME_WAYS; i++)
		if (same(&set[i], wire, self, peer)) {
			set[i].used = ++wm->uses;
			return &set[i];
		}
	return NULL;
}

/* Keeps prog and the cgroup and netns of h as those of self -> peer of
 * detector wire: in its entry if it has one, else in place of its set's
 * least recently used. */
static void name_put(struct nf_watch_metrics *wm, const struct nf_watch_wire *wire,
		     const struct nf_end *self, const struct nf_end *peer, const char *prog,
		     const struct nf_holder *h)
{
	struct nf_watch_name *set = wm->names[set_of(wire, self, peer)], *e = NULL;

	for (int i = 0; i < NF_WATCH_NAME_WAYS && !e; i++)
		if (same(&set[i], wire, self, peer))
			e = &set[i];
	if (!e) { /* the least recently used: an empty entry's use is 0 */
		e = &set[0];
		for (int i = 1; i < NF_WATCH_NAME_WAYS; i++)
			if (set[i].used < e->used)
				e = &set[i];
	}
	e->wire = wire;
	e->self = *self;
	e->peer = *peer;
	e->used = ++wm->uses;
	snprintf(e->prog, sizeof(e->prog), "%s", prog);
	snprintf(e->cgroup, sizeof(e->cgroup), "%s", h->cgroup);
	snprintf(e->netns, sizeof(e->netns), "%s", h->netns);
}

void nf_watch_metrics_named(struct nf_watch *w, const struct nf_holder *h)
{
	char prog[NF_WATCH_PROG_MAX] = "";

	if (!w->metrics)
		return;
	if (h->pid)
		program_of(h->cmd, prog);
	name_put(w->metrics, w->cur_wire, &h->self, &h->peer, prog, h);
}

/* The program, cgroup and namespace of connection self -> peer of row h
 * (its detector's: w->cur_wire) into k: the cache's, else the row's own. */
static void named(struct nf_watch *w, const struct nf_holder *h, const struct nf_end *self,
		  const struct nf_end *peer, struct nf_metrics_key *k)
{
	static char row_prog[NF_WATCH_PROG_MAX];
	struct nf_watch_name *e = name_find(w->metrics, w->cur_wire, self, peer);

	if (e) {
		k->v[NF_ML_HOLDER] = e->prog;
		k->v[NF_ML_CGROUP] = e->cgroup;
		k->v[NF_ML_NETNS] = e->netns;
		return;
	}
	row_prog[0] = '\0';
	if (h->pid)
		program_of(h->cmd, row_prog);
	k->v[NF_ML_HOLDER] = row_prog;
	k->v[NF_ML_CGROUP] = h->cgroup;
	k->v[NF_ML_NETNS] = h->netns;
}

static uint64_t mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec;
}

void nf_watch_metrics_stall(void *arg, const struct nf_holder *h, const struct nf_stall *s,
			    const struct nf_end *self, const struct nf_end *peer)
{
	struct nf_watch *w = arg;
	char local[NF_ADDR_MAX], far[NF_ADDR_MAX], fix[FIX_MAX];
	int accept = h->side == NF_WIRE_ACCEPT;
	struct nf_metrics_key k;

	if (!w->metrics)
		return;
	named(w, h, self, peer, &k);
	k.v[NF_ML_SIDE] = accept ? "accept" : "connect";
	k.v[NF_ML_LOCAL] = nf_addr_format(h->self.family, h->self.addr, accept ? h->self.port : -1,
					  local);
	k.v[NF_ML_PEER] = nf_addr_format(h->peer.family, h->peer.addr, accept ? -1 : h->peer.port,
					 far);
	nf_metrics_stall(w->metrics->m, &k, nf_cli_wire_fix(h, fix, sizeof(fix)),
			 (double)(s->end_ns - s->start_ns) / 1e9, mono_s());
}
