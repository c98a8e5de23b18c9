/*
 * fix_mark.c - a socket fix set (or found on), marked for naglefix's
 * setsockopt program in its map of marks (nf_bpf.h), from user space by
 * the duplicate of the program's descriptor: for attach --now (the map in
 * nf_fix_req) and watch --fix --attach (nf_fix_mark_inode, fix_api.c), so
 * that program keeps the connection on against the program's own
 * setsockopt(TCP_NODELAY, 0), as on one the sock_ops program set. The one
 * file of cli/fix that calls src/bpf.
 */
#include "fix_int.h"

#include <string.h>

#include "bpf/nf_bpf.h"
#include "cli/common/nf_cli.h"

int nf_fix_mark_wanted(const struct nf_fix_marks *m, int dry, const struct nf_fix_sock *s)
{
	return m->fd > 0 && !dry && nf_fix_mark_fits(s);
}

int nf_fix_mark_fits(const struct nf_fix_sock *s)
{
	return !s->listening && s->peer_len > 0;
}

int nf_fix_mark_sock(int marks_fd, int dup)
{
	int rc = nf_bpf_marks_set(marks_fd, dup);

	return rc == 0 ? 1 : rc;
}

void nf_fix_mark_row(struct nf_fix_run *run, struct nf_fix_marks *m, pid_t pid,
		     const struct nf_fix_sock *s, int dup, struct nf_fix_row *r)
{
	if (!nf_fix_mark_wanted(m, run->dry, s))
		return;
	r->marked = nf_fix_mark_sock(m->fd, dup);
	if (r->marked == 1)
		return;
	nf_fix_worse(run, NF_FIX_EXIT_PARTIAL);
	if (m->said++)
		return;
	nf_cli_warnx(0,
		"pid %d fd %d: marking it for attach's setsockopt program: %s: it stays set, but "
		"its program's own setsockopt(TCP_NODELAY, 0) can turn Nagle back on (said once; "
		"the line of each such socket says \"not marked\")",
		(int)pid, s->fd, strerror(-r->marked));
}
