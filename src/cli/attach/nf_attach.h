/*
 * nf_attach.h - the door of cli/attach (naglefix attach, attach --list,
 * detach): what the dispatcher and watch --fix --attach may call.
 * attach_int.h holds the rest, private to cli/attach.
 */
#ifndef NF_ATTACH_H
#define NF_ATTACH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "nf_policy.h"
#include "bpf/nf_bpf.h"
#include "cli/common/nf_cgroup.h"
#include "route/nf_route.h"

/* --- attach_rule.c: for watch --fix --attach --- */

/* What adding one rule to a process's cgroup did. */
enum nf_attach_rule_result {
	NF_ATTACH_RULE_ATTACHED, /* added: naglefix's program there now has it */
	NF_ATTACH_RULE_ALREADY,  /* the rules there give nodelay already */
	NF_ATTACH_RULE_LEFT,     /* a rule there gives another action: left to it */
	NF_ATTACH_RULE_ROOT,     /* the process is in the root cgroup: not attached */
	NF_ATTACH_RULE_FAILED,   /* said on stderr, or in why */
};

struct nf_attach_rule_done {
	enum nf_attach_rule_result result;
	char dir[NF_CGROUP_PATH_MAX];  /* the cgroup, "" unknown */
	char name[NF_CGROUP_NAME_MAX];
	uint32_t id;                   /* the program attached */
	char why[NF_BPF_SOURCE_MAX + 96]; /* the rule and policy, or the deciding rule, or why not */
	int marks_fd;                  /* attached or already: above 0, the map of marks of
					  naglefix's setsockopt program there (the caller
					  closes it), for nf_fix_mark_inode to mark the connection
					  it fixed; -ENOENT no such program (no hook), or the
					  error; 0 otherwise */
};

/* The result's name in lines and JSON ("attached", "already", ...). */
const char *nf_attach_rule_result_name(enum nf_attach_rule_result r);

/*
 * Adds rule ("connect PEER nodelay", "accept LOCAL nodelay"), which
 * matches side and sa, to naglefix's program on the cgroup of pid, after
 * the rules there, unless they decide for sa already, or the cgroup is
 * the root; the kernel checked at the first call of a run. Where the
 * rules there now give sa nodelay (attached, already), d->marks_fd is
 * their map of marks. Fills *d and returns d->result.
 */
int nf_attach_rule(pid_t pid, enum nf_side side, const struct sockaddr *sa, socklen_t len,
		   const char *rule, struct nf_attach_rule_done *d);

/* --- attach_netns.c, attach_route.c: for watch --fix --attach --- */

/* The network namespace whose routes attach's quickack rules change. */
struct nf_attach_netns {
	int fd;                         /* held open: the namespace, not a PID's */
	uint64_t ino;                   /* its nsfs inode: its identity */
	char path[NF_CGROUP_PATH_MAX];  /* what was opened: /run/netns/NAME, /proc/PID/ns/net */
	char name[NF_CGROUP_NAME_MAX];  /* as messages say it: NAME, "pid N's", "host" */
};

/* Room for what nf_attach_route_peer says it did (a route's text and
 * its change). */
#define NF_ATTACH_ROUTE_SAID_MAX (NF_ROUTE_TEXT_MAX + 96)

/* watch --fix --attach: quickack 1 on the route ns takes to addr, why
 * recorded with it; what was done in said. 0, or a negative errno. */
int nf_attach_route_peer(const struct nf_attach_netns *ns, int family, const uint8_t *addr,
			 const char *why, char *said, size_t len);

/* --- attach.c, detach.c: the commands --- */

extern const char nf_cli_usage_attach[]; /* their --help (nf_cli.h) */
extern const char nf_cli_usage_detach[];

/* naglefix attach [-c CONF | -m nodelay] [--cgroup PATH | --unit NAME |
 * --pid PID] [--now], and attach --list: argv[0] is "attach". */
int nf_cli_attach(int argc, char **argv);

/* naglefix detach [--cgroup PATH | --unit NAME | --pid PID | --all]:
 * argv[0] is "detach". */
int nf_cli_detach(int argc, char **argv);

#endif
