/*
 * wait.c - poll, ppoll, select, pselect, epoll_wait, epoll_pwait(2) and the
 * fortified __poll_chk, __ppoll_chk: the
 * program is about to wait for an answer. Before a thread blocks, every
 * connection holding coalesced bytes is flushed, so an event loop never
 * waits on its own buffered request. A zero timeout does not block and
 * flushes nothing. What Nagle holds on auto sockets is pushed likewise.
 * Audit starts the stall clock of the audited sockets
 * the call waits to read (for epoll, whose set it cannot see: all).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include "hooks_int.h"
#include "actions/audit/nf_audit.h"
#include "actions/auto/nf_auto.h"
#include "actions/coalesce/nf_coalesce.h"
#include "core/nf_real.h"
#include "process/nf_init.h"

void nf_before_wait(int timeout_nonzero)
{
	if (timeout_nonzero &&
	    atomic_load_explicit(&nf_coalesce_npending, memory_order_relaxed) > 0)
		nf_coalesce_flush_all(NF_FLUSH_NOW);
	nf_auto_before_wait(timeout_nonzero);
}

static int ts_nonzero(const struct timespec *ts)
{
	return !ts || ts->tv_sec != 0 || ts->tv_nsec != 0;
}

static int tv_nonzero(const struct timeval *tv)
{
	return !tv || tv->tv_sec != 0 || tv->tv_usec != 0;
}

NF_EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	nf_init();
	nf_before_wait(timeout != 0);
	nf_audit_wait_poll(fds, nfds);
	return nf_real.poll(fds, nfds, timeout);
}

NF_EXPORT int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *ts,
		    const sigset_t *mask)
{
	nf_init();
	nf_before_wait(ts_nonzero(ts));
	nf_audit_wait_poll(fds, nfds);
	return nf_real.ppoll(fds, nfds, ts, mask);
}

NF_EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
	nf_init();
	nf_before_wait(tv_nonzero(tv));
	nf_audit_wait_select(n, r);
	return nf_real.select(n, r, w, e, tv);
}

NF_EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts,
		      const sigset_t *mask)
{
	nf_init();
	nf_before_wait(ts_nonzero(ts));
	nf_audit_wait_select(n, r);
	return nf_real.pselect(n, r, w, e, ts, mask);
}

NF_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	nf_init();
	nf_before_wait(timeout != 0);
	nf_audit_wait_all();
	return nf_real.epoll_wait(epfd, ev, max, timeout);
}

NF_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
			  const sigset_t *mask)
{
	nf_init();
	nf_before_wait(timeout != 0);
	nf_audit_wait_all();
	return nf_real.epoll_pwait(epfd, ev, max, timeout, mask);
}

NF_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *ts,
			   const sigset_t *mask)
{
	nf_init();
	if (!nf_real.epoll_pwait2) {
		errno = ENOSYS;
		return -1;
	}
	nf_before_wait(ts_nonzero(ts));
	nf_audit_wait_all();
	return nf_real.epoll_pwait2(epfd, ev, max, ts, mask);
}

/* The fortified poll and ppoll (-D_FORTIFY_SOURCE=2 with a fixed array). */
NF_EXPORT int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen)
{
	nf_init();
	nf_before_wait(timeout != 0);
	nf_audit_wait_poll(fds, nfds);
	if (!nf_real.__poll_chk)
		return nf_real.poll(fds, nfds, timeout);
	return nf_real.__poll_chk(fds, nfds, timeout, fdslen);
}

NF_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *ts,
			  const sigset_t *mask, size_t fdslen)
{
	nf_init();
	nf_before_wait(ts_nonzero(ts));
	nf_audit_wait_poll(fds, nfds);
	if (!nf_real.__ppoll_chk)
		return nf_real.ppoll(fds, nfds, ts, mask);
	return nf_real.__ppoll_chk(fds, nfds, ts, mask, fdslen);
}
