/*
 * fix_record.c - what fix set, kept so that it can be undone, and only
 * that: one state file a process, DIR/fix-PID (DIR: fix_dir.c), a line
 * "PID START FD INO" for each socket fix turned TCP_NODELAY on (from 0).
 * START (the process's start time) tells a PID reused since; INO a
 * descriptor reused since. A file whose process has ended is removed by
 * the next run (nf_fix_record_sweep).
 */
#include "fix_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static void state_path(pid_t pid, char *buf, size_t len)
{
	snprintf(buf, len, "%s/fix-%d", nf_fix_state_dir(), (int)pid);
}

/*
 * Locks fd (opened as name in dirfd) exclusively (how: LOCK_EX, or with
 * LOCK_NB); 1 if it is still the file at that name once locked, 0 if it
 * was removed meanwhile or (LOCK_NB) is locked (fd closed then). Every
 * unlink of a record happens under its lock, so a record written under
 * it is never lost to a removal.
 */
static int lock_linked(int dirfd, int fd, const char *name, int how)
{
	struct stat a, b;
	int e;

	if (flock(fd, how) < 0) {
		e = errno;
		close(fd);
		return e == EWOULDBLOCK ? 0 : -e;
	}
	if (fstat(fd, &a) == 0 && a.st_nlink > 0 && fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	    a.st_ino == b.st_ino && a.st_dev == b.st_dev)
		return 1;
	close(fd);
	return 0;
}

/* Opens pid's state file for reading and appending, made if need be, locked. */
static int open_state(pid_t pid)
{
	char path[4096];
	int fd, rc;

	if ((rc = nf_fix_state_dir_make()) < 0)
		return rc;
	state_path(pid, path, sizeof(path));
	do {
		fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return -errno;
	} while ((rc = lock_linked(AT_FDCWD, fd, path, LOCK_EX)) == 0);
	return rc < 0 ? rc : fd;
}

int nf_fix_record_writable(pid_t pid)
{
	const char *dir = nf_fix_state_dir();
	char path[4096];
	int rc = nf_fix_state_dir_make();

	if (rc < 0)
		return rc;
	/* the file is made by the first record only: no empty record is left */
	if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) < 0)
		return -errno;
	state_path(pid, path, sizeof(path));
	if (faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* Parses one line; 0, or -EINVAL. */
static int parse_line(const char *line, struct nf_fix_record_entry *e)
{
	int pid, fd;
	char tail;

	if (sscanf(line, "%d %llu %d %lu%c", &pid, &e->start, &fd, &e->ino, &tail) != 5 ||
	    tail != '\n' || pid <= 0 || fd < 0)
		return -EINVAL;
	e->pid = pid;
	e->fd = fd;
	return 0;
}

/* The entries read so far, and an index over them by descriptor: slot
 * holds an entry's place + 1, 0 when empty; nslots a power of two at
 * least twice n. */
struct entries {
	struct nf_fix_record_entry *v;
	size_t n, cap;
	size_t *slot, nslots;
};

/* The slot of descriptor fd: its entry's, or the empty one to fill. */
static size_t *entry_slot(const struct entries *es, int fd)
{
	size_t mask = es->nslots - 1, i = ((size_t)(unsigned)fd * 0x9e3779b97f4a7c15ull) & mask;

	while (es->slot[i] && es->v[es->slot[i] - 1].fd != fd)
		i = (i + 1) & mask;
	return &es->slot[i];
}

/* Room for one more entry: the array and the index. 0, or -ENOMEM. */
static int entries_grow(struct entries *es)
{
	if (es->n == es->cap) {
		size_t ncap = es->cap ? 2 * es->cap : 16;
		struct nf_fix_record_entry *nv = realloc(es->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		es->v = nv;
		es->cap = ncap;
	}
	if (2 * (es->n + 1) > es->nslots) {
		size_t n = es->nslots ? 2 * es->nslots : 32;
		size_t *old = es->slot;

		if (!(es->slot = calloc(n, sizeof(*es->slot)))) {
			es->slot = old;
			return -ENOMEM;
		}
		es->nslots = n;
		for (size_t i = 0; i < es->n; i++)
			*entry_slot(es, es->v[i].fd) = i + 1;
		free(old);
	}
	return 0;
}

/* e, in place of the entry of its descriptor if there is one (the later
 * line is the socket fix turned on last at that number: the earlier one's
 * socket was closed since, nothing of it to undo). 0, or -ENOMEM. */
static int entries_put(struct entries *es, const struct nf_fix_record_entry *e)
{
	size_t *slot = es->nslots ? entry_slot(es, e->fd) : NULL;

	if (slot && *slot) {
		es->v[*slot - 1] = *e;
		return 0;
	}
	if (entries_grow(es) < 0)
		return -ENOMEM;
	es->v[es->n] = *e;
	*entry_slot(es, e->fd) = ++es->n;
	return 0;
}

/* Reads every line of the open state file fd (from its start): one entry
 * a descriptor, so memory follows the process's descriptors, not the
 * record's length (a --follow of days). */
static int read_entries(int fd, struct nf_fix_record_entry **out, size_t *n)
{
	struct entries es = { 0 };
	struct nf_fix_record_entry e;
	char line[256];
	int dfd = dup(fd), rc = 0;
	FILE *f;

	if (dfd < 0)
		return -errno;
	f = fdopen(dfd, "r");
	if (!f) {
		close(dfd);
		return -ENOMEM;
	}
	rewind(f);
	while (rc == 0 && fgets(line, sizeof(line), f))
		rc = parse_line(line, &e) < 0 ? -EINVAL : entries_put(&es, &e);
	fclose(f);
	free(es.slot);
	if (rc < 0) {
		free(es.v);
		return rc;
	}
	*out = es.v;
	*n = es.n;
	return 0;
}

/* The start time of the record's first line (0: an empty file), or -EINVAL. */
static int first_start(int fd, unsigned long long *start)
{
	char line[128];
	struct nf_fix_record_entry e;
	ssize_t n = pread(fd, line, sizeof(line) - 1, 0);
	char *nl;

	*start = 0;
	if (n <= 0)
		return 0;
	line[n] = '\0';
	nl = strchr(line, '\n');
	if (!nl)
		return -EINVAL;
	nl[1] = '\0';
	if (parse_line(line, &e) < 0)
		return -EINVAL;
	*start = e.start;
	return 0;
}

int nf_fix_record_add(const struct nf_fix_proc *p, int fd, unsigned long ino)
{
	char line[128];
	unsigned long long start;
	int sfd = open_state(p->pid), rc = 0, len;

	if (sfd < 0)
		return sfd;
	/* a file of an earlier process of this PID (or not a record) starts over */
	if ((first_start(sfd, &start) < 0 || (start && start != p->start)) && ftruncate(sfd, 0) < 0)
		rc = -errno;
	if (rc == 0) {
		len = snprintf(line, sizeof(line), "%d %llu %d %lu\n", (int)p->pid, p->start, fd, ino);
		if (write(sfd, line, (size_t)len) != len)
			rc = errno ? -errno : -EIO;
	}
	close(sfd);
	return rc;
}

int nf_fix_record_read(pid_t pid, struct nf_fix_record_entry **out, size_t *n)
{
	char path[4096];
	int fd, rc = nf_fix_state_dir_safe();

	if (rc < 0)
		return rc;
	state_path(pid, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_SH) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rc = read_entries(fd, out, n);
	close(fd);
	return rc;
}

int nf_fix_record_forget(pid_t pid)
{
	char path[4096];
	int fd, rc = 0;

	state_path(pid, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if ((rc = lock_linked(AT_FDCWD, fd, path, LOCK_EX)) <= 0)
		return rc; /* removed meanwhile */
	rc = unlink(path) < 0 && errno != ENOENT ? -errno : 0;
	close(fd);
	return rc;
}

/* Removes the record file name of the open directory dirfd if its
 * process has ended; 1 if removed, else 0. Judged under its lock. */
static int sweep_one(int dirfd, const char *name)
{
	char *end;
	long pid = strtol(name + 4, &end, 10);
	unsigned long long start;
	int fd, gone = 0;

	if (strncmp(name, "fix-", 4) != 0 || *end || end == name + 4 || pid <= 0)
		return 0;
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	/* one in use (locked) is being written: not one to judge now */
	if (lock_linked(dirfd, fd, name, LOCK_EX | LOCK_NB) != 1)
		return 0;
	if (first_start(fd, &start) == 0 && nf_fix_proc_alive((pid_t)pid, start) == 0)
		gone = unlinkat(dirfd, name, 0) == 0;
	close(fd);
	return gone;
}

int nf_fix_record_sweep(void)
{
	DIR *d;
	struct dirent *e;
	int n = nf_fix_state_dir_safe();

	if (n < 0)
		return n;
	if (!(d = opendir(nf_fix_state_dir())))
		return -errno;
	while ((e = readdir(d)) != NULL)
		if (e->d_type == DT_REG || e->d_type == DT_UNKNOWN)
			n += sweep_one(dirfd(d), e->d_name);
	closedir(d);
	return n;
}
