/*
 * read.c - the receiving side: read, readv, recv, recvfrom, recvmsg,
 * recvmmsg and glibc's fortified __read_chk, __recv_chk, __recvfrom_chk
 * (what -D_FORTIFY_SOURCE=2 -O2 turns read and recv into).
 *
 * A program that reads a socket is waiting for the answer to what it
 * wrote: what coalesce holds for that socket goes out first, and audit
 * times the call when writes it is watching precede it.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../nf_hooks.h"
#include "nf_audit.h"
#include "nf_coalesce.h"
#include "nf_init.h"
#include "nf_real.h"
#include "nf_track.h"

/* One atomic load when no connection holds bytes: the common case. */
void nf_before_read(int fd)
{
	struct nf_conn *c;

	if (atomic_load_explicit(&nf_coalesce_npending, memory_order_relaxed) == 0)
		return;
	c = nf_conn_get(fd);
	if (c && nf_conn_kind(c) == NF_KIND_TCP &&
	    atomic_load_explicit(&c->action, memory_order_acquire) == NF_ACT_COALESCE)
		nf_coalesce_flush(c, fd);
}

ssize_t nf_recvmsg(int fd, struct msghdr *msg, int flags)
{
	ssize_t rc;
	int saved;

	nf_before_read(fd);
	rc = nf_real.recvmsg(fd, msg, flags);
	saved = errno;
	if (rc >= 0 && msg && msg->msg_controllen > 0)
		nf_track_received(msg);
	errno = saved;
	return rc;
}

NF_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	struct nf_audit_read a;
	ssize_t rc;

	nf_init();
	nf_before_read(fd);
	if (!nf_audit_read_begin(fd, &a))
		return nf_real.read(fd, buf, n);
	rc = nf_real.read(fd, buf, n);
	nf_audit_read_end(&a, rc);
	return rc;
}

NF_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	struct nf_audit_read a;
	ssize_t rc;

	nf_init();
	nf_before_read(fd);
	if (!nf_audit_read_begin(fd, &a))
		return nf_real.readv(fd, iov, iovcnt);
	rc = nf_real.readv(fd, iov, iovcnt);
	nf_audit_read_end(&a, rc);
	return rc;
}

NF_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	struct nf_audit_read a;
	ssize_t rc;

	nf_init();
	nf_before_read(fd);
	if (!nf_audit_read_begin(fd, &a))
		return nf_real.recv(fd, buf, n, flags);
	rc = nf_real.recv(fd, buf, n, flags);
	nf_audit_read_end(&a, rc);
	return rc;
}

NF_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags,
			   struct sockaddr *sa, socklen_t *salen)
{
	struct nf_audit_read a;
	ssize_t rc;

	nf_init();
	nf_before_read(fd);
	if (!nf_audit_read_begin(fd, &a))
		return nf_real.recvfrom(fd, buf, n, flags, sa, salen);
	rc = nf_real.recvfrom(fd, buf, n, flags, sa, salen);
	nf_audit_read_end(&a, rc);
	return rc;
}

NF_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct nf_audit_read a;
	ssize_t rc;

	nf_init();
	if (!nf_audit_read_begin(fd, &a))
		return nf_recvmsg(fd, msg, flags);
	rc = nf_recvmsg(fd, msg, flags);
	nf_audit_read_end(&a, rc);
	return rc;
}

NF_EXPORT int recvmmsg(int fd, struct mmsghdr *vec, unsigned vlen, nf_mmsg_flags flags,
		       struct timespec *timeout)
{
	struct nf_audit_read a;
	int rc, saved, audited;

	nf_init();
	nf_before_read(fd);
	audited = nf_audit_read_begin(fd, &a);
	rc = nf_real.recvmmsg(fd, vec, vlen, flags, timeout);
	if (audited)
		nf_audit_read_end(&a, rc);
	saved = errno;
	for (int i = 0; i < rc; i++)
		if (vec[i].msg_hdr.msg_controllen > 0)
			nf_track_received(&vec[i].msg_hdr);
	errno = saved;
	return rc;
}

/*
 * The real fortified calls. A libc without them (musl: nothing built
 * against it calls them, but a program may still find ours) gets glibc's
 * check and the plain call.
 */
static void chk_fail_if(int overflow)
{
	static const char msg[] = "*** buffer overflow detected ***: terminated\n";

	if (!overflow)
		return;
	(void)nf_real.write(STDERR_FILENO, msg, sizeof(msg) - 1);
	abort();
}

static ssize_t real_read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	if (nf_real.__read_chk)
		return nf_real.__read_chk(fd, buf, n, buflen);
	chk_fail_if(n > buflen);
	return nf_real.read(fd, buf, n);
}

static ssize_t real_recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	if (nf_real.__recv_chk)
		return nf_real.__recv_chk(fd, buf, n, buflen, flags);
	chk_fail_if(n > buflen);
	return nf_real.recv(fd, buf, n, flags);
}

static ssize_t real_recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
				 struct sockaddr *sa, socklen_t *salen)
{
	if (nf_real.__recvfrom_chk)
		return nf_real.__recvfrom_chk(fd, buf, n, buflen, flags, sa, salen);
	chk_fail_if(n > buflen);
	return nf_real.recvfrom(fd, buf, n, flags, sa, salen);
}

NF_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	struct nf_audit_read a;
	ssize_t rc;

	nf_init();
	nf_before_read(fd);
	if (!nf_audit_read_begin(fd, &a))
		return real_read_chk(fd, buf, n, buflen);
	rc = real_read_chk(fd, buf, n, buflen);
	nf_audit_read_end(&a, rc);
	return rc;
}

NF_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	struct nf_audit_read a;
	ssize_t rc;

	nf_init();
	nf_before_read(fd);
	if (!nf_audit_read_begin(fd, &a))
		return real_recv_chk(fd, buf, n, buflen, flags);
	rc = real_recv_chk(fd, buf, n, buflen, flags);
	nf_audit_read_end(&a, rc);
	return rc;
}

NF_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
				 struct sockaddr *sa, socklen_t *salen)
{
	struct nf_audit_read a;
	ssize_t rc;

	nf_init();
	nf_before_read(fd);
	if (!nf_audit_read_begin(fd, &a))
		return real_recvfrom_chk(fd, buf, n, buflen, flags, sa, salen);
	rc = real_recvfrom_chk(fd, buf, n, buflen, flags, sa, salen);
	nf_audit_read_end(&a, rc);
	return rc;
}
