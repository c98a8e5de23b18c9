/*
 * coalesce_int.h - what the files of the coalesce action share, and no
 * one else: coalesce.c (the entry points of nf_coalesce.h: the guard
 * against signal handlers, errno, the stored error, the choice between
 * holding and sending), coalesce_buf.c (the buffer, and the protocol by
 * which it is sent, taken out for a send without the lock, and drained),
 * coalesce_pending.c (the set of connections holding bytes) and
 * coalesce_handler.c (what a signal handler that interrupted the library
 * may do instead).
 *
 * Locking: a connection's buffer is guarded by its conn->lock; the set of
 * connections holding bytes by plock (coalesce_pending.c), always taken
 * after a conn->lock, never before one. No lock is held across a send
 * that can block: a program thread whose write must wait for the kernel
 * takes the buffered bytes out (co->inflight), sends them with its own in
 * one blocking call, unlocked, and puts back whatever the kernel did not
 * take. Meanwhile other writers may append (their calls are concurrent
 * with it, so either order is theirs to get), and flushes leave the
 * connection alone.
 *
 * c->co is made once, under c->lock, and never freed: it is published
 * with a release store (nf_co_get), and a look without the lock reads it
 * through nf_co_of, as audit does c->au.
 */
#ifndef NF_COALESCE_INT_H
#define NF_COALESCE_INT_H

#include <pthread.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "nf_coalesce.h"

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

/*
 * A program that writes each message whole (one write, then its read)
 * gains nothing from a hold: the segment would be the same. A connection
 * begins straight under start=whole (the default; start=split: holding),
 * and one whose last WHOLE_AFTER holds were each one write that the
 * program's own read or wait sent whole goes straight again: its next
 * write is the program's own call to the kernel (TCP_NODELAY is on: it
 * leaves at once), nothing copied, nothing timed; only a read lets the
 * next write go straight again (nf_co_read_seen). A second write before
 * the program reads again is held as before, and ends the streak (whole
 * 0): the first piece of that message went alone, the one segment more a
 * change of pattern costs. README: "Whole messages".
 */
#define WHOLE_AFTER 64u

struct nf_coalesce {
	char *buf;
	size_t len;
	size_t cap;      /* the rule's bound; buf may briefly hold more */
	size_t alloc;    /* what buf can hold */
	char *spare;     /* a second buffer, swapped in while inflight */
	size_t spare_alloc;
	unsigned long long deadline; /* oldest byte must leave by then (c->lock's,
				       as every reader holds it, the timer too) */
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
	unsigned writes; /* the writes of the present hold's message (one
			    that went straight before it counted) */
	unsigned whole;  /* holds in a row of one write each, sent by the
			    program's own read or wait (whole_is) */
	_Atomic int straight; /* a write went straight since the program's
				 last read: set by the writer (nf_co_straight_now),
				 cleared by the read (nf_co_read_seen) */
	int begun;       /* the socket (gen) had its first write: it began as
			    its rule's start= says (nf_co_begin) */
	_Atomic unsigned go_gen; /* whole reached WHOLE_AFTER for the socket of
				    generation go_gen - 1 (0: not): its writes
				    may go straight without the lock */
	pthread_cond_t done; /* signalled when inflight ends */
	int fd;
	int pidx;        /* index in pending[], or -1: plock's (another
			    buffer's removal moves it) */
	int listed;      /* in the pending set: changed under c->lock and
			    plock both, so either one reads it */
};

/* c's buffer, or NULL if it has none yet: for a look without c->lock
 * (under it, c->co is the same). */
static inline struct nf_coalesce *nf_co_of(const struct nf_conn *c)
{
	return __atomic_load_n(&c->co, __ATOMIC_ACQUIRE);
}

/* How long a drain waits for a full socket, and what it does then. */
enum drain_mode {
	DRAIN_LIVE,  /* the socket lives on (dup, disconnect): wait as long as it takes */
	DRAIN_FINAL, /* it goes (close, exec, exit): wait until give_up, then drop */
	DRAIN_ABORT, /* shutdown: as final, but a send in flight is waited for only
			until its held bytes are in the kernel */
	DRAIN_KEEP,  /* a child is about to start: wait until give_up, then keep */
	DRAIN_NONE,  /* poll, select, fork's prepare: what the kernel takes now */
};

/* ---- coalesce_pending.c: the connections holding bytes --------------- */

/* The most a snapshot of the pending set holds without malloc. */
#define SNAP_STACK 256

/* A buffer was made: the pending set gets room for one more, so that
 * nf_co_pending_add never needs memory. 0 or -ENOMEM. */
int nf_co_pending_reserve(void);

/* Adds c to the pending set (a no-op if there). 0, or -ENOMEM. Caller
 * holds c->lock. */
int nf_co_pending_add(struct nf_conn *c);

/* Removes c from the pending set, if there. Caller holds c->lock. */
void nf_co_pending_del(struct nf_conn *c);

/* A copy of the pending set (*n entries), in stack or malloc'd; released
 * with nf_co_snapshot_release. */
struct nf_conn **nf_co_snapshot(struct nf_conn **stack, int *n);
void nf_co_snapshot_release(struct nf_conn **copy, struct nf_conn **stack);

/* In a forked child: the set empty, its lock new. */
void nf_co_pending_atfork_child(void);

/* ---- coalesce_buf.c: the buffer and its send and drain protocol ------- */

/* c's buffer, made (and published) or fitted to the rule; NULL when
 * memory runs out. Caller holds c->lock. */
struct nf_coalesce *nf_co_get(struct nf_conn *c, int fd);

/* The first write of c's socket (!c->co->begun): it begins as its rule
 * says (start=): as one whose messages come whole (its writes go straight
 * until a second write comes before a read), or as one that splits them
 * (held from the first write). At its first write, not when the buffer is
 * made or starts over: those may come from the timer or a flush before
 * the new socket's rule is decided. Caller holds c->lock; nothing of this
 * socket is held, in flight or failed yet. */
void nf_co_begin(struct nf_conn *c);

/* Copies n bytes of iov into the buffer, which has room: 0, or -1 when a
 * byte may not be readable (the buffer unchanged). Caller holds c->lock. */
int nf_co_append(struct nf_conn *c, const struct iovec *iov, int iovcnt, size_t n);

/* The raw sendto of the library's own bytes (never a cancellation point). */
ssize_t nf_co_own_send(int fd, const void *buf, size_t len, int flags);

/* 1 if n more bytes may wait in the buffer, and its memory now holds
 * them (it may grow); else 0. */
int nf_co_try_make_room(struct nf_coalesce *co, size_t n);

/* The program's n bytes into the buffer, or to the kernel after what is
 * held: as nf_coalesce_send answers. Caller holds c->lock. */
ssize_t nf_co_take_in(struct nf_conn *c, int fd, const struct iovec *iov, int iovcnt,
		      size_t n, int flags);

/* What is held and the program's n bytes in one call without the lock:
 * as nf_coalesce_send answers. Caller holds c->lock. */
ssize_t nf_co_send_through(struct nf_conn *c, int fd, const struct iovec *iov,
			   int iovcnt, size_t n, int flags);

/* NF_CO_PASS once what is held has gone, or -1 with push's errno. Caller
 * holds c->lock. */
ssize_t nf_co_pass_after_held(struct nf_conn *c, int fd, int flags);

/* Everything buffered out with the program's flags: 0 or an errno.
 * Caller holds c->lock. */
int nf_co_push_all(struct nf_conn *c, int fd, int flags);

/* One send that does not block; a hard error is kept for the next send.
 * Caller holds c->lock. */
void nf_co_flush_locked(struct nf_conn *c, int fd);

/* nf_co_flush_locked for the program's own read or wait (adds to the
 * streak of trusted holds, and a hold of one write to the whole streak).
 * Caller holds c->lock. */
void nf_co_flush_for_program(struct nf_conn *c, int fd);

/*
 * Does the program's write (its send flags) go straight, decided without
 * the lock? Yes if this very socket (its generation) reached WHOLE_AFTER,
 * no write went straight since the program's last read (then noted), and
 * it is not MSG_MORE: the kernel would hold that, and the program's read
 * would push nothing, so it would wait for the kernel's own timer (208-211
 * ms a round, measured on loopback); held here, the read sends it. go_gen
 * is non-zero only while nothing of this socket is held, in flight or
 * failed (a send of the socket the fd named before may still be under way:
 * its bytes are that socket's, and put_back drops what it did not take):
 * every path that holds (nf_co_append), sends without the lock (take_out),
 * stores a flush error (fail_buffer) or starts over (start_over) zeroes it
 * first, under the lock, and it is set only by a read's flush that sent
 * everything, or by the socket's first write under start=whole
 * (nf_co_begin), before which it had nothing. A write that must come after
 * such a hold starts after the hold's call returned, so it sees the zero
 * (release/acquire: the bytes of that call are in the kernel before a
 * straight write can be). Two writers let through at once were two
 * overlapping calls, in either order theirs; a missed "second write" costs
 * only the segment it would have saved. Else 0: the write is held or sent
 * as before, and a hold ends the streak (nf_co_append).
 */
static inline int nf_co_straight_now(const struct nf_conn *c, struct nf_coalesce *co,
				     int flags)
{
	unsigned g = atomic_load_explicit(&co->go_gen, memory_order_acquire);

	if (g == 0 || (flags & MSG_MORE) ||
	    g != atomic_load_explicit(&c->gen, memory_order_relaxed) + 1 ||
	    atomic_load_explicit(&co->straight, memory_order_relaxed))
		return 0;
	atomic_store_explicit(&co->straight, 1, memory_order_relaxed);
	return 1;
}

/* The program reads: the next write may go straight again. No lock. */
static inline void nf_co_read_seen(struct nf_coalesce *co)
{
	if (atomic_load_explicit(&co->straight, memory_order_relaxed))
		atomic_store_explicit(&co->straight, 0, memory_order_relaxed);
}

/* Sends all that is held, as mode says, by give_up (nf_clock_now_ns).
 * Caller holds c->lock, which is released while the socket is full. */
void nf_co_drain_locked(struct nf_conn *c, int fd, enum drain_mode mode,
			unsigned long long give_up);

/* When draining c, begun at since (nf_clock_now_ns), gives up: since plus
 * its rule's drain=. */
unsigned long long nf_co_drain_deadline(const struct nf_conn *c, unsigned long long since);

/* The timer's look at one pending c at now: its next deadline, or 0. */
unsigned long long nf_co_flush_one_due(struct nf_conn *c, unsigned long long now);

/* In a forked child: co holds nothing, sends nothing, waits for nothing. */
void nf_co_buf_atfork_child(struct nf_coalesce *co);

/* ---- coalesce_handler.c: from a signal handler inside the library ----- */

/* A handler's send of n > 0 bytes: joins the buffer if it can without
 * waiting or memory, else NF_CO_PASS. Keeps errno. */
ssize_t nf_co_handler_send(struct nf_conn *c, int fd, const struct iovec *iov, int iovcnt,
			   ssize_t n);

/* What c holds, out as far as the kernel takes it now. Keeps errno. */
void nf_co_handler_push(struct nf_conn *c, int fd);

/* nf_co_handler_push for every fd in [first, last]; unless mode is
 * DRAIN_NONE, polling for room until each one's nf_co_drain_deadline
 * from since. */
void nf_co_handler_flush_range(unsigned first, unsigned last, enum drain_mode mode,
			       unsigned long long since);

#endif
