/*
 * timer.c - the background thread that flushes what is due: coalesce
 * buffers, auto's pushes and audit's repeat counts, through the
 * nf_timer_due_fn each registered (nf_timer_register), so that the timer
 * includes none of those modules.
 *
 * One thread for the process, started on the first buffered write (and
 * again in a forked child, where it did not survive). It sleeps on a
 * condition variable (a futex: no file descriptor a daemon could close)
 * until the earliest deadline, and blocks every signal, so a SIGPIPE or a
 * program's handler never runs on it.
 *
 * It must never be what keeps a process alive: once main has left with
 * pthread_exit (nf_timer_let_go), it ends whenever nothing is due and is
 * started again by the next buffered write.
 *
 * Waking it costs two futex calls and a switch of threads, more than a
 * small message's round trip; so a busy program must not wake it per
 * message. While deadlines keep coming, the timer looks at least every
 * NF_TIMER_TICK_NS and publishes when its next look will be (horizon): a
 * deadline no earlier than that needs no wake, only a note that someone
 * relied on it (touched). A look that finds no note stops the ticks; the
 * next arm wakes the timer again. Every look stores the new horizon before
 * it scans, so a buffer armed against the old one is in its scan.
 * (coalesce gives such deadlines to connections whose program reads after
 * it writes: see TRUST_AFTER in coalesce_int.h.)
 */
#include "nf_timer.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>

#include "nf_aside.h"
#include "nf_clock.h"
#include "nf_log.h"

static pthread_mutex_t tlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tcond;
static atomic_int started; /* 0 not running, 1 running, -1 could not
			      start: tlock's, but nf_timer_failed's load */
static unsigned long long wake_at; /* 0: nothing to do */
static int let_go; /* main has left: end whenever nothing is due */
static _Atomic unsigned long long horizon; /* next look promised; 0: none */
static atomic_int touched; /* an arm came since the last look */
static _Atomic nf_timer_due_fn clients[NF_TIMER_CLIENTS]; /* what each look calls */
static atomic_int nclients;
static int quit;           /* end now, for good: the library stands aside */
static atomic_int timer_tid; /* the thread's id, for nf_timer_end */

static struct timespec to_timespec(unsigned long long ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
			       .tv_nsec = (long)(ns % 1000000000ull) };
	return ts;
}

/* How often an idle timer looks whether it is the process's last thread. */
#define IDLE_CHECK_NS 1000000000ull

/*
 * Is this the process's last live thread? main (the thread group leader)
 * has ended when its exe link is gone (its memory is released; the task
 * stays, a zombie, until the group ends), and /proc/self/task counts 2 +
 * its tasks, the zombie included: 4 is main's and ours. Catches a main
 * that ended where no hook saw it (pthread_cancel); opens no descriptor
 * (a thread of the program may be closing them all). Without /proc: no.
 */
static int last_thread_left(void)
{
	char path[64], target[8];
	struct stat st;
	int saved = errno, last;

	snprintf(path, sizeof(path), "/proc/self/task/%d/exe", (int)getpid());
	last = stat("/proc/self/task", &st) == 0 && st.st_nlink <= 4 &&
	       readlink(path, target, sizeof(target)) < 0 && errno == ENOENT;
	errno = saved;
	return last;
}

/* Is fn among the first n clients? */
static int registered(nf_timer_due_fn fn, int n)
{
	for (int i = 0; i < n; i++)
		if (atomic_load(&clients[i]) == fn)
			return 1;
	return 0;
}

int nf_timer_register(nf_timer_due_fn fn)
{
	int rc = 0, n;

	pthread_mutex_lock(&tlock);
	n = atomic_load(&nclients);
	if (registered(fn, n)) {
		rc = 0;
	} else if (n == NF_TIMER_CLIENTS) {
		rc = -ENOSPC;
	} else {
		atomic_store(&clients[n], fn);
		atomic_store(&nclients, n + 1); /* after the pointer: a look sees it whole */
	}
	pthread_mutex_unlock(&tlock);
	return rc;
}

/* What each registered client flushes at time now: returns the earliest
 * of their next deadlines (0: none). */
static unsigned long long call_clients(unsigned long long now)
{
	unsigned long long next = 0;

	for (int i = 0, n = atomic_load(&nclients); i < n; i++) {
		unsigned long long d = atomic_load(&clients[i])(now);

		if (d && (next == 0 || d < next))
			next = d;
	}
	return next;
}

/* One look at every pending buffer at time now, flushing what is due:
 * returns when the next look must be (0: none). Promises the next look a
 * tick from now if an arm relied on the last promise, else withdraws it;
 * either before the scan. Called and returns with tlock held. */
static unsigned long long look(unsigned long long now)
{
	unsigned long long next, tick = 0;

	wake_at = 0; /* an arm during the scan sets it */
	if (atomic_exchange(&touched, 0))
		tick = now + NF_TIMER_TICK_NS;
	atomic_store(&horizon, tick);
	pthread_mutex_unlock(&tlock);
	next = call_clients(now);
	pthread_mutex_lock(&tlock);
	if (wake_at && (next == 0 || wake_at < next))
		next = wake_at; /* armed during the scan */
	if (tick && (next == 0 || tick < next))
		next = tick;
	return next;
}

/* Sleeps until wake_at passes, then flushes what is due; idle, ends when
 * main has left (nf_timer_let_go) or every other thread has ended. */
static void *timer_main(void *arg)
{
	(void)arg;
	atomic_store(&timer_tid, (int)syscall(SYS_gettid));
	prctl(PR_SET_NAME, "naglefix-timer");
	pthread_mutex_lock(&tlock);
	for (;;) {
		unsigned long long now = nf_clock_now_ns();

		if (quit || (wake_at == 0 && let_go))
			break;
		if (wake_at == 0) {
			struct timespec ts = to_timespec(now + IDLE_CHECK_NS);

			if (pthread_cond_timedwait(&tcond, &tlock, &ts) == ETIMEDOUT &&
			    wake_at == 0 && last_thread_left())
				break;
			continue;
		}
		if (now < wake_at) {
			struct timespec ts = to_timespec(wake_at);

			pthread_cond_timedwait(&tcond, &tlock, &ts);
			continue;
		}
		wake_at = look(now);
	}
	atomic_store(&horizon, 0);
	/* the next nf_timer_arm starts a new thread */
	atomic_store_explicit(&started, 0, memory_order_relaxed);
	pthread_mutex_unlock(&tlock);
	return NULL;
}

/* Starts the thread with every signal blocked. Caller holds tlock. */
static void start(void)
{
	pthread_condattr_t ca;
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&tcond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, &attr, timer_main, NULL) == 0) {
		atomic_store_explicit(&started, 1, memory_order_relaxed);
	} else {
		atomic_store_explicit(&started, -1, memory_order_relaxed);
		nf_log_msg("cannot start the flush timer; buffers flush on read and close only");
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

/* The timer will look at pending buffers by deadline_ns without a wake. */
static int looks_by(unsigned long long deadline_ns)
{
	unsigned long long h = atomic_load(&horizon);

	if (h == 0 || h > deadline_ns)
		return 0;
	if (!atomic_load_explicit(&touched, memory_order_relaxed))
		atomic_store(&touched, 1);
	return 1;
}

void nf_timer_arm(unsigned long long deadline_ns)
{
	int saved;

	if (nf_standing_aside() || looks_by(deadline_ns)) /* no thread, no wake */
		return;
	saved = errno;
	pthread_mutex_lock(&tlock);
	if (quit) { /* ended for good meanwhile (nf_timer_end) */
		pthread_mutex_unlock(&tlock);
		errno = saved;
		return;
	}
	if (atomic_load_explicit(&started, memory_order_relaxed) == 0)
		start();
	atomic_store(&touched, 1);
	if (wake_at == 0 || deadline_ns < wake_at) {
		wake_at = deadline_ns;
		pthread_cond_signal(&tcond);
	}
	pthread_mutex_unlock(&tlock);
	errno = saved;
}

/* Is the thread of id tid gone from the kernel (or never was)? */
static int reaped(int tid)
{
	return tid == 0 || (syscall(SYS_tgkill, (long)getpid(), (long)tid, 0L) < 0 && errno == ESRCH);
}

void nf_timer_end(void)
{
	struct timespec ms = { .tv_sec = 0, .tv_nsec = 1000000 };
	int saved = errno;

	pthread_mutex_lock(&tlock);
	quit = 1;
	if (atomic_load_explicit(&started, memory_order_relaxed) == 1)
		pthread_cond_signal(&tcond);
	pthread_mutex_unlock(&tlock);
	for (int i = 0; i < 1000; i++) {
		if (atomic_load_explicit(&started, memory_order_relaxed) != 1 &&
		    reaped(atomic_load(&timer_tid)))
			break;
		nanosleep(&ms, NULL);
	}
	errno = saved;
}

int nf_timer_failed(void)
{
	return atomic_load_explicit(&started, memory_order_relaxed) < 0;
}

void nf_timer_let_go(void)
{
	int saved = errno;

	pthread_mutex_lock(&tlock);
	let_go = 1;
	if (wake_at) /* look now: what main's hook flushed is no longer due */
		wake_at = nf_clock_now_ns();
	if (atomic_load_explicit(&started, memory_order_relaxed) == 1)
		pthread_cond_signal(&tcond);
	pthread_mutex_unlock(&tlock);
	errno = saved;
}

void nf_timer_atfork_child(void)
{
	pthread_mutex_init(&tlock, NULL);
	atomic_store_explicit(&started, 0, memory_order_relaxed);
	wake_at = 0;
	atomic_store(&horizon, 0);
	atomic_store(&touched, 0);
	atomic_store(&timer_tid, 0);
}
