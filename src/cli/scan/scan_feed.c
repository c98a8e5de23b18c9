/*
 * scan_feed.c - a capture read and decoded, and its segments run through
 * the detector, by two threads, either of which does either half: scan's
 * two halves (reading and decoding; the connection table and the
 * signature) each take about half its time, so on two processors they
 * overlap; and when one thread is off its processor (another program
 * busy on that core), the other does both instead of waiting for it.
 *
 * Batches of segments go through a small ring (FEED_RING batches of
 * FEED_BATCH). The capture is read under one lock (a batch filled once,
 * in order, into a free place) and the detector fed under another (a
 * batch fed once, in order, once filled); each thread takes whichever
 * it can, without waiting for a lock the other holds. Two counters say
 * how far each half has gone; a thread that can do neither waits for
 * one to move by looking at them a while (the halves take about as
 * long, so the wait is short, and a sleep and a wake-up cost more than
 * it on a virtual machine), then sleeps, a millisecond at most at a
 * time. Where no thread can be made, the calling one does all.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "scan_int.h"
#include "wire/nf_feed.h"

#define FEED_BATCH 1024 /* segments a batch: a hand-over costs far less than its work */
#define FEED_RING  4    /* batches: 192 KiB of segments (and 128 KiB for the few with more) */
#define FEED_SPIN  4096 /* looks at the other's counter before sleeping: ~100 µs */

struct feed {
	struct nf_cap *cap;          /* filled from under capmu only */
	struct nf_wire *w;           /* fed under detmu only */
	unsigned long long *skipped; /* by enum nf_pkt_skip (capmu's) */
	int rc;                      /* nf_cap_next's last (capmu's) */
	int ended;                   /* the last batch is filled (capmu's) */
	int spin;                    /* wait by looking first: more than one processor */
	/* the batches filled, and fed to the detector, in lines of their own */
	_Alignas(64) atomic_uint filled;
	_Alignas(64) atomic_uint taken;
	atomic_int finished;         /* the last batch fed: both threads stop */
	_Alignas(64) pthread_mutex_t capmu;
	pthread_mutex_t detmu;
	/* for a thread that sleeps */
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

/* Has counter c reached want (counting modulo 2^32)? */
static int reached(atomic_uint *c, unsigned want)
{
	return (int)(atomic_load_explicit(c, memory_order_acquire) - want) >= 0;
}

/* Has anything moved since the counts were sf and st? */
static int moved(struct feed *f, unsigned sf, unsigned st)
{
	return atomic_load_explicit(&f->filled, memory_order_acquire) != sf ||
	       atomic_load_explicit(&f->taken, memory_order_acquire) != st ||
	       atomic_load_explicit(&f->finished, memory_order_acquire);
}

/* Waits until something moves: looks a while, then sleeps (a millisecond
 * at most at a time: a wake-up lost costs that, never a hang). */
static void wait_move(struct feed *f, unsigned sf, unsigned st)
{
	struct timespec ts;

	for (int i = 0; f->spin && i < FEED_SPIN; i++) {
		if (moved(f, sf, st))
			return;
		relax();
	}
	pthread_mutex_lock(&f->mu);
	f->sleepers++;
	while (!moved(f, sf, st)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&f->cv, &f->mu, &ts);
	}
	f->sleepers--;
	pthread_mutex_unlock(&f->mu);
}

/* Wakes a sleeping thread: something moved. */
static void wake(struct feed *f)
{
	pthread_mutex_lock(&f->mu);
	if (f->sleepers)
		pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/* Fills the next batch if its place is free and no one else is filling.
 * 1 if it did. */
static int try_fill(struct feed *f)
{
	unsigned k;
	int did = 0;

	if (pthread_mutex_trylock(&f->capmu))
		return 0;
	k = atomic_load_explicit(&f->filled, memory_order_relaxed);
	if (!f->ended && reached(&f->taken, k + 1 - FEED_RING)) {
		f->n[k % FEED_RING] = fill(f, k % FEED_RING);
		f->ended = f->last[k % FEED_RING] = f->rc != 1;
		atomic_store_explicit(&f->filled, k + 1, memory_order_release);
		did = 1;
	}
	pthread_mutex_unlock(&f->capmu);
	if (did)
		wake(f);
	return did;
}

/* Feeds the detector the next batch if it is filled and no one else is
 * feeding. 1 if it did. */
static int try_detect(struct feed *f)
{
	unsigned k;
	int did = 0;

	if (pthread_mutex_trylock(&f->detmu))
		return 0;
	k = atomic_load_explicit(&f->taken, memory_order_relaxed);
	if (!atomic_load_explicit(&f->finished, memory_order_relaxed) && reached(&f->filled, k + 1)) {
		nf_wire_segments(f->w, f->seg[k % FEED_RING], f->more[k % FEED_RING],
				 f->n[k % FEED_RING]);
		if (f->last[k % FEED_RING])
			atomic_store_explicit(&f->finished, 1, memory_order_release);
		atomic_store_explicit(&f->taken, k + 1, memory_order_release);
		did = 1;
	}
	pthread_mutex_unlock(&f->detmu);
	if (did)
		wake(f);
	return did;
}

/* Either thread's loop: what can be done next, done, until the last
 * batch is fed. Each batch is filled once, in order, under capmu, and
 * fed once, in order, under detmu: with both threads running, one reads
 * while the other detects; with one of them off the processor (another
 * program busy on its core), the other does both, and the scan goes at
 * one thread's speed, not at the stalled one's. */
static void work(struct feed *f)
{
	while (!atomic_load_explicit(&f->finished, memory_order_acquire)) {
		unsigned sf = atomic_load_explicit(&f->filled, memory_order_acquire);
		unsigned st = atomic_load_explicit(&f->taken, memory_order_acquire);

		if (!(try_detect(f) | try_fill(f)))
			wait_move(f, sf, st);
	}
}

static void *reader(void *arg)
{
	work(arg);
	return NULL;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* Takes in the pages within p[0..len) at once (a page fault each costs
 * 10 µs and more on a virtual machine): the ring is all written at
 * once (its memset). Nothing where the kernel has it not. */
static void populate(void *p, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), b = ((uintptr_t)p + len) & ~(page - 1);

	if (b > a)
		madvise((void *)a, b - a, MADV_POPULATE_WRITE);
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

	populate(&f, sizeof(f));
	memset(&f, 0, sizeof(f));
	f.cap = c;
	f.w = w;
	f.skipped = skipped;
	f.spin = several_cpus();
	atomic_init(&f.filled, 0);
	atomic_init(&f.taken, 0);
	atomic_init(&f.finished, 0);
	pthread_mutex_init(&f.capmu, NULL);
	pthread_mutex_init(&f.detmu, NULL);
	pthread_mutex_init(&f.mu, NULL);
	pthread_cond_init(&f.cv, NULL);
	if (pthread_create(&t, NULL, reader, &f) == 0) {
		work(&f);
		pthread_join(t, NULL);
	} else { /* no thread: this one does both */
		work(&f);
	}
	pthread_cond_destroy(&f.cv);
	pthread_mutex_destroy(&f.mu);
	pthread_mutex_destroy(&f.detmu);
	pthread_mutex_destroy(&f.capmu);
	return f.rc;
}
