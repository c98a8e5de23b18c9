/*
 * check_cap.c - the capture readers (src/wire/cap.c, pcap.c, pcapng.c)
 * on files written here byte by byte, in both byte orders: every field
 * of a record, every kind of pcapng block, sections and interfaces, and
 * each broken input (with the message and the offset it must give); a
 * pipe fed a few bytes at a time; and the committed fixtures of real
 * tcpdump and dumpcap captures, whole and cut at every byte.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wire/nf_cap.h"
#include "wire/nf_pkt.h"

#include "capw.h"
#include "../unit/unit.h"

/* ---- writing files ---------------------------------------------------------------- */

/* A frame's bytes: 0, 1, 2... from its first. */
static const uint8_t *frame_bytes(size_t n)
{
	static uint8_t b[1 << 16];

	for (size_t i = 0; i < n && i < sizeof(b); i++)
		b[i] = (uint8_t)i;
	return b;
}

/* pcap: the file header; ns for the nanosecond magic. */
static void pcap_header(struct w *w, int ns, uint32_t snaplen, uint32_t link)
{
	put32(w, ns ? 0xa1b23c4du : 0xa1b2c3d4u);
	put16(w, 2);
	put16(w, 4);
	put32(w, 0);
	put32(w, 0);
	put32(w, snaplen);
	put32(w, link);
}

static void pcap_record(struct w *w, uint32_t sec, uint32_t sub, uint32_t caplen, uint32_t origlen)
{
	put32(w, sec);
	put32(w, sub);
	put32(w, caplen);
	put32(w, origlen);
	put(w, frame_bytes(caplen), caplen);
}

/* pcapng: a block's start (its length filled in by ng_end). */
static size_t ng_begin(struct w *w, uint32_t type)
{
	size_t at = w->n;

	put32(w, type);
	put32(w, 0);
	return at;
}

static void ng_end(struct w *w, size_t at)
{
	uint32_t len;

	pad4(w);
	len = (uint32_t)(w->n - at + 4);
	put_at32(w, at + 4, len);
	put32(w, len);
}

static void ng_shb(struct w *w)
{
	size_t at = ng_begin(w, 0x0a0d0d0a);

	put32(w, 0x1a2b3c4d);
	put16(w, 1);
	put16(w, 0);
	put32(w, 0xffffffff);
	put32(w, 0xffffffff);
	ng_end(w, at);
}

/* An option: code, length, the value's bytes (padded). */
static void ng_opt(struct w *w, unsigned code, const void *val, unsigned len)
{
	put16(w, code);
	put16(w, len);
	put(w, val, len);
	pad4(w);
}

/* An IDB; tsresol < 0: no option; tsoffset: if_tsoffset when nonzero. */
static void ng_idb(struct w *w, unsigned link, uint32_t snaplen, int tsresol, int64_t tsoffset)
{
	size_t at = ng_begin(w, 1);

	put16(w, link);
	put16(w, 0);
	put32(w, snaplen);
	if (tsresol >= 0) {
		uint8_t v = (uint8_t)tsresol;

		ng_opt(w, 9, &v, 1);
	}
	if (tsoffset) {
		put16(w, 14);
		put16(w, 8);
		if (w->be) {
			put32(w, (uint32_t)((uint64_t)tsoffset >> 32));
			put32(w, (uint32_t)tsoffset);
		} else {
			put32(w, (uint32_t)tsoffset);
			put32(w, (uint32_t)((uint64_t)tsoffset >> 32));
		}
	}
	if (tsresol >= 0 || tsoffset)
		put32(w, 0); /* opt_endofopt */
	ng_end(w, at);
}

/* An EPB; flags < 0: no epb_flags option. */
static void ng_epb(struct w *w, uint32_t ifid, uint64_t ts, uint32_t caplen, uint32_t origlen,
		   long flags)
{
	size_t at = ng_begin(w, 6);

	put32(w, ifid);
	put32(w, (uint32_t)(ts >> 32));
	put32(w, (uint32_t)ts);
	put32(w, caplen);
	put32(w, origlen);
	put(w, frame_bytes(caplen), caplen);
	pad4(w);
	if (flags >= 0) {
		put16(w, 2);
		put16(w, 4);
		put32(w, (uint32_t)flags);
		put32(w, 0);
	}
	ng_end(w, at);
}

static void ng_opb(struct w *w, unsigned ifid, uint64_t ts, uint32_t caplen, long flags)
{
	size_t at = ng_begin(w, 2);

	put16(w, ifid);
	put16(w, 0);
	put32(w, (uint32_t)(ts >> 32));
	put32(w, (uint32_t)ts);
	put32(w, caplen);
	put32(w, caplen);
	put(w, frame_bytes(caplen), caplen);
	pad4(w);
	if (flags >= 0) {
		put16(w, 2);
		put16(w, 4);
		put32(w, (uint32_t)flags);
	}
	ng_end(w, at);
}

static void ng_spb(struct w *w, uint32_t origlen, uint32_t stored)
{
	size_t at = ng_begin(w, 3);

	put32(w, origlen);
	put(w, frame_bytes(stored), stored);
	ng_end(w, at);
}

/* A block of another type with a body of n bytes. */
static void ng_other(struct w *w, uint32_t type, size_t n)
{
	size_t at = ng_begin(w, type);

	for (size_t i = 0; i < n; i++)
		put8(w, (uint8_t)(i * 7));
	ng_end(w, at);
}

/* ---- reading them ----------------------------------------------------------------- */

static char err[NF_CAP_ERR_MAX];
static int memfd = -1;

/* Opens bytes b[0..n) as a capture (a memfd named "t.cap"). */
static struct nf_cap *open_bytes(const void *b, size_t n)
{
	memfd = memfd_create("t.cap", 0);
	ck_assert_int_ge(memfd, 0);
	ck_assert_int_eq(write(memfd, b, n), (ssize_t)n);
	lseek(memfd, 0, SEEK_SET);
	return nf_cap_open(memfd, "t.cap", err);
}

static struct nf_cap *open_w(const struct w *w)
{
	return open_bytes(w->b, w->n);
}

/* The offset in "t.cap: offset N: why", or -1 if msg is not of that form. */
static long long msg_offset(const char *msg)
{
	long long off;
	int n = -1;

	if (sscanf(msg, "t.cap: offset %lld: %n", &off, &n) != 1 || n < 0 || msg[n] == '\0')
		return -1;
	return off;
}

/* c's next call fails at offset off with a message containing what;
 * so does every later call. */
static void assert_fails(struct nf_cap *c, long long off, const char *what)
{
	struct nf_frame f;

	ck_assert_int_eq(nf_cap_next(c, &f), -1);
	ck_assert_msg(msg_offset(nf_cap_error(c)) == off, "wanted offset %lld: %s", off,
		      nf_cap_error(c));
	ck_assert_msg(strstr(nf_cap_error(c), what), "wanted '%s': %s", what, nf_cap_error(c));
	ck_assert_int_eq(nf_cap_next(c, &f), -1);
	ck_assert_int_eq(nf_cap_next(c, &f), -1);
}

/* open fails at offset off with a message containing what. */
static void assert_open_fails(struct nf_cap *c, long long off, const char *what)
{
	ck_assert_ptr_null(c);
	ck_assert_msg(msg_offset(err) == off, "wanted offset %lld: %s", off, err);
	ck_assert_msg(strstr(err, what), "wanted '%s': %s", what, err);
}

static void assert_end(struct nf_cap *c)
{
	struct nf_frame f;

	ck_assert_int_eq(nf_cap_next(c, &f), 0);
	ck_assert_str_eq(nf_cap_error(c), "");
	ck_assert_int_eq(nf_cap_next(c, &f), 0);
}

/* The frame is the n bytes frame_bytes writes. */
static void assert_bytes(const struct nf_frame *f, uint32_t n)
{
	ck_assert_uint_eq(f->caplen, n);
	ck_assert_mem_eq(f->data, frame_bytes(n), n);
}

static void teardown(void)
{
	if (memfd >= 0)
		close(memfd);
	memfd = -1;
}

/* ---- pcap ---------------------------------------------------------------------------- */

/* _i: bit 0 big-endian, bit 1 nanoseconds. */
START_TEST(test_cap_pcap_orders_and_resolutions)
{
	struct w w = { .be = _i & 1 };
	int ns = _i >> 1 & 1;
	struct nf_frame f;
	struct nf_cap *c;

	pcap_header(&w, ns, 65535, NF_LINK_ETHERNET);
	pcap_record(&w, 1700000000, 123456, 60, 60);
	pcap_record(&w, 1700000001, 999999, 54, 1514);
	c = open_w(&w);
	ck_assert_msg(c != NULL, "%s", err);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	ck_assert_uint_eq(f.ts_ns, 1700000000ull * 1000000000 + (ns ? 123456 : 123456000));
	ck_assert_uint_eq(f.offset, 24);
	ck_assert_uint_eq(f.link, NF_LINK_ETHERNET);
	ck_assert_uint_eq(f.origlen, 60);
	ck_assert_uint_eq(f.dir, NF_DIR_UNKNOWN);
	assert_bytes(&f, 60);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	ck_assert_uint_eq(f.ts_ns, 1700000001ull * 1000000000 + (ns ? 999999 : 999999000));
	ck_assert_uint_eq(f.offset, 24 + 16 + 60);
	ck_assert_uint_eq(f.origlen, 1514);
	assert_bytes(&f, 54);
	assert_end(c);
	ck_assert_uint_eq(nf_cap_bytes(c), w.n);
	nf_cap_close(c);
	free(w.b);
}
END_TEST

START_TEST(test_cap_pcap_link_and_fcs_bits)
{
	struct w w = { 0 };
	struct nf_frame f;
	struct nf_cap *c;

	pcap_header(&w, 0, 262144, NF_LINK_LINUX_SLL2 | 0x14000000u); /* FCS length 4, F */
	pcap_record(&w, 1, 2, 40, 40);
	c = open_w(&w);
	ck_assert_msg(c != NULL, "%s", err);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	ck_assert_uint_eq(f.link, NF_LINK_LINUX_SLL2);
	nf_cap_close(c);
	free(w.b);
}
END_TEST

START_TEST(test_cap_pcap_unknown_link_type)
{
	struct w w = { .be = 1 };

	pcap_header(&w, 0, 65535, 105); /* 802.11 */
	assert_open_fails(open_w(&w), 20, "link type 105");
	free(w.b);
}
END_TEST

START_TEST(test_cap_pcap_bad_version)
{
	struct w w = { 0 };

	pcap_header(&w, 0, 65535, 1);
	w.b[4] = 3;
	assert_open_fails(open_w(&w), 4, "version 3.4");
	free(w.b);
}
END_TEST

START_TEST(test_cap_not_a_capture)
{
	static const char text[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";

	assert_open_fails(open_bytes(text, sizeof(text) - 1), 0, "not a pcap or pcapng");
	teardown();
	assert_open_fails(open_bytes(text, 0), 0, "empty");
	teardown();
	assert_open_fails(open_bytes("\xd4\xc3", 2), 0, "truncated");
}
END_TEST

START_TEST(test_cap_pcap_truncated_header)
{
	struct w w = { 0 };

	pcap_header(&w, 0, 65535, 1);
	assert_open_fails(open_bytes(w.b, 23), 0, "truncated pcap file header");
	free(w.b);
}
END_TEST

/* A good record, then one cut in its header: the good one read, then the
 * error at the cut record's offset. */
START_TEST(test_cap_pcap_truncated_record_header)
{
	struct w w = { 0 };
	struct nf_frame f;
	struct nf_cap *c;

	pcap_header(&w, 0, 65535, 1);
	pcap_record(&w, 1, 2, 60, 60);
	pcap_record(&w, 1, 3, 60, 60);
	c = open_bytes(w.b, 24 + 76 + 9);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	assert_fails(c, 24 + 76, "truncated record header");
	nf_cap_close(c);
	free(w.b);
}
END_TEST

START_TEST(test_cap_pcap_record_beyond_the_file)
{
	struct w w = { .be = 1 };
	struct nf_frame f;
	struct nf_cap *c;

	pcap_header(&w, 1, 65535, 1);
	pcap_record(&w, 1, 2, 60, 60);
	pcap_record(&w, 1, 3, 600, 600);
	c = open_bytes(w.b, w.n - 1);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	assert_fails(c, 24 + 76, "truncated record");
	nf_cap_close(c);
	free(w.b);
}
END_TEST

START_TEST(test_cap_pcap_caplen_beyond_snaplen)
{
	struct w w = { 0 };
	struct nf_frame f;
	struct nf_cap *c;

	pcap_header(&w, 0, 96, 1);
	pcap_record(&w, 1, 2, 96, 1500);
	pcap_record(&w, 1, 3, 97, 1500);
	c = open_w(&w);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	assert_fails(c, 24 + 16 + 96, "beyond the snaplen (96)");
	nf_cap_close(c);
	free(w.b);
}
END_TEST

/* A snaplen of 0 is no limit (some writers), but NF_CAP_RECORD_MAX is. */
START_TEST(test_cap_pcap_record_beyond_the_longest)
{
	struct w w = { 0 };
	struct nf_frame f;
	struct nf_cap *c;

	pcap_header(&w, 0, 0, 1);
	pcap_record(&w, 1, 2, 9000, 9000);
	put32(&w, 1);
	put32(&w, 2);
	put32(&w, NF_CAP_RECORD_MAX + 1);
	put32(&w, NF_CAP_RECORD_MAX + 1);
	c = open_w(&w);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	assert_bytes(&f, 9000);
	assert_fails(c, 24 + 16 + 9000, "beyond the longest record read");
	nf_cap_close(c);
	free(w.b);
}
END_TEST

/* ---- pcapng -------------------------------------------------------------------------- */

START_TEST(test_cap_pcapng_packets_and_direction)
{
	struct w w = { .be = _i };
	struct nf_frame f;
	struct nf_cap *c;
	size_t epb2;

	ng_shb(&w);
	ng_idb(&w, NF_LINK_ETHERNET, 262144, -1, 0);
	ng_epb(&w, 0, 1700000000123456ull, 61, 61, 1); /* inbound */
	epb2 = w.n;
	ng_epb(&w, 0, 1700000000123457ull, 62, 70, 2); /* outbound */
	ng_epb(&w, 0, 1700000000123458ull, 63, 63, 0);
	ng_epb(&w, 0, 1700000000123459ull, 64, 64, -1);
	c = open_w(&w);
	ck_assert_msg(c != NULL, "%s", err);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	ck_assert_uint_eq(f.ts_ns, 1700000000123456000ull);
	ck_assert_uint_eq(f.dir, NF_DIR_IN);
	ck_assert_uint_eq(f.link, NF_LINK_ETHERNET);
	ck_assert_uint_eq(f.offset, 28 + 20);
	assert_bytes(&f, 61);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	ck_assert_uint_eq(f.dir, NF_DIR_OUT);
	ck_assert_uint_eq(f.origlen, 70);
	ck_assert_uint_eq(f.offset, epb2);
	assert_bytes(&f, 62);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	ck_assert_uint_eq(f.dir, NF_DIR_UNKNOWN);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	ck_assert_uint_eq(f.dir, NF_DIR_UNKNOWN);
	assert_bytes(&f, 64);
	assert_end(c);
	ck_assert_uint_eq(nf_cap_bytes(c), w.n);
	nf_cap_close(c);
	free(w.b);
}
END_TEST

/* if_tsresol (powers of 10 and of 2) and if_tsoffset, one interface each. */
START_TEST(test_cap_pcapng_time_resolutions)
{
	static const struct {
		int resol;
		int64_t offset;
		uint64_t units, ns;
	} cases[] = {
		{ -1, 0, 1700000000000001ull, 1700000000000001000ull },  /* µs, the default */
		{ 9, 0, 1700000000000000007ull, 1700000000000000007ull }, /* ns */
		{ 3, 0, 1700000000123ull, 1700000000123000000ull },      /* ms */
		{ 0, 0, 1700000000ull, 1700000000000000000ull },         /* s */
		{ 12, 0, 1700000000000000007ull, 1700000000000000ull },  /* ps */
		{ 0x80 | 10, 0, 1025ull, 1000976562ull },                /* 2^-10 */
		{ 0x80 | 30, 0, 3ull << 29, 1500000000ull },             /* 2^-30 */
		{ 6, 100, 1000000ull, 101000000000ull },                 /* +100 s */
		{ 6, -1, 5000000ull, 4000000000ull },                    /* -1 s */
	};
	const int n = (int)(sizeof(cases) / sizeof(cases[0]));
	struct w w = { .be = _i };
	struct nf_frame f;
	struct nf_cap *c;

	ng_shb(&w);
	for (int i = 0; i < n; i++)
		ng_idb(&w, NF_LINK_RAW, 0, cases[i].resol, cases[i].offset);
	for (int i = 0; i < n; i++)
		ng_epb(&w, (uint32_t)i, cases[i].units, 40, 40, -1);
	c = open_w(&w);
	ck_assert_msg(c != NULL, "%s", err);
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(nf_cap_next(c, &f), 1);
		ck_assert_msg(f.ts_ns == cases[i].ns, "case %d: %llu, wanted %llu", i,
			      (unsigned long long)f.ts_ns, (unsigned long long)cases[i].ns);
		ck_assert_uint_eq(f.link, NF_LINK_RAW);
	}
	assert_end(c);
	nf_cap_close(c);
	free(w.b);
}
END_TEST

START_TEST(test_cap_pcapng_tsresol_too_fine)
{
	struct w w = { 0 };
	size_t idb;

	ng_shb(&w);
	idb = w.n;
	ng_idb(&w, NF_LINK_RAW, 0, 39, 0); /* 10^-39 s */
	assert_fails(open_w(&w), (long long)idb, "if_tsresol");
	free(w.b);
}
END_TEST

/* NRB, ISB, a custom block, DSB, systemd journal: read through. */
START_TEST(test_cap_pcapng_other_blocks_skipped)
{
	struct w w = { .be = _i };
	struct nf_frame f;
	struct nf_cap *c;
	size_t at;

	ng_shb(&w);
	ng_other(&w, 4, 20);
	ng_idb(&w, NF_LINK_ETHERNET, 0, -1, 0);
	ng_other(&w, 5, 24);
	ng_epb(&w, 0, 1, 30, 30, -1);
	ng_other(&w, 0x00000bad, 13);
	ng_other(&w, 0x40000bad, 0);
	ng_other(&w, 0x0a, 100);
	ng_other(&w, 9, 8);
	at = w.n;
	ng_epb(&w, 0, 2, 31, 31, -1);
	c = open_w(&w);
	ck_assert_msg(c != NULL, "%s", err);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	assert_bytes(&f, 30);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	assert_bytes(&f, 31);
	ck_assert_uint_eq(f.offset, at);
	assert_end(c);
	nf_cap_close(c);
	free(w.b);
}
END_TEST

/* A block without a packet, larger than the read buffer and than
 * NF_CAP_RECORD_MAX, is read through; the packet after it comes. */
START_TEST(test_cap_pcapng_huge_block_read_through)
{
	struct w w = { .be = _i };
	struct nf_frame f;
	struct nf_cap *c;
	size_t at;

	ng_shb(&w);
	ng_idb(&w, NF_LINK_ETHERNET, 0, -1, 0);
	ng_epb(&w, 0, 1, 30, 30, -1);
	ng_other(&w, 0x0a, 9u << 20);
	at = w.n;
	ng_epb(&w, 0, 2, 31, 31, -1);
	c = open_w(&w);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	assert_bytes(&f, 31);
	ck_assert_uint_eq(f.offset, at);
	assert_end(c);
	nf_cap_close(c);
	teardown();
	/* and cut inside it: truncated, at its offset */
	c = open_bytes(w.b, at - 100);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	assert_fails(c, (long long)(at - (9u << 20) - 12), "truncated block");
	nf_cap_close(c);
	free(w.b);
}
END_TEST

/* SPB: interface 0, its snaplen, and the last timestamp seen (0 before any). */
START_TEST(test_cap_pcapng_simple_packet_block)
{
	struct w w = { .be = _i };
	struct nf_frame f;
	struct nf_cap *c;

	ng_shb(&w);
	ng_idb(&w, NF_LINK_LINUX_SLL, 50, -1, 0);
	ng_spb(&w, 40, 40);
	ng_epb(&w, 0, 7000000, 44, 44, -1);
	ng_spb(&w, 1500, 50); /* cut at the snaplen */
	c = open_w(&w);
	ck_assert_msg(c != NULL, "%s", err);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	ck_assert_uint_eq(f.ts_ns, 0);
	ck_assert_uint_eq(f.link, NF_LINK_LINUX_SLL);
	assert_bytes(&f, 40);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	ck_assert_uint_eq(f.ts_ns, 7000000000ull);
	ck_assert_uint_eq(f.origlen, 1500);
	assert_bytes(&f, 50);
	assert_end(c);
	nf_cap_close(c);
	free(w.b);
}
END_TEST

START_TEST(test_cap_pcapng_obsolete_packet_block)
{
	struct w w = { .be = _i };
	struct nf_frame f;
	struct nf_cap *c;

	ng_shb(&w);
	ng_idb(&w, NF_LINK_ETHERNET, 0, -1, 0);
	ng_idb(&w, NF_LINK_RAW, 0, 9, 0);
	ng_opb(&w, 1, 1234567890123ull, 45, 2);
	ng_opb(&w, 0, 5, 46, -1);
	c = open_w(&w);
	ck_assert_msg(c != NULL, "%s", err);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	ck_assert_uint_eq(f.link, NF_LINK_RAW);
	ck_assert_uint_eq(f.ts_ns, 1234567890123ull);
	ck_assert_uint_eq(f.dir, NF_DIR_OUT);
	assert_bytes(&f, 45);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	ck_assert_uint_eq(f.link, NF_LINK_ETHERNET);
	ck_assert_uint_eq(f.dir, NF_DIR_UNKNOWN);
	assert_end(c);
	nf_cap_close(c);
	free(w.b);
}
END_TEST

/* Two sections, the second in the other byte order: its interfaces are
 * its own (interface 1 of the first is gone). */
START_TEST(test_cap_pcapng_sections)
{
	struct w w = { .be = _i };
	struct nf_frame f;
	struct nf_cap *c;
	size_t bad;

	ng_shb(&w);
	ng_idb(&w, NF_LINK_ETHERNET, 0, -1, 0);
	ng_idb(&w, NF_LINK_RAW, 0, -1, 0);
	ng_epb(&w, 1, 10, 40, 40, -1);
	w.be = !w.be;
	ng_shb(&w);
	ng_idb(&w, NF_LINK_LINUX_SLL2, 0, 9, 0);
	ng_epb(&w, 0, 20, 41, 41, 1);
	bad = w.n;
	ng_epb(&w, 1, 30, 42, 42, -1);
	c = open_w(&w);
	ck_assert_msg(c != NULL, "%s", err);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	ck_assert_uint_eq(f.link, NF_LINK_RAW);
	ck_assert_uint_eq(f.ts_ns, 10000);
	ck_assert_int_eq(nf_cap_next(c, &f), 1);
	ck_assert_uint_eq(f.link, NF_LINK_LINUX_SLL2);
	ck_assert_uint_eq(f.ts_ns, 20);
	ck_assert_uint_eq(f.dir, NF_DIR_IN);
	assert_bytes(&f, 41);
	assert_fails(c, (long long)bad, "interface 1; the section defines 1");
	nf_cap_close(c);
	free(w.b);
}
END_TEST

START_TEST(test_cap_pcapng_unknown_interface)
{
	struct w w = { 0 };
	size_t bad;

	ng_shb(&w);
	bad = w.n;
	ng_epb(&w, 0, 10, 40, 40, -1);
	assert_fails(open_w(&w), (long long)bad, "interface 0; the section defines 0");
	teardown();
	free(w.b);
	memset(&w, 0, sizeof(w));
	ng_shb(&w);
	bad = w.n;
	ng_spb(&w, 40, 40);
	assert_fails(open_w(&w), (long long)bad, "before any interface");
	free(w.b);
}
END_TEST

START_TEST(test_cap_pcapng_unknown_link_type_in_idb)
{
	struct w w = { .be = 1 };
	size_t bad;

	ng_shb(&w);
	ng_idb(&w, NF_LINK_ETHERNET, 0, -1, 0);
	bad = w.n;
	ng_idb(&w, 189, 0, -1, 0); /* USB */
	assert_fails(open_w(&w), (long long)bad, "interface 1: link type 189");
	free(w.b);
}
END_TEST

/* The ways a block length can be impossible, each at the block's offset:
 * _i picks the block (0 EPB, 1 IDB, 2 a block that is read through) and
 * the test tries every kind of bad length on it. */
START_TEST(test_cap_pcapng_bad_block_lengths)
{
	static const struct {
		long delta;     /* added to the true length at the start (and the end unless trailer) */
		int trailer;    /* changes only the trailing length */
		const char *why;
	} bad[] = {
		{ 2, 0, "impossible block length" },    /* not a multiple of 4 */
		{ 4, 1, "at its start" },               /* the two lengths differ */
		{ -4, 1, "at its start" },
		{ 0, 0, NULL },                         /* (the good one) */
	};
	for (unsigned k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct w w = { .be = k & 1 };
		struct nf_frame f;
		struct nf_cap *c;
		size_t at, end;
		uint32_t len;

		ng_shb(&w);
		if (_i != 1)
			ng_idb(&w, NF_LINK_ETHERNET, 0, -1, 0);
		at = w.n;
		if (_i == 0)
			ng_epb(&w, 0, 1, 40, 40, -1);
		else if (_i == 1)
			ng_idb(&w, NF_LINK_ETHERNET, 0, -1, 0);
		else
			ng_other(&w, 5, 40);
		end = w.n;
		len = (uint32_t)(end - at);
		if (bad[k].trailer) {
			put_at32(&w, end - 4, (uint32_t)(len + bad[k].delta));
		} else if (bad[k].delta) {
			put_at32(&w, at + 4, (uint32_t)(len + bad[k].delta));
			put_at32(&w, end - 4, (uint32_t)(len + bad[k].delta));
		}
		if (_i == 1)
			ng_epb(&w, 0, 1, 40, 40, -1);
		ng_epb(&w, 0, 1, 40, 40, -1);
		c = open_w(&w);
		ck_assert_msg(c != NULL, "%s", err);
		if (!bad[k].why) {
			ck_assert_int_eq(nf_cap_next(c, &f), 1);
			if (_i != 2)
				ck_assert_int_eq(nf_cap_next(c, &f), 1);
			assert_end(c);
		} else {
			assert_fails(c, (long long)at, bad[k].why);
		}
		nf_cap_close(c);
		teardown();
		free(w.b);
	}
}
END_TEST

/* A length below the block's minimum, a packet that runs past its block,
 * a packet block above NF_CAP_RECORD_MAX, a caplen beyond the IDB's
 * snaplen, an option past its block. */
START_TEST(test_cap_pcapng_impossible_lengths)
{
	struct w w = { .be = _i };
	struct nf_cap *c;
	size_t at;

	for (int k = 0; k < 6; k++) {
		memset(&w, 0, sizeof(w));
		w.be = _i;
		ng_shb(&w);
		ng_idb(&w, NF_LINK_ETHERNET, 100, -1, 0);
		at = w.n;
		switch (k) {
		case 0: /* a block of 8 bytes */
			put32(&w, 6);
			put32(&w, 8);
			break;
		case 1: /* an EPB of 28: below its 32 */
			put32(&w, 6);
			put32(&w, 28);
			for (int i = 0; i < 5; i++)
				put32(&w, 0);
			break;
		case 2: /* caplen 60 in a block with room for 40 */
			ng_epb(&w, 0, 1, 40, 40, -1);
			put_at32(&w, at + 20, 60);
			break;
		case 3: /* a packet block of NF_CAP_RECORD_MAX + 4 */
			put32(&w, 6);
			put32(&w, NF_CAP_RECORD_MAX + 4);
			for (int i = 0; i < 100; i++)
				put32(&w, 0);
			break;
		case 4: /* beyond the IDB's snaplen of 100 */
			ng_epb(&w, 0, 1, 101, 101, -1);
			break;
		case 5: /* an epb_flags option of 200 bytes in a block of 4 left */
			ng_epb(&w, 0, 1, 40, 40, 1);
			put_at32(&w, at + 28 + 40, w.be ? (2u << 16 | 200) : (200u << 16 | 2));
			break;
		}
		c = open_w(&w);
		ck_assert_msg(c != NULL, "%s", err);
		assert_fails(c, (long long)at,
			     (const char *[]){ "impossible block length 8", "impossible block length 28",
					       "beyond its block (40)", "beyond the longest read",
					       "beyond the snaplen (100)", "option runs beyond" }[k]);
		nf_cap_close(c);
		teardown();
		free(w.b);
	}
}
END_TEST

START_TEST(test_cap_pcapng_bad_section_header)
{
	struct w w = { 0 };

	ng_shb(&w);
	w.b[8] = 0x11; /* the byte-order magic */
	assert_open_fails(open_w(&w), 0, "byte-order magic");
	teardown();
	w.b[8] = 0x4d;
	w.b[12] = 2; /* version 2.0 */
	assert_open_fails(open_w(&w), 0, "pcapng version 2.0");
	teardown();
	w.b[12] = 1;
	put_at32(&w, 4, 24); /* below an SHB's 28 */
	assert_open_fails(open_w(&w), 0, "impossible block length 24");
	teardown();
	assert_open_fails(open_bytes(w.b, 10), 0, "truncated section header");
	free(w.b);
}
END_TEST

/* ---- pipes ---------------------------------------------------------------------------- */

/* The same file read from a memfd and from a pipe written 7 bytes at a
 * time by a child (a reader that needs a whole record in one read would
 * see short reads): the same frames, the same offsets. */
START_TEST(test_cap_pipe_in_small_pieces)
{
	struct w w = { .be = _i };
	struct nf_frame f, g;
	struct nf_cap *a, *b;
	int p[2], frames = 0;
	pid_t pid;

	if (_i < 2) {
		ng_shb(&w);
		ng_idb(&w, NF_LINK_ETHERNET, 0, -1, 0);
		for (uint32_t i = 0; i < 300; i++)
			ng_epb(&w, 0, i, 40 + i % 77, 1000, i % 3);
		ng_other(&w, 0xbad, 6u << 20); /* read through from the pipe too */
		ng_epb(&w, 0, 999, 1500, 1500, -1);
	} else {
		pcap_header(&w, 1, 65535, 1);
		for (uint32_t i = 0; i < 300; i++)
			pcap_record(&w, i, i, 40 + i % 1400, 1500);
	}
	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		/* 7 bytes a write for the first 200 KB, then 64 KiB; a pause
		 * after each of the first 4 KB (so the reader surely finds
		 * the pipe holding less than a record) */
		for (size_t o = 0, k; o < w.n; o += k) {
			k = o < 200000 ? 7 : 65536;
			k = w.n - o < k ? w.n - o : k;
			if (write(p[1], w.b + o, k) < 0)
				_exit(1);
			if (o < 4096)
				usleep(100);
		}
		_exit(0);
	}
	close(p[1]);
	a = open_w(&w);
	b = nf_cap_open(p[0], "pipe", err);
	ck_assert_msg(a && b, "%s", err);
	while (nf_cap_next(a, &f) == 1) {
		ck_assert_int_eq(nf_cap_next(b, &g), 1);
		ck_assert_uint_eq(f.offset, g.offset);
		ck_assert_uint_eq(f.ts_ns, g.ts_ns);
		ck_assert_uint_eq(f.dir, g.dir);
		ck_assert_uint_eq(f.caplen, g.caplen);
		ck_assert_mem_eq(f.data, g.data, f.caplen);
		frames++;
	}
	ck_assert_int_eq(frames, _i < 2 ? 301 : 300);
	assert_end(a);
	assert_end(b);
	ck_assert_uint_eq(nf_cap_bytes(b), w.n);
	nf_cap_close(a);
	nf_cap_close(b);
	close(p[0]);
	waitpid(pid, NULL, 0);
	free(w.b);
}
END_TEST

/* ---- the real fixtures ------------------------------------------------------------------ */

static uint8_t *slurp(const char *path, size_t *n)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	uint8_t *b;

	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(fstat(fd, &st), 0);
	b = malloc((size_t)st.st_size);
	ck_assert_int_eq(read(fd, b, (size_t)st.st_size), st.st_size);
	close(fd);
	*n = (size_t)st.st_size;
	return b;
}

/* Each fixture: how many frames, the link types seen, ends clean. The
 * frames' contents are checked against tshark in t_decode_vs_tshark.sh. */
START_TEST(test_cap_real_fixtures)
{
	static const struct {
		const char *file;
		int frames;
		uint32_t link1, link2; /* link2: another interface's, or 0 */
	} fx[] = {
		{ "lo-us.pcap", 41, NF_LINK_ETHERNET, 0 },
		{ "lo-ns.pcap", 36, NF_LINK_ETHERNET, 0 },
		{ "lo-s96.pcap", 36, NF_LINK_ETHERNET, 0 },
		{ "any-sll.pcap", 36, NF_LINK_LINUX_SLL, 0 },
		{ "any-sll2.pcap", 36, NF_LINK_LINUX_SLL2, 0 },
		{ "raw.pcap", 41, NF_LINK_RAW, 0 },
		{ "raw4.pcap", 20, NF_LINK_IPV4, 0 },
		{ "raw6.pcap", 21, NF_LINK_IPV6, 0 },
		{ "lo.pcapng", 36, NF_LINK_ETHERNET, 0 },
		{ "to-ng.pcapng", 36, NF_LINK_ETHERNET, 0 },
		{ "two-ifaces.pcapng", 72, NF_LINK_ETHERNET, NF_LINK_LINUX_SLL },
		{ "sections.pcapng", 108, NF_LINK_ETHERNET, NF_LINK_LINUX_SLL },
	};
	char path[128];

	for (unsigned i = 0; i < sizeof(fx) / sizeof(fx[0]); i++) {
		size_t n;
		uint8_t *b;
		struct nf_frame f;
		struct nf_cap *c;
		int frames = 0, r, seen2 = 0;
		uint64_t last = 0;

		snprintf(path, sizeof(path), "fixtures/%s", fx[i].file);
		b = slurp(path, &n);
		c = open_bytes(b, n);
		ck_assert_msg(c != NULL, "%s", err);
		while ((r = nf_cap_next(c, &f)) == 1) {
			ck_assert_msg(f.link == fx[i].link1 || (fx[i].link2 && f.link == fx[i].link2),
				      "%s: link %u", fx[i].file, f.link);
			seen2 |= f.link == fx[i].link2;
			ck_assert_uint_gt(f.offset + (frames == 0), last);
			ck_assert_uint_le(f.caplen, f.origlen);
			last = f.offset;
			frames++;
		}
		ck_assert_msg(r == 0, "%s: %s", fx[i].file, nf_cap_error(c));
		ck_assert_msg(frames == fx[i].frames, "%s: %d frames", fx[i].file, frames);
		ck_assert(!fx[i].link2 || seen2);
		nf_cap_close(c);
		teardown();
		free(b);
	}
}
END_TEST

/* ck_assert without Check's record of each assertion that held (a write
 * to its pipe: millions in the loops below). */
#define QUIET_ASSERT(cond)                                                        \
	do {                                                                      \
		if (!(cond))                                                      \
			ck_abort_msg("cut at %zu: %s failed: %s", cut, #cond,     \
				     c ? nf_cap_error(c) : err);                  \
	} while (0)

/* A real capture cut at every byte: the frames before the cut, then a
 * clean end exactly when the cut falls between records, else an error
 * at the offset of the record cut; never more. */
START_TEST(test_cap_real_fixture_cut_everywhere)
{
	const char *file = _i ? "fixtures/sections.pcapng" : "fixtures/lo-s96.pcap";
	size_t n;
	uint8_t *b = slurp(file, &n);
	uint64_t bounds[256];
	int nb = 0;
	struct nf_frame f;
	struct nf_cap *c = open_bytes(b, n);
	size_t checked = 0;

	while (nf_cap_next(c, &f) == 1)
		bounds[nb++] = f.offset;
	nf_cap_close(c);
	teardown();
	memfd = memfd_create("t.cap", 0);
	ck_assert_int_eq(write(memfd, b, n), (ssize_t)n);
	for (size_t cut = n - 1; cut != (size_t)-1; cut--) { /* each a prefix of the last */
		int frames = 0, r;

		ck_assert_int_eq(ftruncate(memfd, (off_t)cut), 0);
		lseek(memfd, 0, SEEK_SET);
		c = nf_cap_open(memfd, "t.cap", err);
		checked++;
		if (!c) { /* cut in the file header or the first SHB */
			QUIET_ASSERT(cut < bounds[0]);
			QUIET_ASSERT(msg_offset(err) == 0);
			continue;
		}
		while ((r = nf_cap_next(c, &f)) == 1) {
			QUIET_ASSERT(f.offset == bounds[frames]);
			QUIET_ASSERT(f.offset + f.caplen <= cut);
			frames++;
		}
		if (r == 0) { /* pcap: exactly at the next record; pcapng: a block's end */
			if (!_i)
				QUIET_ASSERT(cut == bounds[frames]);
			QUIET_ASSERT(frames == nb || cut <= bounds[frames]);
		} else {
			long long off = msg_offset(nf_cap_error(c));

			QUIET_ASSERT(off >= 0 && (uint64_t)off < cut);
			QUIET_ASSERT(frames == nb || (uint64_t)off <= bounds[frames]);
			QUIET_ASSERT(strstr(nf_cap_error(c), "truncated"));
		}
		nf_cap_close(c);
	}
	ck_assert_uint_eq(checked, n);
	free(b);
}
END_TEST

static Suite *cap_suite(void)
{
	Suite *s = suite_create("cap");
	TCase *pcap = tcase_create("pcap");
	TCase *ng = tcase_create("pcapng");
	TCase *real = tcase_create("real");

	tcase_add_checked_fixture(pcap, NULL, teardown);
	tcase_add_checked_fixture(ng, NULL, teardown);
	tcase_add_checked_fixture(real, NULL, teardown);
	tcase_set_timeout(real, 30);
	unit_add_loop(pcap, test_cap_pcap_orders_and_resolutions, 0, 4);
	unit_add(pcap, test_cap_pcap_link_and_fcs_bits);
	unit_add(pcap, test_cap_pcap_unknown_link_type);
	unit_add(pcap, test_cap_pcap_bad_version);
	unit_add(pcap, test_cap_not_a_capture);
	unit_add(pcap, test_cap_pcap_truncated_header);
	unit_add(pcap, test_cap_pcap_truncated_record_header);
	unit_add(pcap, test_cap_pcap_record_beyond_the_file);
	unit_add(pcap, test_cap_pcap_caplen_beyond_snaplen);
	unit_add(pcap, test_cap_pcap_record_beyond_the_longest);
	suite_add_tcase(s, pcap);
	unit_add_loop(ng, test_cap_pcapng_packets_and_direction, 0, 2);
	unit_add_loop(ng, test_cap_pcapng_time_resolutions, 0, 2);
	unit_add(ng, test_cap_pcapng_tsresol_too_fine);
	unit_add_loop(ng, test_cap_pcapng_other_blocks_skipped, 0, 2);
	unit_add_loop(ng, test_cap_pcapng_huge_block_read_through, 0, 2);
	unit_add_loop(ng, test_cap_pcapng_simple_packet_block, 0, 2);
	unit_add_loop(ng, test_cap_pcapng_obsolete_packet_block, 0, 2);
	unit_add_loop(ng, test_cap_pcapng_sections, 0, 2);
	unit_add(ng, test_cap_pcapng_unknown_interface);
	unit_add(ng, test_cap_pcapng_unknown_link_type_in_idb);
	unit_add_loop(ng, test_cap_pcapng_bad_block_lengths, 0, 3);
	unit_add_loop(ng, test_cap_pcapng_impossible_lengths, 0, 2);
	unit_add(ng, test_cap_pcapng_bad_section_header);
	unit_add_loop(ng, test_cap_pipe_in_small_pieces, 0, 3);
	suite_add_tcase(s, ng);
	unit_add(real, test_cap_real_fixtures);
	unit_add_loop(real, test_cap_real_fixture_cut_everywhere, 0, 2);
	suite_add_tcase(s, real);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cap_suite());

	signal(SIGPIPE, SIG_IGN);
	return unit_run(sr, "check_cap");
}
