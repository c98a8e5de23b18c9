/*
 * attach.c - naglefix attach: the policy's nodelay rules in the kernel
 * for a cgroup (a --cgroup, a systemd --unit, a --pid's container or pod,
 * or the whole --host, only when so named), applied to each TCP
 * connection of it as it is established, and held against the program's
 * own setsockopt(TCP_NODELAY, 0) after (a 64-bit program's: the kernel
 * runs no setsockopt program for a 32-bit one's calls), across its
 * restarts; every setsockopt of the cgroup pays the kernel's copy of its
 * value for the program; --now fixes the connections already open too
 * (as naglefix fix).
 *
 * Its quickack rules go on the routes of a network namespace
 * (attach_route.c): --netns's, --pid's, or the host's (--host).
 *
 *   naglefix attach [-c CONF | -m MODE] (--cgroup PATH | --unit NAME | --pid PID | --host) [--now]
 *   naglefix attach [-c CONF | -m MODE] (--cgroup PATH | --unit NAME) --netns NAME|PATH [--now]
 *   naglefix attach [-c CONF | -m quickack] --netns NAME|PATH
 *   naglefix attach --list
 */
#include "attach_int.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/common/nf_cli.h"
#include "cli/fix/nf_fix.h"
#include "nf_config.h"

const char nf_cli_usage_attach[] =
	"usage: naglefix attach [-c CONF | -m MODE] (--cgroup PATH | --unit NAME |\n"
	"                       --pid PID | --host) [--now]\n"
	"       naglefix attach [-c CONF | -m MODE] (--cgroup PATH | --unit NAME)\n"
	"                       --netns NAME|PATH [--now]\n"
	"       naglefix attach [-c CONF | -m quickack] --netns NAME|PATH\n"
	"       naglefix attach --list\n"
	"\n"
	"Puts CONF's nodelay rules (default: $NAGLEFIX_CONF, else " NF_CONF_DEFAULT_PATH ",\n"
	"else nodelay for every connection) in the kernel for a cgroup: a sock_ops\n"
	"program sets TCP_NODELAY on each TCP connection its processes connect or\n"
	"accept, as it is established, whatever the program (static, Go, setuid),\n"
	"and a setsockopt program keeps it on when the program turns it off after\n"
	"(Linux 5.3 and later), until the cgroup goes or naglefix detach.\n"
	"Attaching again replaces naglefix's programs there, and nothing else.\n"
	"Needs root (CAP_BPF and CAP_NET_ADMIN) and Linux 6.0 or later.\n"
	"CONF's quickack rules set the quickack metric (ip route ... quickack 1) on the\n"
	"routes to their peers in a network namespace (--netns's, --pid's, the host's\n"
	"with --host): every connection on those routes acknowledges at once, the open\n"
	"ones too; naglefix detach puts the routes back.\n"
	"\n"
	"  -c, --config CONF  the policy file (its nodelay rules; the other actions\n"
	"                     need the library and are said, not applied)\n"
	"  -m, --mode MODE    nodelay for every connection, or quickack on every route\n"
	"      --cgroup PATH  the cgroup (under the cgroup2 mount, or relative to it)\n"
	"      --unit NAME    a running systemd unit's cgroup\n"
	"      --pid PID      the cgroup of process PID (its container, its pod)\n"
	"      --host         the root cgroup: every program of the host (and, for\n"
	"                     the quickack rules, the host's network namespace)\n"
	"      --netns NAME|PATH  the network namespace of the quickack rules (a name\n"
	"                     under /run/netns, or a path); alone: no cgroup program\n"
	"      --now          also set the connections open now (naglefix fix on\n"
	"                     the cgroup's processes), each marked so that the\n"
	"                     setsockopt program keeps it on too\n"
	"      --list         every cgroup with naglefix's program, its rules and\n"
	"                     counts, the other sock_ops programs seen, and the routes\n"
	"                     naglefix set quickack on\n"
	"\n"
	"Exit status: 0 done; 1 --now left a socket or could not mark one, or a\n"
	"route could not be set;\n"
	"2 no permission; 3 the kernel\n"
	"cannot (no bpf(2), sock_ops cannot set TCP_NODELAY, the verifier refused)\n"
	"or could not be checked (loopback down);\n"
	"4 no cgroup2, no such cgroup, unit, process or network namespace (or --pid's\n"
	"is attach's own, for routes); 5 another sock_ops program's\n"
	"mode stands in the way; 125 a usage error.\n";

enum { OPT_CGROUP = 256, OPT_UNIT, OPT_PID, OPT_HOST, OPT_NOW, OPT_LIST, OPT_NETNS };

static const struct option attach_longopts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "mode", required_argument, NULL, 'm' },
	{ "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "unit", required_argument, NULL, OPT_UNIT },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "host", no_argument, NULL, OPT_HOST },
	{ "now", no_argument, NULL, OPT_NOW },
	{ "list", no_argument, NULL, OPT_LIST },
	{ "netns", required_argument, NULL, OPT_NETNS },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* What the command line asks. */
struct request {
	const char *conf, *mode, *arg, *netns;
	enum nf_attach_kind kind;
	int targets, now, list;
};

/* The map of marks --now marks the connections it sets in, for the
 * setsockopt program on t's cgroup: its descriptor, or 0 when there is
 * none (a kernel without the hook: said before) or it cannot be had
 * (said; *partial set). */
static int marks_for_now(const struct nf_attach_target *t, int *partial)
{
	int fd = nf_attach_marks(t);

	if (fd > 0 || fd == -ENOENT)
		return fd > 0 ? fd : 0;
	nf_cli_warnx(0, "%s: finding the map of marks of naglefix's setsockopt program: %s: "
		"the connections --now sets are not marked, so their program's own "
		"setsockopt(TCP_NODELAY, 0) can turn Nagle back on", t->dir, strerror(-fd));
	*partial = 1;
	return 0;
}

/* The connections open before now: set as fix --cgroup does (--now), and
 * marked for the setsockopt program as the sock_ops program marks those it
 * sets; or said to be left, with the number of processes that may hold
 * them. */
static int existing(const struct nf_attach_target *t, const struct nf_attach_policy *p, int now)
{
	int every = p->builtin, rc, partial = 0;
	struct nf_fix_group g = { .name = t->dir };
	struct nf_fix_req fix = { .conf = every ? NULL : p->source, .mode = every ? "nodelay" : NULL,
				  .groups = &g, .ngroups = 1 };
	pid_t *pids = NULL;
	size_t n = 0, k;

	if (now) {
		fix.marks_fd = marks_for_now(t, &partial);
		rc = nf_fix_apply(&fix);
		if (fix.marks_fd > 0)
			close(fix.marks_fd);
		return (rc == 0 || rc == NF_FIX_EXIT_NOTCP) && !partial ? 0 : NF_ATTACH_EXIT_PARTIAL;
	}
	nf_cgroup_pids(t->dir, &pids, &n);
	k = n;
	for (size_t i = 0; i < n; i++)
		k -= pids[i] == getpid(); /* this command, run from the cgroup (ExecStartPre) */
	printf("naglefix attach: connections opened before now are left as they are (%zu "
	       "process%s in the cgroup; --now sets them too)\n", k, k == 1 ? "" : "es");
	free(pids);
	return 0;
}

/* " in place of program N", or "". */
static const char *in_place(char *buf, size_t len, uint32_t replaced)
{
	buf[0] = '\0';
	if (replaced)
		snprintf(buf, len, " in place of program %u", (unsigned)replaced);
	return buf;
}

/* The lines of what was done, and the programs kept beside them. */
static void say_done(const struct nf_attach_target *t, const struct nf_attach_policy *p,
		     const struct nf_attach_done *d)
{
	const struct nf_attach_prog *ops = &d->prog[NF_BPF_SOCK_OPS], *opt = &d->prog[NF_BPF_SETSOCKOPT];
	char q[NF_CLI_QUOTE_MAX], rep[48];

	printf("naglefix attach: %s (%s%s): program %u attached%s (%zu instructions): %s, %zu "
	       "nodelay rule%s of %zu, default %s\n",
	       t->dir, t->name, nf_attach_target_is_root(t) ? ": the whole host" : "",
	       (unsigned)ops->id, in_place(rep, sizeof(rep), ops->replaced), ops->insns,
	       nf_cli_quote(p->source, q), p->nodelay, p->nodelay == 1 ? "" : "s", p->pol.nrules,
	       nf_policy_action_name(p->pol.dflt.action));
	if (opt->id)
		printf("naglefix attach: %s: setsockopt program %u attached%s (%zu instructions): "
		       "TCP_NODELAY kept on where program %u set it\n",
		       t->dir, (unsigned)opt->id, in_place(rep, sizeof(rep), opt->replaced), opt->insns,
		       (unsigned)ops->id);
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < d->prog[k].after.n && i < NF_BPF_CGROUP_MAX; i++)
			if (!d->prog[k].after.v[i].ours)
				printf("naglefix attach: beside it, left as it is: %s program %u '%s' (%s)\n",
				       nf_bpf_kind_name((enum nf_bpf_kind)k),
				       (unsigned)d->prog[k].after.v[i].id, d->prog[k].after.v[i].name,
				       nf_bpf_mode_name(d->prog[k].after.flags));
}

/* --pid of a process in the root cgroup would be the whole host: not
 * what --pid means (a container, a pod); the root is asked for by name. */
static int root_by_pid(const struct request *r, const struct nf_attach_target *t)
{
	if (r->kind != NF_ATTACH_PID || !nf_attach_target_is_root(t))
		return 0;
	nf_cli_warnx(0,
		"pid %s is in the root cgroup (%s): attaching there would be every "
		"program of the host; nothing attached (naglefix attach --host does that, if it is "
		"meant)",
		r->arg, t->dir);
	return NF_ATTACH_EXIT_TARGET;
}

/* The cgroup program of p's nodelay rules on r's cgroup. */
static int attach_program(const struct request *r, const struct nf_attach_policy *p)
{
	struct nf_attach_target t = { .fd = -1 };
	struct nf_attach_done done;
	int rc;

	if ((rc = nf_attach_target_open("attach", r->kind, r->arg, &t)) == 0 &&
	    (rc = root_by_pid(r, &t)) == 0 && (rc = nf_attach_check_access("attach", &t)) == 0 &&
	    (rc = nf_attach_check_kernel("attach", t.root)) == 0 &&
	    (rc = nf_attach_place("attach", &t, p, &done)) == 0) {
		say_done(&t, p, &done);
		nf_attach_policy_say_left("attach", p);
		rc = existing(&t, p, r->now);
	}
	nf_attach_target_close(&t);
	return rc;
}

static int attach(const struct request *r)
{
	struct nf_attach_policy p;
	int rc = nf_attach_policy_load("attach", r->conf, r->mode, &p), prog, routes;
	int host = r->targets && r->kind == NF_ATTACH_ROOT; /* --host said */

	if (rc != 0)
		return rc;
	prog = p.nodelay > 0 || p.pol.dflt.action == NF_ACT_NODELAY;
	routes = nf_attach_route_rules(&p) > 0;
	if (!prog && !routes)
		rc = nf_cli_usage_error("attach", "%s has no nodelay or quickack rule and its default "
					"is %s: nothing to attach (naglefix detach takes off what is there)",
					p.source, nf_policy_action_name(p.pol.dflt.action));
	else if (prog && r->netns && !r->targets && !routes)
		rc = nf_cli_usage_error("attach", "%s has no quickack rule, and its nodelay rules need a "
					"cgroup (--cgroup, --unit, --pid, --host): --netns alone takes "
					"quickack rules", p.source);
	else if (routes &&
		 (rc = nf_attach_route_target("attach", r->kind, r->arg, r->netns, host, &p)) != 0)
		; /* no namespace named, or --pid the host's: nothing changed */
	else if (prog && r->netns && !r->targets)
		nf_cli_warnx(0, "%s's nodelay rules need a cgroup (--cgroup, --unit, "
			"--pid, --host): not applied; --netns takes the quickack rules", p.source);
	else if (prog)
		rc = attach_program(r, &p);
	if (rc == 0 && routes)
		rc = nf_attach_route_cmd("attach", r->kind, r->arg, r->netns, host, &p, !prog);
	nf_attach_policy_free(&p);
	return rc;
}

/* The target options: one at most. */
static int target(struct request *r, enum nf_attach_kind kind, const char *arg)
{
	r->kind = kind;
	r->arg = arg;
	return ++r->targets > 1 ? nf_cli_usage_error("attach", "one of --cgroup, --unit, --pid and "
						     "--host at most") : 0;
}

int nf_cli_attach(int argc, char **argv)
{
	struct request r = { .kind = NF_ATTACH_ROOT };
	int opt, rc = 0;

	optind = 1;
	opterr = 0;
	while (rc == 0 && (opt = getopt_long(argc, argv, "+:c:m:h", attach_longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': r.conf = optarg; break;
		case 'm': r.mode = optarg; break;
		case OPT_CGROUP: rc = target(&r, NF_ATTACH_CGROUP, optarg); break;
		case OPT_UNIT: rc = target(&r, NF_ATTACH_UNIT, optarg); break;
		case OPT_PID: rc = target(&r, NF_ATTACH_PID, optarg); break;
		case OPT_HOST: rc = target(&r, NF_ATTACH_ROOT, NULL); break;
		case OPT_NOW: r.now = 1; break;
		case OPT_LIST: r.list = 1; break;
		case OPT_NETNS: r.netns = optarg; break;
		case 'h': fputs(nf_cli_usage_attach, stdout); return 0;
		default: return nf_cli_bad_option("attach", opt, argc, argv, attach_longopts);
		}
	}
	if (rc != 0)
		return rc;
	if (optind < argc)
		return nf_cli_usage_error("attach", "unexpected '%.64s' (a cgroup goes after --cgroup)",
					  argv[optind]);
	if (r.list && (r.conf || r.mode || r.targets || r.now || r.netns))
		return nf_cli_usage_error("attach", "--list takes no other option");
	if (!r.list && r.targets == 0 && !r.netns)
		return nf_cli_usage_error("attach", "which cgroup? --cgroup PATH, --unit NAME, --pid PID, "
					  "--host for every program of the host, or --netns NAME|PATH "
					  "for quickack rules alone");
	if (r.netns && r.targets && r.kind == NF_ATTACH_PID)
		return nf_cli_usage_error("attach", "--pid names its process's network namespace: no "
					  "--netns beside it");
	if (r.netns && r.targets && r.kind == NF_ATTACH_ROOT)
		return nf_cli_usage_error("attach", "--host names the host's network namespace: no "
					  "--netns beside it");
	return r.list ? nf_attach_list() : attach(&r);
}
