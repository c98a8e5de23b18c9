/*
 * hooks_int.h - the logic behind each interposed libc name.
 *
 * The exported function (connect) makes sure initialisation happened and
 * calls its nf_ twin (nf_connect), which does the work and reaches the
 * kernel only through nf_real. Each returns exactly what libc would, with
 * libc's errno.
 */
#ifndef NF_HOOKS_INT_H
#define NF_HOOKS_INT_H

#include <fcntl.h> /* loff_t, in musl */
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "actions/auto/nf_auto.h"
#include "core/nf_libc.h" /* undoes musl's sendfile64 and freopen64 macros */
#include "core/nf_real.h"

#define NF_EXPORT __attribute__((visibility("default")))

/*
 * Every hook that sends on a descriptor returns through this: a send that
 * reached the kernel (rc > 0) on an auto socket is noted for auto's check
 * at the next read or wait (nf_auto.h). Returns rc. A send hook that
 * forgets it leaves a split answer to Nagle (tests/inventory/auto_sends.tsv
 * lists each send hook and tests/auto proves each one is noted).
 */
static inline ssize_t nf_hook_sent(int fd, ssize_t rc)
{
	if (atomic_load_explicit(&nf_auto_used, memory_order_relaxed))
		nf_auto_after_send(fd, rc);
	return rc;
}

/* The first instruction of a hook written in assembly (x86-64), where the
 * build asks for indirect-branch tracking. */
#ifdef __CET__
#define NF_ASM_ENDBR "\tendbr64\n"
#else
#define NF_ASM_ENDBR ""
#endif

int nf_socket(int domain, int type, int protocol);
int nf_connect(int fd, const struct sockaddr *sa, socklen_t len);
int nf_accept(int fd, struct sockaddr *sa, socklen_t *len);
int nf_accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags);
int nf_setsockopt(int fd, int level, int name, const void *val, socklen_t len);
ssize_t nf_write(int fd, const void *buf, size_t n);
ssize_t nf_writev(int fd, const struct iovec *iov, int iovcnt);
ssize_t nf_sendto(int fd, const void *buf, size_t n, int flags,
		  const struct sockaddr *sa, socklen_t salen);
ssize_t nf_sendmsg(int fd, const struct msghdr *msg, int flags);
int nf_sendmmsg(int fd, struct mmsghdr *vec, unsigned vlen, int flags);
ssize_t nf_sendfile(int out_fd, int in_fd, off_t *off, size_t n);
ssize_t nf_sendfile64(int out_fd, int in_fd, off64_t *off, size_t n);
ssize_t nf_pwritev2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags);
ssize_t nf_pwritev64v2(int fd, const struct iovec *iov, int iovcnt, off64_t off, int flags);
ssize_t nf_splice(int in_fd, loff_t *in_off, int out_fd, loff_t *out_off, size_t n, unsigned flags);
void nf_before_wait(int timeout_nonzero);
int nf_shutdown(int fd, int how);
int nf_close(int fd);
/* fd is about to be closed (by close, or inside libc: fclose, freopen):
 * what coalesce holds for it is drained and its state forgotten. Keeps
 * errno. */
void nf_fd_forget(int fd);
FILE *nf_fdopen(int fd, const char *mode);
FILE *nf_io_fdopen(int fd, const char *mode);  /* _IO_fdopen */
int nf_fclose(FILE *f);
int nf_io_fclose(FILE *f);                     /* _IO_fclose */
FILE *nf_freopen(const char *path, const char *mode, FILE *f);
FILE *nf_freopen64(const char *path, const char *mode, FILE *f);
int nf_vdprintf(int fd, const char *fmt, va_list ap);
int nf_vdprintf_chk(int fd, int flag, const char *fmt, va_list ap); /* __vdprintf_chk */
int nf_close_range(unsigned first, unsigned last, int flags);
void nf_closefrom(int lowfd);
int nf_posix_close(int fd, int flags);
int nf_aio_write(struct aiocb *cb);
int nf_aio_write64(struct aiocb64 *cb);
int nf_lio_listio(int mode, nf_lio_list list, int nent, struct sigevent *sev);
int nf_lio_listio64(int mode, struct aiocb64 *const list[], int nent, struct sigevent *sev);
int nf_dup(int fd);
/* fcntl and __fcntl (large 0), fcntl64 (large 1): cmd's argument, if
 * it takes one, read from ap; libc's fcntl64 for large where libc has
 * one (glibc), else its fcntl (musl). */
int nf_vfcntl(int fd, int cmd, va_list ap, int large);
int nf_prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4,
	     unsigned long a5);
/* Before the library stands aside (interpose/sandbox.c): what vfork will
 * then be (process.c). */
void nf_vfork_prepare_aside(void);
int nf_dup2(int oldfd, int newfd);
int nf_dup3(int oldfd, int newfd, int flags);

#endif
