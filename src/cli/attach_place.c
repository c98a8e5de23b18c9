/*
 * attach_place.c - naglefix's program put on one cgroup or taken off it
 * (attach_int.h), with what must be checked first: that this kernel can
 * set TCP_NODELAY from sock_ops (the probe), and that no other program's
 * mode stands in the way. Another program is never replaced, detached or
 * silenced: where the kernel would have to (a program attached without
 * BPF_F_ALLOW_MULTI here or above), nothing is changed and one line says
 * which program and which mode.
 */
#include "attach_int.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cli_int.h"

#define LOG_SIZE (1024 * 1024) /* the verifier's log of a refused program */

int nf_attach_check_access(const char *cmd, const struct nf_attach_target *t)
{
	struct nf_bpf_cgroup *c = malloc(sizeof(*c));
	int rc = c ? nf_bpf_cgroup_query(t->fd, c, NULL) : -ENOMEM;

	free(c);
	return rc < 0 ? nf_attach_say(cmd, "reading its sock_ops programs", rc, t->dir) : 0;
}

int nf_attach_check_kernel(const char *cmd, const char *root)
{
	char why[1024], step[1100];
	struct utsname u;
	int err, rc = nf_bpf_probe(root, TCP_NODELAY, &err, why, sizeof(why));

	if (rc == 1)
		return 0;
	if (rc < 0) {
		snprintf(step, sizeof(step), "checking this kernel (a connection in a cgroup of its own): %s",
			 why);
		return nf_attach_say(cmd, step, rc, NULL);
	}
	uname(&u);
	fprintf(stderr,
		"naglefix %s: this kernel (Linux %s) does not let a sock_ops program set TCP_NODELAY "
		"(bpf_setsockopt: %s; Linux 6.0 and later do): nothing attached; use naglefix fix or "
		"the library instead\n",
		cmd, u.release, err ? strerror(-err) : "the option stayed off");
	return NF_ATTACH_EXIT_KERNEL;
}

/* The sock_ops programs of the cgroup directory dir into *c. */
static int query_dir(const char *dir, struct nf_bpf_cgroup *c)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	rc = nf_bpf_cgroup_query(fd, c, NULL);
	close(fd);
	return rc;
}

/* The nearest ancestor of t's cgroup with sock_ops programs decides
 * whether one can be added here: multi lets it (both run), override would
 * see its program replaced for this cgroup's connections, exclusive lets
 * none (the kernel refuses). */
static int check_ancestors(const char *cmd, const struct nf_attach_target *t)
{
	char dir[NF_CGROUP_PATH_MAX], *up = dir;
	struct nf_bpf_cgroup *c = malloc(sizeof(*c));
	int rc = c ? 0 : nf_attach_say(cmd, "reading the sock_ops programs", -ENOMEM, t->dir);

	snprintf(dir, sizeof(dir), "%s", t->dir);
	while (rc == 0 && strlen(up) > strlen(t->root)) {
		up = dirname(up);
		if ((rc = query_dir(up, c)) < 0)
			rc = nf_attach_say(cmd, "reading the sock_ops programs", rc, up);
		else if (c->n > 0 && !(c->flags & BPF_F_ALLOW_MULTI))
			rc = nf_attach_say_blocked(cmd, t->dir, up, &c->v[0], c->flags,
						   c->flags & BPF_F_ALLOW_OVERRIDE
							   ? "a program here would take its place for this "
							     "cgroup's connections"
							   : "the kernel lets no program be attached below it");
		else if (c->n > 0)
			break; /* multi: the kernel runs both; those above are its business */
	}
	free(c);
	return rc;
}

/* Whether a program of naglefix's can go on t's cgroup, whose programs
 * now lists. */
static int check_blockers(const char *cmd, const struct nf_attach_target *t,
			  const struct nf_bpf_cgroup *now)
{
	if (now->n > now->ours && !(now->flags & BPF_F_ALLOW_MULTI)) {
		for (size_t i = 0; i < now->n && i < NF_BPF_CGROUP_MAX; i++)
			if (!now->v[i].ours)
				return nf_attach_say_blocked(cmd, t->dir, "this cgroup", &now->v[i], now->flags,
							     "the kernel takes a second program only where "
							     "all are multi");
	}
	return now->n == 0 ? check_ancestors(cmd, t) : 0;
}

/* The verifier refused the program: the line, then its log, indented. */
static int say_refused(const char *cmd, const struct nf_attach_target *t, int rc, char *log,
		       size_t n)
{
	char step[600], *full = strdup(log);

	snprintf(step, sizeof(step),
		 "loading naglefix's program (%zu instructions): the kernel's verifier refused it "
		 "(its log follows): '%.400s'",
		 n, nf_bpf_log_tail(log));
	rc = nf_attach_say(cmd, step, rc, t->dir);
	for (char *line = full ? strtok(full, "\n") : NULL; line; line = strtok(NULL, "\n"))
		fprintf(stderr, "    %s\n", line);
	free(full);
	return NF_ATTACH_EXIT_KERNEL;
}

/* p's program, with its state map, loaded: its descriptor into *prog. */
static int load(const char *cmd, const struct nf_attach_target *t,
		const struct nf_attach_policy *p, int *prog, size_t *n)
{
	struct bpf_insn *insn = NULL;
	char *log = malloc(LOG_SIZE);
	int map = log ? nf_bpf_state_create(p->source, p->text, p->len) : -ENOMEM, rc = 0;

	if (map < 0)
		rc = nf_attach_say(cmd, "making the program's state map", map, t->dir);
	else if ((rc = nf_bpf_prog_build(&p->pol, map, TCP_NODELAY, &insn, n)) < 0)
		rc = nf_attach_say(cmd, "compiling the rules", rc, p->source);
	else if ((*prog = nf_bpf_prog_load(insn, *n, log, LOG_SIZE)) < 0 && log[0])
		rc = say_refused(cmd, t, *prog, log, *n);
	else if (*prog < 0)
		rc = nf_attach_say(cmd, "loading naglefix's program", *prog, t->dir);
	if (map >= 0)
		close(map); /* the program holds it now, or nobody does */
	free(insn);
	free(log);
	return rc;
}

/* The id of the program prog_fd. */
static uint32_t id_of(int prog_fd)
{
	struct bpf_prog_info info;

	return nf_bpf_prog_info(prog_fd, &info, NULL, 0) == 0 ? info.id : 0;
}

/* The first of naglefix's programs c lists, 0 none. */
static uint32_t ours_in(const struct nf_bpf_cgroup *c)
{
	for (size_t i = 0; i < c->n && i < NF_BPF_CGROUP_MAX; i++)
		if (c->v[i].ours)
			return c->v[i].id;
	return 0;
}

/* Attaches prog in the place of naglefix's program there; once more if
 * that one went meanwhile (detached by hand). */
static int put(const char *cmd, const struct nf_attach_target *t, int prog,
	       struct nf_attach_done *done)
{
	struct nf_bpf_cgroup *now = &done->after;
	int rc;

	for (int tries = 0; tries < 2; tries++) {
		if ((rc = nf_bpf_cgroup_query(t->fd, now, NULL)) < 0)
			return nf_attach_say(cmd, "reading its sock_ops programs", rc, t->dir);
		if ((rc = check_blockers(cmd, t, now)) != 0)
			return rc;
		done->replaced = ours_in(now);
		rc = nf_bpf_cgroup_attach(t->fd, prog, now);
		if (rc != -ENOENT)
			break;
	}
	return rc < 0 ? nf_attach_say(cmd, "attaching naglefix's program", rc, t->dir) : 0;
}

int nf_attach_place(const char *cmd, const struct nf_attach_target *t,
		    const struct nf_attach_policy *p, struct nf_attach_done *done)
{
	int prog = -1, rc;

	memset(done, 0, sizeof(*done));
	rc = load(cmd, t, p, &prog, &done->insns);
	if (rc == 0)
		rc = put(cmd, t, prog, done);
	if (rc == 0 && (done->id = id_of(prog)) == 0)
		rc = nf_attach_say(cmd, "reading the attached program's id", -EBADF, t->dir);
	if (prog >= 0)
		close(prog); /* the cgroup holds it now */
	if (rc == 0 && (rc = nf_bpf_cgroup_query(t->fd, &done->after, NULL)) < 0)
		rc = nf_attach_say(cmd, "reading its sock_ops programs after", rc, t->dir);
	return rc;
}

int nf_attach_remove(const char *cmd, const struct nf_attach_target *t, size_t *n)
{
	struct nf_bpf_cgroup *now = malloc(sizeof(*now));
	int rc = now ? nf_bpf_cgroup_query(t->fd, now, NULL) : -ENOMEM;

	*n = 0;
	if (rc == 0)
		rc = nf_bpf_cgroup_detach(t->fd, now, n);
	free(now);
	return rc < 0 ? nf_attach_say(cmd, "detaching naglefix's program", rc, t->dir) : 0;
}
