/*
 * real.c - the one place the real libc functions are resolved.
 */
#include "nf_real.h"

#include <fcntl.h>

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <threads.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * Aborts: without the real function the call cannot be made at all. The
 * message goes out by raw syscall: write() may be our own hook.
 */
static void die(const char *name, const char *why)
{
	char msg[160];
	int n = snprintf(msg, sizeof(msg), "naglefix: cannot use libc's %s: %s\n", name, why);

	if (n > 0)
		(void)syscall(SYS_write, STDERR_FILENO, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
	nf_real_abort();
}

void nf_real_abort(void)
{
	if (nf_real.abort)
		nf_real.abort();
	signal(SIGABRT, SIG_DFL); /* abort is our own hook: do what it does */
	raise(SIGABRT);
	syscall(SYS_exit_group, 127);
	__builtin_unreachable();
}

/*
 * dlsym(RTLD_NEXT) of name. Handing back our own wrapper would recurse
 * forever on the first call (proxychains-ng's check): abort instead.
 */
static void *resolve(const char *name, void *ours, int required)
{
	void *fn = dlsym(RTLD_NEXT, name);

	if (fn == ours && fn != NULL)
		die(name, "resolved to naglefix itself");
	if (!fn && required)
		die(name, "symbol not found");
	return fn;
}

#define RESOLVE(field, required)                                                  \
	(*(void **)&nf_real.field = resolve(#field, (void *)(field), (required)))

void nf_real_init(void)
{
	RESOLVE(socket, 1);
	RESOLVE(connect, 1);
	RESOLVE(accept, 1);
	RESOLVE(accept4, 1);
	RESOLVE(setsockopt, 1);
	RESOLVE(write, 1);
	RESOLVE(writev, 1);
	RESOLVE(send, 1);
	RESOLVE(sendto, 1);
	RESOLVE(sendmsg, 1);
	RESOLVE(sendmmsg, 1);
	RESOLVE(recvmsg, 1);
	RESOLVE(close, 1);
	RESOLVE(close_range, 0);
	RESOLVE(closefrom, 0);    /* glibc 2.34 */
	RESOLVE(posix_close, 0);  /* musl, glibc 2.39 */
	RESOLVE(dup, 1);
	RESOLVE(dup2, 1);
	RESOLVE(dup3, 1);
	RESOLVE(fcntl, 1);
	RESOLVE(fcntl64, 0);
	RESOLVE(shutdown, 1);
	RESOLVE(read, 1);
	RESOLVE(readv, 1);
	RESOLVE(recv, 1);
	RESOLVE(recvfrom, 1);
	RESOLVE(recvmmsg, 1);
	RESOLVE(__read_chk, 0); /* glibc only */
	RESOLVE(__recv_chk, 0); /* glibc only */
	RESOLVE(__recvfrom_chk, 0); /* glibc only */
	RESOLVE(poll, 1);
	RESOLVE(ppoll, 1);
	RESOLVE(select, 1);
	RESOLVE(pselect, 1);
	RESOLVE(epoll_wait, 1);
	RESOLVE(epoll_pwait, 1);
	RESOLVE(epoll_pwait2, 0); /* glibc 2.35 */
	RESOLVE(__poll_chk, 0);   /* glibc only */
	RESOLVE(__ppoll_chk, 0);  /* glibc only */
	RESOLVE(sendfile, 1);
	RESOLVE(sendfile64, 1);
	RESOLVE(pwritev2, 0);     /* glibc only */
	RESOLVE(pwritev64v2, 0);  /* glibc only */
	RESOLVE(aio_write, 1);
	RESOLVE(aio_write64, 1);
	RESOLVE(lio_listio, 1);
	RESOLVE(lio_listio64, 1);
	RESOLVE(splice, 1);
	RESOLVE(execve, 1);
	RESOLVE(execv, 1);
	RESOLVE(execvp, 1);
	RESOLVE(execvpe, 1);
	RESOLVE(fexecve, 1);
	RESOLVE(execveat, 0);     /* glibc 2.34 */
	RESOLVE(_Fork, 0);        /* glibc 2.34, musl 1.2.2 */
	RESOLVE(posix_spawn, 1);
	RESOLVE(posix_spawnp, 1);
	RESOLVE(system, 1);
	RESOLVE(popen, 1);
	RESOLVE(_IO_popen, 0);    /* glibc only */
	RESOLVE(fdopen, 1);
	RESOLVE(_IO_fdopen, 0);   /* glibc only */
	RESOLVE(fclose, 1);
	RESOLVE(_IO_fclose, 0);   /* glibc only */
	RESOLVE(freopen, 1);
	RESOLVE(freopen64, 1);
	RESOLVE(vdprintf, 1);
	RESOLVE(__vdprintf_chk, 0); /* glibc only */
	RESOLVE(exit, 1);
	RESOLVE(_exit, 1);
	RESOLVE(_Exit, 1);
	RESOLVE(quick_exit, 1);
	RESOLVE(pthread_exit, 1);
	RESOLVE(thrd_exit, 1);
	RESOLVE(abort, 1);
	RESOLVE(__assert_fail, 1);
	RESOLVE(daemon, 1);
}
