/*
 * feed.c - a capture's frames as the detector's segments (nf_feed.h):
 * the one loop that runs on every frame of a scan. The records of a
 * pcap file in this machine's byte order that are whole in the read
 * buffer, as nearly all are, are read here in one pass, the common
 * frame (Ethernet, IPv4, TCP: decode_int.h) decoded and prepared from
 * registers; any other record, frame or capture goes through
 * nf_cap_next, the decoder's general path and nf_wire_prepare, with the
 * same result.
 */
#include "cap_int.h"
#include "decode_int.h"
#include "nf_feed.h"
#include "wire_int.h"

/* One frame f into p[*n] and pre[*n] (*n counted), or skipped. */
static void frame(const struct nf_frame *f, struct nf_pkt *p, struct nf_wire_pre *pre, size_t *n,
		  unsigned long long skipped[NF_SKIP_NKINDS])
{
	struct nf_pkt *q = &p[*n];
	enum nf_pkt_skip why;

	q->dir = f->dir;
	why = nf_pkt_decode(f->link, 0, f->data, f->caplen, f->origlen, q);
	if (why != NF_SKIP_NONE) {
		skipped[why]++;
		return;
	}
	q->ts_ns = f->ts_ns;
	nf_wire_pre_make(q, &pre[(*n)++]);
}

/*
 * The records of a pcap file in our byte order that are whole in the
 * buffer, from its start, until p holds max segments: as nf_pcap_record
 * and frame() would read them, the buffer's cursor and the capture's
 * numbers kept in registers (a store through a segment's bytes would
 * make the compiler load them again each time). Returns at the first
 * record it does not read at once (slow path: nf_cap_next's to read).
 */
static size_t pcap_run(struct nf_cap *c, struct nf_pkt *p, struct nf_wire_pre *pre, size_t n,
		       size_t max, unsigned long long skipped[NF_SKIP_NKINDS])
{
	const uint8_t *mem = c->b.mem;
	uint32_t start = c->b.start, end = c->b.end, snaplen = c->snaplen, link = c->link;
	uint64_t sub_ns = c->sub_ns;

	while (n < max && end - start >= NF_PCAP_REC_HDR) {
		const uint8_t *r = mem + start, *d = r + NF_PCAP_REC_HDR;
		uint32_t caplen = nf_cap_rd32(r + 8, 0);
		uint64_t ts;
		struct nf_common k;

		if (caplen > snaplen || caplen > end - start - NF_PCAP_REC_HDR)
			break;
		ts = (uint64_t)nf_cap_rd32(r, 0) * 1000000000u + (uint64_t)nf_cap_rd32(r + 4, 0) * sub_ns;
		if (nf_pkt_common_read(link, d, caplen, &k)) {
			p[n].ts_ns = ts;
			p[n].dir = 0;
			nf_pkt_common_write(&k, d, caplen, &p[n]);
			nf_wire_pre_words(AF_INET, k.saddr, 0, k.sport, k.daddr, 0, k.dport,
					  nf_seg_sig_of(k.seq, k.ack, k.len, k.flags, k.win), &pre[n]);
			n++;
		} else {
			struct nf_frame f = { .ts_ns = ts, .link = link, .caplen = caplen,
					      .origlen = nf_cap_rd32(r + 12, 0), .data = d };

			frame(&f, p, pre, &n, skipped);
		}
		start += NF_PCAP_REC_HDR + caplen;
	}
	c->b.pos += start - c->b.start;
	c->b.start = start;
	return n;
}

size_t nf_feed(struct nf_cap *c, struct nf_pkt *p, struct nf_wire_pre *pre, size_t max,
	       unsigned long long skipped[NF_SKIP_NKINDS], int *rc)
{
	size_t n = 0;

	*rc = 1;
	while (n < max) {
		struct nf_frame f;

		if (c->pcap && !c->swap && c->state == NF_CAP_OK)
			n = pcap_run(c, p, pre, n, max, skipped);
		if (n == max)
			break;
		if ((*rc = nf_cap_next(c, &f)) != 1)
			break;
		frame(&f, p, pre, &n, skipped);
	}
	return n;
}
