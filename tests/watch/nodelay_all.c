/*
 * nodelay_all.c - t_watch_fix.sh's own reading of TCP_NODELAY, independent
 * of naglefix: every TCP socket of every process (each socket descriptor
 * in /proc/PID/fd taken with pidfd_getfd), one line
 * "PID FD INODE NODELAY LISTEN", sorted by nothing. With -n, only the
 * processes in this process's network namespace. Processes that end
 * meanwhile, and this process, are skipped.
 * Usage: nodelay_all [-n]     Exit 1 if /proc cannot be read.
 */
#include <ctype.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int opt(int fd, int level, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	return getsockopt(fd, level, name, &v, &len) < 0 ? -1 : v;
}

/* The inode of /proc/PID/ns/net (PID "self" too); 0 if unreadable. */
static unsigned long netns_of(const char *pid)
{
	char path[300];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%s/ns/net", pid);
	return stat(path, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

static void one_process(const char *pidstr)
{
	char path[300], link[64];
	int pid = atoi(pidstr), pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%s/fd", pidstr);
	d = opendir(path);
	if (pidfd < 0 || !d) {
		if (d)
			closedir(d);
		if (pidfd >= 0)
			close(pidfd);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		ssize_t n = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		struct stat st;
		int dup;

		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strncmp(link, "socket:[", 8) != 0)
			continue;
		dup = (int)syscall(SYS_pidfd_getfd, pidfd, atoi(e->d_name), 0);
		if (dup < 0)
			continue;
		if (fstat(dup, &st) == 0 && opt(dup, SOL_SOCKET, SO_PROTOCOL) == IPPROTO_TCP)
			printf("%d %s %lu %d %d\n", pid, e->d_name, (unsigned long)st.st_ino,
			       opt(dup, IPPROTO_TCP, TCP_NODELAY) != 0, opt(dup, SOL_SOCKET, SO_ACCEPTCONN));
		close(dup);
	}
	closedir(d);
	close(pidfd);
}

int main(int argc, char **argv)
{
	int same_ns = argc == 2 && strcmp(argv[1], "-n") == 0;
	unsigned long mine = netns_of("self");
	char self[16];
	struct dirent *e;
	DIR *proc = opendir("/proc");

	if (!proc || (argc > 1 && !same_ns)) {
		fputs("usage: nodelay_all [-n]\n", stderr);
		return 1;
	}
	snprintf(self, sizeof(self), "%d", (int)getpid());
	while ((e = readdir(proc)) != NULL) {
		if (!isdigit((unsigned char)e->d_name[0]) || strcmp(e->d_name, self) == 0)
			continue;
		if (same_ns && netns_of(e->d_name) != mine)
			continue;
		one_process(e->d_name);
	}
	closedir(proc);
	return 0;
}
