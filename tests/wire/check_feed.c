/*
 * check_feed.c - scan's reading loop (src/wire/feed.c, nf_feed.h) held
 * against the plain path it shortcuts: nf_cap_next, nf_pkt_decode and
 * nf_wire_prepare, frame by frame. The captures are written here from a
 * seeded mix of frames (the common Ethernet + IPv4 + TCP frame in every
 * shape the shortcut takes, and the frames it must leave to the general
 * path: IPv4 options, VLAN tags, IPv6, SYN options, a zero total length,
 * a snaplen cut, UDP, ARP, fragments), large enough that records cross
 * the read buffer's refills many times, in every form a reader takes
 * (pcap in both byte orders and both resolutions, pcapng), of Ethernet
 * and Linux cooked frames (v1 and v2, tcpdump -i any's), whole and with
 * a truncated last record; read in batches of several sizes.
 */
#include <check.h>
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

#include "capw.h"
#include "../unit/unit.h"

/* ---- writing captures ------------------------------------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static void be16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void be32(uint8_t *p, uint32_t v)
{
	be16(p, v >> 16);
	be16(p + 2, v & 0xffff);
}

/* A TCP header at t: th bytes (options after 20: MSS and window scale
 * where th allows), of ports from a small pool, the payload after it. */
static void put_tcp(uint8_t *t, size_t th, uint8_t flags, size_t payload)
{
	static const uint8_t opts[8] = { 2, 4, 0x05, 0xb4, 3, 3, 7, 1 };

	memset(t, 0, th + payload);
	be16(t, 40000 + rnd(6));
	be16(t + 2, rnd(2) ? 80 : 8080);
	be32(t + 4, rnd(0xffffffffu));
	be32(t + 8, rnd(0xffffffffu));
	t[12] = (uint8_t)(th / 4 << 4);
	t[13] = flags;
	be16(t + 14, rnd(8) ? 512 + rnd(60000) : 0);
	memcpy(t + 20, opts, th - 20 < sizeof(opts) ? th - 20 : sizeof(opts));
	memset(t + th, 'x', payload);
}

/* One frame of a seeded kind into b; its length on the wire. */
static size_t frame(uint8_t *b)
{
	static const uint8_t flagset[] = { 0x10, 0x18, 0x18, 0x10, 0x02, 0x12, 0x11, 0x04, 0x19, 0x14 };
	unsigned kind = rnd(14), tag = kind == 5 ? 4 : 0;
	uint8_t flags = flagset[rnd(sizeof(flagset))];
	size_t payload = rnd(3) ? rnd(80) : rnd(1461), th = flags & 0x02 ? 28 : 20;
	size_t ihl = kind == 3 ? 24 : 20, n;
	uint8_t *ip = b + 14 + tag;

	memset(b, 0xaa, 12);
	if (tag) {
		be16(b + 12, 0x8100);
		be16(b + 14, 7);
	}
	if (kind == 4) { /* IPv6 */
		be16(b + 12 + tag, 0x86dd);
		memset(ip, 0, 40);
		ip[0] = 0x60;
		be16(ip + 4, (unsigned)(th + payload));
		ip[6] = 6;
		ip[8] = 0x20, ip[9] = 0x01, ip[23] = (uint8_t)(1 + rnd(3));
		ip[24] = 0x20, ip[25] = 0x01, ip[39] = (uint8_t)(1 + rnd(3));
		put_tcp(ip + 40, th, flags, payload);
		return 14 + tag + 40 + th + payload;
	}
	if (kind == 7) { /* ARP */
		be16(b + 12, 0x0806);
		memset(b + 14, 1, 28);
		return 42;
	}
	be16(b + 12 + tag, 0x0800);
	memset(ip, 0, ihl);
	ip[0] = (uint8_t)(0x40 | ihl / 4);
	n = ihl + th + payload;
	be16(ip + 2, kind == 10 ? 0 : (unsigned)n);
	be16(ip + 6, kind == 8 ? 0x2000 : rnd(2) ? 0x4000 : 0);
	ip[8] = 64;
	ip[9] = kind == 6 ? 17 : 6;
	ip[12] = 10, ip[15] = (uint8_t)(1 + rnd(4));
	ip[16] = 10, ip[19] = (uint8_t)(1 + rnd(4));
	put_tcp(ip + ihl, th, flags, payload);
	if (kind == 11) /* a data offset beyond the segment */
		ip[ihl + 12] = 0xf0;
	return 14 + tag + n;
}

enum form { PCAP_US, PCAP_NS, PCAP_BE, PCAPNG };

/* The Ethernet frame b of len bytes behind a Linux cooked header
 * instead (v1 or v2, of a seeded packet type: 0-4, or 7); its new length. */
static size_t cooked(uint8_t *b, size_t len, uint32_t link)
{
	static const uint8_t types[] = { 0, 1, 2, 3, 4, 4, 4, 7 };
	uint8_t body[4096], type = types[rnd(sizeof(types))];
	unsigned proto = (unsigned)(b[12] << 8 | b[13]);
	size_t h = link == NF_LINK_LINUX_SLL2 ? 20 : 16;

	memcpy(body, b + 14, len - 14);
	memset(b, 0, h);
	if (h == 20) {
		be16(b, proto);
		be32(b + 4, 2); /* ifindex */
		be16(b + 8, 1); /* ARPHRD_ETHER */
		b[10] = type;
		b[11] = 6;
	} else {
		be16(b, type);
		be16(b + 2, 1);
		be16(b + 4, 6);
		be16(b + 14, proto);
	}
	memcpy(b + h, body, len - 14);
	return len - 14 + h;
}

/* A capture of nframes frames in form f, of link type link (Ethernet, or
 * Linux cooked v1 or v2), each cut to snaplen, in *w (the last record cut
 * short by cut bytes). */
static void capture(struct w *w, enum form f, uint32_t link, unsigned nframes, uint32_t snaplen,
		    size_t cut)
{
	static uint8_t b[4096];
	size_t last = 0;

	memset(w, 0, sizeof(*w));
	w->be = f == PCAP_BE;
	if (f == PCAPNG) {
		put32(w, 0x0a0d0d0a), put32(w, 28), put32(w, 0x1a2b3c4d);
		put16(w, 1), put16(w, 0), put32(w, 0xffffffffu), put32(w, 0xffffffffu), put32(w, 28);
		put32(w, 1), put32(w, 20), put16(w, link), put16(w, 0), put32(w, snaplen), put32(w, 20);
	} else {
		put32(w, f == PCAP_NS ? 0xa1b23c4d : 0xa1b2c3d4);
		put16(w, 2), put16(w, 4), put32(w, 0), put32(w, 0), put32(w, snaplen), put32(w, link);
	}
	for (unsigned k = 0; k < nframes; k++) {
		size_t len = frame(b), caplen;

		if (link != NF_LINK_ETHERNET)
			len = cooked(b, len, link);
		caplen = len < snaplen ? len : snaplen;
		uint64_t t = 1764547200ull * 1000000 + k * 137ull + rnd(50);

		last = w->n;
		if (f == PCAPNG) {
			size_t pad = (4 - caplen % 4) % 4;

			put32(w, 6), put32(w, (uint32_t)(32 + caplen + pad)), put32(w, 0);
			put32(w, (uint32_t)(t >> 32)), put32(w, (uint32_t)t);
			put32(w, (uint32_t)caplen), put32(w, (uint32_t)len);
			put(w, b, caplen);
			put(w, "\0\0\0", pad);
			put32(w, (uint32_t)(32 + caplen + pad));
		} else {
			put32(w, (uint32_t)(t / 1000000));
			put32(w, (uint32_t)(f == PCAP_NS ? t % 1000000 * 1000 : t % 1000000));
			put32(w, (uint32_t)caplen), put32(w, (uint32_t)len);
			put(w, b, caplen);
		}
	}
	if (cut && w->n - last > cut)
		w->n -= cut;
}

/* ---- the two paths ----------------------------------------------------------- */

struct got {
	struct nf_seg *s;
	struct nf_seg_more *more;
	size_t n;
	unsigned long long skipped[NF_SKIP_NKINDS];
	int rc;
	char err[NF_CAP_ERR_MAX];
};

static int open_capture(const struct w *w)
{
	int fd = memfd_create("feed.cap", 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, w->b, w->n), (ssize_t)w->n);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

static void got_init(struct got *g, unsigned nframes)
{
	memset(g, 0, sizeof(*g));
	g->s = calloc(nframes + 1, sizeof(*g->s));
	g->more = calloc(nframes + 1, sizeof(*g->more));
	ck_assert(g->s && g->more);
}

/* The plain path: frame by frame through nf_cap_next, nf_pkt_decode and
 * nf_wire_prepare. */
static void plain(const struct w *w, unsigned nframes, struct got *g)
{
	char err[NF_CAP_ERR_MAX];
	int fd = open_capture(w);
	struct nf_cap *c = nf_cap_open(fd, "feed.cap", err);
	struct nf_frame f;

	ck_assert_msg(c != NULL, "%s", err);
	got_init(g, nframes);
	while ((g->rc = nf_cap_next(c, &f)) == 1) {
		struct nf_pkt p;
		enum nf_pkt_skip why;

		memset(&p, 0, sizeof(p));
		p.dir = f.dir;
		why = nf_pkt_decode(f.link, 0, f.data, f.caplen, f.origlen, &p);
		if (why != NF_SKIP_NONE) {
			g->skipped[why]++;
			continue;
		}
		p.ts_ns = f.ts_ns;
		nf_wire_prepare(&p, &g->s[g->n], &g->more[g->n]);
		g->n++;
	}
	strcpy(g->err, nf_cap_error(c));
	nf_cap_close(c);
	close(fd);
}

/* nf_feed, batch segments at a time. */
static void fed(const struct w *w, unsigned nframes, size_t batch, struct got *g)
{
	char err[NF_CAP_ERR_MAX];
	int fd = open_capture(w);
	struct nf_cap *c = nf_cap_open(fd, "feed.cap", err);

	ck_assert_msg(c != NULL, "%s", err);
	got_init(g, nframes);
	do {
		size_t room = nframes + 1 - g->n, k;

		k = nf_feed(c, g->s + g->n, g->more + g->n, room < batch ? room : batch, g->skipped, &g->rc);
		if (k > batch) /* as assert_same's loops: abort, no ck_assert */
			ck_abort_msg("nf_feed: %zu segments for a batch of %zu", k, batch);
		if (g->rc != 1 && k == batch)
			ck_abort_msg("nf_feed: ended (%d) on a full batch of %zu", g->rc, batch);
		g->n += k;
	} while (g->rc == 1);
	strcpy(g->err, nf_cap_error(c));
	nf_cap_close(c);
	close(fd);
}

static void got_free(struct got *g)
{
	free(g->s);
	free(g->more);
}

/* The same segments (and their more, where they have it), the same
 * frames skipped, the same end and message. The loops test with if and
 * abort on a difference: a ck_assert that holds still writes its line
 * to Check's log, and millions of such lines would be most of the
 * program's CPU. */
static void assert_same(const struct got *a, const struct got *b, const char *what)
{
	ck_assert_msg(a->n == b->n, "%s: %zu segments against %zu", what, a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		if (memcmp(&a->s[i], &b->s[i], sizeof(a->s[i])) != 0)
			ck_abort_msg("%s: segment %zu", what, i);
		if ((a->s[i].bits & NF_SEG_MORE) && memcmp(&a->more[i], &b->more[i], sizeof(a->more[i])) != 0)
			ck_abort_msg("%s: segment %zu's more", what, i);
	}
	ck_assert_mem_eq(a->skipped, b->skipped, sizeof(a->skipped));
	ck_assert_int_eq(a->rc, b->rc);
	ck_assert_str_eq(a->err, b->err);
}

#define NFRAMES 30000 /* about 3 MB: the read buffer refills a dozen times */

static const char *const form_name[] = { "pcap", "pcap ns", "pcap big-endian", "pcapng" };

/* Every form, whole, snaplen cut and truncated, in batches of 1, 7, 1024. */
START_TEST(test_feed_as_the_plain_path)
{
	static const struct {
		uint32_t snaplen;
		size_t cut;
		uint32_t link;
	} shapes[] = { { 65535, 0, NF_LINK_ETHERNET },	 { 96, 0, NF_LINK_ETHERNET },
		       { 60, 0, NF_LINK_ETHERNET },	 { 65535, 9, NF_LINK_ETHERNET },
		       { 65535, 0, NF_LINK_LINUX_SLL },	 { 100, 0, NF_LINK_LINUX_SLL },
		       { 65535, 0, NF_LINK_LINUX_SLL2 }, { 100, 7, NF_LINK_LINUX_SLL2 } };
	static const size_t batches[] = { 1, 7, 1024 };
	enum form f = (enum form)_i;

	for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
		struct got want, got;
		struct w w;

		rng = 0x9e3779b97f4a7c15ull + k;
		capture(&w, f, shapes[k].link, NFRAMES, shapes[k].snaplen, shapes[k].cut);
		plain(&w, NFRAMES, &want);
		/* the mix is what it says: segments, and each kind of skip */
		ck_assert_uint_gt(want.n, NFRAMES / 2);
		ck_assert_uint_gt(want.skipped[NF_SKIP_NOT_IP], 0);
		ck_assert_uint_gt(want.skipped[NF_SKIP_NOT_TCP], 0);
		ck_assert_uint_gt(want.skipped[NF_SKIP_FRAGMENT], 0);
		ck_assert_uint_gt(want.skipped[NF_SKIP_BAD], 0);
		ck_assert_int_eq(want.rc, shapes[k].cut ? -1 : 0);
		for (size_t b = 0; b < sizeof(batches) / sizeof(batches[0]); b++) {
			char what[96];

			snprintf(what, sizeof(what), "%s, link %u, snaplen %u, cut %zu, batch %zu",
				 form_name[f], shapes[k].link, shapes[k].snaplen, shapes[k].cut, batches[b]);
			fed(&w, NFRAMES, batches[b], &got);
			assert_same(&want, &got, what);
			got_free(&got);
		}
		got_free(&want);
		free(w.b);
	}
}
END_TEST

/* A segment's preparation: its ends in order, whichever sent it; the
 * same connection's hash both ways; a SYN's MSS and an IPv6 address's
 * rest in its more. */
START_TEST(test_feed_prepare_both_ways)
{
	struct nf_pkt p, q;
	struct nf_seg a, b;
	struct nf_seg_more ma, mb;

	memset(&p, 0, sizeof(p));
	p.family = AF_INET6;
	p.saddr[0] = 0x20, p.saddr[15] = 9;
	p.daddr[0] = 0x20, p.daddr[15] = 3;
	p.sport = 1000, p.dport = 2000;
	p.flags = NF_TCP_SYN;
	p.mss = 1440;
	q = p;
	memcpy(q.saddr, p.daddr, 16);
	memcpy(q.daddr, p.saddr, 16);
	q.sport = p.dport, q.dport = p.sport;
	nf_wire_prepare(&p, &a, &ma);
	nf_wire_prepare(&q, &b, &mb);
	ck_assert_uint_eq(a.bits & NF_SEG_SRC, NF_SEG_SRC); /* ...::9 is the higher */
	ck_assert_uint_eq(b.bits & NF_SEG_SRC, 0);
	ck_assert_uint_eq(a.tag, b.tag);
	ck_assert(a.head[0] == b.head[0] && a.head[1] == b.head[1]);
	ck_assert_uint_eq(a.bits & (NF_SEG_V6 | NF_SEG_MORE), NF_SEG_V6 | NF_SEG_MORE);
	ck_assert_uint_eq(ma.mss, 1440);
	ck_assert_uint_eq(ma.tail[0][11], 3); /* the lower end's last byte */
	ck_assert_uint_eq(ma.tail[1][11], 9);
	ck_assert_mem_eq(ma.tail, mb.tail, sizeof(ma.tail));
}
END_TEST

static Suite *feed_suite(void)
{
	Suite *s = suite_create("feed");
	TCase *tc = tcase_create("feed");

	tcase_set_timeout(tc, 120);
	unit_add_loop(tc, test_feed_as_the_plain_path, PCAP_US, PCAPNG + 1);
	unit_add(tc, test_feed_prepare_both_ways);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return unit_run(srunner_create(feed_suite()), "check_feed");
}
