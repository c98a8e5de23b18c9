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

/* pcap_next when the record is not all in the buffer, or is at fault. */
static int pcap_next_slow(struct nf_cap *c, struct nf_frame *f)
{
	const uint8_t *p;
	uint32_t have, caplen;
	uint64_t off = c->b.pos;
	int r = nf_cbuf_want(&c->b, NF_PCAP_REC_HDR, &p, &have);

	if (r <= 0) {
		if (r == 0) {
			c->state = NF_CAP_END;
			return 0;
		}
		return nf_cap_short(c, off, "record header");
	}
	caplen = nf_cap_rd32(p + 8, c->swap);
	if (caplen > c->snaplen)
		return nf_cap_fail(c, off, "record of %u bytes, beyond the %s (%u)", caplen,
				   c->snaplen == NF_CAP_RECORD_MAX ? "longest record read" : "snaplen",
				   c->snaplen);
	if (nf_cbuf_want(&c->b, NF_PCAP_REC_HDR + caplen, &p, NULL) < 0)
		return nf_cap_short(c, off, "record");
	nf_pcap_take(c, p, caplen, f);
	return 1;
}

/* The next record: at once when it is all in the buffer and its length
 * within the snaplen (nearly every record), else through the slow path,
 * which reads, ends or fails. */
static int pcap_next(struct nf_cap *c, struct nf_frame *f)
{
	return nf_pcap_record(c, f) ? 1 : pcap_next_slow(c, f);
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
	c->pcap = 1;
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
