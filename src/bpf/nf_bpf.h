/*
 * nf_bpf.h - naglefix's kernel program (src/bpf/): a sock_ops program,
 * assembled here from a policy's rules, that sets TCP_NODELAY on each TCP
 * connection of a cgroup as it is established, and what it takes to put
 * it on a cgroup, find it there and take it off, through bpf(2) alone.
 *
 *   prog.c         the program: the rules compiled into instructions
 *   state.c        its state map: the policy's text and its counters
 *   sys.c          the bpf(2) calls
 *   cgroup_prog.c  the programs on one cgroup: naglefix's found,
 *                  attached, replaced, detached; the others named
 *   probe.c        whether this kernel lets sock_ops set TCP_NODELAY
 *
 * Every function returns 0 (or a descriptor) or a negative errno unless
 * it says otherwise; none prints.
 */
#ifndef NF_BPF_H
#define NF_BPF_H

#include <stddef.h>
#include <stdint.h>
#include <linux/bpf.h>

#include "nf_policy.h"

/* The names the kernel shows (bpftool prog, bpftool map). */
#define NF_BPF_PROG_NAME "naglefix"
#define NF_BPF_MAP_NAME  "naglefix_state"

/* The first bytes of the state map's value: "this is naglefix's". */
#define NF_BPF_MAGIC "naglefix attach1"

#define NF_BPF_SOURCE_MAX 256          /* the policy's name (a path, "-m nodelay") */
#define NF_BPF_TEXT_MAX   (60 * 1024)  /* the policy's text */

/* What the program counts (it adds to them atomically; user space reads). */
struct nf_bpf_counts {
	uint64_t tried;   /* connections its rules gave nodelay */
	uint64_t set;     /* bpf_setsockopt succeeded */
	uint64_t failed;  /* bpf_setsockopt failed */
	int32_t last_err; /* its last error (a negative errno), 0 none */
	uint32_t pad;
};

/* The value of the state map's one entry. */
struct nf_bpf_state {
	char magic[16];                  /* NF_BPF_MAGIC, no NUL */
	struct nf_bpf_counts counts;
	uint32_t text_len;
	uint32_t pad;
	char source[NF_BPF_SOURCE_MAX];  /* NUL-terminated */
	char text[NF_BPF_TEXT_MAX];      /* text_len bytes, then NUL */
};

/* --- prog.c --- */

/*
 * The program for policy p: at each TCP connection's establishment
 * (BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB for what the cgroup connects,
 * matched on the peer; PASSIVE_ESTABLISHED_CB for what it accepts,
 * matched on its own end), the first rule of that side that matches, else
 * the default, exactly as nf_policy_match chooses; where that is nodelay,
 * bpf_setsockopt(SOL_TCP, optname, 1) (TCP_NODELAY: the probe's test
 * gives another), counted in the state map map_fd. Any other action
 * leaves the socket alone. Returns 0 and the instructions in *out
 * (malloc'd) and *n; -ENOMEM, or -E2BIG (too many rules: a jump would
 * span more than 32,767 instructions: 2,700 rules of the longest kind,
 * IPv6 with a port range, fit; 4,600 of IPv4).
 */
int nf_bpf_prog_build(const struct nf_policy *p, int map_fd, int optname,
		      struct bpf_insn **out, size_t *n);

/* --- state.c --- */

/*
 * A new state map (an array of one entry, named NF_BPF_MAP_NAME) holding
 * the magic, source (cut to fit) and the len bytes of text, counters at
 * 0. Returns its descriptor, -E2BIG (text longer than NF_BPF_TEXT_MAX),
 * or bpf(2)'s error.
 */
int nf_bpf_state_create(const char *source, const char *text, size_t len);

/*
 * Reads the state map of the program prog_fd into *st (malloc'd by the
 * caller: it is 60 KiB). Returns 1 if the program is naglefix's (its name,
 * and a map of its name holding the magic), 0 if it is not, or an error.
 */
int nf_bpf_state_of_prog(int prog_fd, struct nf_bpf_state *st);

/* --- sys.c: bpf(2), one call each --- */

/* BPF_MAP_CREATE: an array of one entry of value_size bytes. */
int nf_bpf_map_create(const char *name, uint32_t value_size);

/* Entry 0 of the array map fd: written from value, read into value. */
int nf_bpf_map_write(int fd, const void *value);
int nf_bpf_map_read(int fd, void *value);

/*
 * BPF_PROG_LOAD of the n instructions as a sock_ops program named
 * NF_BPF_PROG_NAME. Returns its descriptor. When the kernel refuses it
 * (EACCES, EINVAL: the verifier), it is loaded once more with the
 * verifier's log on, and log (loglen bytes, > 0) holds that log; else log
 * is "".
 */
int nf_bpf_prog_load(const struct bpf_insn *insn, size_t n, char *log, size_t loglen);

/* The verifier log's last line (the reason it gives), its trailing
 * newlines cut off log. */
const char *nf_bpf_log_tail(char *log);

/* BPF_PROG_ATTACH of prog_fd to the cgroup cg_fd as BPF_CGROUP_SOCK_OPS,
 * BPF_F_ALLOW_MULTI; with BPF_F_REPLACE of replace_fd if it is >= 0
 * (in its place, in one step). */
int nf_bpf_prog_attach(int cg_fd, int prog_fd, int replace_fd);

/* BPF_PROG_DETACH of prog_fd from cg_fd's sock_ops programs. */
int nf_bpf_prog_detach(int cg_fd, int prog_fd);

/* BPF_PROG_QUERY of cg_fd's own sock_ops programs (not its ancestors'):
 * up to *cnt ids into ids, *cnt set to how many there are, *flags to
 * their mode (0, BPF_F_ALLOW_OVERRIDE or BPF_F_ALLOW_MULTI). */
int nf_bpf_prog_query(int cg_fd, uint32_t *ids, uint32_t *cnt, uint32_t *flags);

/* BPF_PROG_GET_FD_BY_ID, BPF_MAP_GET_FD_BY_ID: a descriptor. */
int nf_bpf_prog_get(uint32_t id);
int nf_bpf_map_get(uint32_t id);

/* BPF_OBJ_GET_INFO_BY_FD of a program (with up to nmaps of its map ids
 * into maps; info->nr_map_ids says how many it has) or of a map. */
int nf_bpf_prog_info(int fd, struct bpf_prog_info *info, uint32_t *maps, uint32_t nmaps);
int nf_bpf_map_info(int fd, struct bpf_map_info *info);

/* --- cgroup_prog.c --- */

#define NF_BPF_CGROUP_MAX 64 /* programs of one cgroup kept by a query: the kernel's
			       * own limit (BPF_CGROUP_MAX_PROGS), so none is missed */

/* One sock_ops program attached to a cgroup. */
struct nf_bpf_attached {
	uint32_t id;
	char name[BPF_OBJ_NAME_LEN]; /* as the kernel keeps it, "" unnamed */
	int ours;                    /* naglefix's */
};

/* A cgroup's own sock_ops programs, in the kernel's order. */
struct nf_bpf_cgroup {
	uint32_t flags; /* their mode: 0, BPF_F_ALLOW_OVERRIDE, BPF_F_ALLOW_MULTI */
	size_t n;       /* how many there are (v holds the first NF_BPF_CGROUP_MAX) */
	size_t ours;    /* how many of them are naglefix's */
	struct nf_bpf_attached v[NF_BPF_CGROUP_MAX];
};

/* The sock_ops programs of the cgroup cg_fd, each named, naglefix's told
 * apart (st, if not NULL, gets the state of its first one). */
int nf_bpf_cgroup_query(int cg_fd, struct nf_bpf_cgroup *out, struct nf_bpf_state *st);

/*
 * Puts prog_fd on cg_fd (its programs as now says they are): in the place
 * of naglefix's program there, in one step (BPF_F_REPLACE), so no moment
 * passes with no rule applied; else after the programs there. Any second
 * program of naglefix's (none is ever made so) is detached after. Nothing
 * else is touched. Returns 0 or the attach's error (-ENOENT: naglefix's
 * program there went away meanwhile).
 */
int nf_bpf_cgroup_attach(int cg_fd, int prog_fd, const struct nf_bpf_cgroup *now);

/* Detaches every program of naglefix's that now lists on cg_fd, and
 * nothing else; *n gets how many went. */
int nf_bpf_cgroup_detach(int cg_fd, const struct nf_bpf_cgroup *now, size_t *n);

/* The mode flags as bpftool names them: "multi", "override", "exclusive". */
const char *nf_bpf_mode_name(uint32_t flags);

/* --- probe.c --- */

/*
 * Whether this kernel's sock_ops programs can set optname (TCP_NODELAY)
 * on a connection: naglefix's program for "default nodelay" put on a
 * cgroup made for the purpose under root (the cgroup v2 mount), a child
 * moved into it that connects over loopback to this process and reads
 * the option. The cgroup is removed after. Returns 1 if the option was
 * set, 0 if the kernel refused it (*err: bpf_setsockopt's error as the
 * program saw it, or 0), or the error of a step (why, of len bytes, names
 * the step: "a listener on 127.0.0.1", "loading its program (the
 * verifier: ...)").
 */
int nf_bpf_probe(const char *root, int optname, int *err, char *why, size_t len);

#endif
