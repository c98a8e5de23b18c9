/*
 * feed.c - a capture's frames as the detector's segments (nf_feed.h):
 * the one loop that runs on every frame of a scan. The records of a
 * pcap file in this machine's byte order that are whole in the read
 * buffer, as nearly all are, are read here in one pass, and a pcapng
 * file's enhanced packet blocks that nf_pcapng_record takes at once; the
 * common frame (Ethernet, IPv4, TCP: decode_int.h) read into registers
 * and written out as the detector's segment (struct nf_seg) at once; any
 * other record, block, frame or capture goes through nf_cap_next, the
 * decoder's general path and nf_wire_prepare, with the same result.
 */
#include "cap_int.h"
#include "decode_int.h"
#include "nf_feed.h"
#include "wire_int.h"

/* One frame f into s[*n] and more[*n] (*n counted), or skipped. */
static void frame(const struct nf_frame *f, struct nf_seg *s, struct nf_seg_more *more, size_t *n,
		  unsigned long long skipped[NF_SKIP_NKINDS])
{
	struct nf_pkt p;
	enum nf_pkt_skip why;

	p.dir = f->dir;
	why = nf_pkt_decode(f->link, 0, f->data, f->caplen, f->origlen, &p);
	if (why != NF_SKIP_NONE) {
		skipped[why]++;
		return;
	}
	p.ts_ns = f->ts_ns;
	nf_seg_make(&p, &s[*n], &more[*n]);
	(*n)++;
}

/* The MSS option of the SYN in the common frame d (caplen bytes, of
 * link), 0 if none: as the decoded segment would have it. Out of line
 * and reading the frame again, so that the caller's numbers (struct
 * nf_common) never have their address taken and stay in registers. */
static __attribute__((noinline)) uint16_t common_syn_mss(uint32_t link, const uint8_t *d,
							 size_t caplen)
{
	struct nf_common k;
	struct nf_pkt p;

	if (!nf_pkt_common_read(link, d, caplen, &k))
		return 0;
	nf_pkt_common_write(&k, d, caplen, &p);
	return p.mss;
}

/* The segment of the common frame d (caplen bytes, of link) that
 * nf_pkt_common_read accepted into k, seen at ts, into *s and *more, as
 * nf_seg_make would make it from the segment nf_pkt_decode would give.
 * The numbers are read from the frame (k->ip) where they are used, not
 * from k, and two at a load where they lie side by side (seq and ack,
 * flags and window, the two addresses): the compiler then holds fewer
 * at once, and spilled none of them as 4 bytes that it read back as 8
 * (a load wider than the store it reads waits for that store to reach
 * the cache: it cost scan more than the spills). */
static inline __attribute__((always_inline)) void common_seg(const struct nf_common *k,
							     uint32_t link, const uint8_t *d,
							     size_t caplen, uint64_t ts,
							     struct nf_seg *s,
							     struct nf_seg_more *more)
{
	const uint8_t *ip = k->ip;
	uint64_t seq_ack = be64_at(ip + 24);                /* seq << 32 | ack */
	uint32_t flags_win = be32_at(ip + 32) & 0xffffffu; /* flags << 16 | win */
	uint32_t ports = be32_at(ip + 20);                  /* sport << 16 | dport */
	uint64_t addrs;                                     /* both addresses, one load */
	uint32_t saddr, daddr;

	s->ts_ns = ts;
	s->sig = nf_seg_sig_words(seq_ack, (uint64_t)k->len << 24 | flags_win);
	s->seq = (uint32_t)(seq_ack >> 32);
	s->ack = (uint32_t)seq_ack;
	s->len = k->len;
	s->win = (uint16_t)flags_win;
	s->flags = (uint8_t)(flags_win >> 16);
	__builtin_memcpy(&addrs, ip + 12, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	saddr = (uint32_t)addrs;
	daddr = (uint32_t)(addrs >> 32);
#else
	saddr = (uint32_t)(addrs >> 32);
	daddr = (uint32_t)addrs;
#endif
	nf_seg_ends4(saddr, (uint16_t)(ports >> 16), daddr, (uint16_t)ports, s);
	if (flags_win & (uint32_t)NF_TCP_SYN << 16) { /* rare: by way of the decoded segment */
		s->bits |= NF_SEG_MORE;
		memset(more->tail, 0, sizeof(more->tail));
		more->mss = common_syn_mss(link, d, caplen);
	}
}

/*
 * The records of a pcap file of link in our byte order that are whole in the
 * buffer, from its start, until s holds max segments: as nf_pcap_record
 * and frame() would read them, the buffer's cursor and the capture's
 * numbers kept in registers (a store through a byte pointer would make
 * the compiler load them again each time). Returns at the first record
 * it does not read at once (nf_cap_next's to read, end or fail).
 */
static inline __attribute__((always_inline)) size_t pcap_run_link(struct nf_cap *c, uint32_t link,
								  struct nf_seg *s,
								  struct nf_seg_more *more,
								  size_t n, size_t max,
								  unsigned long long *skipped)
{
	const uint8_t *mem = c->b.mem;
	uint32_t start = c->b.start, end = c->b.end, snaplen = c->snaplen;
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
			common_seg(&k, link, d, caplen, ts, &s[n], &more[n]);
			n++;
		} else {
			struct nf_frame f = { .ts_ns = ts, .link = link, .caplen = caplen,
					      .origlen = nf_cap_rd32(r + 12, 0), .data = d };

			frame(&f, s, more, &n, skipped);
		}
		start += NF_PCAP_REC_HDR + caplen;
	}
	c->b.pos += start - c->b.start;
	c->b.start = start;
	return n;
}

/* pcap_run_link for c's link type: Ethernet's, the most common, as a
 * constant (the decoder's tests of other links fold away, and a
 * register is left for the frame's numbers). */
static size_t pcap_run(struct nf_cap *c, struct nf_seg *s, struct nf_seg_more *more, size_t n,
		       size_t max, unsigned long long skipped[NF_SKIP_NKINDS])
{
	if (c->link == NF_LINK_ETHERNET)
		return pcap_run_link(c, NF_LINK_ETHERNET, s, more, n, max, skipped);
	return pcap_run_link(c, c->link, s, more, n, max, skipped);
}

/* The enhanced packet blocks of a pcapng file that nf_pcapng_record
 * takes at once, until s holds max segments: the common frame read into
 * registers, any other through frame(). */
static size_t pcapng_run(struct nf_cap *c, struct nf_seg *s, struct nf_seg_more *more, size_t n,
			 size_t max, unsigned long long skipped[NF_SKIP_NKINDS])
{
	struct nf_frame f;

	while (n < max && nf_pcapng_record(c, &f)) {
		struct nf_common k;

		if (nf_pkt_common_read(f.link, f.data, f.caplen, &k)) {
			common_seg(&k, f.link, f.data, f.caplen, f.ts_ns, &s[n], &more[n]);
			n++;
		} else {
			frame(&f, s, more, &n, skipped);
		}
	}
	return n;
}

size_t nf_feed(struct nf_cap *c, struct nf_seg *s, struct nf_seg_more *more, size_t max,
	       unsigned long long skipped[NF_SKIP_NKINDS], int *rc)
{
	size_t n = 0;

	*rc = 1;
	while (n < max) {
		struct nf_frame f;

		if (c->pcap && !c->swap && c->state == NF_CAP_OK)
			n = pcap_run(c, s, more, n, max, skipped);
		else if (!c->pcap)
			n = pcapng_run(c, s, more, n, max, skipped);
		if (n == max)
			break;
		if ((*rc = nf_cap_next(c, &f)) != 1)
			break;
		frame(&f, s, more, &n, skipped);
	}
	return n;
}
