/*
 * attach_list.c - every cgroup's sock_ops and setsockopt programs
 * (attach_int.h): the walk over the cgroup v2 tree that attach --list and
 * detach --all make, and --list's lines: each cgroup with a program of
 * naglefix's (its rules as the kernel keeps them, and its counts) or
 * another tool's.
 */
#include "attach_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/common/nf_cli.h"

#define WALK_DEPTH 32 /* a tree anyone can write to could be very deep */

/* The walk below the open directory d (path dir), depth levels deep. */
static int walk(int d, char *dir, size_t len, int depth, int (*fn)(const char *, void *), void *arg)
{
	DIR *ds;
	struct dirent *e;
	int rc = fn(dir, arg);

	if (rc != 0 || depth >= WALK_DEPTH || !(ds = fdopendir(d)))
		return rc;
	while (rc == 0 && (e = readdir(ds)) != NULL) {
		size_t n = strlen(dir);
		int sub;

		if (e->d_type != DT_DIR || e->d_name[0] == '.' || n + strlen(e->d_name) + 2 > len)
			continue;
		sub = openat(dirfd(ds), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue; /* removed meanwhile */
		snprintf(dir + n, len - n, "/%s", e->d_name);
		rc = walk(sub, dir, len, depth + 1, fn, arg);
		dir[n] = '\0';
	}
	closedir(ds);
	return rc;
}

int nf_attach_each_cgroup(const char *root, int (*fn)(const char *dir, void *arg), void *arg)
{
	char dir[NF_CGROUP_PATH_MAX];
	int d = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (d < 0)
		return -errno;
	snprintf(dir, sizeof(dir), "%s", root);
	return walk(d, dir, sizeof(dir), 0, fn, arg);
}

/* What --list found. */
struct lister {
	const char *root;
	struct nf_bpf_cgroup c, opt; /* sock_ops, setsockopt */
	struct nf_bpf_state *st;
	size_t cgroups, ours;
	int status;
};

/* The line's words, its comment and outer blanks cut, in place. */
static char *words(char *line)
{
	char *hash = strchr(line, '#'), *end;

	if (hash)
		*hash = '\0';
	line += strspn(line, " \t\r\v\f");
	end = line + strlen(line);
	while (end > line && strchr(" \t\r\v\f", end[-1]))
		*--end = '\0';
	return line;
}

/* The rules of the state st, one line each as its file wrote them. */
static void print_rules(const struct nf_bpf_state *st)
{
	char q[NF_CLI_QUOTE_MAX];
	const char *p = st->text;

	printf("    rules from %s:\n", nf_cli_quote(st->source, q));
	for (int lineno = 1; *p; lineno++) {
		size_t n = strcspn(p, "\n");
		char line[NF_CLI_QUOTE_MAX], *w;

		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		w = words(line);
		if (*w)
			printf("    %6d  %s\n", lineno, nf_cli_quote(w, q));
		p += n + (p[n] == '\n');
	}
}

/* The cgroup's setsockopt programs: naglefix's with what it kept, the
 * others by id, name and mode. */
static void print_setsockopt(const struct lister *l)
{
	for (size_t i = 0; i < l->opt.n && i < NF_BPF_CGROUP_MAX; i++) {
		const struct nf_bpf_attached *a = &l->opt.v[i];

		if (a->ours)
			printf("  setsockopt program %u '%s' (%s): naglefix's; TCP_NODELAY kept on %llu "
			       "time%s the program turned it off\n",
			       (unsigned)a->id, a->name, nf_bpf_mode_name(l->opt.flags),
			       (unsigned long long)l->st->counts.kept, l->st->counts.kept == 1 ? "" : "s");
		else
			printf("  setsockopt program %u '%s' (%s): another tool's, left as it is\n",
			       (unsigned)a->id, a->name, nf_bpf_mode_name(l->opt.flags));
	}
}

/* One cgroup's lines: naglefix's program with its rules and counts, the
 * others by id, name and mode. */
static void print_cgroup(struct lister *l, const char *dir)
{
	char rel[NF_CGROUP_PATH_MAX], name[NF_CGROUP_NAME_MAX];
	size_t n = strlen(l->root);
	const struct nf_bpf_counts *k = &l->st->counts;

	snprintf(rel, sizeof(rel), "%s", dir[n] ? dir + n : "/");
	nf_cgroup_name(rel, name, sizeof(name));
	printf("%s (%s)\n", dir, name);
	for (size_t i = 0; i < l->c.n && i < NF_BPF_CGROUP_MAX; i++) {
		const struct nf_bpf_attached *a = &l->c.v[i];

		if (!a->ours) {
			printf("  program %u '%s' (%s): another tool's, left as it is\n", (unsigned)a->id,
			       a->name, nf_bpf_mode_name(l->c.flags));
			continue;
		}
		printf("  program %u '%s' (%s): naglefix's; TCP_NODELAY set on %llu connection%s, "
		       "%llu refused%s%s\n",
		       (unsigned)a->id, a->name, nf_bpf_mode_name(l->c.flags),
		       (unsigned long long)k->set, k->set == 1 ? "" : "s", (unsigned long long)k->failed,
		       k->failed ? ", the last with " : "", k->failed ? strerror(-k->last_err) : "");
		print_rules(l->st);
	}
	print_setsockopt(l);
}

/* One cgroup of the walk: its lines if it has sock_ops or setsockopt
 * programs (none of the latter where the kernel has no such hook). */
static int list_one(const char *dir, void *arg)
{
	struct lister *l = arg;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;

	if (fd < 0)
		return 0; /* removed meanwhile */
	rc = nf_bpf_cgroup_query(fd, NF_BPF_SETSOCKOPT, &l->opt, l->st);
	if (rc == -EINVAL)
		rc = l->opt.n = 0;
	if (rc == 0)
		rc = nf_bpf_cgroup_query(fd, NF_BPF_SOCK_OPS, &l->c, l->st);
	close(fd);
	if (rc < 0) {
		l->status = nf_attach_say("attach --list", "reading its programs", rc, dir);
		return l->status == NF_ATTACH_EXIT_PERM || l->status == NF_ATTACH_EXIT_KERNEL ? 1 : 0;
	}
	if (l->c.n == 0 && l->opt.n == 0)
		return 0;
	l->cgroups++;
	l->ours += l->c.ours > 0;
	print_cgroup(l, dir);
	return 0;
}

int nf_attach_list(void)
{
	char root[NF_CGROUP_PATH_MAX];
	struct lister l = { .root = root };
	int rc = nf_cgroup_root(root, sizeof(root));

	if (rc < 0)
		return nf_attach_say("attach --list", "finding the cgroup v2 hierarchy",
				     rc == -ENOENT ? -ENOMEDIUM : rc, NULL);
	l.st = malloc(sizeof(*l.st));
	if (!l.st)
		return nf_attach_say("attach --list", "reading the cgroups", -ENOMEM, root);
	rc = nf_attach_each_cgroup(root, list_one, &l);
	free(l.st);
	if (rc < 0)
		return nf_attach_say("attach --list", "reading the cgroups", rc, root);
	if (l.status == 0)
		printf("%zu cgroup%s with a sock_ops or setsockopt program under %s, %zu of them "
		       "naglefix's\n",
		       l.cgroups, l.cgroups == 1 ? "" : "s", root, l.ours);
	rc = nf_attach_route_list();
	return l.status ? l.status : rc;
}
