/*
 * fix_args.c - naglefix fix's command line (fix_int.h): its usage text
 * (what fix --help prints, the one copy), its options table, and the
 * checks of its words, each said as a usage error.
 */
#include "fix_int.h"

#include <getopt.h>
#include <stdlib.h>

#include "cli/common/nf_cli.h"
#include "nf_config.h"

const char nf_cli_usage_fix[] =
	"usage: naglefix fix [-c CONF | -m nodelay] [--dry-run] [--follow [-i MS]] [--json]\n"
	"                    TARGET...\n"
	"       naglefix fix --undo [--dry-run] [--json] TARGET...\n"
	"       TARGET: a PID, --cgroup PATH or --unit NAME (each repeatable)\n"
	"\n"
	"Applies CONF's rules (default: $NAGLEFIX_CONF, else " NF_CONF_DEFAULT_PATH ";\n"
	"no file: nodelay) or nodelay for every socket to the TCP sockets of\n"
	"running processes, from outside (pidfd_getfd: root, or ptrace rights over\n"
	"them). nodelay rules are applied, to listeners too (the connections they\n"
	"accept later get it); coalesce, auto, quickack and audit need the\n"
	"library and are left.\n"
	"\n"
	"  -c, --config CONF  the policy file\n"
	"  -m, --mode nodelay nodelay for every socket\n"
	"  -n, --dry-run      say what would be done, change nothing\n"
	"  -f, --follow       rescan until the processes end or SIGINT/SIGTERM\n"
	"  -i, --interval MS  --follow's rescan period (default 100)\n"
	"      --json         one JSON line a socket\n"
	"  -u, --undo         turn off again what fix turned on (and only that)\n"
	"      --cgroup PATH  every process of cgroup PATH and below it, when fix starts\n"
	"                     (a cgroup2 path, absolute or relative to its mount)\n"
	"      --unit NAME    every process of the running systemd unit NAME (.service\n"
	"                     if NAME has no suffix), when fix starts\n"
	"\n"
	"Exit status: 0 done; 1 a socket not handled; 2 no permission; 3 no\n"
	"pidfd_getfd; 4 a process ended or its PID was reused; 5 naglefix's own\n"
	"descriptor limit; 6 a process held no TCP socket (nothing to fix);\n"
	"125 a usage error.\n";

const struct option nf_fix_longopts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "mode", required_argument, NULL, 'm' },
	{ "dry-run", no_argument, NULL, 'n' },
	{ "follow", no_argument, NULL, 'f' },
	{ "json", no_argument, NULL, 'j' },
	{ "undo", no_argument, NULL, 'u' },
	{ "interval", required_argument, NULL, 'i' },
	{ "cgroup", required_argument, NULL, 'G' },
	{ "unit", required_argument, NULL, 'U' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int nf_fix_usage_err(const char *msg, const char *word)
{
	char q[NF_CLI_QUOTE_MAX];

	if (word)
		return nf_cli_usage_error("fix", "%s '%s'", msg, nf_cli_quote(word, q));
	return nf_cli_usage_error("fix", "%s", msg);
}

int nf_fix_check_pids(int n, char **pids, int ngroups)
{
	if (n == 0 && ngroups == 0)
		return nf_fix_usage_err("no PID, --cgroup or --unit given", NULL);
	for (int i = 0; i < n; i++) {
		char *end;
		long v = strtol(pids[i], &end, 10);

		if (*end || end == pids[i] || v <= 0 || v > 0x3fffffff)
			return nf_fix_usage_err("not a PID:", pids[i]);
	}
	return 0;
}
