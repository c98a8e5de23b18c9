/*
 * fail_sockopt.c - a preloaded shim that makes naglefix's bpf(2) calls
 * for the setsockopt program fail, as a kernel would: run by
 * tests/attach/run.sh under LD_PRELOAD with NF_FAIL_SOCKOPT set to
 *   load    BPF_PROG_LOAD of a BPF_PROG_TYPE_CGROUP_SOCKOPT program: EINVAL
 *           (a kernel before 5.3, which has no such type)
 *   attach  BPF_PROG_ATTACH at BPF_CGROUP_SETSOCKOPT: EBUSY (the second
 *           attach failing after the first went on)
 * Every other call goes to the kernel as it came.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

long syscall(long n, ...);

/* Whether the bpf(2) call cmd with attr is the one to fail. */
static int to_fail(long cmd, const union bpf_attr *a)
{
	const char *mode = getenv("NF_FAIL_SOCKOPT");

	if (!mode)
		return 0;
	if (strcmp(mode, "load") == 0)
		return cmd == BPF_PROG_LOAD && a->prog_type == BPF_PROG_TYPE_CGROUP_SOCKOPT;
	if (strcmp(mode, "attach") == 0)
		return cmd == BPF_PROG_ATTACH && a->attach_type == BPF_CGROUP_SETSOCKOPT;
	return 0;
}

long syscall(long n, ...)
{
	static long (*real)(long, ...);
	long a[6];
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (n == SYS_bpf && to_fail(a[0], (const union bpf_attr *)a[1])) {
		errno = strcmp(getenv("NF_FAIL_SOCKOPT"), "load") == 0 ? EINVAL : EBUSY;
		return -1;
	}
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
