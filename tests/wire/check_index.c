/*
 * check_index.c - the connection table's index (src/wire/index.c: open
 * addressing, linear probing from a home taken from the entry's tag,
 * deletion by shifting back) against a plain list of what should be in
 * it, under adds and deletes in random order, with hashes chosen to pile
 * onto a few homes and onto the array's end (where a run wraps); and the
 * table on top of it: a connection's later segments find it, never a new
 * one, while others come and go around it.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "wire/wire_int.h"
#include "../unit/unit.h"

#define ORIGIN_NS 1764547200000000000ull

/* A hash whose tag is tag (its home: tag & (n - 1)). */
static uint64_t hash_of(uint32_t tag, uint32_t low)
{
	return (uint64_t)tag << 32 | low;
}

/* How many times entry (hash, value) is in ix: scans its run from home. */
static int count_of(const struct nf_index *ix, uint64_t hash, uint32_t value)
{
	uint64_t want = (uint64_t)nf_index_tag(hash) << 32 | value;
	int k = 0;

	for (uint32_t pos = nf_index_home(ix, hash), i = 0; ix->e[pos] && i < ix->n;
	     pos = (pos + 1) & (ix->n - 1), i++)
		k += ix->e[pos] == want;
	return k;
}

/* Entries in the array, whatever their runs. */
static uint32_t entries(const struct nf_index *ix)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < ix->n; i++)
		k += ix->e[i] != 0;
	return k;
}

struct item {
	uint64_t hash;
	uint32_t value;
	int in;
};

/* ops random adds and deletes over nitems items whose tags fall in
 * homes spread homes apart (1: all on one home), checking every item
 * after each step. */
static void churn(uint32_t nitems, uint32_t spread, uint32_t ops, unsigned seed)
{
	struct nf_index ix;
	struct item *it = calloc(nitems, sizeof(*it));
	uint32_t in = 0;

	ck_assert_ptr_nonnull(it);
	ck_assert_int_eq(nf_index_init(&ix, 16), 0);
	srand(seed);
	for (uint32_t i = 0; i < nitems; i++) {
		/* tags near the top of the 32 bits: their homes are the
		 * array's last slots at every size, so runs wrap */
		uint32_t tag = 0xffffffffu - (uint32_t)(rand() % spread);

		it[i].hash = hash_of(tag, (uint32_t)rand());
		it[i].value = i + 1;
	}
	for (uint32_t op = 0; op < ops; op++) {
		struct item *x = &it[(uint32_t)rand() % nitems];

		/* (plain tests: a Check assertion costs a write to its pipe) */
		if (x->in) {
			nf_index_del(&ix, x->hash, x->value);
			in--;
		} else if (nf_index_add(&ix, x->hash, x->value) < 0) {
			ck_abort_msg("op %u: add failed", op);
		} else {
			in++;
		}
		x->in = !x->in;
		if (op % 7 == 0 || op + 1 == ops)
			for (uint32_t i = 0; i < nitems; i++)
				if (count_of(&ix, it[i].hash, it[i].value) != it[i].in)
					ck_abort_msg("op %u: item %u found %d times, in %d", op, i,
						     count_of(&ix, it[i].hash, it[i].value), it[i].in);
		if (ix.used != in || entries(&ix) != in || (uint64_t)ix.used * 4 > (uint64_t)ix.n * 3)
			ck_abort_msg("op %u: used %u, entries %u, n %u, want %u", op, ix.used,
				     entries(&ix), ix.n, in);
	}
	ck_assert_uint_gt(ix.n, 16); /* it grew */
	nf_index_free(&ix);
	free(it);
}

START_TEST(test_index_one_home)
{
	churn(200, 1, 5000, 1); /* every entry in one run */
}
END_TEST

START_TEST(test_index_few_homes_wrapping)
{
	churn(600, 8, 20000, 2);
}
END_TEST

START_TEST(test_index_spread)
{
	churn(3000, 1u << 30, 30000, 3);
}
END_TEST

START_TEST(test_index_grows_from_small)
{
	struct nf_index ix;

	ck_assert_int_eq(nf_index_init(&ix, 16), 0);
	for (uint32_t i = 1; i <= 100000; i++)
		if (nf_index_add(&ix, (uint64_t)i * 0x9e3779b97f4a7c15ull, i) < 0)
			ck_abort_msg("add %u failed", i);
	ck_assert_uint_eq(ix.used, 100000);
	ck_assert_uint_eq(ix.n, 1u << 18); /* 3/4 of 2^17 is 98304 */
	for (uint32_t i = 1; i <= 100000; i++)
		if (count_of(&ix, (uint64_t)i * 0x9e3779b97f4a7c15ull, i) != 1)
			ck_abort_msg("%u not found once", i);
	for (uint32_t i = 1; i <= 100000; i += 2)
		nf_index_del(&ix, (uint64_t)i * 0x9e3779b97f4a7c15ull, i);
	for (uint32_t i = 1; i <= 100000; i++)
		if (count_of(&ix, (uint64_t)i * 0x9e3779b97f4a7c15ull, i) != (i % 2 == 0))
			ck_abort_msg("%u: found %d times after the deletes", i,
				     count_of(&ix, (uint64_t)i * 0x9e3779b97f4a7c15ull, i));
	/* deleting what is not there changes nothing */
	nf_index_del(&ix, 12345, 777777);
	ck_assert_uint_eq(ix.used, 50000);
	nf_index_free(&ix);
}
END_TEST

/* The longest run and the mean distance from home of the hashes of n
 * segments made by make(k, &p), in an index of 2^bits. */
static void runs_of(uint32_t n, void (*make)(uint32_t, struct nf_pkt *), uint32_t *longest,
		    double *mean)
{
	struct nf_index ix;
	uint32_t run = 0;
	double dist = 0;

	ck_assert_int_eq(nf_index_init(&ix, 16), 0);
	for (uint32_t k = 0; k < n; k++) {
		struct nf_seg_more more;
		struct nf_seg s;
		struct nf_pkt p;

		memset(&p, 0, sizeof(p));
		make(k, &p);
		nf_wire_prepare(&p, &s, &more);
		if (nf_index_add(&ix, (uint64_t)s.tag << 32, k + 1) < 0)
			ck_abort_msg("add %u failed", k);
	}
	*longest = 0;
	for (uint32_t i = 0; i < 2 * ix.n; i++) { /* twice round: a run may wrap */
		uint64_t e = ix.e[i & (ix.n - 1)];

		run = e ? run + 1 : 0;
		if (run > *longest)
			*longest = run;
		if (e && i < ix.n)
			dist += (double)((i - ((uint32_t)(e >> 32) & (ix.n - 1))) & (ix.n - 1));
	}
	*mean = dist / n;
	nf_index_free(&ix);
}

/* One client's 60,000 ports to one server end. */
static void one_client(uint32_t k, struct nf_pkt *p)
{
	p->family = AF_INET;
	p->saddr[0] = 10, p->saddr[3] = 1;
	p->daddr[0] = 10, p->daddr[3] = 2;
	p->sport = (uint16_t)(1024 + k);
	p->dport = 80;
}

/* 60,000 clients of one /16, one port each (the same), to one server. */
static void many_clients(uint32_t k, struct nf_pkt *p)
{
	p->family = AF_INET;
	p->saddr[0] = 172, p->saddr[1] = 16, p->saddr[2] = (uint8_t)(k >> 8), p->saddr[3] = (uint8_t)k;
	p->daddr[0] = 10, p->daddr[3] = 2;
	p->sport = 40000;
	p->dport = 443;
}

/* IPv6 clients differing in their last 16 bits, two ports each, the
 * segment seen from the server's side (the hash is the same both ways). */
static void v6_clients(uint32_t k, struct nf_pkt *p)
{
	p->family = AF_INET6;
	p->daddr[0] = 0x20, p->daddr[1] = 0x01, p->daddr[14] = (uint8_t)(k >> 9), p->daddr[15] = (uint8_t)(k >> 1);
	p->saddr[0] = 0x20, p->saddr[1] = 0x01, p->saddr[15] = 1;
	p->dport = (uint16_t)(50000 + (k & 1));
	p->sport = 8080;
}

START_TEST(test_index_real_hashes_spread)
{
	static void (*const make[])(uint32_t, struct nf_pkt *) = { one_client, many_clients, v6_clients };

	for (size_t m = 0; m < sizeof(make) / sizeof(make[0]); m++) {
		uint32_t longest;
		double mean;

		runs_of(60000, make[m], &longest, &mean);
		/* linear probing at a load of 0.46 (60,000 in 2^17) with a
		 * random hash: a mean distance of 0.43, the longest run about 30
		 * (measured: 0.42-0.43, 29-31) */
		ck_assert_msg(mean < 0.6 && longest < 80, "shape %zu: mean distance %.2f, longest run %u",
			      m, mean, longest);
	}
}
END_TEST

/* A segment of client 10.C.C.C:cport to 10.0.0.2:80 (or back). */
static void seg(struct nf_wire *w, uint64_t ns, uint32_t client, uint16_t cport, int back,
		uint8_t flags, uint32_t len)
{
	struct nf_pkt p;
	uint8_t c[16] = { 10, (uint8_t)(client >> 16), (uint8_t)(client >> 8), (uint8_t)client };
	uint8_t s[16] = { 10, 0, 0, 2 };

	memset(&p, 0, sizeof(p));
	p.ts_ns = ns;
	p.family = AF_INET;
	p.flags = flags;
	p.wscale = -1;
	p.sport = back ? 80 : cport;
	p.dport = back ? cport : 80;
	memcpy(p.saddr, back ? s : c, 16);
	memcpy(p.daddr, back ? c : s, 16);
	p.seq = back ? 5000 : 1000;
	p.ack = back ? 1001 : 5001;
	p.len = len;
	p.win = 512;
	nf_wire_packets(w, &p, 1);
}

START_TEST(test_index_table_finds_its_connections)
{
	struct nf_wire_opts o;
	struct nf_wire *w;
	struct nf_wire_stats st;
	enum { N = 30000 };

	nf_wire_opts_default(&o);
	o.closed_ns = 1000000ull; /* 1 ms: the closed ones go at once */
	w = nf_wire_new(&o);
	/* N connections; every third is reset and forgotten while the
	 * others stay, so the index shifts entries around the living */
	for (uint32_t k = 0; k < N; k++)
		seg(w, ORIGIN_NS + k * 1000ull, k, (uint16_t)(1024 + k % 60000), 0, NF_TCP_SYN, 0);
	for (uint32_t k = 0; k < N; k += 3)
		seg(w, ORIGIN_NS + 40000000000ull, k, (uint16_t)(1024 + k % 60000), 1,
		    NF_TCP_RST | NF_TCP_ACK, 0);
	nf_wire_expire(w, ORIGIN_NS + 41000000000ull);
	nf_wire_stats(w, &st);
	ck_assert_uint_eq(st.conns, N);
	ck_assert_uint_eq(st.live, N - N / 3);
	/* every living one, both ways: found, not made */
	for (uint32_t k = 0; k < N; k++)
		if (k % 3) {
			seg(w, ORIGIN_NS + 42000000000ull, k, (uint16_t)(1024 + k % 60000), k % 2,
			    NF_TCP_ACK, 0);
		}
	nf_wire_stats(w, &st);
	ck_assert_uint_eq(st.conns, N);
	ck_assert_uint_eq(st.live, N - N / 3);
	/* a forgotten one is new again */
	seg(w, ORIGIN_NS + 43000000000ull, 0, 1024, 0, NF_TCP_SYN, 0);
	nf_wire_stats(w, &st);
	ck_assert_uint_eq(st.conns, N + 1);
	nf_wire_free(w);
}
END_TEST

/* A segment from (a, ap) to (b, bp) of family fam at ms ms. */
static void seg_between(struct nf_wire *w, int fam, const uint8_t *a, uint16_t ap, const uint8_t *b,
			uint16_t bp, uint64_t ms, uint8_t flags)
{
	struct nf_pkt p;

	memset(&p, 0, sizeof(p));
	p.ts_ns = ORIGIN_NS + ms * 1000000ull;
	p.family = (uint8_t)fam;
	p.flags = flags;
	p.wscale = -1;
	memcpy(p.saddr, a, 16);
	memcpy(p.daddr, b, 16);
	p.sport = ap;
	p.dport = bp;
	p.seq = 1000;
	p.win = 512;
	nf_wire_packets(w, &p, 1);
}

/* Connections whose ends agree in all the lookup compares first (family,
 * port, an address's first 4 bytes) and differ after it, or in family
 * only: each its own connection, found again both ways. */
START_TEST(test_index_table_tells_ends_apart)
{
	static const uint8_t a6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	static const uint8_t b6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };
	static const uint8_t c6[16] = { 0x20, 0x01, 0x0d, 0xb8, [11] = 1, [15] = 1 };
	static const uint8_t d6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 3 };
	static const uint8_t a4[16] = { 0x20, 0x01, 0x0d, 0xb8 }; /* 32.1.13.184 */
	static const uint8_t b4[16] = { 0x20, 0x01, 0x0d, 0xb9 };
	const struct {
		int fam;
		const uint8_t *a, *b;
	} conns[] = {
		{ AF_INET6, a6, b6 },
		{ AF_INET6, c6, b6 }, /* the client's byte 11 */
		{ AF_INET6, a6, d6 }, /* the server's last byte */
		{ AF_INET, a4, b4 },  /* the IPv6 client's first 4 bytes, as IPv4 */
		{ AF_INET6, a4, b4 }, /* ... and as IPv6, the rest zero */
	};
	const size_t n = sizeof(conns) / sizeof(conns[0]);
	struct nf_wire *w = nf_wire_new(NULL);
	struct nf_wire_stats st;

	ck_assert_ptr_nonnull(w);
	for (size_t k = 0; k < n; k++)
		seg_between(w, conns[k].fam, conns[k].a, 40000, conns[k].b, 80, k, NF_TCP_SYN);
	nf_wire_stats(w, &st);
	ck_assert_uint_eq(st.conns, n);
	for (size_t k = 0; k < n; k++) {
		seg_between(w, conns[k].fam, conns[k].b, 80, conns[k].a, 40000, 10 + k,
			    NF_TCP_SYN | NF_TCP_ACK);
		seg_between(w, conns[k].fam, conns[k].a, 40000, conns[k].b, 80, 20 + k, NF_TCP_ACK);
	}
	nf_wire_stats(w, &st);
	ck_assert_uint_eq(st.conns, n);
	ck_assert_uint_eq(st.live, n);
	nf_wire_free(w);
}
END_TEST

/* (tag, client) pairs, by tag. */
static int by_tag(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Two IPv6 connections that agree in all but their client's last 4
 * bytes and whose hashes agree in their upper half (the index's tag):
 * found by trying 200,000 clients of pseudo-random bytes and sorting
 * their tags (a birthday search: about 4 such pairs; the hash spreads
 * counted bytes too evenly to collide). The lookup must compare the rest of the
 * addresses to tell them apart (fails if it trusts the tag and the
 * first 8 bytes of each end). */
START_TEST(test_index_table_tells_colliding_tags_apart)
{
	enum { N = 200000 };
	static const uint8_t srv[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	uint64_t *t = malloc(N * sizeof(*t));
	uint32_t x = 0, y = 0;
	uint8_t cx[16] = { 0x20, 0x01, 0x0d, 0xb8, 0xff }, cy[16];
	struct nf_wire *w = nf_wire_new(NULL);
	struct nf_wire_stats st;

	ck_assert(t && w);
	for (uint32_t k = 0, r = 2463534242u; k < N; k++) {
		struct nf_seg_more more;
		struct nf_seg sg;
		struct nf_pkt p;

		r ^= r << 13, r ^= r >> 17, r ^= r << 5; /* counted bytes would not collide */
		memset(&p, 0, sizeof(p));
		p.family = AF_INET6;
		memcpy(p.saddr, cx, 16);
		memcpy(p.saddr + 12, &r, 4);
		memcpy(p.daddr, srv, 16);
		p.sport = 40000;
		p.dport = 443;
		nf_wire_prepare(&p, &sg, &more);
		t[k] = (uint64_t)sg.tag << 32 | r;
	}
	qsort(t, N, sizeof(*t), by_tag);
	for (uint32_t k = 1; k < N && x == y; k++)
		if (t[k] >> 32 == t[k - 1] >> 32) {
			x = (uint32_t)t[k - 1];
			y = (uint32_t)t[k];
		}
	free(t);
	ck_assert_msg(x != y, "no two tags alike among %d", N);
	memcpy(cy, cx, 16);
	memcpy(cx + 12, &x, 4);
	memcpy(cy + 12, &y, 4);
	seg_between(w, AF_INET6, cx, 40000, srv, 443, 1, NF_TCP_SYN);
	seg_between(w, AF_INET6, cy, 40000, srv, 443, 2, NF_TCP_SYN);
	seg_between(w, AF_INET6, srv, 443, cx, 40000, 3, NF_TCP_SYN | NF_TCP_ACK);
	seg_between(w, AF_INET6, srv, 443, cy, 40000, 4, NF_TCP_SYN | NF_TCP_ACK);
	nf_wire_stats(w, &st);
	ck_assert_uint_eq(st.conns, 2);
	nf_wire_free(w);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("index");
	TCase *t = tcase_create("index");

	tcase_set_timeout(t, 60);
	unit_add(t, test_index_one_home);
	unit_add(t, test_index_few_homes_wrapping);
	unit_add(t, test_index_spread);
	unit_add(t, test_index_grows_from_small);
	unit_add(t, test_index_table_finds_its_connections);
	unit_add(t, test_index_real_hashes_spread);
	unit_add(t, test_index_table_tells_ends_apart);
	unit_add(t, test_index_table_tells_colliding_tags_apart);
	suite_add_tcase(s, t);
	return unit_run(srunner_create(s), "check_index");
}
