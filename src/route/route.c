/*
 * route.c - a namespace's routes looked up, replaced with the quickack
 * metric, and put back (nf_route.h), on an rtnetlink socket made in that
 * namespace (sock.c): the messages are msg.c's.
 */
#include "route/nf_route.h"

#include <errno.h>
#include <string.h>

static uint32_t seq_next(void)
{
	static uint32_t seq;

	return ++seq;
}

/* The first route an answer gives, into arg. */
static int keep_first(const struct nf_route *r, void *arg)
{
	memcpy(arg, r, sizeof(*r));
	return 1;
}

/* The dump's entry for a lookup's answer, which names the table wrong:
 * with no rule of its own, the kernel merges the local table into main
 * and says main for both. */
struct entry {
	const struct nf_route *looked;
	struct nf_route *out;
	int found; /* 2: the same table too */
};

static int entry_of(const struct nf_route *r, void *arg)
{
	struct entry *e = arg;
	const struct nf_route *l = e->looked;

	if (r->rtm.rtm_family != l->rtm.rtm_family || r->rtm.rtm_dst_len != l->rtm.rtm_dst_len ||
	    r->rtm.rtm_tos != l->rtm.rtm_tos || r->priority != l->priority ||
	    r->rtm.rtm_type != l->rtm.rtm_type || nf_route_oif(r) != nf_route_oif(l) ||
	    memcmp(r->dst, l->dst, sizeof(r->dst)) != 0 || r->rtm.rtm_src_len != l->rtm.rtm_src_len ||
	    memcmp(r->src, l->src, sizeof(r->src)) != 0 || (r->rtm.rtm_flags & RTM_F_CLONED))
		return 0;
	if (e->found < 1 + (r->table == l->table)) {
		memcpy(e->out, r, sizeof(*r));
		e->found = 1 + (r->table == l->table);
	}
	return 0;
}

int nf_route_lookup(int fd, int family, const uint8_t *addr, struct nf_route *r)
{
	struct nf_route looked;
	struct entry e = { &looked, r, 0 };
	uint8_t req[128];
	int n = nf_route_msg_get(req, sizeof(req), family, addr, seq_next()), rc;

	if (n < 0)
		return n;
	rc = nf_route_talk(fd, req, (size_t)n, keep_first, &looked);
	if (rc != 1)
		return rc < 0 ? rc : -ENOENT;
	n = nf_route_msg_dump(req, sizeof(req), family, seq_next());
	rc = n < 0 ? n : nf_route_talk(fd, req, (size_t)n, entry_of, &e);
	if (rc < 0 && rc != -E2BIG && rc != -EBADMSG)
		return rc; /* another route of the dump unread: the entry itself reads, as looked did */
	if (!e.found)
		*r = looked; /* no entry of the dump is it: its own answer, as it said */
	return 0;
}

/* What nf_route_each hands on. */
struct each {
	int (*fn)(const struct nf_route *, void *);
	void *arg;
};

static int unicast_or_local(const struct nf_route *r, void *arg)
{
	const struct each *e = arg;

	if (r->rtm.rtm_flags & RTM_F_CLONED)
		return 0;
	if (r->rtm.rtm_type != RTN_UNICAST && r->rtm.rtm_type != RTN_LOCAL)
		return 0;
	return e->fn(r, e->arg);
}

int nf_route_each(int fd, int family, int (*fn)(const struct nf_route *r, void *arg), void *arg)
{
	struct each e = { fn, arg };
	int fams[] = { AF_INET, AF_INET6 }, rc = 0;

	for (int i = 0; i < 2 && rc == 0; i++) {
		uint8_t req[64];
		int n;

		if (family != AF_UNSPEC && family != fams[i])
			continue;
		n = nf_route_msg_dump(req, sizeof(req), fams[i], seq_next());
		rc = n < 0 ? n : nf_route_talk(fd, req, (size_t)n, unicast_or_local, &e);
	}
	return rc;
}

/* What nf_route_find looks for, and where it puts it. */
struct finder {
	const struct nf_route *key;
	struct nf_route *out;
};

static int same_entry(const struct nf_route *r, void *arg)
{
	struct finder *f = arg;

	if (!nf_route_same(r, f->key))
		return 0;
	memcpy(f->out, r, sizeof(*r));
	return 1;
}

int nf_route_find(int fd, const struct nf_route *key, struct nf_route *r)
{
	struct finder f = { key, r };
	uint8_t req[64];
	int n = nf_route_msg_dump(req, sizeof(req), key->rtm.rtm_family, seq_next()), rc;

	if (n < 0)
		return n;
	rc = nf_route_talk(fd, req, (size_t)n, same_entry, &f);
	return rc == 1 ? 0 : rc < 0 ? rc : -ENOENT;
}

/* Whether r is the first route of its entry (nf_route_same) a dump gives. */
struct first_of {
	const struct nf_route *r;
	int found; /* 1: r first; -1: another first */
};

static int first_same(const struct nf_route *r, void *arg)
{
	struct first_of *f = arg;

	if (f->found || !nf_route_same(r, f->r))
		return 0;
	f->found = nf_route_equal(r, f->r) ? 1 : -1;
	return 0; /* the dump read out */
}

int nf_route_first(int fd, const struct nf_route *r)
{
	struct first_of f = { r, 0 };
	uint8_t req[64];
	int n = nf_route_msg_dump(req, sizeof(req), r->rtm.rtm_family, seq_next());

	n = n < 0 ? n : nf_route_talk(fd, req, (size_t)n, first_same, &f);
	if (f.found) /* the first of the entry was read: another route unread changes nothing */
		return f.found > 0;
	return n < 0 ? n : -ENOENT;
}

int nf_route_set_quickack(int fd, const struct nf_route *r, int value)
{
	uint8_t req[NF_ROUTE_MSG_MAX];
	int n = nf_route_msg_replace(req, sizeof(req), r, value, seq_next());

	if (n < 0)
		return n;
	n = nf_route_talk(fd, req, (size_t)n, NULL, NULL);
	return n < 0 ? n : 0;
}

int nf_route_restore(int fd, const struct nf_route *r)
{
	return nf_route_set_quickack(fd, r, -1);
}
