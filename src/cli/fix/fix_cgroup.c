/*
 * fix_cgroup.c - naglefix fix --cgroup PATH and --unit NAME: the
 * processes of a cgroup (and of its descendants) or of a running systemd
 * unit, as PIDs that fix then handles as if they had been given (fix_int.h).
 * The set is taken once, when fix starts. A cgroup or unit that cannot be
 * found is said, with what to do, and the others are still fixed.
 */
#include "fix_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/common/nf_cgroup.h"
#include "cli/common/nf_cli.h"

/* Adds the text of pid to v. 0 or -ENOMEM. */
static int pidv_add(struct nf_fix_pidv *v, const char *pid)
{
	char *dup;

	if (v->n == v->cap) {
		int cap = v->cap ? 2 * v->cap : 64;
		char **nv = realloc(v->v, (size_t)cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		v->v = nv;
		v->cap = cap;
	}
	if (!(dup = strdup(pid)))
		return -ENOMEM;
	v->v[v->n++] = dup;
	return 0;
}

void nf_fix_pidv_free(struct nf_fix_pidv *v)
{
	for (int i = 0; i < v->n; i++)
		free(v->v[i]);
	free(v->v);
	*v = (struct nf_fix_pidv){ 0 };
}

/* Says why g (of kind --cgroup or --unit) names no directory (rc), and
 * what to do; raises r's status. */
static void say_not_found(struct nf_fix_run *r, const struct nf_fix_group *g, int rc)
{
	char root[PATH_MAX], q[NF_CLI_QUOTE_MAX], unit[NF_CLI_QUOTE_MAX], why[PATH_MAX + 128];
	const char *kind = g->unit ? "unit" : "cgroup", *what = nf_cli_quote(g->name, q);
	int mounted = nf_cgroup_root(root, sizeof(root)) == 0;

	if (g->unit && nf_cgroup_unit_name(what, unit, sizeof(unit)) == 0)
		what = unit;

	if (!mounted && rc == -ENOENT)
		nf_cli_warnx(0, "%s %s: no cgroup2 hierarchy is mounted (a host of cgroup "
			"v1 only): give the PIDs of its processes (its cgroup.procs under "
			"/sys/fs/cgroup/systemd/)", kind, what);
	else if (rc == -ENOENT && g->unit)
		nf_cli_warnx(0, "unit %s: not running (no cgroup of that name holds a "
			"process under %s)", what, root);
	else if (rc == -EINVAL && g->unit)
		nf_cli_warnx(0, "unit '%s': not a unit's name (nginx, nginx.service)",
			nf_cli_quote(g->name, q));
	else if (!g->unit && (rc == -ENOENT || rc == -ENOTDIR || rc == -EXDEV)) {
		nf_cgroup_unresolved(rc, why, sizeof(why));
		nf_cli_warnx(0, "cgroup %s: %s", what, why);
	} else
		nf_cli_warnx(0, "%s %s: %s", kind, what, strerror(-rc));
	nf_fix_worse(r, rc == -ENOENT ? NF_FIX_EXIT_GONE : NF_FIX_EXIT_PARTIAL);
}

/* Adds the processes of dir (g's directory) to v, but this one. */
static int add_cgroup(struct nf_fix_run *r, const struct nf_fix_group *g, const char *dir,
		      struct nf_fix_pidv *v)
{
	char q[NF_CLI_QUOTE_MAX], num[24];
	pid_t *pids, self = getpid();
	size_t n, taken = 0;
	int rc = nf_cgroup_pids(dir, &pids, &n);

	for (size_t i = 0; rc == 0 && i < n; i++)
		if (pids[i] != self) {
			snprintf(num, sizeof(num), "%d", (int)pids[i]);
			rc = pidv_add(v, num);
			taken++;
		}
	free(pids);
	if (rc == 0 && taken == 0) {
		nf_cli_warnx(0, "%s %s (%s): no process in it",
			g->unit ? "unit" : "cgroup", nf_cli_quote(g->name, q), dir);
		nf_fix_worse(r, NF_FIX_EXIT_GONE);
	}
	return rc;
}

static int by_number(const void *a, const void *b)
{
	long x = atol(*(char *const *)a), y = atol(*(char *const *)b);

	return (x > y) - (x < y);
}

/* Is pid one of the PIDs given? */
static int given(const struct nf_fix_pidv *v, long pid)
{
	for (int i = 0; i < v->given; i++)
		if (atol(v->v[i]) == pid)
			return 1;
	return 0;
}

/* Sorts the cgroups' part of v by number and drops repeats (a process in
 * two of the cgroups given, or given as a PID too, is handled once). */
static void pidv_unique(struct nf_fix_pidv *v)
{
	int w = v->given;

	qsort(v->v + v->given, (size_t)(v->n - v->given), sizeof(*v->v), by_number);
	for (int i = v->given; i < v->n; i++) {
		long pid = atol(v->v[i]);

		if ((w > v->given && atol(v->v[w - 1]) == pid) || given(v, pid))
			free(v->v[i]);
		else
			v->v[w++] = v->v[i];
	}
	v->n = w;
}

int nf_fix_pidv_groups(struct nf_fix_run *r, const struct nf_fix_group *g, int n,
		       struct nf_fix_pidv *v)
{
	char dir[PATH_MAX];
	int rc;

	for (int i = 0; i < n; i++) {
		rc = g[i].unit ? nf_cgroup_of_unit(g[i].name, dir, sizeof(dir))
			       : nf_cgroup_resolve(g[i].name, dir, sizeof(dir));
		if (rc < 0)
			say_not_found(r, &g[i], rc);
		else if ((rc = add_cgroup(r, &g[i], dir, v)) < 0)
			return rc;
	}
	if (n)
		pidv_unique(v);
	return 0;
}

int nf_fix_pidv_add(struct nf_fix_pidv *v, int n, char **pids)
{
	int rc = 0;

	for (int i = 0; rc == 0 && i < n; i++)
		rc = pidv_add(v, pids[i]);
	v->given = v->n;
	return rc;
}

int nf_fix_pidv_recorded(struct nf_fix_run *r, struct nf_fix_pidv *v)
{
	int w = v->given, n = v->n - v->given;

	for (int i = v->given; i < v->n; i++) {
		struct nf_fix_record_entry *e = NULL;
		size_t ne;
		int rc = nf_fix_record_read((pid_t)atol(v->v[i]), &e, &ne);

		if (rc == 0)
			free(e);
		if (rc == -ENOENT)
			free(v->v[i]); /* no record: fix changed nothing of it */
		else
			v->v[w++] = v->v[i]; /* (another error: --undo says it) */
	}
	v->n = w;
	if (v->n || n == 0)
		return 0;
	nf_cli_warnx(0, "none of the %d process%s of the cgroups given has a record "
		"in %s: nothing to undo", n, n == 1 ? "" : "es", nf_fix_state_dir());
	nf_fix_worse(r, NF_FIX_EXIT_PARTIAL);
	return r->status;
}
