/*
 * detach.c - naglefix detach: naglefix's programs (sock_ops and
 * setsockopt) taken off a cgroup (--cgroup, --unit, --pid, the root:
 * --host) or off every cgroup (--all), and nothing else: another tool's
 * program is never touched. New connections no longer get TCP_NODELAY
 * from them; those they set keep it, until the program turns it off.
 *
 * The routes attach set quickack on in the namespace named (--netns,
 * --pid's, the host's with --host) are put back as they were
 * (attach_route.c).
 *
 *   naglefix detach (--cgroup PATH | --unit NAME | --pid PID | --host | --all)
 *   naglefix detach [--cgroup PATH | --unit NAME] --netns NAME|PATH
 */
#include "attach_int.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/common/nf_cli.h"

const char nf_cli_usage_detach[] =
	"usage: naglefix detach (--cgroup PATH | --unit NAME | --pid PID | --host | --all)\n"
	"       naglefix detach [--cgroup PATH | --unit NAME] --netns NAME|PATH\n"
	"\n"
	"Takes naglefix's programs (naglefix attach: its sock_ops and setsockopt\n"
	"programs) off a cgroup: the one named, the root (--host), or every cgroup\n"
	"(--all). Nothing else is touched. New connections no longer get\n"
	"TCP_NODELAY from them; those they set keep it, until their program turns\n"
	"it off. The routes attach set quickack on in the network namespace named\n"
	"(--netns; --pid's; the host's with --host; every one with --all) are put\n"
	"back as they were; one changed or removed since is said and left.\n"
	"--netns alone: the routes only.\n"
	"\n"
	"Exit status: 0 done (also when nothing of naglefix's was there); 1 --all\n"
	"could not take one off, or a route could not be put back; 2 no permission;\n"
	"3 no bpf(2); 4 no cgroup2, no such cgroup, unit, process or network\n"
	"namespace; 125 a usage error.\n";

enum { OPT_CGROUP = 256, OPT_UNIT, OPT_PID, OPT_HOST, OPT_ALL, OPT_NETNS };

static const struct option detach_longopts[] = {
	{ "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "unit", required_argument, NULL, OPT_UNIT },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "host", no_argument, NULL, OPT_HOST },
	{ "all", no_argument, NULL, OPT_ALL },
	{ "netns", required_argument, NULL, OPT_NETNS },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Takes naglefix's program off t's cgroup; says what was done (quiet:
 * nothing when there was none). *taken (may be NULL) counts the cgroups. */
static int detach_one(struct nf_attach_target *t, int quiet, size_t *taken)
{
	size_t n = 0;
	int rc = nf_attach_remove("detach", t, &n);

	if (taken)
		*taken += n > 0;
	if (rc == 0 && n > 0)
		printf("naglefix detach: %s (%s): naglefix's %zu program%s taken off; new connections "
		       "no longer get TCP_NODELAY from %s, those %s set keep it\n", t->dir, t->name, n,
		       n == 1 ? "" : "s", n == 1 ? "it" : "them", n == 1 ? "it" : "they");
	else if (rc == 0 && !quiet)
		printf("naglefix detach: %s (%s): no program of naglefix's there; nothing changed\n",
		       t->dir, t->name);
	return rc;
}

/* What --all met. */
struct sweep {
	const char *root;
	int status;
	size_t taken; /* cgroups naglefix's program was taken off */
};

/* One cgroup of --all's walk. */
static int detach_walked(const char *dir, void *arg)
{
	struct sweep *s = arg;
	struct nf_attach_target t = { .fd = -1 };
	int rc = nf_attach_target_dir("detach", s->root, dir, &t);

	if (rc == 0)
		rc = detach_one(&t, 1, &s->taken);
	nf_attach_target_close(&t);
	if (rc > s->status)
		s->status = rc;
	return rc == NF_ATTACH_EXIT_PERM || rc == NF_ATTACH_EXIT_KERNEL; /* no use going on */
}

static int detach_all(void)
{
	char root[NF_CGROUP_PATH_MAX];
	struct sweep s = { .root = root };
	int rc = nf_cgroup_root(root, sizeof(root));

	if (rc < 0)
		return nf_attach_say("detach", "finding the cgroup v2 hierarchy",
				     rc == -ENOENT ? -ENOMEDIUM : rc, NULL);
	rc = nf_attach_each_cgroup(root, detach_walked, &s);
	if (rc < 0)
		return nf_attach_say("detach", "reading the cgroups", rc, root);
	printf("naglefix detach: --all: naglefix's programs taken off %zu cgroup%s under %s\n", s.taken,
	       s.taken == 1 ? "" : "s", root);
	return s.status > NF_ATTACH_EXIT_PARTIAL && s.status != NF_ATTACH_EXIT_PERM &&
			       s.status != NF_ATTACH_EXIT_KERNEL
		       ? NF_ATTACH_EXIT_PARTIAL
		       : s.status;
}

int nf_cli_detach(int argc, char **argv)
{
	struct nf_attach_target t = { .fd = -1 };
	enum nf_attach_kind kind = NF_ATTACH_ROOT;
	const char *arg = NULL, *netns = NULL;
	int opt, n = 0, all = 0, rc;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:h", detach_longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_CGROUP: kind = NF_ATTACH_CGROUP; arg = optarg; n++; break;
		case OPT_UNIT: kind = NF_ATTACH_UNIT; arg = optarg; n++; break;
		case OPT_PID: kind = NF_ATTACH_PID; arg = optarg; n++; break;
		case OPT_HOST: kind = NF_ATTACH_ROOT; arg = NULL; n++; break;
		case OPT_ALL: all = 1; n++; break;
		case OPT_NETNS: netns = optarg; break;
		case 'h': fputs(nf_cli_usage_detach, stdout); return 0;
		default: return nf_cli_bad_option("detach", opt, argc, argv, detach_longopts);
		}
	}
	if (n > 1)
		return nf_cli_usage_error("detach", "one of --cgroup, --unit, --pid, --host and --all at "
					  "most");
	if (n == 0 && !netns)
		return nf_cli_usage_error("detach", "which cgroup? --cgroup PATH, --unit NAME, --pid PID, "
					  "--host (the root), --all, or --netns NAME|PATH for the "
					  "routes alone");
	if (optind < argc)
		return nf_cli_usage_error("detach", "unexpected '%.64s' (a cgroup goes after --cgroup)",
					  argv[optind]);
	if (netns && (all || kind == NF_ATTACH_PID || (n > 0 && kind == NF_ATTACH_ROOT)))
		return nf_cli_usage_error("detach", "--netns goes alone or beside --cgroup or --unit");
	if (all) {
		rc = detach_all();
		return nf_attach_route_undo_all() > rc ? NF_ATTACH_EXIT_PARTIAL : rc;
	}
	rc = netns && n == 0 ? 0 : nf_attach_target_open("detach", kind, arg, &t);
	if (rc == 0 && !(netns && n == 0))
		rc = detach_one(&t, 0, NULL);
	nf_attach_target_close(&t);
	return rc ? rc : nf_attach_route_undo("detach", kind, arg, netns, n > 0 && kind == NF_ATTACH_ROOT);
}
