/*
 * write.c - write, writev, send, sendto, sendmsg, sendmmsg, sendfile,
 * splice: the sending side.
 *
 * A socket opened before the library loaded (or received from another
 * process) gets its rule on its first send. On a coalesce socket, sends
 * the buffer can honour go into it; any other send (an address, ancillary
 * data, MSG_OOB, MSG_ZEROCOPY, a file copy) first pushes out what is
 * buffered, so no byte is ever reordered.
 *
 * A send with MSG_FASTOPEN and an address is a connect (TCP Fast Open: the
 * SYN carries the data): the rule is chosen from the address before the
 * SYN leaves, as connect() does, and undone if the socket stays
 * unconnected. Nothing can be buffered yet on an unconnected socket.
 *
 * On an auto socket every send that reached the kernel is noted after it
 * returned (nf_auto_after_send), for the check at the next read or wait.
 *
 * On an audited socket each send (but sendfile and splice, file copies)
 * is bracketed by nf_audit_send_begin/_end, with the return address
 * taken here, in the libc-named function: the program's own code.
 */
#include <fcntl.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "../nf_hooks.h"
#include "nf_audit.h"
#include "nf_auto.h"
#include "nf_coalesce.h"
#include "nf_init.h"
#include "nf_real.h"
#include "nf_track.h"

/* The connection of fd if its rule is coalesce, else NULL. */
static struct nf_conn *coalescing(int fd)
{
	struct nf_conn *c = nf_track_decided(fd);

	if (c && atomic_load_explicit(&c->action, memory_order_acquire) == NF_ACT_COALESCE)
		return c;
	return NULL;
}

/* A send not buffered returned rc: auto notes it (see nf_auto.h). */
static ssize_t sent(int fd, ssize_t rc)
{
	nf_auto_after_send(fd, rc);
	return rc;
}

static int bufferable(int flags)
{
	return (flags & ~NF_COALESCE_FLAGS) == 0;
}

ssize_t nf_write(int fd, const void *buf, size_t n)
{
	struct nf_conn *c = coalescing(fd);
	struct iovec v = { .iov_base = (void *)buf, .iov_len = n };

	if (c)
		return nf_coalesce_send(c, fd, &v, 1, 0);
	return sent(fd, nf_real.write(fd, buf, n));
}

ssize_t nf_writev(int fd, const struct iovec *iov, int iovcnt)
{
	struct nf_conn *c = coalescing(fd);

	if (c)
		return nf_coalesce_send(c, fd, iov, iovcnt, 0);
	return sent(fd, nf_real.writev(fd, iov, iovcnt));
}

ssize_t nf_sendto(int fd, const void *buf, size_t n, int flags,
		  const struct sockaddr *sa, socklen_t salen)
{
	struct iovec v = { .iov_base = (void *)buf, .iov_len = n };
	struct nf_conn *c;
	int decided;
	ssize_t rc;

	if ((flags & MSG_FASTOPEN) && sa) {
		decided = nf_track_connecting(fd, sa, salen);
		rc = nf_real.sendto(fd, buf, n, flags, sa, salen);
		nf_track_connect_done(fd, decided, rc);
		return rc;
	}
	c = coalescing(fd);
	if (c && !sa && bufferable(flags))
		return nf_coalesce_send(c, fd, &v, 1, flags);
	if (c && nf_coalesce_before_send(c, fd, flags) < 0)
		return -1;
	return sent(fd, nf_real.sendto(fd, buf, n, flags, sa, salen));
}

ssize_t nf_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct nf_conn *c;
	int decided;
	ssize_t rc;

	if ((flags & MSG_FASTOPEN) && msg && msg->msg_name) {
		decided = nf_track_connecting(fd, msg->msg_name, msg->msg_namelen);
		rc = nf_real.sendmsg(fd, msg, flags);
		nf_track_connect_done(fd, decided, rc);
		return rc;
	}
	c = coalescing(fd);
	if (c && msg && !msg->msg_name && msg->msg_controllen == 0 && bufferable(flags) &&
	    (size_t)msg->msg_iovlen <= (size_t)INT32_MAX) /* int in musl */
		return nf_coalesce_send(c, fd, msg->msg_iov, (int)msg->msg_iovlen, flags);
	if (c && nf_coalesce_before_send(c, fd, flags) < 0)
		return -1;
	return sent(fd, nf_real.sendmsg(fd, msg, flags));
}

/*
 * sendmmsg is never buffered: its answer is per message, and a message
 * reported as sent cannot be taken back if a later flush fails. What is
 * buffered goes first (or the call fails as a send would), then the call.
 */
int nf_sendmmsg(int fd, struct mmsghdr *vec, unsigned vlen, int flags)
{
	struct nf_conn *c;
	int decided, rc;

	if ((flags & MSG_FASTOPEN) && vec && vlen > 0 && vec[0].msg_hdr.msg_name) {
		decided = nf_track_connecting(fd, vec[0].msg_hdr.msg_name,
					      vec[0].msg_hdr.msg_namelen);
		rc = nf_real.sendmmsg(fd, vec, vlen, (nf_mmsg_flags)flags);
		nf_track_connect_done(fd, decided, rc);
		return rc;
	}
	c = coalescing(fd);
	if (c && nf_coalesce_before_send(c, fd, flags) < 0)
		return -1;
	return (int)sent(fd, nf_real.sendmmsg(fd, vec, vlen, (nf_mmsg_flags)flags));
}

ssize_t nf_sendfile(int out_fd, int in_fd, off_t *off, size_t n)
{
	struct nf_conn *c = coalescing(out_fd);

	if (c && nf_coalesce_before_send(c, out_fd, 0) < 0)
		return -1;
	return sent(out_fd, nf_real.sendfile(out_fd, in_fd, off, n));
}

ssize_t nf_splice(int in_fd, loff_t *in_off, int out_fd, loff_t *out_off, size_t n, unsigned flags)
{
	struct nf_conn *c = coalescing(out_fd);

	if (c && nf_coalesce_before_send(c, out_fd,
					 (flags & SPLICE_F_NONBLOCK) ? MSG_DONTWAIT : 0) < 0)
		return -1;
	return sent(out_fd, nf_real.splice(in_fd, in_off, out_fd, out_off, n, flags));
}

static size_t iov_total(const struct iovec *iov, size_t iovcnt)
{
	size_t n = 0;

	for (size_t i = 0; iov && i < iovcnt; i++)
		n += iov[i].iov_len;
	return n;
}

NF_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	struct nf_audit_send a;
	ssize_t rc;

	nf_init();
	if (!nf_audit_send_begin(fd, n, __builtin_return_address(0), &a))
		return nf_write(fd, buf, n);
	rc = nf_write(fd, buf, n);
	nf_audit_send_end(&a, rc);
	return rc;
}

NF_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	struct nf_audit_send a;
	ssize_t rc;

	nf_init();
	if (!nf_audit_enabled || iovcnt < 0 ||
	    !nf_audit_send_begin(fd, iov_total(iov, (size_t)iovcnt),
				 __builtin_return_address(0), &a))
		return nf_writev(fd, iov, iovcnt);
	rc = nf_writev(fd, iov, iovcnt);
	nf_audit_send_end(&a, rc);
	return rc;
}

NF_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	struct nf_audit_send a;
	ssize_t rc;

	nf_init();
	if (!nf_audit_send_begin(fd, n, __builtin_return_address(0), &a))
		return nf_sendto(fd, buf, n, flags, NULL, 0);
	rc = nf_sendto(fd, buf, n, flags, NULL, 0);
	nf_audit_send_end(&a, rc);
	return rc;
}

NF_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
			 const struct sockaddr *sa, socklen_t salen)
{
	struct nf_audit_send a;
	ssize_t rc;

	nf_init();
	if (!nf_audit_send_begin(fd, n, __builtin_return_address(0), &a))
		return nf_sendto(fd, buf, n, flags, sa, salen);
	rc = nf_sendto(fd, buf, n, flags, sa, salen);
	nf_audit_send_end(&a, rc);
	return rc;
}

NF_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct nf_audit_send a;
	ssize_t rc;

	nf_init();
	if (!nf_audit_enabled || !msg ||
	    !nf_audit_send_begin(fd, iov_total(msg->msg_iov, msg->msg_iovlen),
				 __builtin_return_address(0), &a))
		return nf_sendmsg(fd, msg, flags);
	rc = nf_sendmsg(fd, msg, flags);
	nf_audit_send_end(&a, rc);
	return rc;
}

/* Bytes in the first n messages of vec (sent: as sendmmsg reported them;
 * else as asked). The kernel looks at no more than UIO_MAXIOV messages. */
static size_t mmsg_total(const struct mmsghdr *vec, unsigned n, int sent)
{
	size_t total = 0;

	for (unsigned i = 0; vec && i < n && i < UIO_MAXIOV; i++)
		total += sent ? vec[i].msg_len
			      : iov_total(vec[i].msg_hdr.msg_iov, (size_t)vec[i].msg_hdr.msg_iovlen);
	return total;
}

NF_EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned vlen, nf_mmsg_flags flags)
{
	struct nf_audit_send a;
	int rc;

	nf_init();
	if (!nf_audit_enabled ||
	    !nf_audit_send_begin(fd, mmsg_total(vec, vlen, 0), __builtin_return_address(0), &a))
		return nf_sendmmsg(fd, vec, vlen, (int)flags);
	rc = nf_sendmmsg(fd, vec, vlen, (int)flags);
	nf_audit_send_end(&a, rc > 0 ? (ssize_t)mmsg_total(vec, (unsigned)rc, 1) : rc);
	return rc;
}

NF_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *off, size_t n)
{
	nf_init();
	return nf_sendfile(out_fd, in_fd, off, n);
}

NF_EXPORT ssize_t splice(int in_fd, loff_t *in_off, int out_fd, loff_t *out_off,
			 size_t n, unsigned flags)
{
	nf_init();
	return nf_splice(in_fd, in_off, out_fd, out_off, n, flags);
}
