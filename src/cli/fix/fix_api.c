/*
 * fix_api.c - one socket of a process fixed by what names it: its inode
 * (nf_fix_inode), or the local port it listens on (nf_fix_listener); for
 * naglefix watch --fix, which knows a stalling connection by those; and
 * for --attach the connection so fixed marked, nothing else done to it
 * (nf_fix_mark_inode; the mark itself fix_mark.c's).
 */
#include "fix_int.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* Turns TCP_NODELAY on for fd (inode ino) of p, recorded first if it was
 * off. */
static int set_on(const struct nf_fix_proc *p, int fd, unsigned long ino, struct nf_fix_done *done)
{
	struct nf_fix_done d = { .before = -1 };
	int dup = nf_fix_sock_take(p, fd, ino), rc;

	if (dup < 0)
		return dup;
	rc = nf_fix_sock_identify(dup, fd, ino, &d.sock);
	if (rc == 0) {
		d.before = d.sock.nodelay;
		if (d.before == 0 && (rc = nf_fix_record_add(p, fd, ino)) == 0 &&
		    (rc = nf_fix_sock_set_nodelay(dup, 1)) == 0) {
			d.recorded = 1;
			d.sock.nodelay = nf_fix_sock_nodelay(dup);
		}
	}
	close(dup);
	if (done)
		*done = d;
	return rc;
}

/* Marks fd (inode ino) of p in marks_fd if it is a connection with a peer
 * and on; nothing set, nothing recorded. */
static int mark_on(const struct nf_fix_proc *p, int fd, unsigned long ino, int marks_fd,
		   struct nf_fix_done *done)
{
	struct nf_fix_done d = { .before = -1 };
	int dup = nf_fix_sock_take(p, fd, ino), rc;

	if (dup < 0)
		return dup;
	rc = nf_fix_sock_identify(dup, fd, ino, &d.sock);
	if (rc == 0 && !nf_fix_mark_fits(&d.sock))
		rc = -ENOTCONN;
	d.before = d.sock.nodelay;
	if (rc == 0 && d.sock.nodelay == 1 && (d.marked = nf_fix_mark_sock(marks_fd, dup)) < 0)
		rc = d.marked;
	close(dup);
	if (done)
		*done = d;
	return rc;
}

/* Opens pid unless the library runs in it (-EALREADY). */
static int open_proc(pid_t pid, struct nf_fix_proc *p)
{
	int rc = nf_fix_proc_open(pid, p);

	if (rc < 0)
		return rc;
	rc = nf_fix_proc_has_library(p);
	if (rc != 0) {
		nf_fix_proc_close(p);
		return rc > 0 ? -EALREADY : rc;
	}
	return 0;
}

struct by_inode {
	unsigned long ino;
	int fd;
};

static int find_inode(int fd, unsigned long ino, void *arg)
{
	struct by_inode *b = arg;

	if (ino != b->ino)
		return 0;
	b->fd = fd;
	return 1;
}

/* The descriptor of inode ino in p into *fd, unless fd is given (>= 0). */
static int fd_of(const struct nf_fix_proc *p, unsigned long ino, int *fd)
{
	struct by_inode b = { .ino = ino, .fd = *fd };
	int rc;

	if (b.fd >= 0)
		return 0;
	rc = nf_fix_proc_each_socket(p, find_inode, &b);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return -ENOENT;
	*fd = b.fd;
	return 0;
}

int nf_fix_inode(pid_t pid, unsigned long ino, int fd, struct nf_fix_done *done)
{
	struct nf_fix_proc p;
	int rc = open_proc(pid, &p);

	if (rc < 0)
		return rc;
	if ((rc = fd_of(&p, ino, &fd)) == 0)
		rc = set_on(&p, fd, ino, done);
	nf_fix_proc_close(&p);
	return rc;
}

int nf_fix_mark_inode(pid_t pid, unsigned long ino, int fd, int marks_fd, struct nf_fix_done *done)
{
	struct nf_fix_proc p;
	int rc = open_proc(pid, &p);

	if (rc < 0)
		return rc;
	if ((rc = fd_of(&p, ino, &fd)) == 0)
		rc = mark_on(&p, fd, ino, marks_fd, done);
	nf_fix_proc_close(&p);
	return rc;
}

struct by_port {
	const struct nf_fix_proc *p;
	int family, port;
	int fd;
	unsigned long ino;
};

/* Is fd (inode ino) the listener looked for? Each duplicate closed at once. */
static int find_listener(int fd, unsigned long ino, void *arg)
{
	struct by_port *b = arg;
	struct nf_fix_sock s;
	int dup = nf_fix_sock_take(b->p, fd, ino), rc;

	if (dup == -ESTALE || dup == -EBADF)
		return 0;
	if (dup < 0)
		return dup;
	rc = nf_fix_sock_identify(dup, fd, ino, &s);
	close(dup);
	if (rc < 0 || !s.listening || nf_fix_sock_port(&s) != b->port ||
	    (b->family && s.family != b->family))
		return 0;
	b->fd = fd;
	b->ino = ino;
	return 1;
}

int nf_fix_listener(pid_t pid, int family, int port, struct nf_fix_done *done)
{
	struct nf_fix_proc p;
	struct by_port b = { .p = &p, .family = family, .port = port, .fd = -1 };
	int rc = open_proc(pid, &p);

	if (rc < 0)
		return rc;
	rc = nf_fix_proc_each_socket(&p, find_listener, &b);
	if (rc == 0)
		rc = -ENOENT;
	if (rc > 0)
		rc = set_on(&p, b.fd, b.ino, done);
	nf_fix_proc_close(&p);
	return rc;
}
