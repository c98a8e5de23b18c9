/*
 * naglefix - run a command with libnaglefix.so preloaded, or check a
 * config file.
 *
 *   naglefix [-c FILE] [-m ACTION] [-l LOG] [--] COMMAND [ARG...]
 *   naglefix check [FILE]                                    (check.c)
 *   naglefix audit [-l LOG] [--json] [--] COMMAND [ARG...]   (audit.c)
 *   naglefix report [--json] LOG...                          (report.c)
 *
 * Exit status: COMMAND's own; 125 for naglefix's own errors, 126 if
 * COMMAND cannot be run, 127 if it is not found (as env(1) does).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach_int.h"
#include "cli_int.h"
#include "fix_int.h"
#include "nf_config.h"
#include "nf_policy.h"
#include "nf_version.h"

#define EXIT_USAGE NF_EXIT_USAGE

static const char usage_text[] =
	"usage: naglefix [-c FILE] [-m ACTION] [-l LOG] [--] COMMAND [ARG...]\n"
	"       naglefix check [FILE]\n"
	"       naglefix audit [-l LOG] [--json] [--] COMMAND [ARG...]\n"
	"       naglefix report [--json] LOG...\n"
	"       naglefix fix [-c CONF | -m nodelay] [--dry-run] [--follow] [--json] PID...\n"
	"       naglefix scan [--json] CAPTURE...\n"
	"       naglefix watch [-i IFACE] [-t SECONDS] [--json] [-l LOG] [--fix [--attach]]\n"
	"       naglefix attach [-c CONF | -m nodelay] [--cgroup PATH | --unit NAME | --pid PID] [--now]\n"
	"       naglefix attach --list\n"
	"       naglefix detach [--cgroup PATH | --unit NAME | --pid PID | --all]\n"
	"\n"
	"Runs COMMAND with libnaglefix.so preloaded, which removes the ~40 ms\n"
	"stall of small split writes (Nagle's algorithm meeting delayed ACK).\n"
	"\n"
	"  -c, --config FILE  policy file (sets NAGLEFIX_CONF); none: no file\n"
	"  -m, --mode ACTION  default action: pass, nodelay, coalesce, audit,\n"
	"                     auto or quickack\n"
	"                     (sets NAGLEFIX_MODE, which overrides the file's default)\n"
	"  -l, --log LOG      where messages go: a path (%p = pid), stderr or syslog\n"
	"  -h, --help         this text\n"
	"  -V, --version      the version\n"
	"\n"
	"check [FILE]         validate FILE (default: $NAGLEFIX_CONF, else\n"
	"                     " NF_CONF_DEFAULT_PATH ", if it exists) and\n"
	"                     $NAGLEFIX_MODE; every error said, then exit 1\n"
	"audit COMMAND        run COMMAND with every socket audited (nothing\n"
	"                     changed), then print its split-write stalls per\n"
	"                     peer, with the config line that fixes each, on\n"
	"                     stderr (--json: a JSON array on stdout); -l LOG\n"
	"                     keeps the JSON lines in LOG\n"
	"report LOG...        the same table from saved audit logs (and from\n"
	"                     scan's and watch's --json lines)\n"
	"fix PID...           TCP_NODELAY (the config's nodelay rules, or -m nodelay)\n"
	"                     on the TCP sockets of running processes, from\n"
	"                     outside; --undo turns it off again (fix -h)\n"
	"scan CAPTURE...      the stalls of packet captures (pcap, pcapng; - for\n"
	"                     standard input): every end that held, with its fix\n"
	"watch                the same on the live host (every interface, or -i),\n"
	"                     each holder with its pid and command, until -t\n"
	"                     SECONDS or SIGINT/SIGTERM; needs CAP_NET_RAW; --fix\n"
	"                     sets TCP_NODELAY on each holder's socket here\n"
	"attach               the config's nodelay rules in the kernel for a cgroup\n"
	"                     (the host, --cgroup, --unit, --pid): every new TCP\n"
	"                     connection of it, any program, for as long as the\n"
	"                     cgroup lives; --list shows where (attach -h)\n"
	"detach               takes naglefix's program off again (detach -h)\n";

/* --help: the whole text on stdout, status 0. */
static int help(void)
{
	fputs(usage_text, stdout);
	return 0;
}

/* Sets name to path made absolute (launchers change directory). */
static int setenv_path(const char *name, const char *path)
{
	char cwd[PATH_MAX], abs[2 * PATH_MAX + 2];

	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return setenv(name, path, 1);
	snprintf(abs, sizeof(abs), "%s/%s", cwd, path);
	return setenv(name, abs, 1);
}

/* -l LOG: NAGLEFIX_LOG, a path made absolute, or stderr or syslog as they
 * are. -1 after saying why not: an empty LOG (the library would open "./"). */
static int set_log(const char *arg)
{
	if (!*arg) {
		nf_cli_usage_error(NULL, "-l needs a LOG (a path, stderr or syslog)");
		return -1;
	}
	if (strcmp(arg, "stderr") == 0 || strcmp(arg, "syslog") == 0)
		setenv("NAGLEFIX_LOG", arg, 1);
	else
		setenv_path("NAGLEFIX_LOG", arg);
	return 0;
}

/* -c FILE: NAGLEFIX_CONF, made absolute, but "none" (no file) as it is.
 * -1 after saying why not: an empty FILE (the library would read "./"). */
static int set_config(const char *arg)
{
	if (!*arg) {
		nf_cli_usage_error(NULL, "-c needs a FILE (-c none: no file at all)");
		return -1;
	}
	if (strcmp(arg, "none") == 0)
		setenv("NAGLEFIX_CONF", "none", 1);
	else
		setenv_path("NAGLEFIX_CONF", arg);
	return 0;
}

/* An empty variable counts as unset, as it does for the library. */
static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/*
 * The policy the library is to read (NAGLEFIX_CONF, which -c sets, or the
 * default file; NAGLEFIX_MODE, which -m sets), read now: a program started
 * under one the library refuses would run with every socket passed, each
 * of its processes saying why. -1 after saying what is wrong, for cmd.
 */
static int check_policy(const char *cmd)
{
	char err[512], q[NF_CLI_QUOTE_MAX];
	struct nf_policy p;

	if (nf_config_load(&p, env("NAGLEFIX_CONF"), env("NAGLEFIX_MODE"), 0, err, sizeof(err)) < 0) {
		fprintf(stderr, "naglefix: %s; %s not started\n", err, nf_cli_quote(cmd, q));
		return -1;
	}
	nf_policy_free(&p);
	return 0;
}

static int run(char **argv)
{
	if (check_policy(argv[0]) < 0 || nf_cli_preload() < 0)
		return EXIT_USAGE;
	nf_cli_unseen_say(argv[0]);
	/* an exec the library cannot follow is said too (unless audit asked first) */
	setenv("NAGLEFIX_REACH", "log", 0);
	execvp(argv[0], argv);
	fprintf(stderr, "naglefix: %s: %s\n", argv[0], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

static const struct option longopts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "mode", required_argument, NULL, 'm' },
	{ "log", required_argument, NULL, 'l' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

int main(int argc, char **argv)
{
	char q[NF_CLI_QUOTE_MAX];
	enum nf_action a;
	int opt;

	if (argc > 1 && strcmp(argv[1], "check") == 0)
		return nf_cli_check(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "audit") == 0)
		return nf_cli_audit(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "report") == 0)
		return nf_cli_report(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "fix") == 0)
		return nf_cli_fix(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "scan") == 0)
		return nf_cli_scan(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "watch") == 0)
		return nf_cli_watch(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "attach") == 0)
		return nf_cli_attach(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "detach") == 0)
		return nf_cli_detach(argc - 1, argv + 1);
	opterr = 0; /* getopt would print the word raw: bad_option quotes it */
	while ((opt = getopt_long(argc, argv, "+:c:m:l:hV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			if (set_config(optarg) < 0)
				return EXIT_USAGE;
			break;
		case 'm':
			if (nf_policy_parse_action(optarg, &a) < 0)
				return nf_cli_usage_error(NULL, "unknown action '%s' (expected "
							  NF_ACTION_LIST ")", nf_cli_quote(optarg, q));
			setenv("NAGLEFIX_MODE", optarg, 1);
			break;
		case 'l':
			if (set_log(optarg) < 0)
				return EXIT_USAGE;
			break;
		case 'h':
			return help();
		case 'V':
			printf("naglefix %s\n", NF_VERSION);
			return 0;
		default: /* '?' an unknown option, ':' one without its argument */
			return nf_cli_bad_option(NULL, opt, argc, argv, longopts);
		}
	}
	if (optind >= argc)
		return nf_cli_usage_error(NULL, "no COMMAND to run");
	return run(argv + optind);
}
