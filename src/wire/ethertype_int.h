/*
 * ethertype_int.h - the protocol numbers the decoder (decode.c,
 * decode_int.h) tells frames apart by, named as libpcap's ethertype.h
 * and ppp.h name them. Not for use outside src/wire/.
 */
#ifndef NF_ETHERTYPE_INT_H
#define NF_ETHERTYPE_INT_H

/* Ethertypes: what an Ethernet, VLAN or Linux cooked header says follows. */
#define NF_ETHERTYPE_IP 0x0800
#define NF_ETHERTYPE_IPV6 0x86dd
#define NF_ETHERTYPE_8021Q 0x8100    /* a VLAN tag (IEEE 802.1Q) */
#define NF_ETHERTYPE_8021AD 0x88a8   /* a service tag, QinQ's outer (IEEE 802.1ad) */
#define NF_ETHERTYPE_8021QINQ 0x9100 /* the outer tag as switches wrote it before 802.1ad */
#define NF_ETHERTYPE_PPPOES 0x8864   /* a PPPoE session's frames (RFC 2516) */

/* PPP's protocol numbers, after a PPPoE session header (RFC 1661). */
#define NF_PPP_IP 0x0021
#define NF_PPP_IPV6 0x0057

#endif
