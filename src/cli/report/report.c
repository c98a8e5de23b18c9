/*
 * report.c - naglefix report: the table of offending peers from audit logs.
 *
 * Reads the library's own JSON lines ("split_write", "recv_split" and
 * "repeat" objects; "summary" lines repeat what those say and are
 * skipped), groups them by kind of finding, side and the address a rule
 * would match (the peer of a connected socket, the local end of an
 * accepted one), and prints per group: findings, the most frequent write
 * (or piece) pattern and caller, median and total stall, and the config
 * line that fixes it. A repeat line stands for COUNT findings of its mean
 * stall in the median; one without "of" (older logs) counts split writes.
 * The parser knows only our own format: one object a line, no spaces,
 * keys unique.
 *
 * What it costs is bounded whatever the input: a line is read in a
 * buffer of NF_REPORT_LINE_MAX (a longer one is skipped and counted), and
 * what is kept of the lines (the groups, their texts, the distinct stall
 * values for the medians: report_stalls.c) takes at most NF_REPORT_MEM_MAX
 * bytes. Past it, a finding of a new group is not counted, a new text not
 * tallied, a new stall value not in the median: each said once.
 *
 * Here: the command, the logs read and their lines grouped; the values
 * of a line are read by report_field.c, the groups printed by
 * report_table.c (report_int.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nf_fnv.h"
#include "report_int.h"
#include "cli/common/nf_cli.h"
#include "cli/common/nf_lines.h"

/* The bytes a copy of text takes, malloc's header counted. */
static size_t text_cost(const char *text)
{
	return strlen(text) + 1 + 2 * sizeof(size_t);
}

/* text copied, if *left allows (taken from it); else NULL. */
static char *keep_text(size_t *left, const char *text)
{
	size_t cost = text_cost(text);
	char *copy;

	if (cost > *left || !(copy = strdup(text)))
		return NULL;
	*left -= cost;
	return copy;
}

/* --- grouping --- */

/* Counts text in t; a text beyond the NF_REPORT_NTOP first distinct ones, or past
 * the memory kept (*left), is not kept. */
static void tally_add(struct tally *t, size_t *left, const char *text, unsigned long count)
{
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->text[i], text) == 0) {
			t->count[i] += count;
			return;
		}
	if (t->n == NF_REPORT_NTOP || !(t->text[t->n] = keep_text(left, text)))
		return;
	t->count[t->n++] = count;
}

static void tally_free(struct tally *t)
{
	for (int i = 0; i < t->n; i++)
		free(t->text[i]);
}

/* FNV-1a of the kind, the side and the address. */
static size_t group_hash(int recv, int accept, const char *addr)
{
	return (size_t)nf_fnv(NF_FNV_INIT ^ (uint64_t)(recv * 2 + accept), addr, strlen(addr));
}

/* The slot of (recv, accept, addr): its group's, or the empty one to fill. */
static size_t *group_slot(const struct groups *gs, int recv, int accept, const char *addr)
{
	size_t mask = gs->nslots - 1, i = group_hash(recv, accept, addr) & mask;

	for (;; i = (i + 1) & mask) {
		const struct group *g = gs->slot[i] ? &gs->g[gs->slot[i] - 1] : NULL;

		if (!g || (g->recv == recv && g->accept == accept && strcmp(g->addr, addr) == 0))
			return &gs->slot[i];
	}
}

/* Doubles the groups' array, if the memory kept allows; 0 or -1. */
static int grow_array(struct groups *gs)
{
	size_t ncap = gs->cap ? gs->cap * 2 : 16, more = (ncap - gs->cap) * sizeof(*gs->g);
	struct group *ng;

	if (more > gs->left || !(ng = realloc(gs->g, ncap * sizeof(*ng))))
		return -1;
	gs->left -= more;
	gs->g = ng;
	gs->cap = ncap;
	return 0;
}

/* Makes room for one more group: the array and the index. -1 if out of
 * memory or past the memory kept (NF_REPORT_MEM_MAX). */
static int groups_grow(struct groups *gs)
{
	if (gs->n == gs->cap && grow_array(gs) < 0)
		return -1;
	if (2 * (gs->n + 1) > gs->nslots) {
		size_t n = gs->nslots ? gs->nslots * 2 : 32;
		size_t *old = gs->slot, oldn = gs->nslots, more = (n - oldn) * sizeof(*old);

		if (more > gs->left || !(gs->slot = calloc(n, sizeof(*gs->slot)))) {
			gs->slot = old;
			return -1;
		}
		gs->left -= more;
		gs->nslots = n;
		for (size_t i = 0; i < oldn; i++)
			if (old[i])
				*group_slot(gs, gs->g[old[i] - 1].recv, gs->g[old[i] - 1].accept,
					    gs->g[old[i] - 1].addr) = old[i];
		free(old);
	}
	return 0;
}

/* The group of (recv, accept, addr), made if new; NULL if out of memory. */
static struct group *group_of(struct groups *gs, int recv, int accept, const char *addr)
{
	struct group *g;
	size_t *slot;
	char *copy;

	if (gs->nslots && *(slot = group_slot(gs, recv, accept, addr)))
		return &gs->g[*slot - 1];
	if (groups_grow(gs) < 0 || !(copy = keep_text(&gs->left, addr)))
		return NULL;
	g = &gs->g[gs->n++];
	memset(g, 0, sizeof(*g));
	g->recv = recv;
	g->accept = accept;
	g->addr = copy;
	*group_slot(gs, recv, accept, addr) = gs->n;
	return g;
}

static void groups_free(struct groups *gs)
{
	for (size_t i = 0; i < gs->n; i++) {
		free(gs->g[i].addr);
		tally_free(&gs->g[i].writes);
		tally_free(&gs->g[i].callers);
		free(gs->g[i].cgroup);
	}
	free(gs->g);
	free(gs->slot);
	nf_report_stalls_free(gs->stalls);
}

/* count stalls of ms each, measured in g, for its median. */
static void add_stalls(struct groups *gs, struct group *g, double ms, unsigned long count)
{
	g->nstalls += count;
	if (nf_report_stalls_add(gs->stalls, &gs->left, (uint32_t)(g - gs->g), ms, count) < 0)
		gs->unkept += count;
}

/* A repeat line of the library counts at most 100 findings: a larger
 * count is not ours. */
#define REPEAT_MAX 1000000

/*
 * A bulk writer's finding: more than 16 writes before the read, or more
 * bytes than coalesce's default buffer. There auto is the better fix:
 * nodelay would send every piece as its own segment, and coalesce's
 * buffer would overflow and flush anyway; auto keeps Nagle's batching and
 * pushes only the tail at the read.
 */
static int is_bulk(const char *line, const char *writes)
{
	double more = 0, total = 0;
	const char *p = writes;
	char *end;

	if (nf_report_field_num(line, "more_writes", &more) == 0 && more > 0)
		return 1;
	while (*p) {
		double v = strtod(p, &end);

		if (end == p) {
			p++;
			continue;
		}
		total += v;
		p = end;
	}
	return total > 16384;
}

/*
 * What a line counts: 0 split writes, 1 recv_split findings, -1 nothing
 * (a summary, or not a line of ours). A repeat says in "of"; one without
 * it comes from a library older than recv_split.
 */
static int line_kind(const char *line, const char *event)
{
	char of[32];

	if (strcmp(event, "split_write") == 0 || strcmp(event, "wire_stall") == 0)
		return 0;
	if (strcmp(event, "recv_split") == 0)
		return 1;
	if (strcmp(event, "repeat") != 0)
		return -1;
	if (nf_report_field_str(line, "of", of, sizeof(of)) < 0)
		return 0;
	return strcmp(of, "recv_split") == 0 ? 1 : strcmp(of, "split_write") == 0 ? 0 : -1;
}

/* Does a line of event stand for one finding (split_write, recv_split)?
 * Else it counts several: a repeat its "count", scan's and watch's
 * wire_stall its "stalls" (counts_in), with their "total_stall_ms". */
static int counted_once(const char *event)
{
	return strcmp(event, "repeat") != 0 && strcmp(event, "wire_stall") != 0;
}

static const char *counts_in(const char *event)
{
	return strcmp(event, "wire_stall") == 0 ? "stalls" : "count";
}

/* The CALLER of a wire_stall line: the holder's process where watch
 * knew it, else where the finding came from. 0, or -1 for another line. */
static int wire_caller(const char *line, const char *event, char *out, size_t outlen)
{
	char prog[NF_REPORT_FIELD_LEN / 2], src[16];

	if (strcmp(event, "wire_stall") != 0)
		return -1;
	if (nf_report_field_str(line, "source", src, sizeof(src)) < 0)
		snprintf(src, sizeof(src), "wire");
	if (nf_report_field_str(line, "prog", prog, sizeof(prog)) == 0)
		snprintf(out, outlen, "%s (%s)", prog, src);
	else
		snprintf(out, outlen, "(packets: %s)", src);
	return 0;
}

/* A line's cgroup name into g: the first kept (if the memory allows),
 * whether another was seen. */
static void add_cgroup(struct groups *gs, struct group *g, const char *name)
{
	if (!g->cgroup && !g->cgroups)
		g->cgroup = keep_text(&gs->left, name);
	if (!g->cgroups || (g->cgroup && strcmp(g->cgroup, name) == 0))
		g->cgroups = g->cgroups ? g->cgroups : 1;
	else
		g->cgroups = 2;
}

/* One "split_write", "recv_split", "repeat" or "wire_stall" line into its
 * group. */
static void add_line(struct groups *gs, const char *line)
{
	char event[32], side[16], addr[NF_REPORT_FIELD_LEN], writes[NF_REPORT_FIELD_LEN];
	char caller[NF_REPORT_FIELD_LEN];
	double count = 1, ms;
	struct group *g;
	int accept, recv;

	if (nf_report_field_str(line, "event", event, sizeof(event)) < 0 ||
	    (recv = line_kind(line, event)) < 0 ||
	    nf_report_field_str(line, "side", side, sizeof(side)) < 0)
		return;
	accept = strcmp(side, "accept") == 0;
	if (nf_report_field_str(line, accept ? "local" : "peer", addr, sizeof(addr)) < 0)
		return;
	if (!counted_once(event) &&
	    (nf_report_field_num(line, counts_in(event), &count) < 0 || count < 1 || count > REPEAT_MAX))
		return;
	if (!(g = group_of(gs, recv, accept, addr))) {
		gs->unrowed += (unsigned long)count;
		return;
	}
	g->findings += (unsigned long)count;
	if (nf_report_field_num(line, counted_once(event) ? "stall_ms" : "total_stall_ms", &ms) < 0) {
		g->prevented += (unsigned long)count;
	} else {
		g->total += ms;
		add_stalls(gs, g, ms / count, (unsigned long)count);
	}
	if (nf_report_field_raw_array(line, recv ? "pieces" : "writes", writes, sizeof(writes)) == 0) {
		tally_add(&g->writes, &gs->left, writes, (unsigned long)count);
		if (!recv && is_bulk(line, writes))
			g->bulk += (unsigned long)count;
	}
	if (nf_report_field_str(line, "caller", caller, sizeof(caller)) == 0 ||
	    wire_caller(line, event, caller, sizeof(caller)) == 0)
		tally_add(&g->callers, &gs->left, caller, (unsigned long)count);
	if (nf_report_field_str(line, "cgroup", caller, sizeof(caller)) == 0)
		add_cgroup(gs, g, caller);
}

/* Says on stderr why path is not a log to report; returns -1. */
static int bad_log(const char *path, const char *why)
{
	char q[NF_CLI_QUOTE_MAX];

	return nf_cli_warnx(-1, "cannot report %s: %s", nf_cli_quote(path, q), why);
}

/*
 * The descriptor to read path from ("-": standard input), or -1 after
 * saying why not: it cannot be opened, or it is a directory, a device or
 * a socket (nf_cli_open_input). A FIFO is read; its open waits for a
 * writer.
 */
static int open_log(const char *path)
{
	char why[128];
	const char *what;
	int fd = nf_cli_open_input(path, &what);

	if (fd == -2) {
		snprintf(why, sizeof(why), "%s, not a log (a file, a FIFO, or - for standard input)",
			 what);
		return bad_log(path, why);
	}
	return fd < 0 ? bad_log(path, what) : fd;
}

/* The lines of path longer than the limit, if any, as "; N line(s) over
 * 64 KiB skipped" in buf ("" if none). */
static const char *skipped_text(const struct nf_lines *l, char *buf, size_t len)
{
	buf[0] = '\0';
	if (l->skipped)
		snprintf(buf, len, "%llu line%s over %u KiB skipped", l->skipped,
			 l->skipped == 1 ? "" : "s", NF_REPORT_LINE_MAX >> 10);
	return buf;
}

/* What went wrong with a log whose lines of ours are reported: a read
 * error after them, or lines skipped. Returns 1. */
static int say_partial(const char *path, const char *why)
{
	char q[NF_CLI_QUOTE_MAX];

	return nf_cli_warnx(1, "%s: %s (its other lines are reported)", nf_cli_quote(path, q), why);
}

/* After reading path, what was wrong, said in one line: -1 if none of
 * its lines could count (nothing read, no line of ours), 1 if some did
 * but not all (a read error, lines skipped), 0 if nothing was wrong. */
static int judge_log(const char *path, const struct nf_lines *l, unsigned long long lines,
		     unsigned long long ours)
{
	char why[256], skipped[64];

	skipped_text(l, skipped, sizeof(skipped));
	snprintf(why, sizeof(why), "%s%s%s", l->err ? strerror(l->err) : "",
		 l->err && *skipped ? "; " : "", skipped);
	if (ours && *why)
		return say_partial(path, why);
	if (ours)
		return 0;
	if (l->err)
		return bad_log(path, why);
	if (lines == 0)
		return bad_log(path, "empty file");
	snprintf(why, sizeof(why), "not an audit log (no line of naglefix's JSON%s%s)",
		 *skipped ? "; " : "", skipped);
	return bad_log(path, why);
}

/*
 * Adds the findings of the log at path ("-": standard input) to gs.
 * Returns 0; 1 if some of its lines were not read (a read error, a line
 * longer than NF_REPORT_LINE_MAX: skipped), the others counted; -1 if
 * none counts: it cannot be opened or read, it is not a file or a FIFO,
 * it is empty, or none of its lines is one of the library's JSON objects
 * (found anywhere in the line, so lines from syslog still count). Each
 * but 0 is said in one line.
 */
static int read_log(struct groups *gs, const char *path)
{
	unsigned long long lines = 0, ours = 0;
	struct nf_lines l;
	size_t len;
	char *line;
	int fd = open_log(path), rc;

	if (fd < 0)
		return -1;
	if (nf_lines_init(&l, fd, NF_REPORT_LINE_MAX) < 0) {
		rc = bad_log(path, strerror(ENOMEM));
	} else {
		for (; nf_lines_next(&l, &line, &len) > 0; lines++) {
			ours += strstr(line, "{\"event\":\"") != NULL;
			add_line(gs, line);
		}
		rc = judge_log(path, &l, lines + l.skipped, ours);
		nf_lines_free(&l);
	}
	if (fd != STDIN_FILENO)
		close(fd);
	return rc;
}

/* What the bounds left out, each said once; -1 if a finding was not
 * counted (its group beyond the rows'), else 0. */
static int say_bounds(const struct groups *gs)
{
	if (gs->unkept)
		nf_cli_warnx(0, "%lu stall%s left out of the medians (counted in FINDINGS and "
			     "TOTAL_MS): report keeps %u MiB of what it read", gs->unkept,
			     gs->unkept == 1 ? "" : "s", NF_REPORT_MEM_MAX >> 20);
	if (!gs->unrowed)
		return 0;
	return nf_cli_warnx(-1, "%lu finding%s of peers past the first %zu rows not counted: "
			    "report keeps %u MiB of what it read", gs->unrowed,
			    gs->unrowed == 1 ? "" : "s", gs->n, NF_REPORT_MEM_MAX >> 20);
}

int nf_report_print(char *const paths[], int n, int json, FILE *out)
{
	struct groups gs = { .stalls = nf_report_stalls_new(), .left = NF_REPORT_MEM_MAX };
	int bad = 0, some = 0;

	if (!gs.stalls) {
		return nf_cli_warnx(-1, "out of memory");
	}
	for (int i = 0; i < n; i++) {
		int rc = read_log(&gs, paths[i]);

		bad += rc != 0;
		some += rc >= 0;
	}
	if (some || n == 0) /* with no log read, "no stall found" would be a second, false message */
		nf_report_groups_print(&gs, json, out);
	fflush(out); /* the table before what the bounds left out, with 2>&1 */
	bad += say_bounds(&gs) < 0;
	groups_free(&gs);
	return bad ? -1 : (int)gs.n;
}

const char nf_cli_usage_report[] =
	"usage: naglefix report [--json] LOG...\n"
	"Reads audit logs (naglefix audit -l, NAGLEFIX_LOG of -m audit) and the\n"
	"--json lines of scan and watch, and prints per peer the findings, the\n"
	"most frequent write pattern, the median and total stall, the config line\n"
	"that fixes it and the code that wrote. A LOG is a file, a FIFO or - (standard\n"
	"input); lines over 64 KiB are skipped and counted, and what is kept of the\n"
	"lines takes at most 64 MiB.\n"
	"  --json      a JSON array instead of the table\n"
	"  -h, --help  this text\n"
	"Exit status: 0; 1 a LOG that could not be read whole or holds no audit\n"
	"line; 125 a usage error.\n";

/* report's options: the long ones; getopt_long's short ones are ":h". */
static const struct option report_longopts[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Options anywhere until "--" (getopt_long permutes the LOGs to
 * argv[optind..]): sets *json. Returns how many logs, -1 for a usage
 * error (said on stderr), -2 for --help. */
static int report_args(int argc, char **argv, int *json)
{
	int opt;

	optind = 0; /* 0, not 1: getopt_long starts afresh, permuting */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", report_longopts, NULL)) != -1) {
		switch (opt) {
		case 'j': *json = 1; break;
		case 'h': return -2;
		default:
			nf_cli_bad_option("report", opt, argc, argv, report_longopts);
			return -1;
		}
	}
	return argc - optind;
}

int nf_cli_report(int argc, char **argv)
{
	int json = 0, n = report_args(argc, argv, &json), rc;

	if (n == -2) {
		fputs(nf_cli_usage_report, stdout);
		rc = 0;
	} else if (n < 0) {
		rc = NF_EXIT_USAGE;
	} else if (n == 0) {
		rc = nf_cli_usage_error("report", "no LOG given");
	} else {
		rc = nf_report_print(argv + optind, n, json, stdout) < 0 ? 1 : 0;
	}
	return rc;
}
