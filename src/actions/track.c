/*
 * track.c - classifying descriptors and applying the policy to sockets.
 */
#include "nf_track.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <unistd.h>

#include "actions/auto/nf_auto.h"
#include "actions/quickack/nf_quickack.h"
#include "core/nf_aside.h"
#include "core/nf_reach.h"
#include "core/nf_real.h"

struct nf_policy nf_policy;

static int is_tcp(int domain, int type, int protocol)
{
	return (domain == AF_INET || domain == AF_INET6) &&
	       (type & 0xf) == SOCK_STREAM &&
	       (protocol == 0 || protocol == IPPROTO_TCP);
}

void nf_track_created(int fd, int domain, int type, int protocol)
{
	int tcp = is_tcp(domain, type, protocol);

	/* told at creation too: a server makes its listener before it drops
	 * to a user who can no longer write the command's file */
	if (tcp)
		nf_reach_tcp();
	nf_conn_reset(fd, tcp ? NF_KIND_TCP : NF_KIND_OTHER);
}

/* One getsockopt: SO_PROTOCOL is IPPROTO_TCP only for TCP over IP. */
static enum nf_kind classify(int fd)
{
	int proto = 0;
	socklen_t len = sizeof(proto);

	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) < 0)
		return NF_KIND_OTHER;
	return proto == IPPROTO_TCP ? NF_KIND_TCP : NF_KIND_OTHER;
}

struct nf_conn *nf_track_lookup(int fd)
{
	struct nf_conn *c = nf_conn_get(fd);
	enum nf_kind kind = nf_conn_kind(c);
	int saved;

	if (nf_standing_aside()) /* no socket is ours: no getsockopt */
		return NULL;
	if (kind == NF_KIND_TCP)
		return c;
	if (kind != NF_KIND_UNKNOWN)
		return NULL;
	saved = errno;
	kind = nf_conn_settle(fd, classify(fd));
	errno = saved;
	return kind == NF_KIND_TCP ? nf_conn_get(fd) : NULL;
}

int nf_track_forces_nodelay(const struct nf_conn *c)
{
	int a = atomic_load_explicit(&c->action, memory_order_acquire);

	return a == NF_ACT_NODELAY || a == NF_ACT_COALESCE;
}

static void set_nodelay(int fd, int on)
{
	nf_real.setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}

/*
 * stdio writes through libc's internal write, which no hook sees: a socket
 * it can write (descriptors 0-2, a socket with a FILE from fdopen) is
 * never buffered, or its bytes would overtake held ones.
 */
static int stdio_may_write(int fd, struct nf_conn *c)
{
	return fd <= STDERR_FILENO || atomic_load(&c->stdio);
}

/* Records the rule for c and applies it (coalesce becomes nodelay where
 * stdio may write). errno is the caller's to keep. */
static void decide(int fd, struct nf_conn *c, enum nf_side side,
		   const struct nf_opts *o)
{
	nf_reach_tcp(); /* the command learns that a socket was seen */
	c->side = side;
	c->opts = *o;
	if (o->action == NF_ACT_COALESCE && stdio_may_write(fd, c))
		c->opts.action = NF_ACT_NODELAY;
	if (c->opts.action == NF_ACT_NODELAY || c->opts.action == NF_ACT_COALESCE)
		set_nodelay(fd, 1);
	else if (c->opts.action == NF_ACT_AUTO)
		nf_auto_adopt(c, fd);
	else if (c->opts.action == NF_ACT_QUICKACK)
		nf_quickack_adopt(c, fd);
	atomic_store_explicit(&c->action, (int)c->opts.action, memory_order_release);
	if (nf_standing_aside()) /* stood aside while deciding: its pass stands */
		atomic_store(&c->action, NF_ACT_PASS);
	nf_conn_publish(fd);
}

/* The local end of fd matched against accept rules; NULL if none matches. */
static const struct nf_opts *match_local(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	const struct nf_opts *o;

	if (!nf_policy.has_accept_rules || getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return NULL;
	o = nf_policy_match(&nf_policy, NF_SIDE_ACCEPT, (struct sockaddr *)&ss, len);
	return o == &nf_policy.dflt ? NULL : o;
}

/*
 * A connected socket we did not see connect or accept: a connect rule on
 * its peer first, then an accept rule on its local end, then the default.
 */
static void decide_unseen(int fd, struct nf_conn *c)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	const struct nf_opts *o;

	if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
		return; /* not connected (yet): decided when it is */
	o = nf_policy_match(&nf_policy, NF_SIDE_CONNECT, (struct sockaddr *)&ss, len);
	if (o != &nf_policy.dflt) {
		decide(fd, c, NF_SIDE_CONNECT, o);
		return;
	}
	o = match_local(fd);
	if (o)
		decide(fd, c, NF_SIDE_ACCEPT, o);
	else
		decide(fd, c, NF_SIDE_CONNECT, &nf_policy.dflt);
}

struct nf_conn *nf_track_decided(int fd)
{
	struct nf_conn *c = nf_track_lookup(fd);
	int saved;

	if (!c || atomic_load_explicit(&c->action, memory_order_acquire) != NF_ACT_UNDECIDED)
		return c;
	saved = errno;
	decide_unseen(fd, c);
	errno = saved;
	return c;
}

struct nf_conn *nf_track_stdio(int fd)
{
	struct nf_conn *c = nf_track_lookup(fd);

	if (!c)
		return NULL;
	atomic_store(&c->stdio, 1);
	return nf_track_decided(fd);
}

int nf_track_connecting(int fd, const struct sockaddr *sa, socklen_t salen)
{
	struct nf_conn *c;
	int saved;

	if (!sa || salen < (socklen_t)sizeof(sa_family_t) ||
	    (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return 0;
	c = nf_track_lookup(fd);
	if (!c || atomic_load(&c->action) != NF_ACT_UNDECIDED)
		return 0;
	saved = errno;
	decide(fd, c, NF_SIDE_CONNECT,
	       nf_policy_match(&nf_policy, NF_SIDE_CONNECT, sa, salen));
	errno = saved;
	return 1;
}

/* Takes back what decide() did: the program's own TCP_NODELAY, no rule. */
static void undecide(int fd)
{
	struct nf_conn *c = nf_conn_get(fd);
	int saved = errno;

	if (!c || nf_conn_kind(c) != NF_KIND_TCP)
		return;
	if (nf_track_forces_nodelay(c))
		set_nodelay(fd, atomic_load(&c->prog_nodelay));
	atomic_store(&c->action, NF_ACT_UNDECIDED);
	nf_conn_publish(fd);
	errno = saved;
}

void nf_track_connect_done(int fd, int decided, long rc)
{
	int err = errno;

	if (rc < 0 && decided && err != EINPROGRESS && err != EINTR && err != EALREADY &&
	    err != EISCONN)
		undecide(fd);
}

void nf_track_disconnected(int fd)
{
	struct nf_conn *c = nf_conn_get(fd);

	undecide(fd);
	if (c) /* a new connection: the old one's errors are not its own */
		atomic_fetch_add(&c->gen, 1);
}

void nf_track_accepted(int lfd, int fd)
{
	struct nf_conn *c;
	const struct nf_opts *o;
	int saved = errno;

	if (!nf_track_lookup(lfd)) {
		nf_conn_reset(fd, NF_KIND_OTHER);
		errno = saved;
		return;
	}
	nf_conn_reset(fd, NF_KIND_TCP);
	c = nf_conn_get(fd);
	if (c) {
		o = match_local(fd);
		decide(fd, c, NF_SIDE_ACCEPT, o ? o : &nf_policy.dflt);
	}
	errno = saved;
}

void nf_track_nodelay_set(int fd)
{
	struct nf_conn *c = nf_track_decided(fd);
	int saved = errno, val = 0;
	socklen_t len = sizeof(val);

	if (!c || atomic_load(&c->action) == NF_ACT_AUTO || /* auto.c records it */
	    getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &val, &len) < 0) {
		errno = saved;
		return;
	}
	atomic_store(&c->prog_nodelay, val != 0);
	if (nf_track_forces_nodelay(c) && val == 0)
		set_nodelay(fd, 1);
	errno = saved;
}

void nf_track_received(const struct msghdr *msg)
{
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR((struct msghdr *)msg, cm)) {
		size_t n;
		const unsigned char *data = CMSG_DATA(cm);

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, data + i * sizeof(int), sizeof(fd));
			nf_conn_reset(fd, NF_KIND_UNKNOWN);
		}
	}
}
