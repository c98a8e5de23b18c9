/*
 * nf_auto.h - the auto action: nothing is held by the library; what Nagle
 * holds in the kernel is pushed when the program is about to wait for its
 * peer, and by the timer after the rule's flush= when no wait follows.
 *
 * A push turns TCP_NODELAY on (which on Linux sends what is pending) and
 * then puts back the program's own setting, which the setsockopt hook
 * records before the kernel sees it. A socket the program has corked
 * (TCP_CORK) or set TCP_NODELAY on is never pushed. No lock is taken: the
 * sockets written since their last check form a lock-free list, so a
 * signal handler can enter any function here. Every function keeps errno.
 */
#ifndef NF_AUTO_H
#define NF_AUTO_H

#include <sys/socket.h>

#include "core/nf_conn.h"

/* c was just decided auto: reads the program's TCP_NODELAY and TCP_CORK
 * from the kernel (a listener's options are inherited) and turns the read
 * and wait hooks on. */
void nf_auto_adopt(struct nf_conn *c, int fd);

/* Set once a socket is decided auto: until then the send hooks need not
 * call nf_auto_after_send (one load instead of a call). */
extern atomic_int nf_auto_used;

/* A send on fd returned rc: if fd is an auto socket and bytes went to
 * the kernel, notes the time of the first such send since the last check
 * and lists fd for the timer (its deadline: that time + flush). After the
 * send, not before: a check that follows the note sees its bytes. */
void nf_auto_after_send(int fd, ssize_t rc);

/* Before a read of fd, whose entry c is an auto socket's: pushes what
 * Nagle holds if it was sent on since its last check (else one load). */
void nf_auto_before_read(struct nf_conn *c, int fd);

/* Before a wait (poll, select, epoll...) that may block: pushes what
 * Nagle holds on every listed socket of the process. */
void nf_auto_before_wait(int timeout_nonzero);

/*
 * The program's setsockopt(fd, level, name, val, len) is about to go to
 * the kernel: on an auto socket, records its TCP_NODELAY choice first (so
 * a push in another thread restores that one). Returns what to pass to
 * nf_auto_option_end.
 */
int nf_auto_option_begin(int fd, int level, int name, const void *val, socklen_t len);

/* That setsockopt returned rc: takes the record back if it failed, and
 * records TCP_CORK when it succeeded. */
void nf_auto_option_end(int fd, int level, int name, const void *val, socklen_t len,
			int begun, int rc);

/*
 * From the timer thread (an nf_timer_due_fn, registered by init): pushes
 * every listed socket whose deadline is not after now. Returns the next
 * auto deadline, or 0 for none.
 */
unsigned long long nf_auto_flush_due(unsigned long long now);

/* In a forked child, whose timer thread is gone: checks every listed
 * socket now (they are the parent's too, and pushing is harmless). */
void nf_auto_atfork_child(void);

#endif
