/*
 * read.c - the receiving side: recvmsg, which can also bring in
 * descriptors from another process (SCM_RIGHTS).
 */
#include <errno.h>
#include <sys/socket.h>

#include "../nf_hooks.h"
#include "nf_init.h"
#include "nf_real.h"
#include "nf_track.h"

ssize_t nf_recvmsg(int fd, struct msghdr *msg, int flags)
{
	ssize_t rc = nf_real.recvmsg(fd, msg, flags);
	int saved = errno;

	if (rc >= 0 && msg && msg->msg_controllen > 0)
		nf_track_received(msg);
	errno = saved;
	return rc;
}

NF_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	nf_init();
	return nf_recvmsg(fd, msg, flags);
}
