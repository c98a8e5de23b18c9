/*
 * watch_holders.c - the host's socket descriptors as watch last walked
 * them (watch_int.h): the table a holder is named from (watch_owner.c),
 * so that a burst of stalls costs one walk of /proc, not one each. A
 * holder found in the table is named only after it is checked live
 * (nf_owner_name: the descriptor read again, holding a pidfd); a socket
 * the table does not hold (newer than the walk, given to another process
 * since, or held by a process older than where the walk stopped) has
 * /proc walked again, newest process first (a connection that has just
 * stalled is most often a young process's), stopping at the holder. So a
 * holder is said gone only when a walk made after its stall, over every
 * process, found none.
 */
#include <errno.h>
#include <stdlib.h>

#include "watch_int.h"

/* The first entry of ino in the table, or NULL. */
static const struct nf_owner_fd *first_of(const struct nf_owner_fds *t, uint64_t ino)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->a[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->n && t->a[lo].ino == ino ? &t->a[lo] : NULL;
}

/* The processes the table (sorted by_ino) has holding ino, 1 at least. */
static unsigned holders_of(const struct nf_owner_fds *t, uint64_t ino)
{
	const struct nf_owner_fd *f = first_of(t, ino), *end = t->a + t->n;
	unsigned n = 0;

	for (; f && f < end && f->ino == ino; f++)
		n += f == t->a || f[-1].ino != ino || f[-1].pid != f->pid;
	return n ? n : 1;
}

/* The table's holders of ino, the first that still holds it named into
 * *o, o->npids as holders_of. 0, or -ESRCH (o->pid 0). */
static int name_from(const struct nf_owner_fds *t, uint64_t ino, struct nf_owner *o)
{
	const struct nf_owner_fd *f = first_of(t, ino), *end = t->a + t->n;

	for (; f && f < end && f->ino == ino; f++)
		if (nf_owner_name(f->pid, f->fd, ino, o) == 0) {
			o->npids = holders_of(t, ino);
			return 0;
		}
	o->pid = 0;
	return -ESRCH;
}

static int by_ino(const void *a, const void *b)
{
	const struct nf_owner_fd *x = a, *y = b;

	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Process pid's socket descriptors into *t, and if one is ino and pid
 * still holds it, *o named: 1. 0 if not, -ENOMEM. */
static int read_proc(struct nf_owner_fds *t, pid_t pid, uint64_t ino, struct nf_owner *o)
{
	size_t from = t->n;

	if (nf_owner_fds_of(pid, t) < 0)
		return -ENOMEM;
	for (size_t k = from; k < t->n; k++)
		if (t->a[k].ino == ino && nf_owner_name(pid, t->a[k].fd, ino, o) == 0)
			return 1;
	return 0;
}

/* The processes walked newest first, until one is named holding ino;
 * what was read is the table now. 0, -ESRCH (all walked), or -errno. */
static int walk(struct nf_watch *w, uint64_t ino, struct nf_owner *o)
{
	struct nf_owner_fds t = { NULL, 0, 0 };
	pid_t *pids;
	ssize_t n = nf_owner_pids(&pids);
	int rc = 0;

	if (n < 0)
		return (int)n;
	for (ssize_t i = 0; i < n && rc == 0; i++)
		rc = read_proc(&t, pids[i], ino, o);
	free(pids);
	if (rc < 0) {
		free(t.a);
		return rc;
	}
	if (t.n)
		qsort(t.a, t.n, sizeof(*t.a), by_ino);
	free(w->fds.a);
	w->fds = t;
	if (!rc) {
		o->pid = 0;
		return -ESRCH;
	}
	o->npids = holders_of(&w->fds, ino); /* o as read_proc named it */
	return 0;
}

int nf_watch_holder(struct nf_watch *w, uint64_t ino, struct nf_owner *o)
{
	o->inode = ino;
	o->pid = 0;
	if (name_from(&w->fds, ino, o) == 0)
		return 0;
	return walk(w, ino, o);
}

void nf_watch_holders_free(struct nf_watch *w)
{
	free(w->fds.a);
	w->fds = (struct nf_owner_fds){ NULL, 0, 0 };
}
