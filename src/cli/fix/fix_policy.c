/*
 * fix_policy.c - the policy fix applies (-c CONF, -m nodelay, else the
 * file the library would read, else nodelay for every socket) and how its
 * lines name a rule; a rule whose action needs the library said once.
 */
#include "fix_int.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/common/nf_cli.h"
#include "nf_config.h"

/*
 * No -c, no -m, no file (NAGLEFIX_CONF unset or "none", no default file):
 * nodelay for every socket, the one action fix applies; said once.
 */
static void no_policy(struct nf_fix_policy *f)
{
	const char *env = getenv("NAGLEFIX_CONF");
	char err[128];

	nf_policy_parse(&f->pol, "default nodelay\n", "-m", err, sizeof(err));
	f->nopolicy = 1;
	nf_cli_warnx(0,
		"no policy file (no -c or -m, %s): nodelay for every TCP socket, the "
		"one action fix applies from outside",
		env && *env ? "NAGLEFIX_CONF=none" : "no NAGLEFIX_CONF, no " NF_CONF_DEFAULT_PATH);
}

int nf_fix_policy_load(struct nf_fix_policy *f, const char *conf, const char *mode)
{
	char err[512];

	if (conf && mode)
		return nf_fix_usage_err("-c and -m exclude each other", NULL);
	if (mode) {
		if (strcmp(mode, "nodelay") != 0)
			return nf_fix_usage_err("fix applies nodelay only (the other actions need the library): "
					 "unknown or library-only mode", mode);
		nf_policy_parse(&f->pol, "default nodelay\n", "-m", err, sizeof(err));
		return 0;
	}
	if (!conf)
		conf = nf_config_path(getenv("NAGLEFIX_CONF"));
	if (!conf) {
		no_policy(f);
		return 0;
	}
	if (nf_config_parse_file(conf, &f->pol, err, sizeof(err)) < 0) {
		nf_cli_warnx(0, "%s", err);
		return NF_EXIT_USAGE;
	}
	f->conf = conf;
	return 0;
}

const char *nf_fix_policy_rule(const struct nf_fix_policy *f, const struct nf_opts *o, char *buf,
				size_t len, size_t *index)
{
	if (o == &f->pol.dflt) {
		*index = f->pol.nrules;
		if (!f->conf)
			return f->nopolicy ? "no policy file" : "-m nodelay";
		snprintf(buf, len, "%s: default", f->conf);
		return buf;
	}
	const struct nf_rule *r =
		(const struct nf_rule *)(const void *)((const char *)o - offsetof(struct nf_rule, opts));

	*index = (size_t)(r - f->pol.rules);
	snprintf(buf, len, "%s:%d", f->conf, r->line);
	return buf;
}

void nf_fix_policy_say_needs_library(struct nf_fix_policy *f, size_t index, const char *rule,
				     const char *action)
{
	if (f->left[index])
		return;
	f->left[index] = 1;
	nf_cli_warnx(0,
		"%s: %s needs the library, which fix cannot apply from outside: its "
		"sockets are left as they are; restart the program under it (naglefix -c %s -- "
		"COMMAND), or fix them now with nodelay (naglefix fix -m nodelay PID)",
		rule, action, f->conf ? f->conf : "CONF");
}
