/*
 * nf_cli.h - the parts of the naglefix command shared between its files.
 */
#ifndef NF_CLI_H
#define NF_CLI_H

#include <stdio.h>

#include "nf_cap.h"
#include "nf_wire.h"

#define NF_EXIT_USAGE 125

/* Room for a command-line word as nf_cli_quote writes it. */
#define NF_CLI_QUOTE_MAX 256

/* arg as a message quotes it (control and non-ASCII bytes as \xNN,
 * cut to fit), in buf of NF_CLI_QUOTE_MAX bytes; returns buf. */
const char *nf_cli_quote(const char *arg, char buf[NF_CLI_QUOTE_MAX]);

/*
 * A usage error of naglefix (cmd NULL) or of naglefix CMD: one line on
 * stderr, "naglefix[ CMD]: WHAT; try 'naglefix[ CMD] --help'", WHAT from
 * fmt (the caller quotes the words of the command line with
 * nf_cli_quote). Returns NF_EXIT_USAGE.
 */
int nf_cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * What getopt_long refused (its return opt, '?' or ':', with opterr 0),
 * said as nf_cli_usage_error does: the option quoted, and for a missing
 * argument its long name from longopts. Returns NF_EXIT_USAGE.
 */
struct option;
int nf_cli_bad_option(const char *cmd, int opt, int argc, char **argv,
		      const struct option *longopts);

/* s as a JSON string, quotes included, to out (nf_json_char's forms). */
void nf_cli_json_str(FILE *out, const char *s);

/* Puts libnaglefix.so (found next to this program) first in LD_PRELOAD.
 * Returns 0, or -1 after printing why not. */
int nf_cli_preload(void);

/* naglefix audit [-l LOG] [--json] [--] COMMAND [ARG...]: argv[0] is
 * "audit". Returns COMMAND's exit status (128+N if killed by signal N). */
int nf_cli_audit(int argc, char **argv);

/* naglefix report [--json] LOG...: argv[0] is "report". Returns 0, 1 if
 * a log could not be read or is not an audit log, NF_EXIT_USAGE on a
 * usage error. */
int nf_cli_report(int argc, char **argv);

/*
 * Reads the audit logs paths[0..n-1] and prints the table of offending
 * peers (or, json, a JSON array) to out: the empty table when n is 0,
 * none when no log could be read. Returns the number of peers found, or
 * -1 if a log could not be read, was empty or held no audit line (after
 * saying so on stderr).
 */
int nf_report_print(char *const paths[], int n, int json, FILE *out);

/* --- scan and watch (scan.c, watch.c), their output (wire_out.c) --- */

/* Reads the capture c to its end on a second thread (scan_feed.c),
 * decoding each frame; the segments go to w, in order, on the calling
 * thread; frames that are not segments are counted in skipped[kind]
 * (enum nf_pkt_skip). Returns nf_cap_next's last: 0 (the end) or -1
 * (nf_cap_error says why; what came before it was fed). */
int nf_cli_scan_feed(struct nf_cap *c, struct nf_wire *w, unsigned long long *skipped);

/* naglefix scan [--json] CAPTURE...: argv[0] is "scan". Returns 0, 1 if
 * a capture could not be read whole (what was read is still reported),
 * NF_EXIT_USAGE on a usage error. */
int nf_cli_scan(int argc, char **argv);

/* naglefix watch [-i IFACE] [-t SECONDS] [--json] [-l LOG] [--fix]:
 * argv[0] is "watch". Returns 0, 1 on a failure (no CAP_NET_RAW...),
 * NF_EXIT_USAGE on a usage error. */
int nf_cli_watch(int argc, char **argv);

/* The config line that fixes h on the holder's host, in buf: "connect
 * PEER coalesce" for a client, "accept LOCAL nodelay" for a server. */
const char *nf_cli_wire_fix(const struct nf_holder *h, char *buf, size_t len);

/* The table of rows h[0..n-1] (most total stall first) to out, then a
 * line of what was seen (st: connections, one-way ones, duplicates). */
void nf_cli_wire_table(FILE *out, struct nf_holder *const *h, size_t n,
		       const struct nf_wire_stats *st);

/* One JSON line for row h ("event":"wire_stall"; source "scan" or
 * "watch"), field names as the audit log's where they mean the same. */
void nf_cli_wire_json(FILE *out, const struct nf_holder *h, const char *source);

/* One line of what the detector saw (st), for who ("scan", "watch"). */
void nf_cli_wire_stats(FILE *out, const char *who, const struct nf_wire_stats *st);

/* watch's line when a row first stalls: holder, peer, side, process,
 * the stall and the fix. */
void nf_cli_wire_first(FILE *out, const struct nf_holder *h, const struct nf_stall *s);

#endif
