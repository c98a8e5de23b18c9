/*
 * watch_int.h - what watch.c shares with watch_fix.c (watch --fix).
 */
#ifndef NF_WATCH_INT_H
#define NF_WATCH_INT_H

#include <stdint.h>
#include <stdio.h>

#include "nf_owner.h"
#include "nf_wire.h"

struct nf_ring;
struct nf_watch_sent;

#define NF_WATCH_FLUSH_S 60 /* the JSON lines of rows that stalled again, this often */

struct nf_watch {
	const char *ifname;   /* -i, NULL: every interface */
	double seconds;       /* -t, 0: until a signal */
	int json;             /* --json */
	int fix;              /* --fix */
	const char *log_path; /* -l */
	FILE *out, *log;
	struct nf_ring *ring;
	struct nf_wire *wire;
	uint64_t frames;      /* frames read from the ring */
	uint64_t skipped;     /* of them, not a TCP segment the decoder took */
	uint64_t drops_said;  /* the kernel's drops said so far */
	struct nf_watch_sent *sent; /* watch_json.c's, one per row */
	size_t nsent, capsent;
	int sent_sorted;
};

/* The process of this host holding the TCP connection whose local end is
 * local and remote end remote, into *o (nf_owner_find). 0, or -errno
 * (-ENOENT: none here). */
int nf_watch_owner(const struct nf_end *local, const struct nf_end *remote, struct nf_owner *o);

/* --- watch_fix.c: --fix --- */

/*
 * What --fix does at a connection's first stall (h its row, or a copy of
 * it with the connection's ends), o being what nf_watch_owner found of its
 * holder: o->pid set, the holder's socket (o->inode, o->fd) gets
 * TCP_NODELAY, and its listener if h was accepted; no inode (the holder is
 * on another host), the receiving end's fix is printed if that end is
 * here. Each said in a line after the finding's. Changes nothing else.
 */
void nf_watch_fix(struct nf_watch *w, const struct nf_holder *h, const struct nf_owner *o);

/* --- watch_json.c: the JSON lines (--json's and -l's) --- */

/* Row h's first line (it has just stalled for the first time). */
void nf_watch_json_first(struct nf_watch *w, const struct nf_holder *h);

/* The line of a later connection of a row found stalling (h: a copy of
 * the row with that connection's ends and process): "event":"wire_conn",
 * which counts no stall (the row's lines count them). */
void nf_watch_json_conn(struct nf_watch *w, const struct nf_holder *h);

/* A line for each row with stalls its lines have not said yet: those
 * stalls only (count, total), so that report's sum of a row's lines is
 * the row. */
void nf_watch_json_flush(struct nf_watch *w);

/* Frees that bookkeeping. */
void nf_watch_json_free(struct nf_watch *w);

#endif
