/*
 * nf_wire.h - the stall detector of the packet side: a table of the TCP
 * connections seen (src/wire/table.c), the Nagle x delayed-ACK signature
 * read on each of their two directions (src/wire/detect.c), and the ends
 * found holding (src/wire/holder.c). Fed one decoded segment at a time
 * (nf_pkt.h) by `naglefix scan` (a capture) and `naglefix watch` (the
 * live host); no system call, no clock of its own: time is the packets'.
 *
 * The signature, on one direction, H (the holder) to R: H sends a data
 * segment S1 smaller than the MSS; R sends no data and no ACK of S1 for
 * at least an ACK timer; then R's pure ACK of S1; then H's next data
 * segment S2 (new data, smaller than the MSS, nothing from H between)
 * tied to that ACK: within a floor plus 1.5 round trips of the capture
 * point to H (0 near H, one RTT near R). The stall is S2's time less
 * S1's. README and naglefix(7) say what cannot be told from the wire.
 */
#ifndef NF_WIRE_H
#define NF_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "nf_pkt.h"

/* One end of a connection. */
struct nf_end {
	uint8_t family; /* AF_INET or AF_INET6 */
	uint16_t port;  /* host order */
	uint8_t addr[16];
};

enum nf_wire_side {
	NF_WIRE_CONNECT = 0, /* the holder opened the connection */
	NF_WIRE_ACCEPT = 1,  /* the holder accepted it */
};

/* How the side was told. */
enum nf_wire_side_how {
	NF_SIDE_SYN = 0,      /* the handshake was seen (SYN or SYN-ACK) */
	NF_SIDE_LISTENER = 1, /* no handshake: the other end's port was seen accepting elsewhere */
	NF_SIDE_PORTS = 2,    /* no handshake: guessed from the ports (the lower, or the
			       * non-ephemeral one, accepts) */
};

/* One stall, as the detector saw it. */
struct nf_stall {
	uint64_t start_ns;  /* S1 seen */
	uint64_t ack_ns;    /* R's delayed ACK seen */
	uint64_t end_ns;    /* S2 seen */
	uint32_t size1;     /* S1's payload */
	uint32_t size2;     /* S2's payload */
};

#define NF_HOLDER_SAMPLES 64 /* stall times kept for the median (a reservoir past it) */
#define NF_HOLDER_CMD_MAX 128
#define NF_HOLDER_NETNS_MAX 48
#define NF_HOLDER_CGROUP_MAX 128 /* "nginx.service", "docker-<12 hex>", "pod <uid>/..." */

/*
 * A row of findings: an end that held, with the end it waited on. A
 * server's row (accept) is one per client address (their ports vary); a
 * client's (connect) one per server end, its own port that of its first
 * connection (conns says how many it held on).
 */
struct nf_holder {
	struct nf_end self, peer;
	uint8_t side;            /* enum nf_wire_side */
	uint8_t side_how;        /* enum nf_wire_side_how */
	uint8_t gone;            /* filled by watch: the holder was a process of this host,
				  * gone before the stall was judged (pid 0) */
	uint32_t conns;          /* connections of this row that held */
	uint64_t stalls;
	uint64_t first_ns, last_ns; /* the first and the last stall's start */
	double total_ms;
	double ack_total_ms;     /* sum of R's ACK delays (S1 to ACK) */
	uint32_t size1, size2;   /* the sizes of the most frequent stall */
	/* the detector's own (beside the counts: each stall reads and
	 * writes the lines from stalls to here, and one of samples) */
	uint32_t size_votes;     /* Boyer-Moore majority of (size1, size2) */
	uint32_t nsamples;
	uint64_t rng;
	float samples[NF_HOLDER_SAMPLES];
	/* filled by the caller (watch), where the holder is on this host */
	long pid;                /* 0 if not known */
	char cmd[NF_HOLDER_CMD_MAX];
	char netns[NF_HOLDER_NETNS_MAX]; /* the network namespace it was found in
					  * ("host", a /run/netns name, "pid:N"); "" none */
	uint64_t netns_ino;      /* that namespace's inode, 0 none */
	char cgroup[NF_HOLDER_CGROUP_MAX]; /* its cgroup's name; "" if not known */
};

struct nf_wire_opts {
	uint64_t delack_min_ns; /* an ACK later than this after S1 (less R's round trip) is delayed: 10 ms */
	uint64_t tie_floor_ns;  /* S2 tied to the ACK within this plus 1.5 RTT to H: 1 ms */
	uint64_t idle_ns;       /* a connection silent this long is forgotten: 300 s */
	uint64_t closed_ns;     /* ... one closed (FIN both ways, or RST) this long: 2 s */
	/* Called at a row's first stall (watch prints a line, --fix acts);
	 * may fill pid and cmd. NULL: none. */
	void (*on_first)(void *arg, struct nf_holder *h, const struct nf_stall *s);
	/* Called at the first stall of each later connection of a row (one
	 * that joins a row that stalled before: another client of the same
	 * server end, a client's new connection), with that connection's
	 * holder end self and the end peer it waited on (the row's own are
	 * its first connection's): watch names its process, --fix acts on
	 * it. NULL: none. */
	void (*on_conn)(void *arg, struct nf_holder *h, const struct nf_stall *s,
			const struct nf_end *self, const struct nf_end *peer);
	/* Called at every stall, the first ones too (after on_first or
	 * on_conn), with its row h and its connection's holder end self and
	 * the end peer it waited on (watch's metrics count it under the
	 * connection's process). NULL: none. */
	void (*on_stall)(void *arg, const struct nf_holder *h, const struct nf_stall *s,
			 const struct nf_end *self, const struct nf_end *peer);
	void *arg;
};

/* The defaults above. */
void nf_wire_opts_default(struct nf_wire_opts *o);

struct nf_wire_stats {
	uint64_t packets;       /* segments fed */
	uint64_t duplicates;    /* the same segment seen twice (a capture on lo and any) */
	uint64_t conns;         /* connections seen */
	uint64_t live, peak;    /* in the table now, and at most */
	uint64_t one_way;       /* connections forgotten having been seen one way only */
	uint64_t retransmits;   /* segments of data already seen */
	uint64_t dropped_conns; /* connections not tracked: no memory */
	uint64_t unanswered;    /* stalls R never answered (a one-way sender's
				 * look-alikes, or its real holds): not counted */
	uint64_t unrowed;       /* stalls of a new holder past NF_WIRE_ROWS_MAX
				 * rows (or no memory for its row): not counted */
};

/* The rows a detector keeps at most (688 bytes each: 45 MB), so
 * that a capture or a watch of any length costs a bounded memory. */
#define NF_WIRE_ROWS_MAX (1u << 16)

struct nf_wire;

/* A detector with options o (NULL: the defaults). NULL if out of memory. */
struct nf_wire *nf_wire_new(const struct nf_wire_opts *o);

/* Feeds one segment. Packets must come in capture order (a time that
 * goes back is taken as equal to the last). Never fails: a connection
 * that cannot be tracked for want of memory is counted and skipped. */
void nf_wire_packet(struct nf_wire *w, const struct nf_pkt *p);

#define NF_WIRE_BATCH 32 /* a power of two: nf_wire_segments looks BATCH / 2 segments ahead */

/* Feeds p[0..n-1], in order, as nf_wire_packet would, asking the cache
 * for the connection of each segment a few segments before it is read
 * (a large table's lookups then wait for memory together, not one after
 * another); n of 64 or more gains the most. */
void nf_wire_packets(struct nf_wire *w, const struct nf_pkt *p, size_t n);

/*
 * A segment as the detector reads it: 48 bytes, made from a struct
 * nf_pkt by nf_wire_prepare without the detector's table, so that
 * another thread can make it while the detector runs (scan's reader
 * does). The two ends in order (the lower, by address then port, first)
 * as the first 8 bytes of each as struct nf_end holds them (family, a
 * zero byte, port, the address's first 4 bytes: the whole of an IPv4
 * end); which of them sent it; the upper half of its connection's hash
 * (the same both ways); its signature (a second copy of it has the
 * same). What few segments carry beyond that (the rest of an IPv6
 * address, a SYN's MSS) is in a struct nf_seg_more beside it.
 */
struct nf_seg {
	uint64_t ts_ns;
	uint64_t head[2];
	uint32_t tag;
	uint32_t sig;
	uint32_t seq, ack, len;
	uint16_t win;
	uint8_t flags;      /* NF_TCP_* */
	uint8_t bits;       /* NF_SEG_* */
};

#define NF_SEG_SRC  0x01 /* its source is the higher end (head[1]) */
#define NF_SEG_V6   0x02 /* IPv6: more holds the rest of the addresses */
#define NF_SEG_MORE 0x04 /* more is filled (IPv6, or a SYN) */

struct nf_seg_more {
	uint8_t tail[2][12]; /* IPv6: each address's last 12 bytes, the lower end first */
	uint16_t mss;        /* a SYN's MSS option; 0 none */
};

/* Makes s, and *more where the segment has more (NF_SEG_MORE; else
 * *more is not written), from p (an IPv4 or IPv6 segment). */
void nf_wire_prepare(const struct nf_pkt *p, struct nf_seg *s, struct nf_seg_more *more);

/* nf_wire_packets of segments prepared: s[0..n-1], more[i] read where
 * s[i] says NF_SEG_MORE. */
void nf_wire_segments(struct nf_wire *w, const struct nf_seg *s, const struct nf_seg_more *more,
		      size_t n);

/* Forgets connections idle (or closed) as of now_ns; nf_wire_packet
 * does it too, a little at a time. */
void nf_wire_expire(struct nf_wire *w, uint64_t now_ns);

/* The rows found so far, in *out (an array owned by w, valid until the
 * next call of any nf_wire_ function), most total stall first. Returns
 * their number. */
size_t nf_wire_holders(struct nf_wire *w, struct nf_holder *const **out);

/* The median stall of h, ms. */
double nf_holder_median_ms(const struct nf_holder *h);

void nf_wire_stats(const struct nf_wire *w, struct nf_wire_stats *s);

/* Frees w and its rows. NULL is allowed. */
void nf_wire_free(struct nf_wire *w);

#endif
