/*
 * nf_lines.h - lines of outside origin read in a buffer of fixed size
 * (lines.c): a longer line is read through and counted, never held.
 */
#ifndef NF_LINES_H
#define NF_LINES_H

#include <stddef.h>

/* The lines of a descriptor, read in a buffer of fixed size. */
struct nf_lines {
	int fd;
	char *buf;                  /* cap + 1 bytes */
	size_t cap;                 /* the longest line kept, and its newline */
	size_t start, scan, end;    /* the next line; where its newline is looked for; the bytes read */
	int eof, err;               /* read returned 0; its errno */
	unsigned long long skipped; /* lines longer than the limit, read through */
	unsigned long long bytes;   /* bytes read */
};

/* Reads fd's lines of at most max bytes (newline excluded) into l; its
 * buffer (max + 2 bytes) is made here. 0, or -ENOMEM. */
int nf_lines_init(struct nf_lines *l, int fd, size_t max);

/*
 * The next line, NUL-terminated, without its newline, in *line (*len
 * bytes; it may hold a NUL), valid until the next call; the last line may
 * lack its newline. A longer line is read through and counted in
 * l->skipped, never returned. Returns 1, 0 at the end of the input, -1
 * on a read error (l->err; the lines before it were given).
 */
int nf_lines_next(struct nf_lines *l, char **line, size_t *len);

/* Frees l's buffer (the descriptor stays open). */
void nf_lines_free(struct nf_lines *l);

#endif
