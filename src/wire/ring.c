/*
 * ring.c - watch's live capture: AF_PACKET, SOCK_DGRAM, a TPACKET_V3
 * ring mapped into this process, and a classic BPF filter that keeps TCP
 * over IPv4 and IPv6, cut to its headers (nf_ring.h).
 *
 * The kernel fills the ring a block at a time; a block is ours from the
 * moment its status has TP_STATUS_USER until we give it back (status
 * TP_STATUS_KERNEL), which happens only when the caller asks for the
 * frame after its last one, so the frame handed out stays valid.
 *
 * A queue (nf_ring_open_queue) maps nothing: a batch of frames is read
 * with one recvmmsg into the queue's own buffers, each frame's time and
 * length from its control messages (SO_TIMESTAMPNS, PACKET_AUXDATA), and
 * handed out one by one, each valid until the next call, as from a ring.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nf_ring.h"

/*
 * The ring: ring_kib KiB in blocks. The kernel hands a block over when
 * it is full or retire_ms after its first packet (its timer fires that
 * often, idle or not), so at a low rate each block holds little and the
 * ring lasts nblocks * retire_ms of our not reading (an owner lookup, a
 * busy CPU); at a high rate the bytes bound
 * it (a frame takes about 240 bytes). So a ring has at least MIN_BLOCKS
 * blocks, as small as a page where the ring is small: 64 of 4 KiB (256
 * KiB, the least) are 640 ms at a low rate of 10 ms (3.2 s of 50 ms),
 * about 1,000 frames at a high one; 256 blocks of 64 KiB (16 MiB, the
 * default) are 2.5 s and about 70,000 frames. 16 blocks of 1 MiB lasted 160 ms, and lost 282 packets
 * of 4,754 on this 2-core machine under the test suite.
 */
#define MAX_BLOCK (1u << 16)
#define MIN_BLOCK (1u << 12)
#define MIN_BLOCKS 64
#define DEFAULT_KIB (16u << 10)
#define MIN_KIB (MIN_BLOCKS * MIN_BLOCK >> 10)
#define MAX_KIB (1u << 20)
#define FRAME_SIZE 2048          /* TPACKET_V3 ignores it but checks it divides the ring */
#define RETIRE_MS 10             /* by default, a block not full is handed over after this */
#define QBATCH 64                /* a queue's frames read with one recvmmsg */
#define QCTL 128                 /* a frame's control messages: a timespec, the auxdata */

/* A queue's batch: the frames of its last recvmmsg, next the one to hand out. */
struct nf_ring_queue {
	struct mmsghdr m[QBATCH];
	struct iovec iov[QBATCH];
	struct sockaddr_ll from[QBATCH];
	uint8_t data[QBATCH][NF_RING_SNAP];
	uint64_t ctl[QBATCH][QCTL / 8]; /* aligned for cmsghdr */
	unsigned n, next;
	uint64_t frames;                /* handed out since it opened */
};

struct nf_ring {
	int fd;
	uint8_t *map;
	size_t map_len;
	uint32_t block_size;
	unsigned nblocks;
	unsigned lo;                       /* the loopback's ifindex, 0 none */
	unsigned retire_ms;                /* a block not full is handed over after this */
	unsigned cur;                      /* the block read next */
	uint64_t handed;                   /* blocks given back so far */
	struct tpacket_block_desc *held;   /* the block being read, ours */
	uint32_t left;                     /* its packets not yet handed out */
	uint32_t next_off;                 /* the next one's offset in the block */
	struct nf_ring_stats total;
	struct nf_ring_queue *q;           /* a queue's batch; NULL: a ring */
};

/* The ifindex of the loopback interface (IFF_LOOPBACK), 0 if none. */
static unsigned loopback_ifindex(int fd)
{
	struct if_nameindex *all = if_nameindex(), *i;
	unsigned found = 0;

	if (!all)
		return 0;
	for (i = all; i->if_index && !found; i++) {
		struct ifreq ifr;

		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", i->if_name);
		if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_LOOPBACK))
			found = i->if_index;
	}
	if_freenameindex(all);
	return found;
}

#define AD(x) ((uint32_t)(SKF_AD_OFF + (x)))
#define J(from, to) ((uint8_t)((to) - (from) - 1))
enum { L_KEEP = 16, L_DROP = 17 };

/*
 * Keeps TCP in unfragmented IPv4, and IPv6 whose first header is TCP or
 * an extension header that may lead to it (hop-by-hop, routing,
 * destination options: the decoder walks them), cut to NF_RING_SNAP
 * bytes; drops loopback's PACKET_OUTGOING copy. Offsets are from the
 * network header (SOCK_DGRAM).
 */
static int attach_filter(int fd, unsigned lo)
{
	struct sock_filter code[] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, AD(SKF_AD_IFINDEX)),
		/* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, lo, 0, J(1, 4)),
		/* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, AD(SKF_AD_PKTTYPE)),
		/* 3 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACKET_OUTGOING, J(3, L_DROP), 0),
		/* 4 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, AD(SKF_AD_PROTOCOL)),
		/* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IP, J(5, 7), 0),
		/* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IPV6, J(6, 11), J(6, L_DROP)),
		/* 7 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 9),
		/* 8 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_TCP, 0, J(8, L_DROP)),
		/* 9 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 6),
		/* 10 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x3fff, J(10, L_DROP), J(10, L_KEEP)),
		/* 11 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 6),
		/* 12 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_TCP, J(12, L_KEEP), 0),
		/* 13 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, J(13, L_KEEP), 0),
		/* 14 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 43, J(14, L_KEEP), 0),
		/* 15 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 60, J(15, L_KEEP), J(15, L_DROP)),
		/* 16 */ BPF_STMT(BPF_RET | BPF_K, NF_RING_SNAP),
		/* 17 */ BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = { .len = sizeof(code) / sizeof(code[0]), .filter = code };

	if (!lo) /* no loopback: no ifindex is 0, the first test never matches */
		code[1].k = 0;
	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) ? -errno : 0;
}

/* TPACKET_V3 and a ring of nblocks blocks, mapped. */
static int map_ring(struct nf_ring *r)
{
	int v = TPACKET_V3;
	struct tpacket_req3 req;

	if (setsockopt(r->fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)))
		return -errno;
	memset(&req, 0, sizeof(req));
	req.tp_block_size = r->block_size;
	req.tp_block_nr = r->nblocks;
	req.tp_frame_size = FRAME_SIZE;
	req.tp_frame_nr = r->block_size / FRAME_SIZE * r->nblocks;
	req.tp_retire_blk_tov = r->retire_ms;
	if (setsockopt(r->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)))
		return -errno;
	r->map_len = (size_t)r->block_size * r->nblocks;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		return -errno;
	}
	return 0;
}

static int bind_to(int fd, unsigned ifindex)
{
	struct sockaddr_ll sll;

	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = (int)ifindex;
	return bind(fd, (struct sockaddr *)&sll, sizeof(sll)) ? -errno : 0;
}

/* NULL after filling err and errno from rc (a negative errno). */
static struct nf_ring *fail(struct nf_ring *r, int rc, char err[NF_RING_ERR_MAX], const char *what)
{
	if (rc == -EPERM || rc == -EACCES)
		snprintf(err, NF_RING_ERR_MAX,
			 "capturing packets needs CAP_NET_RAW (run as root, or "
			 "setcap cap_net_raw+ep on naglefix)");
	else
		snprintf(err, NF_RING_ERR_MAX, "%s: %s", what, strerror(-rc));
	nf_ring_close(r);
	errno = -rc;
	return NULL;
}

/* The blocks of a ring of kib KiB (0: the default; clamped to
 * MIN_KIB..MAX_KIB): MIN_BLOCKS of a power of two from a page up to
 * MAX_BLOCK, then more of MAX_BLOCK. */
static void size_ring(struct nf_ring *r, unsigned kib)
{
	size_t bytes;

	kib = kib ? kib : DEFAULT_KIB;
	kib = kib < MIN_KIB ? MIN_KIB : kib > MAX_KIB ? MAX_KIB : kib;
	bytes = (size_t)kib << 10;
	r->block_size = MIN_BLOCK;
	while (r->block_size < MAX_BLOCK && (size_t)r->block_size * 2 * MIN_BLOCKS <= bytes)
		r->block_size *= 2;
	r->nblocks = (unsigned)(bytes / r->block_size);
}

/* fail's, for a function that returns rc. */
static int failed(struct nf_ring *r, int rc, char err[NF_RING_ERR_MAX], const char *what)
{
	fail(r, rc, err, what);
	return rc;
}

/* A packet socket with its filter on ifname (NULL or "any": every
 * interface), not yet bound, into r. 0, or -errno with err filled (and
 * r closed). */
static int open_socket(struct nf_ring *r, const char *ifname, unsigned *ifindex,
		       char err[NF_RING_ERR_MAX])
{
	int rc;

	r->fd = -1;
	/* protocol 0: the socket receives nothing until bound */
	r->fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (r->fd < 0)
		return failed(r, -errno, err, "socket(AF_PACKET)");
	*ifindex = 0;
	if (ifname && strcmp(ifname, "any") != 0) {
		*ifindex = if_nametoindex(ifname);
		if (!*ifindex) {
			snprintf(err, NF_RING_ERR_MAX, "no interface %.64s", ifname);
			nf_ring_close(r);
			return -ENODEV;
		}
	}
	r->lo = loopback_ifindex(r->fd);
	if ((rc = attach_filter(r->fd, r->lo)) < 0)
		return failed(r, rc, err, "SO_ATTACH_FILTER");
	return 0;
}

struct nf_ring *nf_ring_open(const char *ifname, unsigned ring_kib, unsigned retire_ms,
			     char err[NF_RING_ERR_MAX])
{
	struct nf_ring *r = calloc(1, sizeof(*r));
	unsigned ifindex;
	int rc;

	err[0] = '\0';
	if (!r)
		return fail(NULL, -ENOMEM, err, "ring");
	size_ring(r, ring_kib);
	r->retire_ms = retire_ms ? retire_ms : RETIRE_MS;
	if ((rc = open_socket(r, ifname, &ifindex, err)) < 0) {
		errno = -rc;
		return NULL;
	}
	if ((rc = map_ring(r)) < 0)
		return fail(r, rc, err, "PACKET_RX_RING");
	if ((rc = bind_to(r->fd, ifindex)) < 0)
		return fail(r, rc, err, "bind(AF_PACKET)");
	return r;
}

static int set_int(int fd, int level, int name, int val)
{
	return setsockopt(fd, level, name, &val, sizeof(val)) ? -errno : 0;
}

/* A queue's receive buffer of kib KiB (the kernel doubles what it is
 * given, for its own overhead: half is asked); the timestamp and the
 * packet's length in each frame's control messages. */
static int set_queue(int fd, unsigned kib)
{
	int half = (int)((kib > (1u << 20) ? 1u << 20 : kib) << 9);
	int rc;

	if (set_int(fd, SOL_SOCKET, SO_RCVBUFFORCE, half) < 0 &&
	    (rc = set_int(fd, SOL_SOCKET, SO_RCVBUF, half)) < 0)
		return rc;
	if ((rc = set_int(fd, SOL_SOCKET, SO_TIMESTAMPNS, 1)) < 0)
		return rc;
	return set_int(fd, SOL_PACKET, PACKET_AUXDATA, 1);
}

struct nf_ring *nf_ring_open_queue(const char *ifname, unsigned queue_kib,
				   char err[NF_RING_ERR_MAX])
{
	struct nf_ring *r = calloc(1, sizeof(*r));
	unsigned ifindex;
	int rc;

	err[0] = '\0';
	if (!r || !(r->q = calloc(1, sizeof(*r->q)))) {
		free(r);
		return fail(NULL, -ENOMEM, err, "queue");
	}
	r->block_size = MIN_BLOCK;
	r->nblocks = NF_RING_QUEUE_BLOCKS;
	if ((rc = open_socket(r, ifname, &ifindex, err)) < 0) {
		errno = -rc;
		return NULL;
	}
	if ((rc = set_queue(r->fd, queue_kib)) < 0)
		return fail(r, rc, err, "packet socket options");
	if ((rc = bind_to(r->fd, ifindex)) < 0)
		return fail(r, rc, err, "bind(AF_PACKET)");
	return r;
}

static struct tpacket_block_desc *block(struct nf_ring *r, unsigned i)
{
	return (struct tpacket_block_desc *)(r->map + (size_t)i * r->block_size);
}

/* Gives the block being read back to the kernel; the next one is read next. */
static void release(struct nf_ring *r)
{
	__atomic_store_n(&r->held->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
	r->held = NULL;
	r->left = 0;
	r->cur = (r->cur + 1) % r->nblocks;
	r->handed++;
}

/* Takes the current block if the kernel has handed it over. */
static int take(struct nf_ring *r)
{
	struct tpacket_block_desc *b = block(r, r->cur);

	if (!(__atomic_load_n(&b->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER))
		return 0;
	r->held = b;
	r->left = b->hdr.bh1.num_pkts;
	r->next_off = b->hdr.bh1.offset_to_first_pkt;
	return 1;
}

/* The held block's next packet into *f: 1, or 0 if its offsets leave the
 * block (the rest of the block is then skipped). */
static int next_in_block(struct nf_ring *r, struct nf_ring_frame *f)
{
	const uint8_t *base = (const uint8_t *)r->held;
	const struct tpacket3_hdr *h;
	const struct sockaddr_ll *sll;
	uint32_t off = r->next_off;

	if (off > r->block_size - TPACKET3_HDRLEN)
		return 0;
	h = (const struct tpacket3_hdr *)(base + off);
	sll = (const struct sockaddr_ll *)(base + off + TPACKET_ALIGN(sizeof(*h)));
	if (h->tp_net > r->block_size - off || h->tp_snaplen > r->block_size - off - h->tp_net)
		return 0;
	f->ts_ns = (uint64_t)h->tp_sec * 1000000000u + h->tp_nsec;
	f->ethertype = ntohs(sll->sll_protocol);
	f->pkttype = sll->sll_pkttype;
	f->ifindex = sll->sll_ifindex;
	f->caplen = h->tp_snaplen;
	f->origlen = h->tp_len;
	f->data = base + off + h->tp_net;
	r->left--;
	r->next_off = off + h->tp_next_offset;
	if (r->left && h->tp_next_offset == 0)
		r->left = 0;
	return 1;
}

/* A queue's next batch read (none waiting: 0). */
static unsigned queue_fill(struct nf_ring *r)
{
	struct nf_ring_queue *q = r->q;
	int n;

	for (unsigned i = 0; i < QBATCH; i++) {
		q->iov[i] = (struct iovec){ q->data[i], NF_RING_SNAP };
		q->m[i].msg_hdr = (struct msghdr){
			.msg_name = &q->from[i], .msg_namelen = sizeof(q->from[i]),
			.msg_iov = &q->iov[i], .msg_iovlen = 1,
			.msg_control = q->ctl[i], .msg_controllen = sizeof(q->ctl[i]),
		};
	}
	n = recvmmsg(r->fd, q->m, QBATCH, MSG_DONTWAIT, NULL);
	q->next = 0;
	q->n = n > 0 ? (unsigned)n : 0;
	return q->n;
}

/* Frame i of a queue's batch into *f: its time and length from its
 * control messages (none: now, and the bytes read). */
static void queue_frame(struct nf_ring_queue *q, unsigned i, struct nf_ring_frame *f)
{
	struct msghdr *h = &q->m[i].msg_hdr;
	struct cmsghdr *cm;
	struct timespec ts = { 0, 0 };

	f->caplen = q->m[i].msg_len < NF_RING_SNAP ? q->m[i].msg_len : NF_RING_SNAP;
	f->origlen = q->m[i].msg_len;
	for (cm = CMSG_FIRSTHDR(h); cm; cm = CMSG_NXTHDR(h, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(ts)))
			memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
		if (cm->cmsg_level == SOL_PACKET && cm->cmsg_type == PACKET_AUXDATA &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(struct tpacket_auxdata))) {
			struct tpacket_auxdata aux;

			memcpy(&aux, CMSG_DATA(cm), sizeof(aux));
			f->origlen = aux.tp_len;
		}
	}
	if (!ts.tv_sec)
		clock_gettime(CLOCK_REALTIME, &ts);
	f->ts_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	f->ethertype = ntohs(q->from[i].sll_protocol);
	f->pkttype = q->from[i].sll_pkttype;
	f->ifindex = q->from[i].sll_ifindex;
	f->data = q->data[i];
}

static int queue_take(struct nf_ring *r, struct nf_ring_frame *f)
{
	struct nf_ring_queue *q = r->q;

	if (q->next >= q->n && !queue_fill(r))
		return 0;
	queue_frame(q, q->next++, f);
	q->frames++;
	return 1;
}

int nf_ring_take(struct nf_ring *r, struct nf_ring_frame *f)
{
	if (r->q)
		return queue_take(r, f);
	for (;;) {
		if (r->held && r->left && next_in_block(r, f))
			return 1;
		if (r->held)
			release(r);
		if (!take(r))
			return 0;
	}
}

int nf_ring_next(struct nf_ring *r, int timeout_ms, struct nf_ring_frame *f)
{
	struct pollfd p = { .fd = r->fd, .events = POLLIN | POLLERR };
	int n;

	if (nf_ring_take(r, f))
		return 1;
	n = poll(&p, 1, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -1;
	return n == 0 ? 0 : nf_ring_take(r, f);
}

int nf_ring_stats(struct nf_ring *r, struct nf_ring_stats *s)
{
	struct tpacket_stats_v3 st;
	socklen_t len = sizeof(st);

	memset(&st, 0, sizeof(st));
	if (getsockopt(r->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len))
		return -errno;
	r->total.packets += st.tp_packets;
	r->total.drops += st.tp_drops;
	*s = r->total;
	return 0;
}

int nf_ring_fd(const struct nf_ring *r)
{
	return r->fd;
}

unsigned nf_ring_loopback(const struct nf_ring *r)
{
	return r->lo;
}

size_t nf_ring_bytes(const struct nf_ring *r)
{
	return r->map_len;
}

uint64_t nf_ring_blocks(const struct nf_ring *r, unsigned *nblocks)
{
	*nblocks = r->nblocks;
	return r->q ? (r->q->frames + NF_RING_QUEUE_FRAMES - 1) / NF_RING_QUEUE_FRAMES : r->handed;
}

int nf_ring_stop(struct nf_ring *r)
{
	/* a filter that keeps nothing (binding to protocol 0 keeps the
	 * protocol bound: the kernel reads 0 as "the same") */
	struct sock_filter none[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
	struct sock_fprog prog = { .len = 1, .filter = none };

	return setsockopt(r->fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) ? -errno : 0;
}

void nf_ring_close(struct nf_ring *r)
{
	if (!r)
		return;
	if (r->map)
		munmap(r->map, r->map_len);
	if (r->fd >= 0)
		close(r->fd);
	free(r->q);
	free(r);
}
