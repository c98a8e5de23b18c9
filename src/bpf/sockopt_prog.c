/*
 * sockopt_prog.c - naglefix's setsockopt program (nf_bpf.h), attached
 * beside the sock_ops program (Linux 5.3's BPF_CGROUP_SETSOCKOPT): it
 * keeps TCP_NODELAY on where the sock_ops program set it, against the
 * program's own setsockopt(TCP_NODELAY, 0) after connecting (Python's
 * create_connection then setsockopt, Java's new Socket then
 * setTcpNoDelay(false), Go's Dial then SetNoDelay(false)).
 *
 * Which sockets: those the sock_ops program marked (marks.c) when the
 * policy's rules gave them nodelay at establishment, so the decision is
 * that program's, made on the right end (connect: the peer; accept: its
 * own), never made a second time here. A socket not yet connected has
 * no mark: its call goes through, and its establishment decides (the
 * sock_ops program sets TCP_NODELAY then, for the peers the rules
 * select, whatever the program set before).
 *
 *       r6 = ctx
 *       if optlen < 4              goto out   (the kernel's EINVAL stays)
 *       if optlen > 0xffff         goto whole
 *       if optval + optlen > optval_end goto whole
 *       if level != SOL_TCP        goto out
 *       if optname != TCP_NODELAY  goto out
 *       if !sk_storage_get(marks, sk, 0, 0) goto out
 *       if optval + 4 > optval_end goto out
 *       if *(u32 *)optval != 0     goto out   (on already)
 *       *(u32 *)optval = 1; count kept
 *   out: return 1                               (the kernel goes on)
 *   whole: optlen = 0; goto out
 *
 * Return 1 and optlen untouched: the kernel's own setsockopt runs on
 * the (rewritten) value, so its errors and every other option stay its
 * own. A value longer than the copy the kernel made for the programs (a
 * page) is handed back whole: optlen 0 tells the kernel to use the
 * caller's own bytes, as the kernel's documentation of these programs
 * asks (kernels before the change that ignores such a buffer by itself,
 * Linux 6.5 by our reading, answer EFAULT otherwise).
 */
#include "nf_bpf.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <unistd.h>

#include "asm_int.h"
#include "insn_int.h"

#define R0 BPF_REG_0
#define R1 BPF_REG_1
#define R2 BPF_REG_2
#define R3 BPF_REG_3
#define R4 BPF_REG_4
#define R_CTX BPF_REG_6
#define R_VAL BPF_REG_7
#define R_END BPF_REG_8

#define CTX(field) ((__s16)offsetof(struct bpf_sockopt, field))
#define STATE(field) ((__s32)offsetof(struct nf_bpf_state, counts.field))

/* Jumps to out if optlen < 4, to whole if the value is longer than the
 * kernel's copy of it. */
static void the_length(struct nf_asm *a, int out, int whole)
{
	nf_asm_emit(a, NF_LDX_MEM(BPF_W, R4, R_CTX, CTX(optlen)));
	nf_asm_jump(a, NF_JMP32_IMM(BPF_JSLT, R4, 4, 0), out);
	nf_asm_jump(a, NF_JMP32_IMM(BPF_JGT, R4, 0xffff, 0), whole);
	nf_asm_emit(a, NF_LDX_MEM(BPF_DW, R2, R_CTX, CTX(optval)));
	nf_asm_emit(a, NF_LDX_MEM(BPF_DW, R3, R_CTX, CTX(optval_end)));
	nf_asm_emit(a, NF_ALU64_REG(BPF_ADD, R2, R4));
	nf_asm_jump(a, NF_JMP_REG(BPF_JGT, R2, R3, 0), whole);
}

/* Jumps to out unless the call is setsockopt(SOL_TCP, TCP_NODELAY). */
static void the_call(struct nf_asm *a, int out)
{
	nf_asm_emit(a, NF_LDX_MEM(BPF_W, R2, R_CTX, CTX(level)));
	nf_asm_jump(a, NF_JMP32_IMM(BPF_JNE, R2, SOL_TCP, 0), out);
	nf_asm_emit(a, NF_LDX_MEM(BPF_W, R2, R_CTX, CTX(optname)));
	nf_asm_jump(a, NF_JMP32_IMM(BPF_JNE, R2, TCP_NODELAY, 0), out);
}

/* Jumps to out unless the socket carries the sock_ops program's mark. */
static void the_mark(struct nf_asm *a, int marks_fd, int out)
{
	nf_asm_emit(a, NF_LD_MAP_FD_1(R1, marks_fd));
	nf_asm_emit(a, NF_LD_MAP_FD_2());
	nf_asm_emit(a, NF_LDX_MEM(BPF_DW, R2, R_CTX, CTX(sk)));
	nf_asm_emit(a, NF_MOV64_IMM(R3, 0));
	nf_asm_emit(a, NF_MOV64_IMM(R4, 0)); /* look only: no mark made here */
	nf_asm_emit(a, NF_CALL(BPF_FUNC_sk_storage_get));
	nf_asm_jump(a, NF_JMP_IMM(BPF_JEQ, R0, 0, 0), out);
}

/* The value 0 made 1, counted; to out if it is not 0 or not 4 bytes. */
static void the_value(struct nf_asm *a, int map_fd, int out)
{
	nf_asm_emit(a, NF_LDX_MEM(BPF_DW, R_VAL, R_CTX, CTX(optval)));
	nf_asm_emit(a, NF_LDX_MEM(BPF_DW, R_END, R_CTX, CTX(optval_end)));
	nf_asm_emit(a, NF_MOV64_REG(R2, R_VAL));
	nf_asm_emit(a, NF_ALU64_IMM(BPF_ADD, R2, 4));
	nf_asm_jump(a, NF_JMP_REG(BPF_JGT, R2, R_END, 0), out);
	nf_asm_emit(a, NF_LDX_MEM(BPF_W, R2, R_VAL, 0));
	nf_asm_jump(a, NF_JMP32_IMM(BPF_JNE, R2, 0, 0), out);
	nf_asm_emit(a, NF_ST_MEM(BPF_W, R_VAL, 0, 1));
	nf_asm_emit(a, NF_MOV64_IMM(R2, 1));
	nf_asm_emit(a, NF_LD_MAP_VALUE_1(R1, map_fd));
	nf_asm_emit(a, NF_LD_MAP_VALUE_2(STATE(kept)));
	nf_asm_emit(a, NF_ATOMIC_ADD(BPF_DW, R1, R2, 0));
}

int nf_bpf_sockopt_build(int map_fd, int marks_fd, struct bpf_insn **out, size_t *n)
{
	struct nf_asm a;
	int l_out, l_whole;

	nf_asm_init(&a);
	l_out = nf_asm_label(&a);
	l_whole = nf_asm_label(&a);
	nf_asm_emit(&a, NF_MOV64_REG(R_CTX, R1));
	the_length(&a, l_out, l_whole);
	the_call(&a, l_out);
	the_mark(&a, marks_fd, l_out);
	the_value(&a, map_fd, l_out);
	nf_asm_place(&a, l_out);
	nf_asm_emit(&a, NF_MOV64_IMM(R0, 1));
	nf_asm_emit(&a, NF_EXIT());
	nf_asm_place(&a, l_whole);
	nf_asm_emit(&a, NF_MOV64_IMM(R2, 0));
	nf_asm_emit(&a, NF_STX_MEM(BPF_W, R_CTX, R2, CTX(optlen)));
	nf_asm_jump(&a, NF_JMP_RAW(0), l_out);
	return nf_asm_finish(&a, out, n);
}

int nf_bpf_sockopt_hook(void)
{
	const struct bpf_insn ret1[] = { NF_MOV64_IMM(R0, 1), NF_EXIT() };
	char log[1] = "";
	int fd = nf_bpf_prog_load(NF_BPF_SETSOCKOPT, ret1, 2, log, sizeof(log));

	if (fd >= 0) {
		close(fd);
		return 1;
	}
	return fd == -EINVAL ? 0 : fd;
}
