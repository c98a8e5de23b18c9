/*
 * attach_target.c - the cgroup attach or detach works on (attach_int.h):
 * the root of the cgroup v2 hierarchy, or the one --cgroup, --unit or
 * --pid names, opened and locked. The lock is flock(2) on the cgroup's
 * own directory: two naglefix commands on one cgroup take turns (so two
 * attaches cannot both find no program of naglefix's and both add one),
 * and no file is made for it anywhere.
 */
#include "attach_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "cli/common/nf_cli.h"

/* PID's cgroup v2 path ("0::" of /proc/PID/cgroup), unlike
 * nf_cgroup_of_pid never the name=systemd one: a hybrid host's process
 * may sit in a v1 unit and the v2 root. 0, -ESRCH, -ENOENT (no v2 line). */
static int v2_path_of_pid(pid_t pid, char *out, size_t len)
{
	char file[64], *line = NULL;
	size_t cap = 0;
	int rc = -ENOENT;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	f = fopen(file, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (rc == -ENOENT && getline(&line, &cap, f) > 0)
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			rc = snprintf(out, len, "%s", line + 3) < (int)len ? 0 : -ENAMETOOLONG;
		}
	free(line);
	fclose(f);
	return rc;
}

/* The cgroup of the process arg into dir (under root). */
static int dir_of_pid(const char *cmd, const char *root, const char *arg, char *dir)
{
	char rel[NF_CGROUP_PATH_MAX], *end, what[64];
	long pid = strtol(arg, &end, 10);
	int rc;

	snprintf(what, sizeof(what), "pid %.20s", arg);
	if (*end || end == arg || pid <= 0 || pid > INT_MAX)
		return nf_cli_usage_error(cmd, "--pid takes a process id, not '%.64s'", arg);
	rc = v2_path_of_pid((pid_t)pid, rel, sizeof(rel));
	if (rc == -ESRCH) {
		nf_cli_warnx_as(cmd, 0, "pid %ld: no such process", pid);
		return NF_ATTACH_EXIT_TARGET;
	}
	if (rc < 0)
		return nf_attach_say(cmd, rc == -ENOENT ? "its cgroup v2 line" : "its cgroup", rc, what);
	if (snprintf(dir, NF_CGROUP_PATH_MAX, "%s%s", root, strcmp(rel, "/") ? rel : "") >=
	    NF_CGROUP_PATH_MAX)
		return nf_attach_say(cmd, "its cgroup", -ENAMETOOLONG, what);
	return 0;
}

/* The directory kind and arg name, into dir. */
static int find_dir(const char *cmd, const char *root, enum nf_attach_kind kind, const char *arg,
		    char *dir)
{
	char what[NF_CGROUP_PATH_MAX + 128], q[NF_CLI_QUOTE_MAX];
	int rc = 0;

	switch (kind) {
	case NF_ATTACH_ROOT:
		snprintf(dir, NF_CGROUP_PATH_MAX, "%s", root);
		return 0;
	case NF_ATTACH_PID:
		return dir_of_pid(cmd, root, arg, dir);
	case NF_ATTACH_UNIT:
		snprintf(what, sizeof(what), "unit %s", arg);
		rc = nf_cgroup_of_unit(arg, dir, NF_CGROUP_PATH_MAX);
		return rc < 0 ? nf_attach_say(cmd, "finding its cgroup", rc == -ENOENT ? -ESRCH : rc, what) : 0;
	case NF_ATTACH_CGROUP:
		rc = nf_cgroup_resolve(arg, dir, NF_CGROUP_PATH_MAX);
		if (rc == -ENOENT || rc == -ENOTDIR || rc == -EXDEV) {
			nf_cgroup_unresolved(rc, what, sizeof(what));
			nf_cli_warnx_as(cmd, 0, "cgroup %s: %s", nf_cli_quote(arg, q), what);
			return NF_ATTACH_EXIT_TARGET;
		}
		return rc < 0 ? nf_attach_say(cmd, "finding the cgroup", rc, arg) : 0;
	}
	return 0;
}

int nf_attach_target_open(const char *cmd, enum nf_attach_kind kind, const char *arg,
			  struct nf_attach_target *t)
{
	char root[NF_CGROUP_PATH_MAX], dir[NF_CGROUP_PATH_MAX];
	int rc = nf_cgroup_root(root, sizeof(root));

	if (rc < 0)
		return nf_attach_say(cmd, "finding the cgroup v2 hierarchy", rc == -ENOENT ? -ENOMEDIUM : rc,
				     NULL);
	if (!realpath(root, t->root))
		return nf_attach_say(cmd, "the cgroup v2 mount", -errno, root);
	if ((rc = find_dir(cmd, t->root, kind, arg, dir)) != 0)
		return rc;
	return nf_attach_target_dir(cmd, t->root, dir, t);
}

int nf_attach_target_dir(const char *cmd, const char *root, const char *dir,
			 struct nf_attach_target *t)
{
	size_t n = strlen(root);

	if (t->root != root)
		snprintf(t->root, sizeof(t->root), "%s", root);
	snprintf(t->dir, sizeof(t->dir), "%s", dir);
	nf_cgroup_name(strncmp(dir, root, n) == 0 && dir[n] ? dir + n : "/", t->name, sizeof(t->name));
	t->fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->fd < 0)
		return nf_attach_say(cmd, "opening the cgroup", -errno, dir);
	if (flock(t->fd, LOCK_EX) < 0) {
		int rc = -errno;

		close(t->fd);
		t->fd = -1;
		return nf_attach_say(cmd, "locking the cgroup", rc, dir);
	}
	return 0;
}

void nf_attach_target_close(struct nf_attach_target *t)
{
	if (t->fd >= 0)
		close(t->fd); /* the lock goes with it */
	t->fd = -1;
}

int nf_attach_target_is_root(const struct nf_attach_target *t)
{
	return strcmp(t->dir, t->root) == 0;
}
