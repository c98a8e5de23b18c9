/*
 * scan_feed.c - a capture read, decoded and its segments run through the
 * detector, on the calling thread, a batch at a time: a batch of
 * segments (FEED_BATCH, in the cache while the detector reads it) made
 * from the read buffer (nf_feed), then fed (nf_wire_segments), then the
 * next.
 *
 * One thread: it needs one core, and goes at the same speed whatever
 * the other cores do (why not two: this file's history).
 */
#include "scan_int.h"
#include "wire/nf_feed.h"

#define FEED_BATCH 256 /* segments a batch: 12 KiB, in the cache until the detector reads them */

int nf_cli_scan_feed(struct nf_cap *c, struct nf_wire *w, unsigned long long *skipped)
{
	struct nf_seg seg[FEED_BATCH];
	struct nf_seg_more more[FEED_BATCH]; /* a SYN's or IPv6's: few written */
	int rc = 1;

	while (rc == 1) {
		size_t n = nf_feed(c, seg, more, FEED_BATCH, skipped, &rc);

		nf_wire_segments(w, seg, more, n);
	}
	return rc;
}
