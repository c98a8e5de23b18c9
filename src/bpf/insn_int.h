/*
 * insn_int.h - one macro per shape of BPF instruction, as the kernel's
 * include/linux/filter.h writes them (BPF_MOV64_IMM there is NF_MOV64_IMM
 * here), for prog.c and the tests' programs. Private to src/bpf.
 *
 * A jump's offset is never written here by hand: prog.c's assembler
 * (asm.c) emits jumps to labels and computes each offset when the label
 * is placed. NF_JMP_RAW is the one shape that takes an offset, for it.
 */
#ifndef NF_BPF_INSN_INT_H
#define NF_BPF_INSN_INT_H

#include <linux/bpf.h>

#define NF_INSN(CODE, DST, SRC, OFF, IMM)                                                   \
	((struct bpf_insn){ .code = (CODE), .dst_reg = (DST), .src_reg = (SRC),              \
			    .off = (__s16)(OFF), .imm = (__s32)(IMM) })

/* dst = src, dst = imm (64-bit) */
#define NF_MOV64_REG(DST, SRC) NF_INSN(BPF_ALU64 | BPF_MOV | BPF_X, DST, SRC, 0, 0)
#define NF_MOV64_IMM(DST, IMM) NF_INSN(BPF_ALU64 | BPF_MOV | BPF_K, DST, 0, 0, IMM)

/* dst op= src, 64-bit */
#define NF_ALU64_REG(OP, DST, SRC) NF_INSN(BPF_ALU64 | BPF_OP(OP) | BPF_X, DST, SRC, 0, 0)

/* dst op= imm: 64-bit (the immediate sign-extended) and 32-bit (the
 * upper half of dst cleared) */
#define NF_ALU64_IMM(OP, DST, IMM) NF_INSN(BPF_ALU64 | BPF_OP(OP) | BPF_K, DST, 0, 0, IMM)
#define NF_ALU32_IMM(OP, DST, IMM) NF_INSN(BPF_ALU | BPF_OP(OP) | BPF_K, DST, 0, 0, IMM)

/* dst = the LEN-bit value of dst read as big-endian (network order):
 * swapped on a little-endian machine, its upper bits cleared */
#define NF_ENDIAN_BE(DST, LEN) NF_INSN(BPF_ALU | BPF_END | BPF_TO_BE, DST, 0, 0, LEN)

/* dst = *(SIZE *)(src + off); *(SIZE *)(dst + off) = src or imm */
#define NF_LDX_MEM(SIZE, DST, SRC, OFF) NF_INSN(BPF_LDX | BPF_SIZE(SIZE) | BPF_MEM, DST, SRC, OFF, 0)
#define NF_STX_MEM(SIZE, DST, SRC, OFF) NF_INSN(BPF_STX | BPF_SIZE(SIZE) | BPF_MEM, DST, SRC, OFF, 0)
#define NF_ST_MEM(SIZE, DST, OFF, IMM) NF_INSN(BPF_ST | BPF_SIZE(SIZE) | BPF_MEM, DST, 0, OFF, IMM)

/* *(SIZE *)(dst + off) += src, atomically (BPF_ADD is 0: the same code
 * as the older BPF_XADD, so any kernel with sock_ops takes it) */
#define NF_ATOMIC_ADD(SIZE, DST, SRC, OFF)                                                   \
	NF_INSN(BPF_STX | BPF_SIZE(SIZE) | BPF_ATOMIC, DST, SRC, OFF, BPF_ADD)

/* dst = the address of byte OFF of the value of the array map FD's
 * entry 0: two instructions (the kernel's BPF_LD_MAP_VALUE) */
#define NF_LD_MAP_VALUE_1(DST, FD) NF_INSN(BPF_LD | BPF_DW | BPF_IMM, DST, BPF_PSEUDO_MAP_VALUE, 0, FD)
#define NF_LD_MAP_VALUE_2(OFF) NF_INSN(0, 0, 0, 0, OFF)

/* dst = the map FD (its descriptor, which the kernel turns into the
 * map): two instructions (the kernel's BPF_LD_MAP_FD) */
#define NF_LD_MAP_FD_1(DST, FD) NF_INSN(BPF_LD | BPF_DW | BPF_IMM, DST, BPF_PSEUDO_MAP_FD, 0, FD)
#define NF_LD_MAP_FD_2() NF_INSN(0, 0, 0, 0, 0)

/* if ((u32)dst OP imm) goto pc + 1 + off: the 32-bit comparison, so an
 * address such as 0xc0a80000 compares as the u32 it is (BPF_JMP would
 * compare the 64-bit register with the immediate sign-extended) */
#define NF_JMP32_IMM(OP, DST, IMM, OFF) NF_INSN(BPF_JMP32 | BPF_OP(OP) | BPF_K, DST, 0, OFF, IMM)

/* if (dst OP imm) goto pc + 1 + off: the 64-bit comparison, the one the
 * verifier reads as a null check of a pointer (imm 0) */
#define NF_JMP_IMM(OP, DST, IMM, OFF) NF_INSN(BPF_JMP | BPF_OP(OP) | BPF_K, DST, 0, OFF, IMM)

/* if (dst OP src) goto pc + 1 + off: 64-bit, e.g. two pointers */
#define NF_JMP_REG(OP, DST, SRC, OFF) NF_INSN(BPF_JMP | BPF_OP(OP) | BPF_X, DST, SRC, OFF, 0)

/* goto pc + 1 + off */
#define NF_JMP_RAW(OFF) NF_INSN(BPF_JMP | BPF_JA, 0, 0, OFF, 0)

/* call the kernel's helper FUNC (BPF_FUNC_...); exit with r0 */
#define NF_CALL(FUNC) NF_INSN(BPF_JMP | BPF_CALL, 0, 0, 0, FUNC)
#define NF_EXIT() NF_INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

#endif
