/*
 * nf_conn.h - per-socket state, in a table indexed by file descriptor.
 *
 * The table grows in chunks up to the highest descriptor the process could
 * ever have (its hard RLIMIT_NOFILE, or the kernel's fs.nr_open up to
 * 2^24); a chunk
 * once published is never freed or moved, so readers need no lock. An fd
 * whose chunk does not exist, or whose entry is NF_KIND_FRESH, is one the
 * library saw neither being created as a socket nor open at start-up: a
 * file, a pipe, or nothing.
 */
#ifndef NF_CONN_H
#define NF_CONN_H

#include <pthread.h>
#include <stdatomic.h>

#include "nf_policy.h"
#include "nf_real.h" /* struct nf_hot: nf_conn_leave */

enum nf_kind {
	NF_KIND_FRESH = 0, /* not seen as a socket: pass through, no syscall */
	NF_KIND_UNKNOWN,   /* open before we loaded, or received: classify on use */
	NF_KIND_OTHER,     /* not a TCP socket: pass through */
	NF_KIND_TCP,       /* a TCP socket over IPv4 or IPv6 */
};

/* A TCP socket's action before the policy has been applied to it. */
#define NF_ACT_UNDECIDED (-1)

struct nf_coalesce;
struct nf_audit;

struct nf_conn {
	_Atomic int kind;        /* enum nf_kind */
	_Atomic int action;      /* enum nf_action, or NF_ACT_UNDECIDED */
	int side;                /* enum nf_side, once decided */
	struct nf_opts opts;     /* valid once action is decided */
	_Atomic int prog_nodelay;/* what the program itself asked for */
	_Atomic int stdio;       /* a FILE may write it (fdopen): never buffered */
	_Atomic int prog_cork;   /* auto: the program's own TCP_CORK */
	_Atomic int auto_listed; /* auto: on the list of sockets to check */
	_Atomic unsigned long long auto_since; /* auto: first send since the
				    last check (ns), or 0 */
	int auto_next;           /* auto: the next listed fd, or -1 */
	_Atomic int auto_sent;   /* auto: a send since the program's last read
				    or wait */
	_Atomic int auto_more;   /* auto: a second one, since the last check */
	_Atomic unsigned auto_quiet; /* auto: checks in a row of one send each
				    that found nothing held (auto.c) */
	_Atomic unsigned gen;    /* bumped when the fd stops being this socket */
	pthread_mutex_t lock;    /* guards *co (audit state has its own lock) */
	struct nf_coalesce *co;  /* coalesce buffer, made once under lock and
				    published (release store), never freed:
				    read without lock by an acquire load */
	struct nf_audit *au;     /* audit state, lazily allocated */
};

/*
 * Sizes the table from the larger of the hard RLIMIT_NOFILE and fs.nr_open
 * (when /proc is readable; at most 2^24). mark_open: when 1, every fd
 * open right now is marked NF_KIND_UNKNOWN (from /proc/self/fd); if that
 * listing fails, every FRESH fd is treated as UNKNOWN instead. Returns 0 or
 * -ENOMEM. Called once, from initialisation.
 */
int nf_conn_init(int mark_open);

/* The table (conn.c): a directory of nf_conn_ndir chunk pointers, each
 * chunk 1 << NF_CONN_CHUNK_SHIFT entries. Read through nf_conn_peek. */
#define NF_CONN_CHUNK_SHIFT 8
extern _Atomic(struct nf_conn *) *nf_conn_dir;
extern int nf_conn_ndir;
extern int nf_conn_fresh_is_unknown; /* start-up listing failed */

/* The entry of fd, or NULL if it was never allocated: two loads, no lock,
 * inlined into the hooks' first test. */
static inline struct nf_conn *nf_conn_peek(int fd)
{
	struct nf_conn *chunk;

	if ((unsigned)fd >> NF_CONN_CHUNK_SHIFT >= (unsigned)nf_conn_ndir)
		return NULL;
	chunk = atomic_load_explicit(&nf_conn_dir[(unsigned)fd >> NF_CONN_CHUNK_SHIFT],
				     memory_order_acquire);
	return chunk ? &chunk[fd & ((1 << NF_CONN_CHUNK_SHIFT) - 1)] : NULL;
}

/* The entry of fd, or NULL if it was never allocated. Lock-free. */
struct nf_conn *nf_conn_get(int fd);

/*
 * The hooks' first test, one byte per descriptor below NF_CONN_LEAVE_FDS
 * on one page: 1 when a read or send on fd needs nothing from the library
 * (fd is not a TCP socket: never seen as one while the start-up listing
 * is trusted, or classified as another kind; or a TCP socket whose rule
 * is pass, or nodelay without audit=1: its option is set), else 0 (also
 * before initialisation). Every change of an entry's kind, and every
 * decision of its action, republishes it (nf_conn_publish); a coalesce
 * socket retired to nodelay (dup, disconnect, shutdown, fdopen) keeps its
 * 0 until then: the hooks do nothing for it, a little slower.
 */
#define NF_CONN_LEAVE_FDS NF_HOT_LEAVE
#define nf_conn_leave (nf_hot.leave)

/* What fd's byte of nf_conn_leave says for its entry now (computed, for
 * any fd): 1 or 0. */
int nf_conn_leaves_alone(int fd);

/* Recomputes fd's byte of nf_conn_leave from its entry, until it holds
 * for the entry as it is after the store (another thread may change the
 * entry meanwhile; the last one's state wins). */
void nf_conn_publish(int fd);

/* Sets every byte of nf_conn_leave: every descriptor left alone, those
 * without an entry too (the library stands aside: nf_aside.h, whose flag
 * nf_conn_leaves_alone also reads, so that no later publish undoes it). */
void nf_conn_leave_all(void);

/* The entry of fd, allocating its chunk; NULL if fd is out of range or
 * memory runs out. */
struct nf_conn *nf_conn_ensure(int fd);

/* The kind of fd as the hooks should see it (FRESH becomes UNKNOWN when
 * the start-up listing failed). */
enum nf_kind nf_conn_kind(const struct nf_conn *c);

/* Marks fd as kind with an undecided action; entry allocated if needed. */
void nf_conn_reset(int fd, enum nf_kind kind);

/*
 * An UNKNOWN fd was classified as kind: recorded unless another thread
 * got there first (its action and buffered bytes are kept, the generation
 * unchanged). Returns the kind fd now has.
 */
enum nf_kind nf_conn_settle(int fd, enum nf_kind kind);

/* fd was closed: back to FRESH (its buffers, if any, stay allocated). */
void nf_conn_forget(int fd);

/* fds first..last were closed: forget the ones that have an entry. */
void nf_conn_forget_range(unsigned first, unsigned last);

/* newfd now refers to the same socket as oldfd: copy what we know. */
void nf_conn_copy(int oldfd, int newfd);

/* In a forked child: every entry lock may have been held by a thread
 * that does not exist here; make them all usable again. */
void nf_conn_atfork_child(void);

/* Upper bound (exclusive) of fds the table can hold. */
int nf_conn_limit(void);

/* Upper bound (exclusive) of fds the table has ever held an entry for. */
int nf_conn_used(void);

/* Calls fn(c, fd) for the entry of every fd below nf_conn_used(), in
 * order, skipping the chunks never made. */
void nf_conn_each(void (*fn)(struct nf_conn *c, int fd));

#endif
