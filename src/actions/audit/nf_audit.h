/*
 * nf_audit.h - the audit action: finding the split writes Nagle holds and
 * the reads that stall behind them, without changing anything the program
 * or the network sees (no option is set, every call goes out unchanged).
 *
 * A write is "held" when it is smaller than the MSS, earlier bytes of the
 * connection are unacknowledged and TCP_NODELAY is off (TCP_INFO, asked
 * before the send). When the program next reads or waits on the socket
 * and the held bytes are still unsent (tcpi_notsent_bytes > 0), the stall
 * clock starts; it stops when a read on the socket returns (data, EOF or
 * an error other than EAGAIN/EINTR): that is one finding, if the clock ran
 * NF_AUDIT_MIN_STALL_MS or more (less is an answer already there, or an
 * ACK that came at once: no stall worth a line). Every such read also
 * starts a new list of writes.
 *
 * With audit=1 on a nodelay or coalesce rule, the same test without the
 * TCP_NODELAY condition (and with "an earlier write since the last read"
 * standing for "unacknowledged", since coalesce sends nothing yet) finds
 * what the fix prevented; those findings have no stall ("stall_ms":null).
 *
 * The receive side (audit action only): the peer's split write, stalled
 * by our own delayed ACK. A read returns a small piece, and the next read
 * that returns data, with no send of the program on the socket between
 * them, comes as long after it as the kernel's delayed ACK takes: the
 * peer's Nagle held its second piece until our ACK of the first came
 * (audit_recv.c has the rule). That is one "recv_split" finding, whose
 * fix is quickack on this side, for the peer cannot be changed from here.
 *
 * Cost: a process with no audit in its policy pays one load of a global
 * per send or read and one atomic load per wait.
 */
#ifndef NF_AUDIT_H
#define NF_AUDIT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <poll.h>

#include "nf_policy.h"
#include "core/nf_conn.h"

#define NF_AUDIT_MAXW 16 /* write sizes kept per list; more are only counted */
#define NF_AUDIT_MIN_STALL_MS 1.0 /* a shorter wait is not a finding */

/* Is audit anywhere in the policy? Set once at initialisation. */
extern int nf_audit_enabled;

/* Connections whose write list is not empty; read lock-free by the hooks. */
extern atomic_int nf_audit_nactive;

/* What a finding is. */
enum nf_audit_event {
	NF_AUDIT_SPLIT_WRITE = 0, /* the program's own writes, held by its Nagle */
	NF_AUDIT_RECV_SPLIT,      /* the peer's, held until our delayed ACK */
};

/* One finding, as audit.c hands it to audit_log.c. */
struct nf_audit_finding {
	enum nf_audit_event event;
	int fd;
	enum nf_side side;
	int prevented;          /* audit=1 on a fix: no stall was measured */
	double stall_ms;
	unsigned nwrites;       /* all writes of the list; recv_split: 2 pieces */
	size_t writes[NF_AUDIT_MAXW]; /* recv_split: the sizes the two reads returned */
	uint32_t held;          /* bit i: writes[i] was held (recv_split: 0) */
	void *caller;           /* return address of the first held write, or
				   of the read that waited (recv_split) */
	double ato_ms;          /* recv_split: the kernel's tcpi_ato, in ms */
};

/* What a send hook keeps between nf_audit_send_begin and _end. */
struct nf_audit_send {
	struct nf_conn *c;
	int fd;
	int held;
	void *caller;
};

/* What a read hook keeps between nf_audit_read_begin and _end. */
struct nf_audit_read {
	struct nf_conn *c;
	int fd;
	void *caller;           /* the return address in the libc-named function */
	int quickack;           /* read.c's: the socket's action is quickack */
};

/* Called once from initialisation: is audit anywhere in policy p? */
void nf_audit_setup(const struct nf_policy *p);

/*
 * Before a send of len bytes on fd from caller (the return address in the
 * libc-named function). Returns 1 and fills *s if fd is audited (the hook
 * must then call nf_audit_send_end), else 0. Keeps errno.
 */
int nf_audit_send_begin(int fd, size_t len, void *caller, struct nf_audit_send *s);

/* After that send returned rc: records the write if rc > 0. Keeps errno. */
void nf_audit_send_end(const struct nf_audit_send *s, ssize_t rc);

/*
 * Before a read on fd from caller (the return address in the libc-named
 * function). Returns 1 and fills *r if fd is audited and either has a
 * write list or is under the audit action (every read of which is seen,
 * for the receive side); the hook must then call nf_audit_read_end. Else
 * 0, after one load of a global when audit is nowhere in the policy.
 * Starts the stall clock when held bytes are still unsent. Keeps errno.
 */
int nf_audit_read_begin(int fd, void *caller, struct nf_audit_read *r);

/* After that read returned rc: unless it failed with EAGAIN or EINTR,
 * ends the list (and logs a split_write finding) and, on an audit socket,
 * notes when it returned data (one clock read), logging a recv_split
 * finding when the gap since the previous one is the peer's held piece.
 * Keeps errno. */
void nf_audit_read_end(const struct nf_audit_read *r, ssize_t rc);

/* Before poll/ppoll: starts the clock of every polled-for-input fd. */
void nf_audit_wait_poll(const struct pollfd *fds, nfds_t nfds);

/* Before select/pselect: the same for the fds of the read set. */
void nf_audit_wait_select(int n, const fd_set *rfds);

/* Before epoll_wait/epoll_pwait: the same for every connection. */
void nf_audit_wait_all(void);

/* fd is being closed or replaced: drops its list. Keeps errno. */
void nf_audit_forget(int fd);

/* fds first..last are being closed. Keeps errno. */
void nf_audit_forget_range(unsigned first, unsigned last);

/* In a forked child: the parent keeps its lists and findings. */
void nf_audit_atfork_child(void);

/* --- audit_recv.c: the receive side's rule --- */

/* The delayed ACKs audit looks for are 35 to 250 ms long (audit_recv.c). */
#define NF_AUDIT_GAP_MIN_NS 35000000ull
#define NF_AUDIT_GAP_MAX_NS 250000000ull

/* Two reads of an audit socket that returned data, no send between them. */
struct nf_audit_gap {
	size_t first, second;      /* the bytes each returned */
	unsigned long long gap_ns; /* from the first's return to the second's */
	void *caller;              /* of the second */
};

/* Is g worth asking the kernel about (no system call)? 1 when its gap is
 * NF_AUDIT_GAP_MIN_NS..NF_AUDIT_GAP_MAX_NS and its first piece could have
 * been one segment; else 0. */
int nf_audit_recv_candidate(const struct nf_audit_gap *g);

/*
 * A candidate g on fd, of side: asks TCP_INFO once and returns 1, with a
 * recv_split finding in *f, if the gap is what our delayed ACK would make
 * of it (audit_recv.c), else 0. Keeps errno.
 */
int nf_audit_recv_split(int fd, enum nf_side side, const struct nf_audit_gap *g,
			struct nf_audit_finding *f);

/* --- audit_log.c: turning findings into JSON lines --- */

/*
 * Logs one finding as a "split_write" or "recv_split" line (or counts it
 * towards a "repeat" line, written within half a second by
 * nf_audit_flush_due on the timer thread, which it starts if need be) and
 * adds it to the per-peer summary. Keeps errno.
 */
void nf_audit_log_finding(const struct nf_audit_finding *f);

/*
 * From the timer thread (an nf_timer_due_fn, registered by init): writes
 * the repeat counts due by now. Returns when the next is due, 0 for none;
 * one atomic load when nothing is.
 */
unsigned long long nf_audit_flush_due(unsigned long long now);

/* At exit: pending repeat counts and one "summary" line per peer, once. */
void nf_audit_log_exit(void);

/* In a forked child: forget the parent's counts. */
void nf_audit_log_atfork_child(void);

#endif
