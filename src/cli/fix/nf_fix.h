/*
 * nf_fix.h - the door of cli/fix (naglefix fix): what the dispatcher,
 * attach and watch may call. fix_int.h holds the rest, private to
 * cli/fix.
 *
 * Every function returns 0 or a negative errno unless it says otherwise.
 */
#ifndef NF_FIX_H
#define NF_FIX_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Exit status of naglefix fix (documented in naglefix(1) and README). */
#define NF_FIX_EXIT_PARTIAL 1 /* some socket not handled (said which) */
#define NF_FIX_EXIT_PERM    2 /* no ptrace right over a process */
#define NF_FIX_EXIT_NOSYS   3 /* the kernel (or a seccomp filter) lacks pidfd_getfd */
#define NF_FIX_EXIT_GONE    4 /* a process ended, or its PID was reused */
#define NF_FIX_EXIT_MFILE   5 /* naglefix's own descriptor limit */
#define NF_FIX_EXIT_NOTCP   6 /* a process held no TCP socket: nothing to fix */

/* One TCP socket of a process, as its duplicate says it is. */
struct nf_fix_sock {
	int fd;                      /* the program's descriptor */
	unsigned long ino;           /* its socket inode */
	int family;                  /* AF_INET or AF_INET6 */
	int listening;               /* SO_ACCEPTCONN */
	int state;                   /* TCP_INFO's tcpi_state (TCP_ESTABLISHED...) */
	struct sockaddr_storage local, peer;
	socklen_t local_len, peer_len; /* peer_len 0: no peer */
	int nodelay;                 /* TCP_NODELAY as read, -1 unknown */
};

/* --- fix_dir.c: where the records are kept --- */

/*
 * The directory of the records: $NAGLEFIX_STATE_DIR; else, for root,
 * /run/naglefix; else the user's own: $XDG_RUNTIME_DIR/naglefix, else
 * /run/user/UID/naglefix (when that directory is a directory of the
 * effective user's, not a link), else /tmp/naglefix-UID. The same for
 * every call of a run.
 */
const char *nf_fix_state_dir(void);

/*
 * Makes the directory (0700) if need be. One it chose itself (no
 * NAGLEFIX_STATE_DIR) must be a directory, not a symbolic link, owned
 * by the effective user and closed to others: -EPERM if not (another
 * user made it first, or a link). Returns 0 or a negative errno.
 */
int nf_fix_state_dir_make(void);

/* The same checks without making it: 0, -ENOENT (not there), -EPERM. For
 * what reads or removes records: no record is taken from, or removed in,
 * a directory another user could have made. */
int nf_fix_state_dir_safe(void);

/* Why rc (from nf_fix_state_dir_make or a record's functions) was met,
 * in buf: what is wrong with the directory for -EPERM, else strerror. */
const char *nf_fix_state_dir_why(int rc, char *buf, size_t len);

/* --- fix_api.c: for naglefix watch --fix (and --attach) --- */

/* What nf_fix_inode, nf_fix_mark_inode or nf_fix_listener did (all
 * optional). */
struct nf_fix_done {
	struct nf_fix_sock sock; /* the socket as identified */
	int before;              /* TCP_NODELAY before: 0 or 1 */
	int recorded;            /* 1 if set and recorded for undo (it was 0) */
	int marked;              /* nf_fix_mark_inode: 1 marked, 0 not (it was off) */
};

/*
 * Sets TCP_NODELAY on the socket of inode ino of process pid (its
 * descriptor fd if fd >= 0, else looked up in /proc/PID/fd): duplicated,
 * the inode verified, TCP over IPv4/IPv6 checked, set, and recorded for
 * `naglefix fix --undo PID` when it was 0. A process under libnaglefix.so
 * is left to it (-EALREADY). Returns 0 (also when it was already 1), or
 * -ESRCH (gone), -ENOENT (no descriptor of that inode), -ESTALE (fd not
 * that inode), -EPERM, -ENOSYS, -EMFILE, -EPROTONOSUPPORT (not TCP), ...
 * done (may be NULL) says what was found and done.
 */
int nf_fix_inode(pid_t pid, unsigned long ino, int fd, struct nf_fix_done *done);

/*
 * Marks the socket of inode ino of process pid (found as nf_fix_inode
 * finds it) in marks_fd, a map of marks (nf_bpf.h: watch --fix
 * --attach's cgroup's), so naglefix's setsockopt program keeps it on, as
 * attach --now marks (nf_fix_req's marks_fd); only a connection with a
 * peer (-ENOTCONN: a listener, or not connected), and only if it is on:
 * nothing is set, nothing recorded. Returns 0 (done->marked 1, or 0: its
 * TCP_NODELAY was 0, turned off since it was set), the errors of
 * nf_fix_inode, or the mark's (bpf(2)'s).
 */
int nf_fix_mark_inode(pid_t pid, unsigned long ino, int fd, int marks_fd, struct nf_fix_done *done);

/*
 * The same for the listening TCP socket of pid that accepts connections
 * to local port port (host order) on family's addresses (AF_INET or
 * AF_INET6; 0: either), so the connections it accepts from now on get
 * TCP_NODELAY from it (Linux passes it on at accept). -ENOENT if pid holds
 * no such listener.
 */
int nf_fix_listener(pid_t pid, int family, int port, struct nf_fix_done *done);

/* --- fix.c: the command --- */

extern const char nf_cli_usage_fix[]; /* its --help (nf_cli.h) */

/* A cgroup fix was given: a --cgroup PATH (unit 0) or a --unit NAME. */
struct nf_fix_group {
	const char *name;
	int unit;
};

/* What fix is asked, its command line typed: the policy (-c CONF, or -m
 * MODE, of which fix applies nodelay only; neither: the file the library
 * would read, else nodelay for every socket), how (--dry-run, --json,
 * --follow every interval_ms, 0 for its default; --undo), and whom: the
 * PIDs as given (text, each checked as the command line's are) and the
 * cgroups. marks_fd, for attach --now: above 0, a map of marks
 * (nf_bpf.h) in which each connection the rules give nodelay (set, or
 * found on already; with a peer: not a listener, nor a socket not
 * connected yet) is marked, so the setsockopt program
 * of attach keeps it on against its program's own
 * setsockopt(TCP_NODELAY, 0), said in its text line (not in --json's
 * rows: attach --now, the one caller, prints text); 0 (what an initializer
 * leaves, the command line's) or below: none. */
struct nf_fix_req {
	const char *conf, *mode;
	int dry, json, follow, undo;
	int interval_ms;
	char **pids;
	int npids;
	const struct nf_fix_group *groups;
	int ngroups;
	int marks_fd;
};

/* Does what req asks, as naglefix fix does, its lines on stdout and its
 * messages ("naglefix fix: ...") on stderr. Returns an NF_FIX_EXIT_*
 * status, 0, or NF_EXIT_USAGE after saying what of req is wrong; a mark
 * that failed is said once, its socket left set, and the status
 * NF_FIX_EXIT_PARTIAL. */
int nf_fix_apply(const struct nf_fix_req *req);

/* naglefix fix [-c CONF | -m nodelay] [--dry-run] [--follow] [--json]
 * PID... and naglefix fix --undo [--dry-run] [--json] PID...: argv[0] is
 * "fix". Returns an NF_FIX_EXIT_* status, 0, or NF_EXIT_USAGE. */
int nf_cli_fix(int argc, char **argv);

#endif
