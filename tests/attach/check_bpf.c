/*
 * check_bpf.c - src/bpf's parts on their own, against the running
 * kernel: the assembler's jump offsets, the verifier's log kept for a
 * refused program, the state map read back from a loaded program, the
 * size limit of a policy, and the probe (a refusal seen as one: the
 * kernel's EINVAL for TCP_QUICKACK from sock_ops, as an older kernel
 * answers for TCP_NODELAY).
 *
 * and the setsockopt program: the verifier takes it and the sock_ops
 * program that marks (sockopt-load), each of its jumps lands where its
 * shape says (sockopt-offsets), this kernel has its hook (sockopt-hook).
 *
 * Usage: check_bpf CASE [CGROUP_ROOT]   (root: bpf(2) and cgroups)
 * Cases: asm-offsets, verifier-log, state-readback, rules-limit,
 * probe-nodelay, probe-refused, sockopt-load, sockopt-offsets,
 * sockopt-hook. Exit 0, 1 (FAIL line), 77 (SKIP).
 */
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/harness.h"
#include "bpf/nf_bpf.h"
#include "bpf/asm_int.h"
#include "bpf/insn_int.h"

/* Jumps forward and back get the distance to their label, counted by
 * the assembler; a label never placed and a jump too long are refused. */
static void asm_offsets(void)
{
	struct nf_asm a;
	struct bpf_insn *insn;
	size_t n;
	int fwd, back;

	nf_asm_init(&a);
	fwd = nf_asm_label(&a);
	back = nf_asm_label(&a);
	nf_asm_place(&a, back);
	nf_asm_jump(&a, NF_JMP_RAW(0), fwd);                     /* pc 0 */
	for (int i = 0; i < 3; i++)
		nf_asm_emit(&a, NF_MOV64_IMM(BPF_REG_0, i));     /* pc 1..3 */
	nf_asm_jump(&a, NF_JMP32_IMM(BPF_JEQ, BPF_REG_0, 7, 0), back); /* pc 4 */
	nf_asm_place(&a, fwd);
	nf_asm_emit(&a, NF_EXIT());                              /* pc 5 */
	CHECK(nf_asm_finish(&a, &insn, &n) == 0, "finish");
	CHECK(n == 6, "6 instructions, not %zu", n);
	CHECK(insn[0].off == 4, "forward: 0 -> 5 is +4, not %d", insn[0].off);
	CHECK(insn[4].off == -5, "backward: 4 -> 0 is -5, not %d", insn[4].off);
	free(insn);
	nf_asm_init(&a);
	nf_asm_jump(&a, NF_JMP_RAW(0), nf_asm_label(&a));
	CHECK(nf_asm_finish(&a, &insn, &n) == -EINVAL, "a label never placed");
	nf_asm_init(&a);
	fwd = nf_asm_label(&a);
	nf_asm_jump(&a, NF_JMP_RAW(0), fwd);
	for (int i = 0; i < 40000; i++)
		nf_asm_emit(&a, NF_MOV64_IMM(BPF_REG_0, 0));
	nf_asm_place(&a, fwd);
	CHECK(nf_asm_finish(&a, &insn, &n) == -E2BIG, "a jump over 40,000 instructions");
}

/* A program reading a register it never set: refused, with the
 * verifier's reason in the log. */
static void verifier_log(void)
{
	struct bpf_insn bad[] = { NF_MOV64_REG(BPF_REG_0, BPF_REG_2), NF_EXIT() };
	static char log[64 * 1024];
	int fd = nf_bpf_prog_load(NF_BPF_SOCK_OPS, bad, 2, log, sizeof(log));

	CHECK(fd == -EACCES, "refused with EACCES, not %d", fd);
	CHECK(strstr(log, "R2 !read_ok") != NULL, "the verifier's reason in the log: %s", log);
	CHECK(strcmp(nf_bpf_log_tail(log), "") != 0, "a last line");
}

/* A program built for a policy, loaded: its state map read back through
 * the program holds the text; the program is told to be naglefix's. */
static void state_readback(void)
{
	static const char text[] = "connect 10.0.0.0/8:80 nodelay\ndefault pass\n";
	static struct nf_bpf_state st;
	static char log[64 * 1024];
	struct nf_policy p;
	struct bpf_insn *insn;
	size_t n;
	int map, prog;

	CHECK(nf_policy_parse(&p, text, "t", log, sizeof(log)) == 0, "parse");
	map = nf_bpf_state_create("my.conf", text, strlen(text));
	CHECK(map >= 0, "state map: %s", strerror(-map));
	CHECK(nf_bpf_prog_build(&p, map, -1, TCP_NODELAY, &insn, &n) == 0, "build");
	prog = nf_bpf_prog_load(NF_BPF_SOCK_OPS, insn, n, log, sizeof(log));
	CHECK(prog >= 0, "load: %s: %s", strerror(-prog), log);
	close(map); /* the program holds it */
	CHECK(nf_bpf_state_of_prog(prog, &st) == 1, "naglefix's");
	CHECK(strcmp(st.source, "my.conf") == 0 && strcmp(st.text, text) == 0, "text back: %s", st.text);
	CHECK(st.counts.tried == 0 && st.counts.set == 0, "no connection counted yet");
	free(insn);
	close(prog);
	nf_policy_free(&p);
}

/* A policy of n IPv6 rules, built and loaded: 0, or the error. */
static int rules(int count)
{
	static char log[1024 * 1024];
	size_t len = (size_t)count * 48 + 32, n;
	char *text = malloc(len), *w = text;
	struct nf_policy p;
	struct bpf_insn *insn = NULL;
	int map, prog, rc;

	for (int i = 0; i < count; i++)
		w += sprintf(w, "connect [2001:db8:%x::/48]:%d nodelay\n", i, 1000 + i);
	CHECK(nf_policy_parse(&p, text, "t", log, sizeof(log)) == 0, "parse: %s", log);
	map = nf_bpf_state_create("t", "", 0);
	CHECK(map >= 0, "state map");
	rc = nf_bpf_prog_build(&p, map, -1, TCP_NODELAY, &insn, &n);
	if (rc == 0 && (prog = nf_bpf_prog_load(NF_BPF_SOCK_OPS, insn, n, log, sizeof(log))) >= 0)
		close(prog);
	else if (rc == 0)
		rc = prog;
	close(map);
	free(insn);
	free(text);
	nf_policy_free(&p);
	return rc;
}

/* 1,000 rules load; 5,000 are refused by the assembler with E2BIG
 * (a jump longer than an offset holds), before the kernel sees them. */
static void rules_limit(void)
{
	int rc = rules(1000);

	CHECK(rc == 0, "1,000 rules: %s", strerror(-rc));
	rc = rules(5000);
	CHECK(rc == -E2BIG, "5,000 rules: E2BIG, not %s", strerror(-rc));
}

static void probe(const char *root, int optname, int want)
{
	char why[1024];
	int err, rc = nf_bpf_probe(root, optname, &err, why, sizeof(why));

	CHECK(rc == want, "probe: %d, want %d (%s)", rc, want, why);
	if (want == 0)
		CHECK(err == -EINVAL, "bpf_setsockopt's error seen: %d, want -EINVAL", err);
	snprintf(why, sizeof(why), "%s/naglefix-probe.%d", root, (int)getpid());
	CHECK(access(why, F_OK) != 0, "the probe's cgroup %s is removed", why);
}

/* The map of marks and both programs of a policy with a rule of each
 * side loaded by the kernel (its verifier's log shown if not); the
 * state map held by both, the map of marks found from each. */
static void sockopt_load(void)
{
	static const char text[] = "connect 10.0.0.0/8:80 nodelay\naccept [::1]:* nodelay\n";
	static char log[64 * 1024];
	struct nf_policy p;
	struct bpf_insn *insn;
	size_t n;
	int map, marks, ops, opt, found;

	CHECK(nf_policy_parse(&p, text, "t", log, sizeof(log)) == 0, "parse");
	map = nf_bpf_state_create("t", text, strlen(text));
	marks = nf_bpf_marks_create();
	CHECK(map >= 0 && marks >= 0, "maps: %s, %s", strerror(-map), strerror(-marks));
	CHECK(nf_bpf_prog_build(&p, map, marks, TCP_NODELAY, &insn, &n) == 0, "build sock_ops");
	ops = nf_bpf_prog_load(NF_BPF_SOCK_OPS, insn, n, log, sizeof(log));
	CHECK(ops >= 0, "sock_ops with marks: %s: %s", strerror(-ops), log);
	free(insn);
	CHECK(nf_bpf_sockopt_build(map, marks, &insn, &n) == 0, "build setsockopt");
	opt = nf_bpf_prog_load(NF_BPF_SETSOCKOPT, insn, n, log, sizeof(log));
	CHECK(opt >= 0, "setsockopt: %s: %s", strerror(-opt), log);
	free(insn);
	close(map);
	close(marks);
	for (int i = 0; i < 2; i++) {
		static struct nf_bpf_state st;
		int prog = i ? opt : ops;

		CHECK(nf_bpf_state_of_prog(prog, &st) == 1, "program %d is naglefix's", i);
		found = nf_bpf_marks_of_prog(prog);
		CHECK(found >= 0, "program %d holds the map of marks: %s", i, strerror(-found));
		close(found);
	}
	close(ops);
	close(opt);
	nf_policy_free(&p);
}

/* The setsockopt program: every jump lands on "r0 = 1; exit" (the
 * kernel goes on with the call) or on the block after it that hands a
 * value longer than the kernel's copy back whole (optlen = 0, then
 * out), the two of the length checks there; one store of 1 into the
 * value. */
static void sockopt_offsets(void)
{
	struct bpf_insn *insn, ret1 = NF_MOV64_IMM(BPF_REG_0, 1), st1 = NF_ST_MEM(BPF_W, BPF_REG_7, 0, 1),
			       len0 = NF_STX_MEM(BPF_W, BPF_REG_6, BPF_REG_2,
						 offsetof(struct bpf_sockopt, optlen));
	size_t n, out = 0, jumps = 0, to_whole = 0, stores = 0;

	CHECK(nf_bpf_sockopt_build(3, 4, &insn, &n) == 0, "build");
	for (size_t pc = 0; pc + 1 < n && !out; pc++)
		if (memcmp(&insn[pc], &ret1, sizeof(ret1)) == 0 && insn[pc + 1].code == (BPF_JMP | BPF_EXIT))
			out = pc;
	CHECK(out > 0 && out + 5 == n, "r0 = 1; exit, then the 3 of whole, last (out %zu of %zu)", out, n);
	CHECK(memcmp(&insn[out + 3], &len0, sizeof(len0)) == 0, "whole: optlen = 0");
	for (size_t pc = 0; pc < n; pc++) {
		unsigned op = BPF_OP(insn[pc].code), cls = BPF_CLASS(insn[pc].code);
		long to = (long)pc + 1 + insn[pc].off;

		stores += memcmp(&insn[pc], &st1, sizeof(st1)) == 0;
		if ((cls != BPF_JMP && cls != BPF_JMP32) || op == BPF_CALL || op == BPF_EXIT)
			continue;
		jumps++;
		to_whole += to == (long)out + 2;
		CHECK(to == (long)out || to == (long)out + 2, "jump at %zu lands at %ld", pc, to);
	}
	CHECK(jumps == 9, "9 jumps (length 3, level, option, mark, bound, value, whole's), not %zu",
	      jumps);
	CHECK(to_whole == 2, "2 jumps to whole (too long), not %zu", to_whole);
	CHECK(stores == 1, "one store of 1 into the value, not %zu", stores);
	free(insn);
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";
	const char *root = argc > 2 ? argv[2] : "/sys/fs/cgroup";

	ct_set_prog(argv[0]);
	ct_variant = c;
	ct_arm_timeout();
	if (strcmp(c, "asm-offsets") == 0)
		asm_offsets();
	else if (strcmp(c, "verifier-log") == 0)
		verifier_log();
	else if (strcmp(c, "state-readback") == 0)
		state_readback();
	else if (strcmp(c, "rules-limit") == 0)
		rules_limit();
	else if (strcmp(c, "probe-nodelay") == 0)
		probe(root, TCP_NODELAY, 1);
	else if (strcmp(c, "probe-refused") == 0)
		probe(root, TCP_QUICKACK, 0);
	else if (strcmp(c, "sockopt-load") == 0)
		sockopt_load();
	else if (strcmp(c, "sockopt-offsets") == 0)
		sockopt_offsets();
	else if (strcmp(c, "sockopt-hook") == 0)
		CHECK(nf_bpf_sockopt_hook() == 1, "this kernel (>= 5.3) has the setsockopt hook");
	else
		CHECK(0, "unknown case '%s'", c);
	return 0;
}
