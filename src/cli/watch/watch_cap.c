/*
 * watch_cap.c - a namespace's capture (watch_int.h): made inside it
 * (setns there, the socket, setns back: a socket keeps the namespace it
 * was made in) and read in the stream; replaced by a bigger one when it
 * turns over fast; closed with its counts kept.
 *
 * A namespace's first capture is a queue (nf_ring_open_queue): no ring,
 * the packet socket's own receive queue of up to NS_QUEUE_KIB KiB of the
 * kernel's buffers. A ring's pages are all allocated and mapped into
 * watch when it is made, and most namespaces are idle: a queue costs
 * watch no memory and the kernel no timer until packets come, and when
 * a namespace goes from idle to full speed its first packets wait in the
 * queue while watch reads them and makes a ring (a 256 KiB first ring
 * lasted about a millisecond of a busy loopback, and lost 221 to 4,242
 * packets of memaslap's first ones). A queue is replaced by a ring at its
 * first packets, however few: a queue's frame bears the time its packet
 * was sent, a ring's the time the stack took it, and where the stack
 * lags (an emulated machine: 3 of 12 stalls missed on a queue) only the
 * latter ties a segment to the ACK that released it. A ring's blocks are handed over
 * NS_RETIRE_MS after their first packet (the host's 10 ms): the kernel's
 * timer fires that often, idle or not. Every tick (100 ms), and as soon
 * as a capture turned half over (the stream says so; a queue "turns
 * over" NF_RING_QUEUE_BLOCKS blocks of NF_RING_QUEUE_FRAMES frames, as a
 * 256 KiB ring would at a high rate), a capture that turned over at a
 * rate it would not last half a second at, or dropped, gets a ring four
 * times as big or more (to last a second at that rate), up to the host's
 * 16 MiB: the new ring is opened first, the old capture stopped (it
 * receives nothing more), read out, and closed at a later tick once it
 * is read out. Both see the packets between the new one's start and the
 * old one's stop: their copies come in a row in the stream and the
 * detector drops the second. A ring never shrinks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "watch_int.h"
#include "cli/common/nf_cli.h"

#define NS_RING_KIB 256           /* a queue counts as a ring of this size (its turnover) */
#define NS_QUEUE_KIB (32u << 10)  /* a namespace's first capture: its socket queue, the
				   * kernel's buffers of about 25,000 loopback packets */
#define NS_RING_MAX_KIB (16u << 10) /* the host's, the most a namespace's grows to */
#define OLD_MS 100                /* a ring replaced is closed this long after, read out */
#define NS_RETIRE_MS 50           /* a namespace's blocks handed over (the host's: 10 ms) */

static int is_home(const struct nf_watch *w, const struct nf_watch_ns *ns)
{
	return ns == w->ns[0];
}

/* Says once that namespaces cannot be entered (and what would). */
static void say_enter(struct nf_watch *w, const struct nf_watch_ns *ns, int rc)
{
	if (w->said_enter)
		return;
	w->said_enter = 1;
	nf_cli_warnx(0, "cannot enter network namespace %s: %s%s; "
			"watching those it can", ns->name, strerror(-rc),
		rc == -EPERM ? " (setns needs CAP_SYS_ADMIN)" : "");
}

/* Capture *out of ns made of ring r (kib KiB), in the stream. 0, or
 * -errno with err saying why (r closed). */
static int adopt(struct nf_watch *w, struct nf_watch_ns *ns, struct nf_ring *r, unsigned kib,
		 struct nf_watch_cap **out, char err[NF_RING_ERR_MAX])
{
	struct nf_watch_cap *c;
	int rc;

	if (!(c = calloc(1, sizeof(*c)))) {
		nf_watch_capwork_close(w, r);
		snprintf(err, NF_RING_ERR_MAX, "out of memory");
		return -ENOMEM;
	}
	c->ns = ns;
	c->ring = r;
	c->kib = kib;
	c->grows = !is_home(w, ns) && kib < NS_RING_MAX_KIB;
	if ((rc = nf_watch_stream_add(w, c)) < 0) {
		snprintf(err, NF_RING_ERR_MAX, "epoll: %s", strerror(-rc));
		nf_watch_capwork_close(w, r);
		free(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* A capture made inside ns, in the stream, into *out: a ring of kib KiB
 * (0: the ring's default), or with queue a queue (counted as a ring of
 * kib). 0, or -errno: setns's (said once), else err says why (-ENODEV:
 * -i's interface is not there). */
static int open_cap(struct nf_watch *w, struct nf_watch_ns *ns, unsigned kib, int queue,
		    struct nf_watch_cap **out, char err[NF_RING_ERR_MAX])
{
	struct nf_ring *r;
	int rc = nf_watch_enter(w, ns);

	if (rc < 0) {
		say_enter(w, ns, rc);
		return rc;
	}
	r = queue ? nf_ring_open_queue(w->ifname, NS_QUEUE_KIB, err)
		  : nf_ring_open(w->ifname, kib, is_home(w, ns) ? 0 : NS_RETIRE_MS, err);
	rc = r ? 0 : -errno;
	nf_watch_leave(w, ns);
	if (rc < 0)
		return rc;
	return adopt(w, ns, r, kib, out, err);
}

/* After ns's first capture was made (or failed: rc). rc. */
static int opened(struct nf_watch *w, struct nf_watch_ns *ns, int rc, const char *err)
{
	ns->retry = rc == -ENODEV;
	if (rc == 0)
		ns->lo = nf_ring_loopback(ns->cap->ring);
	else if (err[0] && (rc != -ENODEV || (is_home(w, ns) && !w->all_ns)))
		nf_cli_warnx(0, "%s%s%s", is_home(w, ns) ? "" : ns->name,
			is_home(w, ns) ? "" : ": ", err);
	return rc;
}

int nf_watch_cap_open(struct nf_watch *w, struct nf_watch_ns *ns)
{
	char err[NF_RING_ERR_MAX] = "";

	if (ns->opening)
		return 0;
	if (!is_home(w, ns) &&
	    nf_watch_capwork_open(w, ns, ns->fd, NS_RING_KIB, NS_RETIRE_MS, NS_QUEUE_KIB) == 0) {
		ns->opening = 1; /* its grace period waited in the thread, not here */
		return 0;
	}
	return opened(w, ns, open_cap(w, ns, is_home(w, ns) ? 0 : NS_RING_KIB, !is_home(w, ns),
					&ns->cap, err), err);
}

void nf_watch_cap_collect(struct nf_watch *w)
{
	char err[NF_RING_ERR_MAX];
	const void *owner;
	struct nf_ring *r;
	unsigned kib;
	int rc;

	while ((rc = nf_watch_capwork_done(w, &owner, &r, &kib, err)) != 0) {
		struct nf_watch_ns *ns = (struct nf_watch_ns *)owner;

		ns->opening = 0;
		if (rc > 0)
			rc = adopt(w, ns, r, kib, &ns->cap, err);
		opened(w, ns, rc, err);
	}
}

/* Off the stream and closed, its counts kept. */
static void close_cap(struct nf_watch *w, struct nf_watch_cap *c)
{
	nf_watch_stream_remove(w, c);
	nf_ring_stats(c->ring, &c->rs);
	w->gone_rs.packets += c->rs.packets;
	w->gone_rs.drops += c->rs.drops;
	nf_watch_capwork_close(w, c->ring); /* a grace period or two: not in the loop */
	free(c);
}

void nf_watch_cap_close(struct nf_watch *w, struct nf_watch_ns *ns)
{
	if (ns->opening)
		nf_watch_capwork_cancel(w, ns);
	ns->opening = 0;
	if (ns->cap)
		close_cap(w, ns->cap);
	if (ns->old)
		close_cap(w, ns->old);
	ns->cap = ns->old = NULL;
}

/* The size of the ring to replace c by (KiB), 0 none: four times as big,
 * or more, for it to last a second at the rate it turned over since the
 * last look (ms ago), if it would not last half a second at that rate (a
 * trickle, a block each NS_RETIRE_MS, never drives it: 64 blocks last
 * 3.2 s) or it dropped; a queue that received anything, a ring of its
 * kib at least. */
static unsigned wanted_kib(struct nf_watch_cap *c, uint64_t ms)
{
	unsigned nblocks, kib = c->kib;
	uint64_t blocks = nf_ring_blocks(c->ring, &nblocks), used = blocks - c->blocks;
	uint64_t drops = c->rs.drops, per_s;
	int queue = !nf_ring_bytes(c->ring);

	c->blocks = blocks;
	if (!used || (!ms && !queue))
		return 0;
	ms = ms ? ms : 1;
	if (used * 500 <= (uint64_t)nblocks * ms &&
	    !(nf_ring_stats(c->ring, &c->rs) == 0 && c->rs.drops > drops))
		return queue ? kib : 0;
	per_s = used * 1000 / ms * (kib / nblocks ? kib / nblocks : 1); /* KiB a second */
	do
		kib *= 4;
	while (kib < per_s && kib < NS_RING_MAX_KIB);
	return kib < NS_RING_MAX_KIB ? kib : NS_RING_MAX_KIB;
}

void nf_watch_cap_resize(struct nf_watch *w, struct nf_watch_ns *ns, uint64_t now_ms)
{
	char err[NF_RING_ERR_MAX];
	struct nf_watch_cap *big;
	uint64_t ms = now_ms - ns->resized_ms;
	unsigned kib;

	if (ns->old && !ns->old->ready && !ns->old->qlen && w->reading != ns->old && ms >= OLD_MS) {
		close_cap(w, ns->old); /* stopped, and read out */
		ns->old = NULL;
	}
	if (!ns->cap || ns->old || is_home(w, ns) || ns->cap->kib >= NS_RING_MAX_KIB)
		return;
	ns->resized_ms = now_ms;
	if (!(kib = wanted_kib(ns->cap, ms)))
		return;
	if (open_cap(w, ns, kib, 0, &big, err) < 0)
		return; /* it keeps the ring it has */
	nf_watch_stream_hold_lo(ns);
	nf_ring_stop(ns->cap->ring);
	ns->old = ns->cap;
	ns->cap = big;
}

void nf_watch_cap_stats(struct nf_watch_ns *ns, struct nf_ring_stats *s)
{
	struct nf_watch_cap *c[2] = { ns->cap, ns->old };

	for (int i = 0; i < 2; i++) {
		if (!c[i])
			continue;
		nf_ring_stats(c[i]->ring, &c[i]->rs);
		s->packets += c[i]->rs.packets;
		s->drops += c[i]->rs.drops;
	}
}
