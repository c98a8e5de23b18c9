/*
 * msg.c - rtnetlink's route messages built and read (nf_route.h), no
 * system call: the unit tests give it messages written in the test.
 * Every length the kernel sends is checked against what is left before a
 * byte of it is read, through one cursor (struct cur) that every reader
 * advances.
 */
#include "route/nf_route.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The bytes left to read. */
struct cur {
	const uint8_t *p;
	size_t n;
};

/* The next attribute of c into *type, *val, *vlen; 1 if there was one,
 * 0 at the end, -EBADMSG on a length that does not fit. */
static int next_attr(struct cur *c, unsigned *type, struct cur *val)
{
	struct rtattr a;
	size_t step;

	if (c->n == 0)
		return 0;
	if (c->n < sizeof(a))
		return -EBADMSG;
	memcpy(&a, c->p, sizeof(a));
	if (a.rta_len < sizeof(a) || a.rta_len > c->n)
		return -EBADMSG;
	*type = a.rta_type & NLA_TYPE_MASK;
	val->p = c->p + RTA_LENGTH(0);
	val->n = a.rta_len - RTA_LENGTH(0);
	step = RTA_ALIGN(a.rta_len) < c->n ? RTA_ALIGN(a.rta_len) : c->n;
	c->p += step;
	c->n -= step;
	return 1;
}

/* Appends attribute type with the vlen bytes of val at *off in buf. */
static int put_attr(uint8_t *buf, size_t len, size_t *off, unsigned type, const void *val,
		    size_t vlen)
{
	struct rtattr a = { .rta_len = (unsigned short)RTA_LENGTH(vlen), .rta_type = (unsigned short)type };

	if (RTA_LENGTH(vlen) > 0xffff || *off + RTA_SPACE(vlen) > len)
		return -ENOSPC;
	memset(buf + *off, 0, RTA_SPACE(vlen));
	memcpy(buf + *off, &a, sizeof(a));
	memcpy(buf + *off + RTA_LENGTH(0), val, vlen);
	*off += RTA_SPACE(vlen);
	return 0;
}

/* The nlmsghdr and rtmsg of a request at the start of buf. */
static int put_head(uint8_t *buf, size_t len, uint16_t type, uint16_t flags, uint32_t seq,
		    const struct rtmsg *rtm)
{
	struct nlmsghdr h = { .nlmsg_type = type, .nlmsg_flags = flags, .nlmsg_seq = seq };

	if (len < NLMSG_SPACE(sizeof(*rtm)))
		return -ENOSPC;
	memset(buf, 0, NLMSG_SPACE(sizeof(*rtm)));
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + NLMSG_HDRLEN, rtm, sizeof(*rtm));
	return (int)NLMSG_SPACE(sizeof(*rtm));
}

/* Sets the length of the message of off bytes at buf; returns off. */
static int seal(uint8_t *buf, size_t off)
{
	uint32_t n = (uint32_t)off;

	memcpy(buf + offsetof(struct nlmsghdr, nlmsg_len), &n, sizeof(n));
	return (int)off;
}

static size_t addr_len(int family)
{
	return family == AF_INET6 ? 16 : 4;
}

int nf_route_msg_get(void *buf, size_t len, int family, const uint8_t *addr, uint32_t seq)
{
	struct rtmsg rtm = { .rtm_family = (unsigned char)family, .rtm_flags = RTM_F_FIB_MATCH,
			     .rtm_dst_len = (unsigned char)(addr_len(family) * 8) };
	int off = put_head(buf, len, RTM_GETROUTE, NLM_F_REQUEST, seq, &rtm);
	size_t o = off > 0 ? (size_t)off : 0;

	if (off < 0 || put_attr(buf, len, &o, RTA_DST, addr, addr_len(family)) < 0)
		return -ENOSPC;
	return seal(buf, o);
}

int nf_route_msg_dump(void *buf, size_t len, int family, uint32_t seq)
{
	struct rtmsg rtm = { .rtm_family = (unsigned char)family };
	int off = put_head(buf, len, RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, seq, &rtm);

	return off < 0 ? off : seal(buf, (size_t)off);
}

/* Whether a replace carries attribute type again. RTA_CACHEINFO and
 * RTA_EXPIRES are the kernel's account, RTA_IIF, RTA_UID and the ports
 * a lookup's: none of them part of the entry. */
static int carried(unsigned type)
{
	switch (type) {
	case RTA_DST: case RTA_SRC: case RTA_OIF: case RTA_GATEWAY: case RTA_PRIORITY:
	case RTA_PREFSRC: case RTA_MULTIPATH: case RTA_FLOW: case RTA_TABLE: case RTA_PREF:
	case RTA_ENCAP_TYPE: case RTA_ENCAP: case RTA_VIA: case RTA_NH_ID:
		return 1;
	default:
		return 0;
	}
}

/* With RTA_NH_ID the nexthop object says the rest: the kernel refuses
 * RTA_OIF, RTA_GATEWAY and the like beside it. */
static int nexthop_said(unsigned type)
{
	return type == RTA_OIF || type == RTA_GATEWAY || type == RTA_MULTIPATH || type == RTA_VIA ||
	       type == RTA_FLOW || type == RTA_ENCAP_TYPE || type == RTA_ENCAP;
}

static uint32_t u32_of(const struct cur *v)
{
	uint32_t x = 0;

	memcpy(&x, v->p, v->n < 4 ? v->n : 4);
	return x;
}

/* RTAX_QUICKACK's value in the metrics payload m, -1 none. */
static int quickack_in(struct cur m)
{
	struct cur v;
	unsigned type;
	int rc, q = -1;

	while ((rc = next_attr(&m, &type, &v)) > 0)
		if (type == RTAX_QUICKACK && v.n >= 4)
			q = (int)u32_of(&v);
	return rc < 0 ? -2 : q;
}

/*
 * RTA_MULTIPATH's payload v with each rtnexthop's flags cut to what a
 * request may say (RTNH_F_ONLINK), into out (v->n bytes): the kernel
 * refuses RTNH_F_DEAD and RTNH_F_LINKDOWN in a request (EINVAL), and
 * they are its account of the links, not the route's. -EBADMSG on a
 * length that does not fit.
 */
static int multipath_writable(const struct cur *v, uint8_t *out)
{
	size_t o = 0;

	memcpy(out, v->p, v->n);
	while (v->n - o >= sizeof(struct rtnexthop)) {
		struct rtnexthop nh;

		memcpy(&nh, out + o, sizeof(nh));
		if (nh.rtnh_len < sizeof(nh) || nh.rtnh_len > v->n - o)
			return -EBADMSG;
		nh.rtnh_flags &= RTNH_F_ONLINK;
		memcpy(out + o, &nh, sizeof(nh));
		o += (size_t)RTNH_ALIGN(nh.rtnh_len) < v->n - o ? (size_t)RTNH_ALIGN(nh.rtnh_len) : v->n - o;
	}
	return o == v->n ? 0 : -EBADMSG;
}

/* One attribute of a route's message read into r. */
static int take_attr(struct nf_route *r, unsigned type, const struct cur *v, int has_nh)
{
	uint8_t mp[NF_ROUTE_ATTRS_MAX];

	if (type == RTA_TABLE && v->n >= 4)
		r->table = u32_of(v);
	if (type == RTA_PRIORITY && v->n >= 4)
		r->priority = u32_of(v);
	if (type == RTA_DST)
		memcpy(r->dst, v->p, v->n < 16 ? v->n : 16);
	if (type == RTA_SRC)
		memcpy(r->src, v->p, v->n < 16 ? v->n : 16);
	if (type == RTA_METRICS) {
		if (v->n > sizeof(r->metrics))
			return -E2BIG;
		memcpy(r->metrics, v->p, v->n);
		r->metrics_len = v->n;
		return (r->quickack = quickack_in(*v)) == -2 ? -EBADMSG : 0;
	}
	if (type == RTA_CACHEINFO && v->n >= sizeof(struct rta_cacheinfo)) {
		struct rta_cacheinfo ci;

		memcpy(&ci, v->p, sizeof(ci));
		r->expires = ci.rta_expires;
	}
	if (!carried(type) || (has_nh && nexthop_said(type)))
		return 0;
	if (type == RTA_MULTIPATH) {
		if (v->n > sizeof(mp))
			return -E2BIG;
		if (multipath_writable(v, mp) < 0)
			return -EBADMSG;
		return put_attr(r->attrs, sizeof(r->attrs), &r->attrs_len, type, mp, v->n) < 0 ? -E2BIG : 0;
	}
	if (put_attr(r->attrs, sizeof(r->attrs), &r->attrs_len, type, v->p, v->n) < 0)
		return -E2BIG;
	return 0;
}

/* 1 if the attributes of c have an RTA_NH_ID. */
static int has_nexthop(struct cur c)
{
	struct cur v;
	unsigned type;

	while (next_attr(&c, &type, &v) > 0)
		if (type == RTA_NH_ID)
			return 1;
	return 0;
}

int nf_route_parse(const void *msg, size_t len, struct nf_route *r)
{
	struct nlmsghdr h;
	struct cur c, v;
	unsigned type;
	int rc, nh;

	memset(r, 0, sizeof(*r));
	r->quickack = -1;
	if (len < NLMSG_HDRLEN)
		return -EBADMSG;
	memcpy(&h, msg, sizeof(h));
	if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > len)
		return -EBADMSG;
	if (h.nlmsg_type != RTM_NEWROUTE)
		return -ENOMSG;
	if (h.nlmsg_len < NLMSG_SPACE(sizeof(r->rtm)))
		return -EBADMSG;
	memcpy(&r->rtm, (const uint8_t *)msg + NLMSG_HDRLEN, sizeof(r->rtm));
	r->table = r->rtm.rtm_table;
	c.p = (const uint8_t *)msg + NLMSG_SPACE(sizeof(r->rtm));
	c.n = h.nlmsg_len - NLMSG_SPACE(sizeof(r->rtm));
	nh = has_nexthop(c);
	while ((rc = next_attr(&c, &type, &v)) > 0)
		if ((rc = take_attr(r, type, &v, nh)) < 0)
			return rc;
	return rc;
}

/* The metrics of r with RTAX_QUICKACK set to q, every other one as it
 * was, at *off in buf as one RTA_METRICS. */
static int put_metrics(uint8_t *buf, size_t len, size_t *off, const struct nf_route *r, int q)
{
	uint8_t m[NF_ROUTE_METRICS_MAX + 8];
	size_t n = 0;
	struct cur c = { r->metrics, r->metrics_len }, v;
	unsigned type;
	uint32_t val = (uint32_t)q;

	if (q < 0)
		return r->metrics_len ? put_attr(buf, len, off, RTA_METRICS, r->metrics, r->metrics_len) : 0;
	while (next_attr(&c, &type, &v) > 0)
		if (type != RTAX_QUICKACK && put_attr(m, sizeof(m), &n, type, v.p, v.n) < 0)
			return -ENOSPC;
	if (put_attr(m, sizeof(m), &n, RTAX_QUICKACK, &val, sizeof(val)) < 0)
		return -ENOSPC;
	return put_attr(buf, len, off, RTA_METRICS, m, n);
}

int nf_route_msg_replace(void *buf, size_t len, const struct nf_route *r, int quickack,
			 uint32_t seq)
{
	struct rtmsg rtm = r->rtm;
	int off;
	size_t o;

	rtm.rtm_flags &= RTNH_F_ONLINK;
	off = put_head(buf, len, RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_REPLACE, seq, &rtm);
	if (off < 0 || (size_t)off + r->attrs_len > len)
		return -ENOSPC;
	o = (size_t)off;
	memcpy((uint8_t *)buf + o, r->attrs, r->attrs_len);
	o += r->attrs_len;
	if (put_metrics(buf, len, &o, r, quickack) < 0)
		return -ENOSPC;
	return seal(buf, o);
}

const char *nf_route_unwritable(const struct nf_route *r)
{
	if (r->rtm.rtm_family != AF_INET6)
		return NULL;
	if (r->priority == 0)
		return "an IPv6 route of metric 0 (the kernel's own for an address), which rtnetlink "
		       "cannot write again";
	if (r->rtm.rtm_protocol == RTPROT_RA)
		return "learned from a router advertisement: written again it would be no longer the "
		       "kernel's to renew or remove";
	if (r->expires)
		return "an IPv6 route that expires: written again it would not";
	return NULL;
}

int nf_route_same(const struct nf_route *a, const struct nf_route *b)
{
	return a->rtm.rtm_family == b->rtm.rtm_family && a->table == b->table &&
	       a->rtm.rtm_dst_len == b->rtm.rtm_dst_len && a->rtm.rtm_tos == b->rtm.rtm_tos &&
	       a->priority == b->priority && memcmp(a->dst, b->dst, sizeof(a->dst)) == 0 &&
	       a->rtm.rtm_src_len == b->rtm.rtm_src_len && memcmp(a->src, b->src, sizeof(a->src)) == 0;
}

int nf_route_equal(const struct nf_route *a, const struct nf_route *b)
{
	return nf_route_same(a, b) && a->rtm.rtm_type == b->rtm.rtm_type &&
	       a->rtm.rtm_scope == b->rtm.rtm_scope && a->rtm.rtm_protocol == b->rtm.rtm_protocol &&
	       a->rtm.rtm_src_len == b->rtm.rtm_src_len &&
	       (a->rtm.rtm_flags & RTNH_F_ONLINK) == (b->rtm.rtm_flags & RTNH_F_ONLINK) &&
	       a->attrs_len == b->attrs_len && memcmp(a->attrs, b->attrs, a->attrs_len) == 0 &&
	       a->metrics_len == b->metrics_len &&
	       memcmp(a->metrics, b->metrics, a->metrics_len) == 0;
}

int nf_route_within(const struct nf_route *r, int family, const uint8_t *addr, unsigned prefix)
{
	unsigned bytes = prefix / 8, bits = prefix % 8;
	uint8_t mask = (uint8_t)(0xff << (8 - bits));

	if (family == 0)
		return 1;
	if (r->rtm.rtm_family != family || r->rtm.rtm_dst_len < prefix)
		return 0;
	if (memcmp(r->dst, addr, bytes) != 0)
		return 0;
	return bits == 0 || (r->dst[bytes] & mask) == (addr[bytes] & mask);
}

/* The value of r's attribute type into *v; 1 if it has one. */
static int attr_of(const struct nf_route *r, unsigned type, struct cur *v)
{
	struct cur c = { r->attrs, r->attrs_len };
	unsigned t;

	while (next_attr(&c, &t, v) > 0)
		if (t == type)
			return 1;
	return 0;
}

unsigned nf_route_oif(const struct nf_route *r)
{
	struct cur v;

	return attr_of(r, RTA_OIF, &v) && v.n >= 4 ? u32_of(&v) : 0;
}

static const char *type_word(unsigned char type)
{
	switch (type) {
	case RTN_UNICAST: return "";
	case RTN_LOCAL: return "local ";
	case RTN_BROADCAST: return "broadcast ";
	case RTN_ANYCAST: return "anycast ";
	case RTN_MULTICAST: return "multicast ";
	case RTN_BLACKHOLE: return "blackhole ";
	case RTN_UNREACHABLE: return "unreachable ";
	case RTN_PROHIBIT: return "prohibit ";
	default: return "type? ";
	}
}

static const char *table_word(uint32_t t, char *buf, size_t len)
{
	if (t == RT_TABLE_MAIN)
		return "main";
	if (t == RT_TABLE_LOCAL)
		return "local";
	if (t == RT_TABLE_DEFAULT)
		return "default";
	snprintf(buf, len, "%u", (unsigned)t);
	return buf;
}

/* An address of family (4 or 16 bytes at a) in text. */
static void addr_text(int family, const uint8_t *a, char *buf, size_t len)
{
	if (!inet_ntop(family, a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

const char *nf_route_format(const struct nf_route *r, const char *ifname, char *buf, size_t len)
{
	char dst[64] = "default", gw[64] = "", dev[40] = "", tb[16], met[24] = "";
	unsigned full = r->rtm.rtm_family == AF_INET6 ? 128 : 32;
	struct cur v;

	if (r->rtm.rtm_dst_len) {
		addr_text(r->rtm.rtm_family, r->dst, dst, sizeof(dst));
		if (r->rtm.rtm_dst_len != full)
			snprintf(dst + strlen(dst), sizeof(dst) - strlen(dst), "/%u", r->rtm.rtm_dst_len);
	}
	if (attr_of(r, RTA_GATEWAY, &v) && v.n >= addr_len(r->rtm.rtm_family)) {
		strcpy(gw, " via ");
		addr_text(r->rtm.rtm_family, v.p, gw + 5, sizeof(gw) - 5);
	}
	if (ifname)
		snprintf(dev, sizeof(dev), " dev %.24s", ifname);
	else if (nf_route_oif(r))
		snprintf(dev, sizeof(dev), " dev #%u", nf_route_oif(r));
	if (r->priority)
		snprintf(met, sizeof(met), " metric %u", (unsigned)r->priority);
	snprintf(buf, len, "%s%s%s%s table %s%s", type_word(r->rtm.rtm_type), dst, gw, dev,
		 table_word(r->table, tb, sizeof(tb)), met);
	return buf;
}

int nf_route_to_hex(const struct nf_route *r, char *buf, size_t len)
{
	uint8_t msg[NF_ROUTE_MSG_MAX];
	int n = nf_route_msg_replace(msg, sizeof(msg), r, -1, 0);

	if (n < 0 || len < (size_t)n * 2 + 1)
		return -ENOSPC;
	for (int i = 0; i < n; i++)
		snprintf(buf + 2 * i, 3, "%02x", msg[i]);
	return 0;
}

static int nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int nf_route_from_hex(const char *hex, struct nf_route *r)
{
	uint8_t msg[NF_ROUTE_MSG_MAX];
	size_t n = 0;

	for (; hex[0] && hex[0] != ' ' && hex[0] != '\n'; hex += 2) {
		int hi = nibble(hex[0]), lo = hi < 0 ? -1 : nibble(hex[1]);

		if (lo < 0 || n >= sizeof(msg))
			return -EBADMSG;
		msg[n++] = (uint8_t)(hi << 4 | lo);
	}
	return nf_route_parse(msg, n, r);
}
