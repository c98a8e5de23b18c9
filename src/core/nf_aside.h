/*
 * nf_aside.h - whether the library stands aside for good: it makes no
 * system call of its own from then on (none but those the program asked
 * for), because the program has put itself in a seccomp sandbox that
 * would kill it for one (nf_sandbox.h). Set once, never cleared.
 *
 * Read where the library would otherwise make a call of its own: the
 * hooks' first look (nf_conn_leaves_alone: every descriptor is left
 * alone), a socket's classification and rule (nf_track_lookup: none is
 * ours; a rule decided meanwhile becomes pass), a new entry's memory
 * (nf_conn_ensure), the timer (never started), the log (nothing written),
 * audit's summary at exit, the fork handlers' signal mask, main's
 * pthread_exit, vfork (libc's own again: interpose/process.c).
 */
#ifndef NF_ASIDE_H
#define NF_ASIDE_H

#include <stdatomic.h>

extern atomic_int nf_aside_flag;

/* 1 once the library stands aside. One load. */
static inline int nf_standing_aside(void)
{
	return atomic_load_explicit(&nf_aside_flag, memory_order_acquire);
}

#endif
