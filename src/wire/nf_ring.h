/*
 * nf_ring.h - the live capture of `naglefix watch` (src/wire/ring.c): an
 * AF_PACKET socket of type SOCK_DGRAM (frames start at the network
 * header) with a memory-mapped TPACKET_V3 receive ring and a classic BPF
 * filter in the kernel that keeps IPv4 and IPv6 TCP only, cut to
 * NF_RING_SNAP bytes (the headers), and drops loopback's outgoing copy
 * of each packet (lo shows every packet twice: sent, PACKET_OUTGOING,
 * and received, PACKET_HOST; the received one is kept, as libpcap does).
 * No libpcap; libc and the kernel's headers only.
 */
#ifndef NF_RING_H
#define NF_RING_H

#include <stddef.h>
#include <stdint.h>

#define NF_RING_SNAP 160      /* bytes kept of a packet: IPv4 60 + TCP 60, IPv6 40 + 60 */
#define NF_RING_ERR_MAX 256

/* One captured frame, valid until the next nf_ring_next or nf_ring_close. */
struct nf_ring_frame {
	uint64_t ts_ns;      /* the kernel's receive time, ns since the epoch */
	uint16_t ethertype;  /* ETH_P_IP or ETH_P_IPV6, host order (sll_protocol) */
	uint8_t pkttype;     /* PACKET_HOST, PACKET_OUTGOING... (sll_pkttype) */
	int ifindex;
	uint32_t caplen;     /* bytes in data (at most NF_RING_SNAP) */
	uint32_t origlen;    /* the packet's length from its network header */
	const uint8_t *data; /* the network header */
};

struct nf_ring_stats {
	uint64_t packets;    /* packets the filter passed, kernel's count */
	uint64_t drops;      /* of them, lost because the ring was full */
};

struct nf_ring;

/*
 * Opens the capture on interface ifname (NULL or "any": every interface)
 * of the calling thread's network namespace, with a ring of about
 * ring_kib KiB (0: the default, 16 MiB; at least 256 KiB: 64 blocks of
 * a page; ring.c says how a size lasts) whose blocks are handed over
 * when full or retire_ms after their first packet (0: 10 ms; the
 * kernel's timer fires that often, idle or not). The filter is
 * attached before the socket is bound, so no unfiltered packet is ever
 * queued. Returns the ring, or NULL with errno set and err holding one
 * line: EPERM for a process without CAP_NET_RAW, ENODEV for an unknown
 * interface, else the failing call.
 */
struct nf_ring *nf_ring_open(const char *ifname, unsigned ring_kib, unsigned retire_ms,
			     char err[NF_RING_ERR_MAX]);

/*
 * As nf_ring_open, but with no ring: the frames wait in the socket's own
 * receive queue, up to queue_kib KiB of the kernel's packet buffers (a
 * packet's whole buffer counts there, not only the headers kept), and
 * are read with recvmmsg, a batch at a time, through the same calls. A
 * ring's pages are all allocated, zeroed and mapped into this process
 * when it is made, and its block timer fires idle or not; a queue costs
 * neither until packets come, and a burst waits in it (while a ring is
 * made: nf_ring_stop, then read it out). The size is set with
 * SO_RCVBUFFORCE (CAP_NET_ADMIN), else SO_RCVBUF up to the host's
 * net.core.rmem_max. nf_ring_blocks counts NF_RING_QUEUE_FRAMES frames a
 * block of NF_RING_QUEUE_BLOCKS, as a 256 KiB ring of a fast rate would
 * (a block begun counts: one frame read is one block).
 * A queue's frame carries the time its packet was queued for the stack
 * (on loopback, when it was sent), a ring's the time the stack took it:
 * on a host whose packet processing lags (a busy or emulated one), a
 * queue's gap between an ACK and the segment it released grows by that
 * lag, where a ring's does not.
 */
#define NF_RING_QUEUE_FRAMES 16
#define NF_RING_QUEUE_BLOCKS 64
struct nf_ring *nf_ring_open_queue(const char *ifname, unsigned queue_kib,
				   char err[NF_RING_ERR_MAX]);

/* The next frame into *f if the kernel has handed one over: 1, else 0.
 * No system call (a queue: one recvmmsg a batch), no wait (for a caller
 * that polls several rings). */
int nf_ring_take(struct nf_ring *r, struct nf_ring_frame *f);

/*
 * The next frame into *f, waiting up to timeout_ms (poll) when the ring
 * holds none. Returns 1 with *f set, 0 if none came in time or the wait
 * was interrupted by a signal, -1 with errno on a failure of poll.
 */
int nf_ring_next(struct nf_ring *r, int timeout_ms, struct nf_ring_frame *f);

/* The kernel's counts since nf_ring_open (PACKET_STATISTICS, which the
 * kernel resets at each read: the ring adds them up). 0, or -errno. */
int nf_ring_stats(struct nf_ring *r, struct nf_ring_stats *s);

/* The socket, for a caller's own poll (readable when the kernel has
 * handed a block over). */
int nf_ring_fd(const struct nf_ring *r);

/* The ifindex of the loopback interface of the ring's namespace, as the
 * filter knows it (0: none): a frame of ifindex this is loopback's. */
unsigned nf_ring_loopback(const struct nf_ring *r);

/* The bytes of the ring mapped into this process (a queue: 0). */
size_t nf_ring_bytes(const struct nf_ring *r);

/* The blocks the reader has given back to the kernel since nf_ring_open,
 * and (*nblocks) how many the ring has: how fast a ring turns over. */
uint64_t nf_ring_blocks(const struct nf_ring *r, unsigned *nblocks);

/* The ring receives nothing more (its filter keeps nothing); what it
 * holds can still be read. For a ring replaced by another: open the new one
 * first, so that no packet falls between. 0, or -errno. */
int nf_ring_stop(struct nf_ring *r);

/* Unmaps and closes r. NULL is allowed. */
void nf_ring_close(struct nf_ring *r);

#endif
