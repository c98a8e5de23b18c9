/*
 * nodelay_of.c - the tests' own reading of another process's sockets,
 * independent of naglefix: for each TCP socket of PID (pidfd_getfd of
 * every socket in /proc/PID/fd), a line "FD INODE NODELAY LISTEN".
 * Usage: nodelay_of PID     Exit 1 if PID cannot be read.
 */
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

int main(int argc, char **argv)
{
	char path[64], link[64];
	struct dirent *e;
	int pidfd, pid;
	DIR *d;

	if (argc != 2)
		return 2;
	pid = atoi(argv[1]);
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (pidfd < 0 || !d) {
		perror("nodelay_of");
		return 1;
	}
	while ((e = readdir(d)) != NULL) {
		ssize_t n = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		int dup;
		struct stat st;

		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strncmp(link, "socket:[", 8) != 0)
			continue;
		dup = (int)syscall(SYS_pidfd_getfd, pidfd, atoi(e->d_name), 0);
		if (dup < 0) {
			perror("nodelay_of: pidfd_getfd");
			return 1;
		}
		if (fstat(dup, &st) == 0 && opt(dup, SOL_SOCKET, SO_PROTOCOL) == IPPROTO_TCP)
			printf("%s %lu %d %d\n", e->d_name, (unsigned long)st.st_ino,
			       opt(dup, IPPROTO_TCP, TCP_NODELAY) != 0, opt(dup, SOL_SOCKET, SO_ACCEPTCONN));
		close(dup);
	}
	closedir(d);
	return 0;
}
