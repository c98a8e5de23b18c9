/*
 * nf_real.h - the one table of the real libc functions behind the hooks.
 *
 * Everything the library does to the kernel goes through nf_real, never
 * through the interposed names, so its own work is never intercepted again.
 */
#ifndef NF_REAL_H
#define NF_REAL_H

#include <aio.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "nf_libc.h" /* before the list: musl's macros undone */
#include "nf_hook_list.h"

/* lio_listio's list: musl restrict-qualifies the pointers in it. */
#ifdef __GLIBC__
typedef struct aiocb *const *nf_lio_list;
#else
typedef struct aiocb *restrict const *nf_lio_list;
#endif

/* The flags of recvmmsg and sendmmsg: int in glibc, unsigned int in musl. */
#ifdef __GLIBC__
typedef int nf_mmsg_flags;
#else
typedef unsigned nf_mmsg_flags;
#endif

/* One field per row of NF_HOOKS_REAL: struct nf_real_table { ssize_t
 * (*write)(int, const void *, size_t); ... }. */
#define NF_REAL_FIELD(name, ret, params, need, attr) ret(*name) params attr;
struct nf_real_table {
	NF_HOOKS_REAL(NF_REAL_FIELD)
	/* Not hooks, filled by nf_real_init too so that unit tests can fake
	 * them: libc's getsockopt (no hook of ours), and send as the raw system
	 * call, which is no cancellation point, for a send made with a lock
	 * held (coalesce.c). */
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	ssize_t (*send_nocancel)(int, const void *, size_t, int);
};
#undef NF_REAL_FIELD

/*
 * The table shares one 4 KiB page with the hooks' first test (one byte
 * per low descriptor, nf_conn_leave in nf_conn.h): a call the library
 * leaves alone reads that page and nothing else of ours. Where every
 * system call empties the TLB (page-table isolation), each further page
 * the call touches costs a page walk. Defined in hot.c.
 */
#define NF_HOT_LEAVE 3440
struct nf_hot {
	struct nf_real_table real;
	unsigned char leave[NF_HOT_LEAVE];
};
_Static_assert(sizeof(struct nf_hot) <= 4096, "nf_hot must fit one page");
extern struct nf_hot nf_hot;
#define nf_real (nf_hot.real)

/*
 * Resolves every entry with dlsym(RTLD_NEXT). Aborts with a message if an
 * NF_REQUIRED symbol is missing or resolves back to this library;
 * NF_OPTIONAL ones (nf_hook_list.h: close_range, closefrom, fcntl64,
 * pwritev2, execveat, the _IO_ names, the fortified __*_chk: not in musl;
 * posix_close: not in glibc 2.36) are left NULL. Called once, from
 * nf_init().
 */
void nf_real_init(void);

/* libc's abort, also before the table is ready (our abort is a hook). */
void nf_real_abort(void) __attribute__((noreturn));

#endif
