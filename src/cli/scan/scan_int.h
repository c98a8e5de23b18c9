/*
 * scan_int.h - what scan's files share: a capture read and fed to the
 * detector (scan_feed.c). Private to cli/scan.
 */
#ifndef NF_SCAN_INT_H
#define NF_SCAN_INT_H

#include "wire/nf_cap.h"
#include "wire/nf_wire.h"

/* Reads the capture c to its end, decoding each frame, and feeds the
 * segments to w in order, on the calling thread; frames that are not
 * segments are counted in skipped[kind]
 * (enum nf_pkt_skip). Returns nf_cap_next's last: 0 (the end) or -1
 * (nf_cap_error says why; what came before it was fed). */
int nf_cli_scan_feed(struct nf_cap *c, struct nf_wire *w, unsigned long long *skipped);

#endif
