/*
 * nf_tcp.h - what TCP itself fixes that the library and the packet side
 * both reason with.
 */
#ifndef NF_TCP_H
#define NF_TCP_H

/*
 * The kernel's TCP_MSS_DEFAULT (RFC 1122): the segment size a peer is
 * taken to accept when its SYN gives none, and the receiver's first
 * estimate of the sender's (tcpi_rcv_mss, which audit's receive rule
 * reads) until a larger segment comes. The detector counts a payload
 * below it small whatever the SYNs said.
 */
#define NF_TCP_MSS_DEFAULT 536u

#endif
