/*
 * nf_wire_out.h - scan's and watch's rows of findings (wire_out.c): the
 * table, the JSON lines, watch's first-stall line, the fix a row needs.
 */
#ifndef NF_WIRE_OUT_H
#define NF_WIRE_OUT_H

#include <stddef.h>
#include <stdio.h>

#include "wire/nf_wire.h"

/* The config line that fixes h on the holder's host, in buf: "connect
 * PEER coalesce" for a client, "accept LOCAL nodelay" for a server. */
const char *nf_cli_wire_fix(const struct nf_holder *h, char *buf, size_t len);

/* The table of rows h[0..n-1] (most total stall first) to out, then a
 * line of what was seen (st: connections, one-way ones, duplicates). */
void nf_cli_wire_table(FILE *out, struct nf_holder *const *h, size_t n,
		       const struct nf_wire_stats *st);

/* One JSON line for row h ("event":"wire_stall"; source "scan" or
 * "watch"), field names as the audit log's where they mean the same. */
void nf_cli_wire_json(FILE *out, const struct nf_holder *h, const char *source);

/* Row h's namespace as JSON members (",\"netns\":...,\"netns_inode\":N"),
 * nothing if it has none. */
void nf_cli_wire_json_netns(FILE *out, const struct nf_holder *h);

/* One line of what the detector saw (st), said as the command's message
 * (nf_cli_warnx: "naglefix scan: N segments, ..."). */
void nf_cli_wire_stats(const struct nf_wire_stats *st);

/* watch's line when a row first stalls: holder, peer, side, process,
 * the stall and the fix. */
void nf_cli_wire_first(FILE *out, const struct nf_holder *h, const struct nf_stall *s);

#endif
