/*
 * coalesce_handler.c - the coalesce action from a signal handler that
 * interrupted the library on its own thread (nf_guard.h): the
 * interrupted code may hold any of our locks, so nothing here waits for
 * one (trylock only), takes plock, or allocates. What a handler sends
 * keeps its place after what is held wherever that needs no wait.
 */
#include "coalesce_int.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>

#include "core/nf_clock.h"
#include "core/nf_real.h"

/*
 * From a signal handler that interrupted the library on this thread
 * (nf_guard.h) nothing may be waited for, and plock is never taken (the
 * interrupted code may hold it). handler_lock takes c's lock only if it is
 * free (trylock: so the interrupted code is not inside it) and c's buffer
 * may be used: none of its bytes in flight, no stored error, the bytes of
 * this very socket. Returns the buffer, c->lock held; or NULL, not held.
 */
static struct nf_coalesce *handler_lock(struct nf_conn *c)
{
	struct nf_coalesce *co = nf_co_of(c);

	if (!co || pthread_mutex_trylock(&c->lock) != 0)
		return NULL;
	if (co->inflight || co->err || co->broken || co->gen != atomic_load(&c->gen)) {
		pthread_mutex_unlock(&c->lock);
		return NULL;
	}
	return co;
}

/* What c holds, out as far as the kernel takes it now (MSG_DONTWAIT). A
 * buffer emptied here stays in the pending set: the timer drops it. */
static void handler_push_locked(struct nf_conn *c, int fd)
{
	struct nf_coalesce *co = c->co;
	size_t off = 0;

	while (off < co->len) {
		ssize_t n = nf_co_own_send(fd, co->buf + off, co->len - off, BACKGROUND);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	if (off == 0)
		return;
	memmove(co->buf, co->buf + off, co->len - off);
	co->len -= off;
	if (co->len == 0) {
		co->backoff_us = 0;
		co->deadline = 0;
	}
}

/* Before a handler's read, close or bypassing send on c: what c holds goes
 * out first, where that needs no wait. */
void nf_co_handler_push(struct nf_conn *c, int fd)
{
	int saved = errno;

	if (handler_lock(c)) {
		handler_push_locked(c, fd);
		pthread_mutex_unlock(&c->lock);
	}
	errno = saved;
}

/* Room for n more bytes in a buffer that holds some, in its memory. */
static int has_room(const struct nf_coalesce *co, size_t n)
{
	return co->len > 0 && co->len < co->cap && n <= co->cap - co->len &&
	       n <= co->alloc - co->len;
}

/*
 * A handler's send on c keeps its place after what c holds: it joins the
 * buffer if that holds bytes and has room in the memory it has (no malloc
 * in a handler; a buffer that holds bytes is already pending and timed);
 * else what is held goes out first and the send to the kernel. Only when
 * c's lock is busy, a send of it is in flight, or the kernel takes part of
 * what is held and the rest leaves no room, can the handler's bytes
 * overtake held ones (README, "Signal handlers").
 */
ssize_t nf_co_handler_send(struct nf_conn *c, int fd, const struct iovec *iov, int iovcnt,
			   ssize_t n)
{
	struct nf_coalesce *co;
	int saved = errno;

	if ((co = handler_lock(c)) != NULL) {
		if (!has_room(co, (size_t)n))
			handler_push_locked(c, fd);
		if (has_room(co, (size_t)n) && nf_co_append(c, iov, iovcnt, (size_t)n) == 0) {
			pthread_mutex_unlock(&c->lock);
			errno = saved;
			return n;
		}
		pthread_mutex_unlock(&c->lock);
	}
	errno = saved;
	return NF_CO_PASS;
}

/*
 * flush_range from a signal handler that interrupted the library (exit or
 * exec in a handler): the pending set is out of reach (plock), so every
 * descriptor the table has held is looked at, lock-free. What each
 * connection holds goes as the kernel takes it (handler_lock's terms);
 * unless mode is DRAIN_NONE, polling for room until each one's
 * nf_co_drain_deadline from since.
 */
void nf_co_handler_flush_range(unsigned first, unsigned last, enum drain_mode mode,
			       unsigned long long since)
{
	unsigned used = (unsigned)nf_conn_used();
	int wait = mode != DRAIN_NONE;

	for (unsigned fd = first; fd <= last && fd < used; fd++) {
		struct nf_conn *c = nf_conn_get((int)fd);
		struct pollfd p = { .fd = (int)fd, .events = POLLOUT };
		size_t left = 1;
		unsigned long long give_up;

		while (c && nf_co_of(c) && left && handler_lock(c)) {
			handler_push_locked(c, (int)fd);
			left = c->co->len;
			give_up = nf_co_drain_deadline(c, since); /* c->opts: under the lock */
			pthread_mutex_unlock(&c->lock);
			if (!left || !wait || nf_clock_now_ns() >= give_up)
				break;
			nf_real.poll(&p, 1, 100);
		}
	}
}
