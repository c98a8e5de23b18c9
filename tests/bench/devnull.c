/*
 * devnull.c - what the library adds to a call on a descriptor that is not
 * a socket: 1-byte writes to /dev/null through the program's write (the
 * library's, when preloaded) and through libc's own write (looked up in
 * libc itself: RTLD_NEXT would find the preloaded one), in alternating
 * batches in one process, so both see the same machine.
 *
 *   devnull CALLS
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

/* ns per call of n 1-byte writes to fd through w. */
static double batch(ssize_t (*w)(int, const void *, size_t), int fd, long n)
{
	double t0 = now_ns();

	for (long i = 0; i < n; i++)
		if (w(fd, "x", 1) != 1) {
			perror("write");
			exit(2);
		}
	return (now_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 2000000, per = calls / (2 * PAIRS);
	void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
	ssize_t (*libc_write)(int, const void *, size_t) =
		libc ? (ssize_t(*)(int, const void *, size_t))dlsym(libc, "write") : NULL;
	int fd = open("/dev/null", O_WRONLY);
	double hook[PAIRS], lib[PAIRS], ratio[PAIRS];

	if (fd < 0 || per < 1 || !libc_write) {
		fprintf(stderr, "devnull: cannot set up\n");
		return 2;
	}
	batch(write, fd, per); /* warm-up */
	for (int p = 0; p < PAIRS; p++) {
		hook[p] = batch(write, fd, per);
		lib[p] = batch(libc_write, fd, per);
		ratio[p] = hook[p] / lib[p];
	}
	printf("hook_ns=%.1f libc_ns=%.1f ratio=%.4f\n", median(hook, PAIRS), median(lib, PAIRS),
	       median(ratio, PAIRS));
	return 0;
}
