/*
 * nf_guard.h - one thread inside the library's bookkeeping at a time.
 *
 * A signal handler can interrupt a thread anywhere in the library, perhaps
 * holding a lock, and call write, recv or poll itself. Taking that lock
 * again would deadlock the thread on itself. So each coalesce and audit
 * entry point marks the thread as inside; an entry point reached while the
 * mark is set (from a handler) does none of its bookkeeping: a send goes
 * straight to the kernel, a flush or an observation is skipped.
 */
#ifndef NF_GUARD_H
#define NF_GUARD_H

extern __thread int nf_guard_inside __attribute__((tls_model("initial-exec")));

/* 1 and the thread marked inside, or 0 if it already was. */
static inline int nf_guard_enter(void)
{
	if (nf_guard_inside)
		return 0;
	nf_guard_inside = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return 1;
}

static inline void nf_guard_leave(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	nf_guard_inside = 0;
}

#endif
