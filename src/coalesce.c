/*
 * coalesce.c - the per-connection write buffer of the coalesce action.
 *
 * Locking: a connection's buffer is guarded by its conn->lock; the set of
 * connections holding bytes by plock, always taken after a conn->lock,
 * never before one. Background flushes (timer, read, poll) only trylock a
 * connection, so they never wait behind a program thread blocked in send.
 */
#include "nf_coalesce.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "nf_log.h"
#include "nf_real.h"
#include "nf_timer.h"

#define IOV_STACK 64
#define BACKGROUND (MSG_DONTWAIT | MSG_NOSIGNAL)

struct nf_coalesce {
	char *buf;
	size_t len;
	size_t cap;
	_Atomic unsigned long long deadline; /* oldest byte must leave by then */
	unsigned flush_us;
	int err;   /* a flush error, reported on the next send */
	int fd;
	int pidx;  /* index in pending[], or -1 */
};

atomic_int nf_coalesce_npending;

static pthread_mutex_t plock = PTHREAD_MUTEX_INITIALIZER;
static struct nf_conn **pending;
static int pending_cap;

/* Adds c to the pending set. Caller holds c->lock. */
static int pending_add(struct nf_conn *c)
{
	struct nf_coalesce *co = c->co;
	int n;

	pthread_mutex_lock(&plock);
	n = atomic_load(&nf_coalesce_npending);
	if (n == pending_cap) {
		int ncap = pending_cap ? pending_cap * 2 : 16;
		struct nf_conn **np = realloc(pending, (size_t)ncap * sizeof(*np));

		if (!np) {
			pthread_mutex_unlock(&plock);
			return -ENOMEM;
		}
		pending = np;
		pending_cap = ncap;
	}
	pending[n] = c;
	co->pidx = n;
	atomic_store(&nf_coalesce_npending, n + 1);
	pthread_mutex_unlock(&plock);
	return 0;
}

/* Removes c from the pending set. Caller holds c->lock. */
static void pending_del(struct nf_conn *c)
{
	struct nf_coalesce *co = c->co;
	int last;

	pthread_mutex_lock(&plock);
	last = atomic_load(&nf_coalesce_npending) - 1;
	if (co->pidx >= 0 && co->pidx <= last) {
		pending[co->pidx] = pending[last];
		pending[co->pidx]->co->pidx = co->pidx;
		atomic_store(&nf_coalesce_npending, last);
	}
	co->pidx = -1;
	pthread_mutex_unlock(&plock);
}

/* The buffer of c, created or resized to the rule's bound. Caller holds
 * c->lock. NULL when memory runs out: the caller passes the call through. */
static struct nf_coalesce *get_co(struct nf_conn *c, int fd)
{
	struct nf_coalesce *co = c->co;

	if (!co) {
		co = calloc(1, sizeof(*co));
		if (!co)
			return NULL;
		co->pidx = -1;
		c->co = co;
	}
	if (co->cap != c->opts.buffer && co->len == 0) {
		char *nb = realloc(co->buf, c->opts.buffer);

		if (!nb)
			return NULL;
		co->buf = nb;
		co->cap = c->opts.buffer;
	}
	co->fd = fd;
	co->flush_us = c->opts.flush_us;
	return co;
}

/* Drops the first n buffered bytes (they reached the kernel). */
static void consume(struct nf_conn *c, size_t n)
{
	struct nf_coalesce *co = c->co;

	memmove(co->buf, co->buf + n, co->len - n);
	co->len -= n;
	if (co->len == 0) {
		atomic_store(&co->deadline, 0);
		pending_del(c);
	}
}

/* The connection failed under a flush: its bytes cannot be delivered. */
static void fail_buffer(struct nf_conn *c, int err)
{
	c->co->err = err;
	consume(c, c->co->len);
}

static int transient(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK || err == EINTR;
}

/* Copies iov into the buffer; the caller checked it fits. */
static void append(struct nf_conn *c, const struct iovec *iov, int iovcnt, size_t n)
{
	struct nf_coalesce *co = c->co;
	int was_empty = co->len == 0;
	unsigned long long deadline;

	for (int i = 0; i < iovcnt; i++) {
		memcpy(co->buf + co->len, iov[i].iov_base, iov[i].iov_len);
		co->len += iov[i].iov_len;
	}
	if (!was_empty || n == 0)
		return;
	deadline = nf_timer_now_ns() + (unsigned long long)co->flush_us * 1000;
	atomic_store(&co->deadline, deadline);
	if (pending_add(c) == 0)
		nf_timer_arm(deadline);
}

/* Total length of iov; -1 if it overflows (the kernel will say EINVAL). */
static ssize_t iov_total(const struct iovec *iov, int iovcnt)
{
	size_t n = 0;

	if (iovcnt < 0 || (iovcnt > 0 && !iov))
		return -1;
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > SSIZE_MAX - n)
			return -1;
		n += iov[i].iov_len;
	}
	return (ssize_t)n;
}

/* One send of the buffer; returns what send returned. */
static ssize_t send_buffer(struct nf_conn *c, int fd, int flags)
{
	ssize_t n = nf_real.send(fd, c->co->buf, c->co->len, flags);

	if (n > 0)
		consume(c, (size_t)n);
	return n;
}

/* Why a send that took none of the program's bytes failed. */
static int would_block_errno(int fd, int flags)
{
	int fl = fcntl(fd, F_GETFL);

	return (flags & MSG_DONTWAIT) || (fl >= 0 && (fl & O_NONBLOCK)) ? EAGAIN : EINTR;
}

/* Takes a stored flush error, raising SIGPIPE as the kernel's send would. */
static int take_error(struct nf_coalesce *co, int flags, int *raise_pipe)
{
	int err = co->err;

	co->err = 0;
	*raise_pipe = err == EPIPE && !(flags & MSG_NOSIGNAL);
	return err;
}

/*
 * The buffer and the new bytes in one sendmsg, so nothing is reordered.
 * The program sees the kernel's answer for its own bytes: what of them
 * went out, or (when none did and they cannot wait in the buffer) EAGAIN.
 */
static ssize_t send_through(struct nf_conn *c, int fd, const struct iovec *iov,
			    int iovcnt, size_t n, int flags)
{
	struct nf_coalesce *co = c->co;
	struct iovec v[IOV_STACK + 1];
	struct msghdr m = { .msg_iov = v, .msg_iovlen = (size_t)iovcnt + 1 };
	size_t held = co->len;
	ssize_t r;

	v[0].iov_base = co->buf;
	v[0].iov_len = co->len;
	memcpy(v + 1, iov, (size_t)iovcnt * sizeof(*iov));
	r = nf_real.sendmsg(fd, &m, flags);
	if (r < 0) {
		if (!transient(errno))
			consume(c, co->len);
		return -1;
	}
	consume(c, (size_t)r < held ? (size_t)r : held);
	if ((size_t)r > held)
		return r - (ssize_t)held;
	if (n < co->cap && co->len + n <= co->cap) {
		append(c, iov, iovcnt, n);
		return (ssize_t)n;
	}
	errno = would_block_errno(fd, flags);
	return -1;
}

/* The call as the kernel would take it, with the buffer known empty. */
static ssize_t send_plain(int fd, const struct iovec *iov, int iovcnt, int flags)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };

	return nf_real.sendmsg(fd, &m, flags);
}

ssize_t nf_coalesce_send(struct nf_conn *c, int fd, const struct iovec *iov,
			 int iovcnt, int flags)
{
	ssize_t n = iov_total(iov, iovcnt), r;
	struct nf_coalesce *co;
	int raise_pipe = 0;

	if (n < 0 || iovcnt > IOV_STACK) {
		if (nf_coalesce_before_send(c, fd, flags) < 0)
			return -1;
		return send_plain(fd, iov, iovcnt, flags);
	}
	pthread_mutex_lock(&c->lock);
	co = get_co(c, fd);
	if (!co) {
		r = send_plain(fd, iov, iovcnt, flags); /* no memory: a pass-through */
	} else if (co->err) {
		errno = take_error(co, flags, &raise_pipe);
		r = -1;
	} else if (n > 0 && (size_t)n < co->cap && co->len + (size_t)n <= co->cap) {
		append(c, iov, iovcnt, (size_t)n);
		r = n;
	} else {
		r = send_through(c, fd, iov, iovcnt, (size_t)n, flags);
	}
	pthread_mutex_unlock(&c->lock);
	if (raise_pipe)
		raise(SIGPIPE);
	return r;
}

int nf_coalesce_before_send(struct nf_conn *c, int fd, int flags)
{
	int raise_pipe = 0, rc = 0, err = 0;
	ssize_t n;

	pthread_mutex_lock(&c->lock);
	if (c->co && c->co->err) {
		err = take_error(c->co, flags, &raise_pipe);
	} else if (c->co && c->co->len) {
		n = send_buffer(c, fd, flags & BACKGROUND);
		if (n < 0 && !transient(errno)) {
			err = errno; /* this send reports it: nothing to keep */
			fail_buffer(c, 0);
		} else if (c->co->len)
			err = n < 0 ? errno : would_block_errno(fd, flags);
	}
	pthread_mutex_unlock(&c->lock);
	if (raise_pipe)
		raise(SIGPIPE);
	if (err) {
		errno = err;
		rc = -1;
	}
	return rc;
}

/* Sends without blocking; a hard error is kept for the next send. */
static void flush_locked(struct nf_conn *c, int fd)
{
	if (!c->co || !c->co->len)
		return;
	if (send_buffer(c, fd, BACKGROUND) < 0 && !transient(errno))
		fail_buffer(c, errno);
}

void nf_coalesce_flush(struct nf_conn *c, int fd)
{
	int saved = errno;

	if (atomic_load_explicit(&nf_coalesce_npending, memory_order_relaxed) == 0 || !c->co)
		return;
	if (pthread_mutex_trylock(&c->lock) == 0) {
		flush_locked(c, fd);
		pthread_mutex_unlock(&c->lock);
	}
	errno = saved;
}

/* Sends everything, waiting for room up to NF_DRAIN_MS. */
static void drain_locked(struct nf_conn *c, int fd)
{
	unsigned long long give_up = nf_timer_now_ns() + NF_DRAIN_MS * 1000000ull;

	while (c->co && c->co->len) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		unsigned long long now;

		if (send_buffer(c, fd, BACKGROUND) >= 0 || errno == EINTR)
			continue;
		if (!transient(errno)) {
			fail_buffer(c, errno);
			return;
		}
		now = nf_timer_now_ns();
		if (now >= give_up) {
			nf_log_msg("fd %d: peer took nothing for %d ms; %zu buffered bytes dropped",
				   fd, NF_DRAIN_MS, c->co->len);
			fail_buffer(c, EAGAIN);
			return;
		}
		nf_real.poll(&p, 1, 100);
	}
}

void nf_coalesce_drain(struct nf_conn *c, int fd)
{
	int saved = errno;

	if (!c->co)
		return;
	pthread_mutex_lock(&c->lock);
	drain_locked(c, fd);
	pthread_mutex_unlock(&c->lock);
	errno = saved;
}

/* A copy of the pending set, so flushing can change it. */
static struct nf_conn **snapshot(int *n)
{
	struct nf_conn **copy = NULL;

	pthread_mutex_lock(&plock);
	*n = atomic_load(&nf_coalesce_npending);
	if (*n > 0) {
		copy = malloc((size_t)*n * sizeof(*copy));
		if (copy)
			memcpy(copy, pending, (size_t)*n * sizeof(*copy));
		else
			*n = 0;
	}
	pthread_mutex_unlock(&plock);
	return copy;
}

void nf_coalesce_flush_all(int wait)
{
	int saved = errno, n;
	struct nf_conn **all;

	if (atomic_load_explicit(&nf_coalesce_npending, memory_order_relaxed) == 0)
		return;
	all = snapshot(&n);
	for (int i = 0; i < n; i++) {
		struct nf_conn *c = all[i];

		if (wait) {
			pthread_mutex_lock(&c->lock);
			drain_locked(c, c->co->fd);
		} else if (pthread_mutex_trylock(&c->lock) == 0) {
			flush_locked(c, c->co->fd);
		} else {
			continue;
		}
		pthread_mutex_unlock(&c->lock);
	}
	free(all);
	errno = saved;
}

/* Flushes one due connection; returns its next deadline (0 if empty). */
static unsigned long long flush_one_due(struct nf_conn *c, unsigned long long now)
{
	unsigned long long next = 0;

	if (pthread_mutex_trylock(&c->lock) != 0)
		return now + 50000; /* busy: a program thread is on it; look again soon */
	if (c->co && c->co->len && atomic_load(&c->co->deadline) <= now) {
		flush_locked(c, c->co->fd);
		if (c->co->len) /* the socket is full: retry after one more period */
			atomic_store(&c->co->deadline, now + (unsigned long long)c->co->flush_us * 1000);
	}
	if (c->co && c->co->len)
		next = atomic_load(&c->co->deadline);
	pthread_mutex_unlock(&c->lock);
	return next;
}

unsigned long long nf_coalesce_flush_due(unsigned long long now)
{
	unsigned long long next = 0;
	int saved = errno, n;
	struct nf_conn **all = snapshot(&n);

	for (int i = 0; i < n; i++) {
		unsigned long long d = flush_one_due(all[i], now);

		if (d && (next == 0 || d < next))
			next = d;
	}
	free(all);
	errno = saved;
	return next;
}

void nf_coalesce_atfork_child(void)
{
	int n = atomic_load(&nf_coalesce_npending);

	pthread_mutex_init(&plock, NULL);
	for (int i = 0; i < n; i++) {
		struct nf_coalesce *co = pending[i]->co;

		co->len = 0;
		co->pidx = -1;
		atomic_store(&co->deadline, 0);
	}
	atomic_store(&nf_coalesce_npending, 0);
}
