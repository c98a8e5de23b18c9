/*
 * watch_int.h - what the files of naglefix watch share: watch.c (the
 * command, its loop), watch_netns.c (the network namespaces watched),
 * watch_census.c and watch_procs.c (where they show), watch_scanwork.c
 * (the census taken off the loop), watch_setns.c (entering one),
 * watch_cap.c (a namespace's capture),
 * watch_stream.c (the captures read as one stream), watch_wires.c (the
 * detectors), watch_capwork.c (rings opened and closed off the loop),
 * watch_owner.c (a connection's process, in its namespace),
 * watch_fix.c (--fix), watch_json.c (the JSON lines), watch_metrics.c
 * (--metrics, --metrics-file) and watch_series.c (a stall's series).
 */
#ifndef NF_WATCH_INT_H
#define NF_WATCH_INT_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "wire/nf_owner.h"
#include "wire/nf_ring.h"
#include "wire/nf_wire.h"

struct nf_watch_sent;
struct nf_watch_metrics;
struct nf_watch_held;
struct nf_watch_capwork;
struct nf_watch_scanwork;

#define NF_WATCH_FLUSH_S 60 /* the JSON lines of rows that stalled again, this often */
#define NF_WATCH_NS_NAME NF_HOLDER_NETNS_MAX

/* A detector: the shared one (every capture's segments but loopback's)
 * or a namespace's loopback's (its own: 127.0.0.1 of one namespace is
 * not another's). Its callbacks get w; w->cur_wire is the one calling. */
struct nf_watch_wire {
	struct nf_watch *w;
	struct nf_wire *wire;
	struct nf_watch_ns *ns;       /* a loopback's namespace while watched; NULL: the
				       * shared one, or the namespace is gone */
	char netns[NF_WATCH_NS_NAME]; /* a loopback's namespace's name, kept */
	uint64_t netns_ino;
};

/* A capture: a namespace's ring, or its first, a queue (no ring:
 * nf_ring_open_queue), read in the stream (watch_stream.c). */
struct nf_watch_cap {
	struct nf_watch_ns *ns;
	struct nf_ring *ring;
	struct nf_ring_stats rs;      /* the ring's counts as last read */
	uint64_t blocks;              /* the ring's blocks handed back, at the last scan */
	unsigned kib;                 /* its size (a queue's: the ring it turns over as) */
	int grows;                    /* it may be replaced by a bigger one */
	/* watch_stream.c's */
	int ready;                    /* among the rings to read, */
	uint64_t read_ns;             /* ... read up to this time */
	struct nf_watch_held *q;      /* its frames held for the shared detector, */
	uint32_t qsize, qhead, qlen;  /* ... a circular queue in time order */
	size_t merge_at;              /* its place in the heap of queues, SIZE_MAX none */
};

/* A network namespace watched (watch_netns.c). */
struct nf_watch_ns {
	uint64_t ino;                 /* its nsfs inode: its identity while held */
	int fd;                       /* held open: the namespace lives while watched */
	char name[NF_WATCH_NS_NAME];  /* "host", its name under /run/netns, "pid:N" */
	struct nf_watch_cap *cap;     /* its capture; NULL: none (no such -i IFACE, no right) */
	struct nf_watch_cap *old;     /* the capture a bigger one replaced, stopped, read
				       * out until the next scan closes it */
	unsigned lo;                  /* its loopback's ifindex (the ring's) */
	struct nf_watch_wire *lo_wire; /* its loopback's detector, made at its first segment */
	unsigned seen;                /* the scan that last found it */
	int retry;                    /* no capture for want of -i's interface: tried at each scan */
	int opening;                  /* its capture asked of watch_capwork.c, not come yet */
	uint64_t lo_held_until;       /* its loopback's frames held till then (CLOCK_REALTIME
				       * ns): it was given a new ring (watch_stream.c) */
	uint64_t resized_ms;          /* its ring's rate last looked at (watch_cap.c) */
};

/* The process holding a connection is looked for in ns first (NULL: the
 * namespace watch runs in) and, unless only, in every other one watched. */
struct nf_watch_look {
	const struct nf_watch_ns *ns;
	int only;
};

/* A process and the inode of its network namespace; reads: how many walks
 * in a row found it there reading its link. */
struct nf_watch_proc {
	long pid;
	uint64_t ino;
	uint8_t reads;
};

/* A namespace a census found: its inode, its descriptor (-1: the set
 * held it already) and the name it is to be watched as. */
struct nf_watch_census_ent {
	uint64_t ino;
	int fd;
	char name[NF_WATCH_NS_NAME];
};

/* Where the host's namespaces show, read (watch_census.c). */
struct nf_watch_census {
	int all_ns;                   /* every namespace (else the specs' and those held) */
	const char *const *specs;     /* --netns words */
	size_t nspecs;
	uint64_t nsfs_dev;
	uint64_t *known;              /* in: the inodes the set held at the last census */
	size_t nknown, capknown;
	struct nf_watch_census_ent *ent; /* out: each namespace found, once */
	size_t nent, capent;
	int failed;                   /* /proc could not be read: nothing known is gone */
	struct nf_watch_proc *procs, *walk; /* watch_procs.c's: the last walk, the next */
	size_t nprocs, capprocs, nwalk, capwalk;
	unsigned walks;
};

struct nf_watch {
	const char *ifname;   /* -i, NULL: every interface */
	double seconds;       /* -t, 0: until a signal */
	int json;             /* --json */
	int fix;              /* --fix */
	int attach;           /* --attach: --fix adds the holder's rule to its cgroup */
	const char *log_path; /* -l */
	const char **specs;   /* --netns NAME|PATH|PID..., NULL: every namespace */
	size_t nspecs;
	const char *metrics_addr;  /* --metrics [ADDR:]PORT, NULL: no endpoint */
	const char *metrics_file;  /* --metrics-file, NULL: none */
	uint32_t metrics_max;      /* --metrics-max-series */
	uint64_t metrics_expire;   /* --metrics-expire, seconds */
	FILE *out, *log;
	/* the namespaces (watch_netns.c) */
	struct nf_watch_ns **ns;      /* ns[0]: watch's own ("host") */
	size_t nns, capns;
	int all_ns;                   /* every namespace of the host, not only own/--netns */
	int self_fd;                  /* watch's own namespace, to come back to */
	uint64_t nsfs_dev;
	unsigned scan_gen;
	int said_enter;               /* a namespace could not be entered: said once */
	struct nf_watch_census census; /* the census, the loop's or watch_scanwork.c's */
	struct nf_watch_scanwork *scanwork; /* its thread; NULL: the loop takes it */
	struct nf_owner_fds fds;      /* watch_holders.c's: the socket descriptors last walked */
	struct nf_ring_stats gone_rs; /* the captures closed, their counts */
	struct nf_watch_capwork *capwork; /* watch_capwork.c's thread; NULL: the loop does it */
	/* the stream (watch_stream.c) */
	int epfd;
	unsigned nrings;              /* captures open */
	struct nf_watch_cap **ready;  /* the rings to read */
	size_t nready;
	struct nf_watch_cap *reading; /* the one being read, batch frames so far */
	unsigned batch;
	struct nf_watch_cap **merge;  /* the captures holding frames, a heap by the oldest */
	size_t nmerge;
	size_t nheld;                 /* frames held in all */
	uint64_t single_ns;           /* when the captures fell to one (CLOCK_REALTIME) */
	uint64_t polled_ns;           /* the rings last looked at (CLOCK_REALTIME) */
	uint64_t now_ns;              /* the time as last read (CLOCK_REALTIME) */
	unsigned calls;
	int resize_due;               /* a ring turned half over: nf_watch_netns_tick now */
	int draining;                 /* hand out all, no hold (the end) */
	uint64_t drain_until;         /* ... and wait for the blocks begun till then */
	/* the detectors (watch_wires.c) */
	struct nf_wire_opts wire_opts; /* each one's (watch.c's callbacks; arg: w) */
	struct nf_watch_wire **wires; /* wires[0]: the shared one */
	size_t nwires, capwires;
	struct nf_holder **rows;      /* all their rows, as nf_watch_wires_rows gave them */
	struct nf_wire_stats gone_ws; /* the detectors freed, their counts */
	struct nf_watch_ns *cur;      /* the namespace of the frame being fed */
	struct nf_watch_wire *cur_wire; /* the detector being fed (its callbacks': which) */
	uint64_t frames;      /* frames read from the rings */
	uint64_t skipped;     /* of them, not a TCP segment the decoder took */
	uint64_t drops_said;  /* the kernel's drops said so far */
	struct nf_watch_sent *sent; /* watch_json.c's, one per row */
	size_t nsent, capsent;
	int sent_sorted;
	struct nf_watch_metrics *metrics; /* watch_metrics.c's; NULL without --metrics* */
};

/* --- watch_netns.c: the namespaces watched --- */

/*
 * Opens watch's own namespace's capture ("host"), then, if w->all_ns,
 * every other namespace a process of the host is in or /run/netns names,
 * else those --netns names: each held by a descriptor, its capture made
 * inside it (setns, the ring, setns back) and added to the stream.
 * 0, or 1 after saying why (no capture at home, a --netns not found).
 */
int nf_watch_netns_open(struct nf_watch *w);

/* Looks again (watch's loop calls it at each clock; due: NF_WATCH_SCAN_MS
 * have passed since it was last due): the census watch_scanwork.c's
 * thread took, if it is ready (without the thread: one taken now, if
 * due), applied: namespaces come since are opened, those gone (no
 * process in them, no name) closed: their capture, their descriptor,
 * their loopback's detector if it found nothing. The host's is never
 * closed. */
#define NF_WATCH_SCAN_MS 250
void nf_watch_netns_scan(struct nf_watch *w, int due);

/* Closes every namespace (the census's thread stopped first). */
void nf_watch_netns_close_all(struct nf_watch *w);

/* Every tick: the captures watch_capwork.c opened since taken in
 * (nf_watch_cap_collect), each namespace's resized if it must be
 * (nf_watch_cap_resize). */
void nf_watch_netns_tick(struct nf_watch *w, uint64_t now_ms);

/* The kernel's counts of every capture, those closed included. */
void nf_watch_netns_ring_stats(struct nf_watch *w, struct nf_ring_stats *s);

/* --- watch_census.c: where namespaces show; watch_procs.c: each
 * process's --- */

/*
 * Takes census c: an entry for each namespace named under /run/netns
 * (c->all_ns; else each --netns word's file) or a process is in (c->all_ns:
 * every one; else those of c->known only), once; with a descriptor
 * opened for each not in c->known, named "pid:N" (N the topmost process
 * in it) or by its name. The entries of the last census are cleared
 * first. Reads the host only; c->failed if /proc could not be read.
 */
void nf_watch_census_take(struct nf_watch_census *c);

/* Its entries gone (the descriptors left in them closed). */
void nf_watch_census_clear(struct nf_watch_census *c);

/* Frees all it holds. */
void nf_watch_census_free(struct nf_watch_census *c);

/* fd's namespace inode, if fd is a network namespace (of nsfs_dev, if
 * not 0): 0, or -errno (-EINVAL: another file, another kind). */
int nf_watch_ns_inode(uint64_t nsfs_dev, int fd, uint64_t *ino);

/* A --netns word's file (a PID's, a path, or a name under /run/netns)
 * into path, and the name it is watched as (a PID as "pid:PID"). */
void nf_watch_spec_path(const char *spec, char *path, size_t len, char *name, size_t namelen);

/* /proc walked: each process (PID order) and its namespace's inode, in
 * *out (owned by c, valid until the next walk). A process read twice in
 * a row is not read again but every 8th walk. Returns their number, or
 * -1 if /proc could not be read (the last walk is kept). */
ssize_t nf_watch_procs(struct nf_watch_census *c, const struct nf_watch_proc **out);

/* The inode of pid's network namespace, 0 if unreadable. */
uint64_t nf_watch_proc_ns(long pid);

/* s, all digits, as a PID (1 to 10^9); 0 for anything else. */
long nf_watch_pid_of(const char *s);

/* Frees the walks. */
void nf_watch_procs_free(struct nf_watch_census *c);

/* --- watch_scanwork.c: the census taken off the loop --- */

/* Starts the thread that takes census c every NF_WATCH_SCAN_MS (c
 * seeded: c->known). 0, or -errno: then the loop takes it. */
int nf_watch_scanwork_start(struct nf_watch *w, struct nf_watch_census *c);

/* The census, if the thread has taken one the loop has not applied yet
 * (the loop's until nf_watch_scanwork_back); NULL if not. Never waits. */
struct nf_watch_census *nf_watch_scanwork_ready(struct nf_watch *w);

/* The census applied (c->known the set's now): the thread's again. */
void nf_watch_scanwork_back(struct nf_watch *w);

/* Stops the thread (a census in hand finished). */
void nf_watch_scanwork_stop(struct nf_watch *w);

/* --- watch_setns.c --- */

/* Enters ns (the calling thread's network namespace becomes ns's): 0, or
 * -errno. nf_watch_leave comes back (exits if it cannot: watch would go
 * on in another namespace). ns NULL, or watch's own: nothing. */
int nf_watch_enter(struct nf_watch *w, const struct nf_watch_ns *ns);
void nf_watch_leave(struct nf_watch *w, const struct nf_watch_ns *ns);

/* --- watch_cap.c: a namespace's capture --- */

/* ns->cap: a ring made inside ns (the host's of the default size, another
 * of 256 KiB), in the stream; ns->lo its loopback. 0, or -errno, said on
 * stderr but -ENODEV (-i's interface is not there: ns->retry set) in a
 * namespace not the host's, and setns's, said once for all. Once
 * watch_capwork.c's thread runs, a namespace not the host's has its ring
 * asked of it instead (ns->opening; 0): nf_watch_cap_collect brings it. */
int nf_watch_cap_open(struct nf_watch *w, struct nf_watch_ns *ns);

/* The rings watch_capwork.c opened since: each namespace's capture, in
 * the stream (or, if it failed, said as nf_watch_cap_open says it). */
void nf_watch_cap_collect(struct nf_watch *w);

/* Closes ns's capture(s), their counts kept in w->gone_rs. */
void nf_watch_cap_close(struct nf_watch *w, struct nf_watch_ns *ns);

/* At each tick (now_ms: CLOCK_MONOTONIC): ns's capture replaced by one
 * four times as big or more if it turned over at a rate it would not
 * last half a second at, or dropped (not the host's; up to 16 MiB); the one
 * replaced closed once read out. */
void nf_watch_cap_resize(struct nf_watch *w, struct nf_watch_ns *ns, uint64_t now_ms);

/* Adds the kernel's counts of ns's capture(s) to *s. */
void nf_watch_cap_stats(struct nf_watch_ns *ns, struct nf_ring_stats *s);

/* --- watch_capwork.c: rings opened and closed off the loop --- */

/* Starts the thread (it blocks every signal). 0, or -errno: then the
 * loop opens and closes the rings itself, as before it starts. */
int nf_watch_capwork_start(struct nf_watch *w);

/* Asks for a ring of kib KiB (retire_ms: nf_ring_open's), or with
 * queue_kib a queue of that many KiB (nf_ring_open_queue) counted as a
 * ring of kib, made inside the network namespace of nsfd (duplicated:
 * the caller keeps its own), for owner. 0, or -errno (no thread, no
 * memory): the caller makes it. */
int nf_watch_capwork_open(struct nf_watch *w, const void *owner, int nsfd, unsigned kib,
			  unsigned retire_ms, unsigned queue_kib);

/* owner wants none of what it asked: a ring opened for it is closed. */
void nf_watch_capwork_cancel(struct nf_watch *w, const void *owner);

/* An open done: 1 with its *owner, *ring (the caller's now) and *kib; a
 * negative errno if it failed (*owner, *kib, err saying why); 0 when
 * none is done. Never waits. */
int nf_watch_capwork_done(struct nf_watch *w, const void **owner, struct nf_ring **ring,
			  unsigned *kib, char err[NF_RING_ERR_MAX]);

/* Closes r (unmapped, its socket closed) in the thread, or here if there
 * is none. r NULL: nothing. */
void nf_watch_capwork_close(struct nf_watch *w, struct nf_ring *r);

/* Stops the thread (the job in hand finished), closes what it held. */
void nf_watch_capwork_stop(struct nf_watch *w);

/* --- watch_stream.c: the captures read as one stream --- */

/* The stream's epoll (0, or -errno), and its end. */
int nf_watch_stream_open(struct nf_watch *w);
void nf_watch_stream_close(struct nf_watch *w);

/* Adds capture c (its ring open) to the stream, or takes it off (before
 * closing it; its frames not handed out are dropped). 0, or -errno. */
int nf_watch_stream_add(struct nf_watch *w, struct nf_watch_cap *c);
void nf_watch_stream_remove(struct nf_watch *w, struct nf_watch_cap *c);

/* ns has two captures for a moment (a bigger ring replaces its own): its
 * loopback's frames are held too, for 2 s, so that their copies come in
 * a row. */
void nf_watch_stream_hold_lo(struct nf_watch_ns *ns);

/*
 * The next frame of the captures into *f and the namespace whose capture
 * it is into *ns (NULL if it was closed since); valid until the next
 * call. Frames for the shared detector come in time order, each once
 * NF_WATCH_HOLD_MS have passed since its time (when every capture's
 * frames of that time have come: a block is handed over 50 ms after its
 * first packet at most, watch_cap.c), so that a segment two captures see comes twice
 * in a row and the detector drops the second; a namespace's loopback
 * frames as they are read (one capture: all as read, once those held
 * while there were two have gone out). Waits up to
 * timeout_ms. Returns 1, 0 if none came in time (or a signal came), -1
 * with errno.
 */
#define NF_WATCH_HOLD_MS 80
int nf_watch_stream_next(struct nf_watch *w, int timeout_ms, struct nf_ring_frame *f,
			 struct nf_watch_ns **ns);

/* From now on, nf_watch_stream_next hands out what every ring holds
 * without a hold, the blocks begun handed over too (it waits 60 ms for
 * them), then 0 (watch's end). */
void nf_watch_stream_drain(struct nf_watch *w);

/* --- watch_wires.c: the detectors --- */

/* The shared detector, made with w->wire_opts. 0, or -1 (no memory). */
int nf_watch_wires_open(struct nf_watch *w);

/* The detector of frame f of ns's capture: ns's loopback's (made now if
 * it is its first) for a frame of its loopback, else the shared one. */
struct nf_watch_wire *nf_watch_wire_of(struct nf_watch *w, struct nf_watch_ns *ns,
				       const struct nf_ring_frame *f);

/* Every detector's rows, most total stall first, in *out (owned by w,
 * valid until the next call of an nf_watch_wire(s)_ function). Returns
 * their number. */
size_t nf_watch_wires_rows(struct nf_watch *w, struct nf_holder *const **out);

/* Every detector's counts added up, those freed included. */
void nf_watch_wires_stats(const struct nf_watch *w, struct nf_wire_stats *ws);

/* nf_wire_expire of each. */
void nf_watch_wires_expire(struct nf_watch *w, uint64_t now_ns);

/* ns is closing: its loopback's detector is kept (detached) if it has
 * rows, else freed, its counts kept. */
void nf_watch_wire_detach(struct nf_watch *w, struct nf_watch_ns *ns);

/* Frees them all. */
void nf_watch_wires_free(struct nf_watch *w);

/* --- watch_owner.c --- */

/* The process of this host holding the TCP connection whose local end is
 * local and remote end remote, into *o (as nf_owner_find), its socket
 * asked for of the kernel inside the namespaces look says (a sock_diag
 * socket made there); *where (may be NULL) the namespace it was found in.
 * 0, or -errno: -ENOENT none here; -ENOTCONN here but closed, no file
 * (TIME-WAIT: its process let it go); -ESRCH a socket no process holds
 * (or none watch may read); -EIO /proc unreadable. */
int nf_watch_owner(struct nf_watch *w, const struct nf_watch_look *look, const struct nf_end *local,
		   const struct nf_end *remote, struct nf_owner *o, const struct nf_watch_ns **where);

/* --- watch_holders.c: the host's socket descriptors, for naming --- */

/* The process holding socket:[ino] into *o (as nf_owner_pid: o->pid,
 * o->fd, o->cmd; o->npids: the processes the table has holding it, 1 at
 * least), from the socket descriptors of the last walk of /proc, each
 * checked live;
 * if none of them holds ino now, from a walk made now, newest process
 * first, that stops at the first holder. 0, -ESRCH if no process holds
 * it (or none watch may read), or -errno (/proc unreadable, no memory). */
int nf_watch_holder(struct nf_watch *w, uint64_t ino, struct nf_owner *o);

/* Frees the table. */
void nf_watch_holders_free(struct nf_watch *w);

/* --- watch_fix.c: --fix --- */

/*
 * What --fix does at a connection's first stall (h its row, or a copy of
 * it with the connection's ends), o being what nf_watch_owner found of its
 * holder: o->pid set, the holder's socket (o->inode, o->fd) gets
 * TCP_NODELAY, and its listener if h was accepted; no inode (the holder is
 * on another host), the receiving end's fix is printed if that end is
 * here (looked for as look says). Each said in a line after the
 * finding's. Changes nothing else.
 */
void nf_watch_fix(struct nf_watch *w, const struct nf_holder *h, const struct nf_owner *o,
		  const struct nf_watch_look *look);

/* --- watch_json.c: the JSON lines (--json's and -l's) --- */

/* Row h's first line (it has just stalled for the first time). */
void nf_watch_json_first(struct nf_watch *w, const struct nf_holder *h);

/* The line of a later connection of a row found stalling (h: a copy of
 * the row with that connection's ends and process): "event":"wire_conn",
 * which counts no stall (the row's lines count them). */
void nf_watch_json_conn(struct nf_watch *w, const struct nf_holder *h);

/* A line for each row with stalls its lines have not said yet: those
 * stalls only (count, total), so that report's sum of a row's lines is
 * the row. */
void nf_watch_json_flush(struct nf_watch *w);

/* Frees that bookkeeping. */
void nf_watch_json_free(struct nf_watch *w);

/* --- watch_metrics.c: --metrics and --metrics-file; watch_series.c: a
 * stall's series --- */

#define NF_WATCH_PROG_MAX 64     /* bytes of a program's name in a label */
#define NF_WATCH_NAME_SETS 256   /* the connections' programs kept: 4 a set */
#define NF_WATCH_NAME_WAYS 4

/* A connection's program, cgroup and namespace, as watch named them at
 * its first stall (wire: the detector that saw it). */
struct nf_watch_name {
	const struct nf_watch_wire *wire;
	struct nf_end self, peer;
	uint64_t used;               /* its last use (a count): the set's least recent goes */
	char prog[NF_WATCH_PROG_MAX];
	char cgroup[NF_HOLDER_CGROUP_MAX];
	char netns[NF_WATCH_NS_NAME];
};

struct nf_watch_metrics {
	struct nf_metrics *m;
	struct nf_endpoint *ep;      /* NULL without --metrics */
	uint64_t next_file_ns;       /* --metrics-file's next writing (monotonic) */
	int file_failing;            /* its last writing failed (and was said) */
	uint64_t uses;
	struct nf_watch_name names[NF_WATCH_NAME_SETS][NF_WATCH_NAME_WAYS];
};

/* Opens what w's --metrics options ask (the endpoint listening, the
 * file written once) and says on stderr where the endpoint is. 0 (also
 * when none is asked), or 1 after saying why not. */
int nf_watch_metrics_open(struct nf_watch *w);

/* A connection found stalling, its holder named (h: its row, or a copy
 * with the connection's own ends; pid, cmd, cgroup and netns set as
 * found): the program, cgroup and namespace its stalls are counted
 * under. */
void nf_watch_metrics_named(struct nf_watch *w, const struct nf_holder *h);

/* The detectors' on_stall (arg: w): stall s of row h's connection
 * self -> peer counted under its holder's series. */
void nf_watch_metrics_stall(void *arg, const struct nf_holder *h, const struct nf_stall *s,
			    const struct nf_end *self, const struct nf_end *peer);

/* Waits up to timeout_ms for the rings (the stream's epoll) or the
 * endpoint, and serves the endpoint's clients that are ready. A signal
 * ends the wait. */
void nf_watch_metrics_wait(struct nf_watch *w, int timeout_ms);

/* The loop's tick (mono_ns: the monotonic clock): expires series and
 * writes --metrics-file when its time has come. */
void nf_watch_metrics_tick(struct nf_watch *w, uint64_t mono_ns);

/* Writes --metrics-file a last time and closes the endpoint. */
void nf_watch_metrics_close(struct nf_watch *w);

#endif
