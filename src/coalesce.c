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
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nf_clock.h"
#include "nf_copyin.h"
#include "nf_guard.h"
#include "nf_log.h"
#include "nf_real.h"
#include "nf_timer.h"

#define IOV_STACK 64
#define BACKGROUND (MSG_DONTWAIT | MSG_NOSIGNAL)

/*
 * The timer costs a thread switch each time it looks, which a busy program
 * pays per message if every hold gets a look at its flush deadline. A
 * connection whose last TRUST_AFTER holds were all sent by the program's
 * own read or wait (it writes a request, then waits for the answer) holds
 * with a deadline NF_TIMER_TICK_NS away (or flush=, if longer): the timer
 * then looks only once a tick. A hold that deadline catches ends the trust
 * (streak 0): the next holds have flush= again. README: "The flush timer".
 */
#define TRUST_AFTER 64u

struct nf_coalesce {
	char *buf;
	size_t len;
	size_t cap;      /* the rule's bound; buf may briefly hold more */
	size_t alloc;    /* what buf can hold */
	char *spare;     /* a second buffer, swapped in while inflight */
	size_t spare_alloc;
	_Atomic unsigned long long deadline; /* oldest byte must leave by then */
	_Atomic unsigned flush_us; /* read by the timer without the lock */
	unsigned backoff_us; /* the timer's wait while the socket stays full */
	unsigned gen;    /* the conn generation these bytes belong to */
	int err;         /* a flush error, reported on the next send */
	int broken;      /* an error was reported: sends go to the kernel */
	int inflight;    /* a thread is sending bytes taken out of buf */
	size_t inflight_held; /* of those, held bytes not yet in the kernel */
	int proven;      /* the socket was seen connected (this generation) */
	int full;        /* the kernel refused or cut the last send: nothing is
			    held until it takes one whole (send_through) */
	unsigned streak; /* holds in a row the program's own read or wait sent */
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
/* Makes the pending set able to hold n buffers, so that pending_add never
 * needs memory: every buffer made is pending at most once. Caller holds
 * plock. 0 or -ENOMEM. */
static int room_to_pend(int n)
{
	int ncap = pending_cap ? pending_cap : 16;
	struct nf_conn **np;

	while (ncap < n)
		ncap *= 2;
	if (ncap == pending_cap)
		return 0;
	np = realloc(pending, (size_t)ncap * sizeof(*np));
	if (!np)
		return -ENOMEM;
	pending = np;
	pending_cap = ncap;
	return 0;
}

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
	if (nall < nall_cap && room_to_pend(nall + 1) == 0)
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
	if (co->pidx >= 0) { /* still there: a signal handler emptied it (handler_push_locked) */
		pthread_mutex_unlock(&plock);
		return 0;
	}
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

/* The condition variable of sends in flight, timed on CLOCK_MONOTONIC. */
static void init_done(pthread_cond_t *done)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(done, &ca);
	pthread_condattr_destroy(&ca);
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
	pending_del(c);
	co->err = 0;
	co->broken = 0;
	co->proven = 0;
	co->full = 0;
	co->streak = 0;
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
		init_done(&co->done);
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
	if (atomic_load_explicit(&co->flush_us, memory_order_relaxed) != c->opts.flush_us)
		atomic_store(&co->flush_us, c->opts.flush_us);
	return co;
}

/* Drops the first n buffered bytes (they reached the kernel). */
static void consume(struct nf_conn *c, size_t n)
{
	struct nf_coalesce *co = c->co;

	memmove(co->buf, co->buf + n, co->len - n);
	co->len -= n;
	if (co->len == 0) {
		co->backoff_us = 0;
		atomic_store(&co->deadline, 0);
		if (!co->inflight) /* else put_back takes it out of the set */
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

/* Does a send's error mean the connection cannot carry bytes any more?
 * Not a transient one, nor one about the call itself (a bad address in
 * the program's own bytes, no memory for this call): the held bytes stay. */
static int conn_failed(int err)
{
	return !(transient(err) || err == EFAULT || err == EINVAL || err == ENOBUFS ||
		 err == ENOMEM || err == EMSGSIZE);
}

/* How long a new hold may wait for the program's own read or wait. */
static unsigned long long hold_ns(const struct nf_coalesce *co)
{
	unsigned long long flush = (unsigned long long)co->flush_us * 1000;

	if (co->streak >= TRUST_AFTER && flush < NF_TIMER_TICK_NS)
		return NF_TIMER_TICK_NS;
	return flush;
}

/*
 * Copies iov into the buffer; the caller checked it fits. 0, or -1 (the
 * buffer unchanged) when some byte may not be readable: the kernel must
 * answer that call (EFAULT, or a partial count), not a SIGSEGV here.
 */
static int append(struct nf_conn *c, const struct iovec *iov, int iovcnt, size_t n)
{
	struct nf_coalesce *co = c->co;
	int was_empty = co->len == 0;
	unsigned long long deadline;

	if (nf_copyin(co->buf + co->len, iov, iovcnt, n) < 0)
		return -1;
	co->len += n;
	if (!was_empty || n == 0)
		return 0;
	deadline = nf_clock_now_ns() + hold_ns(co);
	atomic_store(&co->deadline, deadline);
	if (pending_add(c) == 0)
		nf_timer_arm(deadline);
	return 0;
}

/*
 * The program's iovec array (0 <= iovcnt <= IOV_STACK) copied to iov, read
 * as the kernel reads it; returns its byte count, or -1 when the kernel
 * alone must answer: an array it cannot read (EFAULT), a total past
 * SSIZE_MAX (EINVAL).
 */
static ssize_t read_iov(struct iovec *iov, const struct iovec *prog, int iovcnt)
{
	struct iovec whole = { .iov_base = (void *)prog,
			       .iov_len = (size_t)iovcnt * sizeof(*prog) };
	size_t n = 0;

	if (nf_copyin((char *)iov, &whole, 1, whole.iov_len) < 0)
		return -1;
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > SSIZE_MAX - n)
			return -1;
		n += iov[i].iov_len;
	}
	return (ssize_t)n;
}

/*
 * A send of the library's own, made with c->lock held and never blocking
 * (flags has MSG_DONTWAIT): the raw system call, as libc's send is a
 * cancellation point, and a thread cancelled there would leave the lock
 * held for good (a system() or a read can bring a pending cancel here).
 */
static ssize_t own_send(int fd, const void *buf, size_t len, int flags)
{
	return syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
}

/* One send of the buffer (flags with MSG_DONTWAIT); what send returned. */
static ssize_t send_buffer(struct nf_conn *c, int fd, int flags)
{
	ssize_t n = own_send(fd, c->co->buf, c->co->len, flags);

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

/* Does fd name another socket than the one c's bytes were written to? */
static int stale(struct nf_conn *c)
{
	unsigned gen = atomic_load(&c->gen);

	if (c->co->gen == gen)
		return 0;
	start_over(c, gen);
	return 1;
}

/* A SIGPIPE owed to the program, raised once the thread is out of the
 * library (nf_guard.h): its handler then runs as the program's own. */
static __thread int owed_sigpipe __attribute__((tls_model("initial-exec")));

static void pay_sigpipe(void)
{
	int saved = errno;

	if (owed_sigpipe) {
		owed_sigpipe = 0;
		raise(SIGPIPE);
	}
	errno = saved;
}

/*
 * A stored flush error, returned once as the kernel would (SIGPIPE owed
 * for EPIPE unless MSG_NOSIGNAL); after it every send goes to the kernel,
 * which keeps failing it as a dead connection does.
 */
static int take_error(struct nf_coalesce *co, int flags)
{
	int err = co->err;

	co->err = 0;
	co->broken = 1;
	if (err == EPIPE && !(flags & MSG_NOSIGNAL))
		owed_sigpipe = 1;
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
	atomic_store(&co->deadline, 0);
	co->inflight = 1; /* stays in the pending set: exit and fork wait for it */
	co->inflight_held = t->len;
}

/* Bytes are waiting (put back, or appended during a send): due now. */
static void rearm(struct nf_conn *c)
{
	struct nf_coalesce *co = c->co;
	unsigned long long now = nf_clock_now_ns();

	atomic_store(&co->deadline, now);
	if (pending_add(c) == 0) /* already there: a no-op (pidx is plock's) */
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
		pending_del(c); /* pidx is plock's: looked at there */
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

static int push_all(struct nf_conn *c, int fd, int flags);
static int before_send(struct nf_conn *c, int fd, int flags);

/* The program's call goes to the kernel as it was made (NF_CO_PASS), once
 * what is held has gone ahead of it; or -1 with the errno that push met
 * (EAGAIN on a full non-blocking socket, EPIPE...). Caller holds c->lock. */
static ssize_t pass_after_held(struct nf_conn *c, int fd, int flags)
{
	int err = push_all(c, fd, flags);

	if (err) {
		errno = err;
		return -1;
	}
	return NF_CO_PASS;
}

/* The program's n bytes into the buffer, or, if they cannot be read,
 * to the kernel after what is held. Caller holds c->lock. */
static ssize_t take_in(struct nf_conn *c, int fd, const struct iovec *iov, int iovcnt,
		       size_t n, int flags)
{
	if (append(c, iov, iovcnt, n) == 0)
		return (ssize_t)n;
	return pass_after_held(c, fd, flags);
}

/*
 * A write the buffer does not take now (too large for what is left, or
 * the kernel refused the last send): what is held and these bytes go in
 * one call, and the program gets the kernel's answer for its own bytes. A
 * socket the kernel left full (EAGAIN, or part of a send taken) holds
 * nothing more until the kernel takes a send whole: its writes get the
 * kernel's EAGAIN, and a close never finds bytes it cannot hand over.
 */
static ssize_t send_through(struct nf_conn *c, int fd, const struct iovec *iov,
			    int iovcnt, size_t n, int flags)
{
	ssize_t r;

	if (wait_inflight(c, fd, flags) < 0)
		return -1;
	if (!c->co->full && fits(c->co, n)) /* another thread made room while we waited */
		return take_in(c, fd, iov, iovcnt, n, flags);
	r = send_unlocked(c, fd, iov, iovcnt, n, flags);
	c->co->full = r >= 0 ? (size_t)r < n : transient(errno);
	if (r == 0) { /* none of the program's bytes taken: the socket is full */
		errno = EAGAIN;
		return -1;
	}
	return r;
}

/* Set by nf_coalesce_end: the process is ending, nothing is buffered. */
static atomic_int ending;

/*
 * Does the kernel take writes on fd now (established, or the peer closed
 * its side only)? Asked until it does, then once per socket: a write while
 * a connect is in progress, or after it failed, gets the kernel's answer.
 */
static int established(struct nf_coalesce *co, int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	int saved = errno;

	if (!co->proven && getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
	    (ti.tcpi_state == TCP_ESTABLISHED || ti.tcpi_state == TCP_CLOSE_WAIT))
		co->proven = 1;
	errno = saved;
	return co->proven;
}

/* May bytes be held? Not while the process ends, nor before the socket is
 * connected. */
static int holds(struct nf_coalesce *co, int fd)
{
	return !atomic_load_explicit(&ending, memory_order_relaxed) && established(co, fd);
}

/* iov holds n > 0 bytes in at most IOV_STACK pieces. */
static ssize_t coalesce_send(struct nf_conn *c, int fd, const struct iovec *iov,
			     int iovcnt, ssize_t n, int flags)
{
	struct nf_coalesce *co;
	ssize_t r;

	pthread_mutex_lock(&c->lock);
	co = get_co(c, fd);
	if (atomic_load(&c->action) != NF_ACT_COALESCE || !co || co->broken) {
		/* retired while we came (dup), no memory, or a dead connection */
		pthread_mutex_unlock(&c->lock);
		return NF_CO_PASS;
	}
	if (co->err) {
		errno = take_error(co, flags);
		r = -1;
	} else if (!holds(co, fd)) {
		r = pass_after_held(c, fd, flags);
	} else if (!co->full && fits(co, (size_t)n)) {
		r = take_in(c, fd, iov, iovcnt, (size_t)n, flags);
	} else {
		r = send_through(c, fd, iov, iovcnt, (size_t)n, flags);
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

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
	struct nf_coalesce *co = c->co;

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
		ssize_t n = own_send(fd, co->buf + off, co->len - off, BACKGROUND);

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
		atomic_store(&co->deadline, 0);
	}
}

/* Before a handler's read, close or bypassing send on c: what c holds goes
 * out first, where that needs no wait. errno is left as it was. */
static void handler_push(struct nf_conn *c, int fd)
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
static ssize_t handler_send(struct nf_conn *c, int fd, const struct iovec *iov, int iovcnt,
			    ssize_t n)
{
	struct nf_coalesce *co;
	int saved = errno;

	if ((co = handler_lock(c)) != NULL) {
		if (!has_room(co, (size_t)n))
			handler_push_locked(c, fd);
		if (has_room(co, (size_t)n) && append(c, iov, iovcnt, (size_t)n) == 0) {
			pthread_mutex_unlock(&c->lock);
			errno = saved;
			return n;
		}
		pthread_mutex_unlock(&c->lock);
	}
	errno = saved;
	return NF_CO_PASS;
}

/* nf_coalesce_send of iov, our own copy of the program's n > 0 bytes. */
static ssize_t send_iov(struct nf_conn *c, int fd, const struct iovec *iov, int iovcnt,
			ssize_t n, int flags)
{
	ssize_t r;

	if (!nf_guard_enter()) /* re-entered from a signal handler */
		return handler_send(c, fd, iov, iovcnt, n);
	r = coalesce_send(c, fd, iov, iovcnt, n, flags);
	nf_guard_leave();
	pay_sigpipe();
	return r;
}

ssize_t nf_coalesce_send(struct nf_conn *c, int fd, const struct iovec *prog_iov,
			 int iovcnt, int flags)
{
	struct iovec iov[IOV_STACK];
	ssize_t n;

	if (iovcnt < 0 || iovcnt > IOV_MAX) /* the kernel's EINVAL: nothing sent */
		return NF_CO_PASS;
	n = iovcnt > IOV_STACK ? -1 : read_iov(iov, prog_iov, iovcnt);
	if (n < 0) /* too many pieces to hold, or an array the kernel alone reads */
		return nf_coalesce_before_send(c, fd, flags) < 0 ? -1 : NF_CO_PASS;
	if (n == 0) /* nothing to reorder: the kernel's own answer (0, or EPIPE) */
		return NF_CO_PASS;
	return send_iov(c, fd, iov, iovcnt, n, flags);
}

ssize_t nf_coalesce_send_buf(struct nf_conn *c, int fd, const void *buf, size_t n, int flags)
{
	struct iovec v = { .iov_base = (void *)buf, .iov_len = n };

	if (n > SSIZE_MAX) /* as nf_coalesce_send: the kernel alone answers */
		return nf_coalesce_before_send(c, fd, flags) < 0 ? -1 : NF_CO_PASS;
	if (n == 0) /* nothing to reorder: the kernel's own answer (0, or EPIPE) */
		return NF_CO_PASS;
	return send_iov(c, fd, &v, 1, (ssize_t)n, flags);
}

/* Everything buffered out, with the program's flags: 0, or the errno its
 * own send should fail with (EAGAIN for a full non-blocking socket). */
static int push_all(struct nf_conn *c, int fd, int flags)
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

static int before_send(struct nf_conn *c, int fd, int flags)
{
	int rc = 0, err = 0;

	pthread_mutex_lock(&c->lock);
	if (!get_co(c, fd) || c->co->broken) {
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	if (c->co->err) {
		err = take_error(c->co, flags);
	} else {
		err = push_all(c, fd, flags);
	}
	pthread_mutex_unlock(&c->lock);
	if (err) {
		errno = err;
		rc = -1;
	}
	return rc;
}

int nf_coalesce_before_send(struct nf_conn *c, int fd, int flags)
{
	int rc;

	if (!nf_guard_enter()) {
		handler_push(c, fd);
		return 0;
	}
	rc = before_send(c, fd, flags);
	nf_guard_leave();
	pay_sigpipe();
	return rc;
}

/* Sends without blocking; a hard error is kept for the next send. */
static void flush_locked(struct nf_conn *c, int fd)
{
	ssize_t n;

	if (!c->co || !c->co->len || c->co->inflight || stale(c))
		return;
	n = send_buffer(c, fd, BACKGROUND);
	if (n < 0 && !transient(errno))
		fail_buffer(c, errno);
	else if (c->co->len) /* the kernel took part, or nothing: it is full */
		c->co->full = 1;
}

/* flush_locked for the program's own read or wait: a hold it sent whole
 * adds to the connection's streak. */
static void flush_for_program(struct nf_conn *c, int fd)
{
	struct nf_coalesce *co = c->co;

	if (!co || !co->len)
		return;
	flush_locked(c, fd);
	if (!co->len && co->streak < TRUST_AFTER)
		co->streak++;
}

void nf_coalesce_flush(struct nf_conn *c, int fd)
{
	int saved = errno;

	if (atomic_load_explicit(&nf_coalesce_npending, memory_order_relaxed) == 0 || !c->co)
		return;
	if (!nf_guard_enter()) {
		handler_push(c, fd);
		return;
	}
	if (pthread_mutex_trylock(&c->lock) == 0) {
		flush_for_program(c, fd);
		pthread_mutex_unlock(&c->lock);
	}
	nf_guard_leave();
	errno = saved;
}

enum drain_mode {
	DRAIN_LIVE,  /* the socket lives on (dup, disconnect): wait as long as it takes */
	DRAIN_FINAL, /* it goes (close, exec, exit): wait until give_up, then drop */
	DRAIN_ABORT, /* shutdown: as final, but a send in flight is waited for only
			until its held bytes are in the kernel */
	DRAIN_KEEP,  /* a child is about to start: wait until give_up, then keep */
	DRAIN_NONE,  /* poll, select, fork's prepare: what the kernel takes now */
};

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
		nf_log_msg("fd %d: peer took nothing for %d ms; a child may write before "
			   "%zu buffered bytes", fd, NF_DRAIN_MS, c->co->len);
		return;
	}
	nf_log_msg("fd %d: peer took nothing for %d ms; %zu buffered bytes dropped",
		   fd, NF_DRAIN_MS, c->co->len);
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
static void drain_locked(struct nf_conn *c, int fd, enum drain_mode mode,
			 unsigned long long give_up)
{
	while (c->co && holding(c->co) && !stale(c)) {
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

static unsigned long long drain_deadline(void)
{
	return nf_clock_now_ns() + NF_DRAIN_MS * 1000000ull;
}

/* drain_locked under the lock; then, if action >= 0, the rule becomes
 * action before any other writer can buffer again. */
static void drain(struct nf_conn *c, int fd, enum drain_mode mode, int action)
{
	int saved = errno;

	if (!nf_guard_enter()) { /* from a signal handler: what needs no wait */
		handler_push(c, fd);
		if (action >= 0 && c->co && pthread_mutex_trylock(&c->lock) == 0) {
			if (!c->co->len && !c->co->inflight) /* else it stays as it was */
				atomic_store(&c->action, action);
			pthread_mutex_unlock(&c->lock);
		}
		errno = saved;
		return;
	}
	pthread_mutex_lock(&c->lock);
	if (c->co)
		drain_locked(c, fd, mode, drain_deadline());
	if (action >= 0)
		atomic_store(&c->action, action);
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

void nf_coalesce_retire(struct nf_conn *c, int fd, enum nf_action action)
{
	drain(c, fd, DRAIN_LIVE, (int)action);
}

void nf_coalesce_drain_final(struct nf_conn *c, int fd)
{
	if (c->co)
		drain(c, fd, DRAIN_FINAL, -1);
}

void nf_coalesce_drain_abort(struct nf_conn *c, int fd)
{
	if (c->co)
		drain(c, fd, DRAIN_ABORT, NF_ACT_NODELAY);
	else
		atomic_store(&c->action, NF_ACT_NODELAY);
}

#define SNAP_STACK 256

/*
 * A copy of the pending set, so flushing can change it: in stack (up to
 * SNAP_STACK, so exit from a signal handler needs no malloc), else
 * malloc'd. Release it with release_snapshot.
 */
static struct nf_conn **snapshot(struct nf_conn **stack, int *n)
{
	struct nf_conn **copy = stack;

	pthread_mutex_lock(&plock);
	*n = atomic_load(&nf_coalesce_npending);
	if (*n > SNAP_STACK)
		copy = malloc((size_t)*n * sizeof(*copy));
	if (copy && *n > 0)
		memcpy(copy, pending, (size_t)*n * sizeof(*copy));
	else
		*n = 0;
	pthread_mutex_unlock(&plock);
	return copy;
}

static void release_snapshot(struct nf_conn **copy, struct nf_conn **stack)
{
	if (copy != stack)
		free(copy);
}

/*
 * flush_range from a signal handler that interrupted the library (exit or
 * exec in a handler): the pending set is out of reach (plock), so every
 * descriptor the table has held is looked at, lock-free. What each
 * connection holds goes as the kernel takes it (handler_lock's terms);
 * with wait, polling for room until give_up.
 */
static void handler_flush_range(unsigned first, unsigned last, int wait,
				unsigned long long give_up)
{
	unsigned used = (unsigned)nf_conn_used();

	for (unsigned fd = first; fd <= last && fd < used; fd++) {
		struct nf_conn *c = nf_conn_get((int)fd);
		struct pollfd p = { .fd = (int)fd, .events = POLLOUT };
		size_t left = 1;

		while (c && c->co && left && handler_lock(c)) {
			handler_push_locked(c, (int)fd);
			left = c->co->len;
			pthread_mutex_unlock(&c->lock);
			if (!left || !wait || nf_clock_now_ns() >= give_up)
				break;
			nf_real.poll(&p, 1, 100);
		}
	}
}

/*
 * Flushes the connections holding bytes whose fd is within [first, last]:
 * what the kernel takes now (DRAIN_NONE), or draining as mode says, all
 * against one deadline.
 */
static void flush_range(unsigned first, unsigned last, enum drain_mode mode)
{
	int wait = mode != DRAIN_NONE;
	unsigned long long give_up = drain_deadline();
	struct nf_conn *stack[SNAP_STACK], **all;
	int saved = errno, n;

	if (atomic_load_explicit(&nf_coalesce_npending, memory_order_relaxed) == 0)
		return;
	if (!nf_guard_enter()) {
		handler_flush_range(first, last, wait, give_up);
		errno = saved;
		return;
	}
	all = snapshot(stack, &n);
	for (int i = 0; i < n; i++) {
		struct nf_conn *c = all[i];

		if (wait) {
			pthread_mutex_lock(&c->lock);
			if ((unsigned)c->co->fd >= first && (unsigned)c->co->fd <= last)
				drain_locked(c, c->co->fd, mode, give_up);
		} else if (pthread_mutex_trylock(&c->lock) == 0) {
			flush_for_program(c, c->co->fd);
		} else {
			continue;
		}
		pthread_mutex_unlock(&c->lock);
	}
	release_snapshot(all, stack);
	nf_guard_leave();
	errno = saved;
}

void nf_coalesce_flush_all(int wait)
{
	flush_range(0, ~0u, wait ? DRAIN_FINAL : DRAIN_NONE);
}

void nf_coalesce_drain_range(unsigned first, unsigned last)
{
	flush_range(first, last, DRAIN_FINAL);
}

void nf_coalesce_before_child(void)
{
	flush_range(0, ~0u, DRAIN_KEEP);
}

void nf_coalesce_end(void)
{
	atomic_store(&ending, 1);
	flush_range(0, ~0u, DRAIN_FINAL);
}

void nf_coalesce_resume(void)
{
	atomic_store(&ending, 0);
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
		return now + 50000; /* a writer holds it for a moment: look again soon */
	if (!co->len && !co->inflight) { /* emptied by a signal handler (handler_push_locked) */
		pending_del(c);
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	if (co->len && !co->inflight && atomic_load(&co->deadline) <= now) {
		co->streak = 0; /* the program did not send this hold itself */
		flush_locked(c, co->fd);
		if (co->len) { /* the socket is full: back off, up to 100 ms */
			co->backoff_us = co->backoff_us ? co->backoff_us * 2 : co->flush_us;
			if (co->backoff_us > 100000)
				co->backoff_us = 100000;
			atomic_store(&co->deadline, now + (unsigned long long)co->backoff_us * 1000);
		}
	}
	if (co->len && !co->inflight)
		next = atomic_load(&co->deadline);
	pthread_mutex_unlock(&c->lock);
	return next;
}

unsigned long long nf_coalesce_flush_due(unsigned long long now)
{
	unsigned long long next = 0;
	struct nf_conn *stack[SNAP_STACK], **all;
	int saved = errno, n;

	all = snapshot(stack, &n);
	for (int i = 0; i < n; i++) {
		unsigned long long d = flush_one_due(all[i], now);

		if (d && (next == 0 || d < next))
			next = d;
	}
	release_snapshot(all, stack);
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
		init_done(&co->done);
	}
}
