/*
 * cgroup.c - where this host's cgroups are (nf_cgroup.h): the cgroup2
 * mount, a process's cgroup, the directory a --cgroup argument or a
 * systemd unit names, and the processes in a cgroup's subtree. Read from
 * /proc/self/mountinfo, /proc/PID/cgroup and the cgroup2 tree itself,
 * whose walks open each directory below the last with O_NOFOLLOW and stop
 * at a bounded depth (a tree someone can write to could hold a loop of
 * links or a very deep chain).
 */
#include "nf_cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How deep the walks go below the directory they start from. */
#define WALK_DEPTH 32

/* Copies s to out of len bytes: 0, or -ENAMETOOLONG. */
static int put(char *out, size_t len, const char *s)
{
	size_t n = strlen(s);

	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(out, s, n + 1);
	return 0;
}

/* mountinfo's octal escapes (\040 for a space) undone in place. */
static void unescape(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

/* A mountinfo line's mount point when it mounts cgroup2, else NULL;
 * *whole set when it mounts the hierarchy's root ("/"), not a subtree. */
static char *cgroup2_mount(char *line, int *whole)
{
	char *save = NULL, *f[5], *t;
	int i = 0;

	for (t = strtok_r(line, " \n", &save); t && i < 5; t = strtok_r(NULL, " \n", &save))
		f[i++] = t;
	if (i < 5)
		return NULL;
	while (t && strcmp(t, "-") != 0)
		t = strtok_r(NULL, " \n", &save);
	t = t ? strtok_r(NULL, " \n", &save) : NULL;
	if (!t || strcmp(t, "cgroup2") != 0)
		return NULL;
	*whole = strcmp(f[3], "/") == 0;
	unescape(f[4]);
	return f[4];
}

int nf_cgroup_root(char *out, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL, *mnt;
	size_t cap = 0;
	int rc = -ENOENT, whole;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		mnt = cgroup2_mount(line, &whole);
		if (mnt && (rc == -ENOENT || whole))
			rc = put(out, len, mnt);
		if (mnt && whole)
			break;
	}
	free(line);
	fclose(f);
	return rc;
}

/* The path of a /proc/PID/cgroup line ("N:controllers:path\n"), its
 * newline cut, or NULL; *ctl set to its controllers (cut at their ':'). */
static char *cgroup_line_path(char *line, char **ctl)
{
	char *a = strchr(line, ':'), *b;

	if (!a)
		return NULL;
	b = strchr(a + 1, ':');
	if (!b)
		return NULL;
	*b = '\0';
	*ctl = a + 1;
	b[1 + strcspn(b + 1, "\n")] = '\0';
	return b + 1;
}

/* Is the controllers field ctl (comma-separated) naming name=systemd? */
static int is_systemd_v1(const char *ctl)
{
	size_t n = strlen("name=systemd");

	for (const char *p = ctl; (p = strstr(p, "name=systemd")) != NULL; p += n)
		if ((p == ctl || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
			return 1;
	return 0;
}

int nf_cgroup_of_pid(pid_t pid, char *out, size_t len)
{
	char file[64], *line = NULL, *path, *ctl, v2[NF_CGROUP_PATH_MAX] = "", v1[NF_CGROUP_PATH_MAX] = "";
	size_t cap = 0;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	f = fopen(file, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		path = cgroup_line_path(line, &ctl);
		if (path && line[0] == '0' && line[1] == ':' && ctl[0] == '\0')
			snprintf(v2, sizeof(v2), "%s", path);
		else if (path && is_systemd_v1(ctl))
			snprintf(v1, sizeof(v1), "%s", path);
	}
	free(line);
	fclose(f);
	if ((v2[0] == '\0' || strcmp(v2, "/") == 0) && v1[0] != '\0')
		return put(out, len, v1);
	return v2[0] ? put(out, len, v2) : -ENOENT;
}

int nf_cgroup_name_of(pid_t pid, char *out, size_t len)
{
	char rel[NF_CGROUP_PATH_MAX];
	int rc = nf_cgroup_of_pid(pid, rel, sizeof(rel));

	if (rc < 0) {
		if (len)
			out[0] = '\0';
		return rc;
	}
	nf_cgroup_name(rel, out, len);
	return 0;
}

/* Is path the directory dir or below it? */
static int is_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The path arg names, before links are resolved, into cand (of
 * PATH_MAX): arg itself when inside root, else arg below root. 0,
 * -EXDEV (arg is an existing path outside root), -ENAMETOOLONG. */
static int candidate(const char *root, const char *arg, char *cand)
{
	struct stat st;
	int n;

	if (arg[0] == '/' && is_under(arg, root))
		return put(cand, PATH_MAX, arg);
	n = snprintf(cand, PATH_MAX, "%s%s%s", root, arg[0] == '/' ? "" : "/", arg);
	if (n < 0 || n >= PATH_MAX)
		return -ENAMETOOLONG;
	if (arg[0] == '/' && stat(cand, &st) != 0 && stat(arg, &st) == 0)
		return -EXDEV;
	return 0;
}

/* Is the existing path dir a cgroup (a directory with cgroup.procs)? 0,
 * -ENOTDIR, or -errno. */
static int is_cgroup(const char *dir)
{
	char procs[PATH_MAX + 16];
	struct stat st;

	if (stat(dir, &st) != 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	return access(procs, F_OK) == 0 ? 0 : -ENOTDIR;
}

int nf_cgroup_resolve(const char *arg, char *out, size_t len)
{
	char mnt[PATH_MAX], root[PATH_MAX], cand[PATH_MAX], real[PATH_MAX];
	int rc = nf_cgroup_root(mnt, sizeof(mnt));

	if (rc < 0)
		return rc;
	if (!arg || !arg[0])
		return -ENOENT;
	if (!realpath(mnt, root))
		return -errno;
	rc = candidate(root, arg, cand);
	if (rc < 0)
		return rc;
	if (!realpath(cand, real))
		return -errno;
	if (!is_under(real, root))
		return -EXDEV;
	rc = is_cgroup(real);
	return rc < 0 ? rc : put(out, len, real);
}

void nf_cgroup_unresolved(int rc, char *out, size_t len)
{
	char root[PATH_MAX];

	if (nf_cgroup_root(root, sizeof(root)) < 0)
		snprintf(root, sizeof(root), "none mounted");
	if (rc == -ENOENT)
		snprintf(out, len, "no such cgroup under %s", root);
	else if (rc == -ENOTDIR || rc == -EXDEV)
		snprintf(out, len, "not a cgroup of the cgroup2 hierarchy (%s): give a path inside it, "
			 "or one relative to it", root);
	else
		snprintf(out, len, "%s", strerror(-rc));
}

/* Does the unit name end in a unit type's suffix? */
static int has_unit_suffix(const char *unit)
{
	static const char *const sfx[] = { ".service", ".scope", ".slice", ".socket", ".mount",
					   ".swap" };
	size_t n = strlen(unit);

	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		size_t k = strlen(sfx[i]);

		if (n > k && strcmp(unit + n - k, sfx[i]) == 0)
			return 1;
	}
	return 0;
}

/* Does the cgroup directory name (below dirfd) hold a process, itself or
 * below ("populated 1" in its cgroup.events)? */
static int populated(int dirfd, const char *name)
{
	char file[NAME_MAX + 16], buf[256];
	ssize_t n;
	int fd;

	snprintf(file, sizeof(file), "%s/cgroup.events", name);
	fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strncmp(buf, "populated 1", 11) == 0 || strstr(buf, "\npopulated 1") != NULL;
}

/* Opens the directory name below dirfd without following a link: a DIR,
 * or NULL (errno set). */
static DIR *open_below(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

/* Is the entry e of d a directory (not a link to one)? */
static int is_subdir(DIR *d, const struct dirent *e)
{
	struct stat st;

	if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
		return 0;
	if (e->d_type != DT_UNKNOWN)
		return e->d_type == DT_DIR;
	return fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* The search for a unit's directory: its name, the path walked so far
 * (relative to the root), the best match and its depth. */
struct unit_search {
	const char *name;
	char path[PATH_MAX];
	char best[PATH_MAX];
	int best_depth;
};

static void search_unit(DIR *d, size_t plen, int depth, struct unit_search *s);

/* Takes the subdirectory name of d (at depth) into the search: a match,
 * then its own subdirectories while a shallower match is still possible. */
static void search_entry(DIR *d, const char *name, size_t plen, int depth, struct unit_search *s)
{
	size_t n = strlen(name);
	DIR *sub;

	if (plen + 1 + n >= sizeof(s->path))
		return;
	s->path[plen] = '/';
	memcpy(s->path + plen + 1, name, n + 1);
	if (strcmp(name, s->name) == 0 && depth < s->best_depth && populated(dirfd(d), name)) {
		memcpy(s->best, s->path, plen + n + 2);
		s->best_depth = depth;
	}
	if (depth + 1 >= s->best_depth || depth + 1 >= WALK_DEPTH)
		return;
	sub = open_below(dirfd(d), name);
	if (sub) {
		search_unit(sub, plen + 1 + n, depth + 1, s);
		closedir(sub);
	}
}

/* Searches the directory d, at depth below the root, whose path is
 * s->path[0..plen). */
static void search_unit(DIR *d, size_t plen, int depth, struct unit_search *s)
{
	struct dirent *e;

	while ((e = readdir(d)) != NULL)
		if (is_subdir(d, e))
			search_entry(d, e->d_name, plen, depth, s);
}

/* The absolute directory of the shallowest populated cgroup named name
 * below root, into out. 0, -ENOENT, or -errno. */
static int find_unit(const char *root, const char *name, char *out, size_t len)
{
	struct unit_search *s = calloc(1, sizeof(*s)); /* 8 KB of paths: off the stack */
	DIR *d = s ? opendir(root) : NULL;
	int rc = -ENOENT;

	if (!d) {
		rc = s ? -errno : -ENOMEM;
		free(s);
		return rc;
	}
	s->name = name;
	s->best_depth = WALK_DEPTH;
	search_unit(d, 0, 0, s);
	closedir(d);
	if (s->best[0])
		rc = snprintf(out, len, "%s%s", root, s->best) < (int)len ? 0 : -ENAMETOOLONG;
	free(s);
	return rc;
}

int nf_cgroup_unit_name(const char *unit, char *out, size_t len)
{
	int n = snprintf(out, len, "%s%s", unit, has_unit_suffix(unit) ? "" : ".service");

	return n >= 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

int nf_cgroup_of_unit(const char *unit, char *out, size_t len)
{
	char root[PATH_MAX], name[NAME_MAX + 1];
	int rc;

	if (!unit || !unit[0] || strchr(unit, '/'))
		return -EINVAL;
	if ((rc = nf_cgroup_unit_name(unit, name, sizeof(name))) < 0)
		return rc;
	rc = nf_cgroup_root(root, sizeof(root));
	return rc < 0 ? rc : find_unit(root, name, out, len);
}

/* A growing list of pids. */
struct pid_list {
	pid_t *v;
	size_t n, cap;
};

static int pid_add(struct pid_list *l, pid_t pid)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		pid_t *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = pid;
	return 0;
}

/* Adds the pids of d's cgroup.procs to l. 0, or -errno (a cgroup that
 * went away meanwhile is empty, not an error). */
static int read_procs(DIR *d, struct pid_list *l)
{
	int fd = openat(dirfd(d), "cgroup.procs", O_RDONLY | O_CLOEXEC | O_NOFOLLOW), rc = 0;
	FILE *f;
	long pid;

	if (fd < 0)
		return errno == ENOENT || errno == ENODEV ? 0 : -errno;
	f = fdopen(fd, "re");
	if (!f) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while (rc == 0 && fscanf(f, "%ld", &pid) == 1)
		if (pid > 0 && pid <= INT_MAX)
			rc = pid_add(l, (pid_t)pid);
	fclose(f);
	return rc;
}

/* Adds the pids of the cgroup d and its descendants (depth below the
 * start) to l. */
static int walk_pids(DIR *d, int depth, struct pid_list *l)
{
	struct dirent *e;
	DIR *sub;
	int rc = read_procs(d, l);

	while (rc == 0 && depth < WALK_DEPTH && (e = readdir(d)) != NULL) {
		if (!is_subdir(d, e))
			continue;
		sub = open_below(dirfd(d), e->d_name);
		if (!sub)
			continue; /* gone meanwhile */
		rc = walk_pids(sub, depth + 1, l);
		closedir(sub);
	}
	return rc;
}

static int pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* Sorts l and drops repeats (a process moved during the walk is seen in
 * both cgroups). */
static void pid_unique(struct pid_list *l)
{
	size_t w = 0;

	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), pid_cmp);
	for (size_t i = 0; i < l->n; i++)
		if (w == 0 || l->v[w - 1] != l->v[i])
			l->v[w++] = l->v[i];
	l->n = w;
}

int nf_cgroup_pids(const char *dir, pid_t **pids, size_t *n)
{
	struct pid_list l = { 0 };
	DIR *d = opendir(dir);
	int rc;

	*pids = NULL;
	*n = 0;
	if (!d)
		return -errno;
	rc = walk_pids(d, 0, &l);
	closedir(d);
	if (rc < 0) {
		free(l.v);
		return rc;
	}
	pid_unique(&l);
	*pids = l.v;
	*n = l.n;
	return 0;
}
