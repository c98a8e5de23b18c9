/*
 * nf_libc.h - libc as the library sees it, in glibc and in musl: the names
 * musl makes macros made names again, and a declaration of each exported
 * name the library hooks that not every libc's headers declare (real.c
 * resolves them by name, interpose/ defines them).
 */
#ifndef NF_LIBC_H
#define NF_LIBC_H

#include <aio.h>
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

/* The type of __assert_fail's line: unsigned in glibc, int in musl. */
#ifdef __GLIBC__
#define NF_ASSERT_LINE unsigned
#else
#define NF_ASSERT_LINE int
#endif

#ifndef __GLIBC__
/* musl's headers make these names macros for the plain ones (its library
 * keeps the symbols for old binaries): here they are names of their own. */
#undef sendfile64
#undef freopen64
#undef aio_write64
#undef lio_listio64
#endif

/* assert.h's failure entry (its line is unsigned in glibc, int in musl). */
void __assert_fail(const char *assertion, const char *file, NF_ASSERT_LINE line,
		   const char *function) __attribute__((noreturn));

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

/* glibc's fortified dprintf: not declared unless _FORTIFY_SOURCE. */
int __dprintf_chk(int fd, int flag, const char *fmt, ...);
int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap);

/* glibc's exported aliases of write, send and close: in no header. */
ssize_t __write(int fd, const void *buf, size_t n);
ssize_t __send(int fd, const void *buf, size_t n, int flags);
int __close(int fd);
/* glibc 2.0's names of fdopen, fclose and popen, still exported. */
FILE *_IO_fdopen(int fd, const char *mode);
int _IO_fclose(FILE *f);
FILE *_IO_popen(const char *command, const char *mode);
int __dup2(int oldfd, int newfd);
int __fcntl(int fd, int cmd, ...);
pid_t __vfork(void);

#ifndef __GLIBC__
/* Hooked, but not in every libc (musl has none of these, or only the
 * symbol): declared here. */
int close_range(unsigned first, unsigned last, int flags);
int fcntl64(int fd, int cmd, ...);
void closefrom(int lowfd);
int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags);
ssize_t sendfile64(int out_fd, int in_fd, off64_t *off, size_t n);
FILE *freopen64(const char *path, const char *mode, FILE *f);
ssize_t pwritev2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags);
ssize_t pwritev64v2(int fd, const struct iovec *iov, int iovcnt, off64_t off, int flags);
int aio_write64(struct aiocb64 *cb);
int lio_listio64(int mode, struct aiocb64 *const list[], int nent, struct sigevent *sev);
#else
/* In glibc 2.39, not 2.36. */
int posix_close(int fd, int flags);
#endif

#endif
