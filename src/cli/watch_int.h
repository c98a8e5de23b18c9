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
};

/* The process of this host holding the TCP connection whose local end is
 * local and remote end remote, into *o (nf_owner_find). 0, or -errno
 * (-ENOENT: none here). */
int nf_watch_owner(const struct nf_end *local, const struct nf_end *remote, struct nf_owner *o);

#endif
