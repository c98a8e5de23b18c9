/*
 * sandbox.c - prctl: a program putting itself in a seccomp sandbox
 * (PR_SET_SECCOMP, as OpenSSH's pre-authentication child does). Before
 * the filter is in place the library sends what it holds and stands
 * aside (nf_sandbox.h); every other prctl passes untouched.
 */
#include <stdarg.h>
#include <sys/prctl.h>

#include "../nf_hooks.h"
#include "nf_init.h"
#include "nf_sandbox.h"

int nf_prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4,
	     unsigned long a5)
{
	if (option == PR_SET_SECCOMP)
		nf_sandbox_enter();
	return nf_real.prctl(option, a2, a3, a4, a5);
}

/* prctl takes up to four more words, each an integer or a pointer (libc
 * reads all four, as here, whatever option says). */
NF_EXPORT int prctl(int option, ...)
{
	unsigned long a2, a3, a4, a5;
	va_list ap;

	va_start(ap, option);
	a2 = va_arg(ap, unsigned long);
	a3 = va_arg(ap, unsigned long);
	a4 = va_arg(ap, unsigned long);
	a5 = va_arg(ap, unsigned long);
	va_end(ap);
	nf_init();
	return nf_prctl(option, a2, a3, a4, a5);
}
