/*
 * check.c - naglefix check [FILE]: the policy file judged as the library
 * reads it (src/common/config.c, the one parser), and NAGLEFIX_MODE as
 * the library takes it. Every error is said, each as the library would
 * say it ("FILE:LINE: reason"; the first is the library's own message),
 * not only the first.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_check.h"
#include "cli/common/nf_cli.h"
#include "nf_config.h"
#include "nf_policy.h"

const char nf_cli_usage_check[] =
	"usage: naglefix check [FILE]\n"
	"Validates the policy file FILE as the library reads it (default: what the\n"
	"library would read: $NAGLEFIX_CONF, else " NF_CONF_DEFAULT_PATH " if it\n"
	"exists), and the action in $NAGLEFIX_MODE. Every error is said on stderr, each\n"
	"as FILE:LINE: reason; a file over 1 MiB is one.\n"
	"  -h, --help  this text\n"
	"Exit status: 0 valid (or no file to read); 1 an error; 125 a usage error.\n";

/* An environment variable as the library reads it: empty is unset. */
static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* One error, as the library says it ("naglefix: FILE:LINE: ...", not
 * under check's name): the line a program run under the library would
 * print. */
static void say(const char *err, void *arg)
{
	(void)arg;
	nf_cli_warnx_as(NULL, 0, "%s", err);
}

/* The default for every socket with no rule: NAGLEFIX_MODE's, or the
 * file's (dflt). */
static const char *default_of(const char *mode, enum nf_action mode_action,
			      enum nf_action dflt, char *buf, size_t len)
{
	if (!mode)
		return nf_policy_action_name(dflt);
	snprintf(buf, len, "%s (NAGLEFIX_MODE)", nf_policy_action_name(mode_action));
	return buf;
}

/* The answer when the library reads no file (every socket gets action,
 * said as dflt), status 0. */
static int no_file(const char *env_conf, enum nf_action action, const char *dflt)
{
	if (env_conf && strcmp(env_conf, "none") == 0)
		printf("NAGLEFIX_CONF=none: no file is read");
	else
		printf("%s: no such file", NF_CONF_DEFAULT_PATH);
	if (action == NF_ACT_PASS)
		printf(", so no rule: every socket passes\n");
	else
		printf(", so no rule: every socket gets %s\n", dflt);
	return 0;
}

/* NAGLEFIX_MODE, if set, into *a; the number of errors said (0 or 1). */
static int check_mode(const char *mode, enum nf_action *a)
{
	char err[NF_CONF_ERR_MAX];

	if (!mode || nf_config_mode(mode, a, err, sizeof(err)) == 0)
		return 0;
	say(err, NULL);
	return 1;
}

/* check's options: the long ones; getopt_long's short ones are ":h". */
static const struct option check_longopts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Options anywhere until "--" (getopt_long permutes FILE to
 * argv[optind]): the FILE's index (0: none), or -1 for --help, -2 after
 * a usage error said. */
static int check_args(int argc, char **argv)
{
	int opt;

	optind = 0; /* 0, not 1: getopt_long starts afresh, permuting */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", check_longopts, NULL)) != -1) {
		if (opt == 'h')
			return -1;
		nf_cli_bad_option("check", opt, argc, argv, check_longopts);
		return -2;
	}
	if (argc - optind > 1) {
		nf_cli_usage_error("check", "one FILE at most");
		return -2;
	}
	return optind < argc ? optind : 0;
}

int nf_cli_check(int argc, char **argv)
{
	const char *env_conf = env("NAGLEFIX_CONF"), *mode = env("NAGLEFIX_MODE"), *path;
	struct nf_policy p = { .dflt = nf_policy_opts_default(NF_ACT_PASS) };
	enum nf_action a = NF_ACT_PASS;
	int arg = check_args(argc, argv), nerr;
	const char *dflt;
	char buf[64];

	if (arg < 0) {
		if (arg == -1)
			fputs(nf_cli_usage_check, stdout);
		return arg == -1 ? 0 : NF_EXIT_USAGE;
	}
	path = arg ? argv[arg] : nf_config_path(env_conf);
	nerr = path ? nf_config_check_file(path, &p, say, NULL) : 0;
	if (nerr < 0)
		nf_cli_warnx(1, "out of memory");
	nerr = nerr < 0 ? 1 : nerr;
	nerr += check_mode(mode, &a);
	dflt = default_of(mode, a, p.dflt.action, buf, sizeof(buf));
	if (nerr == 0 && !path)
		no_file(env_conf, mode ? a : NF_ACT_PASS, dflt);
	else if (nerr == 0)
		printf("%s: ok, %zu rule%s, default %s\n", path, p.nrules, p.nrules == 1 ? "" : "s",
		       dflt);
	nf_policy_free(&p);
	return nerr ? 1 : 0;
}
