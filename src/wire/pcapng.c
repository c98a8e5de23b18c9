/*
 * pcapng.c - the pcapng format: blocks of type, total length, body and
 * the total length again, in sections that each start with a section
 * header block (SHB: its byte order, version 1.x) and define their own
 * interfaces (IDB: link type, snaplen, if_tsresol, if_tsoffset). Packets
 * come in enhanced (EPB), simple (SPB) and obsolete (OPB) packet blocks;
 * every other block is read through.
 *
 * A block's length is checked before a byte of it is used: at least 12
 * and the block type's minimum, a multiple of 4, the same at both ends,
 * and for the blocks read whole (SHB, IDB and the packet blocks) at most
 * NF_CAP_RECORD_MAX. A block that carries no packet may be longer: it is
 * read through, never held.
 */
#include <string.h>

#include "cap_int.h"

#define BT_SHB 0x0a0d0d0au
#define BT_IDB 1u
#define BT_OPB 2u
#define BT_SPB 3u
#define BT_EPB 6u
#define BO_MAGIC 0x1a2b3c4du

#define OPT_END 0
#define OPT_FLAGS 2     /* epb_flags, pack_flags: bits 0-1 the direction */
#define OPT_TSRESOL 9
#define OPT_TSOFFSET 14

/* ---- options ---------------------------------------------------------------- */

struct opt {
	uint16_t code, len;
	const uint8_t *val;
};

/* The next option of [*cur, end) into *o, *cur moved past it (padded
 * to 4). Returns 1, 0 at opt_endofopt or the end of the block, -1 if
 * the option runs beyond its block. */
static int opt_next(const uint8_t **cur, const uint8_t *end, int be, struct opt *o)
{
	uint32_t room = (uint32_t)(end - *cur), padded;

	if (room < 4)
		return 0;
	o->code = nf_cap_u16(*cur, be);
	o->len = nf_cap_u16(*cur + 2, be);
	if (o->code == OPT_END)
		return 0;
	padded = ((uint32_t)o->len + 3) & ~3u;
	if (padded > room - 4)
		return -1;
	o->val = *cur + 4;
	*cur += 4 + padded;
	return 1;
}

/* ---- blocks ----------------------------------------------------------------- */

/* Does the block's length at its end say len, as at its start? */
static int trailer_ok(struct nf_cap *c, const uint8_t *blk, uint32_t len, uint64_t off)
{
	uint32_t tail = nf_cap_u32(blk + len - 4, c->be);

	if (tail == len)
		return 0;
	return nf_cap_fail(c, off, "block length %u at its start, %u at its end", len, tail);
}

/* Checks a block length against its type's minimum; 0 or -1. */
static int length_ok(struct nf_cap *c, uint32_t len, uint32_t min, uint64_t off)
{
	if (len < min || len % 4)
		return nf_cap_fail(c, off, "impossible block length %u (at least %u, a multiple of 4)",
				   len, min);
	return 0;
}

/* The whole block of length len at the current position (read whole:
 * len already checked <= NF_CAP_RECORD_MAX) into *p, its trailer
 * checked; 0 or -1. Nothing consumed. */
static int block_whole(struct nf_cap *c, uint32_t len, uint64_t off, const uint8_t **p)
{
	if (len > NF_CAP_RECORD_MAX)
		return nf_cap_fail(c, off, "block of %u bytes, beyond the longest read (%u)", len,
				   NF_CAP_RECORD_MAX);
	if (nf_cbuf_want(&c->b, len, p, NULL) < 0)
		return nf_cap_short(c, off, "block");
	return trailer_ok(c, *p, len, off);
}

/* Reads through a block that carries no packet, of any length. 0 or -1. */
static int block_skip(struct nf_cap *c, uint32_t len, uint64_t off)
{
	const uint8_t *p;

	if (len <= NF_CAP_BUF && len <= NF_CAP_RECORD_MAX) {
		if (block_whole(c, len, off, &p) < 0)
			return -1;
		nf_cbuf_take(&c->b, len);
		return 0;
	}
	if (nf_cbuf_skip(&c->b, len - 4) < 0 || nf_cbuf_want(&c->b, 4, &p, NULL) < 0)
		return nf_cap_short(c, off, "block");
	if (nf_cap_u32(p, c->be) != len)
		return nf_cap_fail(c, off, "block length %u at its start, %u at its end", len,
				   nf_cap_u32(p, c->be));
	nf_cbuf_take(&c->b, 4);
	return 0;
}

/* A section header block at the current position: the byte order, the
 * version; the section's interfaces forgotten. 0 or -1. */
static int read_shb(struct nf_cap *c)
{
	const uint8_t *p;
	uint64_t off = c->b.pos;
	uint32_t len, major;

	if (nf_cbuf_want(&c->b, 12, &p, NULL) < 0)
		return nf_cap_short(c, off, "section header block");
	if (nf_cap_u32(p + 8, 1) == BO_MAGIC)
		c->be = 1;
	else if (nf_cap_u32(p + 8, 0) == BO_MAGIC)
		c->be = 0;
	else
		return nf_cap_fail(c, off, "section header block with no byte-order magic");
	len = nf_cap_u32(p + 4, c->be);
	if (length_ok(c, len, 28, off) < 0 || block_whole(c, len, off, &p) < 0)
		return -1;
	major = nf_cap_u16(p + 12, c->be);
	if (major != 1)
		return nf_cap_fail(c, off, "pcapng version %u.%u, not 1.x", major,
				   nf_cap_u16(p + 14, c->be));
	c->nifaces = 0;
	c->last_ts = 0;
	nf_cbuf_take(&c->b, len);
	return 0;
}

/* if_tsresol v into the interface's conversion; 0, or -1 if no 64-bit
 * count of nanoseconds can come of it. */
static int set_tsresol(struct nf_cap_iface *ifc, uint8_t v)
{
	ifc->base2 = v >> 7;
	ifc->exp = v & 0x7f;
	ifc->mul = 0;
	if (!ifc->base2 && ifc->exp <= 9) {
		ifc->mul = 1;
		for (unsigned i = ifc->exp; i < 9; i++)
			ifc->mul *= 10;
	} else if (!ifc->base2) {
		if (ifc->exp > 38) /* 10^38 is the largest power in 128 bits */
			return -1;
		ifc->div = 1;
		for (unsigned i = 9; i < ifc->exp; i++)
			ifc->div *= 10;
	}
	return 0;
}

/* An interface description block of length len at off (read whole). */
static int read_idb(struct nf_cap *c, const uint8_t *p, uint32_t len, uint64_t off)
{
	struct nf_cap_iface *ifc = &c->ifaces[c->nifaces];
	const uint8_t *cur = p + 16, *end = p + len - 4;
	struct opt o;
	int r;

	if (c->nifaces >= NF_CAP_IFACES)
		return nf_cap_fail(c, off, "more than %u interfaces in one section", NF_CAP_IFACES);
	memset(ifc, 0, sizeof(*ifc));
	ifc->link = nf_cap_u16(p + 8, c->be);
	ifc->snaplen = nf_cap_u32(p + 12, c->be);
	if (!nf_cap_link_known(ifc->link))
		return nf_cap_fail(c, off, "interface %u: link type %u is not one naglefix decodes",
				   c->nifaces, ifc->link);
	set_tsresol(ifc, 6);
	while ((r = opt_next(&cur, end, c->be, &o)) > 0) {
		if (o.code == OPT_TSRESOL && o.len >= 1 && set_tsresol(ifc, o.val[0]) < 0)
			return nf_cap_fail(c, off, "interface %u: if_tsresol 10^-%u is finer than "
					   "any clock", c->nifaces, ifc->exp);
		if (o.code == OPT_TSOFFSET && o.len == 8)
			ifc->offset_s = (int64_t)((uint64_t)nf_cap_u32(o.val + (c->be ? 0 : 4), c->be) << 32 |
						  nf_cap_u32(o.val + (c->be ? 4 : 0), c->be));
	}
	if (r < 0)
		return nf_cap_fail(c, off, "interface %u: an option runs beyond its block",
				   c->nifaces);
	c->nifaces++;
	return 0;
}

/* The interface's time (high and low 32 bits of its units) in ns since
 * the epoch. Wraps, as the file's own numbers would, past 2554. */
static uint64_t iface_ns(const struct nf_cap_iface *ifc, uint32_t hi, uint32_t lo)
{
	uint64_t units = (uint64_t)hi << 32 | lo, ns;

	if (ifc->mul)
		ns = units * ifc->mul;
	else if (ifc->base2)
		ns = (uint64_t)(((unsigned __int128)units * 1000000000u) >> ifc->exp);
	else
		ns = (uint64_t)((unsigned __int128)units / ifc->div);
	return ns + (uint64_t)ifc->offset_s * 1000000000u;
}

/* The direction bits of a packet block's flags option, if it has one. */
static uint8_t packet_dir(struct nf_cap *c, const uint8_t *cur, const uint8_t *end,
			  uint64_t off, int *bad)
{
	struct opt o;
	uint8_t dir = 0;
	int r;

	while ((r = opt_next(&cur, end, c->be, &o)) > 0)
		if (o.code == OPT_FLAGS && o.len == 4)
			dir = (uint8_t)(nf_cap_u32(o.val, c->be) & 3); /* 1 in, 2 out: nf_pkt_dir's */
	if (r < 0)
		*bad = nf_cap_fail(c, off, "an option runs beyond its packet block");
	return dir == 3 ? 0 : dir;
}

/* Checks a packet's captured length against its block's room and its
 * interface's snaplen; 0 or -1. */
static int caplen_ok(struct nf_cap *c, uint32_t caplen, uint32_t room, uint32_t snaplen,
		     uint64_t off)
{
	if (caplen > room)
		return nf_cap_fail(c, off, "packet of %u bytes, beyond its block (%u)", caplen, room);
	if (snaplen && caplen > snaplen)
		return nf_cap_fail(c, off, "packet of %u bytes, beyond the snaplen (%u)", caplen,
				   snaplen);
	return 0;
}

/* An enhanced (EPB) or obsolete (OPB) packet block into *f. 0 or -1. */
static int read_epb(struct nf_cap *c, uint32_t type, const uint8_t *p, uint32_t len,
		    uint64_t off, struct nf_frame *f)
{
	uint32_t ifid = type == BT_EPB ? nf_cap_u32(p + 8, c->be) : nf_cap_u16(p + 8, c->be);
	uint32_t caplen = nf_cap_u32(p + 20, c->be), pad;
	const struct nf_cap_iface *ifc;
	int bad = 0;

	if (ifid >= c->nifaces)
		return nf_cap_fail(c, off, "packet on interface %u; the section defines %u", ifid,
				   c->nifaces);
	ifc = &c->ifaces[ifid];
	if (caplen_ok(c, caplen, len - 32, ifc->snaplen, off) < 0)
		return -1;
	f->ts_ns = c->last_ts = iface_ns(ifc, nf_cap_u32(p + 12, c->be), nf_cap_u32(p + 16, c->be));
	f->origlen = nf_cap_u32(p + 24, c->be);
	f->link = ifc->link;
	f->caplen = caplen;
	f->data = p + 28;
	f->dir = 0;
	pad = (caplen + 3) & ~3u;
	if (pad + 4 <= len - 32) /* options after the padded data */
		f->dir = packet_dir(c, p + 28 + pad, p + len - 4, off, &bad);
	return bad;
}

/* A simple packet block into *f: interface 0, the section's last
 * timestamp (it carries none). 0 or -1. */
static int read_spb(struct nf_cap *c, const uint8_t *p, uint32_t len, uint64_t off,
		    struct nf_frame *f)
{
	const struct nf_cap_iface *ifc = c->ifaces;
	uint32_t caplen = nf_cap_u32(p + 8, c->be);

	if (c->nifaces == 0)
		return nf_cap_fail(c, off, "simple packet block before any interface");
	f->origlen = caplen;
	if (caplen > len - 16)
		caplen = len - 16;
	if (ifc->snaplen && caplen > ifc->snaplen)
		caplen = ifc->snaplen;
	f->ts_ns = c->last_ts;
	f->link = ifc->link;
	f->caplen = caplen;
	f->data = p + 12;
	f->dir = 0;
	return 0;
}

/* The minimum length of a block of type t that is read. */
static uint32_t min_length(uint32_t t)
{
	return t == BT_EPB || t == BT_OPB ? 32 : t == BT_IDB ? 20 : t == BT_SPB ? 16 : 12;
}

/* One block at the current position: 1 with *f set (a packet), 0 if
 * it carried none, -1. */
static int read_block(struct nf_cap *c, const uint8_t *hdr, struct nf_frame *f)
{
	uint64_t off = c->b.pos;
	uint32_t type = nf_cap_u32(hdr, c->be), len = nf_cap_u32(hdr + 4, c->be);
	const uint8_t *p;
	int r;

	if (type == BT_SHB)
		return read_shb(c);
	if (length_ok(c, len, min_length(type), off) < 0)
		return -1;
	if (type != BT_EPB && type != BT_OPB && type != BT_SPB && type != BT_IDB)
		return block_skip(c, len, off);
	if (block_whole(c, len, off, &p) < 0)
		return -1;
	if (type == BT_IDB)
		r = read_idb(c, p, len, off);
	else if (type == BT_SPB)
		r = read_spb(c, p, len, off, f);
	else
		r = read_epb(c, type, p, len, off, f);
	if (r < 0)
		return -1;
	nf_cbuf_take(&c->b, len);
	f->offset = off;
	return type != BT_IDB;
}

static int pcapng_next(struct nf_cap *c, struct nf_frame *f);

/* The direction of a packet block's options [cur, end), as packet_dir
 * gives it, into *dir: 1; or 0 where an option runs beyond the block
 * (read_epb then says so). Fails nothing. */
static int options_dir(const struct nf_cap *c, const uint8_t *cur, const uint8_t *end, uint8_t *dir)
{
	struct opt o;
	int r;

	*dir = 0;
	while ((r = opt_next(&cur, end, c->be, &o)) > 0)
		if (o.code == OPT_FLAGS && o.len == 4)
			*dir = (uint8_t)(nf_cap_u32(o.val, c->be) & 3);
	if (*dir == 3)
		*dir = 0;
	return r == 0;
}

int nf_pcapng_record(struct nf_cap *c, struct nf_frame *f)
{
	uint32_t avail = c->b.end - c->b.start, len, ifid, caplen, pad;
	const uint8_t *p = c->b.mem + c->b.start;
	const struct nf_cap_iface *ifc;
	uint8_t dir = 0;

	/* an EPB of a possible length, whole here, its trailer right, of a
	 * known interface, its packet within its block and snaplen: what
	 * read_block and read_epb would take without a message */
	if (c->state != NF_CAP_OK || c->next != pcapng_next || avail < 32 ||
	    nf_cap_u32(p, c->be) != BT_EPB)
		return 0;
	len = nf_cap_u32(p + 4, c->be);
	if (len < 32 || len % 4 || len > NF_CAP_RECORD_MAX || len > avail ||
	    nf_cap_u32(p + len - 4, c->be) != len)
		return 0;
	ifid = nf_cap_u32(p + 8, c->be);
	caplen = nf_cap_u32(p + 20, c->be);
	if (ifid >= c->nifaces)
		return 0;
	ifc = &c->ifaces[ifid];
	if (caplen > len - 32 || (ifc->snaplen && caplen > ifc->snaplen))
		return 0;
	pad = (caplen + 3) & ~3u;
	if (pad + 4 <= len - 32 && !options_dir(c, p + 28 + pad, p + len - 4, &dir))
		return 0;
	f->ts_ns = c->last_ts = iface_ns(ifc, nf_cap_u32(p + 12, c->be), nf_cap_u32(p + 16, c->be));
	f->origlen = nf_cap_u32(p + 24, c->be);
	f->link = ifc->link;
	f->caplen = caplen;
	f->data = p + 28;
	f->dir = dir;
	f->offset = c->b.pos;
	nf_cbuf_take(&c->b, len);
	return 1;
}

static int pcapng_next(struct nf_cap *c, struct nf_frame *f)
{
	const uint8_t *hdr;
	int r;

	for (;;) {
		if (nf_pcapng_record(c, f))
			return 1;
		r = nf_cbuf_want(&c->b, 8, &hdr, NULL);
		if (r == 0) {
			c->state = NF_CAP_END;
			return 0;
		}
		if (r < 0)
			return nf_cap_short(c, c->b.pos, "block header");
		r = read_block(c, hdr, f);
		if (r != 0)
			return r;
	}
}

int nf_pcapng_start(struct nf_cap *c)
{
	if (read_shb(c) < 0)
		return -1;
	c->next = pcapng_next;
	return 0;
}
