/*
 * real.c - the one place the real libc functions are resolved.
 */
#include "nf_real.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct nf_real nf_real;

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
	abort();
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
	RESOLVE(recvmsg, 1);
	RESOLVE(close, 1);
	RESOLVE(close_range, 0);
	RESOLVE(dup, 1);
	RESOLVE(dup2, 1);
	RESOLVE(dup3, 1);
}
