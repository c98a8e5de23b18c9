/*
 * watch_owner.c - the process of this host holding a connection the
 * detector names (watch_int.h): watch.c names each holder with it and
 * watch_fix.c finds the receiving end, neither calling the other for it.
 * The kernel is asked for the socket inside the namespace it may live in
 * (sock_diag answers for its own namespace only: the lookup is made from
 * inside, nf_watch_enter); the processes holding it are then found
 * in /proc, which a network namespace does not divide (watch_holders.c's
 * table).
 */
#include "watch_int.h"

#include <errno.h>
#include <string.h>

static void end_of(const struct nf_end *e, struct nf_owner_end *o)
{
	o->family = e->family;
	o->port = e->port;
	memcpy(o->addr, e->addr, sizeof(o->addr));
}

/* The socket's inode in ns (sock_diag from inside it). 0, or -errno. */
static int inode_in(struct nf_watch *w, const struct nf_watch_ns *ns, const struct nf_owner_end *l,
		    const struct nf_owner_end *r, uint64_t *ino, uid_t *uid)
{
	int rc = nf_watch_enter(w, ns);

	if (rc < 0)
		return rc;
	rc = nf_owner_inode(l, r, ino, uid);
	nf_watch_leave(w, ns);
	return rc;
}

/* The namespace whose kernel knows l <-> r, as look says: its first,
 * then (unless only) the others. NULL if none; *closed then says whether
 * one had it closed, with no file (nf_owner_inode's -ENOTCONN). */
static const struct nf_watch_ns *find_socket(struct nf_watch *w, const struct nf_watch_look *look,
					     const struct nf_owner_end *l,
					     const struct nf_owner_end *r, uint64_t *ino, uid_t *uid,
					     int *closed)
{
	const struct nf_watch_ns *first = look && look->ns ? look->ns : w->ns[0];
	int rc = inode_in(w, first, l, r, ino, uid);

	*closed = rc == -ENOTCONN;
	if (rc == 0)
		return first;
	if (look && look->only)
		return NULL;
	for (size_t i = 0; i < w->nns; i++) {
		if (w->ns[i] == first)
			continue;
		if ((rc = inode_in(w, w->ns[i], l, r, ino, uid)) == 0)
			return w->ns[i];
		*closed |= rc == -ENOTCONN;
	}
	return NULL;
}

int nf_watch_owner(struct nf_watch *w, const struct nf_watch_look *look, const struct nf_end *local,
		   const struct nf_end *remote, struct nf_owner *o, const struct nf_watch_ns **where)
{
	struct nf_owner_end l, r;
	const struct nf_watch_ns *ns;
	uint64_t ino = 0;
	uid_t uid = 0;
	int closed, rc;

	end_of(local, &l);
	end_of(remote, &r);
	memset(o, 0, sizeof(*o));
	o->fd = -1;
	if (where)
		*where = NULL;
	if (!(ns = find_socket(w, look, &l, &r, &ino, &uid, &closed)))
		return closed ? -ENOTCONN : -ENOENT;
	if (where)
		*where = ns;
	o->uid = uid;
	rc = nf_watch_holder(w, ino, o);
	/* /proc unreadable is not "none here": the codes above keep their sense */
	return rc == -ENOENT || rc == -ENOTCONN ? -EIO : rc;
}
