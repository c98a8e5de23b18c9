/*
 * nf_feed.h - a capture's frames as the detector's segments, a batch at
 * a time (src/wire/feed.c): each frame read (nf_cap.h), decoded
 * (nf_pkt.h) and prepared for the detector (nf_wire.h: struct nf_seg),
 * in one pass. The command's reading loop; it shares nothing with the
 * library.
 */
#ifndef NF_FEED_H
#define NF_FEED_H

#include <stddef.h>

#include "nf_cap.h"
#include "nf_pkt.h"
#include "nf_wire.h"

/*
 * Reads frames of c until s[0..max) holds max segments or the capture
 * ends: each decoded as nf_pkt_decode does, its time the frame's, and
 * prepared by nf_wire_prepare into s[i] (and more[i] where it has more);
 * a frame that is not a TCP segment adds one to skipped[why] instead.
 * Returns how many segments; *rc is 1 while the capture may have more,
 * 0 at its end, -1 when it failed (nf_cap_error says why). Segments are
 * in capture order.
 */
size_t nf_feed(struct nf_cap *c, struct nf_seg *s, struct nf_seg_more *more, size_t max,
	       unsigned long long skipped[NF_SKIP_NKINDS], int *rc);

#endif
