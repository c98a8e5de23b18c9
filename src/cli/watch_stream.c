/*
 * watch_stream.c - the captures of every namespace watched, read as one
 * stream in time order (watch_int.h). Each ring is a socket of its own
 * under one epoll (edge-triggered: the kernel wakes it when it hands a
 * block over); each ring's oldest frame not handed out is its head, and
 * the heads are kept in a heap by their time. The oldest head is handed
 * out once NF_WATCH_HOLD_MS have passed since its time: by then every
 * ring has had the blocks of that time handed over (10 ms after their
 * first packet at most), so a segment that two captures see (the two
 * ends of a veth pair, a bridge and the namespace behind it) comes out
 * as two frames in a row, the second of which the detector drops as a
 * duplicate, as it drops loopback's second copy on a capture of "any".
 * With one capture there is nothing to order: no hold.
 *
 * A head is a frame in its ring's memory, valid until the ring is read
 * again: the ring of the frame handed out is read again (its next head
 * taken) at the next call only.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "watch_int.h"

#define EVENTS 64

static uint64_t now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the heap of heads, oldest on top ------------------------------------------ */

static int older(const struct nf_watch_ns *a, const struct nf_watch_ns *b)
{
	return a->head.ts_ns < b->head.ts_ns;
}

static void put(struct nf_watch *w, size_t i, struct nf_watch_ns *ns)
{
	w->heap[i] = ns;
	ns->heap_at = i;
}

static void sift_up(struct nf_watch *w, size_t i)
{
	struct nf_watch_ns *ns = w->heap[i];

	while (i > 0 && older(ns, w->heap[(i - 1) / 2])) {
		put(w, i, w->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	put(w, i, ns);
}

static void sift_down(struct nf_watch *w, size_t i)
{
	struct nf_watch_ns *ns = w->heap[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= w->nheap)
			break;
		if (c + 1 < w->nheap && older(w->heap[c + 1], w->heap[c]))
			c++;
		if (!older(w->heap[c], ns))
			break;
		put(w, i, w->heap[c]);
		i = c;
	}
	put(w, i, ns);
}

/* Takes ns's head out of the heap. */
static void unheap(struct nf_watch *w, struct nf_watch_ns *ns)
{
	size_t i = ns->heap_at;
	struct nf_watch_ns *last = w->heap[--w->nheap];

	ns->has_head = 0;
	if (last == ns)
		return;
	put(w, i, last);
	sift_up(w, i);
	sift_down(w, last->heap_at);
}

/* ns's next head from its ring, into the heap if there is one (else the
 * ring's next block will wake the epoll). */
static void advance(struct nf_watch *w, struct nf_watch_ns *ns)
{
	if (ns->has_head || !nf_ring_take(ns->ring, &ns->head))
		return;
	ns->has_head = 1;
	put(w, w->nheap++, ns);
	sift_up(w, w->nheap - 1);
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
	free(w->heap);
	w->heap = NULL;
	w->nheap = 0;
}

/* Room in the heap for one head a ring. */
static int grow_heap(struct nf_watch *w)
{
	struct nf_watch_ns **h = realloc(w->heap, (w->nrings + 1) * sizeof(*h));

	if (!h)
		return -ENOMEM;
	w->heap = h;
	return 0;
}

int nf_watch_stream_add(struct nf_watch *w, struct nf_watch_ns *ns)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.ptr = ns };
	int rc;

	if ((rc = grow_heap(w)) < 0)
		return rc;
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, nf_ring_fd(ns->ring), &ev))
		return -errno;
	w->nrings++;
	ns->has_head = 0;
	advance(w, ns);
	return 0;
}

void nf_watch_stream_remove(struct nf_watch *w, struct nf_watch_ns *ns)
{
	if (ns->has_head)
		unheap(w, ns);
	if (w->popped == ns)
		w->popped = NULL;
	epoll_ctl(w->epfd, EPOLL_CTL_DEL, nf_ring_fd(ns->ring), NULL);
	w->nrings--;
}

void nf_watch_stream_drain(struct nf_watch *w)
{
	w->draining = 1;
	for (size_t i = 0; i < w->nns; i++)
		if (w->ns[i]->ring && w->ns[i] != w->popped)
			advance(w, w->ns[i]);
}

/* Waits up to ms for rings to hand blocks over, and takes their heads.
 * 0, or -1 with errno (not EINTR: a signal is 0). */
static int wait_rings(struct nf_watch *w, int ms)
{
	struct epoll_event ev[EVENTS];
	int n = epoll_wait(w->epfd, ev, EVENTS, ms);

	if (n < 0)
		return errno == EINTR ? 0 : -1;
	for (int i = 0; i < n; i++)
		advance(w, ev[i].data.ptr);
	return 0;
}

/* ms (rounded up, at most max) until the oldest head may go out; 0 now. */
static int due_in(const struct nf_watch *w, uint64_t now, int max)
{
	uint64_t hold = w->nrings > 1 && !w->draining ? NF_WATCH_HOLD_MS * 1000000ull : 0;
	uint64_t due = w->heap[0]->head.ts_ns + hold;

	if (due <= now || due > now + 2 * hold) /* a clock set back: no wait */
		return 0;
	due = (due - now + 999999) / 1000000;
	return due < (uint64_t)max ? (int)due : max;
}

int nf_watch_stream_next(struct nf_watch *w, int timeout_ms, struct nf_ring_frame *f,
			 struct nf_watch_ns **ns)
{
	int ms = timeout_ms;

	if (w->popped) {
		advance(w, w->popped);
		w->popped = NULL;
	}
	for (int waited = 0;; waited = 1) {
		if (w->nheap && (ms = due_in(w, now_real(), timeout_ms)) == 0) {
			struct nf_watch_ns *top = w->heap[0];

			*f = top->head;
			*ns = top;
			unheap(w, top);
			w->popped = top;
			return 1;
		}
		if (waited && !w->draining)
			return 0;
		if (wait_rings(w, w->draining ? 0 : ms) < 0)
			return -1;
		if (waited && !w->nheap)
			return 0;
	}
}
