/*
 * conn.c - the fd table: per-socket state indexed by file descriptor.
 *
 * A directory of chunk pointers sized once, for the descriptor numbers the
 * process may have: its hard RLIMIT_NOFILE, or more -- up to the kernel's
 * fs.nr_open, at most RAISE_MAX -- so that a privileged program that
 * raises its hard limit later is still covered. A pointer per CHUNK fds:
 * 32 KiB for the default nr_open of 1,048,576, 512 KiB at most for a
 * raise (systemd sets nr_open to 2^30), untouched pages until used.
 * Chunks of CHUNK entries are allocated on first use and published with
 * a compare-and-swap, never freed; the loops over every chunk stop at the
 * highest one ever published. Lookups are two loads, no lock.
 */
#include "nf_conn.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nf_aside.h"

#define CHUNK_SHIFT NF_CONN_CHUNK_SHIFT
#define CHUNK (1 << CHUNK_SHIFT)
#define LIMIT_MAX (1 << 30)  /* the most the table covers, whatever the hard limit */
#define RAISE_MAX (1 << 24)  /* the most it covers beyond the hard limit */

_Atomic(struct nf_conn *) *nf_conn_dir;
int nf_conn_ndir;
static atomic_int nchunks; /* 1 + the highest chunk index ever published */
int nf_conn_fresh_is_unknown; /* start-up listing failed: trust nothing */

/* The hard RLIMIT_NOFILE, at least CHUNK and at most LIMIT_MAX. */
static int hard_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_max == RLIM_INFINITY ||
	    rl.rlim_max > LIMIT_MAX)
		return LIMIT_MAX;
	return rl.rlim_max < CHUNK ? CHUNK : (int)rl.rlim_max;
}

/*
 * /proc/sys/fs/nr_open, at most RAISE_MAX; 0 if it cannot be read. Raw
 * read and close: in the library those names are our own hooks. errno is
 * left as it was.
 */
static int kernel_fd_ceiling(void)
{
	int saved = errno, fd = open("/proc/sys/fs/nr_open", O_RDONLY | O_CLOEXEC);
	char buf[24], *end;
	ssize_t n;
	long v;

	if (fd < 0) {
		errno = saved;
		return 0;
	}
	n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
	syscall(SYS_close, fd);
	errno = saved;
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	v = strtol(buf, &end, 10);
	if (end == buf || v <= 0)
		return 0;
	return v > RAISE_MAX ? RAISE_MAX : (int)v;
}

/* Marks every fd listed in /proc/self/fd as UNKNOWN. -1 if unreadable. */
static int mark_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int self;

	if (!d)
		return -1;
	self = dirfd(d);
	while ((e = readdir(d)) != NULL) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);

		if (*end == '\0' && end != e->d_name && fd != self)
			nf_conn_reset((int)fd, NF_KIND_UNKNOWN);
	}
	closedir(d);
	return 0;
}

int nf_conn_init(int mark_open)
{
	int limit = hard_fd_limit(), ceiling = kernel_fd_ceiling();

	if (ceiling > limit)
		limit = ceiling;
	nf_conn_ndir = (limit + CHUNK - 1) >> CHUNK_SHIFT;
	nf_conn_dir = calloc((size_t)nf_conn_ndir, sizeof(*nf_conn_dir));
	if (!nf_conn_dir) {
		nf_conn_ndir = 0;
		return -ENOMEM;
	}
	memset(nf_conn_leave, 1, sizeof(nf_conn_leave)); /* every fd FRESH... */
	if (mark_open && mark_open_fds() < 0) /* ...but those open now */
		nf_conn_fresh_is_unknown = 1;
	if (nf_conn_fresh_is_unknown)
		memset(nf_conn_leave, 0, sizeof(nf_conn_leave));
	return 0;
}

int nf_conn_leaves_alone(int fd)
{
	struct nf_conn *c;

	if (nf_standing_aside())
		return 1;
	c = nf_conn_get(fd);
	switch (nf_conn_kind(c)) {
	case NF_KIND_FRESH:
	case NF_KIND_OTHER:
		return 1;
	case NF_KIND_TCP:
		switch (atomic_load(&c->action)) {
		case NF_ACT_PASS:
			return 1;
		case NF_ACT_NODELAY: /* TCP_NODELAY is set: nothing more, unless audited */
			return !c->opts.audit;
		default:
			return 0;
		}
	default:
		return 0;
	}
}

void nf_conn_publish(int fd)
{
	unsigned char v;

	if (fd < 0 || fd >= NF_CONN_LEAVE_FDS || !nf_conn_dir)
		return;
	do {
		v = (unsigned char)nf_conn_leaves_alone(fd);
		__atomic_store_n(&nf_conn_leave[fd], v, __ATOMIC_SEQ_CST);
	} while (nf_conn_leaves_alone(fd) != v);
}

void nf_conn_leave_all(void)
{
	for (int fd = 0; fd < NF_CONN_LEAVE_FDS; fd++)
		__atomic_store_n(&nf_conn_leave[fd], 1, __ATOMIC_SEQ_CST);
}

void nf_conn_each(void (*fn)(struct nf_conn *c, int fd))
{
	unsigned used = (unsigned)nf_conn_used();

	for (unsigned fd = 0; fd < used; fd++) {
		struct nf_conn *c = nf_conn_peek((int)fd);

		if (!c)
			fd |= CHUNK - 1; /* a chunk never made */
		else
			fn(c, (int)fd);
	}
}

int nf_conn_limit(void)
{
	return nf_conn_ndir << CHUNK_SHIFT;
}

int nf_conn_used(void)
{
	return atomic_load(&nchunks) << CHUNK_SHIFT;
}

struct nf_conn *nf_conn_get(int fd)
{
	return nf_conn_peek(fd);
}

static struct nf_conn *new_chunk(void)
{
	struct nf_conn *chunk = calloc(CHUNK, sizeof(*chunk));

	if (!chunk)
		return NULL;
	for (int i = 0; i < CHUNK; i++) {
		pthread_mutex_init(&chunk[i].lock, NULL);
		atomic_init(&chunk[i].action, NF_ACT_UNDECIDED);
	}
	return chunk;
}

/* Makes nchunks at least n. */
static void raise_nchunks(int n)
{
	int cur = atomic_load(&nchunks);

	while (cur < n && !atomic_compare_exchange_weak(&nchunks, &cur, n))
		;
}

struct nf_conn *nf_conn_ensure(int fd)
{
	struct nf_conn *c = nf_conn_get(fd), *chunk, *expected = NULL;

	if (c || fd < 0 || (fd >> CHUNK_SHIFT) >= nf_conn_ndir || nf_standing_aside())
		return c; /* standing aside: no malloc, whose mmap the program did not make */
	chunk = new_chunk();
	if (!chunk)
		return NULL;
	raise_nchunks((fd >> CHUNK_SHIFT) + 1); /* before it can be seen */
	if (!atomic_compare_exchange_strong_explicit(&nf_conn_dir[fd >> CHUNK_SHIFT], &expected,
						     chunk, memory_order_acq_rel,
						     memory_order_acquire)) {
		free(chunk); /* another thread published first: use theirs */
		chunk = expected;
	}
	return &chunk[fd & (CHUNK - 1)];
}

enum nf_kind nf_conn_kind(const struct nf_conn *c)
{
	int k;

	if (!c)
		return nf_conn_fresh_is_unknown ? NF_KIND_UNKNOWN : NF_KIND_FRESH;
	k = atomic_load_explicit(&c->kind, memory_order_acquire);
	if (k == NF_KIND_FRESH && nf_conn_fresh_is_unknown)
		return NF_KIND_UNKNOWN;
	return (enum nf_kind)k;
}

/* c's descriptor no longer names the socket c knew: a new generation, its
 * action undecided, what was learned of the program and of the
 * connection forgotten. auto_listed stays: see auto.c. */
static void another_socket(struct nf_conn *c)
{
	atomic_fetch_add(&c->gen, 1);
	atomic_store(&c->action, NF_ACT_UNDECIDED);
	atomic_store(&c->prog_nodelay, 0);
	atomic_store(&c->stdio, 0);
	atomic_store(&c->prog_cork, 0);
	atomic_store(&c->auto_quiet, 0);
}

void nf_conn_reset(int fd, enum nf_kind kind)
{
	struct nf_conn *c = nf_conn_ensure(fd);

	if (!c)
		return;
	another_socket(c);
	atomic_store_explicit(&c->kind, (int)kind, memory_order_release);
	nf_conn_publish(fd);
}

enum nf_kind nf_conn_settle(int fd, enum nf_kind kind)
{
	struct nf_conn *c = nf_conn_ensure(fd);
	int seen;

	if (!c)
		return kind;
	seen = atomic_load(&c->kind);
	if (nf_conn_kind(c) != NF_KIND_UNKNOWN)
		return (enum nf_kind)seen; /* settled by another thread */
	if (atomic_compare_exchange_strong(&c->kind, &seen, (int)kind)) {
		nf_conn_publish(fd);
		return kind;
	}
	return (enum nf_kind)seen;
}

void nf_conn_forget(int fd)
{
	struct nf_conn *c = nf_conn_get(fd);

	if (!c)
		return;
	another_socket(c);
	atomic_store_explicit(&c->kind, NF_KIND_FRESH, memory_order_release);
	nf_conn_publish(fd);
}

void nf_conn_forget_range(unsigned first, unsigned last)
{
	unsigned limit = (unsigned)atomic_load(&nchunks) << CHUNK_SHIFT; /* none beyond */

	if (limit == 0)
		return;
	if (last >= limit)
		last = limit - 1;
	for (unsigned fd = first; fd <= last && fd < limit; fd++) {
		if (!atomic_load_explicit(&nf_conn_dir[fd >> CHUNK_SHIFT], memory_order_acquire)) {
			fd |= CHUNK - 1; /* skip the whole unallocated chunk */
			continue;
		}
		nf_conn_forget((int)fd);
	}
}

void nf_conn_copy(int oldfd, int newfd)
{
	struct nf_conn *from = nf_conn_get(oldfd);
	enum nf_kind kind = nf_conn_kind(from);
	struct nf_conn *to;

	if (kind == NF_KIND_FRESH) {
		nf_conn_forget(newfd);
		return;
	}
	if (!from) {
		nf_conn_reset(newfd, kind);
		return;
	}
	to = nf_conn_ensure(newfd);
	if (!to)
		return;
	atomic_store(&to->kind, NF_KIND_FRESH); /* invisible while copying */
	atomic_fetch_add(&to->gen, 1);
	to->side = from->side;
	to->opts = from->opts;
	atomic_store(&to->prog_nodelay, atomic_load(&from->prog_nodelay));
	atomic_store(&to->stdio, atomic_load(&from->stdio));
	atomic_store(&to->prog_cork, atomic_load(&from->prog_cork));
	atomic_store(&to->action, atomic_load(&from->action));
	atomic_store_explicit(&to->kind, (int)kind, memory_order_release);
	nf_conn_publish(newfd);
}

void nf_conn_atfork_child(void)
{
	for (int i = 0, n = atomic_load(&nchunks); i < n; i++) {
		struct nf_conn *chunk = atomic_load(&nf_conn_dir[i]);

		for (int j = 0; chunk && j < CHUNK; j++) {
			pthread_mutex_init(&chunk[j].lock, NULL);
			/* auto: an entry a parent's thread had off its list at the
			 * fork (being checked, or just listed) is marked listed but
			 * on no list here: nothing would owe it a timer visit. The
			 * child rebuilds its list (nf_auto_atfork_child takes what is
			 * on it) and learns quiet anew. */
			atomic_store(&chunk[j].auto_listed, 0);
			atomic_store(&chunk[j].auto_quiet, 0);
		}
	}
}
