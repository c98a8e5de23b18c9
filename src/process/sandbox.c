/*
 * sandbox.c - standing aside before a seccomp filter (nf_sandbox.h).
 */
#include "nf_sandbox.h"

#include <errno.h>
#include <sys/socket.h>

#include "actions/audit/nf_audit.h"
#include "actions/coalesce/nf_coalesce.h"
#include "core/nf_aside.h"
#include "core/nf_conn.h"
#include "core/nf_guard.h"
#include "core/nf_log.h"
#include "core/nf_real.h"
#include "core/nf_timer.h"

/*
 * A connection whose held bytes could not be sent (a peer that took
 * nothing for its rule's drain=): its error would be the next send's, but from
 * now on the library sees no send, and the program's later bytes would
 * reach the peer with a hole before them. Shut down instead, in both
 * directions: the peer sees the end, the program's next send EPIPE.
 */
static void end_if_dropped(struct nf_conn *c, int fd)
{
	if (nf_conn_kind(c) == NF_KIND_TCP && nf_coalesce_dropped(c)) {
		nf_real.shutdown(fd, SHUT_RDWR);
		nf_log_msg("fd %d: held bytes dropped before a seccomp filter; "
			   "connection shut down", fd);
	}
}

static void pass(struct nf_conn *c, int fd)
{
	(void)fd;
	if (nf_conn_kind(c) == NF_KIND_TCP)
		atomic_store(&c->action, NF_ACT_PASS);
}

void nf_sandbox_enter(void)
{
	int saved = errno;

	if (nf_standing_aside())
		return;
	/* while the log may still be written: audit's summaries so far, and
	 * what coalesce holds sent (as at exit: each its drain=, then
	 * dropped and said so); from here on no write is held */
	nf_audit_log_exit();
	nf_coalesce_end();
	nf_conn_each(end_if_dropped);
	if (atomic_exchange(&nf_aside_flag, 1))
		return;
	if (!nf_guard_inside) /* not from a handler that interrupted the library,
				 perhaps holding the timer's lock */
		nf_timer_end();
	nf_conn_leave_all();
	nf_conn_each(pass);
	errno = saved;
}
