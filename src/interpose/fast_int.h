/*
 * fast_int.h - the first test of the read and write hooks: is there
 * anything for the library to do on this descriptor? A file, a pipe, a
 * UNIX or UDP socket, or a TCP socket whose rule is pass (never audited)
 * goes straight to libc, after a few loads and no call, so a program pays
 * nothing measurable where nothing stalls (issue: "within noise").
 */
#ifndef NF_FAST_INT_H
#define NF_FAST_INT_H

#include "core/nf_conn.h"
#include "process/nf_init.h"

/*
 * nf_leave_alone for the descriptors of the map only (0 past it): the
 * whole test of an exported hook, which then needs no stack frame (the
 * compiler sets one up before the first test when any path through it
 * calls a function); its slow path (NF_SLOW) asks nf_leave_alone again.
 */
static inline int nf_leave_alone_near(int fd)
{
	return (unsigned)fd < NF_CONN_LEAVE_FDS && __atomic_load_n(&nf_conn_leave[fd], __ATOMIC_ACQUIRE);
}

/*
 * 1 if a read or send on fd needs nothing from the library (see
 * nf_conn_leave): one byte load for the descriptors most programs have;
 * past the map, computed from the entry (a call), once initialised. 0
 * takes the full hook (and nf_init). errno kept.
 */
static inline int nf_leave_alone(int fd)
{
	if ((unsigned)fd < NF_CONN_LEAVE_FDS)
		return nf_leave_alone_near(fd);
	return atomic_load_explicit(&nf_ready, memory_order_acquire) && nf_conn_leaves_alone(fd);
}

/* The part of a hook past nf_leave_alone_near: out of line, and cold. */
#define NF_SLOW __attribute__((noinline))

#endif
