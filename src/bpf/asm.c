/*
 * asm.c - appending instructions, aiming jumps at labels and computing
 * their offsets at the end (asm_int.h): so no offset of naglefix's
 * program is counted by hand.
 */
#include "asm_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Makes room for one more element of size sz in *v (of *cap). */
static int grow(void **v, size_t *cap, size_t n, size_t sz)
{
	size_t c = *cap ? 2 * *cap : 64;
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*v, c * sz);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

void nf_asm_init(struct nf_asm *a)
{
	memset(a, 0, sizeof(*a));
}

void nf_asm_emit(struct nf_asm *a, struct bpf_insn i)
{
	if (a->err || (a->err = grow((void **)&a->insn, &a->cap, a->n, sizeof(i))) < 0)
		return;
	a->insn[a->n++] = i;
}

void nf_asm_jump(struct nf_asm *a, struct bpf_insn i, int label)
{
	if (a->err || (a->err = grow((void **)&a->fix, &a->capfix, a->nfix, sizeof(*a->fix))) < 0)
		return;
	a->fix[a->nfix++] = (struct nf_asm_fix){ .pc = a->n, .label = label };
	nf_asm_emit(a, i);
}

int nf_asm_label(struct nf_asm *a)
{
	if (a->err ||
	    (a->err = grow((void **)&a->place, &a->caplabels, a->nlabels, sizeof(*a->place))) < 0)
		return -1;
	a->place[a->nlabels] = -1;
	return (int)a->nlabels++;
}

void nf_asm_place(struct nf_asm *a, int label)
{
	if (!a->err && label >= 0 && (size_t)label < a->nlabels)
		a->place[label] = (long)a->n;
}

/* Each jump's offset: its label's place from the instruction after it. */
static int resolve(struct nf_asm *a)
{
	for (size_t i = 0; i < a->nfix; i++) {
		const struct nf_asm_fix *f = &a->fix[i];
		long to, off;

		if (f->label < 0 || (size_t)f->label >= a->nlabels || a->place[f->label] < 0)
			return -EINVAL;
		to = a->place[f->label];
		off = to - (long)f->pc - 1;
		if (off < INT16_MIN || off > INT16_MAX)
			return -E2BIG;
		a->insn[f->pc].off = (__s16)off;
	}
	return 0;
}

int nf_asm_finish(struct nf_asm *a, struct bpf_insn **out, size_t *n)
{
	int rc = a->err ? a->err : resolve(a);

	if (rc == 0) {
		*out = a->insn;
		*n = a->n;
		a->insn = NULL;
	}
	nf_asm_free(a);
	return rc;
}

void nf_asm_free(struct nf_asm *a)
{
	free(a->insn);
	free(a->place);
	free(a->fix);
	nf_asm_init(a);
}
