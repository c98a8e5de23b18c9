/*
 * decode_int.h - what of the decoder (decode.c) another reader of frames
 * inlines: the cursor over a frame's bytes, and the common frame's
 * decoding, which feed.c runs inline on every record of a pcap file. Not
 * for use outside src/wire/.
 */
#ifndef NF_DECODE_INT_H
#define NF_DECODE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "nf_pkt.h"

#define NF_INLINE static inline __attribute__((always_inline))

/* The bytes of a frame still to decode. */
struct cur {
	const uint8_t *p;
	size_t len;
};

/* Are n bytes left at i? */
NF_INLINE int cur_has(const struct cur *c, size_t i, size_t n)
{
	return c->len >= n && i <= c->len - n;
}

/* The byte and the big-endian numbers at i (cur_has checked). */
NF_INLINE uint8_t cur_u8(const struct cur *c, size_t i)
{
	return c->p[i];
}

NF_INLINE uint16_t cur_be16(const struct cur *c, size_t i)
{
	return (uint16_t)(c->p[i] << 8 | c->p[i + 1]);
}

NF_INLINE uint32_t cur_be32(const struct cur *c, size_t i)
{
	return (uint32_t)c->p[i] << 24 | (uint32_t)c->p[i + 1] << 16 | (uint32_t)c->p[i + 2] << 8 |
	       c->p[i + 3];
}

/* Moves the cursor n bytes on (cur_has checked). */
NF_INLINE void cur_skip(struct cur *c, size_t n)
{
	c->p += n;
	c->len -= n;
}

/* An IPv4 address a into the 16 bytes of to, zeros after it, in two
 * 8-byte stores: what reads it next (the table's hash, at once) reads
 * 8 bytes at a time, and a load that spans two stores still in flight
 * waits for both to reach the cache (a quarter of the hash's time). */
NF_INLINE void addr4(uint8_t *to, const uint8_t *a)
{
	uint32_t v;
	uint64_t lo, zero = 0;

	__builtin_memcpy(&v, a, 4);
	lo = v;
	__builtin_memcpy(to, &lo, 8);
	__builtin_memcpy(to + 8, &zero, 8);
}

/* A SYN's MSS and window-scale options, from what of [20, th) was captured. */
NF_INLINE void tcp_syn_options(const struct cur *c, size_t th, struct nf_pkt *p)
{
	size_t i = 20, end = th < c->len ? th : c->len;

	while (i < end) {
		unsigned kind = cur_u8(c, i), olen;

		if (kind == 0)
			break;
		if (kind == 1) {
			i++;
			continue;
		}
		if (i + 1 >= end)
			break;
		olen = cur_u8(c, i + 1);
		if (olen < 2 || olen > end - i)
			break;
		if (kind == 2 && olen == 4)
			p->mss = cur_be16(c, i + 2);
		else if (kind == 3 && olen == 3) /* RFC 7323: a shift above 14 is 14 */
			p->wscale = (int8_t)(cur_u8(c, i + 2) > 14 ? 14 : cur_u8(c, i + 2));
		i += olen;
	}
}

/* ---- the common frame ---------------------------------------------------------- */

/* The numbers of a common frame (nf_pkt_common_read), host order but the
 * addresses, which are as on the wire. */
struct nf_common {
	uint32_t saddr, daddr;
	uint16_t sport, dport;
	uint32_t seq, ack, len;
	uint16_t win;
	uint8_t flags;
	uint8_t th; /* the TCP header's length */
};

NF_INLINE uint16_t be16_at(const uint8_t *p)
{
	uint16_t v;

	__builtin_memcpy(&v, p, 2);
	return __builtin_bswap16(v);
}

NF_INLINE uint32_t be32_at(const uint8_t *p)
{
	uint32_t v;

	__builtin_memcpy(&v, p, 4);
	return __builtin_bswap32(v);
}

/*
 * The frame nearly every capture is made of: Ethernet without a tag,
 * IPv4 without options, neither fragment nor offload (a total length
 * given), TCP with a header that fits it. Reads its numbers into *k and
 * returns 1; returns 0 for any other frame (the general path decides
 * then). Loads only: the caller may keep everything in registers.
 */
NF_INLINE int nf_pkt_common_read(uint32_t link, const uint8_t *d, size_t caplen,
				 struct nf_common *k)
{
	uint32_t tot, th;

	if (link != NF_LINK_ETHERNET || caplen < 14 + 20 + 16 || be16_at(d + 12) != 0x0800 ||
	    d[14] != 0x45 || (be16_at(d + 20) & 0x3fff) || d[23] != 6)
		return 0;
	tot = be16_at(d + 16);
	th = (uint32_t)(d[46] >> 4) * 4;
	if (th < 20 || tot < 20 + th)
		return 0;
	__builtin_memcpy(&k->saddr, d + 26, 4);
	__builtin_memcpy(&k->daddr, d + 30, 4);
	k->sport = be16_at(d + 34);
	k->dport = be16_at(d + 36);
	k->seq = be32_at(d + 38);
	k->ack = be32_at(d + 42);
	k->flags = d[47];
	k->win = be16_at(d + 48);
	k->len = tot - 20 - th;
	k->th = (uint8_t)th;
	return 1;
}

/* The segment of the common frame d (caplen bytes) whose numbers are k,
 * into *p as the general path would decode it (dir and ts_ns left). */
NF_INLINE void nf_pkt_common_write(const struct nf_common *k, const uint8_t *d, size_t caplen,
				   struct nf_pkt *p)
{
	p->family = AF_INET;
	p->flags = k->flags;
	p->wscale = -1;
	p->sport = k->sport;
	p->dport = k->dport;
	addr4(p->saddr, (const uint8_t *)&k->saddr);
	addr4(p->daddr, (const uint8_t *)&k->daddr);
	p->seq = k->seq;
	p->ack = k->ack;
	p->len = k->len;
	p->win = k->win;
	p->mss = 0;
	if (k->flags & NF_TCP_SYN) {
		const struct cur t = { d + 34, caplen - 34 };

		tcp_syn_options(&t, k->th, p);
	}
}

/* The common frame (nf_pkt_common_read) into *p (dir and ts_ns left): 1;
 * 0 for any other frame, *p unspecified. */
NF_INLINE int nf_pkt_decode_common(uint32_t link, const uint8_t *d, size_t caplen, struct nf_pkt *p)
{
	struct nf_common k;

	if (!nf_pkt_common_read(link, d, caplen, &k))
		return 0;
	nf_pkt_common_write(&k, d, caplen, p);
	return 1;
}

#endif
