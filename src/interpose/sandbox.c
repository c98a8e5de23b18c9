/*
 * sandbox.c - prctl and syscall: a program putting itself in a seccomp
 * sandbox, with prctl(PR_SET_SECCOMP) (OpenSSH's pre-authentication child)
 * or with the seccomp system call (libseccomp's seccomp_load, through
 * syscall(SYS_seccomp, ...)). Before the filter is in place the library
 * sends what it holds and stands aside (nf_sandbox.h); every other call
 * passes untouched.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "hooks_int.h"
#include "process/nf_init.h"
#include "process/nf_sandbox.h"

/* seccomp's modes and operations (linux/seccomp.h, which musl-gcc has not) */
#define MODE_STRICT 1
#define MODE_FILTER 2
#define SET_MODE_STRICT 0
#define SET_MODE_FILTER 1

/*
 * Does prctl(PR_SET_SECCOMP, mode, prog) install a filter? Not a probe
 * that the kernel refuses without installing anything (systemd's: the
 * filter mode with no program, EFAULT), which must not make the library
 * stand aside for good.
 */
static int prctl_sandboxes(unsigned long mode, unsigned long prog)
{
	return mode == MODE_STRICT || (mode == MODE_FILTER && prog != 0);
}

/* The library stands aside, and its hooks with it. */
static void stand_aside(void)
{
	nf_vfork_prepare_aside();
	nf_sandbox_enter();
}

int nf_prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4,
	     unsigned long a5)
{
	if (option == PR_SET_SECCOMP && prctl_sandboxes(a2, a3))
		stand_aside();
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

#if defined(__x86_64__)
/*
 * syscall(n, ...): for every n but SYS_seccomp and SYS_prctl, a jump to
 * libc's syscall with the caller's registers and stack as they were, so
 * that even a vfork, or a clone onto a new stack, made through syscall()
 * never returns through a frame of ours. Those two numbers, and any
 * before libc's syscall is known, go to nf_syscall_slow, a C function
 * reached by the same jump: its arguments are the caller's (n and five in
 * registers, the sixth on the stack), and it returns to the caller.
 */
void *nf_syscall_next __attribute__((visibility("hidden"))); /* libc's syscall */

long nf_syscall_slow(long n, long a1, long a2, long a3, long a4, long a5, long a6)
	__attribute__((visibility("hidden"), used));

#define STR_(x) #x
#define STR(x) STR_(x)

__asm__(".text\n"
	".globl syscall\n"
	".type syscall, @function\n"
	"syscall:\n" NF_ASM_ENDBR
	"\tcmpq $" STR(SYS_seccomp) ", %rdi\n"
	"\tje 1f\n"
	"\tcmpq $" STR(SYS_prctl) ", %rdi\n"
	"\tje 1f\n"
	"\tmovq nf_syscall_next(%rip), %r11\n"
	"\ttestq %r11, %r11\n"
	"\tjz 1f\n"
	"\tjmp *%r11\n"
	"1:\tjmp nf_syscall_slow\n"
	".size syscall, .-syscall\n");

/*
 * Does system call n (a1, a2, a3) install a seccomp filter? Not the
 * probes that the kernel refuses without installing anything
 * (libseccomp's: strict mode with flags, EINVAL; the filter operation with
 * no program, EFAULT), which must not make the library stand aside.
 */
static int sandboxes(long n, long a1, long a2, long a3)
{
	if (n == SYS_seccomp)
		return (a1 == SET_MODE_STRICT && a2 == 0 && a3 == 0) ||
		       (a1 == SET_MODE_FILTER && a3 != 0);
	return n == SYS_prctl && a1 == PR_SET_SECCOMP && prctl_sandboxes((unsigned long)a2,
									  (unsigned long)a3);
}

long nf_syscall_slow(long n, long a1, long a2, long a3, long a4, long a5, long a6)
{
	long (*next)(long, ...) = nf_real.syscall;

	if (!next) /* not resolved yet: from another library's constructor, or
		      from the set-up itself (its fatal message): no nf_init */
		next = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	__atomic_store_n(&nf_syscall_next, (void *)next, __ATOMIC_RELAXED);
	if (sandboxes(n, a1, a2, a3)) {
		nf_init();
		stand_aside();
	}
	return next(n, a1, a2, a3, a4, a5, a6);
}
#endif
