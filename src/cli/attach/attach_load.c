/*
 * attach_load.c - the programs of one attach loaded into the kernel
 * (attach_int.h), not yet attached: the sock_ops program compiled from
 * the policy, the setsockopt program beside it where this kernel has
 * the hook (Linux 5.3), the state map both hold, and the map of marks
 * the first writes and the second reads (taken over from naglefix's
 * programs on the cgroup, so a connection they set keeps its mark).
 */
#include "attach_int.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cli/common/nf_cli.h"

#define LOG_SIZE (1024 * 1024) /* the verifier's log of a refused program */

/* The hook's check, made once a run (-1: not yet). */
static int hook_status = -1;

/* Whether the setsockopt hook is there (*hook 1) or not (0, said once);
 * the probe's error said and its status returned. */
static int check_hook(const char *cmd, const struct nf_attach_target *t, int *hook)
{
	struct utsname u;
	int rc;

	if (hook_status < 0 && (rc = nf_bpf_sockopt_hook()) < 0)
		return nf_attach_say(cmd, "checking this kernel's setsockopt hook", rc, t->dir);
	if (hook_status < 0 && (hook_status = rc) == 0) {
		uname(&u);
		nf_cli_warnx_as(cmd, 0,
			"this kernel (Linux %s) has no cgroup setsockopt hook (Linux 5.3 and "
			"later have it): a program's own setsockopt(TCP_NODELAY, 0) after connecting "
			"turns Nagle back on; the sock_ops program goes on alone", u.release);
	}
	*hook = hook_status;
	return 0;
}

/* The verifier refused a program: the line, then its log, indented. */
static int say_refused(const char *cmd, const struct nf_attach_target *t, enum nf_bpf_kind kind,
		       int rc, char *log, size_t n)
{
	char step[600], *full = strdup(log);

	snprintf(step, sizeof(step),
		 "loading naglefix's %s program (%zu instructions): the kernel's verifier refused "
		 "it (its log follows): '%.400s'",
		 nf_bpf_kind_name(kind), n, nf_bpf_log_tail(log));
	rc = nf_attach_say(cmd, step, rc, t->dir);
	for (char *line = full ? strtok(full, "\n") : NULL; line; line = strtok(NULL, "\n"))
		nf_cli_warn_more("%s", line);
	free(full);
	return NF_ATTACH_EXIT_KERNEL;
}

/* The n instructions loaded as a program of kind into *fd. */
static int load_one(const char *cmd, const struct nf_attach_target *t, enum nf_bpf_kind kind,
		    const struct bpf_insn *insn, size_t n, int *fd)
{
	char *log = malloc(LOG_SIZE), step[64];
	int rc = 0;

	snprintf(step, sizeof(step), "loading naglefix's %s program", nf_bpf_kind_name(kind));
	if (!log)
		return nf_attach_say(cmd, step, -ENOMEM, t->dir);
	*fd = nf_bpf_prog_load(kind, insn, n, log, LOG_SIZE);
	if (*fd < 0 && log[0])
		rc = say_refused(cmd, t, kind, *fd, log, n);
	else if (*fd < 0)
		rc = nf_attach_say(cmd, step, *fd, t->dir);
	free(log);
	return rc;
}

/* The map of marks of naglefix's sock_ops program on t's cgroup, else a
 * new one: its descriptor into *fd. */
static int marks(const char *cmd, const struct nf_attach_target *t, int *fd)
{
	struct nf_bpf_cgroup *c = malloc(sizeof(*c));
	int rc = c ? nf_bpf_cgroup_query(t->fd, NF_BPF_SOCK_OPS, c, NULL) : -ENOMEM, prog;

	*fd = -ENOENT;
	for (size_t i = 0; rc == 0 && i < c->n && i < NF_BPF_CGROUP_MAX && *fd == -ENOENT; i++)
		if (c->v[i].ours && (prog = nf_bpf_prog_get(c->v[i].id)) >= 0) {
			*fd = nf_bpf_marks_of_prog(prog);
			close(prog);
		}
	free(c);
	if (*fd < 0)
		*fd = nf_bpf_marks_create();
	return *fd < 0 ? nf_attach_say(cmd, "making the map of marked sockets", *fd, t->dir) : 0;
}

/* Both programs built and loaded, given the state and marks maps. */
static int build(const char *cmd, const struct nf_attach_target *t,
		 const struct nf_attach_policy *p, int map, int marks_fd, struct nf_attach_loaded *l)
{
	struct bpf_insn *insn = NULL;
	int rc = nf_bpf_prog_build(&p->pol, map, marks_fd, TCP_NODELAY, &insn, &l->insns[NF_BPF_SOCK_OPS]);

	if (rc < 0)
		return nf_attach_say(cmd, "compiling the rules", rc, p->source);
	rc = load_one(cmd, t, NF_BPF_SOCK_OPS, insn, l->insns[NF_BPF_SOCK_OPS], &l->fd[NF_BPF_SOCK_OPS]);
	free(insn);
	insn = NULL;
	if (rc != 0 || marks_fd < 0)
		return rc;
	rc = nf_bpf_sockopt_build(map, marks_fd, &insn, &l->insns[NF_BPF_SETSOCKOPT]);
	if (rc < 0)
		rc = nf_attach_say(cmd, "assembling the setsockopt program", rc, t->dir);
	else
		rc = load_one(cmd, t, NF_BPF_SETSOCKOPT, insn, l->insns[NF_BPF_SETSOCKOPT],
			      &l->fd[NF_BPF_SETSOCKOPT]);
	free(insn);
	return rc;
}

int nf_attach_load(const char *cmd, const struct nf_attach_target *t,
		   const struct nf_attach_policy *p, struct nf_attach_loaded *l)
{
	int hook = 0, map = -1, marks_fd = -1, rc;

	memset(l, 0, sizeof(*l));
	l->fd[NF_BPF_SOCK_OPS] = l->fd[NF_BPF_SETSOCKOPT] = -1;
	rc = check_hook(cmd, t, &hook);
	if (rc == 0 && (map = nf_bpf_state_create(p->source, p->text, p->len)) < 0)
		rc = nf_attach_say(cmd, "making the programs' state map", map, t->dir);
	if (rc == 0 && hook == 1)
		rc = marks(cmd, t, &marks_fd);
	if (rc == 0)
		rc = build(cmd, t, p, map, marks_fd, l);
	if (map >= 0)
		close(map); /* the programs hold it now, or nobody does */
	if (marks_fd >= 0)
		close(marks_fd);
	if (rc != 0)
		nf_attach_loaded_close(l);
	return rc;
}

void nf_attach_loaded_close(struct nf_attach_loaded *l)
{
	for (int k = 0; k < 2; k++) {
		if (l->fd[k] >= 0)
			close(l->fd[k]);
		l->fd[k] = -1;
	}
}
