/*
 * fail_sockopt.c - a preloaded shim that makes naglefix's bpf(2) calls
 * for the setsockopt program fail, as a kernel would: run by
 * tests/attach/run.sh under LD_PRELOAD with NF_FAIL_SOCKOPT set to
 *   load    BPF_PROG_LOAD of a BPF_PROG_TYPE_CGROUP_SOCKOPT program: EINVAL
 *           (a kernel before 5.3, which has no such type)
 *   attach  BPF_PROG_ATTACH at BPF_CGROUP_SETSOCKOPT: EBUSY (the second
 *           attach failing after the first went on)
 *   mark    BPF_MAP_UPDATE_ELEM of a socket-local storage map (attach --now
 *           marking a socket from user space): EOPNOTSUPP (a kernel that
 *           takes no such update)
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

static long (*real)(long, ...);

/* Whether the map fd is socket-local storage (asked of the kernel). */
static int sk_storage(int fd)
{
	struct bpf_map_info info;
	union bpf_attr a;

	memset(&info, 0, sizeof(info));
	memset(&a, 0, sizeof(a));
	a.info.bpf_fd = (unsigned)fd;
	a.info.info_len = sizeof(info);
	a.info.info = (unsigned long)&info;
	return real(SYS_bpf, BPF_OBJ_GET_INFO_BY_FD, &a, sizeof(a)) == 0 &&
	       info.type == BPF_MAP_TYPE_SK_STORAGE;
}

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
	if (strcmp(mode, "mark") == 0)
		return cmd == BPF_MAP_UPDATE_ELEM && sk_storage((int)a->map_fd);
	return 0;
}

/* The errno of the failure mode. */
static int fail_errno(void)
{
	const char *mode = getenv("NF_FAIL_SOCKOPT");

	if (strcmp(mode, "load") == 0)
		return EINVAL;
	return strcmp(mode, "mark") == 0 ? EOPNOTSUPP : EBUSY;
}

long syscall(long n, ...)
{
	long a[6];
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	if (n == SYS_bpf && to_fail(a[0], (const union bpf_attr *)a[1])) {
		errno = fail_errno();
		return -1;
	}
	return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
