/*
 * wire_out.c - what scan and watch print of the detector's rows: the
 * table (in the style of `naglefix audit`), one JSON line a row (read by
 * `naglefix report` with audit logs), watch's line at a row's first
 * stall, and the config lines that fix a row on either end.
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "nf_cli.h"
#include "nf_wire_out.h"
#include "nf_addr.h"

#define FIX_MAX 160

static const char *side_name(const struct nf_holder *h)
{
	return h->side == NF_WIRE_ACCEPT ? "accept" : "connect";
}

static const char *side_how_name(const struct nf_holder *h)
{
	static const char *const names[] = { "syn", "listener", "ports" };

	return h->side_how < 3 ? names[h->side_how] : "?";
}

static const char *end_text(const struct nf_end *e, char buf[NF_ADDR_MAX])
{
	return nf_addr_format(e->family, e->addr, e->port, buf);
}

const char *nf_cli_wire_fix(const struct nf_holder *h, char *buf, size_t len)
{
	char a[NF_ADDR_MAX];

	if (h->side == NF_WIRE_ACCEPT)
		snprintf(buf, len, "accept %s nodelay", end_text(&h->self, a));
	else
		snprintf(buf, len, "connect %s coalesce", end_text(&h->peer, a));
	return buf;
}

/* The receiving end's rule (its host, under the library): quickack on
 * its side of the connection. */
static const char *peer_fix(const struct nf_holder *h, char *buf, size_t len)
{
	char a[NF_ADDR_MAX];

	if (h->side == NF_WIRE_ACCEPT)
		snprintf(buf, len, "connect %s quickack", end_text(&h->self, a));
	else
		snprintf(buf, len, "accept %s quickack", end_text(&h->peer, a));
	return buf;
}

/* The receiving end's fix with no process touched: Linux's per-route
 * quickack on its route to the holder. */
static const char *route_fix(const struct nf_holder *h, char *buf, size_t len)
{
	char a[NF_ADDR_MAX];

	nf_addr_format(h->self.family, h->self.addr, -1, a);
	snprintf(buf, len, "ip route change ROUTE quickack 1 (ROUTE: the route 'ip route get %s' names)",
		 a);
	return buf;
}

/* ns since the epoch as "2026-12-01T20:51:22.123456Z". */
static const char *iso_time(uint64_t ns, char *buf, size_t len)
{
	time_t s = (time_t)(ns / 1000000000u);
	struct tm tm;
	char t[32];

	gmtime_r(&s, &tm);
	strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%06uZ", t, (unsigned)(ns % 1000000000u / 1000));
	return buf;
}

/* ... as "20:51:22.123" (the table's columns). */
static const char *clock_time(uint64_t ns, char *buf, size_t len)
{
	time_t s = (time_t)(ns / 1000000000u);
	struct tm tm;

	gmtime_r(&s, &tm);
	snprintf(buf, len, "%02d:%02d:%02d.%03u", tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned)(ns % 1000000000u / 1000000));
	return buf;
}

/* "6+7", the sizes of the row's most frequent stall. */
static const char *sizes_text(const struct nf_holder *h, char *buf, size_t len)
{
	snprintf(buf, len, "%u+%u", h->size1, h->size2);
	return buf;
}

/* The holder as the table shows it: a client's port is its first
 * connection's, "*" if it held on several. */
static const char *holder_text(const struct nf_holder *h, char buf[NF_ADDR_MAX])
{
	char a[NF_ADDR_MAX];

	if (h->side == NF_WIRE_CONNECT && h->conns > 1) {
		nf_addr_format(h->self.family, h->self.addr, -1, a);
		snprintf(buf, NF_ADDR_MAX, h->self.family == AF_INET6 ? "[%s]:*" : "%s:*", a);
		return buf;
	}
	return end_text(&h->self, buf);
}

static const char *peer_text(const struct nf_holder *h, char buf[NF_ADDR_MAX])
{
	char a[NF_ADDR_MAX];

	if (h->side == NF_WIRE_ACCEPT) {
		nf_addr_format(h->peer.family, h->peer.addr, -1, a);
		snprintf(buf, NF_ADDR_MAX, h->peer.family == AF_INET6 ? "[%s]:*" : "%s:*", a);
		return buf;
	}
	return end_text(&h->peer, buf);
}

static int widest(struct nf_holder *const *h, size_t n, int self, int min)
{
	char a[NF_ADDR_MAX];

	for (size_t i = 0; i < n; i++) {
		int l = (int)strlen(self ? holder_text(h[i], a) : peer_text(h[i], a));

		min = l > min ? l : min;
	}
	return min;
}

/* The NETNS column's width: 0 (no column) if no row names a namespace
 * (scan's never do). */
static int netns_width(struct nf_holder *const *h, size_t n)
{
	int wn = 0;

	for (size_t i = 0; i < n; i++) {
		int l = (int)strlen(h[i]->netns);

		wn = l > wn ? l : wn;
	}
	return wn ? (wn > 5 ? wn : 5) : 0;
}

/* The NETNS column's head or row's cell, with its two spaces. */
static void netns_cell(FILE *out, int wn, const char *text)
{
	if (wn)
		fprintf(out, "%-*s  ", wn, *text ? text : "-");
}

/* The CGROUP column's width: its widest name (6 at least), 0 if no row
 * has one. */
static int widest_cgroup(struct nf_holder *const *h, size_t n)
{
	int w = 0;

	for (size_t i = 0; i < n; i++)
		if (h[i]->cgroup[0]) {
			int l = (int)strlen(h[i]->cgroup);

			w = l > w ? l : w;
		}
	return w && w < 6 ? 6 : w;
}

/* Row h's CGROUP and PROCESS columns (wc: CGROUP's width, 0: none; pid:
 * whether any row has a PROCESS). */
static void process_columns(FILE *out, const struct nf_holder *h, int wc, int pid)
{
	if (wc)
		fprintf(out, "  %-*s", pid ? wc : 0, h->cgroup[0] ? h->cgroup : "-");
	if (h->pid)
		fprintf(out, "  %ld %s", h->pid, h->cmd);
	else if (h->gone)
		fputs("  (gone)", out);
}

void nf_cli_wire_table(FILE *out, struct nf_holder *const *h, size_t n,
		       const struct nf_wire_stats *st)
{
	char a[NF_ADDR_MAX], b[NF_ADDR_MAX], fix[FIX_MAX], sz[32], t1[32], t2[32];
	int wh = widest(h, n, 1, 6), wp = widest(h, n, 0, 4), wf = 3, pid = 0;
	int wn = netns_width(h, n);
	int wc = widest_cgroup(h, n);

	if (n == 0 && st && st->conns == st->one_way) {
		/* no connection seen both ways: no stall could be told, so no verdict */
		fputs("naglefix: no TCP connection seen both ways: nothing to judge\n", out);
	} else if (n == 0) {
		fputs("naglefix: no Nagle x delayed-ACK stall found\n", out);
	} else {
		for (size_t i = 0; i < n; i++) {
			int l = (int)strlen(nf_cli_wire_fix(h[i], fix, sizeof(fix)));

			pid |= h[i]->pid != 0 || h[i]->gone;
			wf = l > wf ? l : wf;
		}
		if (!pid && !wc)
			wf = 0; /* the last column: no padding */
		fprintf(out, "%-*s  %-*s  %-7s  %5s  %6s  %-11s  %9s  %10s  %-12s  %-12s  ", wh,
			"HOLDER", wp, "PEER", "SIDE", "CONNS", "STALLS", "SIZES", "MEDIAN_MS",
			"TOTAL_MS", "FIRST", "LAST");
		netns_cell(out, wn, "NETNS");
		fprintf(out, "%-*s", wf, "FIX");
		if (wc)
			fprintf(out, "  %-*s", pid ? wc : 0, "CGROUP");
		fputs(pid ? "  PROCESS\n" : "\n", out);
		for (size_t i = 0; i < n; i++) {
			fprintf(out, "%-*s  %-*s  %-7s  %5u  %6llu  %-11s  %9.3f  %10.3f  %-12s  %-12s  ",
				wh, holder_text(h[i], a), wp, peer_text(h[i], b), side_name(h[i]),
				h[i]->conns, (unsigned long long)h[i]->stalls,
				sizes_text(h[i], sz, sizeof(sz)), nf_holder_median_ms(h[i]),
				h[i]->total_ms, clock_time(h[i]->first_ns, t1, sizeof(t1)),
				clock_time(h[i]->last_ns, t2, sizeof(t2)));
			netns_cell(out, wn, h[i]->netns);
			fprintf(out, "%-*s", wf, nf_cli_wire_fix(h[i], fix, sizeof(fix)));
			process_columns(out, h[i], wc, pid);
			fputc('\n', out);
		}
		if (wn)
			fputs("NETNS: the network namespace of the holder's socket (\"host\": watch's own;\n"
			      "  a name under /run/netns; pid:N, a process in it), else of the capture.\n",
			      out);
		fputs("HOLDER: the end whose Nagle held its next segment; PEER: the end that delayed its ACK.\n"
		      "FIX: the rule for the holder's host (naglefix.conf). Where the holder cannot be changed,\n"
		      "  on the peer's host: the rule 'accept|connect HOLDER quickack' under the library, or\n"
		      "  'ip route change ROUTE-TO-HOLDER quickack 1' (--json gives both for each row).\n",
		      out);
		if (wc)
			fputs("CGROUP: the holder's service or container (a systemd unit, docker-ID,"
			      " libpod-ID, pod UID/...), else its cgroup's path.\n", out);
		for (size_t i = 0; i < n; i++)
			if (h[i]->side_how != NF_SIDE_SYN) {
				fputs("SIDE: told from the ports or from other connections where no handshake"
				      " was seen (--json: side_from).\n", out);
				break;
			}
	}
	if (st && st->one_way)
		fprintf(out, "naglefix: %llu connection%s seen one way only: no stall can be told there"
			" (capture both directions)\n", (unsigned long long)st->one_way,
			st->one_way == 1 ? "" : "s");
}

void nf_cli_wire_json_netns(FILE *out, const struct nf_holder *h)
{
	if (!h->netns[0])
		return;
	fputs(",\"netns\":", out);
	nf_cli_json_str(out, h->netns);
	fprintf(out, ",\"netns_inode\":%llu", (unsigned long long)h->netns_ino);
}

void nf_cli_wire_json(FILE *out, const struct nf_holder *h, const char *source)
{
	char a[NF_ADDR_MAX], fix[FIX_MAX], t[48];

	fprintf(out, "{\"event\":\"wire_stall\",\"time\":\"%s\",\"source\":\"%s\"",
		iso_time(h->last_ns, t, sizeof(t)), source);
	if (h->pid) {
		fprintf(out, ",\"pid\":%ld,\"prog\":", h->pid);
		nf_cli_json_str(out, h->cmd);
	} else if (h->gone) {
		fputs(",\"process\":\"gone\"", out);
	}
	nf_cli_wire_json_netns(out, h);
	if (h->cgroup[0]) {
		fputs(",\"cgroup\":", out);
		nf_cli_json_str(out, h->cgroup);
	}
	fprintf(out, ",\"side\":\"%s\",\"side_from\":\"%s\",\"local\":\"%s\"", side_name(h),
		side_how_name(h), end_text(&h->self, a));
	fprintf(out, ",\"peer\":\"%s\",\"conns\":%u,\"stalls\":%llu,\"writes\":[%u,%u]",
		end_text(&h->peer, a), h->conns, (unsigned long long)h->stalls, h->size1, h->size2);
	fprintf(out, ",\"stall_ms\":%.3f,\"total_stall_ms\":%.3f,\"ato_ms\":%.3f",
		nf_holder_median_ms(h), h->total_ms, h->stalls ? h->ack_total_ms / (double)h->stalls : 0);
	fprintf(out, ",\"first\":\"%s\"", iso_time(h->first_ns, t, sizeof(t)));
	fprintf(out, ",\"last\":\"%s\",\"fix\":", iso_time(h->last_ns, t, sizeof(t)));
	nf_cli_json_str(out, nf_cli_wire_fix(h, fix, sizeof(fix)));
	fputs(",\"peer_fix\":", out);
	nf_cli_json_str(out, peer_fix(h, fix, sizeof(fix)));
	fputs(",\"route_fix\":", out);
	nf_cli_json_str(out, route_fix(h, fix, sizeof(fix)));
	fputs("}\n", out);
}

void nf_cli_wire_first(FILE *out, const struct nf_holder *h, const struct nf_stall *s)
{
	char a[NF_ADDR_MAX], b[NF_ADDR_MAX], fix[FIX_MAX], t[32];

	fprintf(out, "%s  stall %.3f ms  %s held %u+%u bytes (%s) waiting on %s's delayed ACK",
		clock_time(s->start_ns, t, sizeof(t)), (double)(s->end_ns - s->start_ns) / 1e6,
		end_text(&h->self, a), s->size1, s->size2, side_name(h), end_text(&h->peer, b));
	if (h->netns[0])
		fprintf(out, "  netns %s", h->netns);
	if (h->pid)
		fprintf(out, "  pid %ld %s", h->pid, h->cmd);
	else if (h->gone)
		fputs("  process gone (its connection closed before the stall was judged)", out);
	if (h->cgroup[0])
		fprintf(out, "  cgroup %s", h->cgroup);
	fprintf(out, "  fix: %s\n", nf_cli_wire_fix(h, fix, sizeof(fix)));
	fflush(out);
}

void nf_cli_wire_stats(const struct nf_wire_stats *st)
{
	char more[3][96] = { "", "", "" };

	if (st->unanswered)
		snprintf(more[0], sizeof(more[0]),
			 ", %llu held segment%s no answer followed (a one-way sender's: not counted)",
			 (unsigned long long)st->unanswered, st->unanswered == 1 ? "" : "s");
	if (st->dropped_conns)
		snprintf(more[1], sizeof(more[1]), ", %llu not tracked (no memory)",
			 (unsigned long long)st->dropped_conns);
	if (st->unrowed)
		snprintf(more[2], sizeof(more[2]), ", %llu stall%s of ends past the %u rows kept: not "
			 "counted", (unsigned long long)st->unrowed, st->unrowed == 1 ? "" : "s",
			 NF_WIRE_ROWS_MAX);
	nf_cli_warnx(0, "%llu segments, %llu connections (at most %llu at once), %llu duplicate%s "
		     "dropped, %llu retransmitted, %llu seen one way only%s%s%s",
		     (unsigned long long)st->packets, (unsigned long long)st->conns,
		     (unsigned long long)st->peak, (unsigned long long)st->duplicates,
		     st->duplicates == 1 ? "" : "s", (unsigned long long)st->retransmits,
		     (unsigned long long)st->one_way, more[0], more[1], more[2]);
}
