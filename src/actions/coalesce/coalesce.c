/*
 * coalesce.c - the coalesce action's entry points (nf_coalesce.h): each
 * guards against re-entry from a signal handler (which goes to
 * coalesce_handler.c instead), keeps errno, reports a stored flush error
 * once, and decides whether the program's bytes are held, sent with what
 * is held, or passed to the kernel after it. The buffer and how it is
 * sent and drained are coalesce_buf.c's; the set of connections holding
 * bytes is coalesce_pending.c's. Locking: coalesce_int.h.
 */
#include "coalesce_int.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include "core/nf_aside.h"
#include "core/nf_clock.h"
#include "core/nf_copyin.h"
#include "core/nf_guard.h"

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

/* A SIGPIPE owed to the program, raised once the thread is out of the
 * library (nf_guard.h): its handler then runs as the program's own. */
static __thread int owed_sigpipe __attribute__((tls_model("initial-exec")));

static void pay_sigpipe(void)
{
	int saved;

	if (!owed_sigpipe)
		return;
	saved = errno;
	owed_sigpipe = 0;
	raise(SIGPIPE);
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

	if (!co->proven && nf_real.getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
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

/* A whole message's write: the program's own call, decided without the
 * lock. */
static int goes_straight(struct nf_conn *c, int flags)
{
	struct nf_coalesce *co = nf_co_of(c);

	return co && nf_co_straight_now(c, co, flags);
}

/* iov holds n > 0 bytes in at most IOV_STACK pieces. */
static ssize_t coalesce_send(struct nf_conn *c, int fd, const struct iovec *iov,
			     int iovcnt, ssize_t n, int flags)
{
	struct nf_coalesce *co;
	ssize_t r;

	pthread_mutex_lock(&c->lock);
	co = nf_co_get(c, fd);
	if (co && !co->begun)
		nf_co_begin(c);
	if (atomic_load(&c->action) != NF_ACT_COALESCE || !co || co->broken ||
	    nf_co_straight_now(c, co, flags)) {
		/* retired while we came (dup), no memory, a dead connection, or
		 * straight (the socket's first write, under start=whole) */
		pthread_mutex_unlock(&c->lock);
		return NF_CO_PASS;
	}
	if (co->err) {
		errno = take_error(co, flags);
		r = -1;
	} else if (!holds(co, fd)) {
		r = nf_co_pass_after_held(c, fd, flags);
	} else if (!co->full && nf_co_try_make_room(co, (size_t)n)) {
		r = nf_co_take_in(c, fd, iov, iovcnt, (size_t)n, flags);
		if (r >= 0 && atomic_load(&ending)) /* see nf_coalesce_end */
			nf_co_drain_locked(c, fd, DRAIN_FINAL,
					   nf_co_drain_deadline(c, nf_clock_now_ns()));
	} else {
		r = nf_co_send_through(c, fd, iov, iovcnt, (size_t)n, flags);
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* nf_coalesce_send of iov, our own copy of the program's n > 0 bytes. */
static ssize_t send_iov(struct nf_conn *c, int fd, const struct iovec *iov, int iovcnt,
			ssize_t n, int flags)
{
	ssize_t r;

	if (!nf_guard_enter()) /* re-entered from a signal handler */
		return nf_co_handler_send(c, fd, iov, iovcnt, n);
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
	if (goes_straight(c, flags)) /* whatever it holds, the kernel's to answer */
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
	if (goes_straight(c, flags))
		return NF_CO_PASS;
	return send_iov(c, fd, &v, 1, (ssize_t)n, flags);
}

static int before_send(struct nf_conn *c, int fd, int flags)
{
	int rc = 0, err = 0;

	pthread_mutex_lock(&c->lock);
	if (!nf_co_get(c, fd) || c->co->broken) {
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	if (c->co->err) {
		err = take_error(c->co, flags);
	} else {
		err = nf_co_push_all(c, fd, flags);
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
		nf_co_handler_push(c, fd);
		return 0;
	}
	rc = before_send(c, fd, flags);
	nf_guard_leave();
	pay_sigpipe();
	return rc;
}

void nf_coalesce_flush(struct nf_conn *c, int fd)
{
	struct nf_coalesce *co = nf_co_of(c);
	int saved = errno;

	if (!co)
		return;
	nf_co_read_seen(co);
	if (atomic_load_explicit(&nf_coalesce_npending, memory_order_relaxed) == 0)
		return;
	if (!nf_guard_enter()) {
		nf_co_handler_push(c, fd);
		return;
	}
	if (pthread_mutex_trylock(&c->lock) == 0) {
		nf_co_flush_for_program(c, fd);
		pthread_mutex_unlock(&c->lock);
	}
	nf_guard_leave();
	errno = saved;
}

/* nf_co_drain_locked under the lock; then, if action >= 0, the rule becomes
 * action before any other writer can buffer again. */
static void drain(struct nf_conn *c, int fd, enum drain_mode mode, int action)
{
	int saved = errno;

	if (!nf_guard_enter()) { /* from a signal handler: what needs no wait */
		nf_co_handler_push(c, fd);
		if (action >= 0 && nf_co_of(c) && pthread_mutex_trylock(&c->lock) == 0) {
			if (!c->co->len && !c->co->inflight) /* else it stays as it was */
				atomic_store(&c->action, action);
			pthread_mutex_unlock(&c->lock);
		}
		errno = saved;
		return;
	}
	pthread_mutex_lock(&c->lock);
	if (c->co)
		nf_co_drain_locked(c, fd, mode, nf_co_drain_deadline(c, nf_clock_now_ns()));
	if (action >= 0)
		atomic_store(&c->action, action);
	pthread_mutex_unlock(&c->lock);
	nf_guard_leave();
	errno = saved;
}

void nf_coalesce_push(struct nf_conn *c, int fd)
{
	int saved = errno;

	if (!nf_co_of(c) || !nf_guard_enter())
		return;
	pthread_mutex_lock(&c->lock);
	nf_co_flush_locked(c, fd);
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
	if (nf_co_of(c))
		drain(c, fd, DRAIN_FINAL, -1);
}

void nf_coalesce_drain_abort(struct nf_conn *c, int fd)
{
	if (nf_co_of(c))
		drain(c, fd, DRAIN_ABORT, NF_ACT_NODELAY);
	else
		atomic_store(&c->action, NF_ACT_NODELAY);
}

/*
 * Flushes the connections holding bytes whose fd is within [first, last]:
 * what the kernel takes now (DRAIN_NONE), or draining as mode says, each
 * its drain= from one start.
 */
static void flush_range(unsigned first, unsigned last, enum drain_mode mode)
{
	int wait = mode != DRAIN_NONE;
	unsigned long long since;
	struct nf_conn *stack[SNAP_STACK], **all;
	int saved = errno, n;

	/* standing aside, nothing is held: what was, went before (nf_sandbox.h) */
	if (atomic_load_explicit(&nf_coalesce_npending, memory_order_relaxed) == 0 ||
	    nf_standing_aside())
		return;
	since = nf_clock_now_ns();
	if (!nf_guard_enter()) {
		nf_co_handler_flush_range(first, last, mode, since);
		errno = saved;
		return;
	}
	all = nf_co_snapshot(stack, &n);
	for (int i = 0; i < n; i++) {
		struct nf_conn *c = all[i];

		if (wait) {
			pthread_mutex_lock(&c->lock);
			if ((unsigned)c->co->fd >= first && (unsigned)c->co->fd <= last)
				nf_co_drain_locked(c, c->co->fd, mode,
						   nf_co_drain_deadline(c, since));
		} else if (pthread_mutex_trylock(&c->lock) == 0) {
			nf_co_flush_for_program(c, c->co->fd);
		} else {
			continue;
		}
		pthread_mutex_unlock(&c->lock);
	}
	nf_co_snapshot_release(all, stack);
	nf_guard_leave();
	errno = saved;
}

void nf_coalesce_flush_all(enum nf_flush_how how)
{
	flush_range(0, ~0u, how == NF_FLUSH_DRAIN ? DRAIN_FINAL : DRAIN_NONE);
}

void nf_coalesce_drain_range(unsigned first, unsigned last)
{
	flush_range(first, last, DRAIN_FINAL);
}

void nf_coalesce_before_child(void)
{
	flush_range(0, ~0u, DRAIN_KEEP);
}

/*
 * A writer that found ending 0 may be about to hold bytes: it lists its
 * buffer (nf_coalesce_npending), then looks at ending again, under its
 * lock (coalesce_send). Stored and then loaded in the opposite orders,
 * with full fences: either flush_range here sees the buffer listed (and
 * waits for the lock), or the writer sees ending and drains it itself.
 */
void nf_coalesce_end(void)
{
	atomic_store(&ending, 1);
	atomic_thread_fence(memory_order_seq_cst);
	flush_range(0, ~0u, DRAIN_FINAL);
}

int nf_coalesce_dropped(struct nf_conn *c)
{
	int dropped = 0;

	if (!nf_co_of(c))
		return 0;
	pthread_mutex_lock(&c->lock);
	dropped = c->co && c->co->err; /* cleared once returned (take_error) */
	pthread_mutex_unlock(&c->lock);
	return dropped;
}

void nf_coalesce_resume(void)
{
	if (!nf_standing_aside())
		atomic_store(&ending, 0);
}

unsigned long long nf_coalesce_flush_due(unsigned long long now)
{
	unsigned long long next = 0;
	struct nf_conn *stack[SNAP_STACK], **all;
	int saved = errno, n;

	all = nf_co_snapshot(stack, &n);
	for (int i = 0; i < n; i++) {
		unsigned long long d = nf_co_flush_one_due(all[i], now);

		if (d && (next == 0 || d < next))
			next = d;
	}
	nf_co_snapshot_release(all, stack);
	errno = saved;
	return next;
}

/*
 * In the child every buffer is dropped (the parent sends them), sends that
 * other threads of the parent had in flight are theirs, and the locks and
 * condition variables those threads may have held are made new. Every
 * buffer ever made is some entry's co, for good: the fd table's published
 * chunks are walked for them.
 */
static void buf_atfork_child(struct nf_conn *c, int fd)
{
	(void)fd;
	if (nf_co_of(c))
		nf_co_buf_atfork_child(nf_co_of(c));
}

void nf_coalesce_atfork_child(void)
{
	nf_co_pending_atfork_child();
	nf_conn_each(buf_atfork_child);
}
