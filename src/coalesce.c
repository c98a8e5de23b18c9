/*
 * coalesce.c - the per-connection write buffer of the coalesce action.
 *
 * Locking: a connection's buffer is guarded by its conn->lock; the set of
 * connections holding bytes by plock, always taken after a conn->lock,
 * never before one. No lock is held across a send that can block: a
 * program thread whose write must wait for the kernel takes the buffered
 * bytes out (co->inflight), sends them with its own in one blocking call,
 * unlocked, and puts back whatever the kernel did not take. Meanwhile
 * other writers may append (their calls are concurrent with it, so either
 * order is theirs to get), and flushes leave the connection alone.
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

#include "nf_guard.h"
#include "nf_log.h"
#include "nf_real.h"
#include "nf_timer.h"

#define IOV_STACK 64
#define BACKGROUND (MSG_DONTWAIT | MSG_NOSIGNAL)

struct nf_coalesce {
	char *buf;
	size_t len;
	size_t cap;      /* the rule's bound; buf may briefly hold more */
	size_t alloc;    /* what buf can hold */
	char *spare;     /* a second buffer, swapped in while inflight */
	size_t spare_alloc;
	_Atomic unsigned long long deadline; /* oldest byte must leave by then */
	_Atomic unsigned flush_us; /* read by the timer without the lock */
	unsigned gen;    /* the conn generation these bytes belong to */
	int err;         /* a flush error, reported on the next send */
	int broken;      /* an error was reported: sends go to the kernel */
	int inflight;    /* a thread is sending bytes taken out of buf */
	pthread_cond_t done; /* signalled when inflight ends */
	int fd;
	int pidx;        /* index in pending[], or -1 */
};

atomic_int nf_coalesce_npending;

static pthread_mutex_t plock = PTHREAD_MUTEX_INITIALIZER;
static struct nf_conn **pending;
static int pending_cap;
static struct nf_coalesce **all_bufs; /* every buffer ever made (for fork) */
static int nall, nall_cap;

/* Records a new buffer, so a forked child can reset them all. */
static int remember(struct nf_coalesce *co)
{
	int rc = 0;

	pthread_mutex_lock(&plock);
	if (nall == nall_cap) {
		int ncap = nall_cap ? nall_cap * 2 : 16;
		struct nf_coalesce **nb = realloc(all_bufs, (size_t)ncap * sizeof(*nb));

		if (nb) {
			all_bufs = nb;
			nall_cap = ncap;
		}
	}
	if (nall < nall_cap)
		all_bufs[nall++] = co;
	else
		rc = -ENOMEM;
	pthread_mutex_unlock(&plock);
	return rc;
}

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

/*
 * The descriptor now names another socket (closed behind our back, or
 * replaced): what was held for the old one must never reach the new one,
 * and its error is not the new one's.
 */
static void start_over(struct nf_conn *c, unsigned gen)
{
	struct nf_coalesce *co = c->co;

	co->len = 0;
	atomic_store(&co->deadline, 0);
	if (co->pidx >= 0)
		pending_del(c);
	co->err = 0;
	co->broken = 0;
	co->gen = gen;
}

/* The buffer of c, created or resized to the rule's bound. Caller holds
 * c->lock. NULL when memory runs out: the caller passes the call through. */
static struct nf_coalesce *get_co(struct nf_conn *c, int fd)
{
	struct nf_coalesce *co = c->co;
	unsigned gen = atomic_load(&c->gen);

	if (!co) {
		co = calloc(1, sizeof(*co));
		if (!co)
			return NULL;
		if (remember(co) < 0) {
			free(co);
			return NULL;
		}
		co->pidx = -1;
		co->gen = gen;
		pthread_cond_init(&co->done, NULL);
		c->co = co;
	}
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

static int nonblocking(int fd, int flags)
{
	int fl;

	if (flags & MSG_DONTWAIT)
		return 1;
	fl = fcntl(fd, F_GETFL);
	return fl >= 0 && (fl & O_NONBLOCK);
}

/* Does fd name another socket than the one c's bytes were written to? */
static int stale(struct nf_conn *c)
{
	unsigned gen = atomic_load(&c->gen);

	if (c->co->gen == gen)
		return 0;
	start_over(c, gen);
	return 1;
}

/*
 * A stored flush error, returned once as the kernel would (SIGPIPE raised
 * for EPIPE unless MSG_NOSIGNAL); after it every send goes to the kernel,
 * which keeps failing it as a dead connection does.
 */
static int take_error(struct nf_coalesce *co, int flags, int *raise_pipe)
{
	int err = co->err;

	co->err = 0;
	co->broken = 1;
	*raise_pipe = err == EPIPE && !(flags & MSG_NOSIGNAL);
	return err;
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

/* Takes the buffered bytes out, for a send made without the lock. */
static void take_out(struct nf_conn *c, char **bytes, size_t *len, size_t *alloc)
{
	struct nf_coalesce *co = c->co;

	*bytes = co->buf;
	*len = co->len;
	*alloc = co->alloc;
	co->buf = co->spare;
	co->alloc = co->spare_alloc;
	co->spare = NULL;
	co->spare_alloc = 0;
	co->len = 0;
	atomic_store(&co->deadline, 0);
	pending_del(c);
	co->inflight = 1;
}

/* Bytes are waiting (put back, or appended during a send): due now. */
static void rearm(struct nf_conn *c)
{
	struct nf_coalesce *co = c->co;
	unsigned long long now = nf_timer_now_ns();

	atomic_store(&co->deadline, now);
	if (co->pidx >= 0 || pending_add(c) == 0)
		nf_timer_arm(now);
}

/*
 * Ends an unlocked send: the bytes taken out that the kernel did not take
 * go back in front of what others appended meanwhile, unless the
 * connection failed or the fd now names another socket; the taken-out
 * buffer becomes the spare.
 */
static void put_back(struct nf_conn *c, char *bytes, size_t alloc, size_t off,
		     size_t len, int failed)
{
	struct nf_coalesce *co = c->co;
	size_t rest = failed || stale(c) ? 0 : len - off;

	if (rest > 0 && reserve(co, co->len + rest) == 0) {
		memmove(co->buf + rest, co->buf, co->len);
		memcpy(co->buf, bytes + off, rest);
		co->len += rest;
	}
	if (co->len > 0)
		rearm(c);
	if (!co->spare) {
		co->spare = bytes;
		co->spare_alloc = alloc;
	} else {
		free(bytes);
	}
	co->inflight = 0;
	pthread_cond_broadcast(&co->done);
}

/*
 * The buffer and the program's n bytes in iov, in one sendmsg with the
 * program's flags, made without the lock so that a sender blocked by a
 * full socket never stalls another thread's read, close or exit. On a
 * blocking socket it goes on until some of the program's bytes are taken
 * (or all of the buffer, when n is 0), as the kernel's own send would.
 * Returns what the kernel took of the program's bytes, or -1 with errno.
 * Caller holds c->lock, which is released and taken again.
 */
static ssize_t send_unlocked(struct nf_conn *c, int fd, const struct iovec *iov,
			     int iovcnt, size_t n, int flags)
{
	struct iovec v[IOV_STACK + 1];
	struct msghdr m = { .msg_iov = v, .msg_iovlen = (size_t)iovcnt + 1 };
	size_t len, off = 0, alloc;
	ssize_t r, mine = 0;
	char *bytes;
	int err;

	take_out(c, &bytes, &len, &alloc);
	pthread_mutex_unlock(&c->lock);
	if (iovcnt > 0)
		memcpy(v + 1, iov, (size_t)iovcnt * sizeof(*iov));
	for (;;) {
		size_t left = len - off;

		v[0].iov_base = bytes + off;
		v[0].iov_len = left;
		r = nf_real.sendmsg(fd, &m, flags);
		if (r < 0)
			break;
		off += (size_t)r < left ? (size_t)r : left;
		if ((size_t)r > left) {
			mine = r - (ssize_t)left;
			break;
		}
		if ((off == len && n == 0) || nonblocking(fd, flags))
			break;
	}
	err = errno;
	pthread_mutex_lock(&c->lock);
	put_back(c, bytes, alloc, off, len, r < 0 && !transient(err));
	if (r < 0) {
		if (!transient(err))
			c->co->broken = 1;
		errno = err;
		return -1;
	}
	return mine;
}

/* The call as the kernel would take it, with nothing of ours in the way. */
static ssize_t send_plain(int fd, const struct iovec *iov, int iovcnt, int flags)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };

	return nf_real.sendmsg(fd, &m, flags);
}

/* Can n more bytes wait in the buffer? Makes the memory for them. */
static int fits(struct nf_coalesce *co, size_t n)
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

/* A write that does not fit: out with the buffer, in one call. */
static ssize_t send_overflow(struct nf_conn *c, int fd, const struct iovec *iov,
			     int iovcnt, size_t n, int flags)
{
	ssize_t r;

	if (wait_inflight(c, fd, flags) < 0)
		return -1;
	if (fits(c->co, n)) { /* another thread made room while we waited */
		append(c, iov, iovcnt, n);
		return (ssize_t)n;
	}
	r = send_unlocked(c, fd, iov, iovcnt, n, flags);
	if (r != 0)
		return r;
	if (fits(c->co, n)) { /* the kernel took our bytes: room for these */
		append(c, iov, iovcnt, n);
		return (ssize_t)n;
	}
	errno = EAGAIN; /* a non-blocking socket that is full */
	return -1;
}

static int before_send(struct nf_conn *c, int fd, int flags);

static ssize_t coalesce_send(struct nf_conn *c, int fd, const struct iovec *iov,
			     int iovcnt, int flags)
{
	ssize_t n = iov_total(iov, iovcnt), r;
	struct nf_coalesce *co;
	int raise_pipe = 0;

	if (n <= 0 || iovcnt > IOV_STACK) {
		if (before_send(c, fd, flags) < 0)
			return -1;
		return send_plain(fd, iov, iovcnt, flags);
	}
	pthread_mutex_lock(&c->lock);
	co = get_co(c, fd);
	if (!co || co->broken) {
		pthread_mutex_unlock(&c->lock); /* no memory, or a dead connection */
		return send_plain(fd, iov, iovcnt, flags);
	}
	if (co->err) {
		errno = take_error(co, flags, &raise_pipe);
		r = -1;
	} else if (fits(co, (size_t)n)) {
		append(c, iov, iovcnt, (size_t)n);
		r = n;
	} else {
		r = send_overflow(c, fd, iov, iovcnt, (size_t)n, flags);
	}
	pthread_mutex_unlock(&c->lock);
	if (raise_pipe)
		raise(SIGPIPE);
	return r;
}

ssize_t nf_coalesce_send(struct nf_conn *c, int fd, const struct iovec *iov,
			 int iovcnt, int flags)
{
	ssize_t r;

	if (!nf_guard_enter()) /* re-entered from a signal handler */
		return send_plain(fd, iov, iovcnt, flags);
	r = coalesce_send(c, fd, iov, iovcnt, flags);
	nf_guard_leave();
	return r;
}

static int before_send(struct nf_conn *c, int fd, int flags)
{
	int raise_pipe = 0, rc = 0, err = 0;

	pthread_mutex_lock(&c->lock);
	if (!get_co(c, fd) || c->co->broken) {
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	if (c->co->err) {
		err = take_error(c->co, flags, &raise_pipe);
	} else if (wait_inflight(c, fd, flags) < 0) {
		err = errno;
	} else if (c->co->len) {
		if (send_unlocked(c, fd, NULL, 0, 0, flags & BACKGROUND) < 0)
			err = errno;
		else if (c->co->len)
			err = EAGAIN; /* non-blocking, and the socket is full */
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

int nf_coalesce_before_send(struct nf_conn *c, int fd, int flags)
{
	int rc;

	if (!nf_guard_enter())
		return 0;
	rc = before_send(c, fd, flags);
	nf_guard_leave();
	return rc;
}

/* Sends without blocking; a hard error is kept for the next send. */
static void flush_locked(struct nf_conn *c, int fd)
{
	if (!c->co || !c->co->len || c->co->inflight || stale(c))
		return;
	if (send_buffer(c, fd, BACKGROUND) < 0 && !transient(errno))
		fail_buffer(c, errno);
}

void nf_coalesce_flush(struct nf_conn *c, int fd)
{
	int saved = errno;

	if (atomic_load_explicit(&nf_coalesce_npending, memory_order_relaxed) == 0 || !c->co ||
	    !nf_guard_enter())
		return;
	if (pthread_mutex_trylock(&c->lock) == 0) {
		flush_locked(c, fd);
		pthread_mutex_unlock(&c->lock);
	}
	nf_guard_leave();
	errno = saved;
}

/*
 * Sends everything, waiting for room with the lock released. final (the
 * socket is going: close, exit, exec): leaves a connection another thread
 * is sending on to that thread, and gives up after NF_DRAIN_MS; otherwise
 * (the socket lives on: setsockopt, dup, disconnect) waits as long as it
 * takes, for nothing may be dropped or reordered.
 */
static void drain_locked(struct nf_conn *c, int fd, int final)
{
	unsigned long long give_up = nf_timer_now_ns() + NF_DRAIN_MS * 1000000ull;

	while (c->co && c->co->len && !stale(c)) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };

		if (c->co->inflight) {
			if (final)
				return;
			pthread_cond_wait(&c->co->done, &c->lock);
			continue;
		}
		if (send_buffer(c, fd, BACKGROUND) >= 0 || errno == EINTR)
			continue;
		if (!transient(errno)) {
			fail_buffer(c, errno);
			return;
		}
		if (final && nf_timer_now_ns() >= give_up) {
			nf_log_msg("fd %d: peer took nothing for %d ms; %zu buffered bytes dropped",
				   fd, NF_DRAIN_MS, c->co->len);
			fail_buffer(c, EAGAIN);
			return;
		}
		pthread_mutex_unlock(&c->lock);
		nf_real.poll(&p, 1, 100);
		pthread_mutex_lock(&c->lock);
	}
}

static void drain(struct nf_conn *c, int fd, int final)
{
	int saved = errno;

	if (!c->co || !nf_guard_enter())
		return;
	pthread_mutex_lock(&c->lock);
	drain_locked(c, fd, final);
	pthread_mutex_unlock(&c->lock);
	nf_guard_leave();
	errno = saved;
}

void nf_coalesce_push(struct nf_conn *c, int fd)
{
	int saved = errno;

	if (!c->co || !nf_guard_enter())
		return;
	pthread_mutex_lock(&c->lock);
	flush_locked(c, fd);
	pthread_mutex_unlock(&c->lock);
	nf_guard_leave();
	errno = saved;
}

void nf_coalesce_drain(struct nf_conn *c, int fd)
{
	drain(c, fd, 0);
}

void nf_coalesce_drain_final(struct nf_conn *c, int fd)
{
	drain(c, fd, 1);
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

	if (atomic_load_explicit(&nf_coalesce_npending, memory_order_relaxed) == 0 ||
	    !nf_guard_enter())
		return;
	all = snapshot(&n);
	for (int i = 0; i < n; i++) {
		struct nf_conn *c = all[i];

		if (wait) {
			pthread_mutex_lock(&c->lock);
			drain_locked(c, c->co->fd, 1);
		} else if (pthread_mutex_trylock(&c->lock) == 0) {
			flush_locked(c, c->co->fd);
		} else {
			continue;
		}
		pthread_mutex_unlock(&c->lock);
	}
	free(all);
	nf_guard_leave();
	errno = saved;
}

/*
 * Flushes one due connection; returns its next deadline, or 0 if it has
 * none (empty, or another thread is sending and will re-arm the timer).
 */
static unsigned long long flush_one_due(struct nf_conn *c, unsigned long long now)
{
	struct nf_coalesce *co = c->co;
	unsigned long long next = 0;

	if (pthread_mutex_trylock(&c->lock) != 0)
		return now + (unsigned long long)co->flush_us * 1000; /* a writer holds it briefly */
	if (co->len && !co->inflight && atomic_load(&co->deadline) <= now) {
		flush_locked(c, co->fd);
		if (co->len) /* the socket is full: retry after one more period */
			atomic_store(&co->deadline, now + (unsigned long long)co->flush_us * 1000);
	}
	if (co->len && !co->inflight)
		next = atomic_load(&co->deadline);
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

/*
 * In the child every buffer is dropped (the parent sends them), sends that
 * other threads of the parent had in flight are theirs, and the locks and
 * condition variables those threads may have held are made new.
 */
void nf_coalesce_atfork_child(void)
{
	pthread_mutex_init(&plock, NULL);
	atomic_store(&nf_coalesce_npending, 0);
	for (int i = 0; i < nall; i++) {
		struct nf_coalesce *co = all_bufs[i];

		co->len = 0;
		co->pidx = -1;
		co->inflight = 0;
		atomic_store(&co->deadline, 0);
		pthread_cond_init(&co->done, NULL);
	}
}
