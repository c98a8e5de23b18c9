/*
 * nf_init.h - the process-wide state and its one-time initialisation.
 */
#ifndef NF_INIT_H
#define NF_INIT_H

#include "nf_policy.h"

/* The policy of this process; valid after nf_init(). */
extern struct nf_policy nf_policy;

/*
 * Makes sure the real table, the fd table and the policy are ready.
 * Thread-safe and cheap after the first call; reached from the
 * constructor and from every hook (a JVM calls in before constructors).
 */
void nf_init(void);

#endif
