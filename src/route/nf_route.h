/*
 * nf_route.h - a network namespace's routes through rtnetlink, for
 * naglefix attach's quickack rules: the route a peer's traffic takes
 * found, a route's metrics set with one more (RTAX_QUICKACK), and a
 * route put back as it was. src/cli's way in; the library never links it.
 *
 * A route is kept as the kernel said it (struct nf_route): its rtmsg, the
 * attributes a replace must carry again (byte for byte), and the payload
 * of its RTA_METRICS (byte for byte, every metric), so that what attach
 * writes is the route as it was plus one metric, and what detach writes
 * is the route as it was.
 *
 * Functions return 0 or a negative errno (the kernel's), unless they say
 * otherwise. Nothing here prints.
 */
#ifndef NF_ROUTE_H
#define NF_ROUTE_H

#include <linux/rtnetlink.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define NF_ROUTE_ATTRS_MAX   512 /* the attributes a replace carries */
#define NF_ROUTE_METRICS_MAX 256 /* RTA_METRICS' payload */
#define NF_ROUTE_MSG_MAX     (NLMSG_HDRLEN + sizeof(struct rtmsg) + NF_ROUTE_ATTRS_MAX + \
			      NF_ROUTE_METRICS_MAX + 16)
#define NF_ROUTE_TEXT_MAX    160 /* a route as nf_route_format writes it */

/* One route of a namespace's tables. */
struct nf_route {
	struct rtmsg rtm;
	uint32_t table;      /* RTA_TABLE, else rtm_table */
	uint32_t priority;   /* RTA_PRIORITY, else 0 */
	uint8_t dst[16];     /* RTA_DST, zeros for a default route */
	uint8_t src[16];     /* RTA_SRC (IPv6's source-specific routes), zeros none */
	int quickack;        /* RTAX_QUICKACK's value, -1 when the route has none */
	uint32_t expires;    /* RTA_CACHEINFO's rta_expires (clock ticks left), 0 none */
	size_t attrs_len;    /* the attributes a replace carries, as received */
	uint8_t attrs[NF_ROUTE_ATTRS_MAX];
	size_t metrics_len;  /* RTA_METRICS' payload, as received; 0: no RTA_METRICS */
	uint8_t metrics[NF_ROUTE_METRICS_MAX];
};

/* --- msg.c: the messages, built and read (no system call) --- */

/*
 * Builds into buf (len bytes) the RTM_GETROUTE request for the route the
 * kernel would take to addr (4 or 16 bytes as family says) with
 * RTM_F_FIB_MATCH: the table's own entry (its prefix, every attribute),
 * not the /32 or /128 result of a lookup. Returns its length, or -ENOSPC.
 */
int nf_route_msg_get(void *buf, size_t len, int family, const uint8_t *addr, uint32_t seq);

/* Builds the RTM_GETROUTE dump request of family's routes (every table). */
int nf_route_msg_dump(void *buf, size_t len, int family, uint32_t seq);

/*
 * Reads the RTM_NEWROUTE message msg (len bytes, its nlmsghdr first) into
 * *r: every length checked against what is left; the attributes a
 * replace may carry kept (RTA_CACHEINFO and what only a lookup says left
 * out, but its expiry read; a route through a nexthop object keeps its
 * RTA_NH_ID alone; RTA_MULTIPATH's nexthops keep of their flags
 * RTNH_F_ONLINK alone, the others being the kernel's state of the links).
 * -EBADMSG on a malformed message, -E2BIG if it does not fit, -ENOMSG if
 * it is not an RTM_NEWROUTE.
 */
int nf_route_parse(const void *msg, size_t len, struct nf_route *r);

/*
 * Builds into buf the RTM_NEWROUTE NLM_F_REPLACE message that writes r:
 * its rtmsg (no flag but RTNH_F_ONLINK), its attributes, and its metrics
 * with RTAX_QUICKACK set to quickack (-1: as r has it, or not at all).
 * Returns its length, or -ENOSPC.
 */
int nf_route_msg_replace(void *buf, size_t len, const struct nf_route *r, int quickack,
			 uint32_t seq);

/*
 * NULL if r can be written again through rtnetlink as it is, else why
 * not, in words: an IPv6 route of metric 0 (the kernel's own for an
 * address), which a message cannot name (IPv6 reads metric 0 as 1024);
 * an IPv6 route learned from a router advertisement (proto ra), whose
 * RTF_ADDRCONF no message can say, so the kernel would no longer find it
 * to renew or remove it; an IPv6 route that expires (RTA_CACHEINFO's
 * rta_expires), which a replace would make permanent.
 */
const char *nf_route_unwritable(const struct nf_route *r);

/* 1 if a and b are the same entry of a table (family, table, dst/len,
 * src/len, tos, priority): the one a replace of either writes. */
int nf_route_same(const struct nf_route *a, const struct nf_route *b);

/* 1 if a and b say the same: same entry, type, scope, protocol,
 * attributes and metrics. */
int nf_route_equal(const struct nf_route *a, const struct nf_route *b);

/* 1 if r's destination lies within the prefix addr/prefix of family (0:
 * any family). */
int nf_route_within(const struct nf_route *r, int family, const uint8_t *addr, unsigned prefix);

/* r's RTA_OIF, 0 none. */
unsigned nf_route_oif(const struct nf_route *r);

/*
 * r as `ip route` writes it, shortly: "local 127.0.0.1 table local",
 * "10.0.0.0/24 dev veth0 table main", "default via 10.0.0.1 dev eth0
 * table main metric 100" (dev: ifname, or "#N" when ifname is NULL).
 */
const char *nf_route_format(const struct nf_route *r, const char *ifname, char *buf, size_t len);

/* The message of r (its nlmsghdr first, as the kernel sent it) in
 * lower-case hex into buf; nf_route_from_hex reads it back into *r. */
int nf_route_to_hex(const struct nf_route *r, char *buf, size_t len);
int nf_route_from_hex(const char *hex, struct nf_route *r);

/* --- sock.c: the rtnetlink socket of a namespace --- */

/* A NETLINK_ROUTE socket in the calling thread's network namespace: its
 * descriptor, or a negative errno. */
int nf_route_open(void);

/*
 * Sends req (len bytes) on fd and reads the answer: each RTM_NEWROUTE to
 * fn(route, arg) (stops at fn's first non-zero return, after the dump is
 * read out), until the NLMSG_DONE of a dump or the ack of a request.
 * Returns fn's last non-zero return, 0, the kernel's error, or, when a
 * route of the answer could not be read (nf_route_parse: -E2BIG, past
 * the attributes kept; -EBADMSG) and fn did not stop, that error: the
 * others were handed to fn.
 */
int nf_route_talk(int fd, const void *req, size_t len,
		  int (*fn)(const struct nf_route *r, void *arg), void *arg);

/* --- route.c: lookup, replace, restore --- */

/* The route the kernel takes to addr (family AF_INET or AF_INET6), the
 * most specific one of the table rules choose, into *r. */
int nf_route_lookup(int fd, int family, const uint8_t *addr, struct nf_route *r);

/* Calls fn for each route of family's tables (AF_UNSPEC: both) that is a
 * unicast or local one; stops at fn's first non-zero return. */
int nf_route_each(int fd, int family, int (*fn)(const struct nf_route *r, void *arg), void *arg);

/* The route that is the same entry as key now (nf_route_same) into *r:
 * 0, or -ENOENT when the tables have no such entry. */
int nf_route_find(int fd, const struct nf_route *key, struct nf_route *r);

/*
 * 1 if r is the first route of its table entry (nf_route_same) in a
 * dump, the one an NLM_F_REPLACE writes; 0 if another is (`ip route
 * append` makes several: a replace naming r would write over that one);
 * -ENOENT if it is gone.
 */
int nf_route_first(int fd, const struct nf_route *r);

/* Writes r again with RTAX_QUICKACK set to value (-1: r as it is, its
 * metrics as they are): NLM_F_REPLACE, never a new entry (-ENOENT if it
 * is gone). */
int nf_route_set_quickack(int fd, const struct nf_route *r, int value);

/* Writes r back as it was (nf_route_set_quickack(fd, r, -1)). */
int nf_route_restore(int fd, const struct nf_route *r);

#endif
