/*
 * watch_scanwork.c - the census of namespaces (watch_census.c) taken off
 * watch's loop, by a thread of its own, every NF_WATCH_SCAN_MS
 * (watch_int.h), so that however long a census waits off the CPU, the
 * loop reads its rings and judges stalls on time meanwhile.
 *
 * One census passes between the two, never both at once: the thread
 * takes it, hands it over (ready) and waits; the loop, at its next
 * clock, applies it to the set watched (watch_netns.c), writes in it the
 * inodes the set then holds, and hands it back. So the thread knows
 * exactly which namespaces want a descriptor, and no census is skipped.
 * The thread reads /proc and /run/netns and opens namespace files; it
 * touches nothing of the loop's.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "watch_int.h"

struct nf_watch_scanwork {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;          /* CLOCK_MONOTONIC */
	struct nf_watch_census *c;
	int ready;                    /* the census is the loop's (read without the lock too) */
	int stop;
};

/* The lock held: waits until the census is the thread's again and
 * NF_WATCH_SCAN_MS have passed since *at, or the stop. 0, or -1 at the
 * stop. *at becomes the time the wait ended. */
static int wait_turn(struct nf_watch_scanwork *sw, struct timespec *at)
{
	at->tv_nsec += NF_WATCH_SCAN_MS * 1000000L;
	at->tv_sec += at->tv_nsec / 1000000000L;
	at->tv_nsec %= 1000000000L;
	while (!sw->stop && __atomic_load_n(&sw->ready, __ATOMIC_ACQUIRE))
		pthread_cond_wait(&sw->cond, &sw->lock);
	while (!sw->stop && pthread_cond_timedwait(&sw->cond, &sw->lock, at) != ETIMEDOUT)
		;
	clock_gettime(CLOCK_MONOTONIC, at);
	return sw->stop ? -1 : 0;
}

static void *work(void *arg)
{
	struct nf_watch_scanwork *sw = arg;
	struct timespec at;

	clock_gettime(CLOCK_MONOTONIC, &at);
	pthread_mutex_lock(&sw->lock);
	while (wait_turn(sw, &at) == 0) {
		pthread_mutex_unlock(&sw->lock);
		nf_watch_census_take(sw->c);
		pthread_mutex_lock(&sw->lock);
		__atomic_store_n(&sw->ready, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&sw->lock);
	return NULL;
}

int nf_watch_scanwork_start(struct nf_watch *w, struct nf_watch_census *c)
{
	struct nf_watch_scanwork *sw = calloc(1, sizeof(*sw));
	pthread_condattr_t ca;
	sigset_t all, was;
	int rc;

	if (!sw)
		return -ENOMEM;
	pthread_mutex_init(&sw->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sw->cond, &ca);
	pthread_condattr_destroy(&ca);
	sw->c = c;
	sigfillset(&all); /* SIGINT and SIGTERM are the loop's: the thread blocks them all */
	pthread_sigmask(SIG_SETMASK, &all, &was);
	rc = pthread_create(&sw->thread, NULL, work, sw);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	if (rc) {
		pthread_cond_destroy(&sw->cond);
		pthread_mutex_destroy(&sw->lock);
		free(sw);
		return -rc;
	}
	w->scanwork = sw;
	return 0;
}

struct nf_watch_census *nf_watch_scanwork_ready(struct nf_watch *w)
{
	struct nf_watch_scanwork *sw = w->scanwork;

	return sw && __atomic_load_n(&sw->ready, __ATOMIC_ACQUIRE) ? sw->c : NULL;
}

void nf_watch_scanwork_back(struct nf_watch *w)
{
	struct nf_watch_scanwork *sw = w->scanwork;

	pthread_mutex_lock(&sw->lock);
	__atomic_store_n(&sw->ready, 0, __ATOMIC_RELEASE);
	pthread_cond_signal(&sw->cond);
	pthread_mutex_unlock(&sw->lock);
}

void nf_watch_scanwork_stop(struct nf_watch *w)
{
	struct nf_watch_scanwork *sw = w->scanwork;

	if (!sw)
		return;
	pthread_mutex_lock(&sw->lock);
	sw->stop = 1;
	pthread_cond_signal(&sw->cond);
	pthread_mutex_unlock(&sw->lock);
	pthread_join(sw->thread, NULL);
	pthread_cond_destroy(&sw->cond);
	pthread_mutex_destroy(&sw->lock);
	free(sw);
	w->scanwork = NULL;
}
