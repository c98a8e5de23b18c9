/*
 * fix_errors.c - the failures of naglefix fix and fix --undo, each one line
 * on stderr that says what happened and what to do, and the exit status
 * it raises the run's to.
 */
#include "fix_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "cli/common/nf_cli.h"

/* How serious a status is: 0, then 6 (nothing to fix), then 1 to 5. */
static int rank(int status)
{
	return status == NF_FIX_EXIT_NOTCP ? 1 : status ? status + 1 : 0;
}

void nf_fix_worse(struct nf_fix_run *r, int status)
{
	if (rank(status) > rank(r->status))
		r->status = status;
}

int nf_fix_is_mfile(int rc)
{
	return rc == -EMFILE || rc == -ENFILE;
}

void nf_fix_say_mfile(struct nf_fix_run *r, pid_t pid, const char *what)
{
	struct rlimit rl;

	getrlimit(RLIMIT_NOFILE, &rl);
	nf_cli_warnx(0,
		"pid %d: %s: naglefix's own descriptor limit is reached (%s, ulimit -n "
		"%llu): stopped there; raise the limit and run it again",
		(int)pid, what, strerror(EMFILE), (unsigned long long)rl.rlim_cur);
	nf_fix_worse(r, NF_FIX_EXIT_MFILE);
}

void nf_fix_say_nosys(struct nf_fix_run *r)
{
	nf_cli_warnx(0, "this kernel has no pidfd_open/pidfd_getfd (ENOSYS: Linux 5.6 or later "
			"has them), or a seccomp filter refuses them: nothing changed");
	nf_fix_worse(r, NF_FIX_EXIT_NOSYS);
}

void nf_fix_say_error(struct nf_fix_run *r, const struct nf_fix_proc *p, int rc, int meanwhile)
{
	char why[512];
	int pid = (int)p->pid;

	if (rc == -EPERM || rc == -EACCES) {
		nf_cli_warnx(0, "pid %d: not allowed to take its sockets (%s): %s", pid,
			strerror(EPERM), nf_fix_proc_why_eperm(p, why, sizeof(why)));
		nf_fix_worse(r, NF_FIX_EXIT_PERM);
	} else if (rc == -ENOSYS) {
		nf_fix_say_nosys(r);
	} else if (rc == -ESRCH) {
		nf_cli_warnx(0, "pid %d: the process ended%s", pid,
			meanwhile ? " meanwhile" : "");
		nf_fix_worse(r, NF_FIX_EXIT_GONE);
	} else if (nf_fix_is_mfile(rc)) {
		nf_fix_say_mfile(r, p->pid, "taking its sockets");
	} else {
		nf_cli_warnx(0, "pid %d: %s", pid, strerror(-rc));
		nf_fix_worse(r, NF_FIX_EXIT_PARTIAL);
	}
}

/* ", its child processes: 124 (java), ...: give theirs", or "". */
static const char *children_hint(pid_t pid, char *buf, size_t len)
{
	pid_t kids[8];
	size_t n = nf_fix_proc_children(pid, kids, 8), used;
	char comm[64];

	buf[0] = '\0';
	if (!n)
		return buf;
	used = (size_t)snprintf(buf, len, "; its child process%s: ", n == 1 ? "" : "es");
	for (size_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%d (%s)", i ? ", " : "",
					 (int)kids[i], nf_fix_proc_comm(kids[i], comm, sizeof(comm)));
	if (used < len)
		snprintf(buf + used, len - used, "%s: give %s", n == 8 ? ", ..." : "",
			 n == 1 ? "its PID" : "theirs");
	return buf;
}

void nf_fix_say_no_tcp(struct nf_fix_run *r, pid_t pid, enum nf_fix_notcp when)
{
	char comm[64], hint[512];

	nf_fix_proc_comm(pid, comm, sizeof(comm));
	children_hint(pid, hint, sizeof(hint));
	if (when == NF_FIX_NOTCP_WAITING) {
		nf_cli_warnx(0, "pid %d (%s) holds no TCP socket yet: waiting for one%s",
			(int)pid, comm, hint);
		return;
	}
	if (when == NF_FIX_NOTCP_FOLLOWED)
		nf_cli_warnx(0, "pid %d held no TCP socket while followed: nothing fixed",
			(int)pid);
	else
		nf_cli_warnx(0, "pid %d (%s) holds no TCP socket: nothing to fix%s",
			(int)pid, comm, hint);
	nf_fix_worse(r, NF_FIX_EXIT_NOTCP);
}
