/*
 * detect_alone.c - the cost of each of scan's two halves alone: `make bench`'s
 * tests/bench/scan.sh runs it on its capture to say where scan's time
 * goes. Usage: detect_alone CAPTURE [REPS]
 *
 * Reads, decodes and prepares every segment of CAPTURE into memory first
 * (nf_feed, as scan's reading half does), then reads it again as that
 * half does alone (into a ring of 4 batches, the file in the page
 * cache) and prints
 *   read alone: SEGMENTS segments, S s, NS ns a segment
 * then feeds the segments REPS times (default 5) to a new detector in
 * batches of 1,024, as scan's other half does, and prints one line a
 * rep:
 *   detect_alone: SEGMENTS segments, PEAK connections at most, S s, NS ns a segment
 * Exit status 0, or 2 on an unreadable capture.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "wire/nf_cap.h"
#include "wire/nf_feed.h"
#include "wire/nf_pkt.h"
#include "wire/nf_wire.h"

#define BATCH 1024

static double seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The seconds scan's reading half takes on the capture on fd: read,
 * decoded and prepared (nf_feed) into a ring of 4 batches, as scan's;
 * -1 if it cannot be read whole. */
static double read_alone(int fd, const char *name)
{
	static struct nf_seg seg[4][BATCH];
	static struct nf_seg_more more[4][BATCH];
	unsigned long long skipped[NF_SKIP_NKINDS] = { 0 };
	char err[NF_CAP_ERR_MAX];
	struct nf_cap *c = nf_cap_open(fd, name, err);
	double t0 = seconds();
	int rc = 1;

	for (unsigned k = 0; c && rc == 1; k++)
		nf_feed(c, seg[k % 4], more[k % 4], BATCH, skipped, &rc);
	t0 = seconds() - t0;
	nf_cap_close(c);
	return c && rc == 0 ? t0 : -1;
}

/* Every segment of the capture on fd, read, decoded and prepared as
 * scan's reading half does (nf_feed), into *seg and *more. The count,
 * or 0 when the capture cannot be read whole. */
static size_t load(int fd, const char *name, struct nf_seg **seg, struct nf_seg_more **more)
{
	unsigned long long skipped[NF_SKIP_NKINDS] = { 0 };
	char err[NF_CAP_ERR_MAX];
	struct nf_cap *c = nf_cap_open(fd, name, err);
	size_t n = 0, cap = 1 << 20;
	int rc = 1;

	if (!c) {
		fprintf(stderr, "detect_alone: %s\n", err);
		return 0;
	}
	*seg = malloc(cap * sizeof(**seg));
	*more = malloc(cap * sizeof(**more));
	while (*seg && *more && rc == 1) {
		if (cap - n < BATCH) {
			struct nf_seg *np = realloc(*seg, 2 * cap * sizeof(**seg));
			struct nf_seg_more *nh = np ? realloc(*more, 2 * cap * sizeof(**more)) : NULL;

			if (np)
				*seg = np;
			if (!np || !nh)
				break;
			*more = nh;
			cap *= 2;
		}
		n += nf_feed(c, *seg + n, *more + n, BATCH, skipped, &rc);
	}
	if (!*seg || !*more || rc == 1) {
		fprintf(stderr, "detect_alone: out of memory\n");
		n = 0;
	} else if (rc < 0) {
		fprintf(stderr, "detect_alone: %s\n", nf_cap_error(c));
		n = 0;
	}
	nf_cap_close(c);
	return n;
}

/* One rep: the segments through a new detector. Its seconds. */
static double rep(const struct nf_seg *p, const struct nf_seg_more *h, size_t n,
		  unsigned long long *peak)
{
	struct nf_wire_stats st;
	struct nf_wire *w;
	double t0, t1;

	if (!(w = nf_wire_new(NULL)))
		return -1;
	t0 = seconds();
	for (size_t i = 0; i < n; i += BATCH)
		nf_wire_segments(w, p + i, h + i, n - i < BATCH ? n - i : BATCH);
	t1 = seconds();
	nf_wire_stats(w, &st);
	*peak = st.peak;
	nf_wire_free(w);
	return t1 - t0;
}

int main(int argc, char **argv)
{
	struct nf_seg *p = NULL;
	struct nf_seg_more *h = NULL;
	int reps = argc > 2 ? atoi(argv[2]) : 5, fd;
	double read_s;
	size_t n;

	if (argc < 2 || reps < 1) {
		fputs("usage: detect_alone CAPTURE [REPS]\n", stderr);
		return 2;
	}
	if ((fd = open(argv[1], O_RDONLY)) < 0) {
		perror(argv[1]);
		return 2;
	}
	n = load(fd, argv[1], &p, &h);
	if (n == 0 || lseek(fd, 0, SEEK_SET) != 0 || (read_s = read_alone(fd, argv[1])) < 0)
		return 2;
	close(fd);
	printf("read alone: %zu segments, %.3f s, %.1f ns a segment\n", n, read_s,
	       read_s * 1e9 / (double)n);
	for (int r = 0; r < reps; r++) {
		unsigned long long peak;
		double s = rep(p, h, n, &peak);

		if (s < 0) {
			fputs("detect_alone: out of memory\n", stderr);
			return 2;
		}
		printf("detect_alone: %zu segments, %llu connections at most, %.3f s, %.1f ns a segment\n",
		       n, peak, s, s * 1e9 / (double)n);
	}
	free(p);
	free(h);
	return 0;
}
