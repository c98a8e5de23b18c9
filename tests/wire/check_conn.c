/*
 * check_conn.c - the detector's callbacks as watch uses them (nf_wire.h:
 * on_first at a row's first stall, on_conn at the first stall of each
 * connection that joins a row that stalled before, with that
 * connection's own ends; on_stall at every stall, with its connection's
 * ends), on timelines written here in the manner of
 * check_detect.c: no network, times in ms from an origin.
 */
#include <arpa/inet.h>
#include <check.h>
#include <string.h>
#include <sys/socket.h>

#include "wire/nf_wire.h"
#include "../unit/unit.h"

#define ORIGIN_NS 1764547200000000000ull
#define C 0
#define S 1

struct tl {
	struct nf_wire *w;
	uint8_t addr[2][16];
	uint16_t port[2];
	uint32_t nxt[2];
};

/* What the callbacks saw. */
static int firsts, joins;
static struct nf_end join_self, join_peer;
static struct nf_holder *first_row, *join_row;
/* on_stall's: its calls, the ports of the holder end of each, in order,
 * and how many on_first or on_conn calls had been made before each. */
static int stalls_seen;
static uint16_t stall_port[16];
static int stall_after[16];

static void on_first(void *arg, struct nf_holder *h, const struct nf_stall *s)
{
	(void)arg;
	(void)s;
	firsts++;
	first_row = h;
}

static void on_conn(void *arg, struct nf_holder *h, const struct nf_stall *s,
		    const struct nf_end *self, const struct nf_end *peer)
{
	(void)arg;
	ck_assert_uint_eq(s->size1, 6);
	joins++;
	join_row = h;
	join_self = *self;
	join_peer = *peer;
}

static void on_stall(void *arg, const struct nf_holder *h, const struct nf_stall *s,
		     const struct nf_end *self, const struct nf_end *peer)
{
	(void)arg;
	ck_assert_ptr_eq(h, first_row);
	ck_assert_uint_eq(s->size1 + s->size2, 13);
	ck_assert_uint_eq(peer->port, 8080);
	if (stalls_seen < 16) {
		stall_port[stalls_seen] = self->port;
		stall_after[stalls_seen] = firsts + joins;
	}
	stalls_seen++;
}

static struct nf_wire *detector(int with_conn)
{
	struct nf_wire_opts o;

	nf_wire_opts_default(&o);
	ck_assert_ptr_null(o.on_conn); /* the default: none */
	o.on_first = on_first;
	if (with_conn)
		o.on_conn = on_conn;
	firsts = joins = stalls_seen = 0;
	first_row = join_row = NULL;
	return nf_wire_new(&o);
}

/* Client 10.0.0.CLIENT:cport to server 10.0.0.2:8080. */
static void tl_init(struct tl *t, struct nf_wire *w, const char *client, uint16_t cport)
{
	memset(t, 0, sizeof(*t));
	t->w = w;
	inet_pton(AF_INET, client, t->addr[C]);
	inet_pton(AF_INET, "10.0.0.2", t->addr[S]);
	t->port[C] = cport;
	t->port[S] = 8080;
	t->nxt[C] = 1000;
	t->nxt[S] = 500000;
}

static void seg(struct tl *t, double ms, int from, uint32_t len, uint8_t flags)
{
	struct nf_pkt p;

	memset(&p, 0, sizeof(p));
	p.ts_ns = ORIGIN_NS + (uint64_t)(ms * 1e6);
	p.family = AF_INET;
	memcpy(p.saddr, t->addr[from], 16);
	memcpy(p.daddr, t->addr[!from], 16);
	p.sport = t->port[from];
	p.dport = t->port[!from];
	p.seq = t->nxt[from];
	p.flags = flags;
	if (flags != NF_TCP_SYN) {
		p.flags |= NF_TCP_ACK;
		p.ack = t->nxt[!from];
	}
	p.len = len;
	p.win = 512;
	p.wscale = -1;
	if (flags & NF_TCP_SYN)
		p.mss = 1460;
	t->nxt[from] += len + !!(flags & NF_TCP_SYN);
	nf_wire_packet(t->w, &p);
}

static void handshake(struct tl *t, double ms)
{
	seg(t, ms, C, 0, NF_TCP_SYN);
	seg(t, ms + 0.05, S, 0, NF_TCP_SYN | NF_TCP_ACK);
	seg(t, ms + 0.1, C, 0, 0);
}

/* The classic stall: 6 bytes, the server's ACK 40 ms later, 7 bytes
 * 15 us after it, the 13-byte answer. */
static void stall_round(struct tl *t, double ms)
{
	seg(t, ms, C, 6, 0);
	seg(t, ms + 40, S, 0, 0);
	seg(t, ms + 40.015, C, 7, 0);
	seg(t, ms + 40.1, S, 13, 0);
}

/* Two clients of one host to one server end: one row; the second
 * connection's first stall calls on_conn once with its own ends; later
 * stalls of either call nothing. */
START_TEST(test_conn_second_connection_of_a_row)
{
	struct nf_wire *w = detector(1);
	struct nf_holder *const *r;
	struct tl a, b;

	tl_init(&a, w, "10.0.0.1", 40000);
	tl_init(&b, w, "10.0.0.1", 40001);
	handshake(&a, 0);
	handshake(&b, 1);
	for (int i = 0; i < 3; i++)
		stall_round(&a, 10 + i * 100);
	ck_assert_int_eq(firsts, 1);
	ck_assert_int_eq(joins, 0);
	for (int i = 0; i < 3; i++)
		stall_round(&b, 400 + i * 100);
	stall_round(&a, 800);
	ck_assert_uint_eq(nf_wire_holders(w, &r), 1);
	ck_assert_uint_eq(r[0]->conns, 2);
	ck_assert_uint_eq(r[0]->stalls, 7);
	ck_assert_int_eq(firsts, 1);
	ck_assert_int_eq(joins, 1);
	ck_assert_ptr_eq(join_row, first_row);
	ck_assert_uint_eq(join_self.port, 40001); /* the joining connection's, not the row's */
	ck_assert_uint_eq(join_peer.port, 8080);
	ck_assert_uint_eq(r[0]->self.port, 40000);
	ck_assert_int_eq(memcmp(join_self.addr, b.addr[C], 4), 0);
	ck_assert_int_eq(memcmp(join_peer.addr, b.addr[S], 4), 0);
	nf_wire_free(w);
}
END_TEST

/* on_stall at every stall of the row, each with its own connection's
 * holder end, a connection's first one after on_first or on_conn. */
START_TEST(test_conn_every_stall_with_its_ends)
{
	struct nf_wire_opts o;
	struct tl a, b;

	nf_wire_opts_default(&o);
	ck_assert_ptr_null(o.on_stall); /* the default: none */
	o.on_first = on_first;
	o.on_conn = on_conn;
	o.on_stall = on_stall;
	firsts = joins = stalls_seen = 0;
	first_row = NULL;
	o.arg = NULL;
	struct nf_wire *w = nf_wire_new(&o);

	tl_init(&a, w, "10.0.0.1", 40000);
	tl_init(&b, w, "10.0.0.1", 40001);
	handshake(&a, 0);
	handshake(&b, 1);
	for (int i = 0; i < 3; i++)
		stall_round(&a, 10 + i * 100);
	for (int i = 0; i < 2; i++)
		stall_round(&b, 400 + i * 100);
	stall_round(&a, 700);
	ck_assert_int_eq(stalls_seen, 6);
	for (int k = 0; k < 6; k++)
		ck_assert_uint_eq(stall_port[k], k == 3 || k == 4 ? 40001 : 40000);
	ck_assert_int_eq(stall_after[0], 1); /* after on_first */
	ck_assert_int_eq(stall_after[3], 2); /* after on_conn */
	nf_wire_free(w);
}
END_TEST

/* A client of another address makes a row of its own: on_first again. */
START_TEST(test_conn_another_row_is_a_first)
{
	struct nf_wire *w = detector(1);
	struct tl a, b;

	tl_init(&a, w, "10.0.0.1", 40000);
	tl_init(&b, w, "10.0.0.3", 40000);
	handshake(&a, 0);
	handshake(&b, 1);
	stall_round(&a, 10);
	stall_round(&a, 110);
	stall_round(&b, 210);
	stall_round(&b, 310);
	ck_assert_int_eq(firsts, 2);
	ck_assert_int_eq(joins, 0);
	nf_wire_free(w);
}
END_TEST

/* Without on_conn (scan), a joining connection is only counted. */
START_TEST(test_conn_none_set)
{
	struct nf_wire *w = detector(0);
	struct nf_holder *const *r;
	struct tl a, b;

	tl_init(&a, w, "10.0.0.1", 40000);
	tl_init(&b, w, "10.0.0.1", 40001);
	handshake(&a, 0);
	handshake(&b, 1);
	stall_round(&a, 10);
	stall_round(&a, 110);
	stall_round(&b, 210);
	stall_round(&b, 310);
	ck_assert_uint_eq(nf_wire_holders(w, &r), 1);
	ck_assert_uint_eq(r[0]->conns, 2);
	ck_assert_int_eq(firsts, 1);
	ck_assert_int_eq(joins, 0);
	nf_wire_free(w);
}
END_TEST

static Suite *conn_suite(void)
{
	Suite *s = suite_create("conn");
	TCase *tc = tcase_create("callbacks");

	unit_add(tc, test_conn_second_connection_of_a_row);
	unit_add(tc, test_conn_every_stall_with_its_ends);
	unit_add(tc, test_conn_another_row_is_a_first);
	unit_add(tc, test_conn_none_set);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return unit_run(srunner_create(conn_suite()), "check_conn");
}
