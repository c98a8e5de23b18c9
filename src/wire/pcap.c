/*
 * pcap.c - the classic pcap format: a 24-byte file header (magic,
 * version 2.x, snaplen, link type) in the writer's byte order, then
 * records of a 16-byte header (seconds, µs or ns, captured and original
 * length) and the captured bytes. Every length is checked against the
 * snaplen, NF_CAP_RECORD_MAX and what is left of the file before a byte
 * of the record is used.
 */
#include "cap_int.h"

#define FILE_HDR 24
#define REC_HDR 16

/* A 32-bit number of the file at p: one load, turned when the file's
 * byte order is not ours (a record header is read on every frame). */
static inline uint32_t rd32(const uint8_t *p, int swap)
{
	uint32_t v;

	__builtin_memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

/* The record whose header is at p, its bytes all in the buffer, as f. */
static inline void record(struct nf_cap *c, const uint8_t *p, uint32_t caplen, struct nf_frame *f)
{
	f->ts_ns = (uint64_t)rd32(p, c->swap) * 1000000000u + (uint64_t)rd32(p + 4, c->swap) * c->sub_ns;
	f->origlen = rd32(p + 12, c->swap);
	f->offset = c->b.pos;
	f->link = c->link;
	f->caplen = caplen;
	f->dir = 0;
	f->data = p + REC_HDR;
	nf_cbuf_take(&c->b, REC_HDR + caplen);
}

/* pcap_next when the record is not all in the buffer, or is at fault. */
static int pcap_next_slow(struct nf_cap *c, struct nf_frame *f)
{
	const uint8_t *p;
	uint32_t have, caplen;
	uint64_t off = c->b.pos;
	int r = nf_cbuf_want(&c->b, REC_HDR, &p, &have);

	if (r <= 0) {
		if (r == 0) {
			c->state = NF_CAP_END;
			return 0;
		}
		return nf_cap_short(c, off, "record header");
	}
	caplen = rd32(p + 8, c->swap);
	if (caplen > c->snaplen)
		return nf_cap_fail(c, off, "record of %u bytes, beyond the %s (%u)", caplen,
				   c->snaplen == NF_CAP_RECORD_MAX ? "longest record read" : "snaplen",
				   c->snaplen);
	if (nf_cbuf_want(&c->b, REC_HDR + caplen, &p, NULL) < 0)
		return nf_cap_short(c, off, "record");
	record(c, p, caplen, f);
	return 1;
}

/* The next record: at once when it is all in the buffer and its length
 * within the snaplen (nearly every record), else through the slow path,
 * which reads, ends or fails. */
static int pcap_next(struct nf_cap *c, struct nf_frame *f)
{
	uint32_t avail = c->b.end - c->b.start, caplen;
	const uint8_t *p = c->b.mem + c->b.start;

	if (__builtin_expect(avail < REC_HDR, 0))
		return pcap_next_slow(c, f);
	caplen = rd32(p + 8, c->swap);
	if (__builtin_expect(caplen > c->snaplen || caplen > avail - REC_HDR, 0))
		return pcap_next_slow(c, f);
	record(c, p, caplen, f);
	return 1;
}

int nf_pcap_start(struct nf_cap *c)
{
	const uint8_t *p;
	uint32_t magic, major, snaplen;

	if (nf_cbuf_want(&c->b, FILE_HDR, &p, NULL) < 0)
		return nf_cap_short(c, 0, "pcap file header");
	magic = nf_cap_u32(p, 1);
	c->be = magic == 0xa1b2c3d4u || magic == 0xa1b23c4du;
	c->nano = magic == 0xa1b23c4du || magic == 0x4d3cb2a1u;
	c->swap = c->be != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
	c->sub_ns = c->nano ? 1 : 1000;
	major = nf_cap_u16(p + 4, c->be);
	if (major != 2)
		return nf_cap_fail(c, 4, "pcap version %u.%u, not 2.x", major,
				   nf_cap_u16(p + 6, c->be));
	snaplen = nf_cap_u32(p + 16, c->be);
	/* Some writers leave it 0 or write more than anyone captures: no
	 * limit then but ours (libpcap reads them so too). */
	c->snaplen = snaplen == 0 || snaplen > NF_CAP_RECORD_MAX ? NF_CAP_RECORD_MAX : snaplen;
	c->link = nf_cap_u32(p + 20, c->be) & 0xffffu; /* the upper bits: FCS length */
	if (!nf_cap_link_known(c->link))
		return nf_cap_fail(c, 20, "link type %u is not one naglefix decodes", c->link);
	nf_cbuf_take(&c->b, FILE_HDR);
	c->next = pcap_next;
	return 0;
}
