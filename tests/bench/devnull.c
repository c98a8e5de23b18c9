/*
 * devnull.c - what the library adds to a call on a descriptor that is not
 * a socket: 1-byte writes to /dev/null (or reads from /dev/zero) through
 * the program's write or read (the library's, when preloaded) and through
 * libc's own (looked up in libc itself: RTLD_NEXT would find the preloaded
 * one), in alternating batches in one process, so both see the same
 * machine.
 *
 *   devnull CALLS [read]
 *
 * Prints "hook_ns=.. libc_ns=.. ratio=..": medians per call over the
 * batches, and the median of the per-pair ratios.
 */
#ifndef _GNU_SOURCE /* the Makefile's CPPFLAGS define it */
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <gnu/lib-names.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PAIRS 41

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return v[n / 2];
}

/* A call of one byte on fd: write's or read's signature. */
typedef ssize_t (*call_fn)(int, void *, size_t);

/* ns per call of n 1-byte calls on fd through f. */
static double batch(call_fn f, int fd, long n)
{
	char byte = 'x';
	double t0 = now_ns();

	for (long i = 0; i < n; i++)
		if (f(fd, &byte, 1) != 1) {
			perror("devnull");
			exit(2);
		}
	return (now_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 2000000, per = calls / (2 * PAIRS);
	int reading = argc > 2 && strcmp(argv[2], "read") == 0;
	const char *name = reading ? "read" : "write";
	void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
	/* the program's own read or write: the library's when it is preloaded */
	call_fn mine = reading ? (call_fn)read : (call_fn)write;
	call_fn libc_call = libc ? (call_fn)dlsym(libc, name) : NULL;
	int fd = open(reading ? "/dev/zero" : "/dev/null", reading ? O_RDONLY : O_WRONLY);
	double hook[PAIRS], lib[PAIRS], ratio[PAIRS];

	if (fd < 0 || per < 1 || !libc_call) {
		fprintf(stderr, "devnull: cannot set up\n");
		return 2;
	}
	batch(mine, fd, per); /* warm-up */
	for (int p = 0; p < PAIRS; p++) {
		hook[p] = batch(mine, fd, per);
		lib[p] = batch(libc_call, fd, per);
		ratio[p] = hook[p] / lib[p];
	}
	printf("hook_ns=%.1f libc_ns=%.1f ratio=%.4f\n", median(hook, PAIRS), median(lib, PAIRS),
	       median(ratio, PAIRS));
	return 0;
}
