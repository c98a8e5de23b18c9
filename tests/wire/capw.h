/*
 * capw.h - a capture file written byte by byte in memory, in either byte
 * order, for the tests of the readers (check_cap.c) and of scan's
 * reading loop (check_feed.c). Test code only: the functions are static
 * inline, each test uses what it needs.
 */
#ifndef NF_TESTS_CAPW_H
#define NF_TESTS_CAPW_H

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A file being written, in its byte order. */
struct w {
	uint8_t *b;
	size_t n, cap;
	int be;
};

static inline void put(struct w *w, const void *p, size_t n)
{
	if (w->n + n > w->cap) {
		w->cap = (w->n + n) * 2;
		w->b = realloc(w->b, w->cap);
		ck_assert_ptr_nonnull(w->b);
	}
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

static inline void put8(struct w *w, uint8_t v)
{
	put(w, &v, 1);
}

static inline void put16(struct w *w, unsigned v)
{
	uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	if (w->be)
		b[0] = (uint8_t)(v >> 8), b[1] = (uint8_t)v;
	put(w, b, 2);
}

static inline void put32(struct w *w, uint32_t v)
{
	if (w->be) {
		put16(w, v >> 16);
		put16(w, v & 0xffff);
	} else {
		put16(w, v & 0xffff);
		put16(w, v >> 16);
	}
}

/* Writes v over the 4 bytes at at, already written. */
static inline void put_at32(struct w *w, size_t at, uint32_t v)
{
	size_t n = w->n;

	w->n = at;
	put32(w, v);
	w->n = n;
}

static inline void pad4(struct w *w)
{
	while (w->n % 4)
		put8(w, 0);
}

#endif
