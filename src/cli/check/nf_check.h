/*
 * nf_check.h - naglefix check, the door of cli/check: what the
 * dispatcher (naglefix.c) calls.
 */
#ifndef NF_CHECK_H
#define NF_CHECK_H

extern const char nf_cli_usage_check[]; /* its --help (nf_cli.h) */

/* naglefix check [FILE]: argv[0] is "check". Returns 0 (valid, or no
 * file to read), 1 after saying each error of the file and of
 * NAGLEFIX_MODE, NF_EXIT_USAGE on a usage error. */
int nf_cli_check(int argc, char **argv);

#endif
