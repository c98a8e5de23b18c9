/*
 * nf_watch.h - naglefix watch, the door of cli/watch: what the
 * dispatcher (naglefix.c) calls.
 */
#ifndef NF_WATCH_H
#define NF_WATCH_H

extern const char nf_cli_usage_watch[]; /* its --help (nf_cli.h) */

/* naglefix watch [-i IFACE] [-t SECONDS] [--json] [-l LOG] [--fix]:
 * argv[0] is "watch". Returns 0, 1 on a failure (no CAP_NET_RAW...),
 * NF_EXIT_USAGE on a usage error. */
int nf_cli_watch(int argc, char **argv);

#endif
