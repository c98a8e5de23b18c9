/*
 * nf_fnv.h - FNV-1a, 64 bits: the audit log's signature of a finding
 * (audit_log.c) and the command's index of report groups (cli/report/report.c).
 */
#ifndef NF_FNV_H
#define NF_FNV_H

#include <stddef.h>
#include <stdint.h>

#define NF_FNV_INIT 14695981039346656037ull

/* The FNV-1a hash of p[0..n), continued from h (NF_FNV_INIT to start). */
static inline uint64_t nf_fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

#endif
