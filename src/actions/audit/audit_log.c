/*
 * audit_log.c - the audit's JSON lines: one "split_write" or "recv_split"
 * object per finding, identical findings counted into "repeat" lines, and
 * one "summary" object per peer and kind of finding at exit. A repeat or
 * summary line says which kind it counts ("of").
 *
 * The peer of a finding, for repeats and summaries, is the address a config
 * rule would match: the remote end of a connected socket, the local end of
 * an accepted one. Not the descriptor nor the other end's port: a server
 * with a thousand clients, or a client with a connection per request,
 * repeats one pattern, not a thousand.
 *
 * Repeats: a finding identical to an earlier one (same kind, side, peer,
 * write or piece sizes, held writes, caller) is logged in full REPEAT_FULL
 * times; after that "repeat" lines (without the fields that vary: fd, and
 * the other end's address) count the rest, one line a pattern at most
 * every HOLD_NS (or REPEAT_EVERY findings). A finding that comes sooner
 * is counted, and the library's timer thread (nf_timer.h) writes the count
 * HOLD_NS after that pattern's last line: a count is never held longer, so
 * whatever ends the process later (a signal's default action, SIGKILL, a
 * crash, when no hook of ours can run) finds it in the log. A process
 * whose findings come no faster never starts the timer. NREPS patterns are
 * tracked; the least recent one gives its slot up, with its count logged.
 *
 * Every line is written under rlock, and a count is cleared with the line
 * that holds it: whoever takes rlock next (the timer, exit, a finding)
 * sees each finding either in the log or pending, never both, never
 * neither. So no line may call what can wait on a lock a finding's thread
 * holds outside rlock: the caller's name (dladdr, the loader's lock) is
 * taken before.
 */
#include "nf_audit.h"
#include "core/nf_guard.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nf_fnv.h"
#include "nf_json.h"
#include "core/nf_aside.h"
#include "core/nf_clock.h"
#include "core/nf_log.h"
#include "core/nf_timer.h"

#define REPEAT_FULL  3
#define REPEAT_EVERY 100
#define HOLD_NS      500000000ull /* the longest a count waits for its line */
#define NREPS        256   /* distinct findings tracked; the oldest is reused */
#define NPEERS       256   /* peers summarised; more are counted as "*" */
#define ADDR_LEN     64    /* "[v6]:port" */
#define LINE_LEN     2048
#define CALLER_LEN   512

/* A finding with its addresses and caller, as it is logged. */
struct entry {
	struct nf_audit_finding f;
	char local[ADDR_LEN];
	char peer[ADDR_LEN];
	char caller[CALLER_LEN];
};

/* One distinct finding and its count since its last line. */
struct rep {
	unsigned long long sig;
	struct entry e;
	unsigned long seen;
	unsigned long pending;     /* counted, not logged yet */
	double pending_total, pending_worst;
	unsigned long long last_ns; /* when its last line was written */
	unsigned long long used_ns; /* for reuse: the least recent goes */
};

struct peer {
	enum nf_audit_event event;
	enum nf_side side;
	char addr[ADDR_LEN];
	unsigned long findings, prevented;
	double total, worst;
};

static pthread_mutex_t rlock = PTHREAD_MUTEX_INITIALIZER;
static struct rep reps[NREPS];
static int nreps;
static struct peer peers[NPEERS];
static int npeers;
static atomic_int exited;
static _Atomic unsigned long long flush_at; /* earliest pending count's line; 0: none */
static pid_t owner; /* the process the counts belong to; 0 before any */

/* --- a line under construction --- */

struct line {
	char s[LINE_LEN];
	size_t n;
};

static void put(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (l->n >= sizeof(l->s))
		return;
	va_start(ap, fmt);
	k = vsnprintf(l->s + l->n, sizeof(l->s) - l->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		l->n += (size_t)k;
}

/* Appends s as a JSON string, escaped. */
static void put_str(struct line *l, const char *s)
{
	char esc[NF_JSON_CHAR_MAX];

	put(l, "\"");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		put(l, "%s", nf_json_char(*p, esc));
	put(l, "\"");
}

static void put_ms(struct line *l, const char *key, int known, double ms)
{
	if (known)
		put(l, ",\"%s\":%.3f", key, ms);
	else
		put(l, ",\"%s\":null", key);
}

/* Ends the line with "}\n" and writes it; a line too long is cut to valid JSON. */
static void emit(struct line *l)
{
	if (l->n > sizeof(l->s) - 64) {
		l->n = 0;
		put(l, "{\"event\":\"truncated\"");
	}
	put(l, "}\n");
	nf_log_record(l->s, l->n);
}

/* "event", "time" (ISO 8601 UTC, ms), "pid", "prog". */
static void put_head(struct line *l, const char *event)
{
	struct timespec ts;
	struct tm tm;
	char t[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm);
	l->n = 0;
	put(l, "{\"event\":\"%s\",\"time\":\"%s.%03ldZ\",\"pid\":%ld,\"prog\":", event, t,
	    ts.tv_nsec / 1000000, (long)getpid());
	put_str(l, program_invocation_short_name);
}

/* --- describing a finding --- */

/* "127.0.0.1:80" or "[::1]:80"; an IPv4-mapped address as IPv4. */
static void addr_str(const struct sockaddr_storage *ss, char *out, size_t outlen)
{
	char a[INET6_ADDRSTRLEN];
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

	if (ss->ss_family == AF_INET && inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a))) {
		snprintf(out, outlen, "%s:%u", a, ntohs(s4->sin_port));
	} else if (ss->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr) &&
		   inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], a, sizeof(a))) {
		snprintf(out, outlen, "%s:%u", a, ntohs(s6->sin6_port));
	} else if (ss->ss_family == AF_INET6 &&
		   inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a))) {
		snprintf(out, outlen, "[%s]:%u", a, ntohs(s6->sin6_port));
	} else {
		snprintf(out, outlen, "?");
	}
}

static void addresses(struct entry *e)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	memset(&ss, 0, sizeof(ss));
	if (getsockname(e->f.fd, (struct sockaddr *)&ss, &len) < 0)
		ss.ss_family = AF_UNSPEC;
	addr_str(&ss, e->local, sizeof(e->local));
	len = sizeof(ss);
	memset(&ss, 0, sizeof(ss));
	if (getpeername(e->f.fd, (struct sockaddr *)&ss, &len) < 0)
		ss.ss_family = AF_UNSPEC;
	addr_str(&ss, e->peer, sizeof(e->peer));
}

/* "libfoo.so+0x1234 (function+0x56)", from the return address. */
static void caller_str(void *ra, char *out, size_t outlen)
{
	Dl_info di;
	const char *file, *slash;

	if (!ra || !dladdr(ra, &di)) {
		snprintf(out, outlen, "%p", ra);
		return;
	}
	file = di.dli_fname && *di.dli_fname ? di.dli_fname : program_invocation_name;
	slash = strrchr(file, '/');
	file = slash ? slash + 1 : file;
	if (di.dli_sname && di.dli_saddr)
		snprintf(out, outlen, "%s+0x%lx (%s+0x%lx)", file,
			 (unsigned long)((char *)ra - (char *)di.dli_fbase), di.dli_sname,
			 (unsigned long)((char *)ra - (char *)di.dli_saddr));
	else
		snprintf(out, outlen, "%s+0x%lx", file,
			 (unsigned long)((char *)ra - (char *)di.dli_fbase));
}

/* The address a rule matches: the peer, or the local end if accepted. */
static const char *rule_addr(const struct entry *e)
{
	return e->f.side == NF_SIDE_ACCEPT ? e->local : e->peer;
}

/* "fd","side","local","peer" of a finding; of a repeat only "side" and
 * the address a rule matches. */
static void put_where(struct line *l, const struct entry *e, int repeat)
{
	const char *side = e->f.side == NF_SIDE_ACCEPT ? "accept" : "connect";

	if (repeat)
		put(l, ",\"side\":\"%s\",\"%s\":\"%s\"", side,
		    e->f.side == NF_SIDE_ACCEPT ? "local" : "peer", rule_addr(e));
	else
		put(l, ",\"fd\":%d,\"side\":\"%s\",\"local\":\"%s\",\"peer\":\"%s\"", e->f.fd,
		    side, e->local, e->peer);
}

static const char *event_name(enum nf_audit_event ev)
{
	return ev == NF_AUDIT_RECV_SPLIT ? "recv_split" : "split_write";
}

/* "writes":[..],"held":[..] of a split_write; "pieces":[..] of a recv_split. */
static void put_sizes(struct line *l, const struct nf_audit_finding *f)
{
	unsigned n = f->nwrites < NF_AUDIT_MAXW ? f->nwrites : NF_AUDIT_MAXW;
	const char *sep = "";

	put(l, ",\"%s\":[", f->event == NF_AUDIT_RECV_SPLIT ? "pieces" : "writes");
	for (unsigned i = 0; i < n; i++, sep = ",")
		put(l, "%s%zu", sep, f->writes[i]);
	put(l, "]");
	if (f->event == NF_AUDIT_RECV_SPLIT)
		return;
	if (f->nwrites > n)
		put(l, ",\"more_writes\":%u", f->nwrites - n);
	put(l, ",\"held\":[");
	sep = "";
	for (unsigned i = 0; i < n; i++)
		if (f->held & (1u << i)) {
			put(l, "%s%u", sep, i);
			sep = ",";
		}
	put(l, "]");
}

/* The sizes and "caller". */
static void put_pattern(struct line *l, const struct entry *e)
{
	put_sizes(l, &e->f);
	put(l, ",\"caller\":");
	put_str(l, e->caller);
}

static void log_full(const struct entry *e)
{
	struct line l;

	put_head(&l, event_name(e->f.event));
	put_where(&l, e, 0);
	put_pattern(&l, e);
	put_ms(&l, "stall_ms", !e->f.prevented, e->f.stall_ms);
	if (e->f.prevented)
		put(&l, ",\"prevented\":true");
	if (e->f.event == NF_AUDIT_RECV_SPLIT)
		put(&l, ",\"ato_ms\":%.3f", e->f.ato_ms);
	emit(&l);
}

static void log_repeat(const struct entry *e, unsigned long count, double total, double worst)
{
	struct line l;

	put_head(&l, "repeat");
	put(&l, ",\"of\":\"%s\"", event_name(e->f.event));
	put_where(&l, e, 1);
	put_pattern(&l, e);
	put(&l, ",\"count\":%lu", count);
	put_ms(&l, "total_stall_ms", !e->f.prevented, total);
	put_ms(&l, "worst_stall_ms", !e->f.prevented, worst);
	if (e->f.prevented)
		put(&l, ",\"prevented\":true");
	emit(&l);
}

/* --- counting --- */

/* FNV-1a over what makes two findings identical (see top). */
static unsigned long long signature(const struct entry *e)
{
	unsigned long long h = NF_FNV_INIT;
	const struct nf_audit_finding *f = &e->f;
	unsigned n = f->nwrites < NF_AUDIT_MAXW ? f->nwrites : NF_AUDIT_MAXW;
	const char *addr = rule_addr(e);
	const void *parts[] = {
		&f->event, &f->side, addr, &f->nwrites, f->writes, &f->held, &f->caller,
		&f->prevented,
	};
	const size_t lens[] = {
		sizeof(f->event), sizeof(f->side), strlen(addr), sizeof(f->nwrites),
		n * sizeof(f->writes[0]), sizeof(f->held), sizeof(f->caller), sizeof(f->prevented),
	};

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		h = nf_fnv(h, parts[i], lens[i]);
	return h;
}

/* Writes r's pending count, if any, as a repeat line at now, and clears
 * it. Under rlock. */
static void flush_rep(struct rep *r, unsigned long long now)
{
	if (r->pending == 0)
		return;
	log_repeat(&r->e, r->pending, r->pending_total, r->pending_worst);
	r->pending = 0;
	r->pending_total = r->pending_worst = 0;
	r->last_ns = now;
}

/*
 * The slot of sig, a free one, or the least recently used, whose pending
 * count (if any) is written first. Under rlock.
 */
static struct rep *rep_slot(unsigned long long sig, unsigned long long now, int *fresh)
{
	struct rep *old = &reps[0];

	for (int i = 0; i < nreps; i++) {
		if (reps[i].sig == sig) {
			*fresh = 0;
			return &reps[i];
		}
		if (reps[i].used_ns < old->used_ns)
			old = &reps[i];
	}
	*fresh = 1;
	if (nreps < NREPS)
		return &reps[nreps++];
	flush_rep(old, now);
	return old;
}

/* The summary of e's peer and kind (see top); past NPEERS - 1 of them,
 * the last slot counts all the others, as peer "*". Under rlock. */
static struct peer *peer_of(const struct entry *e)
{
	const char *addr = rule_addr(e);
	struct peer *p;

	for (int i = 0; i < npeers; i++)
		if (peers[i].event == e->f.event && peers[i].side == e->f.side &&
		    strcmp(peers[i].addr, addr) == 0)
			return &peers[i];
	if (npeers == NPEERS)
		return &peers[NPEERS - 1];
	p = &peers[npeers++];
	p->event = e->f.event;
	p->side = e->f.side;
	snprintf(p->addr, sizeof(p->addr), "%s", npeers == NPEERS ? "*" : addr);
	return p;
}

static void count_peer(const struct entry *e)
{
	struct peer *p = peer_of(e);

	p->findings++;
	if (e->f.prevented) {
		p->prevented++;
		return;
	}
	p->total += e->f.stall_ms;
	if (e->f.stall_ms > p->worst)
		p->worst = e->f.stall_ms;
}

/*
 * May r's count wait at now for the timer? Not past REPEAT_EVERY, nor once
 * its last line is HOLD_NS old, nor once exit has written the counts (the
 * timer may not run again), nor with no timer thread.
 */
static int may_hold(const struct rep *r, unsigned long long now)
{
	return r->pending < REPEAT_EVERY && now - r->last_ns < HOLD_NS &&
	       !atomic_load(&exited) && !nf_timer_failed();
}

/*
 * Counts e at now and writes what is due: e in full, or its pattern's
 * count. Returns when the count it leaves pending must be written (0:
 * none left). Under rlock.
 */
static unsigned long long count_rep(const struct entry *e, unsigned long long now)
{
	int fresh;
	unsigned long long sig = signature(e);
	struct rep *r = rep_slot(sig, now, &fresh);

	if (fresh) {
		memset(r, 0, sizeof(*r));
		r->sig = sig;
		r->e = *e;
	}
	r->used_ns = now;
	if (++r->seen <= REPEAT_FULL) {
		log_full(e);
		r->last_ns = now;
		return 0;
	}
	r->pending++;
	r->pending_total += e->f.stall_ms;
	if (e->f.stall_ms > r->pending_worst)
		r->pending_worst = e->f.stall_ms;
	if (may_hold(r, now))
		return r->last_ns + HOLD_NS;
	flush_rep(r, now);
	return 0;
}

/*
 * Writes every pending count due at now (all: every one), and returns the
 * time of the next, also published in flush_at (0: none). Under rlock.
 */
static unsigned long long flush_pending(unsigned long long now, int all)
{
	unsigned long long next = 0;

	for (int i = 0; i < nreps; i++) {
		struct rep *r = &reps[i];
		unsigned long long due = r->last_ns + HOLD_NS;

		if (r->pending == 0)
			continue;
		if (all || now >= due)
			flush_rep(r, now);
		else if (next == 0 || due < next)
			next = due;
	}
	atomic_store(&flush_at, next);
	return next;
}

/* A count is pending until due: does the timer need arming for it (it
 * is not due by an earlier one)? Under rlock. */
static int hold_until(unsigned long long due)
{
	unsigned long long at = atomic_load(&flush_at);

	if (at && at <= due)
		return 0;
	atomic_store(&flush_at, due);
	return 1;
}

/* The timer looks by due; if it could not be started, what is pending
 * is written now. */
static void arm(unsigned long long due)
{
	nf_timer_arm(due);
	if (!nf_timer_failed())
		return;
	pthread_mutex_lock(&rlock);
	flush_pending(nf_clock_now_ns(), 1);
	pthread_mutex_unlock(&rlock);
}

/* e's addresses and caller, taken before rlock (see top). */
static void describe(struct entry *e)
{
	addresses(e);
	caller_str(e->f.caller, e->caller, sizeof(e->caller));
}

void nf_audit_log_finding(const struct nf_audit_finding *f)
{
	struct entry e = { .f = *f };
	unsigned long long now = nf_clock_now_ns(), due;
	int saved = errno;

	describe(&e);
	pthread_mutex_lock(&rlock);
	if (!owner)
		owner = getpid();
	count_peer(&e);
	due = count_rep(&e, now);
	if (due && !hold_until(due))
		due = 0;
	pthread_mutex_unlock(&rlock);
	if (due)
		arm(due);
	errno = saved;
}

unsigned long long nf_audit_flush_due(unsigned long long now)
{
	unsigned long long at = atomic_load(&flush_at);

	if (at == 0 || now < at)
		return at;
	pthread_mutex_lock(&rlock);
	at = flush_pending(now, 0);
	pthread_mutex_unlock(&rlock);
	return at;
}

static void log_summary(const struct peer *p)
{
	struct line l;

	put_head(&l, "summary");
	put(&l, ",\"of\":\"%s\"", event_name(p->event));
	put(&l, ",\"side\":\"%s\",\"%s\":", p->side == NF_SIDE_ACCEPT ? "accept" : "connect",
	    p->side == NF_SIDE_ACCEPT ? "local" : "peer");
	put_str(&l, p->addr);
	put(&l, ",\"findings\":%lu,\"prevented\":%lu,\"total_stall_ms\":%.3f,"
		"\"worst_stall_ms\":%.3f", p->findings, p->prevented, p->total, p->worst);
	emit(&l);
}

/*
 * Exit may come from a signal handler that interrupted a thread holding
 * rlock: try for up to a second rather than hang the exit.
 */
static int lock_at_exit(void)
{
	struct timespec ms = { 0, 1000000 };

	for (int i = 0; i < 1000; i++) {
		if (pthread_mutex_trylock(&rlock) == 0)
			return 1;
		nanosleep(&ms, NULL);
	}
	return 0;
}

/*
 * Nothing when nothing was counted, or the caller is not the process that
 * counted: a vfork child calling _exit shares our memory (no atfork
 * handler ran in it), and must neither write our summaries nor mark them
 * written; nor once the library stands aside (nf_aside.h: not even the
 * getpid).
 */
void nf_audit_log_exit(void)
{
	int saved = errno;

	if (!owner || nf_standing_aside() || owner != getpid() ||
	    !nf_guard_enter()) /* re-entered from a handler */
		return;
	if (atomic_exchange(&exited, 1) || !lock_at_exit()) {
		nf_guard_leave();
		errno = saved;
		return;
	}
	flush_pending(nf_clock_now_ns(), 1);
	for (int i = 0; i < npeers; i++)
		log_summary(&peers[i]);
	pthread_mutex_unlock(&rlock);
	nf_guard_leave();
	errno = saved;
}

void nf_audit_log_atfork_child(void)
{
	pthread_mutex_init(&rlock, NULL);
	owner = 0;
	nreps = 0;
	atomic_store(&flush_at, 0);
	npeers = 0;
	memset(peers, 0, sizeof(peers));
}
