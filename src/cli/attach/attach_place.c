/*
 * attach_place.c - naglefix's programs put on one cgroup as one, or taken
 * off it (attach_int.h), with what must be checked first: that this
 * kernel can set TCP_NODELAY from sock_ops (the probe), and that no other
 * program's mode stands in the way of either. Another program is never
 * replaced, detached or silenced: where the kernel would have to (a
 * program attached without BPF_F_ALLOW_MULTI here or above), nothing is
 * changed and one line says which program and which mode. The sock_ops
 * program goes first, the setsockopt program second; if the second
 * cannot go, the first is undone (naglefix's earlier program put back in
 * its place, or the new one taken off): never one without the other.
 * The map of marks of the setsockopt program there is what attach --now
 * hands fix, to mark the connections it sets.
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

#include "cli/common/nf_cli.h"

int nf_attach_check_access(const char *cmd, const struct nf_attach_target *t)
{
	struct nf_bpf_cgroup *c = malloc(sizeof(*c));
	int rc = c ? nf_bpf_cgroup_query(t->fd, NF_BPF_SOCK_OPS, c, NULL) : -ENOMEM;

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
	nf_cli_warnx_as(cmd, 0,
		"this kernel (Linux %s) does not let a sock_ops program set TCP_NODELAY "
		"(bpf_setsockopt: %s; Linux 6.0 and later do): nothing attached; use naglefix fix or "
		"the library instead", u.release, err ? strerror(-err) : "the option stayed off");
	return NF_ATTACH_EXIT_KERNEL;
}

/* "reading its sock_ops programs" and the like, for kind. */
static const char *step(char *buf, size_t len, const char *what, enum nf_bpf_kind kind)
{
	snprintf(buf, len, what, nf_bpf_kind_name(kind));
	return buf;
}

/* The programs of kind of the cgroup directory dir into *c. */
static int query_dir(const char *dir, enum nf_bpf_kind kind, struct nf_bpf_cgroup *c)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	rc = nf_bpf_cgroup_query(fd, kind, c, NULL);
	close(fd);
	return rc;
}

/* The nearest ancestor of t's cgroup with programs of kind decides
 * whether one can be added here: multi lets it (both run), override would
 * see its program replaced for this cgroup's connections, exclusive lets
 * none (the kernel refuses). */
static int check_ancestors(const char *cmd, const struct nf_attach_target *t, enum nf_bpf_kind kind)
{
	char dir[NF_CGROUP_PATH_MAX], *up = dir, s[64];
	struct nf_bpf_cgroup *c = malloc(sizeof(*c));
	int rc = c ? 0 : nf_attach_say(cmd, step(s, sizeof(s), "reading the %s programs", kind), -ENOMEM,
				       t->dir);

	snprintf(dir, sizeof(dir), "%s", t->dir);
	while (rc == 0 && strlen(up) > strlen(t->root)) {
		up = dirname(up);
		if ((rc = query_dir(up, kind, c)) < 0)
			rc = nf_attach_say(cmd, step(s, sizeof(s), "reading the %s programs", kind), rc, up);
		else if (c->n > 0 && !(c->flags & BPF_F_ALLOW_MULTI))
			rc = nf_attach_say_blocked(cmd, t->dir, up, kind, &c->v[0], c->flags,
						   c->flags & BPF_F_ALLOW_OVERRIDE
							   ? "a program here would take its place for this "
							     "cgroup's sockets"
							   : "the kernel lets no program be attached below it");
		else if (c->n > 0)
			break; /* multi: the kernel runs both; those above are its business */
	}
	free(c);
	return rc;
}

/* Whether a program of naglefix's can go on t's cgroup, whose programs
 * of its kind now lists. */
static int check_blockers(const char *cmd, const struct nf_attach_target *t,
			  const struct nf_bpf_cgroup *now)
{
	if (now->n > now->ours && !(now->flags & BPF_F_ALLOW_MULTI)) {
		for (size_t i = 0; i < now->n && i < NF_BPF_CGROUP_MAX; i++)
			if (!now->v[i].ours)
				return nf_attach_say_blocked(cmd, t->dir, "this cgroup", now->kind, &now->v[i],
							     now->flags,
							     "the kernel takes a second program only where "
							     "all are multi");
	}
	return now->n == 0 ? check_ancestors(cmd, t, now->kind) : 0;
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

/* The programs of each kind the loaded ones will go beside, checked:
 * nothing in the way of either (before either is attached). */
static int check_both(const char *cmd, const struct nf_attach_target *t,
		      const struct nf_attach_loaded *l, struct nf_attach_done *done)
{
	char s[64];
	int rc;

	for (int k = 0; k < 2; k++) {
		if (l->fd[k] < 0)
			continue;
		if ((rc = nf_bpf_cgroup_query(t->fd, (enum nf_bpf_kind)k, &done->prog[k].after, NULL)) < 0)
			return nf_attach_say(cmd, step(s, sizeof(s), "reading its %s programs",
						       (enum nf_bpf_kind)k), rc, t->dir);
		if ((rc = check_blockers(cmd, t, &done->prog[k].after)) != 0)
			return rc;
	}
	return 0;
}

/* An attach to undo if the next one fails: the program new_fd of kind
 * put in the place of old_fd (-1: none). */
struct undo {
	enum nf_bpf_kind kind;
	int new_fd, old_fd;
};

/* The step that failed, with what its undo did (u NULL: nothing to undo). */
static const char *failed_step(char *buf, size_t len, enum nf_bpf_kind kind,
			       const struct nf_attach_target *t, const struct undo *u)
{
	int rc = u ? nf_bpf_cgroup_restore(t->fd, u->kind, u->new_fd, u->old_fd) : 0;

	snprintf(buf, len, "attaching naglefix's %s program%s%s%s", nf_bpf_kind_name(kind),
		 !u ? "" : rc == 0 ? " (its sock_ops program undone: nothing changed)"
				   : " (undoing its sock_ops program failed too: ",
		 u && rc < 0 ? strerror(-rc) : "", u && rc < 0 ? ")" : "");
	return buf;
}

/* Attaches the program prog of now's kind in the place of naglefix's
 * there (its descriptor kept in *old for an undo, -1 none); once more if
 * that one went meanwhile (detached by hand). If it fails, u (if not
 * NULL) is undone first. */
static int put(const char *cmd, const struct nf_attach_target *t, int prog,
	       struct nf_attach_prog *done, int *old, const struct undo *u)
{
	struct nf_bpf_cgroup *now = &done->after;
	enum nf_bpf_kind kind = now->kind;
	char s[128];
	int rc = -ENOENT, fd;

	*old = -1;
	for (int tries = 0; tries < 2 && rc == -ENOENT; tries++) {
		if (tries > 0 && (rc = nf_bpf_cgroup_query(t->fd, kind, now, NULL)) < 0)
			return nf_attach_say(cmd, step(s, sizeof(s), "reading its %s programs", kind), rc,
					     t->dir);
		done->replaced = ours_in(now);
		fd = done->replaced ? nf_bpf_prog_get(done->replaced) : -1;
		if (fd < 0 && done->replaced && fd != -ENOENT)
			return nf_attach_say(cmd, "holding naglefix's program there", fd, t->dir);
		rc = fd == -ENOENT ? -ENOENT : nf_bpf_cgroup_attach(t->fd, prog, now);
		if (rc == 0)
			*old = fd;
		else if (fd >= 0)
			close(fd);
	}
	return rc < 0 ? nf_attach_say(cmd, failed_step(s, sizeof(s), kind, t, u), rc, t->dir) : 0;
}

/* The sock_ops program, then the setsockopt program; the first undone
 * if the second fails. */
static int put_both(const char *cmd, const struct nf_attach_target *t,
		    const struct nf_attach_loaded *l, struct nf_attach_done *done)
{
	int old[2] = { -1, -1 }, rc;
	struct undo u = { NF_BPF_SOCK_OPS, l->fd[NF_BPF_SOCK_OPS], -1 };

	rc = put(cmd, t, l->fd[NF_BPF_SOCK_OPS], &done->prog[NF_BPF_SOCK_OPS], &old[NF_BPF_SOCK_OPS],
		 NULL);
	u.old_fd = old[NF_BPF_SOCK_OPS];
	if (rc == 0 && l->fd[NF_BPF_SETSOCKOPT] >= 0)
		rc = put(cmd, t, l->fd[NF_BPF_SETSOCKOPT], &done->prog[NF_BPF_SETSOCKOPT],
			 &old[NF_BPF_SETSOCKOPT], &u);
	for (int k = 0; k < 2; k++)
		if (old[k] >= 0)
			close(old[k]);
	return rc;
}

int nf_attach_place(const char *cmd, const struct nf_attach_target *t,
		    const struct nf_attach_policy *p, struct nf_attach_done *done)
{
	struct nf_attach_loaded l;
	char s[64];
	int rc;

	memset(done, 0, sizeof(*done));
	done->prog[NF_BPF_SETSOCKOPT].after.kind = NF_BPF_SETSOCKOPT;
	rc = nf_attach_load(cmd, t, p, &l);
	if (rc != 0)
		return rc;
	rc = check_both(cmd, t, &l, done);
	if (rc == 0)
		rc = put_both(cmd, t, &l, done);
	for (int k = 0; k < 2 && rc == 0; k++) {
		if (l.fd[k] < 0)
			continue;
		done->prog[k].insns = l.insns[k];
		if ((done->prog[k].id = id_of(l.fd[k])) == 0)
			rc = nf_attach_say(cmd, "reading the attached program's id", -EBADF, t->dir);
		else if ((rc = nf_bpf_cgroup_query(t->fd, (enum nf_bpf_kind)k, &done->prog[k].after,
						   NULL)) < 0)
			rc = nf_attach_say(cmd, step(s, sizeof(s), "reading its %s programs after",
						     (enum nf_bpf_kind)k), rc, t->dir);
	}
	nf_attach_loaded_close(&l); /* the cgroup holds them now */
	return rc;
}

int nf_attach_remove(const char *cmd, const struct nf_attach_target *t, size_t *n)
{
	struct nf_bpf_cgroup *now = malloc(sizeof(*now));
	char s[64] = "detaching naglefix's programs";
	int rc = now ? 0 : -ENOMEM;
	size_t one;

	*n = 0;
	/* setsockopt's first: a failure between the two leaves sock_ops
	 * alone (what a kernel without the hook has), never a setsockopt
	 * program that keeps forcing 1 after the user asked for a detach */
	for (int k = NF_BPF_SETSOCKOPT; k >= NF_BPF_SOCK_OPS && rc == 0; k--) {
		rc = nf_bpf_cgroup_query(t->fd, (enum nf_bpf_kind)k, now, NULL);
		if (rc == -EINVAL && k == NF_BPF_SETSOCKOPT)
			rc = 0; /* no such hook (before 5.3): nothing of naglefix's there */
		else if (rc == 0 && (rc = nf_bpf_cgroup_detach(t->fd, now, &one)) == 0)
			*n += one;
		if (rc < 0)
			step(s, sizeof(s), "detaching naglefix's %s program", (enum nf_bpf_kind)k);
	}
	free(now);
	return rc < 0 ? nf_attach_say(cmd, s, rc, t->dir) : 0;
}

/* A descriptor above 0 for fd (one nf_fix_req takes: 0 means none there). */
static int above_zero(int fd)
{
	int again;

	if (fd != 0)
		return fd;
	again = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return again < 0 ? -errno : again;
}

/* The id of naglefix's setsockopt program on t's cgroup into *id, 0 none. */
static int ours_opt(const struct nf_attach_target *t, uint32_t *id)
{
	struct nf_bpf_cgroup *c = malloc(sizeof(*c));
	int rc = c ? nf_bpf_cgroup_query(t->fd, NF_BPF_SETSOCKOPT, c, NULL) : -ENOMEM;

	*id = rc == 0 ? ours_in(c) : 0;
	free(c);
	return rc == -EINVAL ? 0 : rc; /* no such hook (before 5.3): none */
}

int nf_attach_marks(const struct nf_attach_target *t)
{
	uint32_t id;
	int rc = ours_opt(t, &id), prog;

	if (rc < 0)
		return rc;
	if (!id)
		return -ENOENT;
	if ((prog = nf_bpf_prog_get(id)) < 0)
		return prog;
	rc = nf_bpf_marks_of_prog(prog);
	close(prog);
	return rc < 0 ? rc : above_zero(rc);
}
