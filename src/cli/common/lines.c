/*
 * lines.c - lines read from a descriptor in a buffer of fixed size: a
 * line longer than the reader's limit is read through to its newline,
 * never held, and counted, so no input (a device, a pipe fed forever, a
 * file with no newline) costs more memory than the buffer.
 */
#include "nf_lines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int nf_lines_init(struct nf_lines *l, int fd, size_t max)
{
	memset(l, 0, sizeof(*l));
	l->fd = fd;
	l->cap = max + 1; /* the longest line and its newline */
	l->buf = malloc(l->cap + 1);
	return l->buf ? 0 : -ENOMEM;
}

void nf_lines_free(struct nf_lines *l)
{
	free(l->buf);
	l->buf = NULL;
}

/* Reads once into the free end of the buffer (EINTR retried); sets eof
 * or err when the read says so. */
static void fill(struct nf_lines *l)
{
	ssize_t n;

	do
		n = read(l->fd, l->buf + l->end, l->cap - l->end);
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		l->end += (size_t)n;
		l->bytes += (unsigned long long)n;
	} else if (n == 0) {
		l->eof = 1;
	} else {
		l->err = errno ? errno : EIO;
	}
}

/* Moves the unread bytes to the front of the buffer. */
static void compact(struct nf_lines *l)
{
	memmove(l->buf, l->buf + l->start, l->end - l->start);
	l->scan -= l->start;
	l->end -= l->start;
	l->start = 0;
}

/* The buffer is full with no newline: drops it and what follows up to
 * and with the next newline (or the end), counting one line skipped. */
static void skip_long(struct nf_lines *l)
{
	char *nl = NULL;

	l->skipped++;
	while (!nl) {
		l->start = l->scan = l->end = 0;
		if (l->eof || l->err)
			return;
		fill(l);
		nl = memchr(l->buf, '\n', l->end);
	}
	l->start = l->scan = (size_t)(nl - l->buf) + 1;
}

/* The line [start, end) as the next one, NUL-terminated; 1. */
static int give(struct nf_lines *l, size_t end, size_t next, char **line, size_t *len)
{
	l->buf[end] = '\0';
	*line = l->buf + l->start;
	*len = end - l->start;
	l->start = l->scan = next;
	return 1;
}

int nf_lines_next(struct nf_lines *l, char **line, size_t *len)
{
	for (;;) {
		char *nl = memchr(l->buf + l->scan, '\n', l->end - l->scan);

		if (nl)
			return give(l, (size_t)(nl - l->buf), (size_t)(nl - l->buf) + 1, line, len);
		l->scan = l->end;
		if ((l->eof || l->err) && l->start < l->end)
			return give(l, l->end, l->end, line, len); /* the last, with no newline */
		if (l->eof || l->err)
			return l->err ? -1 : 0;
		if (l->start > 0)
			compact(l);
		if (l->end == l->cap)
			skip_long(l);
		else
			fill(l);
	}
}
