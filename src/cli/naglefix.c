/*
 * naglefix - the command: one run mode and eight subcommands, each in its
 * folder of src/cli, which main dispatches to by the first word through
 * the folder's door (nf_CMD.h).
 *
 *   naglefix [-c FILE] [-m ACTION] [-l LOG] [--] COMMAND [ARG...]  (here)
 *   naglefix check [FILE]                        validate a config (check/)
 *   naglefix audit ... COMMAND [ARG...]          COMMAND's stalls (report/audit.c)
 *   naglefix report ... LOG...                   the table from logs (report/)
 *   naglefix fix ... TARGET...                   TCP_NODELAY from outside (fix/)
 *   naglefix scan ... CAPTURE...                 the stalls of captures (scan/)
 *   naglefix watch ...                           the stalls of the live host (watch/)
 *   naglefix attach ...                          rules in the kernel for a cgroup (attach/)
 *   naglefix detach ...                          them taken off again (attach/detach.c)
 *
 * Each one's options are in its usage text (nf_cli_usage_CMD, in its folder's door nf_CMD.h);
 * naglefix --help lists their synopses. Exit status of the run mode:
 * COMMAND's own; 125 for naglefix's own errors, 126 if COMMAND cannot be
 * run, 127 if it is not found (as env(1) does).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/attach/nf_attach.h"
#include "cli/check/nf_check.h"
#include "cli/common/nf_cli.h"
#include "cli/common/nf_unseen.h"
#include "cli/fix/nf_fix.h"
#include "cli/report/nf_report.h"
#include "cli/scan/nf_scan.h"
#include "cli/watch/nf_watch.h"
#include "nf_config.h"
#include "nf_policy.h"
#include "nf_version.h"

#define EXIT_USAGE NF_EXIT_USAGE

static const char usage_text[] =
	"usage: naglefix [-c FILE] [-m ACTION] [-l LOG] [--] COMMAND [ARG...]\n";

static const char run_text[] =
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
	"naglefix CMD --help: what CMD does, its options and exit status;\n"
	"naglefix(1): all of it.\n";

/* The subcommands' usage texts, in the order of naglefix(1). */
static const char *const command_usage[] = {
	nf_cli_usage_check, nf_cli_usage_audit, nf_cli_usage_report, nf_cli_usage_fix,
	nf_cli_usage_scan,  nf_cli_usage_watch, nf_cli_usage_attach, nf_cli_usage_detach,
};

/* The synopsis of a usage text (nf_cli.h): its first line with "usage: "
 * as indent, then the lines after it indented as one. */
static void put_synopsis(const char *text)
{
	const char *nl = strchr(text, '\n');

	printf("       %.*s\n", (int)(nl - text - 7), text + 7);
	for (text = nl + 1; strncmp(text, "       ", 7) == 0 && (nl = strchr(text, '\n'));
	     text = nl + 1)
		printf("%.*s\n", (int)(nl - text), text);
}

/* --help: the run mode's usage, every subcommand's synopsis, the run
 * mode's options, on stdout; status 0. */
static int help(void)
{
	fputs(usage_text, stdout);
	for (size_t i = 0; i < sizeof(command_usage) / sizeof(command_usage[0]); i++)
		put_synopsis(command_usage[i]);
	fputs(run_text, stdout);
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
		return nf_cli_warnx(-1, "%s; %s not started", err, nf_cli_quote(cmd, q));
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
	return nf_cli_warnx(errno == ENOENT ? 127 : 126, "%s: %s", argv[0], strerror(errno));
}

static const struct option longopts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "mode", required_argument, NULL, 'm' },
	{ "log", required_argument, NULL, 'l' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* The subcommands: the first word names one, which gets the rest. */
static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "check", nf_cli_check }, { "audit", nf_cli_audit },   { "report", nf_cli_report },
	{ "fix", nf_cli_fix },     { "scan", nf_cli_scan },     { "watch", nf_cli_watch },
	{ "attach", nf_cli_attach }, { "detach", nf_cli_detach },
};

int main(int argc, char **argv)
{
	char q[NF_CLI_QUOTE_MAX];
	enum nf_action a;
	int opt;

	for (size_t i = 0; argc > 1 && i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0) {
			nf_cli_set_cmd(commands[i].name);
			return commands[i].run(argc - 1, argv + 1);
		}
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
