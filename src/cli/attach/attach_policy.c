/*
 * attach_policy.c - the policy attach compiles (attach_int.h): read as
 * fix reads it (-c CONF, -m nodelay, else the file the library would
 * read, else nodelay for every connection), its text kept for the state
 * map, so that --list and watch --fix read back what the kernel applies.
 * Its quickack rules are attach_route.c's (route metrics), not said as
 * left to the library.
 */
#include "attach_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/common/nf_cli.h"
#include "nf_config.h"

static const char every[] = "default nodelay\n";
static const char every_route[] = "default quickack\n";

int nf_attach_policy_parse(const char *source, const char *text, size_t len,
			   struct nf_attach_policy *p, char *err, size_t errlen)
{
	int rc;

	memset(p, 0, sizeof(*p));
	snprintf(p->source, sizeof(p->source), "%s", source);
	p->text = malloc(len + 1);
	if (!p->text)
		return -ENOMEM;
	memcpy(p->text, text, len);
	p->text[len] = '\0';
	p->len = len;
	rc = nf_policy_parse_bytes(&p->pol, text, len, source, err, errlen);
	for (size_t i = 0; rc == 0 && i < p->pol.nrules; i++)
		p->nodelay += p->pol.rules[i].opts.action == NF_ACT_NODELAY;
	return rc;
}

/* The file at path, read and parsed. */
static int load_file(const char *cmd, const char *path, struct nf_attach_policy *p)
{
	char *text = NULL, err[512] = "";
	int rc = nf_config_read_file(path, &text);

	if (rc < 0) {
		nf_cli_warnx_as(cmd, 0, "%s: %s", path, strerror(-rc));
		return NF_EXIT_USAGE;
	}
	rc = nf_attach_policy_parse(path, text, strlen(text), p, err, sizeof(err));
	free(text);
	if (rc < 0)
		nf_cli_warnx_as(cmd, 0, "%s", err[0] ? err : strerror(-rc));
	return rc < 0 ? NF_EXIT_USAGE : 0;
}

int nf_attach_policy_load(const char *cmd, const char *conf, const char *mode,
			  struct nf_attach_policy *p)
{
	int rc;

	if (conf && mode)
		return nf_cli_usage_error(cmd, "-c and -m exclude each other");
	if (mode && strcmp(mode, "nodelay") != 0 && strcmp(mode, "quickack") != 0)
		return nf_cli_usage_error(cmd, "the kernel applies nodelay (a cgroup program) and "
					  "quickack (a route metric) only (the other actions need the "
					  "library): -m '%.64s'", mode);
	if (!mode && !conf)
		conf = nf_config_path(getenv("NAGLEFIX_CONF"));
	if (conf)
		return load_file(cmd, conf, p);
	/* neither -c, -m nor a file (NAGLEFIX_CONF=none, or no
	 * /etc/naglefix.conf): nodelay for every connection, as the man page says */
	if (mode && strcmp(mode, "quickack") == 0)
		rc = nf_attach_policy_parse("-m quickack", every_route, sizeof(every_route) - 1, p,
					    NULL, 0);
	else
		rc = nf_attach_policy_parse(mode ? "-m nodelay" : "no policy file", every,
					    sizeof(every) - 1, p, NULL, 0);
	p->builtin = 1;
	return rc < 0 ? NF_EXIT_USAGE : 0;
}

const char *nf_attach_policy_where(const struct nf_attach_policy *p, const struct nf_rule *r,
				   char *buf, size_t len)
{
	if (r)
		snprintf(buf, len, "%.200s:%d", p->source, r->line);
	else
		snprintf(buf, len, "%.200s: default", p->source);
	return buf;
}

/* The line for one rule of action a that the kernel leaves alone. */
static void say_one(const char *cmd, const struct nf_attach_policy *p, const struct nf_rule *r,
		    enum nf_action a)
{
	char w[NF_BPF_SOURCE_MAX + 32];

	nf_cli_warnx_as(cmd, 0,
		"%s: %s needs the library, which the kernel's program cannot apply: its "
		"connections are left as they are (the library applies it: naglefix -c %s -- COMMAND)",
		nf_attach_policy_where(p, r, w, sizeof(w)), nf_policy_action_name(a), p->source);
}

void nf_attach_policy_say_left(const char *cmd, const struct nf_attach_policy *p)
{
	for (size_t i = 0; i < p->pol.nrules; i++) {
		enum nf_action a = p->pol.rules[i].opts.action;

		if (a != NF_ACT_PASS && a != NF_ACT_NODELAY && a != NF_ACT_QUICKACK)
			say_one(cmd, p, &p->pol.rules[i], a);
	}
	if (p->pol.dflt.action != NF_ACT_PASS && p->pol.dflt.action != NF_ACT_NODELAY &&
	    p->pol.dflt.action != NF_ACT_QUICKACK)
		say_one(cmd, p, NULL, p->pol.dflt.action);
}

void nf_attach_policy_free(struct nf_attach_policy *p)
{
	nf_policy_free(&p->pol);
	free(p->text);
	p->text = NULL;
}
