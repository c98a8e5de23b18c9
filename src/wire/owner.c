/*
 * owner.c - the process on this host behind a TCP connection (nf_owner.h):
 * sock_diag's exact lookup for the socket's inode, /proc/PID/fd for its
 * holders, /proc/PID/cmdline for the command.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "nf_owner.h"

/* ---- sock_diag ----------------------------------------------------------- */

static int diag_socket(void)
{
	struct timeval tv = { .tv_sec = 1 };
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static void put_end(__be32 dst[4], __be16 *port, const struct nf_owner_end *e)
{
	memcpy(dst, e->addr, e->family == AF_INET ? 4 : 16);
	*port = htons(e->port);
}

/* The exact-lookup request (no NLM_F_DUMP) for local <-> remote. */
static int diag_send(int fd, const struct nf_owner_end *local, const struct nf_owner_end *remote,
		     uint32_t seq)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} msg;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };

	memset(&msg, 0, sizeof(msg));
	msg.nlh.nlmsg_len = sizeof(msg);
	msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	msg.nlh.nlmsg_flags = NLM_F_REQUEST;
	msg.nlh.nlmsg_seq = seq;
	msg.req.sdiag_family = (uint8_t)local->family;
	msg.req.sdiag_protocol = IPPROTO_TCP;
	msg.req.idiag_states = ~0u;
	put_end(msg.req.id.idiag_src, &msg.req.id.idiag_sport, local);
	put_end(msg.req.id.idiag_dst, &msg.req.id.idiag_dport, remote);
	msg.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if (sendto(fd, &msg, sizeof(msg), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	return 0;
}

/* One answer message: 1 with *ino and *uid from an inet_diag_msg, 0 for
 * another message, or a -errno (NLMSG_ERROR, malformed). */
static int diag_one(const struct nlmsghdr *h, uint32_t seq, uint64_t *ino, uid_t *uid)
{
	if (h->nlmsg_seq != seq)
		return 0;
	if (h->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(h);

		if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
			return -EBADMSG;
		return e->error ? e->error : -ENOENT;
	}
	if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
		return 0;
	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
		return -EBADMSG;
	const struct inet_diag_msg *m = NLMSG_DATA(h);

	if (m->idiag_inode == 0) /* TIME-WAIT, closed, or a request socket: no file */
		return -ENOTCONN;
	*ino = m->idiag_inode;
	*uid = m->idiag_uid;
	return 1;
}

/* Reads the answer to seq. 0 with *ino set, or -errno. */
static int diag_recv(int fd, uint32_t seq, uint64_t *ino, uid_t *uid)
{
	union {
		char buf[8192];
		struct nlmsghdr align;
	} u;

	for (;;) {
		ssize_t n = recv(fd, u.buf, sizeof(u.buf), 0);
		int len, rc;

		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		len = (int)n;
		for (struct nlmsghdr *h = &u.align; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_DONE && h->nlmsg_seq == seq)
				return -ENOENT;
			rc = diag_one(h, seq, ino, uid);
			if (rc)
				return rc < 0 ? rc : 0;
		}
	}
}

int nf_owner_inode(const struct nf_owner_end *local, const struct nf_owner_end *remote,
		   uint64_t *ino, uid_t *uid)
{
	static uint32_t seq;
	uint32_t my = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
	int fd, rc;

	if ((local->family != AF_INET && local->family != AF_INET6) ||
	    local->family != remote->family)
		return -EAFNOSUPPORT;
	fd = diag_socket();
	if (fd < 0)
		return fd;
	rc = diag_send(fd, local, remote, my);
	if (rc == 0)
		rc = diag_recv(fd, my, ino, uid);
	close(fd);
	return rc;
}

/* ---- /proc ---------------------------------------------------------------- */

/* Does /proc/PID/fd/FD name socket:[ino]? */
static int fd_is(const char *pid, const char *fd, const char *want)
{
	char path[300], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%s/fd/%s", pid, fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	return strcmp(link, want) == 0;
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* /proc/PID/FILE's first len-1 bytes into buf; their number, or -1. */
static ssize_t read_proc(pid_t pid, const char *file, char *buf, size_t len)
{
	char path[64];
	ssize_t n, got = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((size_t)got < len - 1 && (n = read(fd, buf + got, len - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	return got;
}

/* pid's command line into cmd: NULs as spaces, control bytes as '?'; its
 * comm in brackets when it has none (a kernel thread, a zombie). */
static void read_cmd(pid_t pid, char cmd[NF_OWNER_CMD_MAX])
{
	char comm[32];
	ssize_t n = read_proc(pid, "cmdline", cmd, NF_OWNER_CMD_MAX);

	while (n > 0 && cmd[n - 1] == '\0')
		n--;
	if (n > 0) {
		for (ssize_t i = 0; i < n; i++)
			if (cmd[i] == '\0')
				cmd[i] = ' ';
			else if ((unsigned char)cmd[i] < 0x20 || cmd[i] == 0x7f)
				cmd[i] = '?';
		cmd[n] = '\0';
		return;
	}
	n = read_proc(pid, "comm", comm, sizeof(comm));
	while (n > 0 && comm[n - 1] == '\n')
		comm[--n] = '\0';
	snprintf(cmd, NF_OWNER_CMD_MAX, "[%s]", n > 0 ? comm : "?");
}

/*
 * Names the process pid, found holding want at descriptor fd: a pidfd
 * first (the process, not the number), the descriptor checked again
 * (the pid may have been reused before the pidfd was taken), the command
 * read, then the pidfd asked whether that process still lives (so the
 * command read was its own). Without pidfd_open (Linux before 5.3, or a
 * tracer that does not know it) the descriptor is checked before and
 * after the command is read instead. 0, or -ESRCH if any step says
 * otherwise.
 */
static int name_holder(const char *pidstr, int fd, const char *want, struct nf_owner *o)
{
	pid_t pid = (pid_t)atoi(pidstr);
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0), alive;
	char fdstr[16];

	if (pfd < 0 && errno != ENOSYS)
		return -ESRCH;
	snprintf(fdstr, sizeof(fdstr), "%d", fd);
	alive = fd_is(pidstr, fdstr, want);
	if (alive)
		read_cmd(pid, o->cmd);
	if (alive && pfd >= 0) {
		struct pollfd p = { .fd = pfd, .events = POLLIN };

		alive = poll(&p, 1, 0) == 0;
	} else if (alive) {
		alive = fd_is(pidstr, fdstr, want);
	}
	if (pfd >= 0)
		close(pfd);
	if (!alive)
		return -ESRCH;
	o->pid = pid;
	o->fd = fd;
	return 0;
}

int nf_owner_name(pid_t pid, int fd, uint64_t ino, struct nf_owner *o)
{
	char pidstr[16], want[40];

	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	snprintf(want, sizeof(want), "socket:[%llu]", (unsigned long long)ino);
	o->inode = ino;
	return name_holder(pidstr, fd, want, o);
}

/* ---- the processes, newest first, and their socket descriptors ----------- */

/* "socket:[N]" -> N; 0 for another link. */
static uint64_t socket_ino(const char *link)
{
	char *end;
	unsigned long long v;

	if (strncmp(link, "socket:[", 8) != 0)
		return 0;
	v = strtoull(link + 8, &end, 10);
	return *end == ']' ? v : 0;
}

static int add_fd(struct nf_owner_fds *t, uint64_t ino, pid_t pid, int fd)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		struct nf_owner_fd *a = realloc(t->a, cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		t->a = a;
		t->cap = cap;
	}
	t->a[t->n++] = (struct nf_owner_fd){ ino, pid, fd };
	return 0;
}

int nf_owner_fds_of(pid_t pid, struct nf_owner_fds *t)
{
	char path[64], link[64];
	struct dirent *e;
	DIR *d;
	int rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	if (!(d = opendir(path)))
		return 0; /* gone, or not ours to read */
	while (rc == 0 && (e = readdir(d)) != NULL) {
		ssize_t n = e->d_name[0] == '.' ? -1
			: readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		uint64_t ino;

		if (n <= 0)
			continue;
		link[n] = '\0';
		if ((ino = socket_ino(link)))
			rc = add_fd(t, ino, pid, atoi(e->d_name));
	}
	closedir(d);
	return rc;
}

static int descending(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x < y) - (x > y);
}

/* The PID the kernel handed out last in this PID namespace; 0 if unknown. */
static pid_t last_pid(void)
{
	char buf[32];
	int fd = open("/proc/sys/kernel/ns_last_pid", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return (pid_t)atoi(buf);
}

/* a (n PIDs, descending) turned to start at the greatest PID <= last. */
static void rotate_to(pid_t *a, size_t n, pid_t last)
{
	size_t k = 0;
	pid_t *tmp;

	while (k < n && a[k] > last)
		k++;
	if (k == 0 || k == n || !(tmp = malloc(k * sizeof(*tmp))))
		return; /* no wrap, or no memory: descending is a fine order too */
	memcpy(tmp, a, k * sizeof(*tmp));
	memmove(a, a + k, (n - k) * sizeof(*a));
	memcpy(a + (n - k), tmp, k * sizeof(*tmp));
	free(tmp);
}

ssize_t nf_owner_pids(pid_t **out)
{
	DIR *proc = opendir("/proc");
	struct dirent *e;
	pid_t *a = NULL, *b;
	size_t n = 0, cap = 0;

	*out = NULL;
	if (!proc)
		return -errno;
	while ((e = readdir(proc)) != NULL) {
		if (!all_digits(e->d_name))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 512;
			if (!(b = realloc(a, cap * sizeof(*b)))) {
				closedir(proc);
				free(a);
				return -ENOMEM;
			}
			a = b;
		}
		a[n++] = (pid_t)atoi(e->d_name);
	}
	closedir(proc);
	qsort(a, n, sizeof(*a), descending);
	rotate_to(a, n, last_pid());
	*out = a;
	return (ssize_t)n;
}

int nf_owner_pid(uint64_t ino, struct nf_owner *o)
{
	struct nf_owner_fds t = { NULL, 0, 0 };
	pid_t *pids;
	ssize_t n = nf_owner_pids(&pids);

	if (n < 0)
		return (int)n;
	o->inode = ino;
	o->pid = 0;
	o->npids = 0;
	for (ssize_t i = 0; i < n; i++) {
		int held = 0;

		t.n = 0;
		if (nf_owner_fds_of(pids[i], &t) < 0)
			break;
		for (size_t k = 0; k < t.n; k++) {
			if (t.a[k].ino != ino || held)
				continue;
			if (o->pid == 0 && nf_owner_name(pids[i], t.a[k].fd, ino, o) < 0)
				continue;
			held = 1;
		}
		o->npids += (unsigned)held;
	}
	free(t.a);
	free(pids);
	return o->pid ? 0 : -ENOENT;
}

int nf_owner_find(const struct nf_owner_end *local, const struct nf_owner_end *remote,
		  struct nf_owner *o)
{
	uint64_t ino = 0;
	uid_t uid = 0;
	int rc;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	rc = nf_owner_inode(local, remote, &ino, &uid);
	if (rc < 0)
		return rc;
	o->uid = uid;
	return nf_owner_pid(ino, o);
}
