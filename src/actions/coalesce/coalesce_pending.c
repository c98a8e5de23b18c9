/*
 * coalesce_pending.c - the set of connections holding bytes: what the
 * timer, poll, fork, exec and exit look at, so none of them walks every
 * descriptor. An array under plock, each buffer knowing its index (pidx),
 * so adding and removing take no search; its length is published in
 * nf_coalesce_npending for the hooks' lock-free test. A buffer that the
 * program's own read emptied stays in the set until the timer's next look
 * drops it (nf_co_flush_one_due): a program that writes and reads a
 * message at a time adds it once, not once a message. Room for every
 * buffer made is reserved when it is made: adding needs no memory.
 */
#include "coalesce_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

atomic_int nf_coalesce_npending;

static pthread_mutex_t plock = PTHREAD_MUTEX_INITIALIZER;
static struct nf_conn **pending;
static int pending_cap;
static int nmade; /* buffers ever made: the most the set can hold */

/* Makes the pending set able to hold n buffers, so that pending_add never
 * needs memory: every buffer made is pending at most once. Caller holds
 * plock. 0 or -ENOMEM. */
static int room_to_pend(int n)
{
	int ncap = pending_cap ? pending_cap : 16;
	struct nf_conn **np;

	while (ncap < n)
		ncap *= 2;
	if (ncap == pending_cap)
		return 0;
	np = realloc(pending, (size_t)ncap * sizeof(*np));
	if (!np)
		return -ENOMEM;
	pending = np;
	pending_cap = ncap;
	return 0;
}

int nf_co_pending_reserve(void)
{
	int rc;

	pthread_mutex_lock(&plock);
	rc = room_to_pend(nmade + 1);
	if (rc == 0)
		nmade++;
	pthread_mutex_unlock(&plock);
	return rc;
}

int nf_co_pending_add(struct nf_conn *c)
{
	struct nf_coalesce *co = c->co;
	int n;

	if (co->listed) /* still there: emptied since, and not yet dropped by the timer */
		return 0;
	pthread_mutex_lock(&plock);
	n = atomic_load(&nf_coalesce_npending);
	if (n == pending_cap) {
		int ncap = pending_cap ? pending_cap * 2 : 16;
		struct nf_conn **np = realloc(pending, (size_t)ncap * sizeof(*np));

		if (!np) {
			pthread_mutex_unlock(&plock);
			return -ENOMEM;
		}
		pending = np;
		pending_cap = ncap;
	}
	pending[n] = c;
	co->pidx = n;
	co->listed = 1;
	atomic_store(&nf_coalesce_npending, n + 1); /* seq_cst: see nf_coalesce_end */
	pthread_mutex_unlock(&plock);
	return 0;
}

void nf_co_pending_del(struct nf_conn *c)
{
	struct nf_coalesce *co = c->co;
	int last;

	if (!co->listed)
		return;
	pthread_mutex_lock(&plock);
	last = atomic_load(&nf_coalesce_npending) - 1;
	if (co->pidx >= 0 && co->pidx <= last) {
		pending[co->pidx] = pending[last];
		pending[co->pidx]->co->pidx = co->pidx;
		atomic_store(&nf_coalesce_npending, last);
	}
	co->pidx = -1;
	co->listed = 0;
	pthread_mutex_unlock(&plock);
}

/*
 * A copy of the pending set, so flushing can change it: in stack (up to
 * SNAP_STACK, so exit from a signal handler needs no malloc), else
 * malloc'd. Release it with nf_co_snapshot_release.
 */
struct nf_conn **nf_co_snapshot(struct nf_conn **stack, int *n)
{
	struct nf_conn **copy = stack;

	pthread_mutex_lock(&plock);
	*n = atomic_load(&nf_coalesce_npending);
	if (*n > SNAP_STACK)
		copy = malloc((size_t)*n * sizeof(*copy));
	if (copy && *n > 0)
		memcpy(copy, pending, (size_t)*n * sizeof(*copy));
	else
		*n = 0;
	pthread_mutex_unlock(&plock);
	return copy;
}

void nf_co_snapshot_release(struct nf_conn **copy, struct nf_conn **stack)
{
	if (copy != stack)
		free(copy);
}

/* The parent's threads may have held plock; the set is the parent's. */
void nf_co_pending_atfork_child(void)
{
	pthread_mutex_init(&plock, NULL);
	atomic_store(&nf_coalesce_npending, 0);
}
