/*
 * watch_stream.c - the captures of every namespace watched, read as one
 * stream (watch_int.h). Each ring is a socket of its own under one epoll
 * (edge-triggered: the kernel wakes it when it hands a block over); a
 * ring that woke is read until it is empty, a batch at a time, in turn
 * with the others.
 *
 * A segment that two captures see (the two ends of a veth pair, a bridge
 * and the namespace behind it) must reach the shared detector as two
 * frames in a row, so that it drops the second as it drops loopback's
 * second copy on "any": so frames for the shared detector are copied
 * into a heap by time and handed out NF_WATCH_HOLD_MS after their time,
 * when every ring has had the blocks of that time handed over (50 ms
 * after their first packet at most), and once each ring with frames
 * still to read has been read past that time (a busy or late ring's
 * older frames come first). A namespace's loopback frames go to
 * its own detector, which no other capture feeds: they are handed out
 * as they are read, from the ring's memory, and a busy loopback never
 * waits on the hold. With one capture there is nothing to order, and
 * nothing is copied, once the frames held while there were two have
 * gone out (until then, the frames read are held behind them, for no
 * longer than the hold after the fall to one). A
 * namespace whose ring is being replaced by a bigger one (watch_cap.c)
 * has two captures for a moment, both seeing the packets between the
 * new one's start and the old one's stop: its
 * loopback frames go through the heap too for a while, so that their
 * copies come in a row as well.
 *
 * A frame handed out from a ring is valid until that ring is read again,
 * one from the heap until the next call: either way, until the next call.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "watch_int.h"

#define EVENTS 64
#define BATCH 64             /* frames read from one ring before the next one's turn */
#define HELD_MAX 65536       /* frames held at most: past it the oldest goes out early */
#define LO_HELD_NS 2000000000ull /* a resized namespace's loopback frames held this long */
#define DRAIN_NS 60000000ull     /* at the end, the blocks begun are handed over within this */
#define CLOCK_EVERY 16           /* calls between two readings of the time (and at a wait) */
#define POLL_NS 1000000ull       /* a frame held goes out if the rings were looked at this
				  * recently (a block handed over since began within 50 ms
				  * of it: after the frame, 80 ms old) */

/* A frame copied for the shared detector, waiting its turn in its
 * capture's queue. */
struct nf_watch_held {
	struct nf_ring_frame f;  /* f.data is set when it is handed out */
	uint8_t data[NF_RING_SNAP];
};

static uint64_t clock_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- each capture's queue of frames held, and the heap of queues --------------- */
/*
 * A capture's frames come in its ring's order, which is their time's
 * (within the few microseconds two processors may write a block in): so
 * each capture keeps its frames held in a queue of its own, in a block
 * of memory read in order, and a heap of the captures by the time of
 * their oldest frame held gives the oldest of all. (One heap of every
 * frame held, 15,000 of them for a busy veth, spent half of watch's time
 * in its cache misses.)
 */

/* The time of c's oldest frame held. */
static uint64_t head_ts(const struct nf_watch_cap *c)
{
	return c->q[c->qhead].f.ts_ns;
}

static void put(struct nf_watch *w, size_t i, struct nf_watch_cap *c)
{
	w->merge[i] = c;
	c->merge_at = i;
}

static void sift_up(struct nf_watch *w, size_t i)
{
	struct nf_watch_cap *c = w->merge[i];
	uint64_t t = head_ts(c);

	for (; i > 0 && t < head_ts(w->merge[(i - 1) / 2]); i = (i - 1) / 2)
		put(w, i, w->merge[(i - 1) / 2]);
	put(w, i, c);
}

static void sift_down(struct nf_watch *w, size_t i)
{
	struct nf_watch_cap *c = w->merge[i];
	uint64_t t = head_ts(c);

	for (;;) {
		size_t k = 2 * i + 1;

		if (k >= w->nmerge)
			break;
		if (k + 1 < w->nmerge && head_ts(w->merge[k + 1]) < head_ts(w->merge[k]))
			k++;
		if (head_ts(w->merge[k]) >= t)
			break;
		put(w, i, w->merge[k]);
		i = k;
	}
	put(w, i, c);
}

/* c, its queue emptied or closing, out of the heap. */
static void unmerge(struct nf_watch *w, struct nf_watch_cap *c)
{
	size_t i = c->merge_at;
	struct nf_watch_cap *last = w->merge[--w->nmerge];

	c->merge_at = SIZE_MAX;
	if (last == c)
		return;
	put(w, i, last);
	sift_up(w, i);
	sift_down(w, last->merge_at);
}

/* Room for one frame more in c's queue (it doubles). 0, or -ENOMEM. */
static int grow_queue(struct nf_watch_cap *c)
{
	uint32_t n = c->qsize ? c->qsize * 2 : 64;
	struct nf_watch_held *q;

	if (c->qlen < c->qsize)
		return 0;
	if (!(q = malloc((size_t)n * sizeof(*q))))
		return -ENOMEM;
	for (uint32_t i = 0; i < c->qlen; i++)
		q[i] = c->q[(c->qhead + i) & (c->qsize - 1)];
	free(c->q);
	c->q = q;
	c->qsize = n;
	c->qhead = 0;
	return 0;
}

/* A copy of f at the end of c's queue. 0, or -ENOMEM (the frame is lost). */
static int hold(struct nf_watch *w, struct nf_watch_cap *c, const struct nf_ring_frame *f)
{
	struct nf_watch_held *x;

	if (grow_queue(c) < 0)
		return -ENOMEM;
	x = &c->q[(c->qhead + c->qlen) & (c->qsize - 1)];
	x->f = *f;
	x->f.caplen = f->caplen > NF_RING_SNAP ? NF_RING_SNAP : f->caplen;
	memcpy(x->data, f->data, x->f.caplen);
	if (c->qlen++ == 0) {
		put(w, w->nmerge++, c);
		sift_up(w, w->nmerge - 1);
	}
	w->nheld++;
	return 0;
}

/* The oldest frame held, out of its queue (its slot is not written before
 * the next call) into *f, *ns. */
static void unhold(struct nf_watch *w, struct nf_ring_frame *f, struct nf_watch_ns **ns)
{
	struct nf_watch_cap *c = w->merge[0];
	struct nf_watch_held *x = &c->q[c->qhead];

	*f = x->f;
	f->data = x->data;
	*ns = c->ns;
	c->qhead = (c->qhead + 1) & (c->qsize - 1);
	c->qlen--;
	w->nheld--;
	if (c->qlen)
		sift_down(w, 0);
	else
		unmerge(w, c);
}

/* ---- the rings ----------------------------------------------------------------- */

int nf_watch_stream_open(struct nf_watch *w)
{
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	return w->epfd < 0 ? -errno : 0;
}

void nf_watch_stream_close(struct nf_watch *w)
{
	if (w->epfd >= 0)
		close(w->epfd);
	w->epfd = -1;
	free(w->merge);
	free(w->ready);
	w->merge = NULL;
	w->ready = NULL;
}

/* c joins the rings to read (once). */
static void mark_ready(struct nf_watch *w, struct nf_watch_cap *c)
{
	if (c->ready)
		return;
	c->ready = 1;
	w->ready[w->nready++] = c;
}

int nf_watch_stream_add(struct nf_watch *w, struct nf_watch_cap *c)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.ptr = c };
	struct nf_watch_cap **r = realloc(w->ready, (w->nrings + 1) * sizeof(*r));
	struct nf_watch_cap **m = r ? realloc(w->merge, (w->nrings + 1) * sizeof(*m)) : NULL;

	if (r)
		w->ready = r;
	if (!m)
		return -ENOMEM;
	w->merge = m;
	c->merge_at = SIZE_MAX;
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, nf_ring_fd(c->ring), &ev))
		return -errno;
	w->nrings++;
	c->ready = 0;
	mark_ready(w, c); /* it may hold blocks already */
	return 0;
}

void nf_watch_stream_remove(struct nf_watch *w, struct nf_watch_cap *c)
{
	size_t k = 0;

	for (size_t i = 0; i < w->nready; i++)
		if (w->ready[i] != c)
			w->ready[k++] = w->ready[i];
	w->nready = k;
	if (w->reading == c)
		w->reading = NULL;
	if (c->merge_at != SIZE_MAX)
		unmerge(w, c);
	w->nheld -= c->qlen;
	free(c->q); /* its frames held are dropped: its namespace is gone, or
		     * a bigger ring has them too */
	c->q = NULL;
	c->qlen = 0;
	epoll_ctl(w->epfd, EPOLL_CTL_DEL, nf_ring_fd(c->ring), NULL);
	if (--w->nrings == 1)
		w->single_ns = clock_of(CLOCK_REALTIME);
}

void nf_watch_stream_hold_lo(struct nf_watch_ns *ns)
{
	ns->lo_held_until = clock_of(CLOCK_REALTIME) + LO_HELD_NS;
}

void nf_watch_stream_drain(struct nf_watch *w)
{
	w->draining = 1;
	w->drain_until = clock_of(CLOCK_MONOTONIC) + DRAIN_NS;
	for (size_t i = 0; i < w->nns; i++) {
		if (w->ns[i]->cap)
			mark_ready(w, w->ns[i]->cap);
		if (w->ns[i]->old)
			mark_ready(w, w->ns[i]->old);
	}
}

/* Waits up to ms for rings to hand blocks over (they join the ready
 * ones). 0, or -1 with errno (not EINTR: a signal is 0). */
static int wait_rings(struct nf_watch *w, int ms)
{
	struct epoll_event ev[EVENTS];
	int n = epoll_wait(w->epfd, ev, EVENTS, ms);

	w->now_ns = w->polled_ns = clock_of(CLOCK_REALTIME);
	if (n < 0)
		return errno == EINTR ? 0 : -1;
	for (int i = 0; i < n; i++)
		mark_ready(w, ev[i].data.ptr);
	return 0;
}

/* c's turn ends: if it turned half its ring over since its rate was last
 * looked at, or it is a queue that was read (a ring replaces it at its
 * first packets: watch_cap.c), watch's loop looks now
 * (nf_watch_netns_tick), not at the next tick: a namespace's first ring
 * lasts 10 ms of a busy loopback. */
static void end_turn(struct nf_watch *w, struct nf_watch_cap *c)
{
	unsigned nblocks;
	uint64_t used;

	w->reading = NULL;
	used = nf_ring_blocks(c->ring, &nblocks) - c->blocks;
	if (c->grows && used && (used * 2 >= nblocks || !nf_ring_bytes(c->ring)))
		w->resize_due = 1;
}

/* Is f, of c, handed out as read (no other capture can see it, and no
 * frame held, older, is still to go out before it)? */
static int direct(const struct nf_watch *w, const struct nf_watch_cap *c,
		  const struct nf_ring_frame *f)
{
	const struct nf_watch_ns *ns = c->ns;

	if (w->nrings <= 1)
		return !w->nheld; /* held while there were two: they go first */
	return ns->lo && f->ifindex == (int)ns->lo && !ns->old &&
	       (!ns->lo_held_until || w->now_ns >= ns->lo_held_until);
}

/* The next frame from the ready rings, in turn: 1 with *f, *ns (one to
 * hand out as read), 0 when none is ready; frames to hold are held on
 * the way. */
static int read_rings(struct nf_watch *w, struct nf_ring_frame *f, struct nf_watch_ns **ns)
{
	while (w->reading || w->nready) {
		struct nf_watch_cap *c = w->reading;

		if (!c) {
			c = w->reading = w->ready[0];
			w->ready[0] = w->ready[--w->nready];
			w->batch = 0;
		}
		if (w->batch++ >= BATCH) { /* the others' turn: back in the queue */
			end_turn(w, c);
			c->ready = 0;
			mark_ready(w, c);
			continue;
		}
		if (!nf_ring_take(c->ring, f)) {
			end_turn(w, c);
			c->ready = 0;
			continue;
		}
		c->read_ns = f->ts_ns;
		if (direct(w, c, f)) {
			*ns = c->ns;
			return 1;
		}
		hold(w, c, f);
		if (w->nheld >= HELD_MAX)
			return 0;
	}
	return 0;
}

/* ms (rounded up) until the oldest frame held may go out; 0 now. With
 * one capture left, a frame is held only to follow those held before:
 * none is due later than the hold after the fall to one, so that a
 * steady stream ends up handed out as read again. */
static int due_in(const struct nf_watch *w, uint64_t now)
{
	uint64_t hold_ns = w->draining ? 0 : NF_WATCH_HOLD_MS * 1000000ull;
	uint64_t due = head_ts(w->merge[0]) + hold_ns;

	if (w->nrings <= 1 && due > w->single_ns + hold_ns)
		due = w->single_ns + hold_ns;

	if (due <= now || due > now + 2 * hold_ns || w->nheld >= HELD_MAX)
		return 0; /* due; a clock set back; too many held */
	return (int)((due - now + 999999) / 1000000); /* 2 * hold_ns at most */
}

/* Has every ring with frames still to read been read up to time t (its
 * next frames are later)? Those not known to have any: their blocks
 * handed over since the last look (within POLL_NS) began after t. */
static int read_up_to(const struct nf_watch *w, uint64_t t)
{
	if (w->reading && w->reading->read_ns < t)
		return 0;
	for (size_t i = 0; i < w->nready; i++)
		if (w->ready[i]->read_ns < t)
			return 0;
	return 1;
}

/* The oldest frame held, if it is due (*ms: in how long, if not, at most
 * max; a max of 0 does not make it due) and no ring may still hold an
 * older one for the shared detector: 1 with *f, *ns. */
static int give_held(struct nf_watch *w, int max, int *ms, struct nf_ring_frame *f,
		     struct nf_watch_ns **ns)
{
	int due;

	if (!w->nheld)
		return 0;
	due = due_in(w, w->now_ns);
	*ms = due < max ? due : max;
	if (due > 0)
		return 0;
	if (!w->draining && w->now_ns - w->polled_ns >= POLL_NS)
		wait_rings(w, 0); /* blocks handed over since: their rings to read first */
	if (!w->draining && !read_up_to(w, head_ts(w->merge[0])) && w->nheld < HELD_MAX)
		return 0;
	unhold(w, f, ns);
	return 1;
}

/* At the end: ms until the blocks begun before it are handed over
 * (0 past it), -1 once a last look found nothing more. */
static int drain_wait(struct nf_watch *w)
{
	uint64_t now = clock_of(CLOCK_MONOTONIC);

	if (now < w->drain_until)
		return (int)((w->drain_until - now + 999999) / 1000000);
	if (w->drain_until == 0)
		return -1;
	w->drain_until = 0; /* one look more */
	return 0;
}

int nf_watch_stream_next(struct nf_watch *w, int timeout_ms, struct nf_ring_frame *f,
			 struct nf_watch_ns **ns)
{
	int ms = timeout_ms;

	if (!(w->calls++ % CLOCK_EVERY)) /* the time read now and then: a vDSO call a frame
					* was 18% of watch's time on a busy veth */
		w->now_ns = clock_of(CLOCK_REALTIME);
	for (int waited = 0;; waited = 1) {
		if (give_held(w, timeout_ms, &ms, f, ns) || read_rings(w, f, ns) ||
		    give_held(w, timeout_ms, &ms, f, ns))
			return 1;
		if (w->draining && (ms = drain_wait(w)) < 0)
			return 0;
		if (waited && !w->draining)
			return 0;
		if (wait_rings(w, ms) < 0)
			return -1;
	}
}
