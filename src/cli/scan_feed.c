/*
 * scan_feed.c - a capture read and decoded on a thread of its own while
 * the calling thread runs the detector on what came before: scan's two
 * halves (reading and decoding; the connection table and the signature)
 * each take about half its time, so on two processors they overlap.
 *
 * The reader fills batches of segments in a small ring (FEED_RING
 * batches of FEED_BATCH); the caller takes them in order. Nothing but the
 * ring is shared: the reader owns the capture, the caller the detector.
 * Each side counts its batches in a counter of its own, and waits for
 * the other's by looking at it a while (the halves take about as long,
 * so the wait is short, and a sleep and a wake-up cost more than it on a
 * virtual machine) before it sleeps; a side that moves its counter wakes
 * the other only if it sleeps. Where no thread can be made, the same
 * work runs on the caller's thread.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "cli_int.h"
#include "wire/nf_feed.h"

#define FEED_BATCH 1024 /* segments a batch: a hand-over costs far less than its work */
#define FEED_RING  4    /* batches: 192 KiB of segments (and 128 KiB for the few with more) */
#define FEED_SPIN  4096 /* looks at the other's counter before sleeping: ~100 µs */

struct feed {
	/* the reader's own (the caller reads them after the join) */
	struct nf_cap *cap;
	unsigned long long *skipped; /* by enum nf_pkt_skip */
	int rc;                      /* nf_cap_next's last */
	int spin;                    /* wait by looking first: more than one processor */
	/* each side's counter of batches, in a line of its own */
	_Alignas(64) atomic_uint filled;
	_Alignas(64) atomic_uint taken;
	/* for a side that sleeps */
	_Alignas(64) pthread_mutex_t mu;
	pthread_cond_t cv;
	int sleepers;
	/* batch k % FEED_RING: its count and whether it is the last, written
	 * before filled passes k */
	size_t n[FEED_RING];
	int last[FEED_RING];
	_Alignas(64) struct nf_seg seg[FEED_RING][FEED_BATCH];
	struct nf_seg_more more[FEED_RING][FEED_BATCH]; /* a SYN's or IPv6's: few written */
};

/* The next batch of the capture into batch k of the ring (f->rc set);
 * how many segments. */
static size_t fill(struct feed *f, unsigned k)
{
	return nf_feed(f->cap, f->seg[k], f->more[k], FEED_BATCH, f->skipped, &f->rc);
}

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Has the other side's counter c reached want (counting modulo 2^32)? */
static int reached(atomic_uint *c, unsigned want)
{
	return (int)(atomic_load_explicit(c, memory_order_acquire) - want) >= 0;
}

/* Waits until counter c reaches want: looks a while, then sleeps. */
static void wait_for(struct feed *f, atomic_uint *c, unsigned want)
{
	for (int i = 0; f->spin && i < FEED_SPIN; i++) {
		if (reached(c, want))
			return;
		relax();
	}
	pthread_mutex_lock(&f->mu);
	f->sleepers++;
	while (!reached(c, want))
		pthread_cond_wait(&f->cv, &f->mu);
	f->sleepers--;
	pthread_mutex_unlock(&f->mu);
}

/* Moves this side's counter c to v; wakes the other side if it sleeps
 * (it counted itself under the lock, and looks again under it). */
static void publish(struct feed *f, atomic_uint *c, unsigned v)
{
	atomic_store_explicit(c, v, memory_order_release);
	pthread_mutex_lock(&f->mu);
	if (f->sleepers)
		pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

static void *reader(void *arg)
{
	struct feed *f = arg;
	unsigned k = 0;
	int last;

	do {
		wait_for(f, &f->taken, k + 1 - FEED_RING); /* batch k's place is free */
		f->n[k % FEED_RING] = fill(f, k % FEED_RING);
		last = f->last[k % FEED_RING] = f->rc != 1;
		publish(f, &f->filled, ++k);
	} while (!last);
	return NULL;
}

/* The caller's side: each batch, in order, to w; until the last. */
static void drain(struct feed *f, struct nf_wire *w)
{
	unsigned k = 0;
	int last;

	do {
		wait_for(f, &f->filled, k + 1);
		nf_wire_segments(w, f->seg[k % FEED_RING], f->more[k % FEED_RING], f->n[k % FEED_RING]);
		last = f->last[k % FEED_RING];
		publish(f, &f->taken, ++k);
	} while (!last);
}

/* Are there two processors or more for this process? */
static int several_cpus(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 1;
}

int nf_cli_scan_feed(struct nf_cap *c, struct nf_wire *w, unsigned long long *skipped)
{
	static struct feed f; /* one scan at a time; its ring is not on a stack */
	pthread_t t;

	memset(&f, 0, sizeof(f));
	f.cap = c;
	f.skipped = skipped;
	f.spin = several_cpus();
	atomic_init(&f.filled, 0);
	atomic_init(&f.taken, 0);
	pthread_mutex_init(&f.mu, NULL);
	pthread_cond_init(&f.cv, NULL);
	if (pthread_create(&t, NULL, reader, &f) == 0) {
		drain(&f, w);
		pthread_join(t, NULL);
	} else { /* no thread: read and detect in turn */
		do
			nf_wire_segments(w, f.seg[0], f.more[0], fill(&f, 0));
		while (f.rc == 1);
	}
	pthread_cond_destroy(&f.cv);
	pthread_mutex_destroy(&f.mu);
	return f.rc;
}
