/*
 * nf_pkt.h - one TCP segment as the packet side sees it, decoded from a
 * captured frame (src/wire/decode.c). Shared by the capture readers, the
 * live ring (watch) and the detector; knows nothing of the library.
 */
#ifndef NF_PKT_H
#define NF_PKT_H

#include <stddef.h>
#include <stdint.h>

/* Link types, as pcap and pcapng number them (LINKTYPE_*). */
#define NF_LINK_NULL       0   /* BSD loopback: 4-byte family, host order of the writer */
#define NF_LINK_ETHERNET   1   /* Ethernet II, 802.1Q / QinQ tags, PPPoE sessions */
#define NF_LINK_RAW        101 /* raw IPv4 or IPv6, version from the first nibble */
#define NF_LINK_LOOP       108 /* OpenBSD loopback: 4-byte family, network order */
#define NF_LINK_LINUX_SLL  113 /* Linux cooked v1 (tcpdump -i any) */
#define NF_LINK_IPV4       228
#define NF_LINK_IPV6       229
#define NF_LINK_LINUX_SLL2 276 /* Linux cooked v2 */
/* Not a pcap link type: a frame that starts at the network header, its
 * ethertype given beside it (AF_PACKET SOCK_DGRAM, watch's ring). */
#define NF_LINK_NETWORK    0x10000

/* TCP flags (the 13th byte of the header). */
#define NF_TCP_FIN 0x01
#define NF_TCP_SYN 0x02
#define NF_TCP_RST 0x04
#define NF_TCP_PSH 0x08
#define NF_TCP_ACK 0x10

/* Where a packet was seen going, when the capture says (cooked headers,
 * pcapng's epb_flags, AF_PACKET's sll_pkttype). */
enum nf_pkt_dir {
	NF_DIR_UNKNOWN = 0,
	NF_DIR_IN = 1,  /* to this host */
	NF_DIR_OUT = 2, /* from this host */
};

/* One TCP segment. Addresses in network order (IPv4 in the first 4
 * bytes, the rest zero), every other number in host order. */
struct nf_pkt {
	uint64_t ts_ns;         /* capture time, ns since the epoch */
	uint8_t family;         /* AF_INET or AF_INET6 */
	uint8_t flags;          /* NF_TCP_* */
	uint8_t dir;            /* enum nf_pkt_dir */
	int8_t wscale;          /* a SYN's window-scale option; -1 none or not captured */
	uint16_t sport, dport;
	uint8_t saddr[16], daddr[16];
	uint32_t seq, ack;
	uint32_t len;           /* payload bytes, from the IP lengths (not the captured length) */
	uint16_t win;           /* the window field as sent (unscaled) */
	uint16_t mss;           /* a SYN's MSS option; 0 none or not captured */
};

/* Why a frame gave no segment (nf_pkt_decode's return when not 0). */
enum nf_pkt_skip {
	NF_SKIP_NONE = 0,
	NF_SKIP_NOT_IP,     /* ARP, a link type's control frame... */
	NF_SKIP_NOT_TCP,    /* UDP, ICMP... */
	NF_SKIP_FRAGMENT,   /* an IPv4 or IPv6 fragment */
	NF_SKIP_SHORT,      /* cut before the TCP header's first 16 bytes */
	NF_SKIP_BAD,        /* a header that contradicts itself (IHL < 5, data offset < 5, lengths) */
	NF_SKIP_LINK,       /* a link type this decoder does not know */
	NF_SKIP_NKINDS
};

/*
 * Decodes the frame data[0..caplen) of link type link (NF_LINK_*), whose
 * length on the wire was origlen, into *p (ts_ns is left for the caller
 * to set; dir is set from a Linux cooked header's packet type, else left
 * as the caller set it). For NF_LINK_NETWORK, ethertype is the frame's
 * protocol (ETH_P_IP or ETH_P_IPV6, host order); else it is ignored.
 * Returns NF_SKIP_NONE (0) with *p filled, or why the frame is not a
 * TCP segment. Reads only data[0..caplen); calls nothing; never fails
 * otherwise.
 */
enum nf_pkt_skip nf_pkt_decode(uint32_t link, uint16_t ethertype, const uint8_t *data,
			       size_t caplen, size_t origlen, struct nf_pkt *p);

/* nf_pkt_decode without its shortcut for the common frame (Ethernet,
 * IPv4 without options, TCP): the one general path, that the shortcut
 * must agree with (check_decode and the fuzz target hold them together). */
enum nf_pkt_skip nf_pkt_decode_general(uint32_t link, uint16_t ethertype, const uint8_t *data,
				       size_t caplen, size_t origlen, struct nf_pkt *p);

/* A short name for each NF_SKIP_* ("not IP", "fragment"...). */
const char *nf_pkt_skip_name(enum nf_pkt_skip why);

#endif
