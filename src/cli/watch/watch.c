/*
 * watch.c - naglefix watch [-i IFACE] [--netns ...] [-t SECONDS] [--json]
 * [-l LOG] [--fix] [--metrics [ADDR:]PORT] [--metrics-file PATH]: the
 * stall detector on the live host. The ring (nf_ring.h) hands over each
 * TCP packet's headers, nf_pkt_decode turns them into a segment, the
 * detector (nf_wire.h) reads the signature; at a connection's first
 * stall the holder is named from the kernel's socket table (nf_owner.h)
 * and a line is printed (--fix: the holder fixed, watch_fix.c); each
 * stall is counted in the metrics (watch_metrics.c), whose endpoint this
 * loop serves between frames; at the end (-t, or SIGINT/SIGTERM) the
 * table and the ring's drop count.
 *
 * Exit status: 0; 1 if the capture cannot be opened (no CAP_NET_RAW, no
 * such interface) or fails, or LOG, the metrics' address or file cannot
 * be opened; NF_EXIT_USAGE on a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/common/nf_cgroup.h"
#include "cli/common/nf_cli.h"
#include "cli/common/nf_wire_out.h"
#include "nf_watch.h"
#include "watch_int.h"
#include "metrics/nf_endpoint.h"
#include "metrics/nf_metrics.h"
#include "wire/nf_owner.h"
#include "wire/nf_pkt.h"
#include "wire/nf_ring.h"
#include "wire/nf_wire.h"

#define TICK_MS 100 /* the loop wakes at least this often to expire connections */
#define DROPS_MS 1000 /* the kernel's drops looked at (and said) this often */

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The namespace a finding of detector ww is named in: where its holder
 * was found, else the capture's (a loopback's: its own). */
static void name_netns(struct nf_holder *h, const struct nf_watch_wire *ww,
		       const struct nf_watch_ns *where)
{
	const struct nf_watch_ns *cap = ww->w->cur;

	if (where) {
		snprintf(h->netns, sizeof(h->netns), "%s", where->name);
		h->netns_ino = where->ino;
	} else if (ww->ns || ww->netns[0]) {
		snprintf(h->netns, sizeof(h->netns), "%s", ww->netns);
		h->netns_ino = ww->netns_ino;
	} else if (cap) {
		snprintf(h->netns, sizeof(h->netns), "%s", cap->name);
		h->netns_ino = cap->ino;
	}
}

/* A connection found stalling (h is its row, or a copy of it with the
 * connection's own ends) by the detector being fed: its holder named if
 * it is a process of this host (looked for in the namespace of the
 * loopback that carried it, or first in that of the capture that saw the
 * segment, then in the others), the line printed, and under --fix the
 * fix. */
static void found(struct nf_watch *w, struct nf_holder *h, const struct nf_stall *s, int first)
{
	const struct nf_watch_wire *ww = w->cur_wire ? w->cur_wire : w->wires[0];
	struct nf_watch_look look = { ww->ns ? ww->ns : w->cur, ww->ns != NULL };
	const struct nf_watch_ns *where;
	struct nf_owner o;

	int rc = nf_watch_owner(w, &look, &h->self, &h->peer, &o, &where);

	if (rc == 0) {
		h->pid = o.pid;
		snprintf(h->cmd, sizeof(h->cmd), "%s", o.cmd);
		nf_cgroup_name_of(o.pid, h->cgroup, sizeof(h->cgroup));
	}
	/* here, but let go: closed, or held by no process; on a namespace's
	 * loopback both ends are in it, so not found there is gone too */
	h->gone = rc == -ENOTCONN || rc == -ESRCH || (rc == -ENOENT && ww->ns);
	name_netns(h, ww, where);
	nf_watch_metrics_named(w, h);
	if (!w->json)
		nf_cli_wire_first(w->out, h, s);
	if (first)
		nf_watch_json_first(w, h);
	else
		nf_watch_json_conn(w, h);
	if (w->fix)
		nf_watch_fix(w, h, &o, &look);
	fflush(w->out);
}

/* The detector's call at a row's first stall. */
static void on_first(void *arg, struct nf_holder *h, const struct nf_stall *s)
{
	found(arg, h, s, 1);
}

/* ... and at the first stall of a later connection of a row: the row
 * itself keeps its first connection's ends and process. */
static void on_conn(void *arg, struct nf_holder *h, const struct nf_stall *s,
		    const struct nf_end *self, const struct nf_end *peer)
{
	static struct nf_holder c; /* 4 KiB: not on the stack */

	c = *h;
	c.self = *self;
	c.peer = *peer;
	c.pid = 0;
	c.gone = 0;
	c.cmd[0] = '\0';
	c.netns[0] = '\0';
	c.netns_ino = 0;
	c.cgroup[0] = '\0';
	found(arg, &c, s, 0);
}

const char nf_cli_usage_watch[] =
	"usage: naglefix watch [-i IFACE] [--netns NAME|PATH|PID]... [-t SECONDS] [--json]\n"
	"                      [-l LOG] [--fix [--attach]] [--metrics [ADDR:]PORT]\n"
	"                      [--metrics-file PATH] [--metrics-max-series N]\n"
	"                      [--metrics-expire SECONDS]\n"
	"  -i, --interface IFACE  capture on IFACE only, in each namespace that has one\n"
	"               (default: every interface, lo too)\n"
	"  --netns NAME|PATH|PID  this network namespace only (repeatable): a name\n"
	"               under /run/netns, a namespace file, a process's, or 'host';\n"
	"               default: every namespace of the host (run in the host's), its\n"
	"               own only elsewhere\n"
	"  -t, --time SECONDS  stop after SECONDS (default: at SIGINT or SIGTERM)\n"
	"  --json       JSON lines on standard output, not text\n"
	"  -l, --log LOG  also append the JSON lines to LOG\n"
	"  --fix        at a stall, set TCP_NODELAY on the holder's socket (and the\n"
	"               listener it came from) if it is a process of this host;\n"
	"               else print the receiving end's fix; nothing else is touched\n"
	"  --attach     with --fix, also add the holder's rule (connect PEER nodelay,\n"
	"               accept LOCAL nodelay) to naglefix's program on its cgroup\n"
	"               (naglefix attach): its service's next connections and next\n"
	"               starts; never the root cgroup. The holder's socket is marked\n"
	"               for the setsockopt program there, which keeps it on against\n"
	"               its own setsockopt (undo: detach, then fix --undo PID)\n"
	"  --metrics [ADDR:]PORT  serve Prometheus metrics at http://ADDR:PORT/metrics\n"
	"               (ADDR: 127.0.0.1 if not given; IPv6 in brackets)\n"
	"  --metrics-file PATH  write them to PATH every 5 s (node_exporter's textfile\n"
	"               collector: PATH ending in .prom in its directory)\n"
	"  --metrics-max-series N  holder series kept at most (default 500; the\n"
	"               rest counted in one series labelled overflow=\"true\")\n"
	"  --metrics-expire SECONDS  a holder's series goes after SECONDS without a\n"
	"               stall (default 900)\n"
	"  -h, --help   this text\n";

/* -t's argument: seconds > 0; -1 if it is not one. */
static double parse_seconds(const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(v) || v <= 0 || v > 1e9)
		return -1;
	return v;
}

/* A whole number in [1, max]; 0 if arg is not one. */
static uint64_t parse_count(const char *arg, uint64_t max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (*arg < '0' || *arg > '9')
		return 0;
	v = strtoull(arg, &end, 10);
	if (errno || *end || v < 1 || v > max)
		return 0;
	return v;
}

/* The --metrics options: 0, or NF_EXIT_USAGE after saying why. */
static int metrics_arg(struct nf_watch *w, int c, const char *arg)
{
	struct sockaddr_storage ss;
	char q[NF_CLI_QUOTE_MAX];
	socklen_t len;

	if (c == 'm' && nf_endpoint_parse(arg, &ss, &len) == 0)
		w->metrics_addr = arg;
	else if (c == 'M' && *arg)
		w->metrics_file = arg;
	else if (c == 'S' && (w->metrics_max = (uint32_t)parse_count(arg, 1000000)))
		return 0;
	else if (c == 'E' && (w->metrics_expire = parse_count(arg, 1000000000)))
		return 0;
	else
		return nf_cli_usage_error(
			"watch", "%s, not '%s'",
			c == 'm'   ? "--metrics needs [ADDR:]PORT (a numeric address; IPv6 in brackets)"
			: c == 'M' ? "--metrics-file needs a PATH"
			: c == 'S' ? "--metrics-max-series needs a number from 1 to 1000000"
				   : "--metrics-expire needs a number of seconds from 1 to 1000000000",
			nf_cli_quote(arg, q));
	return 0;
}

/* A --netns word, kept. 0, or -1 after saying why. */
static int add_spec(struct nf_watch *w, const char *arg)
{
	const char **a;

	if (!*arg) {
		nf_cli_usage_error("watch", "--netns needs a NAME, PATH or PID");
		return -1;
	}
	if (!(a = realloc(w->specs, (w->nspecs + 1) * sizeof(*a)))) {
		nf_cli_warnx(0, "out of memory");
		return -1;
	}
	w->specs = a;
	w->specs[w->nspecs++] = arg;
	return 0;
}

/* Options into *w: 0, -1 after --help, or NF_EXIT_USAGE after saying why. */
static int parse_args(struct nf_watch *w, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "interface", required_argument, NULL, 'i' },
		{ "time", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "log", required_argument, NULL, 'l' },
		{ "fix", no_argument, NULL, 'f' },
		{ "attach", no_argument, NULL, 'a' },
		{ "netns", required_argument, NULL, 'n' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "metrics-file", required_argument, NULL, 'M' },
		{ "metrics-max-series", required_argument, NULL, 'S' },
		{ "metrics-expire", required_argument, NULL, 'E' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char q[NF_CLI_QUOTE_MAX];
	int c;

	optind = 1;
	opterr = 0; /* getopt would print the word raw, and a second line */
	while ((c = getopt_long(argc, argv, "+:i:t:l:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			w->ifname = optarg;
			break;
		case 't':
			if ((w->seconds = parse_seconds(optarg)) < 0)
				return nf_cli_usage_error("watch", "-t needs a number of seconds > 0, "
							  "not '%s'", nf_cli_quote(optarg, q));
			break;
		case 'j':
			w->json = 1;
			break;
		case 'l':
			w->log_path = optarg;
			break;
		case 'f':
			w->fix = 1;
			break;
		case 'a':
			w->attach = 1;
			break;
		case 'n':
			if (add_spec(w, optarg) < 0)
				return NF_EXIT_USAGE;
			break;
		case 'm':
		case 'M':
		case 'S':
		case 'E':
			if (metrics_arg(w, c, optarg) != 0)
				return NF_EXIT_USAGE;
			break;
		case 'h':
			fputs(nf_cli_usage_watch, stdout);
			return -1;
		default: /* '?' an unknown option, ':' one without its argument */
			return nf_cli_bad_option("watch", c, argc, argv, longopts);
		}
	}
	if (optind < argc)
		return nf_cli_usage_error("watch", "unexpected argument '%s'",
					  nf_cli_quote(argv[optind], q));
	if (w->log_path && !*w->log_path)
		return nf_cli_usage_error("watch", "-l needs a LOG path");
	if (w->attach && !w->fix)
		return nf_cli_usage_error("watch", "--attach goes with --fix");
	return 0;
}

static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: poll returns at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* When the loop's periodic work is due next (CLOCK_MONOTONIC ns). */
struct clocks {
	uint64_t deadline; /* -t's, 0 none */
	uint64_t next_tick, next_scan, next_flush, next_drops;
};

static uint8_t dir_of(uint8_t pkttype)
{
	switch (pkttype) {
	case PACKET_OUTGOING:
		return NF_DIR_OUT;
	case PACKET_HOST:
	case PACKET_BROADCAST:
	case PACKET_MULTICAST:
		return NF_DIR_IN;
	default:
		return NF_DIR_UNKNOWN;
	}
}

/* Frame f of ns's capture, to its detector (ns NULL: the namespace was
 * closed since, its frames are not read). */
static void feed(struct nf_watch *w, struct nf_watch_ns *ns, const struct nf_ring_frame *f)
{
	struct nf_pkt p;

	memset(&p, 0, sizeof(p));
	p.dir = dir_of(f->pkttype);
	w->frames++;
	if (!ns || nf_pkt_decode(NF_LINK_NETWORK, f->ethertype, f->data, f->caplen, f->origlen, &p) !=
	    NF_SKIP_NONE) {
		w->skipped++;
		return;
	}
	p.ts_ns = f->ts_ns;
	w->cur = ns;
	w->cur_wire = nf_watch_wire_of(w, ns, f);
	nf_wire_packet(w->cur_wire->wire, &p);
	w->cur = NULL;
	w->cur_wire = NULL;
}

/* The JSON line of what was captured and missed. */
static void stats_json(FILE *to, const struct nf_watch *w, const struct nf_ring_stats *rs,
		       const struct nf_wire_stats *ws, double secs)
{
	fprintf(to,
		"{\"event\":\"wire_stats\",\"source\":\"watch\",\"seconds\":%.3f,"
		"\"captured\":%llu,\"drops\":%llu,\"segments\":%llu,\"conns\":%llu,"
		"\"live_conns\":%llu,\"peak_conns\":%llu,\"duplicates\":%llu,"
		"\"one_way\":%llu,\"not_tcp\":%llu}\n",
		secs, (unsigned long long)rs->packets, (unsigned long long)rs->drops,
		(unsigned long long)ws->packets, (unsigned long long)ws->conns,
		(unsigned long long)ws->live, (unsigned long long)ws->peak,
		(unsigned long long)ws->duplicates, (unsigned long long)ws->one_way,
		(unsigned long long)w->skipped);
}

/* Says within DROPS_MS (not only at the end) that the kernel dropped
 * packets since the last look: a line on standard output (JSON: the stats
 * line). */
static void say_drops(struct nf_watch *w)
{
	struct nf_ring_stats rs;

	nf_watch_netns_ring_stats(w, &rs);
	if (rs.drops <= w->drops_said)
		return;
	if (w->json) {
		struct nf_wire_stats ws;

		nf_watch_wires_stats(w, &ws);
		stats_json(w->out, w, &rs, &ws, 0);
	} else {
		fprintf(w->out, "watch: %llu packets dropped by the kernel so far (ring full): "
				"stalls may have been missed\n", (unsigned long long)rs.drops);
	}
	fflush(w->out);
	w->drops_said = rs.drops;
}

/* The clocks' work, between frames: expiry, flush, drops, the scan for
 * namespaces. 1 at the deadline. */
static int on_clock(struct nf_watch *w, struct clocks *c)
{
	uint64_t mono = clock_ns(CLOCK_MONOTONIC);

	if (c->deadline && mono >= c->deadline)
		return 1;
	if (mono >= c->next_tick || w->resize_due) {
		nf_watch_netns_tick(w, mono / 1000000u);
		w->resize_due = 0;
	}
	if (mono >= c->next_tick) {
		nf_watch_wires_expire(w, clock_ns(CLOCK_REALTIME));
		nf_watch_metrics_tick(w, mono);
		c->next_tick = mono + TICK_MS * 1000000u;
	}
	if (mono >= c->next_scan) {
		nf_watch_netns_scan(w, 1);
		c->next_scan = mono + NF_WATCH_SCAN_MS * 1000000u;
	} else {
		nf_watch_netns_scan(w, 0); /* a census the thread took, applied as it comes */
	}
	if (mono >= c->next_flush) {
		nf_watch_json_flush(w);
		c->next_flush = mono + NF_WATCH_FLUSH_S * 1000000000ull;
	}
	if (mono >= c->next_drops) {
		say_drops(w);
		c->next_drops = mono + DROPS_MS * 1000000ull;
	}
	return 0;
}

/* Reads the captures until a signal or the deadline, then what they
 * hold. 0, or 1 if reading failed. */
static int run(struct nf_watch *w)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	struct clocks c = {
		.deadline = w->seconds > 0 ? now + (uint64_t)(w->seconds * 1e9) : 0,
		.next_tick = now + TICK_MS * 1000000u,
		.next_scan = now + NF_WATCH_SCAN_MS * 1000000u,
		.next_flush = now + NF_WATCH_FLUSH_S * 1000000000ull,
		.next_drops = now + DROPS_MS * 1000000ull,
	};
	struct nf_ring_frame f;
	struct nf_watch_ns *ns;
	int rc;

	while (!stop_signal) {
		/* with metrics, the wait is watch_metrics.c's: the rings and the endpoint */
		if ((rc = nf_watch_stream_next(w, w->metrics ? 0 : TICK_MS, &f, &ns)) < 0) {
			nf_cli_warnx(0, "reading the rings: %s", strerror(errno));
			return 1;
		}
		if (rc > 0) {
			feed(w, ns, &f);
			if (w->frames % 64) /* the clocks (and the endpoint) every 64 frames while busy */
				continue;
		}
		if (w->metrics) /* frames held for their order are due within the hold */
			nf_watch_metrics_wait(w, rc > 0 || w->nready ? 0 : w->nheld ? 10 : TICK_MS);
		if (on_clock(w, &c))
			break;
	}
	nf_watch_stream_drain(w);
	while (nf_watch_stream_next(w, 0, &f, &ns) > 0)
		feed(w, ns, &f);
	return 0;
}

/* What was captured and missed, after the table. */
static void print_totals(struct nf_watch *w, double secs)
{
	struct nf_ring_stats rs;
	struct nf_wire_stats ws;

	nf_watch_netns_ring_stats(w, &rs);
	nf_watch_wires_stats(w, &ws);
	if (w->json)
		stats_json(w->out, w, &rs, &ws, secs);
	else
		fprintf(w->out,
			"watch: %.1f s, %llu packets captured, %llu dropped by the kernel (ring full)%s\n",
			secs, (unsigned long long)rs.packets, (unsigned long long)rs.drops,
			rs.drops ? ": stalls may have been missed" : "");
	if (w->log)
		stats_json(w->log, w, &rs, &ws, secs);
}

/* The table (text) and the rows' last JSON lines, then the totals. */
static void report(struct nf_watch *w, double secs)
{
	struct nf_holder *const *rows;
	struct nf_wire_stats ws;
	size_t n;

	nf_watch_json_flush(w);
	if (!w->json) {
		n = nf_watch_wires_rows(w, &rows);
		nf_watch_wires_stats(w, &ws);
		nf_cli_wire_table(w->out, rows, n, &ws);
	}
	print_totals(w, secs);
	fflush(w->out);
}

static int open_all(struct nf_watch *w)
{
	if (w->log_path && !(w->log = fopen(w->log_path, "ae"))) {
		nf_cli_warnx(0, "%s: %s", w->log_path, strerror(errno));
		return 1;
	}
	if (w->log)
		setvbuf(w->log, NULL, _IOLBF, 0);
	nf_wire_opts_default(&w->wire_opts);
	w->wire_opts.on_first = on_first;
	w->wire_opts.on_conn = on_conn;
	if (w->metrics_addr || w->metrics_file)
		w->wire_opts.on_stall = nf_watch_metrics_stall;
	w->wire_opts.arg = w;
	if (nf_watch_wires_open(w) < 0 || nf_watch_stream_open(w) < 0) {
		nf_cli_warnx(0, "out of memory");
		return 1;
	}
	if (nf_watch_netns_open(w) || nf_watch_metrics_open(w))
		return 1;
	if (w->all_ns || w->nspecs) /* namespaces may come and go: their rings off the loop */
		nf_watch_capwork_start(w); /* else (it failed) the loop opens them itself */
	return 0;
}

static void close_all(struct nf_watch *w)
{
	nf_watch_metrics_close(w);
	nf_watch_json_free(w);
	nf_watch_capwork_stop(w);
	nf_watch_netns_close_all(w);
	nf_watch_holders_free(w);
	nf_watch_stream_close(w);
	nf_watch_wires_free(w);
	free(w->specs);
	if (w->log)
		fclose(w->log);
}

/* Where watch says it captures. */
static void say_start(const struct nf_watch *w)
{
	char ns[64] = "";

	if (w->nrings > 1 || w->all_ns || w->nspecs)
		snprintf(ns, sizeof(ns), " of %u network namespace%s%s", w->nrings,
			 w->nrings == 1 ? "" : "s", w->all_ns ? " (and those to come)" : "");
	nf_cli_warnx(0, "TCP on %s%s%s; SIGINT or SIGTERM ends it",
		     w->ifname ? w->ifname : "every interface", ns,
		     w->fix ? ", fixing each holder here" : "");
}

int nf_cli_watch(int argc, char **argv)
{
	struct nf_watch w;
	uint64_t t0;
	int rc;

	memset(&w, 0, sizeof(w));
	w.out = stdout;
	w.epfd = -1;
	w.self_fd = -1;
	w.metrics_max = NF_METRICS_SERIES_DEFAULT;
	w.metrics_expire = NF_METRICS_EXPIRE_DEFAULT;
	if ((rc = parse_args(&w, argc, argv)) != 0)
		return rc < 0 ? 0 : rc; /* -1: --help */
	if ((rc = open_all(&w)) != 0) {
		close_all(&w);
		return rc;
	}
	catch_signals();
	if (!w.json)
		say_start(&w);
	t0 = clock_ns(CLOCK_MONOTONIC);
	rc = run(&w);
	report(&w, (double)(clock_ns(CLOCK_MONOTONIC) - t0) / 1e9);
	close_all(&w);
	return rc;
}
