/*
 * watch_setns.c - entering a namespace watch watches, and coming back
 * (watch_int.h): a capture is made inside its namespace (watch_cap.c),
 * and a holder's socket is asked for there (watch_owner.c), since a
 * socket belongs to the namespace it was made in. Only the calling
 * thread moves (watch has one).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "watch_int.h"
#include "cli/common/nf_cli.h"

static int is_home(const struct nf_watch *w, const struct nf_watch_ns *ns)
{
	return !ns || ns == w->ns[0];
}

int nf_watch_enter(struct nf_watch *w, const struct nf_watch_ns *ns)
{
	if (is_home(w, ns))
		return 0;
	return setns(ns->fd, CLONE_NEWNET) ? -errno : 0;
}

void nf_watch_leave(struct nf_watch *w, const struct nf_watch_ns *ns)
{
	if (is_home(w, ns))
		return;
	if (setns(w->self_fd, CLONE_NEWNET) == 0)
		return;
	nf_cli_warnx(0, "coming back from network namespace %s: %s", ns->name,
		strerror(errno));
	exit(1);
}
