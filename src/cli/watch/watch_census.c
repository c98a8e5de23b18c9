/*
 * watch_census.c - where the host's network namespaces show, read
 * (watch_int.h): the names under /run/netns (or the --netns words' files)
 * and each process's /proc/PID/ns/net (watch_procs.c's walk). It reads
 * the host only: the set watched is watch_netns.c's, which is told only
 * the inodes it held at the last census and gets a descriptor for each
 * other one found. It runs off watch's loop (watch_scanwork.c): a walk
 * of /proc can take far longer in wall time than in CPU (the thread off
 * the CPU mid-walk), and no ring would be read meanwhile.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "watch_int.h"

#define RUN_NETNS "/run/netns"

int nf_watch_ns_inode(uint64_t nsfs_dev, int fd, uint64_t *ino)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (nsfs_dev && (uint64_t)st.st_dev != nsfs_dev)
		return -EINVAL;
	if (ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET)
		return -EINVAL;
	*ino = (uint64_t)st.st_ino;
	return 0;
}

/* The census's entry for ino, NULL if it has none yet. */
static struct nf_watch_census_ent *entry_of(struct nf_watch_census *c, uint64_t ino)
{
	for (size_t i = 0; i < c->nent; i++)
		if (c->ent[i].ino == ino)
			return &c->ent[i];
	return NULL;
}

static int cmp_ino(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Whether the set watched held ino at the last census (c->known sorted). */
static int held(const struct nf_watch_census *c, uint64_t ino)
{
	return bsearch(&ino, c->known, c->nknown, sizeof(ino), cmp_ino) != NULL;
}

/* Room for one more entry: 0, or -1 (out of memory). */
static int room(struct nf_watch_census *c)
{
	size_t n = c->capent ? c->capent * 2 : 32;
	struct nf_watch_census_ent *a;

	if (c->nent < c->capent)
		return 0;
	if (!(a = realloc(c->ent, n * sizeof(*a))))
		return -1;
	c->ent = a;
	c->capent = n;
	return 0;
}

/* ino found (fd: its descriptor, the census's now; -1 none) as name: an
 * entry, unless it has one already (fd closed then). The entry, or NULL
 * if out of memory (fd closed). */
static struct nf_watch_census_ent *note(struct nf_watch_census *c, uint64_t ino, int fd,
					const char *name)
{
	struct nf_watch_census_ent *e = entry_of(c, ino);

	if (e || room(c) < 0) {
		if (fd >= 0)
			close(fd);
		return e;
	}
	e = &c->ent[c->nent++];
	e->ino = ino;
	e->fd = fd;
	snprintf(e->name, sizeof(e->name), "%s", name);
	return e;
}

/* path (a namespace file) as name: its entry, its descriptor opened if
 * the set did not hold it. 0, or -errno (-EINVAL: not a network
 * namespace; -ENOENT and the like: not there any more). */
static int note_path(struct nf_watch_census *c, const char *path, const char *name,
		     uint64_t *ino)
{
	struct stat st;
	int fd, rc;

	if (stat(path, &st))
		return -errno;
	if ((uint64_t)st.st_dev == c->nsfs_dev && held(c, (uint64_t)st.st_ino)) {
		*ino = (uint64_t)st.st_ino;
		return note(c, *ino, -1, name) ? 0 : -ENOMEM;
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if ((rc = nf_watch_ns_inode(c->nsfs_dev, fd, ino)) < 0) {
		close(fd);
		return rc;
	}
	if (held(c, *ino)) { /* held since the stat: a name bound again */
		close(fd);
		fd = -1;
	}
	return note(c, *ino, fd, name) ? 0 : -ENOMEM;
}

/* Each name under /run/netns (ip netns add). */
static void census_named(struct nf_watch_census *c)
{
	DIR *d = opendir(RUN_NETNS);
	struct dirent *e;
	char path[sizeof(RUN_NETNS) + NAME_MAX + 2];
	uint64_t ino;

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), RUN_NETNS "/%s", e->d_name);
		note_path(c, path, e->d_name, &ino);
	}
	closedir(d);
}

void nf_watch_spec_path(const char *spec, char *path, size_t len, char *name, size_t namelen)
{
	long pid = nf_watch_pid_of(spec);

	if (pid)
		snprintf(path, len, "/proc/%ld/ns/net", pid);
	else if (strchr(spec, '/'))
		snprintf(path, len, "%s", spec);
	else
		snprintf(path, len, RUN_NETNS "/%s", spec);
	if (pid)
		snprintf(name, namelen, "pid:%ld", pid);
	else
		snprintf(name, namelen, "%.40s", spec);
}

/* Each --netns word's file (but "host": watch's own, always held). */
static void census_specs(struct nf_watch_census *c)
{
	char path[PATH_MAX], name[NF_WATCH_NS_NAME];
	uint64_t ino;

	for (size_t i = 0; i < c->nspecs; i++) {
		if (strcmp(c->specs[i], "host") == 0)
			continue;
		nf_watch_spec_path(c->specs[i], path, sizeof(path), name, sizeof(name));
		note_path(c, path, name, &ino);
	}
}

/* pid's parent (/proc/PID/stat's fourth field), 0 if unreadable. */
static long parent_of(long pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (!(p = strrchr(buf, ')'))) /* the command may hold spaces and parentheses */
		return 0;
	return strtol(p + 3, NULL, 10); /* ") S PPID" */
}

/* The process that stands for namespace ino, found at pid: the topmost of
 * its ancestors in ino (a container's init, the process unshare made),
 * whose parent is in another namespace; pid itself if it cannot tell. */
static long top_of(long pid, uint64_t ino)
{
	for (int i = 0; i < 64; i++) {
		long up = parent_of(pid);

		if (up <= 1 || nf_watch_proc_ns(up) != ino)
			break;
		pid = up;
	}
	return pid;
}

/* A namespace the set does not hold, found at pid: its entry, named
 * "pid:N", N the topmost process in it (not whichever /proc lists first:
 * PIDs wrap), its descriptor opened there (or at pid, if N went or left).
 * 1 if ino has its entry now. */
static int note_new(struct nf_watch_census *c, long pid, uint64_t ino)
{
	char path[64], name[NF_WATCH_NS_NAME];
	long top = top_of(pid, ino);
	uint64_t got = 0;

	snprintf(path, sizeof(path), "/proc/%ld/ns/net", top);
	snprintf(name, sizeof(name), "pid:%ld", top);
	if (note_path(c, path, name, &got) == 0 && got == ino)
		return 1;
	snprintf(path, sizeof(path), "/proc/%ld/ns/net", pid);
	snprintf(name, sizeof(name), "pid:%ld", pid);
	return note_path(c, path, name, &got) == 0 && got == ino;
}

/* pid's namespace ino: its entry, made if the set holds it or (every
 * namespace watched) opened. 1 if it has one now. */
static int census_proc(struct nf_watch_census *c, long pid, uint64_t ino)
{
	if (entry_of(c, ino))
		return 1;
	if (held(c, ino))
		return note(c, ino, -1, "") != NULL;
	return c->all_ns && note_new(c, pid, ino);
}

/* Each process's namespace: an entry; one the set does not hold, only
 * with every namespace watched (--netns: those named only). -1 if /proc
 * could not be read. */
static int census_procs(struct nf_watch_census *c)
{
	const struct nf_watch_proc *p;
	ssize_t n = nf_watch_procs(c, &p);
	uint64_t last = 0;

	if (n < 0)
		return -1;
	for (ssize_t i = 0; i < n; i++) {
		uint64_t ino = p[i].ino;

		if (ino != last && census_proc(c, p[i].pid, ino))
			last = ino; /* else the next process in it tries again */
	}
	return 0;
}

void nf_watch_census_take(struct nf_watch_census *c)
{
	nf_watch_census_clear(c);
	qsort(c->known, c->nknown, sizeof(*c->known), cmp_ino);
	if (c->all_ns)
		census_named(c);
	else
		census_specs(c);
	c->failed = census_procs(c) < 0;
}

void nf_watch_census_clear(struct nf_watch_census *c)
{
	for (size_t i = 0; i < c->nent; i++)
		if (c->ent[i].fd >= 0)
			close(c->ent[i].fd);
	c->nent = 0;
	c->failed = 0;
}

void nf_watch_census_free(struct nf_watch_census *c)
{
	nf_watch_census_clear(c);
	free(c->ent);
	free(c->known);
	nf_watch_procs_free(c);
	memset(c, 0, sizeof(*c));
}
