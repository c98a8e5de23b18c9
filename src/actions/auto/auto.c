/*
 * auto.c - the auto action (see nf_auto.h).
 *
 * A check: auto_since (the first send since the last check) is taken
 * back to 0, then the kernel is asked what it holds unsent and, if
 * anything, pushed. Sends note auto_since after the kernel has their
 * bytes, so a check never misses a send it cleared the note of.
 *
 * Listing, for the timer: a socket with auto_listed set sits once on a
 * lock-free stack threaded through auto_next. Consumers take the whole
 * stack with one exchange, so no entry is seen twice (no ABA); an entry
 * leaves when auto_listed is cleared, after its auto_next was read.
 * auto_listed is never cleared while the entry is on the stack (not even
 * when the fd is closed: a reused fd still listed is checked with the
 * rest), but in a forked child, which clears them all (conn.c) before
 * nf_auto_atfork_child empties the stack: nothing else runs there. A
 * read's or a wait's check leaves the entry listed (so the next send need
 * not wake the timer); the timer drops it when it finds no send since,
 * which keeps one timer visit owed to every listed entry.
 *
 * Quiet connections: Linux's Nagle (Minshall's rule) holds a small segment
 * only while an earlier small one is unacknowledged, so a message written
 * in one send after the last was answered leaves at once; asking the
 * kernel at every read (an ioctl, 4% of a 5 us round trip) is then wasted.
 * A connection whose last QUIET_AFTER checks each covered one send (since
 * the program's last read or wait: auto_sent, auto_more) and found nothing
 * held is quiet: a read or wait after one send does not check, and the
 * listed entry's timer visit (flush=) does. A second send before a read or
 * wait, or anything held when a check is made, ends the quiet (auto_quiet
 * 0): checks at every read again. The cost: a single send that
 * Nagle does hold after a change of pattern waits for the timer (flush=,
 * 1 ms by default), never for the peer's delayed ACK. That needs the
 * visit owed to every listed entry: a wait, which holds the whole list for
 * a moment (the timer may look meanwhile and owe it nothing), arms the
 * timer for each quiet entry it skips (owe_visit); a send listed without
 * an arm (from a signal handler inside the library) ends the quiet; and
 * with no timer (it could not start) no connection is quiet.
 */
#include "nf_auto.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>

#include "core/nf_clock.h"
#include "core/nf_guard.h"
#include "core/nf_real.h"
#include "core/nf_timer.h"

#ifndef SIOCOUTQNSD
#define SIOCOUTQNSD 0x894B /* linux/sockios.h: unsent bytes (Linux 2.6.38+) */
#endif

#define QUIET_AFTER 64u /* checks that found a one-send message not held */

atomic_int nf_auto_used;         /* a socket was decided auto: hooks on */
static atomic_int head = -1;     /* the listed sockets' stack, -1 empty */

static int get_option(int fd, int name)
{
	int val = 0;
	socklen_t len = sizeof(val);

	if (getsockopt(fd, IPPROTO_TCP, name, &val, &len) < 0)
		return 0;
	return val != 0;
}

void nf_auto_adopt(struct nf_conn *c, int fd)
{
	int saved = errno;

	atomic_store(&c->prog_nodelay, get_option(fd, TCP_NODELAY));
	atomic_store(&c->prog_cork, get_option(fd, TCP_CORK));
	atomic_store_explicit(&nf_auto_used, 1, memory_order_relaxed);
	errno = saved;
}

/* The entry of fd if it is a decided auto socket, else NULL. */
static struct nf_conn *auto_conn(int fd)
{
	struct nf_conn *c;

	if (!atomic_load_explicit(&nf_auto_used, memory_order_relaxed))
		return NULL;
	c = nf_conn_get(fd);
	if (c && nf_conn_kind(c) == NF_KIND_TCP &&
	    atomic_load_explicit(&c->action, memory_order_acquire) == NF_ACT_AUTO)
		return c;
	return NULL;
}

/* Could Nagle be what holds c's bytes? Not with the program's own
 * TCP_NODELAY (nothing is held) or TCP_CORK (its choice to hold). */
static int nagle_on(struct nf_conn *c)
{
	return !atomic_load(&c->prog_nodelay) && !atomic_load(&c->prog_cork);
}

/* Bytes the kernel holds that it has not sent yet. */
static int unsent(int fd)
{
	int n = 0;

	if (ioctl(fd, SIOCOUTQNSD, &n) < 0)
		return 0;
	return n;
}

/*
 * TCP_NODELAY on sends what is pending; then the program's setting goes
 * back. The loop: a program's setsockopt is recorded before the kernel
 * sees it, so if the record changed after our restore, the program's
 * call may have come before ours and its value is set again.
 */
static void push(struct nf_conn *c, int fd)
{
	int on = 1, v;

	nf_real.setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	do {
		v = atomic_load(&c->prog_nodelay);
		nf_real.setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v));
	} while (atomic_load(&c->prog_nodelay) != v);
}

/* Pushes fd if it is (still) an auto socket with bytes Nagle may hold:
 * 1 if it held some. */
static int push_if_held(int fd)
{
	struct nf_conn *c = auto_conn(fd);
	int saved = errno, held = 0;

	if (c && nagle_on(c) && unsent(fd) > 0) {
		push(c, fd);
		held = 1;
	}
	errno = saved;
	return held;
}

static void list_push(struct nf_conn *c, int fd)
{
	int h = atomic_load(&head);

	do
		c->auto_next = h;
	while (!atomic_compare_exchange_weak(&head, &h, fd));
}

/* A send: the second since the program's last read or wait is noted (the
 * message was not one send). */
static void note_send(struct nf_conn *c)
{
	if (!atomic_load_explicit(&c->auto_sent, memory_order_relaxed))
		atomic_store_explicit(&c->auto_sent, 1, memory_order_relaxed);
	else if (!atomic_load_explicit(&c->auto_more, memory_order_relaxed))
		atomic_store_explicit(&c->auto_more, 1, memory_order_relaxed);
}

/* The program reads or waits: the next send starts a message. */
static void note_wait(struct nf_conn *c)
{
	if (atomic_load_explicit(&c->auto_sent, memory_order_relaxed))
		atomic_store_explicit(&c->auto_sent, 0, memory_order_relaxed);
}

/* A timer visit to c flush= after since (a send's time): 1, or 0 if the
 * timer cannot be woken from here (its lock, from a signal handler inside
 * the library). */
static int arm(struct nf_conn *c, unsigned long long since)
{
	if (!nf_guard_enter())
		return 0;
	nf_timer_arm(since + (unsigned long long)c->opts.flush_us * 1000ull);
	nf_guard_leave();
	return 1;
}

void nf_auto_after_send(int fd, ssize_t rc)
{
	struct nf_conn *c = rc > 0 ? auto_conn(fd) : NULL;
	unsigned long long since, now = 0;
	int no = 0, saved;

	if (!c || !nagle_on(c))
		return;
	saved = errno;
	since = atomic_load(&c->auto_since);
	if (since == 0) {
		now = nf_clock_now_ns();
		atomic_compare_exchange_strong(&c->auto_since, &since, now);
	}
	note_send(c);
	if (!atomic_load_explicit(&c->auto_listed, memory_order_relaxed) &&
	    atomic_compare_exchange_strong(&c->auto_listed, &no, 1)) {
		if (now == 0)
			now = nf_clock_now_ns();
		list_push(c, fd);
		if (!arm(c, now)) /* listed, no visit owed: not quiet, so reads check */
			atomic_store_explicit(&c->auto_quiet, 0, memory_order_relaxed);
	}
	errno = saved;
}

/* A check: sends since the last one are covered by this push; what it
 * found says whether the connection is (still) quiet. */
static void check(struct nf_conn *c, int fd)
{
	int more, held;
	unsigned q;

	if (!atomic_exchange(&c->auto_since, 0))
		return;
	more = atomic_load_explicit(&c->auto_more, memory_order_relaxed);
	if (more)
		atomic_store_explicit(&c->auto_more, 0, memory_order_relaxed);
	held = push_if_held(fd);
	q = atomic_load_explicit(&c->auto_quiet, memory_order_relaxed);
	if (more || held)
		q = 0;
	else if (q < QUIET_AFTER)
		q++;
	atomic_store_explicit(&c->auto_quiet, q, memory_order_relaxed);
}

/* One send since the last check, on a quiet connection: the timer's visit
 * checks it, not the program's read or wait (if there is a timer). */
static int left_to_timer(const struct nf_conn *c)
{
	return atomic_load_explicit(&c->auto_quiet, memory_order_relaxed) >= QUIET_AFTER &&
	       !atomic_load_explicit(&c->auto_more, memory_order_relaxed) && !nf_timer_failed();
}

/* The listed entry c's send since the last check is owed a timer visit:
 * 1 once armed (or checked meanwhile: nothing owed), 0 if the timer
 * cannot be woken from here: then the caller checks. */
static int owe_visit(struct nf_conn *c)
{
	unsigned long long since = atomic_load(&c->auto_since);

	return since == 0 || arm(c, since);
}

void nf_auto_before_read(struct nf_conn *c, int fd)
{
	int skip = left_to_timer(c);

	note_wait(c);
	if (atomic_load_explicit(&c->auto_since, memory_order_relaxed) && !skip)
		check(c, fd); /* stays listed: the timer then finds nothing to do */
}

/*
 * Takes the whole list. From a wait (now is 0): checks every entry and
 * lists it again, so an event loop's next send need not wake the timer
 * (which drops the entry when it finds no send since). From the timer:
 * checks the entries due by now and lists the others again; an entry due
 * leaves the list before its check, so a send noted after the check lists
 * it anew. Returns the earliest deadline left, or 0.
 */
static unsigned long long consume(unsigned long long now)
{
	int fd = atomic_exchange(&head, -1), next_fd;
	unsigned long long left = 0, due, since;

	for (; fd >= 0; fd = next_fd) {
		struct nf_conn *c = nf_conn_get(fd);

		next_fd = c->auto_next;
		if (!now) { /* a wait holds the whole list: the timer may look meanwhile,
			       find it empty and owe these entries nothing */
			int skip = left_to_timer(c);

			note_wait(c);
			list_push(c, fd);
			if (!skip || !owe_visit(c))
				check(c, fd);
			continue;
		}
		since = atomic_load(&c->auto_since);
		due = since + (unsigned long long)c->opts.flush_us * 1000ull;
		if (since && due > now) {
			list_push(c, fd);
			left = left == 0 || due < left ? due : left;
			continue;
		}
		atomic_store(&c->auto_listed, 0);
		check(c, fd);
	}
	return left;
}

void nf_auto_before_wait(int timeout_nonzero)
{
	if (timeout_nonzero && atomic_load_explicit(&head, memory_order_relaxed) >= 0)
		consume(0);
}

unsigned long long nf_auto_flush_due(unsigned long long now)
{
	if (atomic_load_explicit(&head, memory_order_relaxed) < 0)
		return 0;
	return consume(now);
}

int nf_auto_option_begin(int fd, int level, int name, const void *val, socklen_t len)
{
	struct nf_conn *c;

	if (level != IPPROTO_TCP || name != TCP_NODELAY || !val || len < (socklen_t)sizeof(int))
		return -1;
	c = auto_conn(fd);
	if (!c)
		return -1;
	return atomic_exchange(&c->prog_nodelay, *(const int *)val != 0);
}

void nf_auto_option_end(int fd, int level, int name, const void *val, socklen_t len,
			int begun, int rc)
{
	struct nf_conn *c = auto_conn(fd);

	if (!c)
		return;
	if (begun >= 0 && rc != 0)
		atomic_store(&c->prog_nodelay, begun);
	if (rc == 0 && level == IPPROTO_TCP && name == TCP_CORK && val &&
	    len >= (socklen_t)sizeof(int))
		atomic_store(&c->prog_cork, *(const int *)val != 0);
}

void nf_auto_atfork_child(void)
{
	if (atomic_load(&head) >= 0)
		consume(~0ull); /* all due: checked now and unlisted, so the
				   child's next send arms its own timer */
}
