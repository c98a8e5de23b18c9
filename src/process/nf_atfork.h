/*
 * nf_atfork.h - what the library does around a fork: every module's part,
 * in one place, registered with pthread_atfork by initialisation and run
 * by the _Fork hook (libc's _Fork runs no handlers).
 */
#ifndef NF_ATFORK_H
#define NF_ATFORK_H

/* Before the fork: every held byte goes into the kernel (a child writing
 * on an inherited socket comes after it), then the forking thread blocks
 * every signal until nf_atfork_parent or nf_atfork_child. */
void nf_atfork_prepare(void);

/* In the parent after the fork: the thread's signal mask as it was. */
void nf_atfork_parent(void);

/* In the child: the fd table's locks, the coalesce buffers (the parent
 * sends them), the timer, auto's list and audit's state made the child's
 * own; then the signal mask as it was. */
void nf_atfork_child(void);

#endif
