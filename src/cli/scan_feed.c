/*
 * scan_feed.c - a capture read and decoded on a thread of its own while
 * the calling thread runs the detector on what came before: scan's two
 * halves (reading and decoding; the connection table and the signature)
 * each take about half its time, so on two processors they overlap.
 *
 * The reader fills batches of decoded segments in a small ring (FEED_RING
 * batches of FEED_BATCH); the caller takes them in order. Nothing but the
 * ring is shared: the reader owns the capture, the caller the detector.
 * Where no thread can be made, the same work runs on the caller's thread.
 */
#include <pthread.h>
#include <string.h>

#include "nf_cli.h"
#include "nf_feed.h"

#define FEED_BATCH 1024 /* segments a batch: a hand-over costs far less than its work */
#define FEED_RING  4    /* batches: 192 KiB of segments (and 128 KiB for the few with more) */

struct feed {
	/* the reader's own (the caller reads them after the join) */
	struct nf_cap *cap;
	unsigned long long *skipped; /* by enum nf_pkt_skip */
	int rc;                      /* nf_cap_next's last */
	/* shared, in lines of their own */
	_Alignas(64) pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned filled, taken;      /* batches, counted from the start */
	int done;                    /* the reader has filled its last */
	size_t n[FEED_RING];
	_Alignas(64) struct nf_seg seg[FEED_RING][FEED_BATCH];
	struct nf_seg_more more[FEED_RING][FEED_BATCH]; /* a SYN's or IPv6's: few written */
};

/* The next batch of the capture into batch k of the ring (f->rc set);
 * how many segments. */
static size_t fill(struct feed *f, unsigned k)
{
	return nf_feed(f->cap, f->seg[k], f->more[k], FEED_BATCH, f->skipped, &f->rc);
}

static void *reader(void *arg)
{
	struct feed *f = arg;
	int last;

	do {
		size_t n;

		pthread_mutex_lock(&f->mu);
		while (f->filled - f->taken == FEED_RING)
			pthread_cond_wait(&f->cv, &f->mu);
		pthread_mutex_unlock(&f->mu);
		n = fill(f, f->filled % FEED_RING);
		last = f->rc != 1;
		pthread_mutex_lock(&f->mu);
		f->n[f->filled % FEED_RING] = n;
		f->filled++;
		f->done = last;
		pthread_cond_signal(&f->cv);
		pthread_mutex_unlock(&f->mu);
	} while (!last);
	return NULL;
}

/* The caller's side: each batch, in order, to w; until the last. */
static void drain(struct feed *f, struct nf_wire *w)
{
	for (;;) {
		size_t n;
		int last;

		pthread_mutex_lock(&f->mu);
		while (f->taken == f->filled)
			pthread_cond_wait(&f->cv, &f->mu);
		n = f->n[f->taken % FEED_RING];
		last = f->done && f->taken + 1 == f->filled;
		pthread_mutex_unlock(&f->mu);
		nf_wire_segments(w, f->seg[f->taken % FEED_RING], f->more[f->taken % FEED_RING], n);
		pthread_mutex_lock(&f->mu);
		f->taken++;
		pthread_cond_signal(&f->cv);
		pthread_mutex_unlock(&f->mu);
		if (last)
			return;
	}
}

int nf_cli_scan_feed(struct nf_cap *c, struct nf_wire *w, unsigned long long *skipped)
{
	static struct feed f; /* one scan at a time; its ring is not on a stack */
	pthread_t t;

	memset(&f, 0, sizeof(f));
	f.cap = c;
	f.skipped = skipped;
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
