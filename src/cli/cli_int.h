/*
 * cli_int.h - the parts of the naglefix command shared between its files.
 */
#ifndef NF_CLI_INT_H
#define NF_CLI_INT_H

#include <stdint.h>
#include <stdio.h>

#include "wire/nf_cap.h"
#include "wire/nf_wire.h"

#define NF_EXIT_USAGE 125

/*
 * Each command's usage: the text naglefix CMD --help prints, kept in
 * CMD's own file, the one copy. It starts with its synopsis: a line
 * "usage: naglefix CMD ...", then the lines indented as one (7 spaces or
 * more), which naglefix --help lists; tests/cli/usage_man.py checks the
 * options each names against naglefix(1).
 */
extern const char nf_cli_usage_check[];  /* check.c */
extern const char nf_cli_usage_audit[];  /* audit.c */
extern const char nf_cli_usage_report[]; /* report.c */
extern const char nf_cli_usage_fix[];    /* fix.c */
extern const char nf_cli_usage_scan[];   /* scan.c */
extern const char nf_cli_usage_watch[];  /* watch.c */
extern const char nf_cli_usage_attach[]; /* attach.c */
extern const char nf_cli_usage_detach[]; /* detach.c */

/* Room for a command-line word as nf_cli_quote writes it. */
#define NF_CLI_QUOTE_MAX 256

/* arg as a message quotes it (control and non-ASCII bytes as \xNN,
 * cut to fit), in buf of NF_CLI_QUOTE_MAX bytes; returns buf. */
const char *nf_cli_quote(const char *arg, char buf[NF_CLI_QUOTE_MAX]);

/*
 * The command's messages, in util-linux's err(3)/warnx(3) shape: one line
 * on stderr, "naglefix CMD: " (CMD the subcommand running, which main
 * sets with nf_cli_set_cmd before it dispatches; "naglefix: " for the run
 * mode), then the message from fmt, then a newline; errno is kept.
 * nf_cli_warnx returns status, for a caller that has something to undo
 * first; nf_cli_errx flushes stdout (what was printed stays before the
 * message) and exits with status.
 */
void nf_cli_set_cmd(const char *cmd);
int nf_cli_warnx(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void nf_cli_errx(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/*
 * The usage form of nf_cli_warnx: a usage error of naglefix (cmd NULL) or
 * of naglefix CMD: one line on
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

/*
 * Opens path to read a stream from ("-": standard input, whatever it is):
 * a regular file or a FIFO (whose open waits for a writer). Returns the
 * descriptor; -2 with *why the kind of file it is ("a directory", "a
 * character device", "a block device", "a socket"), said before it is
 * opened (opening a device may act on it); -1 with *why strerror's or
 * another reason when it cannot be found or opened.
 */
int nf_cli_open_input(const char *path, const char **why);

/* s as a JSON string, quotes included, to out (nf_json_char's forms). */
void nf_cli_json_str(FILE *out, const char *s);

/* Puts libnaglefix.so (found next to this program) first in LD_PRELOAD.
 * Returns 0, or -1 after printing why not. */
int nf_cli_preload(void);

/* --- lines of outside origin (lines.c) --- */

/* The lines of a descriptor, read in a buffer of fixed size. */
struct nf_lines {
	int fd;
	char *buf;                  /* cap + 1 bytes */
	size_t cap;                 /* the longest line kept, and its newline */
	size_t start, scan, end;    /* the next line; where its newline is looked for; the bytes read */
	int eof, err;               /* read returned 0; its errno */
	unsigned long long skipped; /* lines longer than the limit, read through */
	unsigned long long bytes;   /* bytes read */
};

/* Reads fd's lines of at most max bytes (newline excluded) into l; its
 * buffer (max + 2 bytes) is made here. 0, or -ENOMEM. */
int nf_lines_init(struct nf_lines *l, int fd, size_t max);

/*
 * The next line, NUL-terminated, without its newline, in *line (*len
 * bytes; it may hold a NUL), valid until the next call; the last line may
 * lack its newline. A longer line is read through and counted in
 * l->skipped, never returned. Returns 1, 0 at the end of the input, -1
 * on a read error (l->err; the lines before it were given).
 */
int nf_lines_next(struct nf_lines *l, char **line, size_t *len);

/* Frees l's buffer (the descriptor stays open). */
void nf_lines_free(struct nf_lines *l);

/* naglefix check [FILE]: argv[0] is "check". Returns 0 (valid, or no
 * file to read), 1 after saying each error of the file and of
 * NAGLEFIX_MODE, NF_EXIT_USAGE on a usage error. */
int nf_cli_check(int argc, char **argv);

/* Before naglefix -- COMMAND starts: if the library cannot enter COMMAND
 * (as execvp finds it), says so on stderr, with what reaches it instead. */
void nf_cli_unseen_say(const char *cmd);

/* What audit learns of where the library went (unseen.c). */
struct nf_cli_unseen;

/*
 * Before audit starts cmd: says on stderr if the library cannot enter it,
 * makes the record file the library writes to and names it in
 * NAGLEFIX_REACH. NULL if it cannot (out of memory, no temporary file):
 * nothing can then be told of what was not seen.
 */
struct nf_cli_unseen *nf_cli_unseen_open(const char *cmd);

/* After cmd ended, reads what the library wrote: 1 if it saw anything
 * to give a verdict on (a process entered, a TCP socket there), or if
 * that cannot be told (r NULL, the file unreadable); else 0. */
int nf_cli_unseen_seen(struct nf_cli_unseen *r);

/*
 * Says on stderr what was not seen (after nf_cli_unseen_seen; not if
 * COMMAND never ran: call it without): that nothing was, and why ("no
 * verdict" first unless table, a table printed of what the log held),
 * each program started that the library could not enter, and what sees
 * them instead. Removes the record file and frees r (NULL is allowed).
 */
void nf_cli_unseen_close(struct nf_cli_unseen *r, int table);

/* naglefix audit [-l LOG] [--json] [--] COMMAND [ARG...]: argv[0] is
 * "audit". Returns COMMAND's exit status (128+N if killed by signal N). */
int nf_cli_audit(int argc, char **argv);

/* naglefix report [--json] LOG...: argv[0] is "report". Returns 0, 1 if
 * a log could not be read or is not an audit log, NF_EXIT_USAGE on a
 * usage error. */
int nf_cli_report(int argc, char **argv);

/* What report holds at most, whatever its input: the longest line read
 * (a longer one is skipped and counted), and the memory for what it keeps
 * of the lines (rows, texts, stall values; past it, a new one is not kept,
 * and that is said). */
#define NF_REPORT_LINE_MAX (64u << 10)
#define NF_REPORT_MEM_MAX (64u << 20)

/* The stalls of report's rows, for their medians (report_stalls.c). */
struct nf_report_stalls;

/* An empty table, or NULL on no memory. */
struct nf_report_stalls *nf_report_stalls_new(void);

/* count stalls of ms each in row (0, 1, ...). 0, or -1 when a new
 * (row, ms) would grow the table past *left bytes (what it grows by is
 * taken from *left), or on no memory: the stalls are not kept. */
int nf_report_stalls_add(struct nf_report_stalls *s, size_t *left, uint32_t row, double ms,
			 unsigned long count);

/* median[r] = the median of row r's stalls kept, for r < nrows (rows
 * with none keep theirs). Spends the table: it is empty afterwards. */
void nf_report_stalls_medians(struct nf_report_stalls *s, double *median, size_t nrows);

void nf_report_stalls_free(struct nf_report_stalls *s);

/*
 * Reads the audit logs paths[0..n-1] and prints the table of offending
 * peers (or, json, a JSON array) to out: the empty table when n is 0,
 * none when no log could be read. Returns the number of peers found, or
 * -1 if a log could not be read, was empty or held no audit line (after
 * saying so on stderr).
 */
int nf_report_print(char *const paths[], int n, int json, FILE *out);

/* --- scan and watch (scan.c, watch.c), their output (wire_out.c) --- */

/* Reads the capture c to its end, decoding each frame, and feeds the
 * segments to w in order, on the calling thread and a second one (either
 * does either half, scan_feed.c; w is fed by one at a time); frames
 * that are not segments are counted in skipped[kind]
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

/* Row h's namespace as JSON members (",\"netns\":...,\"netns_inode\":N"),
 * nothing if it has none. */
void nf_cli_wire_json_netns(FILE *out, const struct nf_holder *h);

/* One line of what the detector saw (st), for who ("scan", "watch"). */
void nf_cli_wire_stats(FILE *out, const char *who, const struct nf_wire_stats *st);

/* watch's line when a row first stalls: holder, peer, side, process,
 * the stall and the fix. */
void nf_cli_wire_first(FILE *out, const struct nf_holder *h, const struct nf_stall *s);

#endif
