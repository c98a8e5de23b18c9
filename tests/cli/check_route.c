/*
 * check_route.c - src/route's messages (msg.c) on messages written in
 * the test, as the kernel sends them: a route read keeps every attribute
 * a replace must carry and the RTA_METRICS payload byte for byte; the
 * replace carries them with RTAX_QUICKACK set (once, whatever was
 * there), or exactly as read (the restore); the lookup asks for the
 * table's entry (RTM_F_FIB_MATCH); a length that does not fit is refused,
 * never read past.
 */
#include <check.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "route/nf_route.h"
#include "../unit/unit.h"

/* A message being written: bytes and length. */
struct msg {
	uint8_t b[1024];
	size_t n;
};

static void put(struct msg *m, unsigned type, const void *v, size_t len)
{
	struct rtattr a = { .rta_len = (unsigned short)RTA_LENGTH(len), .rta_type = (unsigned short)type };

	memset(m->b + m->n, 0, RTA_SPACE(len));
	memcpy(m->b + m->n, &a, sizeof(a));
	memcpy(m->b + m->n + RTA_LENGTH(0), v, len);
	m->n += RTA_SPACE(len);
}

static void put_u32(struct msg *m, unsigned type, uint32_t v)
{
	put(m, type, &v, sizeof(v));
}

/* The head of an RTM_NEWROUTE of family into m. */
static void head(struct msg *m, int family, unsigned char dst_len, unsigned char type)
{
	struct nlmsghdr h = { .nlmsg_type = RTM_NEWROUTE };
	struct rtmsg r = { .rtm_family = (unsigned char)family, .rtm_dst_len = dst_len,
			   .rtm_table = RT_TABLE_LOCAL, .rtm_protocol = RTPROT_KERNEL,
			   .rtm_scope = RT_SCOPE_HOST, .rtm_type = type };

	memset(m, 0, sizeof(*m));
	memcpy(m->b, &h, sizeof(h));
	memcpy(m->b + NLMSG_HDRLEN, &r, sizeof(r));
	m->n = NLMSG_SPACE(sizeof(r));
}

static void seal(struct msg *m)
{
	uint32_t n = (uint32_t)m->n;

	memcpy(m->b, &n, sizeof(n));
}

/* The metrics payload of a route with an MTU, a congestion control (a
 * string) and an RTT; quickack (>= 0) as well. */
static void metrics(struct msg *payload, int quickack)
{
	memset(payload, 0, sizeof(*payload));
	put_u32(payload, RTAX_MTU, 1400);
	put(payload, RTAX_CC_ALGO, "cubic", 6);
	if (quickack >= 0)
		put_u32(payload, RTAX_QUICKACK, (uint32_t)quickack);
	put_u32(payload, RTAX_RTT, 160);
}

/* "local 127.0.0.1 dev lo table local ... mtu 1400 rtt 20ms congctl cubic"
 * as a dump says it, with the kernel's RTA_CACHEINFO. */
static void local_route(struct msg *m, int quickack)
{
	uint8_t a[4] = { 127, 0, 0, 1 }, cache[32] = { 0 };
	struct msg pm;

	head(m, AF_INET, 32, RTN_LOCAL);
	put_u32(m, RTA_TABLE, RT_TABLE_LOCAL);
	put(m, RTA_DST, a, 4);
	put(m, RTA_PREFSRC, a, 4);
	metrics(&pm, quickack);
	put(m, RTA_METRICS, pm.b, pm.n);
	put_u32(m, RTA_OIF, 1);
	put(m, RTA_CACHEINFO, cache, sizeof(cache));
	seal(m);
}

/* The value of attribute type in the n bytes at p, -1 if none; *count
 * how many times it is there. */
static long attr_u32(const uint8_t *p, size_t n, unsigned type, int *count)
{
	long v = -1;

	*count = 0;
	for (size_t o = 0; o + sizeof(struct rtattr) <= n;) {
		struct rtattr a;

		memcpy(&a, p + o, sizeof(a));
		ck_assert_uint_ge(a.rta_len, sizeof(a));
		if (a.rta_type == type) {
			uint32_t x;

			memcpy(&x, p + o + RTA_LENGTH(0), 4);
			v = x;
			++*count;
		}
		o += RTA_ALIGN(a.rta_len);
	}
	return v;
}

START_TEST(test_route_parse_keeps_entry_and_metrics)
{
	struct msg m, pm;
	struct nf_route r;
	int c;

	local_route(&m, -1);
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), 0);
	ck_assert_uint_eq(r.table, RT_TABLE_LOCAL);
	ck_assert_uint_eq(r.rtm.rtm_dst_len, 32);
	ck_assert_uint_eq(r.dst[0], 127);
	ck_assert_int_eq(r.quickack, -1);
	ck_assert_uint_eq(nf_route_oif(&r), 1);
	metrics(&pm, -1);
	ck_assert_uint_eq(r.metrics_len, pm.n);
	ck_assert_mem_eq(r.metrics, pm.b, pm.n);
	attr_u32(r.attrs, r.attrs_len, RTA_CACHEINFO, &c);
	ck_assert_int_eq(c, 0); /* the kernel's account, no part of the entry */
	attr_u32(r.attrs, r.attrs_len, RTA_PREFSRC, &c);
	ck_assert_int_eq(c, 1);
}
END_TEST

START_TEST(test_route_replace_sets_quickack_keeps_the_rest)
{
	struct msg m;
	struct nf_route r, back;
	uint8_t out[NF_ROUTE_MSG_MAX];
	struct nlmsghdr h;
	int n, c;

	local_route(&m, -1);
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), 0);
	n = nf_route_msg_replace(out, sizeof(out), &r, 1, 7);
	ck_assert_int_gt(n, 0);
	memcpy(&h, out, sizeof(h));
	ck_assert_uint_eq(h.nlmsg_type, RTM_NEWROUTE);
	ck_assert_uint_eq(h.nlmsg_len, (unsigned)n);
	ck_assert(h.nlmsg_flags & NLM_F_REPLACE);
	ck_assert(!(h.nlmsg_flags & NLM_F_CREATE)); /* never a new entry */
	ck_assert_int_eq(nf_route_parse(out, (size_t)n, &back), 0);
	ck_assert_int_eq(back.quickack, 1);
	ck_assert(nf_route_same(&r, &back));
	ck_assert_uint_eq(back.attrs_len, r.attrs_len);
	ck_assert_mem_eq(back.attrs, r.attrs, r.attrs_len);
	ck_assert_int_eq(attr_u32(back.metrics, back.metrics_len, RTAX_MTU, &c), 1400);
	ck_assert_int_eq(attr_u32(back.metrics, back.metrics_len, RTAX_RTT, &c), 160);
	attr_u32(back.metrics, back.metrics_len, RTAX_CC_ALGO, &c);
	ck_assert_int_eq(c, 1);
}
END_TEST

START_TEST(test_route_replace_quickack_once)
{
	struct msg m;
	struct nf_route r, back;
	uint8_t out[NF_ROUTE_MSG_MAX];
	int n, c;

	local_route(&m, 0); /* quickack 0 already there */
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), 0);
	ck_assert_int_eq(r.quickack, 0);
	n = nf_route_msg_replace(out, sizeof(out), &r, 1, 1);
	ck_assert_int_eq(nf_route_parse(out, (size_t)n, &back), 0);
	ck_assert_int_eq(attr_u32(back.metrics, back.metrics_len, RTAX_QUICKACK, &c), 1);
	ck_assert_int_eq(c, 1);
}
END_TEST

START_TEST(test_route_restore_is_the_route_as_read)
{
	struct msg m;
	struct nf_route r, back;
	uint8_t out[NF_ROUTE_MSG_MAX];
	int n;

	local_route(&m, -1);
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), 0);
	n = nf_route_msg_replace(out, sizeof(out), &r, -1, 2);
	ck_assert_int_eq(nf_route_parse(out, (size_t)n, &back), 0);
	ck_assert(nf_route_equal(&r, &back));
	ck_assert_int_eq(back.quickack, -1);
	ck_assert_mem_eq(back.metrics, r.metrics, r.metrics_len);
}
END_TEST

START_TEST(test_route_restore_without_metrics_has_none)
{
	struct msg m;
	struct nf_route r, back;
	uint8_t out[NF_ROUTE_MSG_MAX], a[4] = { 10, 0, 0, 0 };
	int n, c;

	head(&m, AF_INET, 24, RTN_UNICAST);
	put(&m, RTA_DST, a, 4);
	put_u32(&m, RTA_OIF, 3);
	seal(&m);
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), 0);
	ck_assert_uint_eq(r.metrics_len, 0);
	n = nf_route_msg_replace(out, sizeof(out), &r, -1, 3);
	attr_u32(out + NLMSG_SPACE(sizeof(struct rtmsg)), (size_t)n - NLMSG_SPACE(sizeof(struct rtmsg)),
		 RTA_METRICS, &c);
	ck_assert_int_eq(c, 0);
	n = nf_route_msg_replace(out, sizeof(out), &r, 1, 4);
	ck_assert_int_eq(nf_route_parse(out, (size_t)n, &back), 0);
	ck_assert_int_eq(back.quickack, 1);
	ck_assert_int_eq(attr_u32(back.metrics, back.metrics_len, RTAX_QUICKACK, &c), 1);
	ck_assert_int_eq(c, 1);
}
END_TEST

START_TEST(test_route_nexthop_id_alone)
{
	struct msg m;
	struct nf_route r;
	uint8_t a[4] = { 10, 1, 0, 0 };
	int c;

	head(&m, AF_INET, 16, RTN_UNICAST);
	put(&m, RTA_DST, a, 4);
	put_u32(&m, RTA_OIF, 2);
	put_u32(&m, RTA_NH_ID, 5);
	seal(&m);
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), 0);
	attr_u32(r.attrs, r.attrs_len, RTA_OIF, &c);
	ck_assert_int_eq(c, 0); /* the kernel refuses it beside RTA_NH_ID */
	ck_assert_int_eq(attr_u32(r.attrs, r.attrs_len, RTA_NH_ID, &c), 5);
}
END_TEST

/* A two-nexthop route as a dump says it, the second's link down (its
 * flags the kernel's: RTNH_F_DEAD | RTNH_F_LINKDOWN), the first onlink;
 * the second rtnexthop's length is len2. */
static void multipath_route(struct msg *m, unsigned short len2)
{
	uint8_t a[4] = { 10, 60, 0, 0 }, mp[64] = { 0 };
	struct rtnexthop nh1 = { .rtnh_len = sizeof(nh1), .rtnh_flags = RTNH_F_ONLINK, .rtnh_ifindex = 2 };
	struct rtnexthop nh2 = { .rtnh_len = len2, .rtnh_flags = RTNH_F_DEAD | RTNH_F_LINKDOWN,
				 .rtnh_ifindex = 3 };

	memcpy(mp, &nh1, sizeof(nh1));
	memcpy(mp + sizeof(nh1), &nh2, sizeof(nh2));
	head(m, AF_INET, 24, RTN_UNICAST);
	put(m, RTA_DST, a, 4);
	put(m, RTA_MULTIPATH, mp, 2 * sizeof(nh1));
	seal(m);
}

START_TEST(test_route_multipath_flags_the_kernels_left_out)
{
	struct msg m;
	struct nf_route r;
	struct rtattr a;
	struct rtnexthop nh;
	size_t mp = RTA_SPACE(4), at = mp + RTA_LENGTH(0); /* after RTA_DST */

	multipath_route(&m, sizeof(struct rtnexthop));
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), 0);
	memcpy(&a, r.attrs + mp, sizeof(a));
	ck_assert_uint_eq(a.rta_type, RTA_MULTIPATH);
	ck_assert_uint_eq(a.rta_len, RTA_LENGTH(2 * sizeof(nh)));
	memcpy(&nh, r.attrs + at, sizeof(nh));
	ck_assert_uint_eq(nh.rtnh_flags, RTNH_F_ONLINK); /* what a request may say, kept */
	ck_assert_int_eq(nh.rtnh_ifindex, 2);
	memcpy(&nh, r.attrs + at + sizeof(nh), sizeof(nh));
	ck_assert_uint_eq(nh.rtnh_flags, 0); /* the kernel refuses DEAD and LINKDOWN in a request */
	ck_assert_int_eq(nh.rtnh_ifindex, 3);
	multipath_route(&m, sizeof(struct rtnexthop) + 4); /* past RTA_MULTIPATH's end */
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), -EBADMSG);
	multipath_route(&m, 4); /* shorter than its own header */
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), -EBADMSG);
}
END_TEST

START_TEST(test_route_ipv6_unwritable_said)
{
	struct msg m;
	struct nf_route r;
	uint8_t a[16] = { 0x20, 0x01, 0x0d, 0xb8 };
	struct rta_cacheinfo ci = { .rta_expires = 60000 };

	head(&m, AF_INET6, 64, RTN_UNICAST);
	put(&m, RTA_DST, a, 16);
	put_u32(&m, RTA_PRIORITY, 1024);
	seal(&m);
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), 0);
	ck_assert_ptr_null(nf_route_unwritable(&r));
	put(&m, RTA_CACHEINFO, &ci, sizeof(ci));
	seal(&m);
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), 0);
	ck_assert_uint_eq(r.expires, 60000);
	ck_assert_ptr_nonnull(strstr(nf_route_unwritable(&r), "expires"));
	head(&m, AF_INET6, 64, RTN_UNICAST);
	put(&m, RTA_DST, a, 16);
	put_u32(&m, RTA_PRIORITY, 1024);
	seal(&m);
	m.b[NLMSG_HDRLEN + offsetof(struct rtmsg, rtm_protocol)] = RTPROT_RA;
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), 0);
	ck_assert_ptr_nonnull(strstr(nf_route_unwritable(&r), "router advertisement"));
	head(&m, AF_INET6, 128, RTN_LOCAL); /* metric 0: the address's own */
	put(&m, RTA_DST, a, 16);
	seal(&m);
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), 0);
	ck_assert_ptr_nonnull(strstr(nf_route_unwritable(&r), "metric 0"));
	local_route(&m, -1); /* IPv4: any */
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), 0);
	ck_assert_ptr_null(nf_route_unwritable(&r));
}
END_TEST

START_TEST(test_route_same_entry_needs_same_source)
{
	struct msg m;
	struct nf_route a, b;
	uint8_t d[16] = { 0x20, 0x01, 0x0d, 0xb8 }, s1[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 1 },
		s2[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 2 };

	for (int i = 0; i < 2; i++) {
		head(&m, AF_INET6, 64, RTN_UNICAST);
		m.b[NLMSG_HDRLEN + offsetof(struct rtmsg, rtm_src_len)] = 48;
		put(&m, RTA_DST, d, 16);
		put(&m, RTA_SRC, i ? s2 : s1, 16);
		put_u32(&m, RTA_PRIORITY, 1024);
		seal(&m);
		ck_assert_int_eq(nf_route_parse(m.b, m.n, i ? &b : &a), 0);
	}
	ck_assert(!nf_route_same(&a, &b)); /* source-specific: two entries */
	ck_assert(nf_route_same(&a, &a));
}
END_TEST

START_TEST(test_route_parse_refuses_bad_lengths)
{
	struct msg m;
	struct nf_route r;
	struct rtattr a;
	size_t first = NLMSG_SPACE(sizeof(struct rtmsg));

	local_route(&m, -1);
	ck_assert_int_eq(nf_route_parse(m.b, m.n - 1, &r), -EBADMSG); /* nlmsg_len past the end */
	ck_assert_int_eq(nf_route_parse(m.b, 8, &r), -EBADMSG);
	memcpy(&a, m.b + first, sizeof(a));
	a.rta_len = (unsigned short)(m.n - first + 4); /* an attribute past the message */
	memcpy(m.b + first, &a, sizeof(a));
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), -EBADMSG);
	a.rta_len = 2; /* shorter than its own header */
	memcpy(m.b + first, &a, sizeof(a));
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), -EBADMSG);
	m.b[4] = RTM_DELROUTE;
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), -ENOMSG);
}
END_TEST

START_TEST(test_route_bad_metrics_refused)
{
	struct msg m, pm;
	struct nf_route r;
	struct rtattr a;

	head(&m, AF_INET, 32, RTN_LOCAL);
	metrics(&pm, 1);
	memcpy(&a, pm.b, sizeof(a));
	a.rta_len = (unsigned short)(pm.n + 8); /* the first metric longer than RTA_METRICS */
	memcpy(pm.b, &a, sizeof(a));
	put(&m, RTA_METRICS, pm.b, pm.n);
	seal(&m);
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), -EBADMSG);
}
END_TEST

START_TEST(test_route_get_asks_the_entry)
{
	uint8_t buf[128], a[4] = { 127, 0, 0, 1 };
	struct nlmsghdr h;
	struct rtmsg rtm;
	int n = nf_route_msg_get(buf, sizeof(buf), AF_INET, a, 9), c;

	ck_assert_int_gt(n, 0);
	memcpy(&h, buf, sizeof(h));
	memcpy(&rtm, buf + NLMSG_HDRLEN, sizeof(rtm));
	ck_assert_uint_eq(h.nlmsg_type, RTM_GETROUTE);
	ck_assert_uint_eq(h.nlmsg_seq, 9);
	ck_assert(rtm.rtm_flags & RTM_F_FIB_MATCH);
	ck_assert_uint_eq(rtm.rtm_dst_len, 32);
	ck_assert_int_eq(attr_u32(buf + NLMSG_SPACE(sizeof(rtm)), (size_t)n - NLMSG_SPACE(sizeof(rtm)),
				  RTA_DST, &c), 0x0100007f);
	ck_assert_int_eq(nf_route_msg_get(buf, 20, AF_INET, a, 9), -ENOSPC);
}
END_TEST

START_TEST(test_route_within_prefix)
{
	struct msg m;
	struct nf_route r;
	uint8_t net8[4] = { 127, 0, 0, 0 }, one[4] = { 127, 0, 0, 1 }, other[4] = { 10, 0, 0, 0 };

	local_route(&m, -1);
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), 0);
	ck_assert(nf_route_within(&r, AF_INET, net8, 8));
	ck_assert(nf_route_within(&r, AF_INET, one, 32));
	ck_assert(!nf_route_within(&r, AF_INET, other, 8));
	ck_assert(!nf_route_within(&r, AF_INET6, net8, 8));
	ck_assert(nf_route_within(&r, 0, other, 0));
}
END_TEST

START_TEST(test_route_hex_roundtrip_and_text)
{
	struct msg m;
	struct nf_route r, back;
	char hex[2 * NF_ROUTE_MSG_MAX + 1], t[NF_ROUTE_TEXT_MAX];

	local_route(&m, -1);
	ck_assert_int_eq(nf_route_parse(m.b, m.n, &r), 0);
	ck_assert_int_eq(nf_route_to_hex(&r, hex, sizeof(hex)), 0);
	ck_assert_int_eq(nf_route_from_hex(hex, &back), 0);
	ck_assert(nf_route_equal(&r, &back));
	hex[3] = 'x';
	ck_assert_int_eq(nf_route_from_hex(hex, &back), -EBADMSG);
	ck_assert_str_eq(nf_route_format(&r, "lo", t, sizeof(t)), "local 127.0.0.1 dev lo table local");
}
END_TEST

static Suite *route_suite(void)
{
	Suite *s = suite_create("route");
	TCase *tc = tcase_create("core");

	unit_add(tc, test_route_parse_keeps_entry_and_metrics);
	unit_add(tc, test_route_replace_sets_quickack_keeps_the_rest);
	unit_add(tc, test_route_replace_quickack_once);
	unit_add(tc, test_route_restore_is_the_route_as_read);
	unit_add(tc, test_route_restore_without_metrics_has_none);
	unit_add(tc, test_route_nexthop_id_alone);
	unit_add(tc, test_route_multipath_flags_the_kernels_left_out);
	unit_add(tc, test_route_ipv6_unwritable_said);
	unit_add(tc, test_route_same_entry_needs_same_source);
	unit_add(tc, test_route_parse_refuses_bad_lengths);
	unit_add(tc, test_route_bad_metrics_refused);
	unit_add(tc, test_route_get_asks_the_entry);
	unit_add(tc, test_route_within_prefix);
	unit_add(tc, test_route_hex_roundtrip_and_text);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return unit_run(srunner_create(route_suite()), "check_route");
}
