/*
 * cap_int.h - what the capture readers share (src/wire/cap.c, pcap.c,
 * pcapng.c): the one read buffer over the file descriptor, the reader's
 * state, the error that ends a read. Not for use outside src/wire/.
 *
 * The buffer (NF_CAP_BUF bytes, made once at open) holds the bytes read
 * and not yet consumed; a reader asks for the next n bytes with
 * nf_cbuf_want (the buffer moves what is left to its front and reads
 * more when it must) and consumes them with nf_cbuf_take. Records point
 * into it until the next want. n is at most NF_CAP_BUF; a longer block
 * is read through with nf_cbuf_skip, never held.
 */
#ifndef NF_CAP_INT_H
#define NF_CAP_INT_H

#include <stdint.h>

#include "nf_cap.h"

/* Bytes asked of one read: what the copy writes is still in the cache
 * when the reader gets to it (a read of 4 MiB at once was 20% slower). */
#define NF_CAP_READ (256u << 10)

/* The read buffer: a record of NF_CAP_RECORD_MAX and its header fit,
 * and reads stay large (1.5 MiB: 4 MiB cost scan's bench 2.5 MB of RSS). The fuzz target builds with a smaller one
 * (-DNF_CAP_BUF=65536: a record longer is then "too long" instead, and
 * blocks are read through with small inputs). */
#ifndef NF_CAP_BUF
#define NF_CAP_BUF (NF_CAP_RECORD_MAX + 2 * NF_CAP_READ)
#endif
/* Where the buffer's bytes go while records are small: a record of up
 * to a read's size never makes it use more (malloc'ed but never touched,
 * the rest of the buffer costs no memory: scan's bench, 1 MB of RSS). */
#define NF_CAP_WINDOW (NF_CAP_BUF < 2 * NF_CAP_READ ? NF_CAP_BUF : 2 * NF_CAP_READ)
/* pcapng: the interfaces one section may define (memory fixed at open). */
#define NF_CAP_IFACES 256

struct nf_cbuf {
	int fd;
	uint8_t *mem;   /* NF_CAP_BUF bytes */
	uint32_t start; /* the next unconsumed byte in mem */
	uint32_t end;   /* one past the last byte read into mem */
	uint32_t ready; /* mem's bytes whose pages were taken in (cap.c) */
	uint64_t pos;   /* file offset of mem[start] */
	uint64_t read;  /* bytes read from fd so far */
	int eof;        /* read returned 0 */
	int err;        /* read's errno, 0 if none */
};

/* A pcapng interface: its link type, snaplen and how its time units
 * become nanoseconds: ns = units * mul; for a resolution finer than 1 ns
 * (10^-exp, exp > 9) ns = units / div (div = 10^(exp-9)); for 2^-exp,
 * ns = units * 10^9 >> exp. */
struct nf_cap_iface {
	uint32_t link;
	uint32_t snaplen; /* 0: none given */
	uint64_t mul;     /* ns per unit, 0 if not a whole number */
	unsigned __int128 div; /* 10^(exp-9) */
	uint8_t base2;    /* if_tsresol's base: 0 ten, 1 two */
	uint8_t exp;      /* and its exponent */
	int64_t offset_s; /* if_tsoffset, seconds */
};

enum nf_cap_state { NF_CAP_OK = 0, NF_CAP_END = 1, NF_CAP_FAILED = -1 };

struct nf_cap {
	struct nf_cbuf b;
	char name[256]; /* the file's, as messages give it */
	int state;      /* enum nf_cap_state */
	int (*next)(struct nf_cap *c, struct nf_frame *f);
	char err[NF_CAP_ERR_MAX];
	/* pcap */
	int be;           /* the file (pcapng: the section) is big-endian */
	int nano;         /* ns timestamps */
	int pcap;         /* a pcap file (nf_pcap_record reads it) */
	int swap;         /* pcap: the file's byte order is not this machine's */
	uint32_t sub_ns;  /* pcap: ns in a unit of the record's second fraction */
	uint32_t snaplen;
	uint32_t link;
	/* pcapng: the current section's interfaces */
	uint32_t nifaces;
	uint64_t last_ts; /* the last timestamp of the section (SPB's) */
	struct nf_cap_iface *ifaces; /* NF_CAP_IFACES */
};

/*
 * Makes sure the n bytes at the current position are in the buffer,
 * reading what it must. Returns 1 with *p pointing to them, 0 at the end
 * of the file with none of them there, or -1: some but not all (*have
 * says how many), a read error (b->err set), or n > NF_CAP_BUF (b->err
 * EFBIG; never for a record of NF_CAP_RECORD_MAX and its header).
 * nf_cbuf_want_slow is its path when the bytes are not all there yet
 * (cap.c); the test before it is inline, as it runs once a record.
 */
int nf_cbuf_want_slow(struct nf_cbuf *b, uint32_t n, const uint8_t **p, uint32_t *have);

static inline int nf_cbuf_want(struct nf_cbuf *b, uint32_t n, const uint8_t **p,
			       uint32_t *have)
{
	if (__builtin_expect(b->end - b->start >= n, 1)) {
		*p = b->mem + b->start;
		if (have)
			*have = n;
		return 1;
	}
	return nf_cbuf_want_slow(b, n, p, have);
}

/* Consumes n bytes that nf_cbuf_want made available. */
static inline void nf_cbuf_take(struct nf_cbuf *b, uint32_t n)
{
	b->start += n;
	b->pos += n;
}

/* Consumes the next n bytes, any n, reading through them. Returns 0, or
 * -1 if the file ends first or a read fails (b->err set). */
int nf_cbuf_skip(struct nf_cbuf *b, uint64_t n);

/* Ends the read with "NAME: offset OFF: why" (printf's format); returns
 * -1, what nf_cap_next then returns. */
int nf_cap_fail(struct nf_cap *c, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The message for a want or skip that came short at off: the read's
 * error, or "what truncated: the file ends at ..." Returns -1. */
int nf_cap_short(struct nf_cap *c, uint64_t off, const char *what);

/* Is link a link type nf_pkt_decode reads (a file's, not NF_LINK_NETWORK)? */
int nf_cap_link_known(uint32_t link);

/* Each format's start, after cap.c sniffed its magic (nothing consumed
 * yet), and its nf_cap_next. Start returns 0, or -1 with c->err set. */
int nf_pcap_start(struct nf_cap *c);
int nf_pcapng_start(struct nf_cap *c);

/* A 32-bit number of the file at p: one load, turned when the file's
 * byte order is not ours (swap). */
static inline uint32_t nf_cap_rd32(const uint8_t *p, int swap)
{
	uint32_t v;

	__builtin_memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

#define NF_PCAP_REC_HDR 16 /* a pcap record's header: seconds, fraction, lengths */

/* The pcap record whose header is at p, its caplen bytes all in the
 * buffer, as f; consumed. */
static inline void nf_pcap_take(struct nf_cap *c, const uint8_t *p, uint32_t caplen,
				struct nf_frame *f)
{
	f->ts_ns = (uint64_t)nf_cap_rd32(p, c->swap) * 1000000000u +
		   (uint64_t)nf_cap_rd32(p + 4, c->swap) * c->sub_ns;
	f->origlen = nf_cap_rd32(p + 12, c->swap);
	f->offset = c->b.pos;
	f->link = c->link;
	f->caplen = caplen;
	f->dir = 0;
	f->data = p + NF_PCAP_REC_HDR;
	nf_cbuf_take(&c->b, NF_PCAP_REC_HDR + caplen);
}

/*
 * The next record of a pcap file at once, when it is all in the buffer
 * and its length within the snaplen (nearly every record): 1, f filled,
 * the record consumed. 0 otherwise, nothing consumed: nf_cap_next then
 * reads, ends or fails. Inline: it runs once a frame (feed.c, pcap.c).
 */
static inline int nf_pcap_record(struct nf_cap *c, struct nf_frame *f)
{
	uint32_t avail = c->b.end - c->b.start, caplen;
	const uint8_t *p = c->b.mem + c->b.start;

	if (__builtin_expect(!c->pcap || c->state != NF_CAP_OK || avail < NF_PCAP_REC_HDR, 0))
		return 0;
	caplen = nf_cap_rd32(p + 8, c->swap);
	if (__builtin_expect(caplen > c->snaplen || caplen > avail - NF_PCAP_REC_HDR, 0))
		return 0;
	nf_pcap_take(c, p, caplen, f);
	return 1;
}

/*
 * The next block of a pcapng file at once, when it is an enhanced packet
 * block whole in the buffer that the reader would take without a word
 * (a possible length, its trailer, a known interface, the packet within
 * its block and snaplen, its options whole): 1, f filled, the block
 * consumed. 0 otherwise, nothing consumed: nf_cap_next then reads the
 * block, skips it, ends or fails (pcapng.c; feed.c calls it too).
 */
int nf_pcapng_record(struct nf_cap *c, struct nf_frame *f);

/* A 16- or 32-bit number of the file, big-endian if be, else little. */
static inline uint16_t nf_cap_u16(const uint8_t *p, int be)
{
	return be ? (uint16_t)(p[0] << 8 | p[1]) : (uint16_t)(p[1] << 8 | p[0]);
}

static inline uint32_t nf_cap_u32(const uint8_t *p, int be)
{
	if (be)
		return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

#endif
