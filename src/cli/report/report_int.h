/*
 * report_int.h - what report's own files share (report.c reads the logs
 * into groups, report_field.c the values of a line, report_table.c prints
 * the groups, report_stalls.c keeps the stall values for the medians,
 * audit.c prints the table of its log with nf_report_print). Private to
 * cli/report: its door is nf_report.h.
 */
#ifndef NF_REPORT_INT_H
#define NF_REPORT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nf_report.h"

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

/* What report holds at most, whatever its input: the longest line read
 * (a longer one is skipped and counted), and the memory for what it keeps
 * of the lines (rows, texts, stall values; past it, a new one is not kept,
 * and that is said). */
#define NF_REPORT_LINE_MAX (64u << 10)
#define NF_REPORT_MEM_MAX (64u << 20)

/* The stalls of report's rows, for their medians (report_stalls.c). */
struct nf_report_stalls;

/* An empty table, or NULL on no memory. */
struct nf_report_stalls *nf_report_stalls_new(void);

/* count stalls of ms each in row (0, 1, ...). 0, or -1 when a new
 * (row, ms) would grow the table past *left bytes (what it grows by is
 * taken from *left), or on no memory: the stalls are not kept. */
int nf_report_stalls_add(struct nf_report_stalls *s, size_t *left, uint32_t row, double ms,
			 unsigned long count);

/* median[r] = the median of row r's stalls kept, for r < nrows (rows
 * with none keep theirs). Spends the table: it is empty afterwards. */
void nf_report_stalls_medians(struct nf_report_stalls *s, double *median, size_t nrows);

void nf_report_stalls_free(struct nf_report_stalls *s);

/*
 * Reads the audit logs paths[0..n-1] and prints the table of offending
 * peers (or, json, a JSON array) to out: the empty table when n is 0,
 * none when no log could be read. Returns the number of peers found, or
 * -1 if a log could not be read, was empty or held no audit line (after
 * saying so on stderr).
 */
int nf_report_print(char *const paths[], int n, int json, FILE *out);

#endif
