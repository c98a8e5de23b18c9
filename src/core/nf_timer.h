/*
 * nf_timer.h - the one background thread that flushes what is due:
 * coalesce buffers whose oldest byte is, auto's pushes, audit's repeat
 * counts. It holds no file descriptor, blocks every signal, and is started
 * lazily (again in a forked child).
 */
#ifndef NF_TIMER_H
#define NF_TIMER_H

/* While deadlines keep coming, the timer looks at least this often, and a
 * deadline no earlier than its next look needs no wake (see timer.c). */
#define NF_TIMER_TICK_NS 10000000ull

/* What the timer calls at each look, at time now_ns: flushes what is due
 * and returns the next deadline of its own (0: none). Runs on the timer
 * thread, every signal blocked, with no lock of the timer's held. */
typedef unsigned long long (*nf_timer_due_fn)(unsigned long long now_ns);

/* The most nf_timer_due_fns the timer serves. */
#define NF_TIMER_CLIENTS 4

/* Adds fn to what every look calls (once, however often registered), so
 * that the timer knows nothing of the modules it serves. Returns 0, or
 * -ENOSPC past NF_TIMER_CLIENTS. Made during initialisation, before any
 * nf_timer_arm of fn's deadlines. */
int nf_timer_register(nf_timer_due_fn fn);

/* A buffer got a new deadline: start the thread if needed and wake it if
 * the deadline is earlier than the one it sleeps towards. */
void nf_timer_arm(unsigned long long deadline_ns);

/* The library stands aside (nf_sandbox.h): the thread, if any, ends now
 * and is never started again (nf_timer_arm does nothing then); waits, at
 * most a second, until the kernel has reaped it, so that a seccomp filter
 * put on every thread (SECCOMP_FILTER_FLAG_TSYNC) meets no thread of the
 * library's, half-started or ending. Keeps errno. */
void nf_timer_end(void);

/* 1 once the thread could not be started (nothing looks at deadlines:
 * only reads, waits and closes flush), else 0. One load. */
int nf_timer_failed(void);

/* main has called pthread_exit: the process ends with its last thread,
 * so from now on the timer thread ends whenever nothing is due (the next
 * nf_timer_arm starts it again). */
void nf_timer_let_go(void);

/* In a forked child: the thread did not survive the fork. */
void nf_timer_atfork_child(void);

#endif
