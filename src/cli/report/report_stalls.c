/*
 * report_stalls.c - the stalls report reads, kept for the medians: each
 * distinct (row, stall) once with its count, in one open-addressing
 * table of at most NF_REPORT_STALLS_MAX entries, so a log of any length
 * (a repeat line standing for a million findings, a pipe fed forever)
 * costs at most the table. A stall that finds the table full is not
 * kept: the caller counts it and says so.
 */
#include "report_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nf_fnv.h"

struct stall {
	double ms;
	uint32_t row; /* the row's number + 1; 0: an empty slot */
	unsigned long count;
};

struct nf_report_stalls {
	struct stall *slot;
	size_t n, nslots; /* nslots: a power of two, at least 2 n */
};

struct nf_report_stalls *nf_report_stalls_new(void)
{
	return calloc(1, sizeof(struct nf_report_stalls));
}

void nf_report_stalls_free(struct nf_report_stalls *s)
{
	if (s)
		free(s->slot);
	free(s);
}

/* The slot of (row + 1, ms): its entry, or the empty one to fill. */
static struct stall *find(const struct nf_report_stalls *s, uint32_t row1, double ms)
{
	size_t mask = s->nslots - 1;
	uint64_t h = nf_fnv(NF_FNV_INIT ^ row1, &ms, sizeof(ms));

	for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
		struct stall *e = &s->slot[i];

		if (!e->row || (e->row == row1 && memcmp(&e->ms, &ms, sizeof(ms)) == 0))
			return e;
	}
}

/* Doubles the table, taking what it grows by from *left; 0, or -1 (no
 * memory, or not that much left). */
static int grow(struct nf_report_stalls *s, size_t *left)
{
	size_t n = s->nslots ? 2 * s->nslots : 64;
	struct stall *old = s->slot;
	size_t oldn = s->nslots, more = (n - oldn) * sizeof(*old);

	if (more > *left || !(s->slot = calloc(n, sizeof(*s->slot)))) {
		s->slot = old;
		return -1;
	}
	*left -= more;
	s->nslots = n;
	for (size_t i = 0; i < oldn; i++)
		if (old[i].row)
			*find(s, old[i].row, old[i].ms) = old[i];
	free(old);
	return 0;
}

int nf_report_stalls_add(struct nf_report_stalls *s, size_t *left, uint32_t row, double ms,
			 unsigned long count)
{
	struct stall *e;

	if (ms == 0)
		ms = 0; /* -0 and 0 one key */
	if (s->nslots && (e = find(s, row + 1, ms))->row) {
		e->count += count;
		return 0;
	}
	if ((s->n + 1) * 2 > s->nslots && grow(s, left) < 0)
		return -1;
	e = find(s, row + 1, ms);
	*e = (struct stall){ .ms = ms, .row = row + 1, .count = count };
	s->n++;
	return 0;
}

static int cmp_stall(const void *a, const void *b)
{
	const struct stall *x = a, *y = b;

	if (x->row != y->row)
		return x->row < y->row ? -1 : 1;
	return x->ms < y->ms ? -1 : x->ms > y->ms;
}

/* The value at the k-th place (from 0) of the count-weighted run e[0..n). */
static double nth(const struct stall *e, size_t n, unsigned long k)
{
	size_t i = 0;

	while (i + 1 < n && k >= e[i].count)
		k -= e[i++].count;
	return e[i].ms;
}

void nf_report_stalls_medians(struct nf_report_stalls *s, double *median, size_t nrows)
{
	size_t i = 0, j, o = 0;

	for (size_t k = 0; k < s->nslots; k++) /* the entries to the front, then in order */
		if (s->slot[k].row)
			s->slot[o++] = s->slot[k];
	qsort(s->slot, o, sizeof(*s->slot), cmp_stall);
	for (; i < o; i = j) {
		unsigned long total = 0;

		for (j = i; j < o && s->slot[j].row == s->slot[i].row; j++)
			total += s->slot[j].count;
		if (s->slot[i].row - 1 < nrows)
			median[s->slot[i].row - 1] =
				total % 2 ? nth(s->slot + i, j - i, total / 2)
					  : (nth(s->slot + i, j - i, total / 2 - 1) +
					     nth(s->slot + i, j - i, total / 2)) / 2;
	}
	memset(s->slot, 0, s->nslots * sizeof(*s->slot)); /* spent: entries out of their slots */
	s->n = 0;
}
