/*
 * report_int.h - what report's own files share (report.c reads the logs
 * into groups, report_field.c the values of a line, report_table.c prints
 * the groups); no other file includes it: the command's door is
 * nf_report_print and nf_cli_report in cli_int.h.
 */
#ifndef NF_REPORT_INT_H
#define NF_REPORT_INT_H

#include <stdio.h>

#include "cli_int.h"

#define NF_REPORT_FIELD_LEN 512 /* a field's text kept, at most */
#define NF_REPORT_NTOP 8 /* distinct patterns or callers counted per group */

struct tally {
	char *text[NF_REPORT_NTOP]; /* malloc'ed */
	unsigned long count[NF_REPORT_NTOP];
	int n;
};

struct group {
	int recv;   /* recv_split findings: the peer's writes, our delayed ACK */
	int accept;
	char *addr; /* malloc'ed */
	unsigned long findings, prevented;
	unsigned long bulk; /* findings of a bulk writer (see is_bulk) */
	double total;
	unsigned long nstalls; /* stalls measured */
	double median;         /* of those kept (nf_report_stalls_medians) */
	struct tally writes, callers;
	char *cgroup;  /* the holder's cgroup where a line names it (watch's): the first */
	int cgroups;   /* 1: that one, 2: other lines named another */
};

/* The groups, and an open-addressing index over them by (side, addr):
 * slot holds a group's position + 1, 0 when empty; nslots a power of two
 * at least twice n. */
struct groups {
	struct group *g;
	size_t n, cap;
	size_t *slot, nslots;
	struct nf_report_stalls *stalls;
	size_t left;            /* of NF_REPORT_MEM_MAX: what may still be kept */
	unsigned long unrowed;  /* findings of a new group past the memory kept */
	unsigned long unkept;   /* stalls measured but not kept for the median */
};


/* --- the values of a line (report_field.c) --- */

/* The string value of key in line into out (outlen bytes, cut to fit),
 * unescaped, with anything unprintable as '?'. 0, or -1 if key has no
 * string value. */
int nf_report_field_str(const char *line, const char *key, char *out, size_t outlen);

/* The number value of key into *out. 0, or -1 if missing, null, not
 * finite or negative. */
int nf_report_field_num(const char *line, const char *key, double *out);

/* The array value of key (sizes and commas only, as the library writes
 * them) as its text, "[6,7]", into out. 0, or -1 if it is none or does
 * not fit. */
int nf_report_field_raw_array(const char *line, const char *key, char *out, size_t outlen);

/* --- printing (report_table.c) --- */

/* Sets each group's median, sorts gs by total stall (its index is stale
 * afterwards) and prints the table to out, or (json) a JSON array;
 * "no split-write stall found" for no group. */
void nf_report_groups_print(struct groups *gs, int json, FILE *out);

#endif
