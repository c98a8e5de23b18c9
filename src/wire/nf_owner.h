/*
 * nf_owner.h - which process on this host holds a TCP connection
 * (src/wire/owner.c), as `ss -p` finds it: the kernel's socket table
 * through sock_diag netlink (NETLINK_SOCK_DIAG, an exact lookup of the
 * four-tuple) gives the socket's inode, then /proc/PID/fd the processes
 * holding socket:[INODE], then /proc/PID/cmdline the command. Works for
 * any program (static, setuid, under no library), given the rights to
 * read other processes' /proc/PID/fd (root, or CAP_SYS_PTRACE). Keeps
 * nothing between calls.
 */
#ifndef NF_OWNER_H
#define NF_OWNER_H

#include <stdint.h>
#include <sys/types.h>

#define NF_OWNER_CMD_MAX 128

/* One end of a TCP connection: family AF_INET or AF_INET6, address in
 * network order (IPv4 in the first 4 bytes), port in host order. */
struct nf_owner_end {
	int family;
	uint8_t addr[16];
	uint16_t port;
};

struct nf_owner {
	uint64_t inode;        /* the socket's */
	uid_t uid;             /* the socket's owner, as sock_diag says */
	pid_t pid;             /* the first process found holding it; 0 none */
	int fd;                /* its descriptor there */
	unsigned npids;        /* processes holding it (a forked server: several) */
	char cmd[NF_OWNER_CMD_MAX]; /* pid's command line, words joined by spaces,
				     * control bytes as '?'; "[comm]" if it has none */
};

/*
 * The inode of this host's TCP socket whose local end is local and remote
 * end remote, into *ino (sock_diag's exact lookup; an IPv6 socket with
 * IPv4-mapped addresses is found by its IPv4 ends). Returns 0, -ENOENT if
 * there is none (the end is on another host, or long closed), -ENOTCONN
 * if the kernel has it but no file any more (TIME-WAIT, closed by its
 * process, a request socket: its holder is gone), or another -errno (no
 * netlink, a malformed answer).
 * Never waits more than a second.
 */
int nf_owner_inode(const struct nf_owner_end *local, const struct nf_owner_end *remote,
		   uint64_t *ino, uid_t *uid);

/*
 * The processes holding socket:[ino]: o->pid and o->fd the first one
 * found (checked again after its command line was read, holding a pidfd,
 * so a pid reused meanwhile is never named), o->npids their number,
 * o->cmd its command. Returns 0, -ENOENT if no process holds it (or none
 * could be read: not root), -errno if /proc cannot be read.
 */
int nf_owner_pid(uint64_t ino, struct nf_owner *o);

/* A socket descriptor of a process: socket:[ino] is pid's descriptor fd. */
struct nf_owner_fd {
	uint64_t ino;
	pid_t pid;
	int fd;
};

/* A table of them (a grown array; zero it to start, free a). */
struct nf_owner_fds {
	struct nf_owner_fd *a;
	size_t n, cap;
};

/*
 * The PIDs /proc shows, newest first: down from the last one the kernel
 * handed out (ns_last_pid), then down from the highest (the PIDs wrapped
 * past them), into *out (the caller frees it). Their number, or -errno
 * (/proc unreadable, no memory). A process holding a connection that
 * has just stalled is most often a young one: it is read among the first.
 */
ssize_t nf_owner_pids(pid_t **out);

/*
 * Appends process pid's socket descriptors, as /proc/PID/fd shows them
 * now, to *t. 0 (none added: a process gone, or one not ours to read),
 * or -ENOMEM. What it says may be stale by the time it is used:
 * nf_owner_name checks an entry.
 */
int nf_owner_fds_of(pid_t pid, struct nf_owner_fds *t);

/*
 * Names pid as the holder of socket:[ino] at its descriptor fd, as
 * nf_owner_pid names the first it finds (checked again holding a pidfd):
 * o->pid, o->fd, o->cmd and o->inode set, 0; or -ESRCH if pid does not
 * hold it there now (o->pid left as it was).
 */
int nf_owner_name(pid_t pid, int fd, uint64_t ino, struct nf_owner *o);

/* Both: the socket of local <-> remote, then its process, into *o
 * (zeroed first). 0, or the first failure's -errno. */
int nf_owner_find(const struct nf_owner_end *local, const struct nf_owner_end *remote,
		  struct nf_owner *o);

#endif
