/*
 * init.c - the one-time set-up of the process: real symbols, fd table,
 * log and policy, under pthread_once.
 */
#include "nf_init.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/auxv.h>

#include "nf_atfork.h"
#include "nf_config.h"
#include "said_int.h"
#include "actions/audit/nf_audit.h"
#include "actions/auto/nf_auto.h"
#include "actions/coalesce/nf_coalesce.h"
#include "actions/nf_track.h"
#include "core/nf_conn.h"
#include "core/nf_guard.h"
#include "core/nf_log.h"
#include "core/nf_reach.h"
#include "core/nf_real.h"
#include "core/nf_timer.h"

__thread int nf_guard_inside __attribute__((tls_model("initial-exec")));

static pthread_once_t once = PTHREAD_ONCE_INIT;
atomic_int nf_ready;
static int in_constructor; /* the set-up runs before main: no thread of the program yet */

/* An empty variable counts as unset. */
static const char *env(const char *name)
{
	const char *v = secure_getenv(name);

	return v && *v ? v : NULL;
}

/*
 * Nothing here may call an interposed function: we are inside
 * pthread_once, and a hook would wait on it forever.
 */
static void init_once(void)
{
	char err[512];
	int saved = errno;

	nf_real_init();
	if (nf_log_setup(env("NAGLEFIX_LOG")) < 0)
		nf_log_msg("NAGLEFIX_LOG: unusable path; using stderr");
	nf_reach_setup(env("NAGLEFIX_REACH"));
	nf_policy.dflt = nf_policy_opts_default(NF_ACT_PASS);
	if (nf_conn_init(1) < 0) {
		nf_log_msg("out of memory for the fd table; all sockets left alone");
	} else if (nf_config_load(&nf_policy, env("NAGLEFIX_CONF"), env("NAGLEFIX_MODE"),
				  getauxval(AT_SECURE) != 0, err, sizeof(err)) < 0) {
		/* once per process tree: the programs this one starts read the same file */
		nf_said_once(err, in_constructor && !getauxval(AT_SECURE));
	}
	nf_audit_setup(&nf_policy);
	/* the timer calls these back; it knows nothing of either module */
	nf_timer_register(nf_coalesce_flush_due);
	nf_timer_register(nf_auto_flush_due);
	nf_timer_register(nf_audit_flush_due);
	pthread_atfork(nf_atfork_prepare, nf_atfork_parent, nf_atfork_child);
	atomic_store_explicit(&nf_ready, 1, memory_order_release);
	errno = saved;
}

void nf_init_once(void)
{
	pthread_once(&once, init_once);
}

__attribute__((constructor)) static void nf_constructor(void)
{
	in_constructor = 1;
	nf_init();
	in_constructor = 0;
}
