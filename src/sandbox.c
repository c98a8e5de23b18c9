/*
 * sandbox.c - standing aside before a seccomp filter (nf_sandbox.h).
 */
#include "nf_sandbox.h"

#include <errno.h>

#include "nf_aside.h"
#include "nf_audit.h"
#include "nf_coalesce.h"
#include "nf_conn.h"
#include "nf_timer.h"

void nf_sandbox_enter(void)
{
	int saved = errno;
	unsigned used;

	if (nf_standing_aside())
		return;
	/* while the log may still be written: audit's summaries so far, and
	 * what coalesce holds sent (as at exit: NF_DRAIN_MS in all, then
	 * dropped and said so); from here on no write is held */
	nf_audit_log_exit();
	nf_coalesce_end();
	if (atomic_exchange(&nf_aside_flag, 1))
		return;
	nf_timer_end();
	nf_conn_leave_all();
	used = (unsigned)nf_conn_used();
	for (unsigned fd = 0; fd < used; fd++) {
		struct nf_conn *c = nf_conn_peek((int)fd);

		if (!c)
			fd |= (1u << NF_CONN_CHUNK_SHIFT) - 1; /* a chunk never made */
		else if (nf_conn_kind(c) == NF_KIND_TCP)
			atomic_store(&c->action, NF_ACT_PASS);
	}
	errno = saved;
}
