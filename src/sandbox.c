/*
 * sandbox.c - standing aside before a seccomp filter (nf_sandbox.h).
 */
#include "nf_sandbox.h"

#include <errno.h>

#include "nf_aside.h"
#include "nf_coalesce.h"
#include "nf_conn.h"

/* fd's entry c: what it holds sent, its rule pass, its byte of the fast
 * map "leave alone". */
static void stand_aside(struct nf_conn *c, int fd)
{
	if (nf_conn_kind(c) == NF_KIND_TCP) {
		if (atomic_load(&c->action) == NF_ACT_COALESCE)
			nf_coalesce_retire(c, fd, NF_ACT_PASS);
		else
			atomic_store(&c->action, NF_ACT_PASS);
	}
	nf_conn_publish(fd);
}

void nf_sandbox_enter(void)
{
	int saved = errno;
	unsigned used;

	if (atomic_exchange(&nf_aside_flag, 1))
		return;
	/* no new hold, even on a socket another thread decides coalesce
	 * meanwhile: each then sends what it holds, and nothing more */
	nf_coalesce_hold_no_more();
	used = (unsigned)nf_conn_used();
	for (unsigned fd = 0; fd < used; fd++) {
		struct nf_conn *c = nf_conn_peek((int)fd);

		if (!c)
			fd |= (1u << NF_CONN_CHUNK_SHIFT) - 1; /* a chunk never made */
		else
			stand_aside(c, (int)fd);
	}
	errno = saved;
}
