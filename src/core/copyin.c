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

#define PAGE_SHIFT 12
#define PAGE_MASK ((uintptr_t)4095)
/* Nothing can be mapped below this (the kernel's default mmap_min_addr)
 * or at or above the top of the x86-64/arm64 user half: always EFAULT. */
#define LOWEST_MAPPABLE ((uintptr_t)65536)
#define USER_TOP ((uintptr_t)1 << 47)

/*
 * Pages the kernel found readable, process-wide (a copy of the address
 * space is readable in a forked child too): a direct-mapped table of page
 * numbers, one word a slot, so that a writer whose buffers move around a
 * heap (a client building each request anew) pays the kernel's check once
 * per page, not once per write. 0 is an empty slot (page 0 is never
 * mapped). A slot is one word, stored whole: a signal handler or another
 * thread reads the old page or the new one, both found readable.
 */
#define NSLOTS 1024
static uintptr_t known[NSLOTS];

/* 0 once the kernel refused process_vm_readv itself: memcpy only. */
static atomic_int kernel_checks = 1;

static uintptr_t *slot_of(uintptr_t page)
{
	return &known[(page ^ (page >> 10)) & (NSLOTS - 1)];
}

/* Whether every page of [lo, hi) (hi > lo) was found readable. */
static int is_known(uintptr_t lo, uintptr_t hi)
{
	for (uintptr_t p = lo >> PAGE_SHIFT; p <= (hi - 1) >> PAGE_SHIFT; p++)
		if (__atomic_load_n(slot_of(p), __ATOMIC_RELAXED) != p)
			return 0;
	return 1;
}

/* Remembers the pages of [lo, hi), each in its slot. */
static void remember(uintptr_t lo, uintptr_t hi)
{
	for (uintptr_t p = lo >> PAGE_SHIFT; p <= (hi - 1) >> PAGE_SHIFT; p++)
		__atomic_store_n(slot_of(p), p, __ATOMIC_RELAXED);
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
	int saved = errno;
	long n = syscall(SYS_process_vm_readv, syscall(SYS_gettid), &local, 1L, &remote, 1L, 0L);
	int err = errno;

	errno = saved; /* nf_copyin keeps errno: only this call can change it */
	if (n == (long)len)
		return 0;
	if (n >= 0 || err == EFAULT) /* a byte it could not read */
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
	int rc = 0;
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
	return rc;
}

int nf_copy_from(void *dst, const void *src, size_t n)
{
	struct iovec v = { .iov_base = (void *)src, .iov_len = n };

	return nf_copyin(dst, &v, 1, n);
}
