/*
 * nf_bpf.h - naglefix's kernel programs (src/bpf/): a sock_ops program,
 * assembled here from a policy's rules, that sets TCP_NODELAY on each TCP
 * connection of a cgroup as it is established, the setsockopt program
 * beside it that keeps it on against the program's own
 * setsockopt(TCP_NODELAY, 0), and what it takes to put them on a cgroup,
 * find them there and take them off, through bpf(2) alone.
 *
 *   prog.c         the sock_ops program: the rules compiled into instructions
 *   sockopt_prog.c the setsockopt program; whether this kernel has its hook
 *   marks.c        the sockets the first set, marked for the second
 *   btf.c          the type description the marks' map needs
 *   state.c        their state map: the policy's text and the counters
 *   sys.c          the bpf(2) calls
 *   cgroup_prog.c  the programs of one kind on one cgroup: naglefix's
 *                  found, attached, replaced, detached; the others named
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

/* The names the kernel shows (bpftool prog, bpftool map): both programs
 * are "naglefix", told apart by their type; both hold the state map. */
#define NF_BPF_PROG_NAME  "naglefix"
#define NF_BPF_MAP_NAME   "naglefix_state"
#define NF_BPF_MARKS_NAME "naglefix_socks"

/* The first bytes of the state map's value: "this is naglefix's". */
#define NF_BPF_MAGIC "naglefix attach2"

/* The kinds of program naglefix attaches to a cgroup. */
enum nf_bpf_kind {
	NF_BPF_SOCK_OPS,   /* BPF_PROG_TYPE_SOCK_OPS at BPF_CGROUP_SOCK_OPS */
	NF_BPF_SETSOCKOPT, /* BPF_PROG_TYPE_CGROUP_SOCKOPT at BPF_CGROUP_SETSOCKOPT (5.3) */
};

#define NF_BPF_SOURCE_MAX 256          /* the policy's name (a path, "-m nodelay") */
#define NF_BPF_TEXT_MAX   (60 * 1024)  /* the policy's text */

/* What the program counts (it adds to them atomically; user space reads). */
struct nf_bpf_counts {
	uint64_t tried;   /* connections its rules gave nodelay */
	uint64_t set;     /* bpf_setsockopt succeeded */
	uint64_t failed;  /* bpf_setsockopt failed */
	int32_t last_err; /* its last error (a negative errno), 0 none */
	uint32_t pad;
	uint64_t kept;    /* the setsockopt program: a program's own
			     setsockopt(TCP_NODELAY, 0) turned into 1 */
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
 * gives another), counted in the state map map_fd, and, where it
 * succeeded and marks_fd is not -1, the socket marked in that map
 * (marks.c) for the setsockopt program. Any other action leaves the
 * socket alone. Returns 0 and the instructions in *out (malloc'd) and
 * *n; -ENOMEM, or -E2BIG (too many rules: a jump would span more than
 * 32,767 instructions: 2,700 rules of the longest kind, IPv6 with a port
 * range, fit; 4,600 of IPv4).
 */
int nf_bpf_prog_build(const struct nf_policy *p, int map_fd, int marks_fd, int optname,
		      struct bpf_insn **out, size_t *n);

/* --- sockopt_prog.c --- */

/*
 * The setsockopt program: a setsockopt(IPPROTO_TCP, TCP_NODELAY) of a
 * socket marked in marks_fd (one the sock_ops program set nodelay on),
 * with optlen >= 4 (up to the page the kernel copies; a longer value is
 * handed back whole: optlen 0) and a value of 0, goes to the kernel with the value 1,
 * counted (kept) in the state map map_fd. Every other call (another
 * level, option, length or value, a socket not marked: not yet
 * connected, not TCP, or one the rules left) goes to the kernel as it
 * came. Returns 0 and the instructions in *out (malloc'd) and *n, or
 * -ENOMEM.
 */
int nf_bpf_sockopt_build(int map_fd, int marks_fd, struct bpf_insn **out, size_t *n);

/* Whether this kernel has the cgroup setsockopt hook (Linux 5.3): 1, 0
 * (a program of its type refused with EINVAL), or bpf(2)'s error. */
int nf_bpf_sockopt_hook(void);

/* --- marks.c --- */

/* A new map of marks (socket-local storage, BPF_MAP_TYPE_SK_STORAGE,
 * named NF_BPF_MARKS_NAME, a 4-byte value a socket): its descriptor or
 * the error. */
int nf_bpf_marks_create(void);

/* The map of marks the program prog_fd holds: its descriptor, or
 * -ENOENT (it holds none), or the error. */
int nf_bpf_marks_of_prog(int prog_fd);

/* Marks the socket sock_fd (a descriptor of this process: a duplicate
 * of a program's is the same socket) in marks_fd from user space, as the
 * sock_ops program marks the connections it sets: for a connection set
 * from outside (naglefix fix on behalf of attach --now, or watch --fix
 * --attach), so the
 * setsockopt program keeps it on too. 0, or bpf(2)'s error (-ENOTSOCK:
 * sock_fd is no socket; -ENOMEM: the kernel's memory for the entry). */
int nf_bpf_marks_set(int marks_fd, int sock_fd);

/* --- btf.c --- */

/* The BTF of one type, id 1: a 4-byte signed int (what a socket-local
 * storage map must name for its key and value). Its descriptor or
 * bpf(2)'s error. */
int nf_bpf_btf_int(void);

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
 * one of the kinds' types, and a map of its name holding the magic), 0 if
 * it is not, or an error.
 */
int nf_bpf_state_of_prog(int prog_fd, struct nf_bpf_state *st);

/* --- sys.c: bpf(2), one call each --- */

/* The program type of kind (BPF_PROG_TYPE_...). */
enum bpf_prog_type nf_bpf_kind_type(enum nf_bpf_kind kind);

/* BPF_MAP_CREATE: an array of one entry of value_size bytes. */
int nf_bpf_map_create(const char *name, uint32_t value_size);

/* BPF_BTF_LOAD of the len bytes of blob (raw BTF). */
int nf_bpf_btf_load(const void *blob, uint32_t len);

/* BPF_MAP_CREATE: socket-local storage of value_size bytes, its key and
 * value described by type_id of the BTF btf_fd. */
int nf_bpf_sk_storage_create(const char *name, int btf_fd, uint32_t type_id, uint32_t value_size);

/* Entry 0 of the array map fd: written from value, read into value. */
int nf_bpf_map_write(int fd, const void *value);
int nf_bpf_map_read(int fd, void *value);

/* BPF_MAP_UPDATE_ELEM of key in the map fd to value (BPF_ANY: made or
 * written over). */
int nf_bpf_map_update(int fd, const void *key, const void *value);

/*
 * BPF_PROG_LOAD of the n instructions as a program of kind named
 * NF_BPF_PROG_NAME. Returns its descriptor. When the kernel refuses it
 * (EACCES, EINVAL: the verifier), it is loaded once more with the
 * verifier's log on, and log (loglen bytes, > 0) holds that log; else log
 * is "".
 */
int nf_bpf_prog_load(enum nf_bpf_kind kind, const struct bpf_insn *insn, size_t n, char *log,
		     size_t loglen);

/* The verifier log's last line (the reason it gives), its trailing
 * newlines cut off log. */
const char *nf_bpf_log_tail(char *log);

/* BPF_PROG_ATTACH of the program prog_fd of kind to the cgroup cg_fd (at
 * kind's attach type), BPF_F_ALLOW_MULTI; with BPF_F_REPLACE of
 * replace_fd if it is >= 0 (in its place, in one step). */
int nf_bpf_prog_attach(enum nf_bpf_kind kind, int cg_fd, int prog_fd, int replace_fd);

/* BPF_PROG_DETACH of prog_fd from cg_fd's programs of kind. */
int nf_bpf_prog_detach(enum nf_bpf_kind kind, int cg_fd, int prog_fd);

/* BPF_PROG_QUERY of cg_fd's own programs of kind (not its ancestors'):
 * up to *cnt ids into ids, *cnt set to how many there are, *flags to
 * their mode (0, BPF_F_ALLOW_OVERRIDE or BPF_F_ALLOW_MULTI). */
int nf_bpf_prog_query(enum nf_bpf_kind kind, int cg_fd, uint32_t *ids, uint32_t *cnt,
		      uint32_t *flags);

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

/* One program attached to a cgroup. */
struct nf_bpf_attached {
	uint32_t id;
	char name[BPF_OBJ_NAME_LEN]; /* as the kernel keeps it, "" unnamed */
	int ours;                    /* naglefix's */
};

/* A cgroup's own programs of one kind, in the kernel's order. */
struct nf_bpf_cgroup {
	enum nf_bpf_kind kind;
	uint32_t flags; /* their mode: 0, BPF_F_ALLOW_OVERRIDE, BPF_F_ALLOW_MULTI */
	size_t n;       /* how many there are (v holds the first NF_BPF_CGROUP_MAX) */
	size_t ours;    /* how many of them are naglefix's */
	struct nf_bpf_attached v[NF_BPF_CGROUP_MAX];
};

/* The programs of kind on the cgroup cg_fd, each named, naglefix's told
 * apart (st, if not NULL, gets the state of its first one). */
int nf_bpf_cgroup_query(int cg_fd, enum nf_bpf_kind kind, struct nf_bpf_cgroup *out,
			struct nf_bpf_state *st);

/*
 * Puts prog_fd (of now's kind) on cg_fd (its programs as now says they
 * are): in the place
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

/* Undoes nf_bpf_cgroup_attach of new_fd (of kind) on cg_fd: old_fd (the
 * program it replaced, held open since, or -1 none) put back in its
 * place in one step, or new_fd detached. */
int nf_bpf_cgroup_restore(int cg_fd, enum nf_bpf_kind kind, int new_fd, int old_fd);

/* The kind as bpftool names its attach type: "sock_ops", "setsockopt". */
const char *nf_bpf_kind_name(enum nf_bpf_kind kind);

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
