/*
 * fix_undo.c - naglefix fix --undo: what fix (or watch --fix) turned on,
 * read from the record (fix_record.c), turned off again socket by socket,
 * each only if the process, the descriptor and TCP_NODELAY 1 are still as
 * fix left them; the record removed after, or left listing only the
 * sockets that stay on (marked for naglefix's setsockopt program: for an
 * undo after detach).
 */
#include "fix_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/common/nf_cli.h"

/* Turns TCP_NODELAY off again on one recorded socket of p, if it is still
 * that socket and still on. Returns 0; 1 if it reads 1 after (a socket
 * marked for naglefix's setsockopt program on its cgroup, which turns
 * this very setsockopt(0) into 1 too: the record is to be kept for an
 * undo after detach); or a fatal negative errno. */
static int undo_one(struct nf_fix_run *f, const struct nf_fix_proc *p,
		    const struct nf_fix_record_entry *e)
{
	struct nf_fix_sock s = { .fd = e->fd, .ino = e->ino, .nodelay = -1 };
	struct nf_fix_row r = { .pid = p->pid, .s = &s, .side = "-", .undo = 1, .before = -1 };
	int dup = nf_fix_sock_take(p, e->fd, e->ino), rc, kept = 0;

	r.after = -1;
	if (dup == -ESTALE || dup == -EBADF) {
		r.result = NF_FIX_SKIPPED;
		r.why = "the descriptor was closed (or now holds another file): left";
		nf_fix_out_row(stdout, f->json, &r);
		return 0;
	}
	if (dup < 0)
		return dup;
	if (nf_fix_sock_identify(dup, e->fd, e->ino, &s) == 0)
		r.side = s.listening ? "listen" : "-";
	r.before = r.after = nf_fix_sock_nodelay(dup);
	if (r.before != 1) {
		r.result = NF_FIX_SKIPPED;
		r.why = "TCP_NODELAY is off already (the program turned it off): left";
	} else if (f->dry) {
		r.result = NF_FIX_WOULD_UNDO;
		r.after = 0;
	} else if ((rc = nf_fix_sock_set_nodelay(dup, 0)) < 0) {
		r.result = NF_FIX_SKIPPED;
		r.why = strerror(-rc);
		nf_fix_worse(f, NF_FIX_EXIT_PARTIAL);
	} else if ((r.after = nf_fix_sock_nodelay(dup)) == 1) {
		r.result = NF_FIX_SKIPPED;
		r.why = "kept on by naglefix's setsockopt program on its cgroup (the socket is "
			"marked): detach first, then undo again (its record is kept)";
		nf_fix_worse(f, NF_FIX_EXIT_PARTIAL);
		kept = 1;
	} else {
		r.result = NF_FIX_UNDONE;
	}
	close(dup);
	nf_fix_out_row(stdout, f->json, &r);
	return kept;
}

/* The record of p made to list only v[0..n): those its undo left on
 * (none: the record removed); said if it cannot be written. */
static void keep_only(const struct nf_fix_proc *p, const struct nf_fix_record_entry *v, size_t n)
{
	int rc = nf_fix_record_forget(p->pid);

	for (size_t i = 0; i < n && rc == 0; i++)
		rc = nf_fix_record_add(p, v[i].fd, v[i].ino);
	if (rc < 0)
		nf_cli_warnx(0, "pid %d: writing the record of the sockets left on (%s/fix-%d): "
			"%s: an undo after detach will not find them all", (int)p->pid,
			nf_fix_state_dir(), (int)p->pid, strerror(-rc));
}

/* Undoes what the record of pid lists; says why not, if not. */
static void undo_pid(struct nf_fix_run *f, pid_t pid)
{
	struct nf_fix_record_entry *v = NULL;
	struct nf_fix_proc p = { .pid = pid, .pidfd = -1 };
	size_t n = 0, i, kept = 0;
	int rc = nf_fix_record_read(pid, &v, &n);
	char why[160];

	if (rc < 0 || n == 0) {
		nf_cli_warnx(0, "pid %d: nothing to undo (%s/fix-%d: %s)", (int)pid,
			nf_fix_state_dir(), (int)pid,
			rc < 0 ? nf_fix_state_dir_why(rc, why, sizeof(why)) : "empty");
		nf_fix_worse(f, nf_fix_is_mfile(rc) ? NF_FIX_EXIT_MFILE : NF_FIX_EXIT_PARTIAL);
		free(v);
		return;
	}
	rc = nf_fix_proc_open(pid, &p);
	if (rc == 0 && p.start != v[0].start) {
		nf_cli_warnx(0,
			"pid %d: another process has this PID now (started at %llu, the "
			"record's at %llu): nothing undone%s",
			(int)pid, p.start, v[0].start, f->dry ? "" : ", the record removed");
		if (!f->dry)
			nf_fix_record_forget(pid);
		nf_fix_worse(f, NF_FIX_EXIT_GONE);
	} else if (rc == -ESRCH) {
		nf_cli_warnx(0, "pid %d: the process has ended: nothing to undo%s",
			(int)pid, f->dry ? "" : ", the record removed");
		if (!f->dry)
			nf_fix_record_forget(pid);
		nf_fix_worse(f, NF_FIX_EXIT_GONE);
	} else if (rc == 0) {
		for (i = 0; i < n && rc >= 0; i++)
			if (v[i].pid == pid && (rc = undo_one(f, &p, &v[i])) > 0)
				v[kept++] = v[i]; /* kept <= i: v's own start is reused */
		if (rc < 0)
			nf_fix_say_error(f, &p, rc, 1); /* the record kept: what is left can be undone later */
		else if (!f->dry)
			keep_only(&p, v, kept);
	} else {
		p.pid = pid;
		p.pidfd = -1;
		nf_fix_say_error(f, &p, rc, 0);
	}
	nf_fix_proc_close(&p);
	free(v);
}

int nf_fix_undo(struct nf_fix_run *f, int n, char **pids)
{
	for (int i = 0; i < n; i++)
		undo_pid(f, (pid_t)atoi(pids[i]));
	if (!f->dry)
		nf_fix_record_sweep();
	return f->status;
}
