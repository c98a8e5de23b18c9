/*
 * report_field.c - the values of the library's own JSON lines, as report
 * reads them (report_int.h): a string unescaped with anything unprintable
 * as '?' (a log may be hostile: no escape sequence or newline reaches the
 * table), a number, an array of sizes as its text. Only our format: one
 * object a line, no spaces, keys unique.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

/* Where the value of "key" starts in line, or NULL. */
static const char *field(const char *line, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	return p ? p + strlen(pat) : NULL;
}

/* A character fit for a terminal: printable ASCII, else '?' (a log may be
 * hostile: no escape sequence or newline reaches the table). */
static char printable(unsigned c)
{
	return c >= 0x20 && c < 0x7f ? (char)c : '?';
}

/* Four hex digits at p, or -1. */
static long hex4(const char *p)
{
	for (int i = 0; i < 4; i++)
		if (!isxdigit((unsigned char)p[i]))
			return -1;
	return strtol((char[]){ p[0], p[1], p[2], p[3], 0 }, NULL, 16);
}

/* The string value of key, unescaped, with anything unprintable as '?'. */
int nf_report_field_str(const char *line, const char *key, char *out, size_t outlen)
{
	const char *p = field(line, key);
	size_t o = 0;

	if (!p || *p != '"')
		return -1;
	for (p++; *p && *p != '"' && o + 1 < outlen; p++) {
		long u = p[0] == '\\' && p[1] == 'u' ? hex4(p + 2) : -1;

		if (u >= 0) {
			out[o++] = printable((unsigned)u);
			p += 5;
			continue;
		}
		if (*p == '\\' && p[1])
			p++;
		out[o++] = printable((unsigned char)*p);
	}
	out[o] = '\0';
	return 0;
}

/* A number value; -1 if missing or null. */
int nf_report_field_num(const char *line, const char *key, double *out)
{
	const char *p = field(line, key);
	char *end;

	if (!p || strncmp(p, "null", 4) == 0)
		return -1;
	*out = strtod(p, &end);
	return end == p || !isfinite(*out) || *out < 0 ? -1 : 0;
}

/* An array value as its text, "[6,7]". */
int nf_report_field_raw_array(const char *line, const char *key, char *out, size_t outlen)
{
	const char *p = field(line, key), *e;

	if (!p || *p != '[' || !(e = strchr(p, ']')) || (size_t)(e - p + 2) > outlen ||
	    strspn(p + 1, "0123456789,") != (size_t)(e - p - 1))
		return -1; /* only what the library writes: sizes and commas */
	memcpy(out, p, (size_t)(e - p + 1));
	out[e - p + 1] = '\0';
	return 0;
}
