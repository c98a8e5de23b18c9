/*
 * write.c - write, writev, send, sendto, sendmsg, sendmmsg, sendfile,
 * sendfile64, splice, pwritev2, pwritev64v2 and glibc's exported aliases
 * __write and __send: the sending side.
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
 * returned (nf_hook_sent), for the check at the next read or wait.
 *
 * On an audited socket each send (but sendfile and splice, file copies)
 * is bracketed by nf_audit_send_begin/_end, with the return address
 * taken here, in the libc-named function: the program's own code.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hooks_int.h"
#include "fast_int.h"
#include "actions/audit/nf_audit.h"
#include "actions/auto/nf_auto.h"
#include "actions/coalesce/nf_coalesce.h"
#include "actions/nf_track.h"
#include "core/nf_copyin.h"
#include "core/nf_real.h"
#include "process/nf_init.h"

static int bufferable(int flags)
{
	return (flags & ~NF_COALESCE_FLAGS) == 0;
}

/* Each hook below makes the program's own call when coalesce does not
 * take the bytes (NF_CO_PASS), so the kernel answers exactly that call. */

ssize_t nf_write(int fd, const void *buf, size_t n)
{
	struct nf_conn *c = nf_track_coalescing(fd);
	ssize_t r;

	if (c && (r = nf_coalesce_send_buf(c, fd, buf, n, 0)) != NF_CO_PASS)
		return r;
	return nf_hook_sent(fd, nf_real.write(fd, buf, n));
}

ssize_t nf_writev(int fd, const struct iovec *iov, int iovcnt)
{
	struct nf_conn *c = nf_track_coalescing(fd);
	ssize_t r;

	if (c && (r = nf_coalesce_send(c, fd, iov, iovcnt, 0)) != NF_CO_PASS)
		return r;
	return nf_hook_sent(fd, nf_real.writev(fd, iov, iovcnt));
}

ssize_t nf_sendto(int fd, const void *buf, size_t n, int flags,
		  const struct sockaddr *sa, socklen_t salen)
{
	struct nf_conn *c;
	int decided;
	ssize_t rc;

	if ((flags & MSG_FASTOPEN) && sa) {
		decided = nf_track_connecting(fd, sa, salen);
		rc = nf_real.sendto(fd, buf, n, flags, sa, salen);
		nf_track_connect_done(fd, decided, rc);
		return rc;
	}
	c = nf_track_coalescing(fd);
	if (c && !sa && bufferable(flags)) {
		if ((rc = nf_coalesce_send_buf(c, fd, buf, n, flags)) != NF_CO_PASS)
			return rc;
	} else if (c && nf_coalesce_before_send(c, fd, flags) < 0)
		return -1;
	return nf_hook_sent(fd, nf_real.sendto(fd, buf, n, flags, sa, salen));
}

/* The program's msghdr copied to copy, or NULL if the kernel could not
 * read it either (it answers EFAULT). */
static const struct msghdr *readable_msg(const struct msghdr *msg, struct msghdr *copy)
{
	return msg && nf_copy_from(copy, msg, sizeof(*copy)) == 0 ? copy : NULL;
}

ssize_t nf_sendmsg(int fd, const struct msghdr *prog_msg, int flags)
{
	struct msghdr copy;
	const struct msghdr *msg = readable_msg(prog_msg, &copy);
	struct nf_conn *c;
	int decided;
	ssize_t rc;

	if (!msg) /* nothing can be sent: the kernel's EFAULT */
		return nf_real.sendmsg(fd, prog_msg, flags);
	if ((flags & MSG_FASTOPEN) && msg->msg_name) {
		decided = nf_track_connecting(fd, msg->msg_name, msg->msg_namelen);
		rc = nf_real.sendmsg(fd, prog_msg, flags);
		nf_track_connect_done(fd, decided, rc);
		return rc;
	}
	c = nf_track_coalescing(fd);
	if (c && !msg->msg_name && msg->msg_controllen == 0 && bufferable(flags) &&
	    (size_t)msg->msg_iovlen <= (size_t)INT32_MAX) { /* int in musl */
		rc = nf_coalesce_send(c, fd, msg->msg_iov, (int)msg->msg_iovlen, flags);
		if (rc != NF_CO_PASS)
			return rc;
	} else if (c && nf_coalesce_before_send(c, fd, flags) < 0)
		return -1;
	return nf_hook_sent(fd, nf_real.sendmsg(fd, prog_msg, flags));
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

	struct msghdr first;

	if ((flags & MSG_FASTOPEN) && vlen > 0 && readable_msg(&vec[0].msg_hdr, &first) &&
	    first.msg_name) {
		decided = nf_track_connecting(fd, first.msg_name, first.msg_namelen);
		rc = nf_real.sendmmsg(fd, vec, vlen, (nf_mmsg_flags)flags);
		nf_track_connect_done(fd, decided, rc);
		return rc;
	}
	c = nf_track_coalescing(fd);
	if (c && nf_coalesce_before_send(c, fd, flags) < 0)
		return -1;
	return (int)nf_hook_sent(fd, nf_real.sendmmsg(fd, vec, vlen, (nf_mmsg_flags)flags));
}

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

/* Before a send that bypasses the buffer of fd (a file copy, pwritev2):
 * what it holds goes first. 0, or -1 with the errno the call fails with. */
static int push_before(int fd, int flags)
{
	struct nf_conn *c = nf_track_coalescing(fd);

	return c ? nf_coalesce_before_send(c, fd, flags) : 0;
}

ssize_t nf_sendfile(int out_fd, int in_fd, off_t *off, size_t n)
{
	if (push_before(out_fd, 0) < 0)
		return -1;
	return nf_hook_sent(out_fd, nf_real.sendfile(out_fd, in_fd, off, n));
}

/* What programs built with _FILE_OFFSET_BITS=64 call (nginx, CPython,
 * the JVM, node): glibc's sendfile never sees it. */
ssize_t nf_sendfile64(int out_fd, int in_fd, off64_t *off, size_t n)
{
	if (push_before(out_fd, 0) < 0)
		return -1;
	return nf_hook_sent(out_fd, nf_real.sendfile64(out_fd, in_fd, off, n));
}

/* pwritev2 with offset -1 writes at the file position: on a socket, a
 * writev. Never buffered (its flags are not send flags): what the socket
 * holds goes first. Any other offset fails on a socket (ESPIPE). */
ssize_t nf_pwritev2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
	if (!nf_real.pwritev2) {
		errno = ENOSYS;
		return -1;
	}
	if (off == -1 && push_before(fd, (flags & RWF_NOWAIT) ? MSG_DONTWAIT : 0) < 0)
		return -1;
	return nf_hook_sent(fd, nf_real.pwritev2(fd, iov, iovcnt, off, flags));
}

ssize_t nf_pwritev64v2(int fd, const struct iovec *iov, int iovcnt, off64_t off, int flags)
{
	if (!nf_real.pwritev64v2) {
		errno = ENOSYS;
		return -1;
	}
	if (off == -1 && push_before(fd, (flags & RWF_NOWAIT) ? MSG_DONTWAIT : 0) < 0)
		return -1;
	return nf_hook_sent(fd, nf_real.pwritev64v2(fd, iov, iovcnt, off, flags));
}

ssize_t nf_splice(int in_fd, loff_t *in_off, int out_fd, loff_t *out_off, size_t n, unsigned flags)
{
	struct nf_conn *c = nf_track_coalescing(out_fd);

	if (c && nf_coalesce_before_send(c, out_fd,
					 (flags & SPLICE_F_NONBLOCK) ? MSG_DONTWAIT : 0) < 0)
		return -1;
	return nf_hook_sent(out_fd, nf_real.splice(in_fd, in_off, out_fd, out_off, n, flags));
}

#define IOV_CHUNK 16

/* Bytes in the program's iovec array, read as the kernel would: 0 and
 * *total set, or -1 if the kernel cannot read it either (then audit does
 * not look at the call). */
static int iov_total(const struct iovec *iov, size_t iovcnt, size_t *total)
{
	struct iovec part[IOV_CHUNK];

	*total = 0;
	for (size_t i = 0; i < iovcnt && i < UIO_MAXIOV; i += IOV_CHUNK) {
		size_t k = iovcnt - i < IOV_CHUNK ? iovcnt - i : IOV_CHUNK;

		if (nf_copy_from(part, iov + i, k * sizeof(*part)) < 0)
			return -1;
		for (size_t j = 0; j < k; j++)
			*total += part[j].iov_len;
	}
	return 0;
}

/* write, from the program's code at caller (for audit). */
static NF_SLOW ssize_t write_from(int fd, const void *buf, size_t n, void *caller)
{
	struct nf_audit_send a;
	ssize_t rc;

	if (nf_leave_alone(fd))
		return nf_real.write(fd, buf, n);
	nf_init();
	if (!nf_audit_enabled || !nf_audit_send_begin(fd, n, caller, &a))
		return nf_write(fd, buf, n);
	rc = nf_write(fd, buf, n);
	nf_audit_send_end(&a, rc);
	return rc;
}

NF_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	if (nf_leave_alone_near(fd))
		return nf_real.write(fd, buf, n);
	return write_from(fd, buf, n, __builtin_return_address(0));
}

/* glibc exports write's internal name too; a program or library that
 * links to it would pass write by. */
NF_EXPORT ssize_t __write(int fd, const void *buf, size_t n)
{
	if (nf_leave_alone_near(fd))
		return nf_real.write(fd, buf, n);
	return write_from(fd, buf, n, __builtin_return_address(0));
}

static NF_SLOW ssize_t writev_hooked(int fd, const struct iovec *iov, int iovcnt, void *caller)
{
	struct nf_audit_send a;
	ssize_t rc;

	size_t total;

	if (nf_leave_alone(fd))
		return nf_real.writev(fd, iov, iovcnt);
	nf_init();
	if (!nf_audit_enabled || iovcnt < 0 || iov_total(iov, (size_t)iovcnt, &total) < 0 ||
	    !nf_audit_send_begin(fd, total, caller, &a))
		return nf_writev(fd, iov, iovcnt);
	rc = nf_writev(fd, iov, iovcnt);
	nf_audit_send_end(&a, rc);
	return rc;
}

NF_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	if (nf_leave_alone_near(fd))
		return nf_real.writev(fd, iov, iovcnt);
	return writev_hooked(fd, iov, iovcnt, __builtin_return_address(0));
}

/* send, from the program's code at caller (for audit). */
static NF_SLOW ssize_t send_from(int fd, const void *buf, size_t n, int flags, void *caller)
{
	struct nf_audit_send a;
	ssize_t rc;

	if (nf_leave_alone(fd))
		return nf_real.sendto(fd, buf, n, flags, NULL, 0);
	nf_init();
	if (!nf_audit_enabled || !nf_audit_send_begin(fd, n, caller, &a))
		return nf_sendto(fd, buf, n, flags, NULL, 0);
	rc = nf_sendto(fd, buf, n, flags, NULL, 0);
	nf_audit_send_end(&a, rc);
	return rc;
}

NF_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	if (nf_leave_alone_near(fd))
		return nf_real.sendto(fd, buf, n, flags, NULL, 0);
	return send_from(fd, buf, n, flags, __builtin_return_address(0));
}

/* glibc's exported internal name of send. */
NF_EXPORT ssize_t __send(int fd, const void *buf, size_t n, int flags)
{
	if (nf_leave_alone_near(fd))
		return nf_real.sendto(fd, buf, n, flags, NULL, 0);
	return send_from(fd, buf, n, flags, __builtin_return_address(0));
}

static NF_SLOW ssize_t sendto_hooked(int fd, const void *buf, size_t n, int flags,
				     const struct sockaddr *sa, socklen_t salen, void *caller)
{
	struct nf_audit_send a;
	ssize_t rc;

	if (nf_leave_alone(fd))
		return nf_real.sendto(fd, buf, n, flags, sa, salen);
	nf_init();
	if (!nf_audit_send_begin(fd, n, caller, &a))
		return nf_sendto(fd, buf, n, flags, sa, salen);
	rc = nf_sendto(fd, buf, n, flags, sa, salen);
	nf_audit_send_end(&a, rc);
	return rc;
}

NF_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
			 const struct sockaddr *sa, socklen_t salen)
{
	if (nf_leave_alone_near(fd))
		return nf_real.sendto(fd, buf, n, flags, sa, salen);
	return sendto_hooked(fd, buf, n, flags, sa, salen, __builtin_return_address(0));
}

static NF_SLOW ssize_t sendmsg_hooked(int fd, const struct msghdr *msg, int flags, void *caller)
{
	struct nf_audit_send a;
	ssize_t rc;

	struct msghdr copy;
	size_t total;

	if (nf_leave_alone(fd))
		return nf_real.sendmsg(fd, msg, flags);
	nf_init();
	if (!nf_audit_enabled || !readable_msg(msg, &copy) ||
	    iov_total(copy.msg_iov, copy.msg_iovlen, &total) < 0 ||
	    !nf_audit_send_begin(fd, total, caller, &a))
		return nf_sendmsg(fd, msg, flags);
	rc = nf_sendmsg(fd, msg, flags);
	nf_audit_send_end(&a, rc);
	return rc;
}

NF_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	if (nf_leave_alone_near(fd))
		return nf_real.sendmsg(fd, msg, flags);
	return sendmsg_hooked(fd, msg, flags, __builtin_return_address(0));
}

/* Bytes in the first n messages of vec (sent: as sendmmsg reported them;
 * else as asked), read as the kernel would: 0 and *total set, or -1 if it
 * cannot read them either. It looks at no more than UIO_MAXIOV messages. */
static int mmsg_total(const struct mmsghdr *vec, unsigned n, int sent, size_t *total)
{
	struct mmsghdr m;
	size_t len;

	*total = 0;
	for (unsigned i = 0; i < n && i < UIO_MAXIOV; i++) {
		if (nf_copy_from(&m, vec + i, sizeof(m)) < 0 ||
		    (!sent && iov_total(m.msg_hdr.msg_iov, m.msg_hdr.msg_iovlen, &len) < 0))
			return -1;
		*total += sent ? m.msg_len : len;
	}
	return 0;
}

static NF_SLOW int sendmmsg_hooked(int fd, struct mmsghdr *vec, unsigned vlen, nf_mmsg_flags flags,
				   void *caller)
{
	struct nf_audit_send a;
	int rc;

	size_t total;

	if (nf_leave_alone(fd))
		return nf_real.sendmmsg(fd, vec, vlen, flags);
	nf_init();
	if (!nf_audit_enabled || mmsg_total(vec, vlen, 0, &total) < 0 ||
	    !nf_audit_send_begin(fd, total, caller, &a))
		return nf_sendmmsg(fd, vec, vlen, (int)flags);
	rc = nf_sendmmsg(fd, vec, vlen, (int)flags);
	if (rc > 0 && mmsg_total(vec, (unsigned)rc, 1, &total) < 0)
		total = 0;
	nf_audit_send_end(&a, rc > 0 ? (ssize_t)total : rc);
	return rc;
}

NF_EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned vlen, nf_mmsg_flags flags)
{
	if (nf_leave_alone_near(fd))
		return nf_real.sendmmsg(fd, vec, vlen, flags);
	return sendmmsg_hooked(fd, vec, vlen, flags, __builtin_return_address(0));
}

NF_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *off, size_t n)
{
	nf_init();
	return nf_sendfile(out_fd, in_fd, off, n);
}

NF_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off64_t *off, size_t n)
{
	nf_init();
	return nf_sendfile64(out_fd, in_fd, off, n);
}

NF_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
	nf_init();
	return nf_pwritev2(fd, iov, iovcnt, off, flags);
}

NF_EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int iovcnt, off64_t off,
			      int flags)
{
	nf_init();
	return nf_pwritev64v2(fd, iov, iovcnt, off, flags);
}

NF_EXPORT ssize_t splice(int in_fd, loff_t *in_off, int out_fd, loff_t *out_off,
			 size_t n, unsigned flags)
{
	nf_init();
	return nf_splice(in_fd, in_off, out_fd, out_off, n, flags);
}
