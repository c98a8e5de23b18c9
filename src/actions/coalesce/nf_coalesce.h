/*
 * nf_coalesce.h - the coalesce action: a bounded per-connection buffer
 * that gathers a program's small writes and sends them as one segment.
 *
 * Each entry point does nothing of its own when re-entered from a signal
 * handler that interrupted the library (nf_guard.h): a send then goes
 * straight to the kernel.
 *
 * Bytes wait in the buffer until the program reads or waits on the socket,
 * the buffer would overflow, the descriptor is closed, duplicated over,
 * shut down, the process forks, execs or exits, or the timer fires (no
 * byte waits longer than the rule's flush=). Every flush is one system
 * call on a socket with TCP_NODELAY on, so Nagle never holds it.
 */
#ifndef NF_COALESCE_H
#define NF_COALESCE_H

#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "core/nf_conn.h"

/* The send flags a buffered write can honour; any other bypasses it. */
#define NF_COALESCE_FLAGS (MSG_DONTWAIT | MSG_NOSIGNAL | MSG_MORE)

/* Connections of the process holding bytes; read lock-free by the hooks. */
extern atomic_int nf_coalesce_npending;

/* nf_coalesce_send's answer when the program's own call must be made, to
 * the kernel, as it was (what the socket held has gone ahead of it). */
#define NF_CO_PASS (-2)

/*
 * A bufferable send of iov on c (coalesce, flags within
 * NF_COALESCE_FLAGS): returns what the kernel would (the byte count, or
 * -1 with errno), reporting a stored flush error first; or NF_CO_PASS
 * when the bytes are not held: nothing to send (the kernel's answer to an
 * empty or invalid call), a socket not connected yet, the process ending,
 * more than 64 pieces, bytes that may not be readable, a dead connection.
 */
ssize_t nf_coalesce_send(struct nf_conn *c, int fd, const struct iovec *iov,
			 int iovcnt, int flags);

/* nf_coalesce_send of one buffer (write, send, sendto without an address). */
ssize_t nf_coalesce_send_buf(struct nf_conn *c, int fd, const void *buf, size_t n, int flags);

/*
 * Before a send that bypasses the buffer: pushes out what is buffered,
 * with the program's flags. Returns 0 when the buffer is empty, else -1
 * with the errno the program's send should fail with (EAGAIN, EPIPE...).
 */
int nf_coalesce_before_send(struct nf_conn *c, int fd, int flags);

/* The program reads fd: send what is buffered without blocking (whatever
 * cannot go now stays for the timer); its next write may go straight
 * again (a whole message: see WHOLE_AFTER in
 * src/actions/coalesce/coalesce_int.h). */
void nf_coalesce_flush(struct nf_conn *c, int fd);

/* fd is duplicated or disconnected and lives on: send all that is
 * buffered, waiting as long as a full socket takes, then switch its rule
 * to action before any writer can buffer again. */
void nf_coalesce_retire(struct nf_conn *c, int fd, enum nf_action action);

/* The program changes fd's options (TCP_NODELAY, TCP_CORK): send what
 * the kernel takes now; the rest stays, in order, for the next flush. */
void nf_coalesce_push(struct nf_conn *c, int fd);

/* fd is closed, shut down or replaced: send what is buffered, waiting up
 * to the rule's drain= (naglefix.conf(5)) for a full socket (then the
 * bytes are dropped, and said so on the log); a send another thread has
 * in flight is left to it. */
void nf_coalesce_drain_final(struct nf_conn *c, int fd);

/* shutdown(SHUT_WR or SHUT_RDWR): as nf_coalesce_drain_final, but of a
 * send another thread has in flight only the held bytes are waited for
 * (its own are left to fail: shutdown is how a program stops a blocked
 * writer); then the rule becomes nodelay, so that later writes get the
 * kernel's answer (EPIPE). */
void nf_coalesce_drain_abort(struct nf_conn *c, int fd);

/* close_range: nf_coalesce_drain_final for the fds in [first, last]. */
void nf_coalesce_drain_range(unsigned first, unsigned last);

/* How nf_coalesce_flush_all waits for a full socket. */
enum nf_flush_how {
	NF_FLUSH_NOW,   /* not at all: what the kernel takes now (before a wait) */
	NF_FLUSH_DRAIN, /* each connection its rule's drain= from the start,
			   however many peers are stalled; then its bytes
			   are dropped */
};

/* Flushes every connection holding bytes, as how says. */
void nf_coalesce_flush_all(enum nf_flush_how how);

/* Called by the timer (an nf_timer_due_fn, registered by init): flushes
 * the connections whose oldest byte is due. Returns the next deadline in
 * ns (nf_clock_now_ns), or 0 if none. */
unsigned long long nf_coalesce_flush_due(unsigned long long now_ns);

/* Before fork, posix_spawn, system and popen: every held byte goes into
 * the kernel, waiting for room (NF_FLUSH_DRAIN's time), so a child writing
 * on an inherited socket comes after it. */
void nf_coalesce_before_child(void);

/* The process is ending (exit, quick_exit, exec, the last thread's
 * pthread_exit): from now on no write is buffered (each pushes what its
 * socket holds first), and every buffer is drained (NF_FLUSH_DRAIN's time). */
void nf_coalesce_end(void);

/* Did c's held bytes fail to go (dropped after its drain=, or the send
 * failed), with that error not yet returned to the program? 1 or 0. */
int nf_coalesce_dropped(struct nf_conn *c);

/* An exec failed and the process goes on: writes are buffered again
 * (unless the library stands aside: nf_aside.h). */
void nf_coalesce_resume(void);

/* In a forked child: drop every copied buffer (the parent sends them). */
void nf_coalesce_atfork_child(void);

#endif
