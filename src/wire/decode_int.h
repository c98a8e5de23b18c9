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

#include "ethertype_int.h"
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
	const uint8_t *ip; /* the IPv4 header in the frame, whose numbers these are */
	uint32_t saddr, daddr;
	uint16_t sport, dport;
	uint32_t seq, ack, len;
	uint16_t win;
	uint8_t flags;
	uint8_t th;       /* the TCP header's length */
	uint8_t l2;       /* the link header's: 14, or a Linux cooked header's 16 or 20 */
	uint8_t dir;      /* a cooked header's direction (enum nf_pkt_dir), 0 none */
};

/* A Linux cooked header's packet type as a direction: 4 is outgoing;
 * 0-3 (to us, broadcast, multicast, to another host) were received;
 * others say none (0). */
NF_INLINE uint8_t sll_pkttype_dir(unsigned pkttype)
{
	return pkttype == 4 ? NF_DIR_OUT : pkttype <= 3 ? NF_DIR_IN : 0;
}

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

NF_INLINE uint64_t be64_at(const uint8_t *p)
{
	uint64_t v;

	__builtin_memcpy(&v, p, 8);
	return __builtin_bswap64(v);
}

/*
 * The frame nearly every capture is made of: Ethernet without a tag, or
 * a Linux cooked header (tcpdump -i any), then IPv4 without options,
 * neither fragment nor offload (a total length given), TCP with a
 * header that fits it. Reads its numbers into *k and returns 1; returns
 * 0 for any other frame (the general path decides then). Loads only:
 * the caller may keep everything in registers.
 */
NF_INLINE int nf_pkt_common_read(uint32_t link, const uint8_t *d, size_t caplen,
				 struct nf_common *k)
{
	uint32_t tot, th, l2;
	const uint8_t *ip;

	if (link == NF_LINK_ETHERNET) {
		if (caplen < 14 || be16_at(d + 12) != NF_ETHERTYPE_IP)
			return 0;
		l2 = 14;
		k->dir = 0;
	} else if (link == NF_LINK_LINUX_SLL2) {
		if (caplen < 20 || be16_at(d) != NF_ETHERTYPE_IP)
			return 0;
		l2 = 20;
		k->dir = sll_pkttype_dir(d[10]);
	} else if (link == NF_LINK_LINUX_SLL) {
		if (caplen < 16 || be16_at(d + 14) != NF_ETHERTYPE_IP)
			return 0;
		l2 = 16;
		k->dir = sll_pkttype_dir(be16_at(d));
	} else {
		return 0;
	}
	ip = d + l2;
	if (caplen < l2 + 20 + 16 || ip[0] != 0x45 || (be16_at(ip + 6) & 0x3fff) || ip[9] != 6)
		return 0;
	tot = be16_at(ip + 2);
	th = (uint32_t)(ip[32] >> 4) * 4;
	if (th < 20 || tot < 20 + th)
		return 0;
	k->ip = ip;
	__builtin_memcpy(&k->saddr, ip + 12, 4);
	__builtin_memcpy(&k->daddr, ip + 16, 4);
	k->sport = be16_at(ip + 20);
	k->dport = be16_at(ip + 22);
	k->seq = be32_at(ip + 24);
	k->ack = be32_at(ip + 28);
	k->flags = ip[33];
	k->win = be16_at(ip + 34);
	k->len = tot - 20 - th;
	k->th = (uint8_t)th;
	k->l2 = (uint8_t)l2;
	return 1;
}

/* The segment of the common frame d (caplen bytes) whose numbers are k,
 * into *p as the general path would decode it (ts_ns left; dir set
 * where a cooked header says it, else left). */
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
	if (k->dir)
		p->dir = k->dir;
	if (k->flags & NF_TCP_SYN) {
		const struct cur t = { d + k->l2 + 20, caplen - k->l2 - 20 };

		tcp_syn_options(&t, k->th, p);
	}
}

/* The common frame (nf_pkt_common_read) into *p (ts_ns left; dir as
 * nf_pkt_common_write sets it): 1; 0 for any other frame, *p unspecified. */
NF_INLINE int nf_pkt_decode_common(uint32_t link, const uint8_t *d, size_t caplen, struct nf_pkt *p)
{
	struct nf_common k;

	if (!nf_pkt_common_read(link, d, caplen, &k))
		return 0;
	nf_pkt_common_write(&k, d, caplen, p);
	return 1;
}

#endif
