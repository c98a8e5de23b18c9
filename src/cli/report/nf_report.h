/*
 * nf_report.h - naglefix report and naglefix audit, the door of
 * cli/report: what the dispatcher (naglefix.c) calls.
 */
#ifndef NF_REPORT_H
#define NF_REPORT_H

extern const char nf_cli_usage_audit[];  /* their --help (nf_cli.h) */
extern const char nf_cli_usage_report[];

/* naglefix audit [-l LOG] [--json] [--] COMMAND [ARG...]: argv[0] is
 * "audit". Returns COMMAND's exit status (128+N if killed by signal N). */
int nf_cli_audit(int argc, char **argv);

/* naglefix report [--json] LOG...: argv[0] is "report". Returns 0, 1 if
 * a log could not be read or is not an audit log, NF_EXIT_USAGE on a
 * usage error. */
int nf_cli_report(int argc, char **argv);

#endif
