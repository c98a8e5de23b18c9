/*
 * copyin.c - the program's bytes into a buffer of ours, checked by the
 * kernel the first time a range of pages is read (nf_copyin.h).
 */
#include "nf_copyin.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NKNOWN 8
#define PAGE_MASK ((uintptr_t)4095)
/* Nothing can be mapped below this (the kernel's default mmap_min_addr)
 * or at or above the top of the x86-64/arm64 user half: always EFAULT. */
#define LOWEST_MAPPABLE ((uintptr_t)65536)
#define USER_TOP ((uintptr_t)1 << 47)

/* Page ranges [lo, hi) this thread's copies found readable. */
struct known {
	uintptr_t lo, hi;
};

static __thread struct known known[NKNOWN] __attribute__((tls_model("initial-exec")));
static __thread unsigned next_slot __attribute__((tls_model("initial-exec")));

/* 0 once the kernel refused process_vm_readv itself: memcpy only. */
static atomic_int kernel_checks = 1;

static int is_known(uintptr_t lo, uintptr_t hi)
{
	for (int i = 0; i < NKNOWN; i++)
		if (known[i].lo <= lo && hi <= known[i].hi)
			return 1;
	return 0;
}

/*
 * Remembers the pages of [lo, hi). Each writer takes its own slot with
 * one atomic add, and a slot reads as empty (hi 0) while it is filled, so
 * a signal handler that copies in the middle sees no torn range.
 */
static void remember(uintptr_t lo, uintptr_t hi)
{
	struct known *k = &known[__atomic_fetch_add(&next_slot, 1, __ATOMIC_RELAXED) % NKNOWN];

	__atomic_store_n(&k->hi, 0, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&k->lo, lo & ~PAGE_MASK, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&k->hi, (hi + PAGE_MASK) & ~PAGE_MASK, __ATOMIC_RELAXED);
}

/*
 * Copies len bytes at src through the kernel: 0, or -1 if some byte is
 * unreadable. Asked of the calling thread's own id: the process id names
 * main, whose memory is gone once main has left (pthread_exit) while this
 * thread runs on; and a forked child must read its own memory.
 */
static int kernel_copy(char *dst, const char *src, size_t len)
{
	struct iovec local = { .iov_base = dst, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)src, .iov_len = len };
	long n = syscall(SYS_process_vm_readv, syscall(SYS_gettid), &local, 1L, &remote, 1L, 0L);

	if (n == (long)len)
		return 0;
	if (n >= 0 || errno == EFAULT) /* a byte it could not read */
		return -1;
	atomic_store(&kernel_checks, 0); /* refused (seccomp, ptrace rules): not a bad address */
	memcpy(dst, src, len);
	return 0;
}

static int copy_one(char *dst, const char *src, size_t len)
{
	uintptr_t lo = (uintptr_t)src, hi = lo + len;

	if (hi < lo || lo < LOWEST_MAPPABLE || hi > USER_TOP)
		return -1;
	if (is_known(lo, hi) || !atomic_load_explicit(&kernel_checks, memory_order_relaxed)) {
		memcpy(dst, src, len);
		return 0;
	}
	if (kernel_copy(dst, src, len) < 0)
		return -1;
	remember(lo, hi);
	return 0;
}

int nf_copyin(char *dst, const struct iovec *iov, int iovcnt, size_t n)
{
	int saved = errno, rc = 0;
	size_t off = 0;

	for (int i = 0; i < iovcnt && rc == 0; i++) {
		size_t len = iov[i].iov_len;

		if (len == 0)
			continue;
		if (len > n - off)
			rc = -1;
		else
			rc = copy_one(dst + off, iov[i].iov_base, len);
		off += len;
	}
	errno = saved;
	return rc;
}

int nf_copy_from(void *dst, const void *src, size_t n)
{
	struct iovec v = { .iov_base = (void *)src, .iov_len = n };

	return nf_copyin(dst, &v, 1, n);
}
