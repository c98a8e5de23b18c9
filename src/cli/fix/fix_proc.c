/*
 * fix_proc.c - a process to fix: its pidfd (held from the start), its
 * start time and owner, whether the library runs in it, and its socket
 * descriptors from /proc/PID/fd.
 */
#include "fix_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int sys_pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Reads /proc/PID/stat's state (field 3) and start time (field 22). */
static int read_stat(pid_t pid, char *state, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	/* the command name (field 2) may hold spaces and ')': after the last ')' */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EINVAL;
	*state = p[2];
	p++;
	for (int field = 3; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EINVAL;
	}
	*start = strtoull(p + 1, NULL, 10);
	return 0;
}

int nf_fix_proc_start_time(pid_t pid, unsigned long long *start)
{
	char state;

	return read_stat(pid, &state, start);
}

int nf_fix_proc_alive(pid_t pid, unsigned long long start)
{
	unsigned long long now;
	char state;
	int rc = read_stat(pid, &state, &now);

	if (rc == -ESRCH)
		return 0;
	if (rc < 0)
		return rc;
	/* a zombie has no descriptors left: nothing of it can be undone */
	return state != 'Z' && state != 'X' && (!start || now == start);
}

/*
 * p->uid (the real uid of /proc/PID/status) and p->dumpable: the kernel
 * makes /proc/PID root's when the process is not dumpable (setuid, setcap,
 * prctl(PR_SET_DUMPABLE, 0)), else its effective uid's.
 */
static void read_owner(struct nf_fix_proc *p)
{
	char path[64], line[256];
	unsigned long ruid, euid;
	struct stat st;
	FILE *f;

	p->uid = (uid_t)-1;
	p->dumpable = 1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)p->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %lu %lu", &ruid, &euid) == 2) {
			p->uid = (uid_t)ruid;
			snprintf(path, sizeof(path), "/proc/%d", (int)p->pid);
			if (stat(path, &st) == 0)
				p->dumpable = st.st_uid == (uid_t)euid || euid == 0;
			break;
		}
	fclose(f);
}

int nf_fix_proc_open(pid_t pid, struct nf_fix_proc *p)
{
	int rc;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->pidfd = sys_pidfd_open(pid);
	if (p->pidfd < 0)
		return -errno;
	rc = nf_fix_proc_start_time(pid, &p->start);
	if (rc == 0 && nf_fix_proc_ended(p))
		rc = -ESRCH;
	if (rc < 0) {
		nf_fix_proc_close(p);
		return rc;
	}
	read_owner(p);
	return 0;
}

void nf_fix_proc_close(struct nf_fix_proc *p)
{
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
}

int nf_fix_proc_ended(const struct nf_fix_proc *p)
{
	struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };

	return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLIN | POLLHUP));
}

int nf_fix_proc_has_library(const struct nf_fix_proc *p)
{
	char path[64], line[4096];
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)p->pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "/libnaglefix.so") != NULL;
	fclose(f);
	return found;
}

/* The inode of a "socket:[INO]" link, or 0 for anything else. */
static unsigned long socket_inode(const char *link)
{
	char *end;
	unsigned long ino;

	if (strncmp(link, "socket:[", 8) != 0)
		return 0;
	ino = strtoul(link + 8, &end, 10);
	return *end == ']' ? ino : 0;
}

/* One directory entry: fn's return for a socket, 0 for anything else. */
static int each_entry(int dirfd, const char *name,
		      int (*fn)(int fd, unsigned long ino, void *arg), void *arg)
{
	char link[64], *end;
	ssize_t n;
	long fd = strtol(name, &end, 10);
	unsigned long ino;

	if (*end || end == name || fd < 0)
		return 0;
	n = readlinkat(dirfd, name, link, sizeof(link) - 1);
	if (n < 0)
		return 0; /* closed meanwhile */
	link[n] = '\0';
	ino = socket_inode(link);
	return ino ? fn((int)fd, ino, arg) : 0;
}

int nf_fix_proc_each_socket(const struct nf_fix_proc *p,
			    int (*fn)(int fd, unsigned long ino, void *arg), void *arg)
{
	char path[64];
	DIR *d;
	struct dirent *e;
	int rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)p->pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while (rc == 0 && (e = readdir(d)) != NULL)
		rc = each_entry(dirfd(d), e->d_name, fn, arg);
	closedir(d);
	/* a listing of a PID reused meanwhile is not the process of p */
	if (rc == 0 && nf_fix_proc_ended(p))
		rc = -ESRCH;
	return rc;
}

/* Yama's ptrace_scope, or -1 when Yama is not there. */
static int yama_scope(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

const char *nf_fix_proc_why_eperm(const struct nf_fix_proc *p, char *buf, size_t len)
{
	int yama = yama_scope();
	uid_t me = getuid();

	if (p->uid != (uid_t)-1 && p->uid != me && geteuid() != 0)
		snprintf(buf, len,
			 "it belongs to another user (uid %u, naglefix runs as uid %u) and naglefix "
			 "has no CAP_SYS_PTRACE: run it as root or as that user",
			 (unsigned)p->uid, (unsigned)me);
	else if (yama == 3)
		snprintf(buf, len, "Yama's ptrace_scope is 3 (no process may attach another)");
	else if (yama == 2 && geteuid() != 0)
		snprintf(buf, len, "Yama's ptrace_scope is 2 (only CAP_SYS_PTRACE may): run it as root");
	else if (yama == 1 && geteuid() != 0)
		snprintf(buf, len,
			 "Yama's ptrace_scope is 1 (only a parent may, or CAP_SYS_PTRACE): run it as "
			 "root");
	else if (!p->dumpable && geteuid() != 0)
		snprintf(buf, len, "the process is not dumpable (setuid, setcap or prctl): run it as root");
	else
		snprintf(buf, len,
			 "no ptrace right (a security module, a user namespace%s)",
			 yama >= 0 ? "" : "; Yama is not loaded");
	return buf;
}

const char *nf_fix_proc_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, len - 1);
		close(fd);
	}
	if (n <= 0)
		n = snprintf(buf, len, "?");
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

/* Appends to out (up to max) the pids of one thread's children file. */
static size_t thread_children(const char *path, pid_t *out, size_t n, size_t max)
{
	FILE *f = fopen(path, "re");
	int c;

	if (!f)
		return n;
	while (n < max && fscanf(f, "%d", &c) == 1)
		out[n++] = (pid_t)c;
	fclose(f);
	return n;
}

size_t nf_fix_proc_children(pid_t pid, pid_t *out, size_t max)
{
	char path[128];
	DIR *d;
	struct dirent *e;
	size_t n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while (n < max && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.20s/children", (int)pid, e->d_name);
		n = thread_children(path, out, n, max);
	}
	closedir(d);
	return n;
}
