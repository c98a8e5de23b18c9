/*
 * nf_hooks.h - the logic behind each interposed libc name.
 *
 * The exported function (connect) makes sure initialisation happened and
 * calls its nf_ twin (nf_connect), which does the work and reaches the
 * kernel only through nf_real. Each returns exactly what libc would, with
 * libc's errno.
 */
#ifndef NF_HOOKS_H
#define NF_HOOKS_H

#include <fcntl.h> /* loff_t, in musl */
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#define NF_EXPORT __attribute__((visibility("default")))

int nf_socket(int domain, int type, int protocol);
int nf_connect(int fd, const struct sockaddr *sa, socklen_t len);
int nf_accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags, int use_accept4);
int nf_setsockopt(int fd, int level, int name, const void *val, socklen_t len);
ssize_t nf_write(int fd, const void *buf, size_t n);
ssize_t nf_writev(int fd, const struct iovec *iov, int iovcnt);
ssize_t nf_sendto(int fd, const void *buf, size_t n, int flags,
		  const struct sockaddr *sa, socklen_t salen);
ssize_t nf_sendmsg(int fd, const struct msghdr *msg, int flags);
int nf_sendmmsg(int fd, struct mmsghdr *vec, unsigned vlen, int flags);
ssize_t nf_sendfile(int out_fd, int in_fd, off_t *off, size_t n);
ssize_t nf_splice(int in_fd, loff_t *in_off, int out_fd, loff_t *out_off, size_t n, unsigned flags);
void nf_before_read(int fd);
void nf_before_wait(int timeout_nonzero);
int nf_shutdown(int fd, int how);
int nf_close(int fd);
void nf_process_atfork_prepare(void);
void nf_process_atfork_parent(void);
void nf_process_atfork_child(void);
int nf_close_range(unsigned first, unsigned last, int flags);
int nf_dup(int fd);
int nf_fcntl(int fd, int cmd, void *arg, int use_fcntl64);
int nf_dup3(int oldfd, int newfd, int flags, int use_dup3);

/* glibc's fortified entry points: not declared unless _FORTIFY_SOURCE. */
int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *ts,
		const sigset_t *mask, size_t fdslen);
int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *ts,
		 const sigset_t *mask);
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
		       struct sockaddr *sa, socklen_t *salen);

#ifndef __GLIBC__
/* Hooked, but not in every libc (musl has neither): declared here. */
int close_range(unsigned first, unsigned last, int flags);
int fcntl64(int fd, int cmd, ...);
#endif

#endif
