/*
 * attach_int.h - naglefix attach, detach and attach --list: the policy's
 * nodelay rules put in the kernel for a cgroup (src/bpf's programs: the
 * sock_ops program and the setsockopt program beside it), and what watch
 * --fix uses of it. What other commands may call is in nf_attach.h, the
 * folder's door (this header includes it); the rest is private to
 * cli/attach.
 *
 *   attach_target.c  the cgroup a command names: found, opened, locked
 *   attach_policy.c  the policy: read, its text kept, what the kernel cannot apply
 *   attach_load.c    naglefix's programs for a policy loaded, not yet attached
 *   attach_place.c   naglefix's programs put on one cgroup as one, or taken
 *                    off; the map of marks of those there
 *   attach_errors.c  the failures, one line each, and their exit status
 *   attach_list.c    every cgroup's sock_ops programs (--list, detach --all)
 *   attach_rule.c    one rule added to a process's cgroup (watch --fix --attach)
 *   attach_netns.c   the network namespace a command names, and its sockets
 *   attach_route.c   the quickack rules on that namespace's routes, and back
 *   attach_route_record.c  the record of the routes attach changed
 *   attach_route_list.c    --list's routes
 *   attach.c         naglefix attach
 *   detach.c         naglefix detach
 *
 * Functions return 0 or an NF_ATTACH_EXIT_* status after saying why on
 * stderr, unless they say otherwise.
 */
#ifndef NF_ATTACH_INT_H
#define NF_ATTACH_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "nf_attach.h"
#include "nf_policy.h"
#include "bpf/nf_bpf.h"
#include "cli/common/nf_cgroup.h"
#include "route/nf_route.h"

/* Exit statuses of attach and detach (naglefix(1)). */
#define NF_ATTACH_EXIT_PARTIAL 1 /* done, but --now or --all left something */
#define NF_ATTACH_EXIT_PERM    2 /* no CAP_BPF / CAP_NET_ADMIN, or refused by policy */
#define NF_ATTACH_EXIT_KERNEL  3 /* the kernel cannot: no bpf(2), sock_ops cannot set
				    TCP_NODELAY (before 6.0), the verifier refused */
#define NF_ATTACH_EXIT_TARGET  4 /* no cgroup2, no such cgroup, unit or process */
#define NF_ATTACH_EXIT_BLOCKED 5 /* another program's mode stands in the way */

/* What a command names: the root (--host), --cgroup, --unit, --pid. */
enum nf_attach_kind { NF_ATTACH_ROOT, NF_ATTACH_CGROUP, NF_ATTACH_UNIT, NF_ATTACH_PID };

/* The cgroup a command works on. */
struct nf_attach_target {
	char root[NF_CGROUP_PATH_MAX]; /* the cgroup2 mount */
	char dir[NF_CGROUP_PATH_MAX];  /* the cgroup's directory */
	char name[NF_CGROUP_NAME_MAX]; /* as people name it: "nginx.service", "/" */
	int fd;                        /* the directory, locked (flock) while open */
};

/* The policy attach puts in the kernel. */
struct nf_attach_policy {
	struct nf_policy pol;
	char source[NF_BPF_SOURCE_MAX]; /* the file, "-m nodelay", "-m quickack"
					   or "no policy file" */
	int builtin;                    /* not a file: nodelay (or quickack) for
					   every connection */
	char *text;                     /* what the file said (malloc'd) */
	size_t len;
	size_t nodelay;                 /* its rules that are nodelay */
};

/* --- attach_target.c --- */

/*
 * Opens the cgroup that kind and arg name (arg NULL for the root) and
 * takes its lock, so that two attaches of one cgroup do not both add a
 * program: fills *t. cmd names the command in messages ("attach").
 */
int nf_attach_target_open(const char *cmd, enum nf_attach_kind kind, const char *arg,
			  struct nf_attach_target *t);

/* Opens and locks the cgroup directory dir (under root) into *t. */
int nf_attach_target_dir(const char *cmd, const char *root, const char *dir,
			 struct nf_attach_target *t);

/* Releases t's lock and directory. */
void nf_attach_target_close(struct nf_attach_target *t);

/* 1 if t is the hierarchy's root (the whole host). */
int nf_attach_target_is_root(const struct nf_attach_target *t);

/* --- attach_policy.c --- */

/* Where rule r (or the default, r NULL) of p is, for messages, into buf:
 * "FILE:LINE" or "FILE: default" (FILE cut at 200 bytes). buf. */
const char *nf_attach_policy_where(const struct nf_attach_policy *p, const struct nf_rule *r,
				   char *buf, size_t len);

/* The policy of -c CONF, -m nodelay, or neither (the library's file, else
 * nodelay for every connection) into *p. NF_EXIT_USAGE on an error. */
int nf_attach_policy_load(const char *cmd, const char *conf, const char *mode,
			  struct nf_attach_policy *p);

/* The policy of the len bytes of text named source (a file's, or one a
 * state map kept) into *p: 0, -ENOMEM, or -EINVAL with why in err. */
int nf_attach_policy_parse(const char *source, const char *text, size_t len,
			   struct nf_attach_policy *p, char *err, size_t errlen);

/* Says once each rule whose action the kernel's program cannot apply
 * (it needs the library). */
void nf_attach_policy_say_left(const char *cmd, const struct nf_attach_policy *p);

/* Frees p's rules and text. */
void nf_attach_policy_free(struct nf_attach_policy *p);

/* --- attach_load.c --- */

/* The programs of one attach, loaded, by kind (enum nf_bpf_kind). */
struct nf_attach_loaded {
	int fd[2];       /* -1: not loaded (the setsockopt one where the kernel lacks the hook) */
	size_t insns[2]; /* their length in instructions */
};

/* p's programs, with their state map and map of marks, loaded into *l:
 * the setsockopt program too where this kernel has the hook (where it
 * does not, that is said once a run, and only the sock_ops one is). */
int nf_attach_load(const char *cmd, const struct nf_attach_target *t,
		   const struct nf_attach_policy *p, struct nf_attach_loaded *l);

/* Closes l's programs (attached ones stay: their cgroup holds them). */
void nf_attach_loaded_close(struct nf_attach_loaded *l);

/* --- attach_place.c --- */

/* What attach did with one kind of program on a cgroup. */
struct nf_attach_prog {
	uint32_t id;       /* the program now there, 0 none (no setsockopt hook) */
	uint32_t replaced; /* naglefix's program it took the place of, 0 none */
	size_t insns;      /* its length in instructions */
	struct nf_bpf_cgroup after; /* the cgroup's programs of its kind after */
};

/* What attach did on a cgroup, by kind (enum nf_bpf_kind). */
struct nf_attach_done {
	struct nf_attach_prog prog[2];
};

/* Checks that bpf(2) lets this process read t's sock_ops programs (the
 * rights, the system call): before anything is made for the probe. */
int nf_attach_check_access(const char *cmd, const struct nf_attach_target *t);

/* Checks once per command that this kernel can do it (nf_bpf_probe). */
int nf_attach_check_kernel(const char *cmd, const char *root);

/* Puts p's programs on t's cgroup in the place of naglefix's earlier
 * ones, after checking that no other program's mode stands in the way of
 * either; both or neither (the first undone if the second fails); *done
 * says what was done. */
int nf_attach_place(const char *cmd, const struct nf_attach_target *t,
		    const struct nf_attach_policy *p, struct nf_attach_done *done);

/* The map of marks naglefix's setsockopt program on t's cgroup reads (a
 * connection marked there is kept on against its program's own
 * setsockopt(TCP_NODELAY, 0)): a descriptor above 0 (nf_fix_req's
 * marks_fd), -ENOENT if there is no such program (a kernel without the
 * hook), or bpf(2)'s error; nothing said. */
int nf_attach_marks(const struct nf_attach_target *t);

/* Takes naglefix's programs (both kinds) off t's cgroup; *n gets how
 * many went. */
int nf_attach_remove(const char *cmd, const struct nf_attach_target *t, size_t *n);

/* --- attach_errors.c --- */

/*
 * Says, in one line on stderr ("naglefix CMD: ..."), why step (a few
 * words: "loading the program") failed with rc on target (may be NULL),
 * and what the user can do. Returns the exit status.
 */
int nf_attach_say(const char *cmd, const char *step, int rc, const char *target);

/* The line for a cgroup whose mode or ancestor stands in the way: the
 * program (its kind, id, name), where it is and its mode. Returns
 * NF_ATTACH_EXIT_BLOCKED. */
int nf_attach_say_blocked(const char *cmd, const char *target, const char *where,
			  enum nf_bpf_kind kind, const struct nf_bpf_attached *prog, uint32_t mode,
			  const char *why);

/* --- attach_netns.c --- */

/* Opens the namespace --netns NETNS (a name under /run/netns, or a path)
 * names, else --pid PID's, else this command's own (the host's), into
 * *ns. */
int nf_attach_netns_open(const char *cmd, const char *netns, const char *pid,
			 struct nf_attach_netns *ns);

/* Opens the namespace at path into *ns, saying nothing: 0 or -errno. */
int nf_attach_netns_open_quiet(const char *path, struct nf_attach_netns *ns);

/* 0 if ns->fd is a network namespace, else -EINVAL or -errno. */
int nf_attach_netns_check(const struct nf_attach_netns *ns);

void nf_attach_netns_close(struct nf_attach_netns *ns);

/* Makes in ns an rtnetlink socket (*nl) and one for interface names
 * (*ioc, -1 if none), the thread back in its own namespace after. */
int nf_attach_netns_sockets(const struct nf_attach_netns *ns, int *nl, int *ioc);

/* The cookie of the namespace socket fd was made in (SO_NETNS_COOKIE,
 * Linux 5.14: never reused, where an nsfs inode is), or 0. */
uint64_t nf_attach_netns_cookie(int fd);

/* The name of r's device, asked on ioc (a socket of the route's
 * namespace), or NULL; valid until the next call. */
const char *nf_attach_netns_ifname(int ioc, const struct nf_route *r);

/* --- attach_route_record.c --- */

/* A route attach gave quickack 1: as it was, as attach left it, why. */
struct nf_attach_route_rec {
	struct nf_route before, after;
	char why[256]; /* the rule: "FILE:LINE", "watch --fix --attach: ..." */
};

/* The record of one namespace. */
struct nf_attach_route_record {
	uint64_t ino;
	uint64_t cookie; /* the namespace's SO_NETNS_COOKIE, never reused; 0 unknown */
	char path[NF_CGROUP_PATH_MAX];
	char name[NF_CGROUP_NAME_MAX];
	struct nf_attach_route_rec *v; /* malloc'd */
	size_t n;
};

/* The lock every reader and writer of the records takes: its descriptor
 * (close to release), or -errno. */
int nf_attach_route_lock(void);

/* The record of the namespace of inode ino into *rec (empty if none). */
int nf_attach_route_record_read(uint64_t ino, struct nf_attach_route_record *rec);

/* Writes rec whole in the place of the namespace's record (none if
 * rec->n is 0). */
int nf_attach_route_record_write(const struct nf_attach_route_record *rec);

void nf_attach_route_record_free(struct nf_attach_route_record *rec);

/* Calls fn(ino, arg) for each namespace with a record; stops at fn's
 * first non-zero return and returns it. */
int nf_attach_route_record_each(int (*fn)(uint64_t ino, void *arg), void *arg);

/* --- attach_route.c --- */

/* How many of p's rules (its default included) are quickack. */
size_t nf_attach_route_rules(const struct nf_attach_policy *p);

/* attach: quickack 1 on the routes p's quickack rules name in ns, each
 * said and recorded; accept rules refused with why. */
int nf_attach_route_apply(const char *cmd, const struct nf_attach_netns *ns,
			  const struct nf_attach_policy *p);

/* detach: each route attach set in ns put back as it was, unless it was
 * changed or removed since (said, left). */
int nf_attach_route_restore(const char *cmd, const struct nf_attach_netns *ns);

/*
 * The hooks of attach and detach. The namespace is --netns's, else
 * --pid's process's, else (--host) the host's; --cgroup and --unit
 * name none: attach says its quickack rules are not applied (status
 * NF_EXIT_USAGE when they are all it had: alone), detach does nothing.
 */
int nf_attach_route_cmd(const char *cmd, enum nf_attach_kind kind, const char *arg,
			const char *netns, int host, const struct nf_attach_policy *p, int alone);
int nf_attach_route_undo(const char *cmd, enum nf_attach_kind kind, const char *arg,
			 const char *netns, int host);

/* Whether p's quickack rules may go where the command line says, for
 * attach to ask before it changes anything: NF_EXIT_USAGE, said, when no
 * namespace is named (kind NF_ATTACH_ROOT, no --netns, no --host);
 * NF_ATTACH_EXIT_TARGET, said, when --pid's process (arg) is in this
 * command's own namespace (the host's routes, every program's, changed
 * only when asked by --host); its status if that namespace cannot be
 * opened; else 0. */
int nf_attach_route_target(const char *cmd, enum nf_attach_kind kind, const char *arg,
			   const char *netns, int host, const struct nf_attach_policy *p);

/* detach --all: every namespace with a record, still there, put back. */
int nf_attach_route_undo_all(void);

/* --- attach_route_list.c --- */

/* attach --list's routes: each namespace's, as recorded and as now. */
int nf_attach_route_list(void);

/* --- attach_list.c --- */

/*
 * Calls fn(dir, arg) for every cgroup under root (root itself first),
 * no symbolic link followed, to a bounded depth; stops at fn's first
 * non-zero return and returns it.
 */
int nf_attach_each_cgroup(const char *root, int (*fn)(const char *dir, void *arg), void *arg);

/* naglefix attach --list: every cgroup with a sock_ops program, naglefix's
 * with its rules and counts. */
int nf_attach_list(void);

#endif
