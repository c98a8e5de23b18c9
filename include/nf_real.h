/*
 * nf_real.h - the one table of the real libc functions behind the hooks.
 *
 * Everything the library does to the kernel goes through nf_real, never
 * through the interposed names, so its own work is never intercepted again.
 */
#ifndef NF_REAL_H
#define NF_REAL_H

#include <aio.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "nf_libc.h"

/* lio_listio's list: musl restrict-qualifies the pointers in it. */
#ifdef __GLIBC__
typedef struct aiocb *const *nf_lio_list;
#else
typedef struct aiocb *restrict const *nf_lio_list;
#endif

/* The flags of recvmmsg and sendmmsg: int in glibc, unsigned int in musl. */
#ifdef __GLIBC__
typedef int nf_mmsg_flags;
#else
typedef unsigned nf_mmsg_flags;
#endif

struct nf_real_table {
	int (*socket)(int, int, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*accept)(int, struct sockaddr *, socklen_t *);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	int (*sendmmsg)(int, struct mmsghdr *, unsigned, nf_mmsg_flags);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	int (*close)(int);
	int (*close_range)(unsigned, unsigned, int);
	void (*closefrom)(int);
	int (*posix_close)(int, int);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*fcntl)(int, int, ...);
	int (*fcntl64)(int, int, ...);
	int (*shutdown)(int, int);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	int (*recvmmsg)(int, struct mmsghdr *, unsigned, nf_mmsg_flags, struct timespec *);
	ssize_t (*__read_chk)(int, void *, size_t, size_t);
	ssize_t (*__recv_chk)(int, void *, size_t, size_t, int);
	ssize_t (*__recvfrom_chk)(int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
	int (*epoll_wait)(int, struct epoll_event *, int, int);
	int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
	int (*epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *,
			    const sigset_t *);
	int (*__poll_chk)(struct pollfd *, nfds_t, int, size_t);
	int (*__ppoll_chk)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *,
			   size_t);
	ssize_t (*sendfile)(int, int, off_t *, size_t);
	ssize_t (*sendfile64)(int, int, off64_t *, size_t);
	ssize_t (*pwritev2)(int, const struct iovec *, int, off_t, int);
	ssize_t (*pwritev64v2)(int, const struct iovec *, int, off64_t, int);
	int (*aio_write)(struct aiocb *);
	int (*aio_write64)(struct aiocb64 *);
	int (*lio_listio)(int, nf_lio_list, int, struct sigevent *);
	int (*lio_listio64)(int, struct aiocb64 *const[], int, struct sigevent *);
	ssize_t (*splice)(int, loff_t *, int, loff_t *, size_t, unsigned);
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execv)(const char *, char *const[]);
	int (*execvp)(const char *, char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*fexecve)(int, char *const[], char *const[]);
	int (*execveat)(int, const char *, char *const[], char *const[], int);
	pid_t (*_Fork)(void);
	int (*posix_spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			   const posix_spawnattr_t *, char *const[], char *const[]);
	int (*posix_spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			    const posix_spawnattr_t *, char *const[], char *const[]);
	int (*system)(const char *);
	FILE *(*popen)(const char *, const char *);
	FILE *(*_IO_popen)(const char *, const char *);
	FILE *(*fdopen)(int, const char *);
	FILE *(*_IO_fdopen)(int, const char *);
	int (*fclose)(FILE *);
	int (*_IO_fclose)(FILE *);
	FILE *(*freopen)(const char *, const char *, FILE *);
	FILE *(*freopen64)(const char *, const char *, FILE *);
	int (*vdprintf)(int, const char *, va_list);
	int (*__vdprintf_chk)(int, int, const char *, va_list);
	void (*exit)(int) __attribute__((noreturn));
	void (*_exit)(int) __attribute__((noreturn));
	void (*_Exit)(int) __attribute__((noreturn));
	void (*quick_exit)(int) __attribute__((noreturn));
	void (*pthread_exit)(void *) __attribute__((noreturn));
	void (*thrd_exit)(int) __attribute__((noreturn));
	void (*abort)(void) __attribute__((noreturn));
	void (*__assert_fail)(const char *, const char *, NF_ASSERT_LINE, const char *)
		__attribute__((noreturn));
	int (*daemon)(int, int);
};

/*
 * The table shares one 4 KiB page with the hooks' first test (one byte
 * per low descriptor, nf_conn_leave in nf_conn.h): a call the library
 * leaves alone reads that page and nothing else of ours. Where every
 * system call empties the TLB (page-table isolation), each further page
 * the call touches costs a page walk. Defined in hot.c.
 */
#define NF_HOT_LEAVE 3456
struct nf_hot {
	struct nf_real_table real;
	unsigned char leave[NF_HOT_LEAVE];
};
_Static_assert(sizeof(struct nf_hot) <= 4096, "nf_hot must fit one page");
extern struct nf_hot nf_hot;
#define nf_real (nf_hot.real)

/*
 * Resolves every entry with dlsym(RTLD_NEXT). Aborts with a message if a
 * required symbol is missing or resolves back to this library; optional
 * ones (close_range, closefrom, fcntl64, pwritev2, execveat, the _IO_
 * names, the fortified __*_chk: not in musl; posix_close: not in glibc
 * 2.36) are left NULL. Called once, from nf_init().
 */
void nf_real_init(void);

/* libc's abort, also before the table is ready (our abort is a hook). */
void nf_real_abort(void) __attribute__((noreturn));

#endif
