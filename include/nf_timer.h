/*
 * nf_timer.h - the one background thread that flushes coalesce buffers
 * whose oldest byte is due. It holds no file descriptor, blocks every
 * signal, and is started lazily (again in a forked child).
 */
#ifndef NF_TIMER_H
#define NF_TIMER_H

/* While deadlines keep coming, the timer looks at least this often, and a
 * deadline no earlier than its next look needs no wake (see timer.c). */
#define NF_TIMER_TICK_NS 10000000ull

/* A buffer got a new deadline: start the thread if needed and wake it if
 * the deadline is earlier than the one it sleeps towards. */
void nf_timer_arm(unsigned long long deadline_ns);

/* main has called pthread_exit: the process ends with its last thread,
 * so from now on the timer thread ends whenever nothing is due (the next
 * nf_timer_arm starts it again). */
void nf_timer_let_go(void);

/* In a forked child: the thread did not survive the fork. */
void nf_timer_atfork_child(void);

#endif
