/*
 * fix_int.h - fixing a running program from outside (naglefix fix): its
 * TCP sockets taken by duplicate (pidfd_open + pidfd_getfd), identified
 * from the duplicate, TCP_NODELAY set on it (the same socket as the
 * program's), and what was set recorded so that it can be undone.
 *
 *   fix_proc.c    the process: pidfd, start time, library check, /proc/PID/fd
 *   fix_sock.c    one socket: taken, identified, TCP_NODELAY read and set
 *   fix_dir.c     where the records are kept, for the user naglefix runs as
 *   fix_record.c  the record of what fix set, one file a process
 *   fix_out.c     the lines it prints (text, --json)
 *   fix_errors.c  its failures, one line each, and the exit status
 *   fix_api.c     nf_fix_inode, nf_fix_mark_inode, nf_fix_listener (watch --fix)
 *   fix_mark.c    marks for attach's setsockopt program (the one caller of src/bpf)
 *   fix_policy.c  the policy fix applies, its rules as lines name them
 *   fix_undo.c    --undo: the record read, each socket turned off again
 *   fix_cgroup.c  --cgroup and --unit: the processes of a cgroup as PIDs
 *   fix_args.c    the command line: usage text, options table, checks
 *   fix.c         the command
 *
 * What other commands may call is in nf_fix.h, the folder's door (this
 * header includes it); the rest is private to cli/fix.
 *
 * Every function returns 0 or a negative errno unless it says otherwise;
 * none exits or prints, except fix.c's, fix_out.c's, fix_mark.c's (a
 * mark's failure), fix_policy.c's (the policy's) and fix_args.c's (usage
 * errors).
 */
#ifndef NF_FIX_INT_H
#define NF_FIX_INT_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "nf_addr.h"
#include "nf_fix.h"
#include "nf_policy.h"

/* A process being fixed, held by its pidfd from the start. */
struct nf_fix_proc {
	pid_t pid;
	int pidfd;
	unsigned long long start; /* /proc/PID/stat field 22: the PID's identity */
	uid_t uid;                /* its real uid, for messages */
	int dumpable;             /* 0: not ptrace-able by its own user */
};

/* --- fix_proc.c --- */

/*
 * Opens pid (pidfd_open, then its start time and owner from /proc): the
 * pidfd is held from here on, so a PID reused later is seen (pidfd_getfd
 * answers ESRCH for the process that was). Returns 0, -ESRCH (no such
 * process), -ENOSYS (no pidfd_open), -EMFILE, ...; fills *p.
 */
int nf_fix_proc_open(pid_t pid, struct nf_fix_proc *p);

/* Closes p's pidfd. */
void nf_fix_proc_close(struct nf_fix_proc *p);

/* 1 if the process p has ended (its pidfd is readable), else 0. */
int nf_fix_proc_ended(const struct nf_fix_proc *p);

/* 1 if libnaglefix.so is mapped in p (/proc/PID/maps), 0 if not, or a
 * negative errno (the file unreadable). */
int nf_fix_proc_has_library(const struct nf_fix_proc *p);

/* Reads /proc/PID/stat's start time (field 22) of pid into *start. */
int nf_fix_proc_start_time(pid_t pid, unsigned long long *start);

/* 1 if a process of pid runs that started at start (0: any) and has not
 * ended (a zombie has), 0 if not, or a negative errno (/proc unreadable). */
int nf_fix_proc_alive(pid_t pid, unsigned long long start);

/*
 * Calls fn(fd, ino, arg) for each descriptor of p that is a socket
 * ("socket:[INO]" in /proc/PID/fd), in the order the directory lists
 * them; stops at fn's first non-zero return and returns it. A descriptor
 * closed meanwhile is skipped. Returns 0, or a negative errno (-ESRCH:
 * the process is gone, or its PID was reused: p's pidfd says it ended).
 */
int nf_fix_proc_each_socket(const struct nf_fix_proc *p,
			    int (*fn)(int fd, unsigned long ino, void *arg), void *arg);

/*
 * Why pidfd_getfd was refused (EPERM) for p, in buf: another user and no
 * CAP_SYS_PTRACE, Yama's ptrace_scope, a process that is not dumpable.
 * Returns buf.
 */
const char *nf_fix_proc_why_eperm(const struct nf_fix_proc *p, char *buf, size_t len);

/* The command name of pid (/proc/PID/comm) in buf, "?" if unreadable. */
const char *nf_fix_proc_comm(pid_t pid, char *buf, size_t len);

/* The child processes of pid (each thread's /proc/PID/task/TID/children),
 * at most max of them in out; returns how many. */
size_t nf_fix_proc_children(pid_t pid, pid_t *out, size_t max);

/* --- fix_sock.c --- */

/*
 * Takes the program's descriptor fd of p by duplicate and checks that it
 * is still the socket of inode ino (fstat of the duplicate). Returns the
 * duplicate (the caller closes it), or -ESTALE (fd now another file: closed
 * and reused meanwhile), -ESRCH, -EPERM, -ENOSYS, -EMFILE, -EBADF (closed).
 */
int nf_fix_sock_take(const struct nf_fix_proc *p, int fd, unsigned long ino);

/*
 * Fills *s from the duplicate dup of the program's fd (inode ino): its
 * family, addresses, state, listener or not, TCP_NODELAY. Returns 0,
 * -EPROTONOSUPPORT if it is not TCP over IPv4 or IPv6, or an errno.
 */
int nf_fix_sock_identify(int dup, int fd, unsigned long ino, struct nf_fix_sock *s);

/* Sets TCP_NODELAY to on (0 or 1) on dup; 0 or a negative errno. */
int nf_fix_sock_set_nodelay(int dup, int on);

/* TCP_NODELAY of dup (0 or 1), or a negative errno. */
int nf_fix_sock_nodelay(int dup);

/* s's local (or peer) end as messages write it. */
const char *nf_fix_sock_local(const struct nf_fix_sock *s, char buf[NF_ADDR_MAX]);
const char *nf_fix_sock_peer(const struct nf_fix_sock *s, char buf[NF_ADDR_MAX]);

/* The local port of s (host order). */
int nf_fix_sock_port(const struct nf_fix_sock *s);

/* 1 if listener l accepts connections whose local end is s's: the same
 * port, and the same address, or l's is the wildcard of s's family (what
 * an IPv6 wildcard listener accepts from IPv4 is an IPv6 socket with an
 * IPv4-mapped address, so families always agree). */
int nf_fix_sock_listener_of(const struct nf_fix_sock *l, const struct nf_fix_sock *s);

/* The name of a TCP state ("established", "listen", ...). */
const char *nf_fix_state_name(int state);

/* --- fix_record.c: the record, one file a process --- */

/*
 * Records that fix turned TCP_NODELAY from 0 to 1 on fd (inode ino) of
 * p: a line "PID START FD INO" appended to DIR/fix-PID (made 0600, the
 * directory 0700; a file left by an earlier process of the same PID is
 * emptied first). One write, under flock: fix and watch --fix may record
 * at once; a line repeated is read once. Returns 0 or a negative errno.
 */
int nf_fix_record_add(const struct nf_fix_proc *p, int fd, unsigned long ino);

/* Checks that a record of pid can be written (the directory made and
 * writable, the file, if there, writable) before anything is changed;
 * makes no file. */
int nf_fix_record_writable(pid_t pid);

/* One recorded change. */
struct nf_fix_record_entry {
	pid_t pid;
	unsigned long long start;
	int fd;
	unsigned long ino;
};

/*
 * Reads the records of pid into a malloc'd array *out of *n entries, one a
 * descriptor: its last line (an earlier line of the same descriptor was a
 * socket closed since). Returns 0, -ENOENT (no state file: fix changed
 * nothing of pid), -EINVAL (a line that is not a record, or longer than
 * 255 bytes), ...
 */
int nf_fix_record_read(pid_t pid, struct nf_fix_record_entry **out, size_t *n);

/* Removes pid's state file (0, or a negative errno; -ENOENT is 0). */
int nf_fix_record_forget(pid_t pid);

/*
 * Removes the records that can no longer be undone: their process has
 * ended (gone, or a zombie) or its PID is another process's now (the
 * start time differs). Each file locked while it is judged, so a record
 * being written is never lost. Returns how many it removed, or a
 * negative errno (the directory unreadable; -ENOENT: none yet).
 */
int nf_fix_record_sweep(void);

/* --- fix_out.c: the command's lines --- */

enum nf_fix_result {
	NF_FIX_SET,        /* TCP_NODELAY turned on */
	NF_FIX_WOULD_SET,  /* --dry-run: would be */
	NF_FIX_UNCHANGED,  /* the rule's, already */
	NF_FIX_LEFT,       /* its rule is pass, or needs the library */
	NF_FIX_SKIPPED,    /* not handled: why says why */
	NF_FIX_UNDONE,     /* --undo: turned off again */
	NF_FIX_WOULD_UNDO, /* --undo --dry-run */
};

/* One line of output: a socket and what was done to it. */
struct nf_fix_row {
	pid_t pid;
	const struct nf_fix_sock *s;
	const char *side;   /* "connect", "accept", "listen" */
	const char *action; /* the rule's action name, or NULL */
	const char *rule;   /* where the rule is: "FILE:LINE", "FILE: default", "-m nodelay" */
	int before, after;  /* TCP_NODELAY, -1 unknown */
	enum nf_fix_result result;
	const char *why;    /* NULL, or a reason */
	int undo;           /* a line of --undo */
	const char *cgroup; /* the process's cgroup's name, as read when fix took it;
			     * NULL: read at the line (after the change: it may be gone) */
	int marked;         /* marked for attach's setsockopt program (nf_fix_req's
			     * marks_fd): 1 marked, 0 not asked, else the error;
			     * said in the text line (attach --now has no JSON) */
};

/* The text table's header line (nf_fix_out_row prints it before its
 * first row of text). */
void nf_fix_out_header(FILE *out);

/* r as a table row or (json) a JSON line, flushed. */
void nf_fix_out_row(FILE *out, int json, const struct nf_fix_row *r);

/* --- the command's run (fix.c, fix_undo.c) and its failures (fix_errors.c) --- */

struct nf_fix_run {
	int dry, json, follow;
	int interval_ms; /* --follow's rescan period */
	int status;      /* the largest NF_FIX_EXIT_* met */
};

/* Raises r's exit status to status if that is more serious: 6 (no TCP
 * socket) is the least, then 1, 2, 3, 4, 5. */
void nf_fix_worse(struct nf_fix_run *r, int status);

/* 1 for -EMFILE or -ENFILE: naglefix's own descriptors ran out. */
int nf_fix_is_mfile(int rc);

/* One line on stderr each, the status raised: the descriptor limit met
 * in what (for pid), no pidfd_getfd, and any other error rc of process p
 * (EPERM with why; ESRCH "ended", "meanwhile" if it was being handled). */
void nf_fix_say_mfile(struct nf_fix_run *r, pid_t pid, const char *what);
void nf_fix_say_nosys(struct nf_fix_run *r);
void nf_fix_say_error(struct nf_fix_run *r, const struct nf_fix_proc *p, int rc, int meanwhile);

/* When a process is found to hold no TCP socket. */
enum nf_fix_notcp {
	NF_FIX_NOTCP_SCANNED,  /* after its scan: nothing to fix */
	NF_FIX_NOTCP_WAITING,  /* --follow's first scan: waits for one */
	NF_FIX_NOTCP_FOLLOWED, /* --follow ended (the process, or a signal): none came */
};

/* Says that pid holds no TCP socket (one line, with its command name and
 * its child processes, whose sockets may be the ones meant); raises the
 * status to NF_FIX_EXIT_NOTCP, except while --follow waits. */
void nf_fix_say_no_tcp(struct nf_fix_run *r, pid_t pid, enum nf_fix_notcp when);

/* naglefix fix --undo PID...: r's dry and json as given. Returns r's status. */
int nf_fix_undo(struct nf_fix_run *r, int n, char **pids);

/* --- fix_policy.c: the policy fix applies --- */

/* The rules of a run and what of them was said. */
struct nf_fix_policy {
	struct nf_policy pol;
	const char *conf;    /* the file's name, NULL for -m nodelay or no policy */
	int nopolicy;        /* no -c, no -m, no file: nodelay for every socket */
	unsigned char *left; /* left[i]: rule i (nrules: the default) said; the
			      * caller allocates it (nrules + 1) and frees it */
};

/* The policy of -c conf, -m mode, or (neither) what the library would
 * read, else nodelay for every socket (said once) into *f. 0, or
 * NF_EXIT_USAGE after saying why (-c beside -m, a mode but nodelay, a
 * file that does not parse). */
int nf_fix_policy_load(struct nf_fix_policy *f, const char *conf, const char *mode);

/* The rule of f that chose o, as lines name it ("CONF:LINE", "CONF:
 * default", "-m nodelay", "no policy file"), in buf or a constant; its
 * index into *index (nrules: the default). */
const char *nf_fix_policy_rule(const struct nf_fix_policy *f, const struct nf_opts *o, char *buf,
				size_t len, size_t *index);

/* Says once per rule (index) that its action needs the library. */
void nf_fix_policy_say_needs_library(struct nf_fix_policy *f, size_t index, const char *rule,
				     const char *action);

/* --- fix_mark.c: marks for attach's setsockopt program --- */

/* The map a run marks the connections it sets in, and whether a mark's
 * failure was said. */
struct nf_fix_marks {
	int fd;   /* above 0: the map of marks (nf_fix_req's marks_fd); else none */
	int said;
};

/* 1 if s is a socket to mark: a connection with a peer, the one its rule
 * was chosen by; not a listener (the sock_ops program marks each
 * connection it accepts, at its establishment), nor a socket not
 * connected yet (its rule was the one of no peer; the peer it connects to
 * later may be another rule's). Else 0. */
int nf_fix_mark_fits(const struct nf_fix_sock *s);

/* 1 if the run (dry: --dry-run) is to mark s in m: m has a map, not a dry
 * run, and s fits. Else 0. */
int nf_fix_mark_wanted(const struct nf_fix_marks *m, int dry, const struct nf_fix_sock *s);

/* Marks the socket dup (a duplicate of the program's descriptor) in
 * marks_fd: 1, or bpf(2)'s negative errno. */
int nf_fix_mark_sock(int marks_fd, int dup);

/* Marks s of pid (its duplicate dup, TCP_NODELAY on) in m where
 * nf_fix_mark_wanted says so: r->marked 1, or the error; a failure said
 * once on stderr (the socket stays set) and run's status raised to
 * NF_FIX_EXIT_PARTIAL. */
void nf_fix_mark_row(struct nf_fix_run *run, struct nf_fix_marks *m, pid_t pid,
		     const struct nf_fix_sock *s, int dup, struct nf_fix_row *r);

/* --- fix_cgroup.c: --cgroup PATH, --unit NAME --- */

/* PIDs as text, the way fix takes them from its command line: v[0..given)
 * the PIDs given, then those of the cgroups. */
struct nf_fix_pidv {
	char **v; /* each malloc'ed */
	int n, cap;
	int given;
};

/* Appends the PIDs given, pids[0..n), to v as they are. 0 or -ENOMEM. */
int nf_fix_pidv_add(struct nf_fix_pidv *v, int n, char **pids);

/*
 * Appends the processes of each cgroup of g[0..n) and its descendants
 * (--cgroup: nf_cgroup_resolve's path; --unit: the running unit's cgroup),
 * sorted by number, each once, but fix's own and the PIDs given. A
 * cgroup or unit not found, or holding no process, is said on stderr with
 * what to do, and r's status raised (NF_FIX_EXIT_GONE when there is no
 * such cgroup or process, NF_FIX_EXIT_PARTIAL for a path that is no
 * cgroup); the others are still added. 0, or -ENOMEM.
 */
int nf_fix_pidv_groups(struct nf_fix_run *r, const struct nf_fix_group *g, int n,
		       struct nf_fix_pidv *v);

/* For --undo: drops the cgroups' processes that have no undo record (fix
 * changed nothing of them). 0, or (none of them left and no PID given)
 * after saying so, NF_FIX_EXIT_PARTIAL. */
int nf_fix_pidv_recorded(struct nf_fix_run *r, struct nf_fix_pidv *v);

/* Frees v's PIDs and array. */
void nf_fix_pidv_free(struct nf_fix_pidv *v);

/* --- fix_args.c: the command line --- */

/* fix's long options, for getopt_long (its short ones "+:c:m:nfuhi:"). */
extern const struct option nf_fix_longopts[];

/* A usage error of fix: msg, then word quoted if there is one. Returns
 * NF_EXIT_USAGE. */
int nf_fix_usage_err(const char *msg, const char *word);

/* The n PIDs given (and ngroups --cgroup and --unit): 0, or NF_EXIT_USAGE
 * after saying that there is none, or which is not a PID. */
int nf_fix_check_pids(int n, char **pids, int ngroups);

#endif
