/*
 * atfork.c - the fork handlers: each module's part of a fork, in the
 * order it must run. A child's copies of the parent's locks may be held
 * by threads that do not exist in it, and its buffers are the parent's to
 * send; no signal handler may run in the child while they are made new.
 */
#include "nf_atfork.h"

#include <pthread.h>
#include <signal.h>

#include "actions/audit/nf_audit.h"
#include "actions/auto/nf_auto.h"
#include "actions/coalesce/nf_coalesce.h"
#include "core/nf_aside.h"
#include "core/nf_conn.h"
#include "core/nf_timer.h"

/* The forking thread's signal mask, from prepare to parent or child, and
 * whether prepare blocked every signal (not once the library stands aside:
 * no rt_sigprocmask the program did not make, for a seccomp filter). */
static __thread sigset_t fork_mask __attribute__((tls_model("initial-exec")));
static __thread int masked __attribute__((tls_model("initial-exec")));

void nf_atfork_prepare(void)
{
	sigset_t all;

	nf_coalesce_before_child();
	masked = !nf_standing_aside();
	if (!masked)
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &fork_mask);
}

void nf_atfork_parent(void)
{
	if (masked)
		pthread_sigmask(SIG_SETMASK, &fork_mask, NULL);
}

void nf_atfork_child(void)
{
	nf_conn_atfork_child();
	nf_coalesce_atfork_child();
	nf_timer_atfork_child();
	nf_auto_atfork_child();
	nf_audit_atfork_child();
	if (masked)
		pthread_sigmask(SIG_SETMASK, &fork_mask, NULL);
}
