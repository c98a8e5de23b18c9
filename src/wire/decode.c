/*
 * decode.c - a captured frame to one TCP segment (nf_pkt.h): the link
 * header (Ethernet and its VLAN tags, Linux cooked v1 and v2, raw IP,
 * BSD loopback; a PPPoE session's header after it), IPv4 with options
 * or IPv6 with extension headers, the TCP header's first 16 bytes and a
 * SYN's options.
 *
 * The payload length comes from the IP header's lengths, never from
 * what was captured, so a capture cut short (`tcpdump -s 96`) still
 * gives each segment's size. Runs on every packet of a capture: no call,
 * no division, no allocation; the general path reads every byte through
 * the cursor, a bounds check before it; the common frame's shortcut
 * (decode_int.h) tests the captured length once against the furthest
 * byte it reads.
 */
#include <stdint.h>
#include <sys/socket.h>

#include "decode_int.h"
#include "ethertype_int.h"

/* ---- link headers -------------------------------------------------------------- */

/* Ethernet II: the ethertype after any 802.1Q, 802.1ad (QinQ) tags. */
NF_INLINE enum nf_pkt_skip link_ethernet(struct cur *c, uint16_t *proto)
{
	size_t off = 14;
	uint16_t type;

	if (!cur_has(c, 0, 14))
		return NF_SKIP_SHORT;
	type = cur_be16(c, 12);
	while (type == NF_ETHERTYPE_8021Q || type == NF_ETHERTYPE_8021AD ||
	       type == NF_ETHERTYPE_8021QINQ) {
		if (!cur_has(c, off, 4))
			return NF_SKIP_SHORT;
		type = cur_be16(c, off + 2);
		off += 4;
	}
	cur_skip(c, off);
	*proto = type;
	return NF_SKIP_NONE;
}

/* A Linux cooked header's packet type as the segment's direction, where
 * it says one (decode_int.h: sll_pkttype_dir). */
NF_INLINE void sll_dir(unsigned pkttype, struct nf_pkt *p)
{
	uint8_t dir = sll_pkttype_dir(pkttype);

	if (dir)
		p->dir = dir;
}

/* Linux cooked v1 (16 bytes, protocol last) and v2 (20, protocol first). */
NF_INLINE enum nf_pkt_skip link_sll(struct cur *c, int v2, uint16_t *proto, struct nf_pkt *p)
{
	size_t n = v2 ? 20 : 16;

	if (!cur_has(c, 0, n))
		return NF_SKIP_SHORT;
	*proto = v2 ? cur_be16(c, 0) : cur_be16(c, 14);
	sll_dir(v2 ? cur_u8(c, 10) : cur_be16(c, 0), p);
	cur_skip(c, n);
	return NF_SKIP_NONE;
}

/* BSD loopback's 4-byte address family (NULL: the writer's byte order,
 * either; LOOP: network order). AF_INET is 2 everywhere; AF_INET6 is 24
 * (NetBSD, OpenBSD), 28 (FreeBSD) or 30 (macOS). */
NF_INLINE enum nf_pkt_skip link_bsd(struct cur *c, int network_order, uint16_t *proto)
{
	uint32_t be, le, fam;

	if (!cur_has(c, 0, 4))
		return NF_SKIP_SHORT;
	be = cur_be32(c, 0);
	le = __builtin_bswap32(be);
	fam = network_order || le > 0xffff ? be : le;
	if (fam == 2)
		*proto = NF_ETHERTYPE_IP;
	else if (fam == 24 || fam == 28 || fam == 30)
		*proto = NF_ETHERTYPE_IPV6;
	else
		return NF_SKIP_NOT_IP;
	cur_skip(c, 4);
	return NF_SKIP_NONE;
}

/* Raw IP: the version from the first nibble (228 and 229 say it too). */
NF_INLINE enum nf_pkt_skip link_raw(struct cur *c, uint32_t link, uint16_t *proto)
{
	unsigned v;

	if (!cur_has(c, 0, 1))
		return NF_SKIP_SHORT;
	v = cur_u8(c, 0) >> 4;
	if (v == 4 && link != NF_LINK_IPV6)
		*proto = NF_ETHERTYPE_IP;
	else if (v == 6 && link != NF_LINK_IPV4)
		*proto = NF_ETHERTYPE_IPV6;
	else
		return link == NF_LINK_RAW ? NF_SKIP_NOT_IP : NF_SKIP_BAD;
	return NF_SKIP_NONE;
}

/* A PPPoE session header (version and type, code, session, length: 6
 * bytes) and PPP's 2-byte protocol: IPv4 and IPv6 become their
 * ethertypes; PPP's own (LCP, IPCP...) is not IP. What a DSL link
 * carries, seen on the Ethernet side of its modem or router. */
NF_INLINE enum nf_pkt_skip link_pppoe(struct cur *c, uint16_t *proto)
{
	uint16_t ppp;

	if (!cur_has(c, 0, 8))
		return NF_SKIP_SHORT;
	ppp = cur_be16(c, 6);
	if (ppp == NF_PPP_IP)
		*proto = NF_ETHERTYPE_IP;
	else if (ppp == NF_PPP_IPV6)
		*proto = NF_ETHERTYPE_IPV6;
	else
		return NF_SKIP_NOT_IP;
	cur_skip(c, 8);
	return NF_SKIP_NONE;
}

/* The link header of link type link: c moved to the network header,
 * *proto its ethertype. */
NF_INLINE enum nf_pkt_skip link_header(uint32_t link, uint16_t ethertype, struct cur *c,
				       uint16_t *proto, struct nf_pkt *p)
{
	switch (link) {
	case NF_LINK_ETHERNET:
		return link_ethernet(c, proto);
	case NF_LINK_LINUX_SLL:
		return link_sll(c, 0, proto, p);
	case NF_LINK_LINUX_SLL2:
		return link_sll(c, 1, proto, p);
	case NF_LINK_RAW:
	case NF_LINK_IPV4:
	case NF_LINK_IPV6:
		return link_raw(c, link, proto);
	case NF_LINK_NULL:
		return link_bsd(c, 0, proto);
	case NF_LINK_LOOP:
		return link_bsd(c, 1, proto);
	case NF_LINK_NETWORK:
		*proto = ethertype;
		return NF_SKIP_NONE;
	default:
		return NF_SKIP_LINK;
	}
}

/* ---- IP ------------------------------------------------------------------------ */

/* IPv4: *hlen the header's length, *plen the bytes after it by the total
 * length (wire, the bytes on the wire from here, when it is 0: a
 * segmentation offload's capture). */
NF_INLINE enum nf_pkt_skip ipv4(const struct cur *c, size_t wire, size_t *hlen, size_t *plen,
				struct nf_pkt *p)
{
	size_t ihl, tot;

	if (!cur_has(c, 0, 20))
		return NF_SKIP_SHORT;
	ihl = (size_t)(cur_u8(c, 0) & 0x0f) * 4;
	if (cur_u8(c, 0) >> 4 != 4 || ihl < 20)
		return NF_SKIP_BAD;
	if (cur_be16(c, 6) & 0x3fff) /* MF or an offset */
		return NF_SKIP_FRAGMENT;
	if (cur_u8(c, 9) != 6)
		return NF_SKIP_NOT_TCP;
	tot = cur_be16(c, 2);
	if (tot == 0)
		tot = wire;
	if (tot < ihl)
		return NF_SKIP_BAD;
	p->family = AF_INET;
	addr4(p->saddr, c->p + 12);
	addr4(p->daddr, c->p + 16);
	*hlen = ihl;
	*plen = tot - ihl;
	return NF_SKIP_NONE;
}

/* IPv6 and its extension headers up to TCP: *hlen all of them, *plen the
 * bytes after them by the payload length (wire less 40 when it is 0). */
NF_INLINE enum nf_pkt_skip ipv6(const struct cur *c, size_t wire, size_t *hlen, size_t *plen,
				struct nf_pkt *p)
{
	size_t off = 40, pl;
	unsigned nh;

	if (!cur_has(c, 0, 40))
		return NF_SKIP_SHORT;
	if (cur_u8(c, 0) >> 4 != 6)
		return NF_SKIP_BAD;
	pl = cur_be16(c, 4);
	if (pl == 0) /* offload or a jumbogram: the frame's length says it */
		pl = wire > 40 ? wire - 40 : 0;
	for (nh = cur_u8(c, 6); nh != 6;) {
		if (nh != 0 && nh != 43 && nh != 60 && nh != 44 && nh != 51)
			return NF_SKIP_NOT_TCP; /* ESP, no next header, UDP, ICMPv6... */
		if (!cur_has(c, off, 8)) /* every extension header is 8 bytes or more */
			return NF_SKIP_SHORT;
		if (nh == 0 || nh == 43 || nh == 60) { /* hop-by-hop, routing, destination */
			nh = cur_u8(c, off);
			off += ((size_t)cur_u8(c, off + 1) + 1) * 8;
		} else if (nh == 44) { /* fragment: an atomic one (offset 0, no M) is whole */
			if (cur_be16(c, off + 2) & 0xfff9)
				return NF_SKIP_FRAGMENT;
			nh = cur_u8(c, off);
			off += 8;
		} else { /* AH: its length in 4-byte units, less 2 */
			nh = cur_u8(c, off);
			off += ((size_t)cur_u8(c, off + 1) + 2) * 4;
		}
	}
	if (off - 40 > pl)
		return NF_SKIP_BAD;
	p->family = AF_INET6;
	__builtin_memcpy(p->saddr, c->p + 8, 16);
	__builtin_memcpy(p->daddr, c->p + 24, 16);
	*hlen = off;
	*plen = pl - (off - 40);
	return NF_SKIP_NONE;
}

/* ---- TCP ----------------------------------------------------------------------- */

/* The TCP header at the cursor, plen the bytes the IP header gives it. */
NF_INLINE enum nf_pkt_skip tcp(const struct cur *c, size_t plen, struct nf_pkt *p)
{
	size_t th;

	if (!cur_has(c, 0, 16))
		return NF_SKIP_SHORT;
	th = (size_t)(cur_u8(c, 12) >> 4) * 4;
	if (th < 20 || th > plen)
		return NF_SKIP_BAD;
	p->sport = cur_be16(c, 0);
	p->dport = cur_be16(c, 2);
	p->seq = cur_be32(c, 4);
	p->ack = cur_be32(c, 8);
	p->flags = cur_u8(c, 13);
	p->win = cur_be16(c, 14);
	p->len = (uint32_t)(plen - th);
	p->mss = 0;
	p->wscale = -1;
	if (p->flags & NF_TCP_SYN)
		tcp_syn_options(c, th, p);
	return NF_SKIP_NONE;
}

enum nf_pkt_skip nf_pkt_decode(uint32_t link, uint16_t ethertype, const uint8_t *data,
			       size_t caplen, size_t origlen, struct nf_pkt *p)
{
	if (nf_pkt_decode_common(link, data, caplen, p))
		return NF_SKIP_NONE;
	return nf_pkt_decode_general(link, ethertype, data, caplen, origlen, p);
}

enum nf_pkt_skip nf_pkt_decode_general(uint32_t link, uint16_t ethertype, const uint8_t *data,
				       size_t caplen, size_t origlen, struct nf_pkt *p)
{
	struct cur c = { data, caplen };
	size_t wire, hlen = 0, plen = 0;
	uint16_t proto = 0;
	enum nf_pkt_skip r = link_header(link, ethertype, &c, &proto, p);

	if (r == NF_SKIP_NONE && proto == NF_ETHERTYPE_PPPOES)
		r = link_pppoe(&c, &proto);
	if (r != NF_SKIP_NONE)
		return r;
	wire = (origlen > caplen ? origlen : caplen) - (caplen - c.len);
	if (proto == NF_ETHERTYPE_IP)
		r = ipv4(&c, wire, &hlen, &plen, p);
	else if (proto == NF_ETHERTYPE_IPV6)
		r = ipv6(&c, wire, &hlen, &plen, p);
	else
		return NF_SKIP_NOT_IP;
	if (r != NF_SKIP_NONE)
		return r;
	if (hlen > c.len)
		return NF_SKIP_SHORT;
	cur_skip(&c, hlen);
	return tcp(&c, plen, p);
}

const char *nf_pkt_skip_name(enum nf_pkt_skip why)
{
	static const char *const names[NF_SKIP_NKINDS] = {
		[NF_SKIP_NONE] = "TCP",
		[NF_SKIP_NOT_IP] = "not IP",
		[NF_SKIP_NOT_TCP] = "not TCP",
		[NF_SKIP_FRAGMENT] = "fragment",
		[NF_SKIP_SHORT] = "cut short",
		[NF_SKIP_BAD] = "bad header",
		[NF_SKIP_LINK] = "unknown link type",
	};

	return (unsigned)why < NF_SKIP_NKINDS ? names[why] : "?";
}
