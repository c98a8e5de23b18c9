/*
 * fd.c - close, close_range, dup, dup2, dup3: a descriptor's state ends or
 * is copied with it, so a reused number never carries stale state.
 */
#include <errno.h>

#include <unistd.h>

#include "../nf_hooks.h"
#include "nf_conn.h"
#include "nf_init.h"
#include "nf_real.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC 4
#endif

/*
 * State is dropped before the real close: after it, another thread may
 * already have the same number back from socket() or accept().
 */
int nf_close(int fd)
{
	nf_conn_forget(fd);
	return nf_real.close(fd);
}

int nf_close_range(unsigned first, unsigned last, int flags)
{
	if (!nf_real.close_range) {
		errno = ENOSYS;
		return -1;
	}
	if (!(flags & CLOSE_RANGE_CLOEXEC) && first <= last)
		nf_conn_forget_range(first, last);
	return nf_real.close_range(first, last, flags);
}

int nf_dup(int fd)
{
	int nfd = nf_real.dup(fd);
	int saved = errno;

	if (nfd >= 0)
		nf_conn_copy(fd, nfd);
	errno = saved;
	return nfd;
}

int nf_dup3(int oldfd, int newfd, int flags, int use_dup3)
{
	int rc = use_dup3 ? nf_real.dup3(oldfd, newfd, flags) : nf_real.dup2(oldfd, newfd);
	int saved = errno;

	if (rc >= 0 && oldfd != newfd)
		nf_conn_copy(oldfd, newfd);
	errno = saved;
	return rc;
}

NF_EXPORT int close(int fd)
{
	nf_init();
	return nf_close(fd);
}

NF_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	nf_init();
	return nf_close_range(first, last, flags);
}

NF_EXPORT int dup(int fd)
{
	nf_init();
	return nf_dup(fd);
}

NF_EXPORT int dup2(int oldfd, int newfd)
{
	nf_init();
	return nf_dup3(oldfd, newfd, 0, 0);
}

NF_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	nf_init();
	return nf_dup3(oldfd, newfd, flags, 1);
}
