/*
 * write.c - write, writev, send, sendto, sendmsg: the sending side.
 *
 * A socket opened before the library loaded (or received from another
 * process) gets its rule on its first send.
 */
#include <unistd.h>

#include "../nf_hooks.h"
#include "nf_init.h"
#include "nf_real.h"
#include "nf_track.h"

ssize_t nf_write(int fd, const void *buf, size_t n)
{
	nf_track_decided(fd);
	return nf_real.write(fd, buf, n);
}

ssize_t nf_writev(int fd, const struct iovec *iov, int iovcnt)
{
	nf_track_decided(fd);
	return nf_real.writev(fd, iov, iovcnt);
}

ssize_t nf_sendto(int fd, const void *buf, size_t n, int flags,
		  const struct sockaddr *sa, socklen_t salen)
{
	nf_track_decided(fd);
	return nf_real.sendto(fd, buf, n, flags, sa, salen);
}

ssize_t nf_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	nf_track_decided(fd);
	return nf_real.sendmsg(fd, msg, flags);
}

NF_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	nf_init();
	return nf_write(fd, buf, n);
}

NF_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	nf_init();
	return nf_writev(fd, iov, iovcnt);
}

NF_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	nf_init();
	return nf_sendto(fd, buf, n, flags, NULL, 0);
}

NF_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
			 const struct sockaddr *sa, socklen_t salen)
{
	nf_init();
	return nf_sendto(fd, buf, n, flags, sa, salen);
}

NF_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	nf_init();
	return nf_sendmsg(fd, msg, flags);
}
