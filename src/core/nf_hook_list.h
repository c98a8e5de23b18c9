/*
 * nf_hook_list.h - every libc name the library interposes, in one list.
 *
 * NF_HOOKS_REAL(X) names each hook whose real function the library calls,
 * as X(name, ret, params, need, attr): the function's return type, its
 * parenthesised parameter types, NF_REQUIRED or NF_OPTIONAL, and
 * NF_NORETURN or nothing. nf_real.h makes struct nf_real_table's fields
 * from it; real.c resolves each field (an NF_REQUIRED name libc lacks
 * aborts; an NF_OPTIONAL one stays NULL, and the hook falls back).
 *
 * NF_HOOKS_ALIAS(A) names, as A(name), each hook with no real function
 * of its own: it does what another hook does (glibc's __write is write;
 * execl gathers an argv for the execv hook; vfork is libc's fork).
 *
 * The version script src/naglefix.map lists exactly these names, and
 * tests/check-exports.sh (make test-exports) proves it: the list against
 * the map, the map against the library's dynamic symbols, and the objects'
 * exported functions against the list. Adding a hook: its row here, its
 * name in the map, its function (NF_EXPORT) in src/interpose/.
 *
 * The types nf_mmsg_flags, nf_lio_list and NF_ASSERT_LINE are nf_real.h's
 * (glibc and musl differ there); expand the lists after including it.
 */
#ifndef NF_HOOK_LIST_H
#define NF_HOOK_LIST_H

#define NF_REQUIRED 1
#define NF_OPTIONAL 0
#define NF_NORETURN __attribute__((noreturn))

#define NF_HOOKS_REAL(X)                                                                   \
	X(socket, int, (int, int, int), NF_REQUIRED, )                                       \
	X(connect, int, (int, const struct sockaddr *, socklen_t), NF_REQUIRED, )            \
	X(accept, int, (int, struct sockaddr *, socklen_t *), NF_REQUIRED, )                 \
	X(accept4, int, (int, struct sockaddr *, socklen_t *, int), NF_REQUIRED, )           \
	X(setsockopt, int, (int, int, int, const void *, socklen_t), NF_REQUIRED, )          \
	X(write, ssize_t, (int, const void *, size_t), NF_REQUIRED, )                        \
	X(writev, ssize_t, (int, const struct iovec *, int), NF_REQUIRED, )                  \
	X(send, ssize_t, (int, const void *, size_t, int), NF_REQUIRED, )                    \
	X(sendto, ssize_t, (int, const void *, size_t, int, const struct sockaddr *,         \
			    socklen_t), NF_REQUIRED, )                                         \
	X(sendmsg, ssize_t, (int, const struct msghdr *, int), NF_REQUIRED, )                \
	X(sendmmsg, int, (int, struct mmsghdr *, unsigned, nf_mmsg_flags), NF_REQUIRED, )    \
	X(recvmsg, ssize_t, (int, struct msghdr *, int), NF_REQUIRED, )                      \
	X(close, int, (int), NF_REQUIRED, )                                                  \
	X(close_range, int, (unsigned, unsigned, int), NF_OPTIONAL, )                        \
	X(closefrom, void, (int), NF_OPTIONAL, )             /* glibc 2.34 */                \
	X(posix_close, int, (int, int), NF_OPTIONAL, )       /* musl, glibc 2.39 */          \
	X(dup, int, (int), NF_REQUIRED, )                                                    \
	X(dup2, int, (int, int), NF_REQUIRED, )                                              \
	X(dup3, int, (int, int, int), NF_REQUIRED, )                                         \
	X(fcntl, int, (int, int, ...), NF_REQUIRED, )                                        \
	X(fcntl64, int, (int, int, ...), NF_OPTIONAL, )                                      \
	X(shutdown, int, (int, int), NF_REQUIRED, )                                          \
	X(read, ssize_t, (int, void *, size_t), NF_REQUIRED, )                               \
	X(readv, ssize_t, (int, const struct iovec *, int), NF_REQUIRED, )                   \
	X(recv, ssize_t, (int, void *, size_t, int), NF_REQUIRED, )                          \
	X(recvfrom, ssize_t, (int, void *, size_t, int, struct sockaddr *, socklen_t *),     \
	  NF_REQUIRED, )                                                                     \
	X(recvmmsg, int, (int, struct mmsghdr *, unsigned, nf_mmsg_flags, struct timespec *), \
	  NF_REQUIRED, )                                                                     \
	X(__read_chk, ssize_t, (int, void *, size_t, size_t), NF_OPTIONAL, ) /* glibc only */ \
	X(__recv_chk, ssize_t, (int, void *, size_t, size_t, int), NF_OPTIONAL, )           \
	X(__recvfrom_chk, ssize_t, (int, void *, size_t, size_t, int, struct sockaddr *,     \
				    socklen_t *), NF_OPTIONAL, ) /* glibc only */              \
	X(poll, int, (struct pollfd *, nfds_t, int), NF_REQUIRED, )                          \
	X(ppoll, int, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *),  \
	  NF_REQUIRED, )                                                                     \
	X(select, int, (int, fd_set *, fd_set *, fd_set *, struct timeval *), NF_REQUIRED, ) \
	X(pselect, int, (int, fd_set *, fd_set *, fd_set *, const struct timespec *,         \
			 const sigset_t *), NF_REQUIRED, )                                     \
	X(epoll_wait, int, (int, struct epoll_event *, int, int), NF_REQUIRED, )             \
	X(epoll_pwait, int, (int, struct epoll_event *, int, int, const sigset_t *),         \
	  NF_REQUIRED, )                                                                     \
	X(epoll_pwait2, int, (int, struct epoll_event *, int, const struct timespec *,       \
			      const sigset_t *), NF_OPTIONAL, ) /* glibc 2.35 */               \
	X(__poll_chk, int, (struct pollfd *, nfds_t, int, size_t), NF_OPTIONAL, )           \
	X(__ppoll_chk, int, (struct pollfd *, nfds_t, const struct timespec *,               \
			     const sigset_t *, size_t), NF_OPTIONAL, ) /* glibc only */        \
	X(sendfile, ssize_t, (int, int, off_t *, size_t), NF_REQUIRED, )                     \
	X(sendfile64, ssize_t, (int, int, off64_t *, size_t), NF_REQUIRED, )                 \
	X(pwritev2, ssize_t, (int, const struct iovec *, int, off_t, int), NF_OPTIONAL, )    \
	X(pwritev64v2, ssize_t, (int, const struct iovec *, int, off64_t, int),              \
	  NF_OPTIONAL, ) /* glibc only */                                                    \
	X(aio_write, int, (struct aiocb *), NF_REQUIRED, )                                   \
	X(aio_write64, int, (struct aiocb64 *), NF_REQUIRED, )                               \
	X(lio_listio, int, (int, nf_lio_list, int, struct sigevent *), NF_REQUIRED, )        \
	X(lio_listio64, int, (int, struct aiocb64 *const[], int, struct sigevent *),         \
	  NF_REQUIRED, )                                                                     \
	X(splice, ssize_t, (int, loff_t *, int, loff_t *, size_t, unsigned), NF_REQUIRED, )  \
	X(execve, int, (const char *, char *const[], char *const[]), NF_REQUIRED, )          \
	X(execv, int, (const char *, char *const[]), NF_REQUIRED, )                          \
	X(execvp, int, (const char *, char *const[]), NF_REQUIRED, )                         \
	X(execvpe, int, (const char *, char *const[], char *const[]), NF_REQUIRED, )         \
	X(fexecve, int, (int, char *const[], char *const[]), NF_REQUIRED, )                  \
	X(execveat, int, (int, const char *, char *const[], char *const[], int),             \
	  NF_OPTIONAL, ) /* glibc 2.34 */                                                    \
	X(_Fork, pid_t, (void), NF_OPTIONAL, ) /* glibc 2.34, musl 1.2.2 */                  \
	X(posix_spawn, int, (pid_t *, const char *, const posix_spawn_file_actions_t *,      \
			     const posix_spawnattr_t *, char *const[], char *const[]),         \
	  NF_REQUIRED, )                                                                     \
	X(posix_spawnp, int, (pid_t *, const char *, const posix_spawn_file_actions_t *,     \
			      const posix_spawnattr_t *, char *const[], char *const[]),        \
	  NF_REQUIRED, )                                                                     \
	X(system, int, (const char *), NF_REQUIRED, )                                        \
	X(popen, FILE *, (const char *, const char *), NF_REQUIRED, )                        \
	X(_IO_popen, FILE *, (const char *, const char *), NF_OPTIONAL, ) /* glibc only */   \
	X(fdopen, FILE *, (int, const char *), NF_REQUIRED, )                                \
	X(_IO_fdopen, FILE *, (int, const char *), NF_OPTIONAL, ) /* glibc only */           \
	X(fclose, int, (FILE *), NF_REQUIRED, )                                              \
	X(_IO_fclose, int, (FILE *), NF_OPTIONAL, ) /* glibc only */                         \
	X(freopen, FILE *, (const char *, const char *, FILE *), NF_REQUIRED, )              \
	X(freopen64, FILE *, (const char *, const char *, FILE *), NF_REQUIRED, )            \
	X(vdprintf, int, (int, const char *, va_list), NF_REQUIRED, )                        \
	X(__vdprintf_chk, int, (int, int, const char *, va_list), NF_OPTIONAL, )            \
	X(exit, void, (int), NF_REQUIRED, NF_NORETURN)                                       \
	X(_exit, void, (int), NF_REQUIRED, NF_NORETURN)                                      \
	X(_Exit, void, (int), NF_REQUIRED, NF_NORETURN)                                      \
	X(quick_exit, void, (int), NF_REQUIRED, NF_NORETURN)                                 \
	X(pthread_exit, void, (void *), NF_REQUIRED, NF_NORETURN)                            \
	X(thrd_exit, void, (int), NF_REQUIRED, NF_NORETURN)                                  \
	X(abort, void, (void), NF_REQUIRED, NF_NORETURN)                                     \
	X(__assert_fail, void, (const char *, const char *, NF_ASSERT_LINE, const char *),   \
	  NF_REQUIRED, NF_NORETURN)                                                          \
	X(daemon, int, (int, int), NF_REQUIRED, )                                            \
	X(prctl, int, (int, ...), NF_REQUIRED, )                                             \
	NF_HOOK_SYSCALL(X)

/* syscall's hook is a few instructions of x86-64 assembly
 * (interpose/sandbox.c); elsewhere there is none. */
#if defined(__x86_64__)
#define NF_HOOK_SYSCALL(X) X(syscall, long, (long, ...), NF_REQUIRED, )
#else
#define NF_HOOK_SYSCALL(X)
#endif

#define NF_HOOKS_ALIAS(A)                                                                  \
	A(__write)       /* write.c: write */                                                \
	A(__send)        /* write.c: send */                                                 \
	A(__close)       /* fd.c: close */                                                   \
	A(__dup2)        /* fd.c: dup2 */                                                    \
	A(__fcntl)       /* fd.c: fcntl */                                                   \
	A(vfork)         /* process.c: libc's fork */                                        \
	A(__vfork)       /* process.c: libc's fork */                                        \
	A(execl)         /* process.c: the execv hook */                                     \
	A(execlp)        /* process.c: the execvp hook */                                    \
	A(execle)        /* process.c: the execve hook */                                    \
	A(dprintf)       /* stdio.c: vdprintf */                                             \
	A(__dprintf_chk) /* stdio.c: __vdprintf_chk */

#endif
