/*
 * nf_init.h - the process's one-time initialisation (the policy it loads
 * is nf_policy, nf_track.h).
 */
#ifndef NF_INIT_H
#define NF_INIT_H

#include <stdatomic.h>

/* 1 once nf_init has finished (init.c). */
extern atomic_int nf_ready;

/* nf_init's first call; every later one is the load in nf_init. */
void nf_init_once(void);

/*
 * Makes sure the real table, the fd table and the policy are ready.
 * Thread-safe and one load after the first call; reached from the
 * constructor and from every hook (a JVM calls in before constructors).
 */
static inline void nf_init(void)
{
	if (!atomic_load_explicit(&nf_ready, memory_order_acquire))
		nf_init_once();
}

#endif
