/*
 * watch_netns.c - the network namespaces naglefix watch watches
 * (watch_int.h): its own ("host"), and, when it runs in the host's
 * (kthreadd's), every other one of the host, found where they show:
 * /proc/PID/ns/net of each process (one per namespace inode; watch_procs.c
 * walks them) and the names under /run/netns; or only those --netns
 * names. Each is held by a descriptor from the moment
 * it is found (a process leaving it cannot have its number reused under
 * us); its capture is made inside it (setns, the ring, setns back: a
 * socket keeps the namespace it was made in). Looked for again every
 * NF_WATCH_SCAN_MS: one that no process is in and no name holds any more
 * is closed (its capture, its descriptor), so that the kernel can free
 * it. Its capture is watch_cap.c's.
 */
#include <ctype.h>
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "watch_int.h"
#include "cli/common/nf_cli.h"

#define RUN_NETNS "/run/netns"

/* ---- the set ------------------------------------------------------------------- */

static struct nf_watch_ns *find(struct nf_watch *w, uint64_t ino)
{
	for (size_t i = 0; i < w->nns; i++)
		if (w->ns[i]->ino == ino)
			return w->ns[i];
	return NULL;
}

/* fd's namespace inode, if fd is a network namespace: 0, or -errno
 * (-EINVAL: another file, or another kind of namespace). */
static int ns_inode(const struct nf_watch *w, int fd, uint64_t *ino)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (w->nsfs_dev && (uint64_t)st.st_dev != w->nsfs_dev)
		return -EINVAL;
	if (ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET)
		return -EINVAL;
	*ino = (uint64_t)st.st_ino;
	return 0;
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
	if ((rc = ns_inode(w, fd, &ino)) < 0) {
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

/* ---- where namespaces show ----------------------------------------------------- */

/* Each name under /run/netns (ip netns add): seen, or added. */
static void scan_named(struct nf_watch *w)
{
	DIR *d = opendir(RUN_NETNS);
	struct dirent *e;
	char path[sizeof(RUN_NETNS) + NAME_MAX + 2];

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), RUN_NETNS "/%s", e->d_name);
		open_path(w, path, e->d_name);
	}
	closedir(d);
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
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

/* Each process's namespace: seen, or (if add) added as "pid:N", N the
 * topmost process in it (not whichever /proc lists first: PIDs wrap).
 * The link is read first (no descriptor for a namespace known already). */
static void scan_procs(struct nf_watch *w, int add_new)
{
	const struct nf_watch_proc *p;
	ssize_t n = nf_watch_procs(w, &p);
	struct nf_watch_ns *last = NULL;

	if (n < 0) { /* /proc unreadable now (no descriptor left?): nothing is closed */
		for (size_t i = 0; i < w->nns; i++)
			w->ns[i]->seen = w->scan_gen;
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		char path[64], name[NF_WATCH_NS_NAME];
		uint64_t ino = p[i].ino;
		long top;

		if ((last && last->ino == ino) || (last = find(w, ino))) {
			last->seen = w->scan_gen;
			continue;
		}
		if (!add_new)
			continue;
		top = top_of(p[i].pid, ino);
		snprintf(path, sizeof(path), "/proc/%ld/ns/net", top);
		snprintf(name, sizeof(name), "pid:%ld", top);
		if (!(last = open_path(w, path, name)) || last->ino != ino) {
			snprintf(path, sizeof(path), "/proc/%ld/ns/net", p[i].pid);
			snprintf(name, sizeof(name), "pid:%ld", p[i].pid);
			last = open_path(w, path, name); /* top went, or left */
		}
	}
}

/* A --netns word's file: a PID's, a path, or a name under /run/netns. */
static void spec_path(const char *spec, char *path, size_t len)
{
	if (all_digits(spec))
		snprintf(path, len, "/proc/%.20s/ns/net", spec);
	else if (strchr(spec, '/'))
		snprintf(path, len, "%s", spec);
	else
		snprintf(path, len, RUN_NETNS "/%s", spec);
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
		spec_path(spec, path, sizeof(path));
		snprintf(name, sizeof(name), "%s%.40s", all_digits(spec) ? "pid:" : "", spec);
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
	if (w->all_ns) {
		scan_named(w);
		scan_procs(w, 1);
	}
	if (!w->nrings && w->ns[0]->retry) { /* -i's interface: in no namespace */
		nf_cli_warnx(0, "no interface %s in any network namespace", w->ifname);
		return 1;
	}
	return 0;
}

/* Closes those the scan just made did not see (never the host's). */
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

void nf_watch_netns_tick(struct nf_watch *w, uint64_t now_ms)
{
	nf_watch_cap_collect(w);
	for (size_t i = 1; i < w->nns; i++)
		nf_watch_cap_resize(w, w->ns[i], now_ms);
}

void nf_watch_netns_scan(struct nf_watch *w)
{
	if (!w->all_ns && !w->nspecs)
		return; /* its own only: nothing comes or goes */
	w->scan_gen++;
	w->ns[0]->seen = w->scan_gen;
	if (w->all_ns) {
		scan_named(w);
		scan_procs(w, 1);
	} else {
		for (size_t i = 0; i < w->nspecs; i++)
			open_spec(w, w->specs[i]);
		scan_procs(w, 0);
	}
	close_unseen(w);
	recapture(w);
}

void nf_watch_netns_close_all(struct nf_watch *w)
{
	for (size_t i = 0; i < w->nns; i++)
		drop(w, w->ns[i]);
	free(w->ns);
	w->ns = NULL;
	w->nns = w->capns = 0;
	nf_watch_procs_free(w);
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
