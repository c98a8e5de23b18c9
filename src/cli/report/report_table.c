/*
 * report_table.c - report's groups printed (report_int.h): each one's
 * median from the stalls kept, most total stall first, as the table with
 * the config line that fixes each, or as a JSON array.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"
#include "cli/common/nf_cli.h"

/* The most frequent text of t ("?" when none was kept). */
static const char *tally_top(const struct tally *t)
{
	int best = 0;

	for (int i = 1; i < t->n; i++)
		if (t->count[i] > t->count[best])
			best = i;
	return t->n ? t->text[best] : "?";
}

/* g's cgroup as the table shows it ("-": none named; "NAME,...": others
 * too), in buf. */
static const char *cgroup_text(const struct group *g, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", g->cgroup ? g->cgroup : "-", g->cgroups > 1 ? ",..." : "");
	return buf;
}

/* Each group's median, from the stalls kept (before the groups are
 * sorted: the table knows them by their place). */
static void set_medians(struct groups *gs)
{
	double *m = calloc(gs->n ? gs->n : 1, sizeof(*m));

	if (!m)
		return;
	nf_report_stalls_medians(gs->stalls, m, gs->n);
	for (size_t i = 0; i < gs->n; i++)
		gs->g[i].median = m[i];
	free(m);
}

static int cmp_total(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return x->findings < y->findings ? 1 : x->findings > y->findings ? -1 : 0;
}

/*
 * The config line that fixes g, or "(fixed by its rule)" when every
 * finding was already prevented. A recv_split group's writer is the peer,
 * which a rule here cannot change: quickack on this side makes our ACK
 * come at once, and the peer's Nagle lets its next piece go.
 */
static void fix_line(const struct group *g, char *out, size_t outlen)
{
	if (g->prevented == g->findings)
		snprintf(out, outlen, "(fixed by its rule)");
	else if (g->recv)
		snprintf(out, outlen, "%s %s quickack", g->accept ? "accept" : "connect", g->addr);
	else if (g->bulk * 2 > g->findings) /* mostly bulk writes: keep the batching */
		snprintf(out, outlen, "%s %s auto", g->accept ? "accept" : "connect", g->addr);
	else if (g->accept)
		snprintf(out, outlen, "accept %s nodelay", g->addr);
	else
		snprintf(out, outlen, "connect %s coalesce", g->addr);
}

static void print_json(struct groups *gs, FILE *out)
{
	char fix[NF_REPORT_FIELD_LEN + 32];

	fputs("[", out);
	for (size_t i = 0; i < gs->n; i++) {
		struct group *g = &gs->g[i];

		fix_line(g, fix, sizeof(fix));
		fprintf(out, "%s\n{\"finding\":\"%s\",\"side\":\"%s\",\"peer\":", i ? "," : "",
			g->recv ? "recv_split" : "split_write", g->accept ? "accept" : "connect");
		nf_cli_json_str(out, g->addr);
		fprintf(out, ",\"findings\":%lu,\"prevented\":%lu,\"%s\":%s,", g->findings,
			g->prevented, g->recv ? "pieces" : "writes",
			g->writes.n ? tally_top(&g->writes) : "null");
		if (g->nstalls)
			fprintf(out, "\"median_stall_ms\":%.3f,\"total_stall_ms\":%.3f,",
				g->median, g->total);
		else
			fputs("\"median_stall_ms\":null,\"total_stall_ms\":null,", out);
		if (g->cgroup) {
			fputs("\"cgroup\":", out);
			nf_cli_json_str(out, g->cgroup);
			fputc(',', out);
		}
		fputs("\"caller\":", out);
		nf_cli_json_str(out, tally_top(&g->callers));
		fputs(",\"fix\":", out);
		nf_cli_json_str(out, fix);
		fputs("}", out);
	}
	fputs("\n]\n", out);
}

/* "43.687", or "-" when no stall was measured (all prevented). */
static const char *ms_text(const struct group *g, double ms, char *buf, size_t len)
{
	if (g->nstalls == 0)
		return "-";
	snprintf(buf, len, "%.3f", ms);
	return buf;
}

/* The widths of a row's padded columns: PEER, WRITES, FIX and CGROUP (0:
 * no group names one, no column). */
struct widths {
	int peer, writes, fix, cgroup;
};

static void print_row(const struct group *g, double med, const struct widths *w, FILE *out)
{
	char fix[NF_REPORT_FIELD_LEN + 32], m[32], t[32], c[NF_REPORT_FIELD_LEN];

	fix_line(g, fix, sizeof(fix));
	fprintf(out, "%-*s  %-7s  %8lu  %-*s  %10s  %11s  %-*s  ", w->peer, g->addr,
		g->accept ? "accept" : "connect", g->findings, w->writes, tally_top(&g->writes),
		ms_text(g, med, m, sizeof(m)), ms_text(g, g->total, t, sizeof(t)), w->fix, fix);
	if (w->cgroup)
		fprintf(out, "%-*s  ", w->cgroup, cgroup_text(g, c, sizeof(c)));
	fprintf(out, "%s\n", tally_top(&g->callers));
}

/* w's widths: the widest of gs's groups' (each at least its heading's). */
static void widths_of(struct groups *gs, struct widths *w)
{
	char fix[NF_REPORT_FIELD_LEN + 32], c[NF_REPORT_FIELD_LEN];

	*w = (struct widths){ 4, 6, 3, 0 };
	for (size_t i = 0; i < gs->n; i++) {
		const struct group *g = &gs->g[i];
		int a = (int)strlen(g->addr), wr = (int)strlen(tally_top(&g->writes));
		int wc = g->cgroup ? (int)strlen(cgroup_text(g, c, sizeof(c))) : 0;

		fix_line(g, fix, sizeof(fix));
		w->peer = a > w->peer ? a : w->peer;
		w->writes = wr > w->writes ? wr : w->writes;
		w->fix = (int)strlen(fix) > w->fix ? (int)strlen(fix) : w->fix;
		w->cgroup = wc > w->cgroup ? wc : w->cgroup;
	}
	if (w->cgroup && w->cgroup < 6)
		w->cgroup = 6;
}

static void print_table(struct groups *gs, FILE *out)
{
	struct widths w;
	int recv = 0;

	widths_of(gs, &w);
	for (size_t i = 0; i < gs->n; i++)
		recv |= gs->g[i].recv;
	fprintf(out, "%-*s  %-7s  %8s  %-*s  %10s  %11s  %-*s  ", w.peer, "PEER", "SIDE",
		"FINDINGS", w.writes, "WRITES", "MEDIAN_MS", "TOTAL_MS", w.fix, "FIX");
	if (w.cgroup)
		fprintf(out, "%-*s  ", w.cgroup, "CGROUP");
	fputs("CALLER\n", out);
	for (size_t i = 0; i < gs->n; i++)
		print_row(&gs->g[i], gs->g[i].median, &w, out);
	fputs("PEER: the remote end of connected sockets, the local end of accepted ones"
	      " (what a rule matches).\n", out);
	if (w.cgroup)
		fputs("CGROUP: the holder's service or container, where watch named it.\n", out);
	if (recv)
		fputs("quickack: the peer wrote in pieces (WRITES: as read here) and its Nagle held"
		      " the next one until our delayed ACK,\n"
		      "  while this program waited: fix the peer if it can be changed, else"
		      " quickack here.\n", out);
}

void nf_report_groups_print(struct groups *gs, int json, FILE *out)
{
	set_medians(gs);
	qsort(gs->g, gs->n, sizeof(*gs->g), cmp_total); /* the index is stale from here */
	if (json)
		print_json(gs, out);
	else if (gs->n == 0)
		fputs("naglefix: no split-write stall found\n", out);
	else
		print_table(gs, out);
}
