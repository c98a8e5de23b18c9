/*
 * fd.c - close, posix_close, close_range, closefrom, shutdown, dup, dup2, dup3,
 * fcntl(F_DUPFD*), and glibc's exported __close, __dup2, __fcntl: a descriptor's
 * state ends or is copied with it, so a reused number never carries stale
 * state, and coalesced bytes leave before the socket goes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hooks_int.h"
#include "actions/audit/nf_audit.h"
#include "actions/coalesce/nf_coalesce.h"
#include "core/nf_conn.h"
#include "core/nf_real.h"
#include "process/nf_init.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC 4
#endif

/*
 * The entry of fd if it is a TCP socket already known to coalesce, else
 * NULL. Unlike nf_track_coalescing it never classifies the descriptor or
 * decides its rule: a socket the library has not seen holds nothing, and
 * close, shutdown and dup need not ask the kernel about it.
 */
static struct nf_conn *known_coalescing(int fd)
{
	struct nf_conn *c = nf_conn_get(fd);

	if (c && nf_conn_kind(c) == NF_KIND_TCP &&
	    atomic_load_explicit(&c->action, memory_order_acquire) == NF_ACT_COALESCE)
		return c;
	return NULL;
}

static void drain(int fd)
{
	struct nf_conn *c = known_coalescing(fd);

	if (c)
		nf_coalesce_drain_final(c, fd);
}

void nf_fd_forget(int fd)
{
	drain(fd);
	nf_audit_forget(fd);
	nf_conn_forget(fd);
}

/*
 * State is dropped before the real close: after it, another thread may
 * already have the same number back from socket() or accept().
 */
int nf_close(int fd)
{
	nf_fd_forget(fd);
	return nf_real.close(fd);
}

/* musl's posix_close closes with its internal close. Without one (glibc
 * before 2.39), flags 0 is a close. */
int nf_posix_close(int fd, int flags)
{
	if (!nf_real.posix_close && flags != 0) {
		errno = EINVAL;
		return -1;
	}
	nf_fd_forget(fd);
	return nf_real.posix_close ? nf_real.posix_close(fd, flags) : nf_real.close(fd);
}

int nf_close_range(unsigned first, unsigned last, int flags)
{
	if (!nf_real.close_range) {
		errno = ENOSYS;
		return -1;
	}
	if (!(flags & CLOSE_RANGE_CLOEXEC) && first <= last) {
		nf_coalesce_drain_range(first, last);
		nf_audit_forget_range(first, last);
		nf_conn_forget_range(first, last);
	}
	return nf_real.close_range(first, last, flags);
}

/* The state of every descriptor from first up ends, as close does. */
static void forget_from(unsigned first)
{
	nf_coalesce_drain_range(first, ~0u);
	nf_audit_forget_range(first, ~0u);
	nf_conn_forget_range(first, ~0u);
}

/*
 * glibc's closefrom closes through its internal close_range, which the
 * hook above never sees. A libc without it (musl) leaves the call to the
 * kernel's close_range, if any: closefrom reports nothing.
 */
void nf_closefrom(int lowfd)
{
	int saved;

	if (lowfd < 0)
		lowfd = 0;
	forget_from((unsigned)lowfd);
	if (nf_real.closefrom) {
		nf_real.closefrom(lowfd);
		return;
	}
	saved = errno;
#ifdef SYS_close_range
	syscall(SYS_close_range, (unsigned)lowfd, ~0u, 0);
#endif
	errno = saved;
}

int nf_shutdown(int fd, int how)
{
	struct nf_conn *c = known_coalescing(fd);

	if (c && (how == SHUT_WR || how == SHUT_RDWR))
		nf_coalesce_drain_abort(c, fd);
	return nf_real.shutdown(fd, how);
}

/*
 * Two descriptors of one socket cannot keep two buffers without risking
 * the order of their bytes: a duplicated coalesce socket is drained and
 * both copies fall back to nodelay.
 */
static void copy_state(int oldfd, int newfd)
{
	struct nf_conn *c = known_coalescing(oldfd), *nc;

	if (c)
		nf_coalesce_retire(c, oldfd, NF_ACT_NODELAY);
	nf_conn_copy(oldfd, newfd);
	nc = nf_conn_get(newfd);
	if (c && nc)
		atomic_store(&nc->action, NF_ACT_NODELAY);
}

int nf_dup(int fd)
{
	int nfd = nf_real.dup(fd);
	int saved = errno;

	if (nfd >= 0)
		copy_state(fd, nfd);
	errno = saved;
	return nfd;
}

/* dup2 or dup3 is about to close newfd (unless it is oldfd): its state ends. */
static void before_dup_onto(int oldfd, int newfd)
{
	if (oldfd != newfd) {
		drain(newfd);
		nf_audit_forget(newfd);
	}
}

/* dup2 or dup3 of oldfd onto newfd returned rc: the state follows. */
static int duped_onto(int oldfd, int newfd, int rc)
{
	int saved = errno;

	if (rc >= 0 && oldfd != newfd)
		copy_state(oldfd, newfd);
	errno = saved;
	return rc;
}

int nf_dup2(int oldfd, int newfd)
{
	before_dup_onto(oldfd, newfd);
	return duped_onto(oldfd, newfd, nf_real.dup2(oldfd, newfd));
}

int nf_dup3(int oldfd, int newfd, int flags)
{
	before_dup_onto(oldfd, newfd);
	return duped_onto(oldfd, newfd, nf_real.dup3(oldfd, newfd, flags));
}

/* fcntl or fcntl64 (fd, cmd) returned rc: a duplicate gets the state. */
static int fcntl_done(int fd, int cmd, int rc)
{
	int saved = errno;

	if (rc >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
		copy_state(fd, rc);
	errno = saved;
	return rc;
}

/*
 * fcntl's third argument is an int, a pointer or nothing, depending on
 * cmd. Like glibc's own fcntl, read it as a pointer-sized word (for a
 * command without one, whatever its place holds: the kernel ignores it)
 * and pass it on unchanged.
 */
int nf_vfcntl(int fd, int cmd, va_list ap, int large)
{
	void *arg = va_arg(ap, void *);
	int rc;

	if (large && nf_real.fcntl64)
		rc = nf_real.fcntl64(fd, cmd, arg);
	else
		rc = nf_real.fcntl(fd, cmd, arg);
	return fcntl_done(fd, cmd, rc);
}

NF_EXPORT int close(int fd)
{
	nf_init();
	return nf_close(fd);
}

NF_EXPORT int posix_close(int fd, int flags)
{
	nf_init();
	return nf_posix_close(fd, flags);
}

/* glibc's exported internal name of close. */
NF_EXPORT int __close(int fd)
{
	nf_init();
	return nf_close(fd);
}

NF_EXPORT void closefrom(int lowfd)
{
	nf_init();
	nf_closefrom(lowfd);
}

NF_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	nf_init();
	return nf_close_range(first, last, flags);
}

NF_EXPORT int shutdown(int fd, int how)
{
	nf_init();
	return nf_shutdown(fd, how);
}

NF_EXPORT int dup(int fd)
{
	nf_init();
	return nf_dup(fd);
}

NF_EXPORT int dup2(int oldfd, int newfd)
{
	nf_init();
	return nf_dup2(oldfd, newfd);
}

/* glibc's exported internal name of dup2. */
NF_EXPORT int __dup2(int oldfd, int newfd)
{
	nf_init();
	return nf_dup2(oldfd, newfd);
}

NF_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	nf_init();
	return nf_dup3(oldfd, newfd, flags);
}

NF_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	int rc;

	nf_init();
	va_start(ap, cmd);
	rc = nf_vfcntl(fd, cmd, ap, 0);
	va_end(ap);
	return rc;
}

/* glibc's exported internal name of fcntl. */
NF_EXPORT int __fcntl(int fd, int cmd, ...)
{
	va_list ap;
	int rc;

	nf_init();
	va_start(ap, cmd);
	rc = nf_vfcntl(fd, cmd, ap, 0);
	va_end(ap);
	return rc;
}

/* What programs built with _FILE_OFFSET_BITS=64 call for fcntl. */
NF_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	int rc;

	nf_init();
	va_start(ap, cmd);
	rc = nf_vfcntl(fd, cmd, ap, 1);
	va_end(ap);
	return rc;
}
