/*
 * fuzz_cap.c - libFuzzer target for the capture readers and the frame
 * decoder (src/wire/cap.c, pcap.c, pcapng.c, decode.c): the input is a
 * capture file, written to a memfd that nf_cap_open reads; every frame
 * is decoded under its own link type and under each other one.
 *
 * Besides what the sanitizers catch (each frame is copied to a block of
 * exactly its captured length first, so a decoder read past it is seen),
 * it aborts when a contract breaks: a message that is not one printable
 * line "fuzz.cap: offset N: why" (N within the input; "fuzz.cap: why"
 * only for no memory); a frame beyond the input, out of order, longer
 * than NF_CAP_RECORD_MAX or of a link type no reader accepts; a call
 * after the end or an error that does not return the same; a decoded
 * segment with a family, skip reason or window scale out of range; a
 * frame that the decoder's shortcut for the common frame decodes other
 * than its general path; scan's reading loop (nf_feed) giving other
 * segments, skips, end or message than the plain path it shortcuts
 * (nf_cap_next, nf_pkt_decode, nf_wire_prepare).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wire/nf_cap.h"
#include "wire/nf_feed.h"
#include "wire/nf_pkt.h"
#include "wire/nf_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define EXPECT(cond)                                                          \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "fuzz_cap: contract broken: %s\n", #cond); \
			abort();                                              \
		}                                                             \
	} while (0)

static const uint32_t links[] = { NF_LINK_NULL, NF_LINK_ETHERNET, NF_LINK_RAW, NF_LINK_LOOP,
				  NF_LINK_LINUX_SLL, NF_LINK_IPV4, NF_LINK_IPV6,
				  NF_LINK_LINUX_SLL2, NF_LINK_NETWORK };

/* Is the message one printable line "fuzz.cap: offset N: why", N <= size? */
static void check_message(const char *msg, size_t size)
{
	unsigned long long off;
	int n = -1;

	for (const char *p = msg; *p; p++)
		EXPECT((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
	EXPECT(strlen(msg) < NF_CAP_ERR_MAX);
	if (strcmp(msg, "fuzz.cap: no memory for the read buffer") == 0)
		return;
	EXPECT(sscanf(msg, "fuzz.cap: offset %llu: %n", &off, &n) == 1 && n > 0 && msg[n]);
	EXPECT(off <= size);
}

static void check_segment(enum nf_pkt_skip r, const struct nf_pkt *p)
{
	EXPECT((unsigned)r < NF_SKIP_NKINDS);
	if (r != NF_SKIP_NONE)
		return;
	EXPECT(p->family == AF_INET || p->family == AF_INET6);
	EXPECT(p->wscale >= -1 && p->wscale <= 14);
	EXPECT(p->dir <= NF_DIR_OUT);
	EXPECT(p->mss == 0 || (p->flags & NF_TCP_SYN));
}

/* The decoder and its general path alone (without the shortcut for the
 * common frame) give the same answer and the same segment. */
static void check_general(uint32_t link, uint16_t et, const uint8_t *copy, const struct nf_frame *f)
{
	struct nf_pkt x, y;
	enum nf_pkt_skip rx, ry;

	memset(&x, 0, sizeof(x));
	memset(&y, 0, sizeof(y));
	rx = nf_pkt_decode(link, et, copy, f->caplen, f->origlen, &x);
	ry = nf_pkt_decode_general(link, et, copy, f->caplen, f->origlen, &y);
	EXPECT(rx == ry);
	EXPECT(rx != NF_SKIP_NONE || memcmp(&x, &y, sizeof(x)) == 0);
}

/* Decodes the frame, copied to a block of its exact length, under its
 * own link type and every other. */
static void decode_all(const struct nf_frame *f)
{
	uint8_t *copy = malloc(f->caplen ? f->caplen : 1);
	struct nf_pkt p;

	if (!copy)
		return;
	memcpy(copy, f->data, f->caplen);
	memset(&p, 0, sizeof(p));
	check_segment(nf_pkt_decode(f->link, 0, copy, f->caplen, f->origlen, &p), &p);
	check_general(f->link, 0, copy, f);
	for (unsigned i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		uint16_t et = f->caplen ? (f->data[0] & 1 ? 0x86dd : 0x0800) : 0;

		memset(&p, 0, sizeof(p));
		check_segment(nf_pkt_decode(links[i], et, copy, f->caplen, f->origlen, &p), &p);
	}
	free(copy);
}

/* What the plain path made of the capture: its segments, as nf_wire_prepare
 * makes them, and its skips (plain_add, then held against nf_feed's). */
struct plain {
	struct nf_seg *s;
	struct nf_seg_more *more;
	size_t n, cap;
	unsigned long long skipped[NF_SKIP_NKINDS];
};

static void plain_add(struct plain *pl, const struct nf_frame *f)
{
	struct nf_pkt p;
	enum nf_pkt_skip why;

	memset(&p, 0, sizeof(p));
	p.dir = f->dir;
	why = nf_pkt_decode(f->link, 0, f->data, f->caplen, f->origlen, &p);
	if (why != NF_SKIP_NONE) {
		pl->skipped[why]++;
		return;
	}
	p.ts_ns = f->ts_ns;
	if (pl->n == pl->cap) {
		pl->cap = pl->cap ? 2 * pl->cap : 64;
		pl->s = realloc(pl->s, pl->cap * sizeof(*pl->s));
		pl->more = realloc(pl->more, pl->cap * sizeof(*pl->more));
		EXPECT(pl->s && pl->more);
	}
	memset(&pl->s[pl->n], 0, sizeof(pl->s[0]));
	nf_wire_prepare(&p, &pl->s[pl->n], &pl->more[pl->n]);
	pl->n++;
}

/* nf_feed over the capture on fd, 7 segments at a time: the plain path's
 * segments, skips, end r and message msg. */
static void feed_matches(int fd, const struct plain *pl, int r, const char *msg)
{
	char err[NF_CAP_ERR_MAX];
	unsigned long long skipped[NF_SKIP_NKINDS] = { 0 };
	struct nf_seg s[7];
	struct nf_seg_more more[7];
	struct nf_cap *c;
	size_t n = 0;
	int rc = 1;

	EXPECT(lseek(fd, 0, SEEK_SET) == 0);
	c = nf_cap_open(fd, "fuzz.cap", err);
	EXPECT(c != NULL);
	while (rc == 1) {
		size_t k = nf_feed(c, s, more, 7, skipped, &rc);

		EXPECT(k <= 7 && n + k <= pl->n);
		for (size_t i = 0; i < k; i++) {
			EXPECT(memcmp(&s[i], &pl->s[n + i], sizeof(s[i])) == 0);
			EXPECT(!(s[i].bits & NF_SEG_MORE) ||
			       memcmp(&more[i], &pl->more[n + i], sizeof(more[i])) == 0);
		}
		n += k;
	}
	EXPECT(n == pl->n && rc == r);
	EXPECT(memcmp(skipped, pl->skipped, sizeof(skipped)) == 0);
	EXPECT(strcmp(nf_cap_error(c), msg) == 0);
	nf_cap_close(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[NF_CAP_ERR_MAX];
	struct nf_cap *c;
	struct nf_frame f;
	struct plain pl = { 0 };
	uint64_t last = 0;
	int fd = memfd_create("fuzz.cap", 0), r, frames = 0;

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return 0;
	}
	c = nf_cap_open(fd, "fuzz.cap", err);
	if (!c) {
		check_message(err, size);
		close(fd);
		return 0;
	}
	EXPECT(err[0] == '\0');
	while ((r = nf_cap_next(c, &f)) == 1) {
		EXPECT(f.caplen <= NF_CAP_RECORD_MAX);
		EXPECT(f.offset + 12 + f.caplen <= size); /* a header of 12 or more before */
		EXPECT(frames == 0 || f.offset > last);
		EXPECT(f.dir <= NF_DIR_OUT);
		EXPECT(f.link != NF_LINK_NETWORK && f.link <= 0xffff);
		last = f.offset;
		frames++;
		decode_all(&f);
		plain_add(&pl, &f);
	}
	EXPECT(r == 0 || r == -1);
	if (r == 0)
		EXPECT(nf_cap_error(c)[0] == '\0');
	else
		check_message(nf_cap_error(c), size);
	EXPECT(nf_cap_next(c, &f) == r && nf_cap_next(c, &f) == r);
	EXPECT(nf_cap_bytes(c) <= size);
	feed_matches(fd, &pl, r, nf_cap_error(c));
	nf_cap_close(c);
	close(fd);
	free(pl.s);
	free(pl.more);
	return 0;
}
