/*
 * check_decode.c - the frame decoder (src/wire/decode.c) on frames built
 * here byte by byte: every link type, VLAN tags, IPv4 options and
 * fragments, IPv6 extension headers, frames cut by a snaplen, headers
 * that contradict themselves, a SYN's options; and the frames of a real
 * tcpdump capture (fixtures/lo-us.pcap) put under every other link type.
 */
#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wire/nf_cap.h"
#include "wire/nf_pkt.h"
#include "../unit/unit.h"

/* ---- building frames ------------------------------------------------------- */

struct seg {
	int v6;
	size_t ipopts;      /* IPv4: option bytes (a multiple of 4) */
	uint16_t tot;       /* IPv4 total length / IPv6 payload length; 0: the right one */
	int tot_zero;       /* write 0 there (a TSO capture) */
	uint16_t frag;      /* IPv4 flags + offset field */
	unsigned proto;     /* IPv4 protocol / IPv6 first next header; 0: TCP, HBH: 0 */
	const uint8_t *ext; /* IPv6 extension headers, as they are on the wire */
	size_t extlen;
	uint8_t doff;       /* TCP data offset in words; 0: 5 + options */
	uint8_t flags;
	const uint8_t *tcpopts;
	size_t optlen;      /* a multiple of 4 */
	size_t payload;
};

#define HBH 256 /* seg.proto: IPv6's hop-by-hop header first (next header 0) */

static void be16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void be32(uint8_t *p, uint32_t v)
{
	be16(p, v >> 16);
	be16(p + 2, v & 0xffff);
}

/* The IP and TCP headers and the payload of s at b; their length. */
static size_t put_ip_tcp(uint8_t *b, const struct seg *s)
{
	size_t th = 20 + s->optlen, iph = s->v6 ? 40 + s->extlen : 20 + s->ipopts;
	uint8_t *t = b + iph;
	size_t len = iph + th + s->payload;

	memset(b, 0, len);
	if (s->v6) {
		b[0] = 0x60;
		be16(b + 4, s->tot_zero ? 0 : s->tot ? s->tot : (unsigned)(len - 40));
		b[6] = s->proto ? (uint8_t)s->proto : 6;
		b[7] = 64;
		b[8] = 0x20, b[9] = 0x01, b[23] = 1;   /* 2001::1 */
		b[24] = 0x20, b[25] = 0x01, b[39] = 2; /* 2001::2 */
		memcpy(b + 40, s->ext, s->extlen);
	} else {
		b[0] = (uint8_t)(0x40 | (iph / 4));
		be16(b + 2, s->tot_zero ? 0 : s->tot ? s->tot : (unsigned)len);
		be16(b + 6, s->frag);
		b[8] = 64;
		b[9] = s->proto ? (uint8_t)s->proto : 6;
		b[12] = 10, b[15] = 1; /* 10.0.0.1 */
		b[16] = 10, b[19] = 2; /* 10.0.0.2 */
		memset(b + 20, 1, s->ipopts); /* NOPs */
	}
	be16(t, 40000);
	be16(t + 2, 80);
	be32(t + 4, 0xfffffff0u);
	be32(t + 8, 12345);
	t[12] = (uint8_t)((s->doff ? s->doff : th / 4) << 4);
	t[13] = s->flags ? s->flags : NF_TCP_ACK | NF_TCP_PSH;
	be16(t + 14, 512);
	memcpy(t + 20, s->tcpopts, s->optlen);
	return len;
}

/* An Ethernet header with ntags VLAN tags (each of tpid[i]) at b. */
static size_t put_eth(uint8_t *b, unsigned type, int ntags, const unsigned *tpid)
{
	size_t off = 12;

	memset(b, 0xaa, 12);
	for (int i = 0; i < ntags; i++, off += 4) {
		be16(b + off, tpid[i]);
		be16(b + off + 2, 20 + i);
	}
	be16(b + off, type);
	return off + 2;
}

static struct nf_pkt decoded;

/* Decodes the frame of link type link into decoded (dir preset to 77). */
static enum nf_pkt_skip dec(uint32_t link, const uint8_t *b, size_t caplen, size_t origlen)
{
	memset(&decoded, 0x5a, sizeof(decoded));
	decoded.dir = 77;
	return nf_pkt_decode(link, 0, b, caplen, origlen, &decoded);
}

/* An Ethernet frame of s into b; its length. */
static size_t eth_frame(uint8_t *b, const struct seg *s)
{
	size_t h = put_eth(b, s->v6 ? 0x86dd : 0x0800, 0, NULL);

	return h + put_ip_tcp(b + h, s);
}

static const uint8_t v4a[16] = { 10, 0, 0, 1 }, v4b[16] = { 10, 0, 0, 2 };
static const uint8_t v6a[16] = { 0x20, 0x01, [15] = 1 }, v6b[16] = { 0x20, 0x01, [15] = 2 };

/* decoded is s's segment (IPv4 or 6, 40000 -> 80, the fixed numbers). */
static void assert_segment(const struct seg *s)
{
	ck_assert_int_eq(decoded.family, s->v6 ? AF_INET6 : AF_INET);
	ck_assert_mem_eq(decoded.saddr, s->v6 ? v6a : v4a, 16);
	ck_assert_mem_eq(decoded.daddr, s->v6 ? v6b : v4b, 16);
	ck_assert_uint_eq(decoded.sport, 40000);
	ck_assert_uint_eq(decoded.dport, 80);
	ck_assert_uint_eq(decoded.seq, 0xfffffff0u);
	ck_assert_uint_eq(decoded.ack, 12345);
	ck_assert_uint_eq(decoded.flags, s->flags ? s->flags : NF_TCP_ACK | NF_TCP_PSH);
	ck_assert_uint_eq(decoded.win, 512);
	ck_assert_uint_eq(decoded.len, s->payload);
}

/* ---- link types ----------------------------------------------------------- */

START_TEST(test_decode_ethernet_ipv4)
{
	uint8_t b[256];
	struct seg s = { .payload = 33 };
	size_t n = eth_frame(b, &s);

	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NONE);
	assert_segment(&s);
	ck_assert_uint_eq(decoded.dir, 77); /* left as the caller set it */
	ck_assert_uint_eq(decoded.mss, 0);
	ck_assert_int_eq(decoded.wscale, -1);
}
END_TEST

START_TEST(test_decode_ethernet_ipv6)
{
	uint8_t b[256];
	struct seg s = { .v6 = 1, .payload = 100 };
	size_t n = eth_frame(b, &s);

	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NONE);
	assert_segment(&s);
}
END_TEST

START_TEST(test_decode_vlan_tags)
{
	static const unsigned tpids[][3] = {
		{ 0x8100 }, { 0x88a8, 0x8100 }, { 0x9100, 0x8100 }, { 0x88a8, 0x8100, 0x8100 }
	};
	static const int ntags[] = { 1, 2, 2, 3 };
	uint8_t b[256];
	struct seg s = { .payload = 7 };

	for (int i = 0; i < 4; i++) {
		size_t h = put_eth(b, 0x0800, ntags[i], tpids[i]);
		size_t n = h + put_ip_tcp(b + h, &s);

		ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NONE);
		assert_segment(&s);
		/* cut inside the last tag */
		ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, h - 3, n), NF_SKIP_SHORT);
	}
}
END_TEST

START_TEST(test_decode_ethernet_not_ip)
{
	uint8_t b[64] = { 0 };

	put_eth(b, 0x0806, 0, NULL); /* ARP */
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, 60, 60), NF_SKIP_NOT_IP);
	put_eth(b, 0x0040, 0, NULL); /* an 802.3 length */
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, 60, 60), NF_SKIP_NOT_IP);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, 13, 60), NF_SKIP_SHORT);
}
END_TEST

/* A PPPoE session frame of s (after ntags VLAN tags of 0x8100) with PPP
 * protocol ppp into b; its length. */
static size_t pppoe_frame(uint8_t *b, int ntags, unsigned ppp, const struct seg *s)
{
	static const unsigned tpid[2] = { 0x8100, 0x8100 };
	size_t h = put_eth(b, 0x8864, ntags, tpid), n;

	b[h] = 0x11; /* version 1, type 1 */
	b[h + 1] = 0; /* session data */
	be16(b + h + 2, 0x1234);
	be16(b + h + 6, ppp);
	n = put_ip_tcp(b + h + 8, s);
	be16(b + h + 4, (unsigned)(n + 2));
	return h + 8 + n;
}

START_TEST(test_decode_pppoe)
{
	uint8_t b[256];
	struct seg s4 = { .payload = 21 }, s6 = { .v6 = 1, .payload = 9 };
	size_t n;

	for (int tags = 0; tags < 3; tags++) {
		n = pppoe_frame(b, tags, 0x0021, &s4);
		ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NONE);
		assert_segment(&s4);
		/* cut in the PPPoE header or PPP's protocol */
		ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n - put_ip_tcp(b + 200, &s4) - 1, n),
				 NF_SKIP_SHORT);
		n = pppoe_frame(b, tags, 0x0057, &s6);
		ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NONE);
		assert_segment(&s6);
	}
	n = pppoe_frame(b, 0, 0xc021, &s4); /* LCP */
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NOT_IP);
	n = pppoe_frame(b, 0, 0x8021, &s4); /* IPCP */
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NOT_IP);
}
END_TEST

/* Linux cooked v1 (v2 = 0) or v2 frame of s with packet type pkttype. */
static size_t sll_frame(uint8_t *b, int v2, unsigned pkttype, const struct seg *s)
{
	unsigned proto = s->v6 ? 0x86dd : 0x0800;
	size_t h = v2 ? 20 : 16;

	memset(b, 0, h);
	if (v2) {
		be16(b, proto);
		be32(b + 4, 3); /* ifindex */
		be16(b + 8, 1); /* ARPHRD_ETHER */
		b[10] = (uint8_t)pkttype;
		b[11] = 6;
	} else {
		be16(b, pkttype);
		be16(b + 2, 1);
		be16(b + 4, 6);
		be16(b + 14, proto);
	}
	return h + put_ip_tcp(b + h, s);
}

START_TEST(test_decode_cooked_direction)
{
	static const uint8_t want[] = { NF_DIR_IN, NF_DIR_IN, NF_DIR_IN, NF_DIR_IN, NF_DIR_OUT, 77 };
	uint8_t b[256];
	struct seg s = { .v6 = _i, .payload = 9 };

	for (int v2 = 0; v2 <= 1; v2++) {
		for (unsigned t = 0; t <= 5; t++) {
			size_t n = sll_frame(b, v2, t, &s);

			ck_assert_int_eq(dec(v2 ? NF_LINK_LINUX_SLL2 : NF_LINK_LINUX_SLL, b, n, n),
					 NF_SKIP_NONE);
			assert_segment(&s);
			ck_assert_uint_eq(decoded.dir, want[t]);
		}
		ck_assert_int_eq(dec(v2 ? NF_LINK_LINUX_SLL2 : NF_LINK_LINUX_SLL, b, v2 ? 19 : 15, 99),
				 NF_SKIP_SHORT);
	}
}
END_TEST

START_TEST(test_decode_raw_ip)
{
	uint8_t b[256];
	struct seg s4 = { .payload = 3 }, s6 = { .v6 = 1, .payload = 4 };
	size_t n4 = put_ip_tcp(b, &s4);

	ck_assert_int_eq(dec(NF_LINK_RAW, b, n4, n4), NF_SKIP_NONE);
	assert_segment(&s4);
	ck_assert_int_eq(dec(NF_LINK_IPV4, b, n4, n4), NF_SKIP_NONE);
	assert_segment(&s4);
	ck_assert_int_eq(dec(NF_LINK_IPV6, b, n4, n4), NF_SKIP_BAD); /* says 6, is 4 */
	size_t n6 = put_ip_tcp(b, &s6);
	ck_assert_int_eq(dec(NF_LINK_RAW, b, n6, n6), NF_SKIP_NONE);
	assert_segment(&s6);
	ck_assert_int_eq(dec(NF_LINK_IPV6, b, n6, n6), NF_SKIP_NONE);
	ck_assert_int_eq(dec(NF_LINK_IPV4, b, n6, n6), NF_SKIP_BAD);
	b[0] = 0x50;
	ck_assert_int_eq(dec(NF_LINK_RAW, b, n6, n6), NF_SKIP_NOT_IP);
	ck_assert_int_eq(dec(NF_LINK_RAW, b, 0, 0), NF_SKIP_SHORT);
}
END_TEST

/* A BSD loopback frame: family fam, big-endian or little. */
static size_t bsd_frame(uint8_t *b, uint32_t fam, int big, const struct seg *s)
{
	if (big)
		be32(b, fam);
	else
		b[0] = (uint8_t)fam, b[1] = b[2] = b[3] = 0;
	return 4 + put_ip_tcp(b + 4, s);
}

START_TEST(test_decode_bsd_loopback)
{
	static const uint32_t v6fams[] = { 24, 28, 30 };
	uint8_t b[256];
	struct seg s4 = { .payload = 5 }, s6 = { .v6 = 1, .payload = 6 };
	size_t n;

	for (int big = 0; big <= 1; big++) {
		n = bsd_frame(b, 2, big, &s4);
		ck_assert_int_eq(dec(NF_LINK_NULL, b, n, n), NF_SKIP_NONE);
		assert_segment(&s4);
		ck_assert_int_eq(dec(NF_LINK_LOOP, b, n, n), big ? NF_SKIP_NONE : NF_SKIP_NOT_IP);
		for (int i = 0; i < 3; i++) {
			n = bsd_frame(b, v6fams[i], big, &s6);
			ck_assert_int_eq(dec(NF_LINK_NULL, b, n, n), NF_SKIP_NONE);
			assert_segment(&s6);
			ck_assert_int_eq(dec(NF_LINK_LOOP, b, n, n),
					 big ? NF_SKIP_NONE : NF_SKIP_NOT_IP);
		}
		n = bsd_frame(b, 7, big, &s4); /* AF_LOCAL? nothing of ours */
		ck_assert_int_eq(dec(NF_LINK_NULL, b, n, n), NF_SKIP_NOT_IP);
	}
	ck_assert_int_eq(dec(NF_LINK_NULL, b, 3, n), NF_SKIP_SHORT);
}
END_TEST

START_TEST(test_decode_network_and_unknown_link)
{
	uint8_t b[256];
	struct seg s = { .v6 = 1, .payload = 2 };
	size_t n = put_ip_tcp(b, &s);

	memset(&decoded, 0, sizeof(decoded));
	ck_assert_int_eq(nf_pkt_decode(NF_LINK_NETWORK, 0x86dd, b, n, n, &decoded), NF_SKIP_NONE);
	assert_segment(&s);
	ck_assert_int_eq(nf_pkt_decode(NF_LINK_NETWORK, 0x0806, b, n, n, &decoded), NF_SKIP_NOT_IP);
	ck_assert_int_eq(dec(105, b, n, n), NF_SKIP_LINK); /* 802.11 */
	ck_assert_int_eq(dec(2, b, n, n), NF_SKIP_LINK);
}
END_TEST

/* ---- IPv4 ------------------------------------------------------------------ */

START_TEST(test_decode_ipv4_options)
{
	uint8_t b[256];
	struct seg s = { .ipopts = 12, .payload = 21 };
	size_t n = eth_frame(b, &s);

	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NONE);
	assert_segment(&s);
	/* cut inside the options: no TCP header */
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, 14 + 30, n), NF_SKIP_SHORT);
}
END_TEST

START_TEST(test_decode_ipv4_fragments)
{
	uint8_t b[256];
	struct seg mf = { .frag = 0x2000, .payload = 8 }, later = { .frag = 0x0010, .payload = 8 };
	struct seg df = { .frag = 0x4000, .payload = 8 };
	size_t n = eth_frame(b, &mf);

	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_FRAGMENT);
	n = eth_frame(b, &later);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_FRAGMENT);
	n = eth_frame(b, &df); /* don't fragment: a whole packet */
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NONE);
	assert_segment(&df);
}
END_TEST

START_TEST(test_decode_not_tcp)
{
	uint8_t b[256];
	struct seg udp = { .proto = 17, .payload = 8 }, icmp6 = { .v6 = 1, .proto = 58 };
	size_t n = eth_frame(b, &udp);

	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NOT_TCP);
	n = eth_frame(b, &icmp6);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NOT_TCP);
}
END_TEST

/* A capture cut at -s 96: the sizes come from the IP header. */
START_TEST(test_decode_snaplen_cut_keeps_the_size)
{
	uint8_t b[2048];
	struct seg s = { .v6 = _i, .payload = 1400 };
	size_t n = eth_frame(b, &s), hdrs = 14 + (s.v6 ? 40 : 20);

	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, 96, n), NF_SKIP_NONE);
	assert_segment(&s);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, hdrs + 16, n), NF_SKIP_NONE);
	assert_segment(&s);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, hdrs + 15, n), NF_SKIP_SHORT);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, hdrs - 1, n), NF_SKIP_SHORT);
}
END_TEST

/* Every prefix of a frame: never a segment before the TCP header's 16
 * bytes, always the same one after; each read from a block of exactly
 * that size (valgrind or ASan would see a byte read past it). */
START_TEST(test_decode_every_prefix)
{
	static const uint8_t hbh[8] = { 6, 0, 1, 4, 0, 0, 0, 0 };
	uint8_t b[512];
	struct seg s = { .v6 = _i, .proto = _i ? HBH : 0, .ext = hbh, .extlen = _i ? 8 : 0,
			 .payload = 40 };
	size_t n = eth_frame(b, &s), need = 14 + (s.v6 ? 48 : 20) + 16;

	for (size_t cut = 0; cut <= n; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);
		enum nf_pkt_skip r;

		memcpy(copy, b, cut);
		r = dec(NF_LINK_ETHERNET, copy, cut, n);
		free(copy);
		if (cut < need) {
			ck_assert_int_eq(r, NF_SKIP_SHORT);
		} else {
			ck_assert_int_eq(r, NF_SKIP_NONE);
			assert_segment(&s);
		}
	}
}
END_TEST

/* Decodes b[0..cut) (origlen on the wire) with nf_pkt_decode and with its
 * general path alone, each into a segment filled with the same junk:
 * the same answer and the same segment. */
static void same_as_general_on(uint32_t link, const uint8_t *b, size_t cut, size_t origlen)
{
	struct nf_pkt x, y;
	uint8_t *copy = malloc(cut ? cut : 1);
	enum nf_pkt_skip rx, ry;

	memcpy(copy, b, cut);
	memset(&x, 0x5a, sizeof(x));
	memset(&y, 0x5a, sizeof(y));
	rx = nf_pkt_decode(link, 0, copy, cut, origlen, &x);
	ry = nf_pkt_decode_general(link, 0, copy, cut, origlen, &y);
	free(copy);
	ck_assert_int_eq(rx, ry);
	if (rx == NF_SKIP_NONE)
		ck_assert_mem_eq(&x, &y, sizeof(x));
}

static void same_as_general(const uint8_t *b, size_t cut, size_t origlen)
{
	same_as_general_on(NF_LINK_ETHERNET, b, cut, origlen);
}

/* The shortcut for the common frame (Ethernet or a Linux cooked header,
 * IPv4 without options, TCP) agrees with the general path on it and on
 * every frame near it:
 * options, fragments, other protocols, lengths that contradict, a data
 * offset beyond the segment, a SYN's options, a TSO capture, every cut
 * and an origlen beyond the cut. */
START_TEST(test_decode_common_frame_as_general)
{
	static const uint8_t opts[8] = { 2, 4, 0x05, 0xb4, 3, 3, 7, 0 };
	const struct seg shapes[] = {
		{ .payload = 0 },
		{ .payload = 6 },
		{ .payload = 1400 },
		{ .flags = NF_TCP_SYN, .tcpopts = opts, .optlen = 8 },
		{ .flags = NF_TCP_SYN | NF_TCP_ACK, .tcpopts = opts, .optlen = 8, .payload = 3 },
		{ .ipopts = 4, .payload = 6 },
		{ .frag = 0x2000, .payload = 6 },
		{ .frag = 0x4000, .payload = 6 }, /* DF only: whole */
		{ .frag = 0x0001, .payload = 6 },
		{ .proto = 17, .payload = 6 },
		{ .tot_zero = 1, .payload = 6 },
		{ .tot = 39, .payload = 6 },
		{ .tot = 40, .payload = 6 },
		{ .tot = 19, .payload = 6 },
		{ .doff = 4, .payload = 6 },
		{ .doff = 15, .payload = 6 },
		{ .doff = 15, .payload = 60 },
	};
	uint8_t b[2048];

	for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
		size_t n = eth_frame(b, &shapes[k]);

		for (size_t cut = 0; cut <= n; cut += cut < 80 ? 1 : 97) {
			same_as_general(b, cut, n);
			same_as_general(b, cut, cut);
		}
		same_as_general(b, n, n);
	}
	/* the same shapes behind a Linux cooked header, v1 and v2, of each
	 * packet type (4 out, 0-3 in, 7 none: the direction left) */
	for (int v2 = 0; v2 < 2; v2++)
		for (unsigned t = 0; t < 8; t += t == 4 ? 3 : 1)
			for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
				size_t n = sll_frame(b, v2, t, &shapes[k]);
				uint32_t link = v2 ? NF_LINK_LINUX_SLL2 : NF_LINK_LINUX_SLL;

				for (size_t cut = 0; cut <= n; cut += cut < 80 ? 1 : 97)
					same_as_general_on(link, b, cut, n);
				same_as_general_on(link, b, n, n);
			}
	/* a version other than 4 under the IPv4 ethertype, and a VLAN tag */
	b[14] = 0x46;
	same_as_general(b, 60, 60);
	b[14] = 0x65;
	same_as_general(b, 60, 60);
	{
		static const unsigned tpid[1] = { 0x8100 };
		struct seg s = { .payload = 6 };
		size_t h = put_eth(b, 0x0800, 1, tpid);
		size_t n = h + put_ip_tcp(b + h, &s);

		same_as_general(b, n, n);
	}
}
END_TEST

START_TEST(test_decode_tso_total_length_zero)
{
	uint8_t b[256];
	struct seg s = { .v6 = _i, .tot_zero = 1, .payload = 60 };
	size_t n = eth_frame(b, &s);

	/* captured 96 of a 64,000-byte super-packet */
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, 96, 64000), NF_SKIP_NONE);
	ck_assert_uint_eq(decoded.len, 64000 - 14 - (s.v6 ? 40 : 20) - 20);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NONE);
	ck_assert_uint_eq(decoded.len, 60);
}
END_TEST

START_TEST(test_decode_bad_headers)
{
	uint8_t b[256];
	struct seg ok = { .payload = 10 }, doff = { .doff = 4 }, short_tot = { .tot = 30 };
	static const uint8_t nops[12] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
	struct seg hdr_past = { .tot = 20 + 20 + 8, .tcpopts = nops, .optlen = 12 }; /* 32 > 28 */
	struct seg v6short = { .v6 = 1, .tot = 10 };
	size_t n = eth_frame(b, &ok);

	b[14] = 0x44; /* IHL 4 */
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_BAD);
	b[14] = 0x65; /* version 6 in an IPv4 frame */
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_BAD);
	n = eth_frame(b, &doff);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_BAD);
	n = eth_frame(b, &ok);
	be16(b + 16, 19); /* total length below the IP header */
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_BAD);
	n = eth_frame(b, &short_tot); /* 30: no room for the TCP header */
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_BAD);
	n = eth_frame(b, &hdr_past);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_BAD);
	n = eth_frame(b, &v6short);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_BAD);
	n = eth_frame(b, &ok);
	b[14] = 0x45;
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NONE);
}
END_TEST

/* ---- IPv6 extension headers --------------------------------------------------- */

START_TEST(test_decode_ipv6_extension_headers)
{
	/* hop-by-hop (8) -> routing (16) -> destination (8) -> AH (16) -> TCP */
	static const uint8_t ext[] = {
		43, 0, 1, 4, 0, 0, 0, 0,
		60, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		51, 0, 1, 4, 0, 0, 0, 0,
		6, 2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0,
	};
	uint8_t b[512];
	struct seg s = { .v6 = 1, .proto = HBH, .ext = ext, .extlen = sizeof(ext), .payload = 77 };
	size_t n = eth_frame(b, &s);

	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NONE);
	assert_segment(&s);
	/* cut in the routing header */
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, 14 + 40 + 12, n), NF_SKIP_SHORT);
	/* a payload length shorter than the extension headers */
	be16(b + 14 + 4, 20);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_BAD);
}
END_TEST

START_TEST(test_decode_ipv6_fragment_and_not_tcp)
{
	uint8_t frag[8] = { 6, 0, 0, 0, 0, 0, 0, 7 }, esp[8] = { 0 };
	uint8_t b[512];
	struct seg s = { .v6 = 1, .proto = 44, .ext = frag, .extlen = 8, .payload = 12 };
	size_t n;

	frag[3] = 1; /* M: more fragments */
	n = eth_frame(b, &s);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_FRAGMENT);
	frag[3] = 0;
	frag[2] = 0x01; /* offset 32 */
	n = eth_frame(b, &s);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_FRAGMENT);
	frag[2] = 0; /* an atomic fragment (RFC 6946): the whole packet */
	n = eth_frame(b, &s);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NONE);
	assert_segment(&s);
	s.proto = 50; /* ESP */
	s.ext = esp;
	n = eth_frame(b, &s);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NOT_TCP);
	s.proto = 59; /* no next header */
	n = eth_frame(b, &s);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NOT_TCP);
	/* hop-by-hop, then UDP */
	esp[0] = 17;
	s.proto = HBH;
	n = eth_frame(b, &s);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NOT_TCP);
}
END_TEST

/* ---- TCP options ------------------------------------------------------------- */

START_TEST(test_decode_syn_options)
{
	/* MSS 1460, NOP, window scale 7, SACK permitted, timestamps, EOL */
	static const uint8_t opts[] = { 2, 4, 0x05, 0xb4, 1, 3, 3, 7, 4, 2, 8, 10, 0, 0, 0, 1,
					0, 0, 0, 0, 0, 0, 0, 0 };
	uint8_t b[256];
	struct seg s = { .flags = NF_TCP_SYN, .tcpopts = opts, .optlen = sizeof(opts) };
	size_t n = eth_frame(b, &s);

	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NONE);
	ck_assert_uint_eq(decoded.mss, 1460);
	ck_assert_int_eq(decoded.wscale, 7);
	ck_assert_uint_eq(decoded.len, 0);
	/* captured up to the middle of the window scale: the MSS only */
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, 14 + 20 + 20 + 6, n), NF_SKIP_NONE);
	ck_assert_uint_eq(decoded.mss, 1460);
	ck_assert_int_eq(decoded.wscale, -1);
	/* the same options on a segment that is no SYN are not read */
	s.flags = NF_TCP_ACK;
	n = eth_frame(b, &s);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NONE);
	ck_assert_uint_eq(decoded.mss, 0);
	ck_assert_int_eq(decoded.wscale, -1);
}
END_TEST

START_TEST(test_decode_syn_options_odd)
{
	static const uint8_t big_ws[] = { 3, 3, 20, 1 };              /* shift 20: 14 */
	static const uint8_t zero_len[] = { 2, 0, 5, 0xb4, 3, 3, 7, 0 }; /* stops at once */
	static const uint8_t past[] = { 1, 1, 2, 9, 3, 3, 7, 0 };    /* MSS runs past */
	uint8_t b[256];
	struct seg s = { .flags = NF_TCP_SYN | NF_TCP_ACK, .tcpopts = big_ws, .optlen = 4 };
	size_t n = eth_frame(b, &s);

	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NONE);
	ck_assert_int_eq(decoded.wscale, 14);
	s.tcpopts = zero_len;
	s.optlen = 8;
	n = eth_frame(b, &s);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NONE);
	ck_assert_uint_eq(decoded.mss, 0);
	ck_assert_int_eq(decoded.wscale, -1);
	s.tcpopts = past;
	n = eth_frame(b, &s);
	ck_assert_int_eq(dec(NF_LINK_ETHERNET, b, n, n), NF_SKIP_NONE);
	ck_assert_uint_eq(decoded.mss, 0);
}
END_TEST

START_TEST(test_decode_skip_names)
{
	for (int i = 0; i < NF_SKIP_NKINDS; i++) {
		ck_assert_ptr_nonnull(nf_pkt_skip_name(i));
		for (int j = 0; j < i; j++)
			ck_assert_str_ne(nf_pkt_skip_name(i), nf_pkt_skip_name(j));
	}
	ck_assert_str_eq(nf_pkt_skip_name(NF_SKIP_FRAGMENT), "fragment");
	ck_assert_str_eq(nf_pkt_skip_name(NF_SKIP_NKINDS), "?");
}
END_TEST

/* ---- a real capture under every link type ---------------------------------------- */

/* Every frame of tcpdump's Ethernet capture of loopback, decoded as it
 * is and with its Ethernet header replaced by each other link type's:
 * the same segment each time (and 37 of them: t_decode_vs_tshark.sh
 * checks that tshark reads the same). */
START_TEST(test_decode_real_frames_under_every_link)
{
	static const uint32_t links[] = { NF_LINK_LINUX_SLL, NF_LINK_LINUX_SLL2, NF_LINK_RAW,
					  NF_LINK_NULL, NF_LINK_LOOP, NF_LINK_NETWORK };
	char err[NF_CAP_ERR_MAX];
	int fd = open("fixtures/lo-us.pcap", O_RDONLY), segs = 0;
	struct nf_cap *c = nf_cap_open(fd, "lo-us.pcap", err);
	struct nf_frame f;
	uint8_t b[70000];

	ck_assert_msg(c != NULL, "%s", err);
	while (nf_cap_next(c, &f) == 1) {
		struct nf_pkt want;
		size_t ip = f.caplen - 14;
		unsigned proto = f.data[12] << 8 | f.data[13];
		int v6 = proto == 0x86dd;

		ck_assert_uint_eq(f.link, NF_LINK_ETHERNET);
		memset(&want, 0, sizeof(want));
		if (nf_pkt_decode(f.link, 0, f.data, f.caplen, f.origlen, &want) != NF_SKIP_NONE)
			continue;
		segs++;
		for (unsigned i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
			struct nf_pkt got;
			size_t h = 0;

			memset(b, 0, 20);
			if (links[i] == NF_LINK_LINUX_SLL)
				be16(b + 14, proto), h = 16;
			else if (links[i] == NF_LINK_LINUX_SLL2)
				be16(b, proto), b[10] = 4, h = 20;
			else if (links[i] == NF_LINK_NULL)
				b[0] = v6 ? 30 : 2, h = 4;
			else if (links[i] == NF_LINK_LOOP)
				b[3] = v6 ? 24 : 2, h = 4;
			memcpy(b + h, f.data + 14, ip);
			memset(&got, 0, sizeof(got));
			ck_assert_int_eq(nf_pkt_decode(links[i], (uint16_t)proto, b, h + ip,
						       f.origlen - 14 + h, &got), NF_SKIP_NONE);
			if (links[i] == NF_LINK_LINUX_SLL2)
				ck_assert_uint_eq(got.dir, NF_DIR_OUT);
			if (links[i] == NF_LINK_LINUX_SLL)
				ck_assert_uint_eq(got.dir, NF_DIR_IN);
			got.dir = 0;
			ck_assert_mem_eq(&got, &want, sizeof(got));
		}
	}
	ck_assert_int_eq(segs, 37);
	nf_cap_close(c);
	close(fd);
}
END_TEST

static Suite *decode_suite(void)
{
	Suite *s = suite_create("decode");
	TCase *link = tcase_create("link");
	TCase *ip = tcase_create("ip");
	TCase *tcp = tcase_create("tcp");

	unit_add(link, test_decode_ethernet_ipv4);
	unit_add(link, test_decode_ethernet_ipv6);
	unit_add(link, test_decode_vlan_tags);
	unit_add(link, test_decode_ethernet_not_ip);
	unit_add(link, test_decode_pppoe);
	unit_add_loop(link, test_decode_cooked_direction, 0, 2);
	unit_add(link, test_decode_raw_ip);
	unit_add(link, test_decode_bsd_loopback);
	unit_add(link, test_decode_network_and_unknown_link);
	unit_add(link, test_decode_real_frames_under_every_link);
	suite_add_tcase(s, link);
	unit_add(ip, test_decode_ipv4_options);
	unit_add(ip, test_decode_ipv4_fragments);
	unit_add(ip, test_decode_not_tcp);
	unit_add_loop(ip, test_decode_snaplen_cut_keeps_the_size, 0, 2);
	unit_add_loop(ip, test_decode_every_prefix, 0, 2);
	unit_add_loop(ip, test_decode_tso_total_length_zero, 0, 2);
	unit_add(ip, test_decode_common_frame_as_general);
	unit_add(ip, test_decode_bad_headers);
	unit_add(ip, test_decode_ipv6_extension_headers);
	unit_add(ip, test_decode_ipv6_fragment_and_not_tcp);
	suite_add_tcase(s, ip);
	unit_add(tcp, test_decode_syn_options);
	unit_add(tcp, test_decode_syn_options_odd);
	unit_add(tcp, test_decode_skip_names);
	suite_add_tcase(s, tcp);
	return s;
}

int main(void)
{
	return unit_run(srunner_create(decode_suite()), "check_decode");
}
