/*
 * coalesce_buf.c - a connection's coalesce buffer and the protocol by
 * which it is sent: bytes appended and timed, sent without blocking under
 * the lock, or taken out (co->inflight) and sent with the program's own in
 * one blocking call without it, what the kernel did not take put back in
 * front; drained when the socket goes, within the rule's drain=; flushed by the
 * timer when due. Locking: coalesce_int.h.
 */
#include "coalesce_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/nf_clock.h"
#include "core/nf_copyin.h"
#include "core/nf_log.h"
#include "core/nf_real.h"
#include "core/nf_timer.h"

/* The condition variable of sends in flight, timed on CLOCK_MONOTONIC. */
static void init_done(pthread_cond_t *done)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(done, &ca);
	pthread_condattr_destroy(&ca);
}

/* The whole streak becomes n; at WHOLE_AFTER this socket's writes may go
 * straight without the lock (go_gen: its generation + 1, else 0). Caller
 * holds c->lock. */
static void whole_is(struct nf_coalesce *co, unsigned n)
{
	co->whole = n;
	atomic_store_explicit(&co->go_gen, n >= WHOLE_AFTER ? co->gen + 1 : 0,
			      memory_order_release);
}

void nf_co_begin(struct nf_conn *c)
{
	struct nf_coalesce *co = c->co;

	co->begun = 1;
	whole_is(co, c->opts.start == NF_START_WHOLE ? WHOLE_AFTER : 0);
}

/*
 * The descriptor now names another socket (closed behind our back, or
 * replaced): what was held for the old one must never reach the new one,
 * and its error is not the new one's.
 */
static void start_over(struct nf_conn *c, unsigned gen)
{
	struct nf_coalesce *co = c->co;

	co->len = 0;
	co->deadline = 0;
	nf_co_pending_del(c);
	co->err = 0;
	co->broken = 0;
	co->proven = 0;
	co->full = 0;
	co->streak = 0;
	whole_is(co, 0);
	co->begun = 0; /* by its first write (nf_co_begin), under its own rule */
	atomic_store_explicit(&co->straight, 0, memory_order_relaxed);
	co->gen = gen;
}

/* c's first buffer, for the socket of generation gen, published whole
 * (nf_co_of); NULL when memory runs out. Caller holds c->lock. */
static struct nf_coalesce *make_co(struct nf_conn *c, unsigned gen)
{
	struct nf_coalesce *co = calloc(1, sizeof(*co));

	if (!co)
		return NULL;
	if (nf_co_pending_reserve() < 0) {
		free(co);
		return NULL;
	}
	co->pidx = -1;
	co->gen = gen;
	init_done(&co->done);
	__atomic_store_n(&c->co, co, __ATOMIC_RELEASE);
	return co;
}

/* The buffer of c, created or resized to the rule's bound. Caller holds
 * c->lock. NULL when memory runs out: the caller passes the call through. */
struct nf_coalesce *nf_co_get(struct nf_conn *c, int fd)
{
	struct nf_coalesce *co = c->co;
	unsigned gen = atomic_load(&c->gen);

	if (!co && !(co = make_co(c, gen)))
		return NULL;
	if (co->gen != gen)
		start_over(c, gen);
	if (co->alloc < c->opts.buffer && co->len == 0) {
		char *nb = realloc(co->buf, c->opts.buffer);

		if (!nb)
			return NULL;
		co->buf = nb;
		co->alloc = c->opts.buffer;
	}
	co->cap = c->opts.buffer;
	co->fd = fd;
	if (atomic_load_explicit(&co->flush_us, memory_order_relaxed) != c->opts.flush_us)
		atomic_store(&co->flush_us, c->opts.flush_us);
	return co;
}

/* Drops the first n buffered bytes (they reached the kernel). */
static void consume(struct nf_conn *c, size_t n)
{
	struct nf_coalesce *co = c->co;

	if (n < co->len)
		memmove(co->buf, co->buf + n, co->len - n);
	co->len -= n;
	if (co->len == 0) { /* stays in the pending set: the timer's next look drops it */
		co->backoff_us = 0;
		co->deadline = 0;
	}
}

/* The connection failed under a flush: its bytes cannot be delivered. */
static void fail_buffer(struct nf_conn *c, int err)
{
	c->co->err = err;
	whole_is(c->co, 0); /* the error is the next send's: none may go straight */
	consume(c, c->co->len);
}

static int transient(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK || err == EINTR;
}

/* Does a send's error mean the connection cannot carry bytes any more?
 * Not a transient one, nor one about the call itself (a bad address in
 * the program's own bytes, no memory for this call): the held bytes stay. */
static int conn_failed(int err)
{
	return !(transient(err) || err == EFAULT || err == EINVAL || err == ENOBUFS ||
		 err == ENOMEM || err == EMSGSIZE);
}

/* Until when a new hold may wait for the program's own read or wait. */
static unsigned long long hold_until(const struct nf_coalesce *co)
{
	unsigned long long flush = (unsigned long long)co->flush_us * 1000;

	if (co->streak >= TRUST_AFTER && flush < NF_TIMER_TICK_NS)
		flush = NF_TIMER_TICK_NS;
	return nf_clock_now_ns() + flush;
}

/*
 * Copies iov into the buffer; the caller checked it fits. 0, or -1 (the
 * buffer unchanged) when some byte may not be readable: the kernel must
 * answer that call (EFAULT, or a partial count), not a SIGSEGV here.
 */
int nf_co_append(struct nf_conn *c, const struct iovec *iov, int iovcnt, size_t n)
{
	struct nf_coalesce *co = c->co;
	int was_empty = co->len == 0;
	unsigned long long deadline;

	if (nf_copyin(co->buf + co->len, iov, iovcnt, n) < 0)
		return -1;
	if (co->whole >= WHOLE_AFTER) /* held (a second write before a read, or */
		whole_is(co, 0);      /* send_through's retry): none may go straight */
	co->len += n;
	if (!was_empty)
		co->writes++;
	else /* a write that went straight since the last read is this message's too */
		co->writes = atomic_load_explicit(&co->straight, memory_order_relaxed) ? 2 : 1;
	if (!was_empty || n == 0)
		return 0;
	deadline = hold_until(co);
	co->deadline = deadline;
	if (nf_co_pending_add(c) == 0)
		nf_timer_arm(deadline);
	return 0;
}

/*
 * A send of the library's own, made with c->lock held and never blocking
 * (flags has MSG_DONTWAIT): the raw system call (nf_real.send_nocancel),
 * as libc's send is a cancellation point, and a thread cancelled there
 * would leave the lock held for good (a system() or a read can bring a
 * pending cancel here).
 */
ssize_t nf_co_own_send(int fd, const void *buf, size_t len, int flags)
{
	return nf_real.send_nocancel(fd, buf, len, flags);
}

/* One send of the buffer (flags with MSG_DONTWAIT); what send returned. */
static ssize_t send_buffer(struct nf_conn *c, int fd, int flags)
{
	ssize_t n = nf_co_own_send(fd, c->co->buf, c->co->len, flags);

	if (n > 0)
		consume(c, (size_t)n);
	return n;
}

static int nonblocking(int fd, int flags)
{
	int fl;

	if (flags & MSG_DONTWAIT)
		return 1;
	fl = nf_real.fcntl(fd, F_GETFL);
	return fl >= 0 && (fl & O_NONBLOCK);
}

/* Does fd name another socket than the one c's bytes were written to?
 * If so, the buffer starts over for the new one (what it held dropped):
 * returns 1. */
static int reset_if_replaced(struct nf_conn *c)
{
	unsigned gen = atomic_load(&c->gen);

	if (c->co->gen == gen)
		return 0;
	start_over(c, gen);
	return 1;
}

/* Makes buf able to hold need bytes (it may exceed cap for a moment). */
static int reserve(struct nf_coalesce *co, size_t need)
{
	char *nb;

	if (need <= co->alloc)
		return 0;
	nb = realloc(co->buf, need);
	if (!nb)
		return -ENOMEM;
	co->buf = nb;
	co->alloc = need;
	return 0;
}

/* The bytes a thread took out to send without the lock. */
struct taken {
	char *bytes;
	size_t len;
	size_t off;      /* how many the kernel took */
	size_t alloc;
	unsigned gen;    /* the socket they belong to */
};

/* Takes the buffered bytes out, for a send made without the lock. */
static void take_out(struct nf_conn *c, struct taken *t)
{
	struct nf_coalesce *co = c->co;

	t->bytes = co->buf;
	t->len = co->len;
	t->off = 0;
	t->alloc = co->alloc;
	t->gen = co->gen;
	co->buf = co->spare;
	co->alloc = co->spare_alloc;
	co->spare = NULL;
	co->spare_alloc = 0;
	co->len = 0;
	co->deadline = 0;
	whole_is(co, 0); /* in flight: nothing may go straight (and the message was not whole) */
	co->inflight = 1; /* stays in the pending set: exit and fork wait for it */
	co->inflight_held = t->len;
}

/* Bytes are waiting (put back, or appended during a send): due now. */
static void rearm(struct nf_conn *c)
{
	struct nf_coalesce *co = c->co;
	unsigned long long now = nf_clock_now_ns();

	co->deadline = now;
	if (nf_co_pending_add(c) == 0) /* already there: a no-op */
		nf_timer_arm(now);
}

/* Is the fd still the socket these taken-out bytes were written to? */
static int same_socket(struct nf_conn *c, const struct taken *t)
{
	return atomic_load(&c->gen) == t->gen;
}

/*
 * Ends an unlocked send: the bytes taken out that the kernel did not take
 * go back in front of what others appended meanwhile, unless the
 * connection failed (failed: 1) or the fd was closed and now names
 * another socket, whose buffer they must never reach (said on the log);
 * the taken-out buffer becomes the spare. Returns 1 if the socket is the
 * same.
 */
static int put_back(struct nf_conn *c, struct taken *t, int failed)
{
	struct nf_coalesce *co = c->co;
	int same = same_socket(c, t);
	size_t rest = t->len - t->off;

	if (!same && rest > 0)
		nf_log_msg("fd %d was closed during a send: %zu buffered bytes dropped",
			   co->fd, rest);
	if (same && !failed && rest > 0 && reserve(co, co->len + rest) == 0) {
		memmove(co->buf + rest, co->buf, co->len);
		memcpy(co->buf, t->bytes + t->off, rest);
		co->len += rest;
	}
	if (co->len > 0) /* put back, or appended meanwhile (perhaps for a new socket) */
		rearm(c);
	else
		nf_co_pending_del(c);
	if (!co->spare) {
		co->spare = t->bytes;
		co->spare_alloc = t->alloc;
	} else {
		free(t->bytes);
	}
	co->inflight = 0;
	co->inflight_held = 0;
	pthread_cond_broadcast(&co->done);
	return same;
}

/* The held bytes of an in-flight send are all in the kernel: a shutdown
 * waiting for them may go on (drain_locked, DRAIN_ABORT). */
static void held_sent(struct nf_conn *c)
{
	pthread_mutex_lock(&c->lock);
	c->co->inflight_held = 0;
	pthread_cond_broadcast(&c->co->done);
	pthread_mutex_unlock(&c->lock);
}

/* After a send with MSG_MORE whose follow-up failed: push what the kernel
 * corked (turning TCP_NODELAY on pushes pending data; it is on already). */
static void uncork(int fd)
{
	int one = 1, saved = errno;

	nf_real.setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	errno = saved;
}

/*
 * The buffer and the program's n bytes in iov, made without the lock so
 * that a sender blocked by a full socket never stalls another thread's
 * read, close or exit. On a non-blocking socket, one sendmsg. On a
 * blocking one, the held bytes first (MSG_MORE: one segment all the
 * same), then the program's: a shutdown from another thread waits only
 * for the held bytes, which the program was told were written, then
 * fails the program's own as the kernel would. It goes on until some of
 * the program's bytes are taken (or all of the buffer, when n is 0), as
 * the kernel's own send would. Returns what the kernel took of the
 * program's bytes, or -1 with errno. Caller holds c->lock, which is
 * released and taken again.
 */
static ssize_t send_unlocked(struct nf_conn *c, int fd, const struct iovec *iov,
			     int iovcnt, size_t n, int flags)
{
	struct iovec v[IOV_STACK + 1];
	struct msghdr m = { .msg_iov = v };
	struct taken t;
	int split = n > 0 && c->co->len > 0 && !nonblocking(fd, flags);
	ssize_t r, mine = 0;
	int err;

	take_out(c, &t);
	pthread_mutex_unlock(&c->lock);
	if (iovcnt > 0)
		memcpy(v + 1, iov, (size_t)iovcnt * sizeof(*iov));
	for (;;) {
		size_t left = t.len - t.off;
		int alone = split && left > 0;

		v[0].iov_base = t.bytes + t.off;
		v[0].iov_len = left;
		m.msg_iovlen = alone ? 1 : (size_t)iovcnt + 1;
		r = nf_real.sendmsg(fd, &m, alone ? flags | MSG_MORE : flags);
		if (r < 0)
			break;
		t.off += (size_t)r < left ? (size_t)r : left;
		if ((size_t)r > left) {
			mine = r - (ssize_t)left;
			break;
		}
		if (alone && t.off == t.len)
			held_sent(c);
		if ((t.off == t.len && n == 0) || (!split && nonblocking(fd, flags)) ||
		    !same_socket(c, &t))
			break;
	}
	err = errno;
	if (split && r < 0 && t.off == t.len)
		uncork(fd);
	pthread_mutex_lock(&c->lock);
	if (put_back(c, &t, r < 0 && conn_failed(err)) && r < 0 && conn_failed(err))
		c->co->broken = 1;
	if (r < 0) {
		errno = err;
		return -1;
	}
	return mine;
}

/* Can n more bytes wait in the buffer? If so, makes the memory for them
 * (buf may grow) and returns 1. */
int nf_co_try_make_room(struct nf_coalesce *co, size_t n)
{
	return n > 0 && n < co->cap && co->len + n <= co->cap && reserve(co, co->len + n) == 0;
}

/* Waits for another thread's unlocked send; 0, or -1 with EAGAIN if the
 * program's socket or flags say it must not wait. Caller holds c->lock. */
static int wait_inflight(struct nf_conn *c, int fd, int flags)
{
	while (c->co->inflight) {
		if (nonblocking(fd, flags)) {
			errno = EAGAIN;
			return -1;
		}
		pthread_cond_wait(&c->co->done, &c->lock);
	}
	return 0;
}

/* The program's call goes to the kernel as it was made (NF_CO_PASS), once
 * what is held has gone ahead of it; or -1 with the errno that push met
 * (EAGAIN on a full non-blocking socket, EPIPE...). Caller holds c->lock. */
ssize_t nf_co_pass_after_held(struct nf_conn *c, int fd, int flags)
{
	int err = nf_co_push_all(c, fd, flags);

	if (err) {
		errno = err;
		return -1;
	}
	return NF_CO_PASS;
}

/* The program's n bytes into the buffer, or, if they cannot be read,
 * to the kernel after what is held. Caller holds c->lock. */
ssize_t nf_co_take_in(struct nf_conn *c, int fd, const struct iovec *iov, int iovcnt,
		      size_t n, int flags)
{
	if (nf_co_append(c, iov, iovcnt, n) == 0)
		return (ssize_t)n;
	return nf_co_pass_after_held(c, fd, flags);
}

/*
 * A write the buffer does not take now (too large for what is left, or
 * the kernel refused the last send): what is held and these bytes go in
 * one call, and the program gets the kernel's answer for its own bytes. A
 * socket the kernel left full (EAGAIN, or part of a send taken) holds
 * nothing more until the kernel takes a send whole: its writes get the
 * kernel's EAGAIN, and a close never finds bytes it cannot hand over.
 */
ssize_t nf_co_send_through(struct nf_conn *c, int fd, const struct iovec *iov,
			   int iovcnt, size_t n, int flags)
{
	ssize_t r;

	if (wait_inflight(c, fd, flags) < 0)
		return -1;
	if (!c->co->full && nf_co_try_make_room(c->co, n)) /* another thread made room while we waited */
		return nf_co_take_in(c, fd, iov, iovcnt, n, flags);
	r = send_unlocked(c, fd, iov, iovcnt, n, flags);
	c->co->full = r >= 0 ? (size_t)r < n : transient(errno);
	if (r == 0) { /* none of the program's bytes taken: the socket is full */
		errno = EAGAIN;
		return -1;
	}
	return r;
}

/* Everything buffered out, with the program's flags: 0, or the errno its
 * own send should fail with (EAGAIN for a full non-blocking socket). */
int nf_co_push_all(struct nf_conn *c, int fd, int flags)
{
	while (c->co->len || c->co->inflight) {
		if (wait_inflight(c, fd, flags) < 0)
			return errno;
		if (!c->co->len)
			break;
		if (send_unlocked(c, fd, NULL, 0, 0, flags & BACKGROUND) < 0)
			return errno;
		if (c->co->len && nonblocking(fd, flags))
			return EAGAIN;
	}
	return 0;
}

/* Sends without blocking; a hard error is kept for the next send. */
void nf_co_flush_locked(struct nf_conn *c, int fd)
{
	ssize_t n;

	if (!c->co || !c->co->len || c->co->inflight || reset_if_replaced(c))
		return;
	n = send_buffer(c, fd, BACKGROUND);
	if (n < 0 && !transient(errno))
		fail_buffer(c, errno);
	else if (c->co->len) /* the kernel took part, or nothing: it is full */
		c->co->full = 1;
}

/* flush_locked for the program's own read or wait: a hold it sent whole
 * adds to the connection's streak, and, if it was one write, to its
 * whole streak. */
void nf_co_flush_for_program(struct nf_conn *c, int fd)
{
	struct nf_coalesce *co = c->co;
	unsigned gen;

	if (!co || !co->len)
		return;
	gen = co->gen;
	nf_co_flush_locked(c, fd);
	if (co->len || co->err || co->gen != gen) /* not all sent, failed (the error is
						     the next send's), or dropped: the
						     fd names another socket now */
		return;
	if (co->streak < TRUST_AFTER)
		co->streak++;
	if (co->writes != 1)
		whole_is(co, 0);
	else if (co->whole < WHOLE_AFTER)
		whole_is(co, co->whole + 1);
}

/* Waits for another thread's send to end; 0, or -1 past give_up. */
static int wait_done(struct nf_conn *c, enum drain_mode mode, unsigned long long give_up)
{
	struct timespec ts = { .tv_sec = (time_t)(give_up / 1000000000ull),
			       .tv_nsec = (long)(give_up % 1000000000ull) };

	if (mode == DRAIN_LIVE)
		return pthread_cond_wait(&c->co->done, &c->lock) == 0 ? 0 : -1;
	return pthread_cond_timedwait(&c->co->done, &c->lock, &ts) == ETIMEDOUT ? -1 : 0;
}

/* The socket will not take what is held: drop it, and say so; or, before
 * a child starts, keep it (the child's bytes may then come first). */
static void give_up_on(struct nf_conn *c, int fd, enum drain_mode mode)
{
	if (mode == DRAIN_KEEP) {
		nf_log_msg("fd %d: peer took nothing for %u ms; a child may write before "
			   "%zu buffered bytes", fd, (unsigned)c->opts.drain_ms, c->co->len);
		return;
	}
	nf_log_msg("fd %d: peer took nothing for %u ms; %zu buffered bytes dropped",
		   fd, (unsigned)c->opts.drain_ms, c->co->len);
	fail_buffer(c, EAGAIN);
}

/* Held bytes are waiting: in the buffer, or in another thread's send. */
static int holding(const struct nf_coalesce *co)
{
	return co->len || (co->inflight && co->inflight_held);
}

/*
 * Sends everything held, waiting for room with the lock released, and for
 * the held bytes of another thread's send in flight (they come first; its
 * own bytes are its own call's, concurrent with ours), as mode says.
 */
void nf_co_drain_locked(struct nf_conn *c, int fd, enum drain_mode mode,
			unsigned long long give_up)
{
	while (c->co && holding(c->co) && !reset_if_replaced(c)) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };

		/* Bytes appended during another thread's send go after it; only
		 * shutdown does not wait for that thread's own bytes. */
		if (c->co->inflight && (c->co->inflight_held || mode != DRAIN_ABORT)) {
			if (wait_done(c, mode, give_up) < 0) {
				give_up_on(c, fd, mode);
				return;
			}
			continue;
		}
		if (send_buffer(c, fd, BACKGROUND) >= 0 || errno == EINTR)
			continue;
		if (!transient(errno)) {
			fail_buffer(c, errno);
			return;
		}
		if (mode != DRAIN_LIVE && nf_clock_now_ns() >= give_up) {
			give_up_on(c, fd, mode);
			return;
		}
		pthread_mutex_unlock(&c->lock);
		nf_real.poll(&p, 1, 100);
		pthread_mutex_lock(&c->lock);
	}
}

unsigned long long nf_co_drain_deadline(const struct nf_conn *c, unsigned long long since)
{
	return since + c->opts.drain_ms * 1000000ull;
}

/*
 * Flushes one due connection; returns its next deadline, or 0 if it has
 * none (empty, or another thread is sending and will re-arm the timer).
 * An empty one leaves the pending set here: nothing else takes it out
 * (the program's read leaves it in, for its next message).
 */
unsigned long long nf_co_flush_one_due(struct nf_conn *c, unsigned long long now)
{
	struct nf_coalesce *co = nf_co_of(c); /* pending: made long ago */
	unsigned long long next = 0;

	if (pthread_mutex_trylock(&c->lock) != 0)
		return now + 50000; /* a writer holds it for a moment: look again soon */
	if (co->len && !co->inflight && co->deadline <= now) {
		co->streak = 0; /* the program did not send this hold itself */
		whole_is(co, 0);
		nf_co_flush_locked(c, co->fd);
		if (co->len) { /* the socket is full: back off, up to 100 ms */
			co->backoff_us = co->backoff_us ? co->backoff_us * 2 : co->flush_us;
			if (co->backoff_us > 100000)
				co->backoff_us = 100000;
			co->deadline = now + (unsigned long long)co->backoff_us * 1000;
		}
	}
	if (co->len && !co->inflight)
		next = co->deadline;
	else if (!co->len && !co->inflight) /* emptied (by the program, a handler or now) */
		nf_co_pending_del(c);
	pthread_mutex_unlock(&c->lock);
	return next;
}

void nf_co_buf_atfork_child(struct nf_coalesce *co)
{
	co->len = 0;
	co->pidx = -1;
	co->listed = 0;
	co->inflight = 0;
	co->deadline = 0;
	init_done(&co->done);
}
