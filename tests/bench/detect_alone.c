/*
 * detect_alone.c - the detector's cost without the read: `make bench`'s
 * tests/bench/scan.sh runs it on its capture to say where scan's time
 * goes. Usage: detect_alone CAPTURE [REPS]
 *
 * Decodes every segment of CAPTURE into memory first (as scan's reading
 * thread does, each prepared for the detector), then feeds them REPS times (default 5)
 * to a new detector in batches of 1,024, as scan's other thread does, and
 * prints one line a rep:
 *   detect_alone: SEGMENTS segments, PEAK connections at most, S s, NS ns a segment
 * Exit status 0, or 2 on an unreadable capture.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "nf_cap.h"
#include "nf_pkt.h"
#include "nf_wire.h"

#define BATCH 1024

static double seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Every segment of the capture on fd, decoded and prepared. The count,
 * or 0 when the capture cannot be read whole. */
static size_t load(int fd, const char *name, struct nf_pkt **pkt, struct nf_wire_pre **pre)
{
	char err[NF_CAP_ERR_MAX];
	struct nf_cap *c = nf_cap_open(fd, name, err);
	struct nf_frame fr;
	size_t n = 0, cap = 1 << 20;
	int rc;

	if (!c) {
		fprintf(stderr, "detect_alone: %s\n", err);
		return 0;
	}
	*pkt = malloc(cap * sizeof(**pkt));
	*pre = malloc(cap * sizeof(**pre));
	while (*pkt && *pre && (rc = nf_cap_next(c, &fr)) == 1) {
		struct nf_pkt *p = &(*pkt)[n];

		p->dir = fr.dir;
		if (nf_pkt_decode(fr.link, 0, fr.data, fr.caplen, fr.origlen, p) != NF_SKIP_NONE)
			continue;
		p->ts_ns = fr.ts_ns;
		nf_wire_prepare(p, &(*pre)[n]);
		if (++n == cap) {
			struct nf_pkt *np = realloc(*pkt, 2 * cap * sizeof(**pkt));
			struct nf_wire_pre *nh = np ? realloc(*pre, 2 * cap * sizeof(**pre)) : NULL;

			if (np)
				*pkt = np;
			if (!np || !nh)
				break;
			*pre = nh;
			cap *= 2;
		}
	}
	if (!*pkt || !*pre || n == cap) {
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
static double rep(const struct nf_pkt *p, const struct nf_wire_pre *h, size_t n,
		  unsigned long long *peak)
{
	struct nf_wire_stats st;
	struct nf_wire *w;
	double t0, t1;

	if (!(w = nf_wire_new(NULL)))
		return -1;
	t0 = seconds();
	for (size_t i = 0; i < n; i += BATCH)
		nf_wire_packets_prepared(w, p + i, h + i, n - i < BATCH ? n - i : BATCH);
	t1 = seconds();
	nf_wire_stats(w, &st);
	*peak = st.peak;
	nf_wire_free(w);
	return t1 - t0;
}

int main(int argc, char **argv)
{
	struct nf_pkt *p = NULL;
	struct nf_wire_pre *h = NULL;
	int reps = argc > 2 ? atoi(argv[2]) : 5, fd;
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
	close(fd);
	if (n == 0)
		return 2;
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
