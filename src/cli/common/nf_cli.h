/*
 * nf_cli.h - what every command of naglefix uses (util.c): its messages
 * in err(3)'s shape (the only writer of stderr below src/cli: the layer
 * check fails on another), its usage errors, a word quoted, an input opened,
 * a JSON string, the library put in LD_PRELOAD.
 *
 * Each command's usage is the text naglefix CMD --help prints, kept in
 * CMD's own file, the one copy, and declared in its folder's door
 * (nf_cli_usage_CMD in cli/CMD/nf_CMD.h). It starts with its synopsis: a
 * line "usage: naglefix CMD ...", then the lines indented as one (7
 * spaces or more), which naglefix --help lists; tests/cli/usage_man.py
 * checks the options each names against naglefix(1).
 */
#ifndef NF_CLI_H
#define NF_CLI_H

#include <stdint.h>
#include <stdio.h>

/* The exit status of a usage error, every command's. */
#define NF_EXIT_USAGE 125

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
 * message) and exits with status. nf_cli_set_cmd returns the name it
 * replaces (a command that runs another's work under that one's name,
 * as attach --now runs fix's, puts it back after).
 */
const char *nf_cli_set_cmd(const char *cmd);
int nf_cli_warnx(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void nf_cli_errx(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/*
 * nf_cli_warnx under the name cmd instead of the command running
 * ("naglefix CMD: ", "naglefix: " for NULL): for code several commands
 * share, which says its lines under the name its caller gives (attach's
 * for attach, detach, "attach --list" and watch --fix --attach), and for
 * the lines that repeat the library's own ("naglefix: FILE:LINE: ...").
 * Returns status.
 */
int nf_cli_warnx_as(const char *cmd, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* One more line under the message said before it, on stderr: fmt's text
 * indented four spaces, no name (a kernel verifier's log, line by line);
 * errno kept. */
void nf_cli_warn_more(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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

#endif
