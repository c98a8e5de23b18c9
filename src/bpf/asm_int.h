/*
 * asm_int.h - the assembler prog.c writes naglefix's program with
 * (asm.c): instructions appended one by one, jumps aimed at labels, each
 * jump's offset computed when the program is finished. Private to
 * src/bpf.
 */
#ifndef NF_BPF_ASM_INT_H
#define NF_BPF_ASM_INT_H

#include <stddef.h>
#include <linux/bpf.h>

/* A jump waiting for its label's place. */
struct nf_asm_fix {
	size_t pc;
	int label;
};

/* A program being written. After an error, every call does nothing and
 * nf_asm_finish returns that error. */
struct nf_asm {
	struct bpf_insn *insn;
	size_t n, cap;
	long *place;            /* place[label]: its pc, -1 while not placed */
	size_t nlabels, caplabels;
	struct nf_asm_fix *fix;
	size_t nfix, capfix;
	int err;                /* 0, or the first -ENOMEM met */
};

/* An empty program. */
void nf_asm_init(struct nf_asm *a);

/* Appends the instruction i. */
void nf_asm_emit(struct nf_asm *a, struct bpf_insn i);

/* Appends the jump i (any BPF_JMP or BPF_JMP32 shape) aimed at label. */
void nf_asm_jump(struct nf_asm *a, struct bpf_insn i, int label);

/* A new label, not placed yet (-1 when memory ran out: the error is kept). */
int nf_asm_label(struct nf_asm *a);

/* Places label at the next instruction appended. */
void nf_asm_place(struct nf_asm *a, int label);

/*
 * Fills in every jump's offset and hands the instructions over: *out
 * (malloc'd, the caller frees it) and *n. Returns 0, -ENOMEM, -EINVAL (a
 * label never placed) or -E2BIG (a jump longer than the 32,767
 * instructions an offset holds). a is freed in every case.
 */
int nf_asm_finish(struct nf_asm *a, struct bpf_insn **out, size_t *n);

/* Frees what a holds. */
void nf_asm_free(struct nf_asm *a);

#endif
