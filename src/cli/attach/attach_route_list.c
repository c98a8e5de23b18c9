/*
 * attach_route_list.c - attach --list's routes (attach_int.h): each
 * network namespace where attach set the quickack metric, from its
 * record, and each route as it is now: still as attach left it, changed
 * or removed since, or its namespace gone.
 */
#include "attach_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/common/nf_cli.h"
#include "cli/fix/nf_fix.h"

/* What a route recorded is now, in words. */
static const char *now_of(int nl, const struct nf_attach_route_rec *e)
{
	struct nf_route now;
	int rc;

	if (nl < 0)
		return "its namespace is gone or out of reach";
	rc = nf_route_find(nl, &e->after, &now);
	if (rc == -ENOENT)
		return "removed since";
	if (rc < 0)
		return "unreadable now";
	return nf_route_equal(&now, &e->after) ? "as set" : "changed since";
}

/* The namespace of rec opened again by its path, if it is still the one
 * (its inode): its rtnetlink socket, or -1. */
static int socket_of(const struct nf_attach_route_record *rec, int *ioc)
{
	struct nf_attach_netns ns;
	int nl = -1;

	*ioc = -1;
	if (nf_attach_netns_open_quiet(rec->path, &ns) < 0)
		return -1;
	if (ns.ino == rec->ino)
		nf_attach_netns_sockets(&ns, &nl, ioc);
	nf_attach_netns_close(&ns);
	if (nl >= 0 && rec->cookie && nf_attach_netns_cookie(nl) != rec->cookie) {
		close(nl); /* another namespace, its inode reused: not the one recorded */
		close(*ioc);
		nl = *ioc = -1;
	}
	return nl;
}

static int list_one(uint64_t ino, void *arg)
{
	struct nf_attach_route_record rec;
	size_t *count = arg;
	int nl, ioc;

	if (nf_attach_route_record_read(ino, &rec) < 0 || rec.n == 0) {
		nf_attach_route_record_free(&rec);
		return 0;
	}
	nl = socket_of(&rec, &ioc);
	printf("network namespace %s (%s, inode %" PRIu64 "): routes with quickack 1 set by "
	       "naglefix attach\n", rec.name, rec.path, ino);
	for (size_t i = 0; i < rec.n; i++) {
		char t[NF_ROUTE_TEXT_MAX];

		printf("  route '%s' (%s): %s\n",
		       nf_route_format(&rec.v[i].after, nf_attach_netns_ifname(ioc, &rec.v[i].after),
				       t, sizeof(t)),
		       rec.v[i].why, now_of(nl, &rec.v[i]));
	}
	*count += rec.n;
	if (nl >= 0)
		close(nl);
	if (ioc >= 0)
		close(ioc);
	nf_attach_route_record_free(&rec);
	return 0;
}

int nf_attach_route_list(void)
{
	size_t n = 0;
	int rc = nf_attach_route_record_each(list_one, &n);

	if (rc < 0) {
		nf_cli_warnx_as("attach --list", 0, "the routes' records (%s): %s",
			nf_fix_state_dir(), strerror(-rc));
		return NF_ATTACH_EXIT_PARTIAL;
	}
	printf("%zu route%s with quickack 1 set by naglefix attach\n", n, n == 1 ? "" : "s");
	return 0;
}
