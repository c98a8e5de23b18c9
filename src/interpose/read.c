/*
 * read.c - the receiving side: read, readv, recv, recvfrom, recvmsg,
 * recvmmsg and glibc's fortified __read_chk, __recv_chk, __recvfrom_chk
 * (what -D_FORTIFY_SOURCE=2 -O2 turns read and recv into).
 *
 * A program that reads a socket is waiting for the answer to what it
 * wrote: what coalesce holds for that socket goes out first, and audit
 * times the call when writes it is watching precede it, and notes when a
 * read of an audit socket returns data (the peer's split writes).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hooks_int.h"
#include "fast_int.h"
#include "actions/audit/nf_audit.h"
#include "actions/auto/nf_auto.h"
#include "actions/coalesce/nf_coalesce.h"
#include "actions/nf_track.h"
#include "actions/quickack/nf_quickack.h"
#include "core/nf_real.h"
#include "process/nf_init.h"

/* Received descriptors (SCM_RIGHTS) are classified on their first use. */
static void note_received(const struct msghdr *msg, ssize_t rc)
{
	int saved = errno;

	if (rc >= 0 && msg && msg->msg_controllen > 0)
		nf_track_received(msg);
	errno = saved;
}

/* What the socket's action does before a read: coalesce sends what it
 * holds, auto pushes what Nagle holds, quickack sets TCP_QUICKACK (and
 * asks for it again after the read: returns 1). One lookup for all. */
static int action_before(int fd)
{
	struct nf_conn *c = nf_conn_get(fd);

	if (!c || nf_conn_kind(c) != NF_KIND_TCP)
		return 0;
	switch (atomic_load_explicit(&c->action, memory_order_acquire)) {
	case NF_ACT_COALESCE:
		nf_coalesce_flush(c, fd);
		return 0;
	case NF_ACT_AUTO:
		nf_auto_before_read(c, fd);
		return 0;
	case NF_ACT_QUICKACK:
		nf_quickack_before_read(fd);
		return 1;
	default:
		return 0;
	}
}

/*
 * Around every read: before it, initialisation, the action's part
 * (action_before) and audit's stall clock; after it, TCP_QUICKACK again
 * on a quickack socket, and audit's findings (errno kept). Each exported
 * read is then nf_leave_alone_near's test and libc's call, with no stack
 * frame, or a tail call to its NF_SLOW part: before(fd, &a, caller);
 * return after(&a, <the real call>); caller, the return address taken in
 * the libc-named function, is the program's own code (audit names it as a
 * recv_split finding's caller).
 */
static void before(int fd, struct nf_audit_read *a, void *caller)
{
	nf_init();
	a->quickack = action_before(fd);
	a->fd = fd;
	if (!nf_audit_enabled || !nf_audit_read_begin(fd, caller, a))
		a->c = NULL;
}

static ssize_t after(const struct nf_audit_read *a, ssize_t rc)
{
	if (a->quickack)
		nf_quickack_after_read(a->fd, rc);
	if (a->c)
		nf_audit_read_end(a, rc);
	return rc;
}

static NF_SLOW ssize_t read_hooked(int fd, void *buf, size_t n, void *caller)
{
	struct nf_audit_read a;

	if (nf_leave_alone(fd))
		return nf_real.read(fd, buf, n);
	before(fd, &a, caller);
	return after(&a, nf_real.read(fd, buf, n));
}

NF_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	if (nf_leave_alone_near(fd))
		return nf_real.read(fd, buf, n);
	return read_hooked(fd, buf, n, __builtin_return_address(0));
}

static NF_SLOW ssize_t readv_hooked(int fd, const struct iovec *iov, int iovcnt, void *caller)
{
	struct nf_audit_read a;

	if (nf_leave_alone(fd))
		return nf_real.readv(fd, iov, iovcnt);
	before(fd, &a, caller);
	return after(&a, nf_real.readv(fd, iov, iovcnt));
}

NF_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	if (nf_leave_alone_near(fd))
		return nf_real.readv(fd, iov, iovcnt);
	return readv_hooked(fd, iov, iovcnt, __builtin_return_address(0));
}

static NF_SLOW ssize_t recv_hooked(int fd, void *buf, size_t n, int flags, void *caller)
{
	struct nf_audit_read a;

	if (nf_leave_alone(fd))
		return nf_real.recv(fd, buf, n, flags);
	before(fd, &a, caller);
	return after(&a, nf_real.recv(fd, buf, n, flags));
}

NF_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	if (nf_leave_alone_near(fd))
		return nf_real.recv(fd, buf, n, flags);
	return recv_hooked(fd, buf, n, flags, __builtin_return_address(0));
}

static NF_SLOW ssize_t recvfrom_hooked(int fd, void *buf, size_t n, int flags,
				       struct sockaddr *sa, socklen_t *salen, void *caller)
{
	struct nf_audit_read a;

	if (nf_leave_alone(fd))
		return nf_real.recvfrom(fd, buf, n, flags, sa, salen);
	before(fd, &a, caller);
	return after(&a, nf_real.recvfrom(fd, buf, n, flags, sa, salen));
}

NF_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags,
			   struct sockaddr *sa, socklen_t *salen)
{
	if (nf_leave_alone_near(fd))
		return nf_real.recvfrom(fd, buf, n, flags, sa, salen);
	return recvfrom_hooked(fd, buf, n, flags, sa, salen, __builtin_return_address(0));
}

NF_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct nf_audit_read a;
	ssize_t rc;

	if (nf_leave_alone(fd)) {
		rc = nf_real.recvmsg(fd, msg, flags);
	} else {
		before(fd, &a, __builtin_return_address(0));
		rc = after(&a, nf_real.recvmsg(fd, msg, flags));
	}
	note_received(msg, rc);
	return rc;
}

/* What recvmmsg's rc messages of vec hold, in bytes (rc itself when it
 * failed: errno is untouched). */
static ssize_t mmsg_bytes(const struct mmsghdr *vec, int rc)
{
	ssize_t n = 0;

	if (rc < 0)
		return rc;
	for (int i = 0; i < rc; i++)
		n += vec[i].msg_len;
	return n;
}

NF_EXPORT int recvmmsg(int fd, struct mmsghdr *vec, unsigned vlen, nf_mmsg_flags flags,
		       struct timespec *timeout)
{
	struct nf_audit_read a;
	int rc;

	if (nf_leave_alone(fd)) {
		rc = nf_real.recvmmsg(fd, vec, vlen, flags, timeout);
	} else {
		before(fd, &a, __builtin_return_address(0));
		rc = nf_real.recvmmsg(fd, vec, vlen, flags, timeout);
		after(&a, mmsg_bytes(vec, rc)); /* audit and quickack count bytes */
	}
	for (int i = 0; i < rc; i++)
		note_received(&vec[i].msg_hdr, rc);
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

static NF_SLOW ssize_t __read_chk_hooked(int fd, void *buf, size_t n, size_t buflen,
					 void *caller)
{
	struct nf_audit_read a;

	if (nf_leave_alone(fd))
		return real_read_chk(fd, buf, n, buflen);
	before(fd, &a, caller);
	return after(&a, real_read_chk(fd, buf, n, buflen));
}

NF_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	if (nf_leave_alone_near(fd))
		return real_read_chk(fd, buf, n, buflen);
	return __read_chk_hooked(fd, buf, n, buflen, __builtin_return_address(0));
}

static NF_SLOW ssize_t __recv_chk_hooked(int fd, void *buf, size_t n, size_t buflen, int flags,
					 void *caller)
{
	struct nf_audit_read a;

	if (nf_leave_alone(fd))
		return real_recv_chk(fd, buf, n, buflen, flags);
	before(fd, &a, caller);
	return after(&a, real_recv_chk(fd, buf, n, buflen, flags));
}

NF_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	if (nf_leave_alone_near(fd))
		return real_recv_chk(fd, buf, n, buflen, flags);
	return __recv_chk_hooked(fd, buf, n, buflen, flags, __builtin_return_address(0));
}

static NF_SLOW ssize_t __recvfrom_chk_hooked(int fd, void *buf, size_t n, size_t buflen,
					     int flags, struct sockaddr *sa, socklen_t *salen,
					     void *caller)
{
	struct nf_audit_read a;

	if (nf_leave_alone(fd))
		return real_recvfrom_chk(fd, buf, n, buflen, flags, sa, salen);
	before(fd, &a, caller);
	return after(&a, real_recvfrom_chk(fd, buf, n, buflen, flags, sa, salen));
}

NF_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
				 struct sockaddr *sa, socklen_t *salen)
{
	if (nf_leave_alone_near(fd))
		return real_recvfrom_chk(fd, buf, n, buflen, flags, sa, salen);
	return __recvfrom_chk_hooked(fd, buf, n, buflen, flags, sa, salen, __builtin_return_address(0));
}
