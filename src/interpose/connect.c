/*
 * connect.c - socket, connect, accept, accept4: where a socket is born and
 * where its rule is chosen.
 */
#include <errno.h>

#include "hooks_int.h"
#include "actions/audit/nf_audit.h"
#include "actions/coalesce/nf_coalesce.h"
#include "actions/nf_track.h"
#include "core/nf_real.h"
#include "process/nf_init.h"

int nf_socket(int domain, int type, int protocol)
{
	int fd = nf_real.socket(domain, type, protocol);
	int saved = errno;

	if (fd >= 0)
		nf_track_created(fd, domain, type, protocol);
	errno = saved;
	return fd;
}

/*
 * connect(AF_UNSPEC) dissolves a TCP connection; the socket may then
 * connect elsewhere, under another rule. What coalesce holds goes first.
 */
static int disconnect(int fd, const struct sockaddr *sa, socklen_t len)
{
	struct nf_conn *c = nf_track_lookup(fd);
	int rc;

	if (c && atomic_load(&c->action) == NF_ACT_COALESCE)
		nf_coalesce_retire(c, fd, NF_ACT_NODELAY); /* still forces TCP_NODELAY */
	rc = nf_real.connect(fd, sa, len);
	if (rc == 0 && c) {
		nf_audit_forget(fd);
		nf_track_disconnected(fd);
	}
	return rc;
}

int nf_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	int decided, rc;

	if (sa && len >= (socklen_t)sizeof(sa_family_t) && sa->sa_family == AF_UNSPEC)
		return disconnect(fd, sa, len);
	decided = nf_track_connecting(fd, sa, len);
	rc = nf_real.connect(fd, sa, len);
	nf_track_connect_done(fd, decided, rc);
	return rc;
}

/* accept or accept4 on listening socket fd returned nfd: tracked. */
static int accepted(int fd, int nfd)
{
	if (nfd >= 0)
		nf_track_accepted(fd, nfd);
	return nfd;
}

int nf_accept(int fd, struct sockaddr *sa, socklen_t *len)
{
	return accepted(fd, nf_real.accept(fd, sa, len));
}

int nf_accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
	return accepted(fd, nf_real.accept4(fd, sa, len, flags));
}

NF_EXPORT int socket(int domain, int type, int protocol)
{
	nf_init();
	return nf_socket(domain, type, protocol);
}

NF_EXPORT int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	nf_init();
	return nf_connect(fd, sa, len);
}

NF_EXPORT int accept(int fd, struct sockaddr *sa, socklen_t *len)
{
	nf_init();
	return nf_accept(fd, sa, len);
}

NF_EXPORT int accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
	nf_init();
	return nf_accept4(fd, sa, len, flags);
}
