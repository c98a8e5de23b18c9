/*
 * audit.c - detection for the audit action: the per-connection list of
 * writes since the last read, which of them Nagle holds, and the stall
 * clock of the read that waits behind them; and, for the receive side,
 * when the last read returned data (see nf_audit.h; audit_recv.c judges
 * the gaps).
 *
 * Locking: every list (conn->au) and the set of connections with a list
 * are guarded by one mutex, alock, held only for bookkeeping and at most
 * a TCP_INFO query, never across a call that can block, and findings are
 * logged after it is released. It is separate from conn->lock so that
 * audit's bookkeeping never nests inside coalesce's; audit is a
 * diagnostic mode, and one mutex also keeps fork simple. Each entry point
 * is guarded against re-entry from a signal handler (nf_guard.h).
 */
#include "nf_audit.h"
#include "core/nf_guard.h"

#include <errno.h>
#ifdef __GLIBC__
#include <linux/tcp.h> /* struct tcp_info with tcpi_notsent_bytes */
#else
#include <netinet/tcp.h> /* musl's has it (and musl-gcc sees no linux/) */
#endif
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "actions/nf_track.h"
#include "core/nf_clock.h"
#include "core/nf_real.h"

struct nf_audit {
	unsigned nwrites;
	size_t writes[NF_AUDIT_MAXW];
	uint32_t held;               /* bit i: writes[i] was held */
	unsigned nheld;              /* held writes, counted past NF_AUDIT_MAXW */
	void *caller;                /* of the first held write */
	unsigned mss;                /* last tcpi_snd_mss seen, 0 before */
	unsigned long long wait_ns;  /* stall clock start, 0 when not running */
	int settled;                 /* held bytes seen gone (or logged): no finding */
	unsigned clear_firsts;       /* first writes after a read not held, in a row */
	unsigned skipped_firsts;     /* of the first writes since, not asked about */
	int aidx;                    /* index in active[], or -1 */
	unsigned long long rx_ns;    /* when the last read returned data, if no send
					came since; else 0 */
	size_t rx_len;               /* what it returned */
};

atomic_int nf_audit_nactive;

int nf_audit_enabled; /* written once by nf_audit_setup, before any hook */
static pthread_mutex_t alock = PTHREAD_MUTEX_INITIALIZER;
static int *active;  /* fds with a non-empty list */
static int active_cap;

static int opts_audit(const struct nf_opts *o)
{
	return o->action == NF_ACT_AUDIT || o->audit;
}

void nf_audit_setup(const struct nf_policy *p)
{
	int on = opts_audit(&p->dflt);

	for (size_t i = 0; i < p->nrules && !on; i++)
		on = opts_audit(&p->rules[i].opts);
	nf_audit_enabled = on;
}

/* How a socket is audited. */
enum audit_kind {
	NOT_AUDITED = 0,
	AUDIT_ONLY,  /* the audit action: the library changes nothing */
	AUDIT_A_FIX, /* a fixing action with audit=1: findings are prevented ones */
};

static enum audit_kind audit_kind(struct nf_conn *c)
{
	int a = atomic_load_explicit(&c->action, memory_order_acquire);

	if (a == NF_ACT_AUDIT)
		return AUDIT_ONLY;
	if ((a == NF_ACT_NODELAY || a == NF_ACT_COALESCE || a == NF_ACT_AUTO) && c->opts.audit)
		return AUDIT_A_FIX;
	return NOT_AUDITED;
}

/* The connection of fd if it is a decided, audited TCP socket. */
static struct nf_conn *audited(int fd)
{
	struct nf_conn *c = nf_conn_get(fd);

	if (!c || nf_conn_kind(c) != NF_KIND_TCP || audit_kind(c) == NOT_AUDITED)
		return NULL;
	return c;
}

static int tcp_info_of(int fd, struct tcp_info *ti)
{
	socklen_t len = sizeof(*ti);

	memset(ti, 0, sizeof(*ti));
	return nf_real.getsockopt(fd, IPPROTO_TCP, TCP_INFO, ti, &len);
}

/* Adds fd to active[]. Caller holds alock. 0 or -ENOMEM. */
static int active_add(struct nf_audit *au, int fd)
{
	int n = atomic_load(&nf_audit_nactive);

	if (n == active_cap) {
		int ncap = active_cap ? active_cap * 2 : 16;
		int *na = realloc(active, (size_t)ncap * sizeof(*na));

		if (!na)
			return -ENOMEM;
		active = na;
		active_cap = ncap;
	}
	active[n] = fd;
	au->aidx = n;
	atomic_store(&nf_audit_nactive, n + 1);
	return 0;
}

/* Takes au out of active[]. Caller holds alock. */
static void active_remove(struct nf_audit *au)
{
	if (au->aidx >= 0) {
		int last = atomic_load(&nf_audit_nactive) - 1;

		active[au->aidx] = active[last];
		if (au->aidx != last) {
			struct nf_conn *m = nf_conn_get(active[au->aidx]);

			if (m && m->au)
				m->au->aidx = au->aidx;
		}
		atomic_store(&nf_audit_nactive, last);
		au->aidx = -1;
	}
}

/* Empties the list of au. Caller holds alock. */
static void list_reset(struct nf_audit *au)
{
	active_remove(au);
	au->nwrites = 0;
	au->held = 0;
	au->nheld = 0;
	au->caller = NULL;
	au->wait_ns = 0;
	au->settled = 0;
}

/* The state of c, allocated on first use, never freed (the pointer is
 * published once, so close can test it without alock). Caller holds alock. */
static struct nf_audit *state_of(struct nf_conn *c)
{
	struct nf_audit *au = c->au;

	if (!au) {
		au = calloc(1, sizeof(*au));
		if (!au)
			return NULL;
		au->aidx = -1;
		__atomic_store_n(&c->au, au, __ATOMIC_RELEASE);
	}
	return au;
}

/*
 * Would Nagle hold a write of len now? kind as audit_kind(); *mss the last
 * MSS seen (0: unknown), updated; earlier: writes since the last read,
 * held: one of them was held. Asks TCP_INFO only when the answer is open:
 * a full segment, or TCP_NODELAY set by the program, is never held, and
 * after a held write the next small ones are held too (what is unacked
 * stays so until the peer answers, which it has no reason to do before
 * the program reads).
 */
static int held_now(struct nf_conn *c, int fd, size_t len, enum audit_kind kind, unsigned *mss,
		    int earlier, int held)
{
	struct tcp_info ti;

	if (*mss && len >= *mss)
		return 0;
	if (kind == AUDIT_ONLY && atomic_load(&c->prog_nodelay))
		return 0;
	if (*mss && held)
		return 1;
	if (tcp_info_of(fd, &ti) < 0)
		return 0;
	*mss = ti.tcpi_snd_mss;
	if (len >= ti.tcpi_snd_mss)
		return 0;
	return ti.tcpi_unacked > 0 || (kind == AUDIT_A_FIX && earlier);
}

/*
 * The first write after a read is held only if bytes the program sent
 * before that read are still unacknowledged: a program that pipelines.
 * One that waits for each answer (the peer's answer acknowledges the
 * request) never is, and asking TCP_INFO on every message would cost it a
 * system call per message. So after FIRST_TRUST first writes in a row
 * found not held, only one in FIRST_TRUST is asked about; a held one
 * starts the count again. (Split writes are caught by the second write,
 * always asked.)
 */
#define FIRST_TRUST 16u

/* Whether this first write after a read goes unasked. Caller holds alock. */
static int skip_first(struct nf_audit *au)
{
	if (au->clear_firsts < FIRST_TRUST)
		return 0;
	return ++au->skipped_firsts % FIRST_TRUST != 0;
}

/* A first write after a read was asked about: held or not. Caller holds alock. */
static void note_first(struct nf_audit *au, int held)
{
	if (held)
		au->clear_firsts = 0;
	else if (au->clear_firsts < FIRST_TRUST)
		au->clear_firsts++;
}

static int audit_send_begin(int fd, size_t len, void *caller, struct nf_audit_send *s)
{
	struct nf_conn *c;
	unsigned mss = 0, known;
	enum audit_kind kind;
	int earlier = 0, held = 0, skip = 0, saved;

	if (!nf_audit_enabled)
		return 0;
	saved = errno;
	c = nf_track_decided(fd); /* an inherited socket is decided on its first send */
	if (!c || (kind = audit_kind(c)) == NOT_AUDITED) {
		errno = saved;
		return 0;
	}
	pthread_mutex_lock(&alock);
	if (c->au) {
		mss = c->au->mss;
		earlier = c->au->nwrites > 0;
		held = c->au->nheld > 0;
		skip = !earlier && skip_first(c->au);
	}
	pthread_mutex_unlock(&alock);
	known = mss;
	s->c = c;
	s->fd = fd;
	s->caller = caller;
	s->held = skip ? 0 : held_now(c, fd, len, kind, &mss, earlier, held);
	if (mss != known || (!earlier && !skip)) {
		pthread_mutex_lock(&alock);
		if (state_of(c)) {
			c->au->mss = mss;
			if (!earlier)
				note_first(c->au, s->held);
		}
		pthread_mutex_unlock(&alock);
	}
	errno = saved;
	return 1;
}

/* Appends a write of n bytes to the list of au on fd. Caller holds alock. */
static void list_add(struct nf_audit *au, int fd, size_t n, int held, void *caller)
{
	if (au->nwrites == 0 && active_add(au, fd) < 0)
		return;
	if (au->nwrites < NF_AUDIT_MAXW) {
		au->writes[au->nwrites] = n;
		if (held)
			au->held |= 1u << au->nwrites;
	}
	au->nwrites++;
	if (!held)
		return;
	if (au->nheld++ == 0)
		au->caller = caller;
	au->settled = 0; /* a new held write: the next read or wait looks again */
}

static void audit_send_end(const struct nf_audit_send *s, ssize_t rc)
{
	struct nf_conn *c = s->c;
	struct nf_audit *au;
	int saved = errno;

	if (rc <= 0)
		return;
	pthread_mutex_lock(&alock);
	au = state_of(c);
	if (au) {
		list_add(au, s->fd, (size_t)rc, s->held, s->caller);
		au->rx_ns = 0; /* what the peer sends next may answer it: no gap */
	}
	pthread_mutex_unlock(&alock);
	errno = saved;
}

/* Copies the list of au into a finding. Caller holds alock. */
static void fill_finding(const struct nf_audit *au, int fd, const struct nf_conn *c,
			 int prevented, double stall_ms, struct nf_audit_finding *f)
{
	unsigned n = au->nwrites < NF_AUDIT_MAXW ? au->nwrites : NF_AUDIT_MAXW;

	f->event = NF_AUDIT_SPLIT_WRITE;
	f->ato_ms = 0;
	f->fd = fd;
	f->side = (enum nf_side)c->side;
	f->prevented = prevented;
	f->stall_ms = stall_ms;
	f->nwrites = au->nwrites;
	memcpy(f->writes, au->writes, n * sizeof(f->writes[0]));
	f->held = au->held;
	f->caller = au->caller;
}

/*
 * The program is about to read or wait on fd with held writes listed:
 * on a fix with audit=1 that is a prevented finding (filled into f, 1
 * returned); on an audit socket whose held bytes are still unsent the
 * stall clock starts. Caller holds alock.
 */
static int start_waiting(struct nf_conn *c, int fd, struct nf_audit_finding *f)
{
	struct nf_audit *au = c->au;
	struct tcp_info ti;

	if (!au || au->nheld == 0 || au->wait_ns || au->settled)
		return 0;
	au->settled = 1;
	if (audit_kind(c) == AUDIT_A_FIX) {
		fill_finding(au, fd, c, 1, 0, f);
		return 1;
	}
	if (tcp_info_of(fd, &ti) == 0 && ti.tcpi_notsent_bytes > 0) {
		au->wait_ns = nf_clock_now_ns();
		au->settled = 0;
	}
	return 0;
}

/* Starts the clock of fd, if audited, and logs a prevented finding. */
static void wait_on(int fd)
{
	struct nf_conn *c = audited(fd);
	struct nf_audit_finding f;
	int found;

	if (!c)
		return;
	pthread_mutex_lock(&alock);
	found = start_waiting(c, fd, &f);
	pthread_mutex_unlock(&alock);
	if (found)
		nf_audit_log_finding(&f);
}

/* Starts the stall clock of c if it has a write list (and logs a
 * prevented finding). Returns whether it has one. */
static int read_listed(struct nf_conn *c, int fd)
{
	struct nf_audit_finding f;
	int listed, found = 0, saved = errno;

	pthread_mutex_lock(&alock);
	listed = c->au && c->au->nwrites > 0;
	if (listed)
		found = start_waiting(c, fd, &f);
	pthread_mutex_unlock(&alock);
	if (found)
		nf_audit_log_finding(&f);
	errno = saved;
	return listed;
}

/* Every read of an audit socket is seen (the receive side); of a fix
 * with audit=1, only one behind a write list. */
static int audit_read_begin(int fd, void *caller, struct nf_audit_read *r)
{
	struct nf_conn *c;
	int listed;

	if (!(c = audited(fd)))
		return 0;
	listed = atomic_load_explicit(&nf_audit_nactive, memory_order_relaxed) > 0 &&
		 read_listed(c, fd);
	if (!listed && audit_kind(c) != AUDIT_ONLY)
		return 0;
	r->c = c;
	r->fd = fd;
	r->caller = caller;
	return 1;
}

static int read_would_retry(ssize_t rc, int err)
{
	return rc < 0 && (err == EAGAIN || err == EWOULDBLOCK || err == EINTR);
}

/* A read returned at now: ends the list of au, returning 1 with a
 * split_write finding in *f if it waited behind held writes. Caller
 * holds alock. */
static int end_list(struct nf_audit *au, const struct nf_audit_read *r,
		    unsigned long long now, struct nf_audit_finding *f)
{
	double ms;

	if (au->nwrites == 0)
		return 0;
	ms = au->wait_ns ? (double)(now - au->wait_ns) / 1e6 : 0;
	if (ms >= NF_AUDIT_MIN_STALL_MS)
		fill_finding(au, r->fd, r->c, 0, ms, f);
	list_reset(au);
	return ms >= NF_AUDIT_MIN_STALL_MS;
}

/*
 * A read of an audit socket returned rc at now: it becomes the last read
 * that returned data (or, at end of file or an error, there is none).
 * Returns 1 with the gap since the previous one in *g if it is a
 * candidate (nf_audit_recv_candidate): then that one returned data, and
 * the program sent nothing since. Caller holds alock.
 */
static int note_read(struct nf_audit *au, const struct nf_audit_read *r, ssize_t rc,
		     unsigned long long now, struct nf_audit_gap *g)
{
	int cand = 0;

	if (rc > 0 && au->rx_ns) {
		*g = (struct nf_audit_gap){ .first = au->rx_len, .second = (size_t)rc,
					    .gap_ns = now - au->rx_ns, .caller = r->caller };
		cand = nf_audit_recv_candidate(g);
	}
	au->rx_ns = rc > 0 ? now : 0;
	au->rx_len = rc > 0 ? (size_t)rc : 0;
	return cand;
}

static void audit_read_end(const struct nf_audit_read *r, ssize_t rc)
{
	struct nf_conn *c = r->c;
	struct nf_audit *au;
	struct nf_audit_finding f, rf;
	struct nf_audit_gap g;
	unsigned long long now;
	int found = 0, gap = 0, recv_side = audit_kind(c) == AUDIT_ONLY, saved = errno;

	if (read_would_retry(rc, saved))
		return;
	now = nf_clock_now_ns();
	pthread_mutex_lock(&alock);
	au = recv_side ? state_of(c) : c->au;
	if (au) {
		found = end_list(au, r, now, &f);
		gap = recv_side && note_read(au, r, rc, now, &g);
	}
	pthread_mutex_unlock(&alock);
	if (found)
		nf_audit_log_finding(&f);
	if (gap && nf_audit_recv_split(r->fd, (enum nf_side)c->side, &g, &rf))
		nf_audit_log_finding(&rf);
	errno = saved;
}

static void audit_wait_poll(const struct pollfd *fds, nfds_t nfds)
{
	int saved;

	if (atomic_load_explicit(&nf_audit_nactive, memory_order_relaxed) == 0 || !fds)
		return;
	saved = errno;
	for (nfds_t i = 0; i < nfds; i++)
		if (fds[i].fd >= 0 && (fds[i].events & (POLLIN | POLLRDNORM | POLLPRI)))
			wait_on(fds[i].fd);
	errno = saved;
}

static void audit_wait_select(int n, const fd_set *rfds)
{
	int saved;

	if (atomic_load_explicit(&nf_audit_nactive, memory_order_relaxed) == 0 || !rfds)
		return;
	saved = errno;
	for (int fd = 0; fd < n && fd < FD_SETSIZE; fd++)
		if (FD_ISSET(fd, rfds))
			wait_on(fd);
	errno = saved;
}

/* A copy of active[] (malloc'd, *n entries), or NULL. */
static int *active_copy(int *n)
{
	int *copy = NULL;

	pthread_mutex_lock(&alock);
	*n = atomic_load(&nf_audit_nactive);
	if (*n > 0) {
		copy = malloc((size_t)*n * sizeof(*copy));
		if (copy)
			memcpy(copy, active, (size_t)*n * sizeof(*copy));
	}
	pthread_mutex_unlock(&alock);
	return copy;
}

/* An epoll set cannot be read from here: every listed connection counts. */
static void audit_wait_all(void)
{
	int n, saved, *fds;

	if (atomic_load_explicit(&nf_audit_nactive, memory_order_relaxed) == 0)
		return;
	saved = errno;
	fds = active_copy(&n);
	for (int i = 0; fds && i < n; i++)
		wait_on(fds[i]);
	free(fds);
	errno = saved;
}

static void audit_forget(int fd)
{
	struct nf_conn *c;
	int saved;

	if (!nf_audit_enabled || !(c = nf_conn_get(fd)) ||
	    !__atomic_load_n(&c->au, __ATOMIC_ACQUIRE))
		return;
	saved = errno;
	pthread_mutex_lock(&alock);
	if (c->au) {
		list_reset(c->au);
		c->au->mss = 0;
		c->au->rx_ns = 0;
	}
	pthread_mutex_unlock(&alock);
	errno = saved;
}

static void audit_forget_range(unsigned first, unsigned last)
{
	int n, saved, *fds;

	if (!nf_audit_enabled || atomic_load(&nf_audit_nactive) == 0)
		return;
	saved = errno;
	fds = active_copy(&n);
	for (int i = 0; fds && i < n; i++)
		if ((unsigned)fds[i] >= first && (unsigned)fds[i] <= last)
			audit_forget(fds[i]);
	free(fds);
	errno = saved;
}

/* The entry points: none does its bookkeeping when re-entered from a
 * signal handler that interrupted the library (nf_guard.h). */

int nf_audit_send_begin(int fd, size_t len, void *caller, struct nf_audit_send *s)
{
	int rc;

	if (!nf_guard_enter())
		return 0;
	rc = audit_send_begin(fd, len, caller, s);
	nf_guard_leave();
	return rc;
}

void nf_audit_send_end(const struct nf_audit_send *s, ssize_t rc)
{
	if (!nf_guard_enter())
		return;
	audit_send_end(s, rc);
	nf_guard_leave();
}

int nf_audit_read_begin(int fd, void *caller, struct nf_audit_read *r)
{
	int rc;

	if (!nf_audit_enabled || !nf_guard_enter())
		return 0;
	rc = audit_read_begin(fd, caller, r);
	nf_guard_leave();
	return rc;
}

void nf_audit_read_end(const struct nf_audit_read *r, ssize_t rc)
{
	if (!nf_guard_enter())
		return;
	audit_read_end(r, rc);
	nf_guard_leave();
}

void nf_audit_wait_poll(const struct pollfd *fds, nfds_t nfds)
{
	if (!nf_guard_enter())
		return;
	audit_wait_poll(fds, nfds);
	nf_guard_leave();
}

void nf_audit_wait_select(int n, const fd_set *rfds)
{
	if (!nf_guard_enter())
		return;
	audit_wait_select(n, rfds);
	nf_guard_leave();
}

void nf_audit_wait_all(void)
{
	if (!nf_guard_enter())
		return;
	audit_wait_all();
	nf_guard_leave();
}

void nf_audit_forget(int fd)
{
	if (!nf_guard_enter())
		return;
	audit_forget(fd);
	nf_guard_leave();
}

void nf_audit_forget_range(unsigned first, unsigned last)
{
	if (!nf_guard_enter())
		return;
	audit_forget_range(first, last);
	nf_guard_leave();
}

/* The child's connections start with no write list: the writes listed
 * so far are the parent's, and the parent reports them. */
void nf_audit_atfork_child(void)
{
	pthread_mutex_init(&alock, NULL);
	while (atomic_load(&nf_audit_nactive) > 0) {
		int last = atomic_load(&nf_audit_nactive) - 1;
		struct nf_conn *c = nf_conn_get(active[last]);

		if (!c || !c->au || c->au->aidx != last) { /* not expected: stop safely */
			atomic_store(&nf_audit_nactive, 0);
			break;
		}
		list_reset(c->au); /* takes it out of active[] */
	}
	nf_audit_log_atfork_child();
}
