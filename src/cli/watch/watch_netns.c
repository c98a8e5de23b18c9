/*
 * watch_netns.c - the network namespaces naglefix watch watches
 * (watch_int.h): its own ("host"), and, when it runs in the host's
 * (kthreadd's), every other one of the host, found where they show
 * (/proc/PID/ns/net of each process, the names under /run/netns: a
 * census, watch_census.c's); or only those --netns names. Each is held
 * by a descriptor from the moment it is found (a process leaving it
 * cannot have its number reused under us); its capture is made inside it
 * (setns, the ring, setns back: a socket keeps the namespace it was made
 * in). Looked for again every NF_WATCH_SCAN_MS, the census taken off the
 * loop (watch_scanwork.c): one that no process is in and no name holds
 * any more is closed (its capture, its descriptor), so that the kernel
 * can free it. Its capture is watch_cap.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "watch_int.h"
#include "cli/common/nf_cli.h"

/* ---- the set ------------------------------------------------------------------- */

static struct nf_watch_ns *find(struct nf_watch *w, uint64_t ino)
{
	for (size_t i = 0; i < w->nns; i++)
		if (w->ns[i]->ino == ino)
			return w->ns[i];
	return NULL;
}

/* A namespace found (fd, its inode ino, named name) joins the set with
 * its capture (the first one, watch's own: only if no --netns, or one
 * names it). The namespace, or NULL (fd closed) if out of memory. */
static struct nf_watch_ns *add(struct nf_watch *w, int fd, uint64_t ino, const char *name)
{
	struct nf_watch_ns *ns;

	if (w->nns == w->capns) {
		size_t n = w->capns ? w->capns * 2 : 16;
		struct nf_watch_ns **a = realloc(w->ns, n * sizeof(*a));

		if (!a)
			return close(fd), NULL;
		w->ns = a;
		w->capns = n;
	}
	if (!(ns = calloc(1, sizeof(*ns))))
		return close(fd), NULL;
	ns->fd = fd;
	ns->ino = ino;
	ns->seen = w->scan_gen;
	snprintf(ns->name, sizeof(ns->name), "%s", name);
	w->ns[w->nns++] = ns;
	if (w->nns > 1 || !w->nspecs)
		nf_watch_cap_open(w, ns);
	return ns;
}

/* Closes ns: its capture (its counts kept), its loopback's detector
 * detached (freed if it found nothing), its descriptor. */
static void drop(struct nf_watch *w, struct nf_watch_ns *ns)
{
	nf_watch_cap_close(w, ns);
	nf_watch_wire_detach(w, ns);
	close(ns->fd);
	free(ns);
}

/* The namespace of path if the set has it (stat, no descriptor), NULL if not. */
static struct nf_watch_ns *known(struct nf_watch *w, const char *path)
{
	struct stat st;

	if (stat(path, &st) || (uint64_t)st.st_dev != w->nsfs_dev)
		return NULL;
	return find(w, (uint64_t)st.st_ino);
}

/* Opens path (a namespace file) unless its namespace is in the set
 * already (marked seen then); adds it as name. The namespace, or NULL
 * with errno (EINVAL: not a network namespace). */
static struct nf_watch_ns *open_path(struct nf_watch *w, const char *path, const char *name)
{
	struct nf_watch_ns *ns = known(w, path);
	uint64_t ino = 0;
	int rc, fd;

	if (ns) {
		ns->seen = w->scan_gen;
		return ns;
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	if ((rc = nf_watch_ns_inode(w->nsfs_dev, fd, &ino)) < 0) {
		close(fd);
		errno = -rc;
		return NULL;
	}
	if ((ns = find(w, ino))) { /* made known between the stat and the open */
		close(fd);
		ns->seen = w->scan_gen;
		return ns;
	}
	return add(w, fd, ino, name);
}

/* A --netns word's namespace: seen, or added (named by the word: a PID
 * as "pid:PID"), captured (watch's own too, if it names it). NULL if it
 * names none. */
static struct nf_watch_ns *open_spec(struct nf_watch *w, const char *spec)
{
	char path[PATH_MAX], name[NF_WATCH_NS_NAME];
	struct nf_watch_ns *ns;

	if (strcmp(spec, "host") == 0) {
		ns = w->ns[0];
	} else {
		nf_watch_spec_path(spec, path, sizeof(path), name, sizeof(name));
		ns = open_path(w, path, name);
	}
	if (ns == w->ns[0] && !ns->cap)
		nf_watch_cap_open(w, ns);
	return ns;
}

/* ---- opening, scanning, closing -------------------------------------------------- */

/* The host's namespace inode as this process sees it: kthreadd's (PID 2,
 * a kernel thread, always in the initial namespace) where it is PID 2's
 * command, else PID 1's (in a PID namespace of its own: a container's
 * init); 0 if unreadable. From the links: opening PID 1's may be refused
 * (an init that is not dumpable). */
static uint64_t host_ns(void)
{
	char comm[32] = "";
	FILE *f = fopen("/proc/2/comm", "re");

	if (f) {
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
	}
	return nf_watch_proc_ns(strcmp(comm, "kthreadd\n") == 0 ? 2 : 1);
}

/* watch's own namespace, held, and whether it is the host's: every
 * namespace is watched from there only (in a container, or under
 * unshare -n, only its own unless --netns says more); if the host's
 * cannot be read, watch takes its own for it. 0, or 1. */
static int open_home(struct nf_watch *w)
{
	struct stat self;
	uint64_t init;
	int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &self)) {
		nf_cli_warnx(0, "/proc/self/ns/net: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	w->self_fd = fd;
	w->nsfs_dev = (uint64_t)self.st_dev;
	init = host_ns();
	w->all_ns = !w->nspecs && (!init || init == (uint64_t)self.st_ino);
	if ((fd = dup(w->self_fd)) < 0 || !add(w, fd, (uint64_t)self.st_ino, "host"))
		return 1;
	return w->ns[0]->cap || w->nspecs || (w->all_ns && w->ns[0]->retry) ? 0 : 1;
}

/* Two descriptors a namespace: the soft limit raised to the hard one
 * (1,024 would be 500 namespaces). */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Closes those the census just applied did not see (never the host's). */
static void close_unseen(struct nf_watch *w)
{
	size_t k = 1;

	for (size_t i = 1; i < w->nns; i++) {
		if (w->ns[i]->seen == w->scan_gen)
			w->ns[k++] = w->ns[i];
		else
			drop(w, w->ns[i]);
	}
	w->nns = k;
}

/* Namespaces without a capture for want of -i's interface (the host's
 * too, when others have it): again. */
static void recapture(struct nf_watch *w)
{
	for (size_t i = 0; i < w->nns; i++)
		if (w->ns[i]->retry)
			nf_watch_cap_open(w, w->ns[i]);
}

/* The inodes the set holds, for c's next census (no memory: none, and
 * the census opens a descriptor for each one it finds, closed here). */
static void tell_known(struct nf_watch *w, struct nf_watch_census *c)
{
	c->nknown = 0;
	if (w->nns > c->capknown) {
		uint64_t *a = realloc(c->known, w->nns * 2 * sizeof(*a));

		if (!a)
			return;
		c->known = a;
		c->capknown = w->nns * 2;
	}
	for (size_t i = 0; i < w->nns; i++)
		c->known[i] = w->ns[i]->ino;
	c->nknown = w->nns;
}

/* Census c applied: each namespace it found seen (added, with the
 * descriptor it opened, if the set did not hold it), those it did not
 * closed, then c told what the set holds now. */
static void apply(struct nf_watch *w, struct nf_watch_census *c)
{
	w->scan_gen++;
	w->ns[0]->seen = w->scan_gen;
	for (size_t i = 0; c->failed && i < w->nns; i++)
		w->ns[i]->seen = w->scan_gen; /* /proc unreadable now: nothing is closed */
	for (size_t i = 0; i < c->nent; i++) {
		struct nf_watch_census_ent *e = &c->ent[i];
		struct nf_watch_ns *ns = find(w, e->ino);

		if (ns) {
			ns->seen = w->scan_gen;
			if (e->fd >= 0)
				close(e->fd);
		} else if (e->fd >= 0) {
			add(w, e->fd, e->ino, e->name); /* the descriptor add's now, or closed */
		}
		e->fd = -1;
	}
	nf_watch_census_clear(c);
	close_unseen(w);
	recapture(w);
	tell_known(w, c);
}

/* The census set up (after open_home and the --netns words): every
 * namespace, or the words' (those not the host's). */
static void census_init(struct nf_watch *w)
{
	struct nf_watch_census *c = &w->census;

	c->all_ns = w->all_ns;
	c->specs = w->specs;
	c->nspecs = w->nspecs;
	c->nsfs_dev = w->nsfs_dev;
	tell_known(w, c);
}

int nf_watch_netns_open(struct nf_watch *w)
{
	raise_nofile();
	w->self_fd = -1;
	w->scan_gen = 1;
	if (open_home(w))
		return 1;
	for (size_t i = 0; i < w->nspecs; i++) {
		struct nf_watch_ns *ns = open_spec(w, w->specs[i]);

		if (!ns) {
			nf_cli_warnx(0, "--netns %s: %s", w->specs[i],
				errno == ENOENT ? "no such network namespace"
				: errno == EINVAL ? "not a network namespace" : strerror(errno));
			return 1;
		}
		if (!ns->cap && ns->retry)
			nf_cli_warnx(0, "--netns %s: no interface %s there",
				w->specs[i], w->ifname);
		if (!ns->cap) /* else said why */
			return 1;
	}
	census_init(w);
	if (w->all_ns) {
		nf_watch_census_take(&w->census);
		apply(w, &w->census);
	}
	if (!w->nrings && w->ns[0]->retry) { /* -i's interface: in no namespace */
		nf_cli_warnx(0, "no interface %s in any network namespace", w->ifname);
		return 1;
	}
	if (w->all_ns || w->nspecs) /* else nothing comes or goes */
		nf_watch_scanwork_start(w, &w->census); /* else (it failed) the loop takes it */
	return 0;
}

void nf_watch_netns_tick(struct nf_watch *w, uint64_t now_ms)
{
	nf_watch_cap_collect(w);
	for (size_t i = 1; i < w->nns; i++)
		nf_watch_cap_resize(w, w->ns[i], now_ms);
}

void nf_watch_netns_scan(struct nf_watch *w, int due)
{
	struct nf_watch_census *c;

	if (!w->all_ns && !w->nspecs)
		return; /* its own only: nothing comes or goes */
	if ((c = nf_watch_scanwork_ready(w)) != NULL) {
		apply(w, c);
		nf_watch_scanwork_back(w);
	} else if (!w->scanwork && due) {
		nf_watch_census_take(&w->census);
		apply(w, &w->census);
	}
}

void nf_watch_netns_close_all(struct nf_watch *w)
{
	nf_watch_scanwork_stop(w);
	for (size_t i = 0; i < w->nns; i++)
		drop(w, w->ns[i]);
	free(w->ns);
	w->ns = NULL;
	w->nns = w->capns = 0;
	nf_watch_census_free(&w->census);
	if (w->self_fd >= 0)
		close(w->self_fd);
	w->self_fd = -1;
}

void nf_watch_netns_ring_stats(struct nf_watch *w, struct nf_ring_stats *s)
{
	*s = w->gone_rs;
	for (size_t i = 0; i < w->nns; i++)
		nf_watch_cap_stats(w->ns[i], s);
}
