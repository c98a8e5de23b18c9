/*
 * fix_say.c - the failures of naglefix fix and fix --undo, each one line
 * on stderr that says what happened and what to do, and the exit status
 * it raises the run's to.
 */
#include "nf_fix.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

void nf_fix_worse(struct nf_fix_run *r, int status)
{
	if (status > r->status)
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
	fprintf(stderr,
		"naglefix fix: pid %d: %s: naglefix's own descriptor limit is reached (%s, ulimit -n "
		"%llu): stopped there; raise the limit and run it again\n",
		(int)pid, what, strerror(EMFILE), (unsigned long long)rl.rlim_cur);
	nf_fix_worse(r, NF_FIX_EXIT_MFILE);
}

void nf_fix_say_nosys(struct nf_fix_run *r)
{
	fputs("naglefix fix: this kernel has no pidfd_open/pidfd_getfd (ENOSYS: Linux 5.6 or later "
	      "has them), or a seccomp filter refuses them: nothing changed\n",
	      stderr);
	nf_fix_worse(r, NF_FIX_EXIT_NOSYS);
}

void nf_fix_say_error(struct nf_fix_run *r, const struct nf_fix_proc *p, int rc, int meanwhile)
{
	char why[512];
	int pid = (int)p->pid;

	if (rc == -EPERM || rc == -EACCES) {
		fprintf(stderr, "naglefix fix: pid %d: not allowed to take its sockets (%s): %s\n", pid,
			strerror(EPERM), nf_fix_proc_why_eperm(p, why, sizeof(why)));
		nf_fix_worse(r, NF_FIX_EXIT_PERM);
	} else if (rc == -ENOSYS) {
		nf_fix_say_nosys(r);
	} else if (rc == -ESRCH) {
		fprintf(stderr, "naglefix fix: pid %d: the process ended%s\n", pid,
			meanwhile ? " meanwhile" : "");
		nf_fix_worse(r, NF_FIX_EXIT_GONE);
	} else if (nf_fix_is_mfile(rc)) {
		nf_fix_say_mfile(r, p->pid, "taking its sockets");
	} else {
		fprintf(stderr, "naglefix fix: pid %d: %s\n", pid, strerror(-rc));
		nf_fix_worse(r, NF_FIX_EXIT_PARTIAL);
	}
}
