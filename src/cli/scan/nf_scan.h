/*
 * nf_scan.h - naglefix scan, the door of cli/scan: what the dispatcher
 * (naglefix.c) calls.
 */
#ifndef NF_SCAN_H
#define NF_SCAN_H

extern const char nf_cli_usage_scan[]; /* its --help (nf_cli.h) */

/* naglefix scan [--json] CAPTURE...: argv[0] is "scan". Returns 0, 1 if
 * a capture could not be read whole (what was read is still reported),
 * NF_EXIT_USAGE on a usage error. */
int nf_cli_scan(int argc, char **argv);

#endif
