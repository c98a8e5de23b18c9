/*
 * cap.c - a capture file opened: its format told from the first four
 * bytes (pcap.c or pcapng.c reads the rest), the one read buffer both
 * formats share, the error that ends a read.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cap_int.h"
#include "nf_pkt.h"
#include "wire_int.h"

#define PCAPNG_SHB 0x0a0d0d0au /* the same in both byte orders */

/* Reads into the free end of the buffer, up to lim bytes from its start
 * (past lim if the buffer already is), once (EINTR retried), at most
 * NF_CAP_READ; sets eof or err when the read says so. */
static void cbuf_fill(struct nf_cbuf *b, uint32_t lim)
{
	uint32_t room = (lim > b->end ? lim : NF_CAP_BUF) - b->end;
	uint32_t want = room < NF_CAP_READ ? room : NF_CAP_READ;
	ssize_t got;

	if (b->end + want > b->ready) { /* the buffer's pages, taken in at once the first time */
		nf_wire_populate(b->mem + b->ready, b->end + want - b->ready);
		b->ready = b->end + want;
	}
	do
		got = read(b->fd, b->mem + b->end, want);
	while (got < 0 && errno == EINTR);
	if (got > 0) {
		b->end += (uint32_t)got;
		b->read += (uint64_t)got;
	} else if (got == 0) {
		b->eof = 1;
	} else {
		b->err = errno ? errno : EIO;
	}
}

int nf_cbuf_want_slow(struct nf_cbuf *b, uint32_t n, const uint8_t **p, uint32_t *have)
{
	uint32_t avail = b->end - b->start;
	uint32_t lim = n <= NF_CAP_WINDOW - NF_CAP_WINDOW / 2 ? NF_CAP_WINDOW : NF_CAP_BUF;

	if (n > NF_CAP_BUF) {
		b->err = EFBIG;
		*p = b->mem + b->start;
		if (have)
			*have = avail;
		return -1;
	}
	if (avail < n) {
		if (b->start + n > lim) { /* no room after it: to the front */
			memmove(b->mem, b->mem + b->start, avail);
			b->start = 0;
			b->end = avail;
		}
		while (b->end - b->start < n && !b->eof && !b->err)
			cbuf_fill(b, lim);
		avail = b->end - b->start;
	}
	*p = b->mem + b->start;
	if (have)
		*have = avail < n ? avail : n;
	if (avail >= n)
		return 1;
	return avail == 0 && !b->err ? 0 : -1;
}

int nf_cbuf_skip(struct nf_cbuf *b, uint64_t n)
{
	uint32_t avail = b->end - b->start;

	while (n > avail) {
		n -= avail;
		b->pos += avail;
		b->start = b->end = 0;
		if (b->eof || b->err)
			return -1;
		cbuf_fill(b, NF_CAP_WINDOW);
		avail = b->end;
	}
	nf_cbuf_take(b, (uint32_t)n);
	return 0;
}

int nf_cap_fail(struct nf_cap *c, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(c->err, sizeof(c->err), "%s: offset %llu: ", c->name,
			 (unsigned long long)off);

	if (n < 0 || (size_t)n >= sizeof(c->err))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(c->err + n, sizeof(c->err) - (size_t)n, fmt, ap);
	va_end(ap);
	c->state = NF_CAP_FAILED;
	return -1;
}

int nf_cap_short(struct nf_cap *c, uint64_t off, const char *what)
{
	if (c->b.err)
		return nf_cap_fail(c, off, "%s: read error: %s", what, strerror(c->b.err));
	return nf_cap_fail(c, off, "truncated %s (the file ends at byte %llu)", what,
			   (unsigned long long)c->b.read);
}

int nf_cap_link_known(uint32_t link)
{
	switch (link) {
	case NF_LINK_NULL:
	case NF_LINK_ETHERNET:
	case NF_LINK_RAW:
	case NF_LINK_LOOP:
	case NF_LINK_LINUX_SLL:
	case NF_LINK_IPV4:
	case NF_LINK_IPV6:
	case NF_LINK_LINUX_SLL2:
		return 1;
	default:
		return 0;
	}
}

/* Which reader the first four bytes name; starts it. 0, or -1 (c->err). */
static int cap_sniff(struct nf_cap *c)
{
	const uint8_t *p;
	uint32_t have, magic;
	int r = nf_cbuf_want(&c->b, 4, &p, &have);

	if (r == 0)
		return nf_cap_fail(c, 0, "empty file, not a capture");
	if (r < 0)
		return nf_cap_short(c, 0, "file header");
	magic = nf_cap_u32(p, 1);
	switch (magic) {
	case 0xa1b2c3d4u:
	case 0xd4c3b2a1u:
	case 0xa1b23c4du:
	case 0x4d3cb2a1u:
		return nf_pcap_start(c);
	case PCAPNG_SHB:
		return nf_pcapng_start(c);
	default:
		return nf_cap_fail(c, 0, "not a pcap or pcapng capture (it starts %02x %02x %02x %02x)",
				   p[0], p[1], p[2], p[3]);
	}
}

struct nf_cap *nf_cap_open(int fd, const char *name, char err[NF_CAP_ERR_MAX])
{
	struct nf_cap *c = calloc(1, sizeof(*c));

	if (c)
		c->b.mem = malloc(NF_CAP_BUF);
	if (c && c->b.mem)
		c->ifaces = calloc(NF_CAP_IFACES, sizeof(*c->ifaces));
	if (!c || !c->b.mem || !c->ifaces) {
		snprintf(err, NF_CAP_ERR_MAX, "%s: no memory for the read buffer", name);
		nf_cap_close(c);
		return NULL;
	}
	c->b.fd = fd;
	snprintf(c->name, sizeof(c->name), "%s", name);
	if (cap_sniff(c) < 0) {
		snprintf(err, NF_CAP_ERR_MAX, "%s", c->err);
		nf_cap_close(c);
		return NULL;
	}
	err[0] = '\0';
	return c;
}

int nf_cap_next(struct nf_cap *c, struct nf_frame *f)
{
	if (c->state != NF_CAP_OK)
		return c->state == NF_CAP_END ? 0 : -1;
	return c->next(c, f);
}

const char *nf_cap_error(const struct nf_cap *c)
{
	return c->err;
}

uint64_t nf_cap_bytes(const struct nf_cap *c)
{
	return c->b.read;
}

void nf_cap_close(struct nf_cap *c)
{
	if (!c)
		return;
	free(c->b.mem);
	free(c->ifaces);
	free(c);
}
