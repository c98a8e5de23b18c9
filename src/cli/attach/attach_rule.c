/*
 * attach_rule.c - one rule added to a process's cgroup in the kernel
 * (attach_int.h), for watch --fix --attach: the holder of a stall gets
 * "connect PEER nodelay" (or "accept LOCAL nodelay") in naglefix's
 * program on its cgroup, so that the next connections of its service,
 * container or pod, from any of its processes, do not stall at all.
 * The rules already there come first: a connection they give nodelay is
 * left as it is, and so is one a rule of theirs gives another action
 * (pass, coalesce...); else the rule is added after them, the program
 * replaced in its place in one step. The root cgroup is never attached
 * this way: its rules would be every program's of the host. Where the
 * rules there give the connection nodelay, their map of marks goes back
 * to watch, which has the connection it fixed marked in it: it was
 * established before, unmarked.
 */
#include "attach_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SOURCE "watch --fix --attach"

/* The kernel check's status, made once a run (-1: not yet). */
static int kernel_status = -1;

const char *nf_attach_rule_result_name(enum nf_attach_rule_result r)
{
	static const char *const names[] = {
		[NF_ATTACH_RULE_ATTACHED] = "attached", [NF_ATTACH_RULE_ALREADY] = "already",
		[NF_ATTACH_RULE_LEFT] = "left",         [NF_ATTACH_RULE_ROOT] = "root",
		[NF_ATTACH_RULE_FAILED] = "failed",
	};

	return names[r];
}

/* Whether the rules of st decide for side and sa (1: they give nodelay,
 * or a rule of theirs another action; said in d), or only their default,
 * not nodelay, would (0: the new rule goes after them); -EINVAL if their
 * text no longer parses. */
static int decided(const struct nf_bpf_state *st, enum nf_side side, const struct sockaddr *sa,
		   socklen_t len, struct nf_attach_rule_done *d)
{
	struct nf_attach_policy p;
	const struct nf_rule *r = NULL;
	const struct nf_opts *o;
	int rc = -EINVAL;

	if (nf_attach_policy_parse(st->source, st->text, st->text_len, &p, NULL, 0) == 0) {
		o = nf_policy_match(&p.pol, side, sa, len);
		for (size_t i = 0; i < p.pol.nrules; i++)
			if (&p.pol.rules[i].opts == o)
				r = &p.pol.rules[i];
		snprintf(d->why, sizeof(d->why), "%s:%d says %s", st->source, r ? r->line : 0,
			 nf_policy_action_name(o->action));
		if (!r)
			snprintf(d->why, sizeof(d->why), "%s: default says %s", st->source,
				 nf_policy_action_name(o->action));
		d->result = o->action == NF_ACT_NODELAY ? NF_ATTACH_RULE_ALREADY : NF_ATTACH_RULE_LEFT;
		rc = o->action == NF_ACT_NODELAY || r;
	}
	nf_attach_policy_free(&p);
	return rc;
}

/* The policy of st's rules (or none) with rule after them, into *p. */
static int extended(const struct nf_bpf_state *st, const char *rule, struct nf_attach_policy *p)
{
	size_t have = st ? st->text_len : 0, len = have + strlen(rule) + 2;
	char *text = malloc(len + 1), source[NF_BPF_SOURCE_MAX];
	int rc;

	if (!text)
		return -ENOMEM;
	snprintf(text, len + 1, "%.*s%s%s\n", (int)have, st ? st->text : "",
		 have && st->text[have - 1] != '\n' ? "\n" : "", rule);
	snprintf(source, sizeof(source), "%.200s%s" SOURCE, st ? st->source : "", st ? " + " : "");
	rc = nf_attach_policy_parse(source, text, strlen(text), p, NULL, 0);
	free(text);
	return rc;
}

/* The rule added on t's cgroup, unless the rules there decide already. */
static void add(const struct nf_attach_target *t, enum nf_side side, const struct sockaddr *sa,
		socklen_t len, const char *rule, struct nf_attach_rule_done *d)
{
	struct nf_bpf_state *st = malloc(sizeof(*st));
	struct nf_bpf_cgroup c;
	struct nf_attach_policy p;
	struct nf_attach_done done;
	int rc = st ? nf_bpf_cgroup_query(t->fd, NF_BPF_SOCK_OPS, &c, st) : -ENOMEM;

	memset(&p, 0, sizeof(p));
	if (rc < 0)
		nf_attach_say("watch", "reading its sock_ops programs", rc, t->dir);
	else if (c.ours && (rc = decided(st, side, sa, len, d)) != 0)
		; /* the rules there decide (or no longer parse: rc < 0) */
	else if ((rc = extended(c.ours ? st : NULL, rule, &p)) == 0 &&
		 (rc = nf_attach_place("watch", t, &p, &done)) == 0) {
		d->result = NF_ATTACH_RULE_ATTACHED;
		d->id = done.prog[NF_BPF_SOCK_OPS].id;
		snprintf(d->why, sizeof(d->why), "%s, %s", rule, p.source);
	}
	if (rc == -EINVAL && d->result == NF_ATTACH_RULE_FAILED)
		snprintf(d->why, sizeof(d->why), "the rules there do not parse");
	else if (rc < 0 && d->result == NF_ATTACH_RULE_FAILED)
		snprintf(d->why, sizeof(d->why), "%s", strerror(-rc));
	nf_attach_policy_free(&p);
	free(st);
}

int nf_attach_rule(pid_t pid, enum nf_side side, const struct sockaddr *sa, socklen_t len,
		   const char *rule, struct nf_attach_rule_done *d)
{
	struct nf_attach_target t = { .fd = -1 };
	char arg[24];

	memset(d, 0, sizeof(*d));
	d->result = NF_ATTACH_RULE_FAILED;
	snprintf(d->why, sizeof(d->why), "said above");
	snprintf(arg, sizeof(arg), "%d", (int)pid);
	if (nf_attach_target_open("watch", NF_ATTACH_PID, arg, &t) != 0)
		return d->result;
	snprintf(d->dir, sizeof(d->dir), "%s", t.dir);
	snprintf(d->name, sizeof(d->name), "%s", t.name);
	if (nf_attach_target_is_root(&t)) {
		d->result = NF_ATTACH_RULE_ROOT;
		snprintf(d->why, sizeof(d->why), "its cgroup is the root: every program of the host");
	} else if (kernel_status < 0 && (kernel_status = nf_attach_check_kernel("watch", t.root)) != 0) {
		; /* said in its line */
	} else if (kernel_status > 0) {
		snprintf(d->why, sizeof(d->why), "this kernel cannot (said at the first try)");
	} else {
		add(&t, side, sa, len, rule, d);
	}
	if (d->result == NF_ATTACH_RULE_ATTACHED || d->result == NF_ATTACH_RULE_ALREADY)
		d->marks_fd = nf_attach_marks(&t);
	nf_attach_target_close(&t);
	return d->result;
}
