/*
 * index.c - the connection table's index (wire_int.h, struct nf_index):
 * 64-bit entries in one array, linear probing from a home slot taken
 * from the entry's own tag, so that growth and deletion move entries
 * without a look at what they name. Deletion shifts the entries after
 * it back (no tombstones: a lookup's run never lengthens with churn).
 */
#include "wire_int.h"

#include <stdlib.h>

int nf_index_init(struct nf_index *ix, uint32_t n)
{
	ix->e = calloc(n, sizeof(*ix->e));
	ix->n = n;
	ix->used = 0;
	return ix->e ? 0 : -1;
}

void nf_index_free(struct nf_index *ix)
{
	free(ix->e);
	ix->e = NULL;
	ix->n = ix->used = 0;
}

/* Puts entry e (not there yet) into the first empty slot of its run (an
 * entry's upper half is its tag, so its home is nf_index_home of it). */
static void place(struct nf_index *ix, uint64_t e)
{
	uint32_t pos = nf_index_home(ix, e);

	while (ix->e[pos])
		pos = (pos + 1) & (ix->n - 1);
	ix->e[pos] = e;
}

/* Doubles the index. 0, or -1 (no memory: it stays as it was). */
static int grow(struct nf_index *ix)
{
	struct nf_index big;
	uint32_t n = ix->n * 2;

	if (n == 0 || !(big.e = nf_wire_zalloc((size_t)n * sizeof(*big.e))))
		return -1;
	big.n = n;
	for (uint32_t i = 0; i < ix->n; i++)
		if (ix->e[i])
			place(&big, ix->e[i]);
	big.used = ix->used;
	big.gen = ix->gen + 1;
	free(ix->e);
	*ix = big;
	return 0;
}

int nf_index_add(struct nf_index *ix, uint64_t hash, uint32_t value)
{
	/* past 3/4 it grows; failing that it fills up to one empty slot
	 * (a run always ends) */
	if ((uint64_t)(ix->used + 1) * 4 > (uint64_t)ix->n * 3 && grow(ix) < 0 &&
	    ix->used + 1 >= ix->n)
		return -1;
	place(ix, (uint64_t)nf_index_tag(hash) << 32 | value);
	ix->used++;
	ix->gen++;
	return 0;
}

/* Is slot k's home h out of the cyclic range (i, j], so that its entry
 * may move back to the hole at i? */
static int may_fill(uint32_t h, uint32_t i, uint32_t j)
{
	return i <= j ? h <= i || h > j : h <= i && h > j;
}

void nf_index_del(struct nf_index *ix, uint64_t hash, uint32_t value)
{
	uint32_t mask = ix->n - 1, i = nf_index_home(ix, hash), j;
	uint64_t want = (uint64_t)nf_index_tag(hash) << 32 | value;

	while (ix->e[i] != want) {
		if (!ix->e[i])
			return; /* not there: nothing to do */
		i = (i + 1) & mask;
	}
	for (j = (i + 1) & mask; ix->e[j]; j = (j + 1) & mask)
		if (may_fill(nf_index_home(ix, ix->e[j]), i, j)) {
			ix->e[i] = ix->e[j];
			i = j;
		}
	ix->e[i] = 0;
	ix->used--;
	ix->gen++;
}
