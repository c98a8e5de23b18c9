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

/* sendto by system call: libc's is a cancellation point, and a thread
 * cancelled in it with a lock held would leave the lock held for good. */
static ssize_t send_nocancel(int fd, const void *buf, size_t len, int flags)
{
	return syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
}

/* One statement per row of NF_HOOKS_REAL (nf_hook_list.h):
 * nf_real.write = resolve("write", write, NF_REQUIRED); ... */
#define RESOLVE(name, ret, params, need, attr)                                    \
	*(void **)&nf_real.name = resolve(#name, (void *)(name), (need));

void nf_real_init(void)
{
	NF_HOOKS_REAL(RESOLVE)
	nf_real.getsockopt = getsockopt; /* no hook of ours: nothing to resolve */
	nf_real.send_nocancel = send_nocancel;
}
