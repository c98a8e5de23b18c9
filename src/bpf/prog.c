/*
 * prog.c - naglefix's sock_ops program, compiled from a policy's rules:
 * the rules become code (one test after another, first match wins, as
 * nf_policy_match reads them), not data a fixed program looks up. So the
 * program is the policy: a new attach puts a new program in the old one's
 * place in one step (nf_bpf_cgroup_attach), no map is ever half written,
 * and `bpftool prog dump xlated` shows the rules as the kernel runs them.
 *
 * The program, for a connection being established:
 *
 *       r6 = ctx
 *       if op == ACTIVE_ESTABLISHED  goto connect    (matched on the peer)
 *       if op == PASSIVE_ESTABLISHED goto accept     (on its own end)
 *   out: return 1
 *   connect:                          accept:
 *       the peer's address and port       its own address and port
 *       rule 1 of connect: no match, on   rule 1 of accept ...
 *       rule 2 ...
 *       the default                       the default
 *   set: count; bpf_setsockopt(SOL_TCP, TCP_NODELAY, 1); count;
 *        the socket marked for the setsockopt program; goto out
 *
 * An address is read as nf_policy_match reads it: an IPv6 socket's
 * IPv4-mapped address (::ffff:a.b.c.d) as IPv4. Registers while matching:
 * r7 the kind (4 or 6), r8 the port, r9 the address's last 32 bits (the
 * whole of an IPv4 one), its first three words on the stack; each word in
 * host order (NF_ENDIAN_BE), as the rules' words are written here.
 */
#include "nf_bpf.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <sys/socket.h>

#include "asm_int.h"
#include "insn_int.h"

#define R0 BPF_REG_0
#define R1 BPF_REG_1
#define R2 BPF_REG_2
#define R3 BPF_REG_3
#define R4 BPF_REG_4
#define R5 BPF_REG_5
#define R_CTX  BPF_REG_6
#define R_KIND BPF_REG_7
#define R_PORT BPF_REG_8
#define R_LAST BPF_REG_9
#define R_FP   BPF_REG_10

#define STACK_WORD(i) (-4 * ((i) + 1)) /* the address's words 0..2 */
#define STACK_OPTVAL  (-16)            /* bpf_setsockopt's value */

#define CTX(field) ((__s16)offsetof(struct bpf_sock_ops, field))
#define STATE(field) ((__s32)offsetof(struct nf_bpf_state, counts.field))

struct gen {
	struct nf_asm a;
	int map_fd, marks_fd, optname;
	int out, set; /* labels */
};

/* The 32-bit word i (0..3) of an endpoint's address, in host order. */
static uint32_t word(const struct nf_endpoint *ep, unsigned i)
{
	const uint8_t *b = ep->addr + 4 * i;

	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* The significant bits of word i of a prefix of length prefix. */
static unsigned word_bits(unsigned prefix, unsigned i)
{
	if (prefix <= 32 * i)
		return 0;
	return prefix - 32 * i >= 32 ? 32 : prefix - 32 * i;
}

/* IPv6: the four words into the stack and R_LAST, then the kind. */
static void load_v6(struct gen *g, __s16 ip6, int l_port)
{
	struct nf_asm *a = &g->a;

	for (int i = 0; i < 4; i++) {
		int reg = i < 3 ? R2 + i : R_LAST;

		nf_asm_emit(a, NF_LDX_MEM(BPF_W, reg, R_CTX, ip6 + 4 * i));
		nf_asm_emit(a, NF_ENDIAN_BE(reg, 32));
		if (i < 3)
			nf_asm_emit(a, NF_STX_MEM(BPF_W, R_FP, reg, STACK_WORD(i)));
	}
	nf_asm_emit(a, NF_MOV64_IMM(R_KIND, 6));
	nf_asm_jump(a, NF_JMP32_IMM(BPF_JNE, R2, 0, 0), l_port);
	nf_asm_jump(a, NF_JMP32_IMM(BPF_JNE, R3, 0, 0), l_port);
	nf_asm_jump(a, NF_JMP32_IMM(BPF_JNE, R4, 0xffff, 0), l_port);
	nf_asm_emit(a, NF_MOV64_IMM(R_KIND, 4)); /* ::ffff:a.b.c.d: IPv4 */
	nf_asm_jump(a, NF_JMP_RAW(0), l_port);
}

/* The kind, address and port of one end (remote: the peer's) into the
 * registers; an end of no IP family goes to l_default. */
static void load_end(struct gen *g, int remote, int l_default)
{
	struct nf_asm *a = &g->a;
	int l_v4 = nf_asm_label(a), l_port = nf_asm_label(a);

	for (int i = 0; i < 3; i++)
		nf_asm_emit(a, NF_ST_MEM(BPF_W, R_FP, STACK_WORD(i), 0));
	nf_asm_emit(a, NF_LDX_MEM(BPF_W, R2, R_CTX, CTX(family)));
	nf_asm_jump(a, NF_JMP32_IMM(BPF_JEQ, R2, AF_INET, 0), l_v4);
	nf_asm_jump(a, NF_JMP32_IMM(BPF_JNE, R2, AF_INET6, 0), l_default);
	load_v6(g, remote ? CTX(remote_ip6) : CTX(local_ip6), l_port);
	nf_asm_place(a, l_v4);
	nf_asm_emit(a, NF_LDX_MEM(BPF_W, R_LAST, R_CTX, remote ? CTX(remote_ip4) : CTX(local_ip4)));
	nf_asm_emit(a, NF_ENDIAN_BE(R_LAST, 32));
	nf_asm_emit(a, NF_MOV64_IMM(R_KIND, 4));
	nf_asm_place(a, l_port);
	/* remote_port is the network-order port (the kernel shifts it into the
	 * word's upper half on a little-endian machine); local_port host order */
	nf_asm_emit(a, NF_LDX_MEM(BPF_W, R_PORT, R_CTX, remote ? CTX(remote_port) : CTX(local_port)));
	if (remote)
		nf_asm_emit(a, NF_ENDIAN_BE(R_PORT, 32));
}

/* Word i of the connection's address into R2. */
static void fetch_word(struct gen *g, int kind, unsigned i)
{
	if (kind == 4 || i == 3)
		nf_asm_emit(&g->a, NF_MOV64_REG(R2, R_LAST));
	else
		nf_asm_emit(&g->a, NF_LDX_MEM(BPF_W, R2, R_FP, STACK_WORD(i)));
}

/* Jumps to next unless the connection's address is in ep's prefix. */
static void match_address(struct gen *g, const struct nf_endpoint *ep, int next)
{
	int kind = ep->family == AF_INET ? 4 : 6;
	unsigned words = kind == 4 ? 1 : 4;

	nf_asm_jump(&g->a, NF_JMP32_IMM(BPF_JNE, R_KIND, kind, 0), next);
	for (unsigned i = 0; i < words; i++) {
		unsigned bits = word_bits(ep->prefix, i);
		uint32_t mask = bits == 32 ? 0xffffffffu : ~(0xffffffffu >> bits);

		if (bits == 0)
			break;
		fetch_word(g, kind, i);
		if (bits < 32)
			nf_asm_emit(&g->a, NF_ALU32_IMM(BPF_AND, R2, (__s32)mask));
		nf_asm_jump(&g->a, NF_JMP32_IMM(BPF_JNE, R2, (__s32)word(ep, i), 0), next);
	}
}

/* A rule: on a match, to set (nodelay) or out (any other action). */
static void rule(struct gen *g, const struct nf_rule *r)
{
	struct nf_asm *a = &g->a;
	int next = nf_asm_label(a);

	if (r->ep.family)
		match_address(g, &r->ep, next);
	if (r->ep.port_lo > 0)
		nf_asm_jump(a, NF_JMP32_IMM(BPF_JLT, R_PORT, r->ep.port_lo, 0), next);
	if (r->ep.port_hi < 65535)
		nf_asm_jump(a, NF_JMP32_IMM(BPF_JGT, R_PORT, r->ep.port_hi, 0), next);
	nf_asm_jump(a, NF_JMP_RAW(0), r->opts.action == NF_ACT_NODELAY ? g->set : g->out);
	nf_asm_place(a, next);
}

/* One side's rules, in the file's order, then the default (with no
 * rule, the default alone: the connection's ends are not read). */
static void side(struct gen *g, const struct nf_policy *p, enum nf_side s, int label)
{
	int l_default = nf_asm_label(&g->a);
	size_t n = 0;

	for (size_t i = 0; i < p->nrules; i++)
		n += p->rules[i].side == s;
	nf_asm_place(&g->a, label);
	if (n > 0)
		load_end(g, s == NF_SIDE_CONNECT, l_default);
	for (size_t i = 0; i < p->nrules; i++)
		if (p->rules[i].side == s)
			rule(g, &p->rules[i]);
	nf_asm_place(&g->a, l_default);
	nf_asm_jump(&g->a, NF_JMP_RAW(0), p->dflt.action == NF_ACT_NODELAY ? g->set : g->out);
}

/* Adds 1 (in R2) to the counter at off of the state map's value. */
static void count(struct gen *g, __s32 off)
{
	nf_asm_emit(&g->a, NF_LD_MAP_VALUE_1(R1, g->map_fd));
	nf_asm_emit(&g->a, NF_LD_MAP_VALUE_2(off));
	nf_asm_emit(&g->a, NF_ATOMIC_ADD(BPF_DW, R1, R2, 0));
}

/* The socket marked for the setsockopt program (marks.c): its entry
 * made in the map of marks, 1; then out (a listener's child that is no
 * full socket yet, or no memory for the entry: left unmarked). */
static void mark(struct gen *g)
{
	struct nf_asm *a = &g->a;

	nf_asm_emit(a, NF_LDX_MEM(BPF_DW, R2, R_CTX, CTX(sk)));
	nf_asm_jump(a, NF_JMP_IMM(BPF_JEQ, R2, 0, 0), g->out);
	nf_asm_emit(a, NF_LD_MAP_FD_1(R1, g->marks_fd));
	nf_asm_emit(a, NF_LD_MAP_FD_2());
	nf_asm_emit(a, NF_MOV64_IMM(R3, 0));
	nf_asm_emit(a, NF_MOV64_IMM(R4, BPF_SK_STORAGE_GET_F_CREATE));
	nf_asm_emit(a, NF_CALL(BPF_FUNC_sk_storage_get));
	nf_asm_jump(a, NF_JMP_IMM(BPF_JEQ, R0, 0, 0), g->out);
	nf_asm_emit(a, NF_ST_MEM(BPF_W, R0, 0, 1));
}

/* set: bpf_setsockopt(ctx, SOL_TCP, optname, &1, 4), counted, then the
 * socket marked (with a map of marks). */
static void set_option(struct gen *g)
{
	struct nf_asm *a = &g->a;
	int failed = nf_asm_label(a);

	nf_asm_place(a, g->set);
	nf_asm_emit(a, NF_MOV64_IMM(R2, 1));
	count(g, STATE(tried));
	nf_asm_emit(a, NF_ST_MEM(BPF_W, R_FP, STACK_OPTVAL, 1));
	nf_asm_emit(a, NF_MOV64_REG(R1, R_CTX));
	nf_asm_emit(a, NF_MOV64_IMM(R2, SOL_TCP));
	nf_asm_emit(a, NF_MOV64_IMM(R3, g->optname));
	nf_asm_emit(a, NF_MOV64_REG(R4, R_FP));
	nf_asm_emit(a, NF_ALU64_IMM(BPF_ADD, R4, STACK_OPTVAL));
	nf_asm_emit(a, NF_MOV64_IMM(R5, 4));
	nf_asm_emit(a, NF_CALL(BPF_FUNC_setsockopt));
	nf_asm_emit(a, NF_MOV64_IMM(R2, 1));
	nf_asm_jump(a, NF_JMP32_IMM(BPF_JNE, R0, 0, 0), failed);
	count(g, STATE(set));
	if (g->marks_fd >= 0)
		mark(g);
	nf_asm_jump(a, NF_JMP_RAW(0), g->out);
	nf_asm_place(a, failed);
	count(g, STATE(failed));
	nf_asm_emit(a, NF_LD_MAP_VALUE_1(R1, g->map_fd));
	nf_asm_emit(a, NF_LD_MAP_VALUE_2(STATE(last_err)));
	nf_asm_emit(a, NF_STX_MEM(BPF_W, R1, R0, 0));
	nf_asm_jump(a, NF_JMP_RAW(0), g->out);
}

int nf_bpf_prog_build(const struct nf_policy *p, int map_fd, int marks_fd, int optname,
		      struct bpf_insn **out, size_t *n)
{
	struct gen g = { .map_fd = map_fd, .marks_fd = marks_fd, .optname = optname };
	int l_connect, l_accept;

	nf_asm_init(&g.a);
	g.out = nf_asm_label(&g.a);
	g.set = nf_asm_label(&g.a);
	l_connect = nf_asm_label(&g.a);
	l_accept = nf_asm_label(&g.a);
	nf_asm_emit(&g.a, NF_MOV64_REG(R_CTX, R1));
	nf_asm_emit(&g.a, NF_LDX_MEM(BPF_W, R2, R_CTX, CTX(op)));
	nf_asm_jump(&g.a, NF_JMP32_IMM(BPF_JEQ, R2, BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB, 0), l_connect);
	nf_asm_jump(&g.a, NF_JMP32_IMM(BPF_JEQ, R2, BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB, 0), l_accept);
	nf_asm_place(&g.a, g.out);
	nf_asm_emit(&g.a, NF_MOV64_IMM(R0, 1));
	nf_asm_emit(&g.a, NF_EXIT());
	side(&g, p, NF_SIDE_CONNECT, l_connect);
	side(&g, p, NF_SIDE_ACCEPT, l_accept);
	set_option(&g);
	return nf_asm_finish(&g.a, out, n);
}
