/*
 * nf_track.h - what a socket is and what the policy does to it.
 *
 * The hooks call these around the real calls: they classify descriptors,
 * pick the rule of a connection and apply it (TCP_NODELAY). Every function
 * keeps errno as it found it.
 */
#ifndef NF_TRACK_H
#define NF_TRACK_H

#include <sys/socket.h>

#include "core/nf_conn.h"

/* The policy of this process, which the functions here apply: loaded by
 * initialisation (init.c), read-only after nf_init(). */
extern struct nf_policy nf_policy;

/* socket() returned fd for (domain, type, protocol). */
void nf_track_created(int fd, int domain, int type, int protocol);

/*
 * The entry of fd if it is a TCP socket over IPv4/IPv6 (an UNKNOWN fd is
 * classified now, with one getsockopt), else NULL. The action may still be
 * undecided.
 */
struct nf_conn *nf_track_lookup(int fd);

/*
 * As nf_track_lookup, and if the socket is connected but its action is not
 * decided yet (it was open before we loaded, or received), decides and
 * applies it now. NULL for anything that is not a TCP socket.
 */
struct nf_conn *nf_track_decided(int fd);

/*
 * The entry of fd if its rule is coalesce, else NULL: nf_track_decided's
 * entry (a socket not seen before has its rule decided now), so the one
 * test of the hooks that may buffer or must push out what is buffered.
 */
static inline struct nf_conn *nf_track_coalescing(int fd)
{
	struct nf_conn *c = nf_conn_peek(fd);

	/* a decided TCP socket (every write after its first): no call */
	if (c && atomic_load_explicit(&c->kind, memory_order_acquire) == NF_KIND_TCP) {
		int a = atomic_load_explicit(&c->action, memory_order_acquire);

		if (a != NF_ACT_UNDECIDED)
			return a == NF_ACT_COALESCE ? c : NULL;
	}
	c = nf_track_decided(fd);

	if (c && atomic_load_explicit(&c->action, memory_order_acquire) == NF_ACT_COALESCE)
		return c;
	return NULL;
}

/*
 * A FILE was opened on fd (fdopen): from now on its rule is never
 * coalesce (a rule decided now becomes nodelay). Returns its entry as
 * nf_track_decided does; a socket already buffering is the caller's to
 * retire.
 */
struct nf_conn *nf_track_stdio(int fd);

/*
 * fd is about to connect to sa: decide its action from the connect rules
 * and apply it before the SYN leaves. Returns 1 if it decided now (so a
 * failed connect can be undone with nf_track_connect_done), else 0.
 */
int nf_track_connecting(int fd, const struct sockaddr *sa, socklen_t salen);

/*
 * A connect (connect(), or a send with MSG_FASTOPEN and an address) for
 * which nf_track_connecting returned decided has returned rc, errno set:
 * if it failed in a way that leaves the socket unconnected (not
 * EINPROGRESS, EINTR, EALREADY or EISCONN), undoes the decision. Keeps errno.
 */
void nf_track_connect_done(int fd, int decided, long rc);

/* connect(AF_UNSPEC) dissolved fd's connection (whose buffered bytes the
 * caller has sent): its next connect picks its rule afresh. */
void nf_track_disconnected(int fd);

/* accept() on listening socket lfd returned fd: classify and decide fd. */
void nf_track_accepted(int lfd, int fd);

/* Does the action of c keep TCP_NODELAY on whatever the program says? */
int nf_track_forces_nodelay(const struct nf_conn *c);

/* The program set TCP_NODELAY on fd, successfully: keep it on if forced. */
void nf_track_nodelay_set(int fd);

/* recvmsg() delivered descriptors (SCM_RIGHTS) in msg: mark them unknown. */
void nf_track_received(const struct msghdr *msg);

#endif
