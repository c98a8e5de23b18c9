/*
 * watch_procs.c - each process of the host and the network namespace it
 * is in (watch_int.h), for watch_census.c's census every 250 ms. Reading
 * /proc/PID/ns/net costs about 5 us a process (2,000 processes: 4% of a
 * CPU at four walks a second), so a walk reads it only for a process it
 * has not read twice yet (one that moves to a namespace of its own just
 * after it starts, as unshare does, is read again at the next walk), and
 * every FULL_WALK walks for all (a process that moves later, or a PID
 * reused by a process in another namespace: within 2 s). The others'
 * inodes are the last walk's: /proc lists the PIDs in ascending order,
 * so the two lists are merged in one pass.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "watch_int.h"

#define FULL_WALK 8 /* walks: every one reads each process's link */

uint64_t nf_watch_proc_ns(long pid)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%ld/ns/net", pid);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	return strncmp(link, "net:[", 5) == 0 ? strtoull(link + 5, NULL, 10) : 0;
}

long nf_watch_pid_of(const char *s)
{
	long v = 0;

	if (!*s)
		return 0;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s) || v > 100000000)
			return 0;
		v = v * 10 + (*s - '0');
	}
	return v;
}

/* Room for one more in the walk being made. 0, or -1. */
static int room(struct nf_watch_census *c)
{
	size_t n;
	struct nf_watch_proc *a;

	if (c->nwalk < c->capwalk)
		return 0;
	n = c->capwalk ? c->capwalk * 2 : 256;
	if (!(a = realloc(c->walk, n * sizeof(*a))))
		return -1;
	c->walk = a;
	c->capwalk = n;
	return 0;
}

/* The last walk's entry for pid, from *k on (pid order), or NULL. */
static const struct nf_watch_proc *last_of(const struct nf_watch_census *c, size_t *k, long pid)
{
	while (*k < c->nprocs && c->procs[*k].pid < pid)
		(*k)++;
	return *k < c->nprocs && c->procs[*k].pid == pid ? &c->procs[*k] : NULL;
}

ssize_t nf_watch_procs(struct nf_watch_census *c, const struct nf_watch_proc **out)
{
	int full = c->walks++ % FULL_WALK == 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t k = 0;

	if (!d)
		return -1;
	c->nwalk = 0;
	while ((e = readdir(d)) != NULL) {
		long pid = nf_watch_pid_of(e->d_name);
		const struct nf_watch_proc *was = pid ? last_of(c, &k, pid) : NULL;
		struct nf_watch_proc p = { pid, 0, 1 };

		if (!pid || room(c) < 0)
			continue;
		if (was && was->ino && was->reads >= 2 && !full)
			p = *was;
		else if ((p.ino = nf_watch_proc_ns(pid)) != 0)
			p.reads = was && was->ino == p.ino ? (uint8_t)(was->reads + 1) : 1;
		if (p.ino)
			c->walk[c->nwalk++] = p;
	}
	closedir(d);
	{ /* this walk becomes the last one */
		struct nf_watch_proc *t = c->procs;
		size_t cap = c->capprocs;

		c->procs = c->walk;
		c->nprocs = c->nwalk;
		c->capprocs = c->capwalk;
		c->walk = t;
		c->capwalk = cap;
	}
	*out = c->procs;
	return (ssize_t)c->nprocs;
}

void nf_watch_procs_free(struct nf_watch_census *c)
{
	free(c->procs);
	free(c->walk);
	c->procs = c->walk = NULL;
	c->nprocs = c->nwalk = c->capprocs = c->capwalk = 0;
}
