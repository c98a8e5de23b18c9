/*
 * attach_route.c - attach's quickack rules on a network namespace's
 * routes (attach_int.h): the kernel acknowledges at once (no delayed
 * ACK) on every connection whose route has the quickack metric
 * (RTAX_QUICKACK, `ip route ... quickack 1`), the connections already
 * open included, whatever the program; so the receiving end of a
 * stall is fixed without touching the program that splits its writes.
 *
 * For a rule "connect PREFIX quickack" the routes are the one the kernel
 * takes to the prefix's address (RTM_GETROUTE with RTM_F_FIB_MATCH: the
 * most specific entry, "local 127.0.0.1" rather than "local
 * 127.0.0.0/8") and every unicast or local route inside the prefix;
 * "default quickack" (and -m quickack) is every unicast and local route
 * of the namespace. An accept rule names the program's own end, not the
 * peer: no route can be chosen from it, and it is refused with why.
 * Each route is written again with all its attributes and metrics as
 * they were plus quickack 1 (NLM_F_REPLACE), recorded as it was and as
 * left (attach_route_record.c), and said. detach puts back each route
 * still as attach left it, and says, leaving it, one changed or removed
 * since.
 */
#include "attach_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/common/nf_cli.h"
#include "cli/fix/nf_fix.h"

/* One run's work on a namespace. */
struct run {
	const char *cmd;
	const struct nf_attach_netns *ns;
	int nl, ioc;                       /* the sockets made in the namespace */
	struct nf_attach_route_record rec; /* what attach changed there, read then grown */
	struct nf_route *seen;             /* the routes handled this run */
	size_t nseen;
	const char *why;                   /* the rule of the route being handled */
	size_t set, kept, errors;
	int quiet;                         /* watch: the result in last, nothing printed */
	char last[NF_ROUTE_TEXT_MAX + 96];
};

size_t nf_attach_route_rules(const struct nf_attach_policy *p)
{
	size_t n = p->pol.dflt.action == NF_ACT_QUICKACK;

	for (size_t i = 0; i < p->pol.nrules; i++)
		n += p->pol.rules[i].opts.action == NF_ACT_QUICKACK;
	return n;
}

/* r as `ip route` would say it, its device named in the namespace. */
static const char *route_text(const struct run *x, const struct nf_route *r, char *buf, size_t len)
{
	return nf_route_format(r, nf_attach_netns_ifname(x->ioc, r), buf, len);
}

/* The line of route r: "naglefix CMD: network namespace NS: route 'R': WHAT". */
static void say(struct run *x, const struct nf_route *r, const char *what, const char *why)
{
	char t[NF_ROUTE_TEXT_MAX];

	route_text(x, r, t, sizeof(t));
	snprintf(x->last, sizeof(x->last), "route '%s' %s", t, what);
	if (x->quiet)
		return;
	printf("naglefix %s: network namespace %s: route '%s': %s%s%s%s\n", x->cmd, x->ns->name, t, what,
	       why && *why ? " (" : "", why ? why : "", why && *why ? ")" : "");
}

static void say_error(struct run *x, const struct nf_route *r, const char *step, int rc)
{
	char what[160];

	snprintf(what, sizeof(what), "%s: %s%s", step, strerror(-rc),
		 rc == -EPERM ? " (changing routes needs CAP_NET_ADMIN)" : "");
	if (!x->quiet) {
		char t[NF_ROUTE_TEXT_MAX];

		nf_cli_warnx_as(x->cmd, 0, "network namespace %s: route '%s': %s",
			x->ns->name, route_text(x, r, t, sizeof(t)), what);
	}
	snprintf(x->last, sizeof(x->last), "%s", what);
	x->errors++;
}

/* The record's entry for r's table entry, or NULL. */
static struct nf_attach_route_rec *recorded(struct run *x, const struct nf_route *r)
{
	for (size_t i = 0; i < x->rec.n; i++)
		if (nf_route_same(&x->rec.v[i].after, r))
			return &x->rec.v[i];
	return NULL;
}

/* 1 if r was handled already this run (else it is noted). */
static int seen_before(struct run *x, const struct nf_route *r)
{
	struct nf_route *v;

	for (size_t i = 0; i < x->nseen; i++)
		if (nf_route_same(&x->seen[i], r))
			return 1;
	v = realloc(x->seen, (x->nseen + 1) * sizeof(*v));
	if (v) {
		x->seen = v;
		x->seen[x->nseen++] = *r;
	}
	return 0;
}

/* r set again with quickack 1, recorded in e (new, or an entry of a route
 * changed since attach last set it). */
static void set_one(struct run *x, const struct nf_route *r, struct nf_attach_route_rec *e)
{
	struct nf_attach_route_rec n = { .before = *r };
	struct nf_attach_route_rec *v;
	int rc = nf_route_set_quickack(x->nl, r, 1);

	if (rc == 0)
		rc = nf_route_find(x->nl, r, &n.after);
	if (rc < 0) {
		say_error(x, r, "setting quickack 1", rc);
		return;
	}
	snprintf(n.why, sizeof(n.why), "%s", x->why);
	if (!e) {
		v = realloc(x->rec.v, (x->rec.n + 1) * sizeof(*v));
		if (!v) {
			say_error(x, r, "recording it", -ENOMEM);
			nf_route_restore(x->nl, r);
			return;
		}
		x->rec.v = v;
		e = &x->rec.v[x->rec.n++];
	}
	*e = n;
	x->set++;
	say(x, &n.after, "quickack 1 set", x->why);
}

/* One route a rule names: set, or said to be left. */
static void handle(struct run *x, const struct nf_route *r)
{
	struct nf_attach_route_rec *e;
	char why_not[160];

	if (seen_before(x, r))
		return;
	e = recorded(x, r);
	if (e && nf_route_equal(&e->after, r)) {
		x->kept++;
		say(x, r, "quickack 1 already, set by naglefix attach", e->why);
	} else if (nf_route_unwritable(r)) {
		x->kept++;
		snprintf(why_not, sizeof(why_not), "%s: left as it is", nf_route_unwritable(r));
		say(x, r, why_not, NULL);
	} else if (r->quickack > 0) {
		x->kept++;
		say(x, r, "quickack already on, not set by naglefix: left as it is", NULL);
	} else if (nf_route_first(x->nl, r) == 0) {
		x->kept++;
		say(x, r, "one of several routes of one entry (ip route append), not the first, which a "
		    "replace would write instead: left as it is", NULL);
	} else {
		set_one(x, r, e);
	}
}

/* The routes a dump gives that lie inside a prefix, kept to be handled
 * once the dump is read (no request can go on the socket meanwhile). */
struct inside {
	const struct nf_endpoint *ep;
	struct nf_route *v;
	size_t n;
};

static int collect(const struct nf_route *r, void *arg)
{
	struct inside *in = arg;
	struct nf_route *v;

	if (!nf_route_within(r, in->ep->family, in->ep->addr, in->ep->prefix))
		return 0;
	v = realloc(in->v, (in->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	in->v = v;
	in->v[in->n++] = *r;
	return 0;
}

/* Why a route was not read, in words. */
static const char *unread_why(int rc)
{
	return rc == -E2BIG ? "a route with more attributes than naglefix keeps of one" : strerror(-rc);
}

/* The routes of endpoint ep (family 0, prefix 0: every route). */
static void routes_of(struct run *x, const struct nf_endpoint *ep)
{
	struct inside in = { .ep = ep };
	struct nf_route r;
	int rc = 0;

	if (ep->family && (rc = nf_route_lookup(x->nl, ep->family, ep->addr, &r)) == 0) {
		handle(x, &r);
	} else if (ep->family && (rc == -ENOENT || rc == -ENETUNREACH || rc == -EHOSTUNREACH)) {
		if (!x->quiet)
			printf("naglefix %s: network namespace %s: no route to the address of %s: %s\n",
			       x->cmd, x->ns->name, x->why, strerror(-rc));
	} else if (ep->family) {
		if (!x->quiet)
			nf_cli_warnx_as(x->cmd, 0, "network namespace %s: the route to the address "
					"of %s not read: %s; left as it is", x->ns->name, x->why,
					unread_why(rc));
		x->errors++;
	}
	rc = nf_route_each(x->nl, ep->family, collect, &in);
	if (rc < 0 && !x->quiet)
		nf_cli_warnx_as(x->cmd, 0, "network namespace %s: reading its routes: %s; those "
				"read handled, the others left as they are", x->ns->name,
				unread_why(rc));
	x->errors += rc < 0;
	for (size_t i = 0; i < in.n; i++)
		handle(x, &in.v[i]);
	free(in.v);
}

/* Opens x's sockets in its namespace and reads its record, under the
 * lock (its descriptor returned). */
static int begin(struct run *x)
{
	int lock = nf_attach_route_lock(), rc;
	uint64_t cookie;

	x->nl = x->ioc = -1;
	if (lock < 0)
		return lock;
	rc = nf_attach_netns_sockets(x->ns, &x->nl, &x->ioc);
	if (rc == 0)
		rc = nf_attach_route_record_read(x->ns->ino, &x->rec);
	if (rc < 0) {
		close(lock);
		return rc;
	}
	cookie = nf_attach_netns_cookie(x->nl);
	if (x->rec.n && x->rec.cookie && cookie && x->rec.cookie != cookie) {
		if (!x->quiet)
			printf("naglefix %s: network namespace %s: the record of its inode %llu is of a "
			       "namespace gone since (%s, whose inode this one reuses): its %zu route%s "
			       "dropped, none of this one's touched\n", x->cmd, x->ns->name,
			       (unsigned long long)x->ns->ino, x->rec.name, x->rec.n,
			       x->rec.n == 1 ? "" : "s");
		x->rec.n = 0;
	}
	x->rec.cookie = cookie;
	snprintf(x->rec.path, sizeof(x->rec.path), "%s", x->ns->path);
	snprintf(x->rec.name, sizeof(x->rec.name), "%s", x->ns->name);
	return lock;
}

/* Writes x's record, closes its sockets and the lock. */
static int end(struct run *x, int lock)
{
	int rc = nf_attach_route_record_write(&x->rec);

	if (rc < 0 && !x->quiet)
		nf_cli_warnx_as(x->cmd, 0, "the record of the routes set (%s): %s: detach cannot "
				"put them back by itself", nf_fix_state_dir(), strerror(-rc));
	nf_attach_route_record_free(&x->rec);
	free(x->seen);
	if (x->nl >= 0)
		close(x->nl);
	if (x->ioc >= 0)
		close(x->ioc);
	close(lock);
	return rc;
}

static int status_of(int rc)
{
	return rc == -EPERM || rc == -EACCES ? NF_ATTACH_EXIT_PERM : NF_ATTACH_EXIT_KERNEL;
}

/* The accept rules that say quickack: refused, each said. */
static size_t refuse_accept(const char *cmd, const struct nf_attach_policy *p)
{
	char w[256];
	size_t n = 0;

	for (size_t i = 0; i < p->pol.nrules; i++) {
		const struct nf_rule *r = &p->pol.rules[i];

		if (r->opts.action != NF_ACT_QUICKACK || r->side != NF_SIDE_ACCEPT)
			continue;
		nf_cli_warnx_as(cmd, 0, "%s: an accept rule names the program's own end, not the "
			"peer, and a route is chosen by the peer: not applied (write the peers as "
			"'connect PREFIX quickack', or 'connect * quickack' for every route)",
			nf_attach_policy_where(p, r, w, sizeof(w)));
		n++;
	}
	return n;
}

int nf_attach_route_apply(const char *cmd, const struct nf_attach_netns *ns,
			  const struct nf_attach_policy *p)
{
	struct run x = { .cmd = cmd, .ns = ns };
	struct nf_endpoint every = { 0 };
	char w[256];
	int lock = begin(&x), rc;

	if (lock < 0) {
		nf_cli_warnx_as(cmd, 0, "network namespace %s: %s", ns->name, strerror(-lock));
		return status_of(lock);
	}
	refuse_accept(cmd, p);
	for (size_t i = 0; i < p->pol.nrules; i++) {
		const struct nf_rule *r = &p->pol.rules[i];

		if (r->opts.action != NF_ACT_QUICKACK || r->side != NF_SIDE_CONNECT)
			continue;
		x.why = nf_attach_policy_where(p, r, w, sizeof(w));
		routes_of(&x, &r->ep);
	}
	if (p->pol.dflt.action == NF_ACT_QUICKACK) {
		x.why = nf_attach_policy_where(p, NULL, w, sizeof(w));
		routes_of(&x, &every);
	}
	printf("naglefix %s: network namespace %s: quickack 1 set on %zu route%s, %zu left as they were; "
	       "detach puts them back\n", cmd, ns->name, x.set, x.set == 1 ? "" : "s", x.kept);
	rc = end(&x, lock);
	return x.errors || rc < 0 ? NF_ATTACH_EXIT_PARTIAL : 0;
}

int nf_attach_route_peer(const struct nf_attach_netns *ns, int family, const uint8_t *addr,
			 const char *why, char *said, size_t len)
{
	struct run x = { .cmd = "watch", .ns = ns, .why = why, .quiet = 1 };
	struct nf_route r;
	int lock = begin(&x), rc;

	if (lock < 0) {
		snprintf(said, len, "%s", strerror(-lock));
		return lock;
	}
	rc = nf_route_lookup(x.nl, family, addr, &r);
	if (rc == 0)
		handle(&x, &r);
	else
		snprintf(x.last, sizeof(x.last), "no route to it: %s", strerror(-rc));
	snprintf(said, len, "%s", x.last);
	end(&x, lock);
	return rc < 0 ? rc : x.errors ? -EIO : 0;
}

/* One recorded route put back if it is still as attach left it. */
static int put_back(struct run *x, const struct nf_attach_route_rec *e)
{
	struct nf_route now;
	int rc = nf_route_find(x->nl, &e->after, &now);

	if (rc == -ENOENT) {
		say(x, &e->after, "removed since naglefix set it: nothing to put back", NULL);
		return 0;
	}
	if (rc == 0 && !nf_route_equal(&now, &e->after)) {
		say(x, &now, "changed since naglefix set quickack 1 on it: left as it is", NULL);
		return 0;
	}
	if (rc == 0)
		rc = nf_route_restore(x->nl, &e->before);
	if (rc < 0) {
		say_error(x, &e->after, "putting it back", rc);
		return rc;
	}
	x->set++;
	say(x, &e->before, "put back as it was (quickack 1 taken off)", NULL);
	return 0;
}

int nf_attach_route_restore(const char *cmd, const struct nf_attach_netns *ns)
{
	struct run x = { .cmd = cmd, .ns = ns };
	size_t kept = 0;
	int lock = begin(&x), rc;

	if (lock < 0) {
		nf_cli_warnx_as(cmd, 0, "network namespace %s: %s", ns->name, strerror(-lock));
		return status_of(lock);
	}
	for (size_t i = 0; i < x.rec.n; i++)
		if (put_back(&x, &x.rec.v[i]) < 0)
			x.rec.v[kept++] = x.rec.v[i]; /* still ours: a later detach tries again */
	if (x.rec.n == 0)
		printf("naglefix %s: network namespace %s: no route naglefix set; nothing changed\n", cmd,
		       ns->name);
	x.rec.n = kept;
	rc = end(&x, lock);
	return x.errors || rc < 0 ? NF_ATTACH_EXIT_PARTIAL : 0;
}

/* Whether a command's target names a namespace: --netns, --pid, or the
 * host (--host said); --cgroup and --unit name none. */
static int names_netns(enum nf_attach_kind kind, const char *netns, int host)
{
	return netns || kind == NF_ATTACH_PID || (kind == NF_ATTACH_ROOT && host);
}

/* --pid of a process in this command's own namespace would be the
 * host's routes: not what --pid means (a container, a pod). */
static int host_by_pid(const char *cmd, const char *pid, const struct nf_attach_netns *ns)
{
	struct nf_attach_netns self;
	int same;

	if (nf_attach_netns_open_quiet("/proc/self/ns/net", &self) < 0)
		return 0;
	same = self.ino == ns->ino;
	nf_attach_netns_close(&self);
	if (!same)
		return 0;
	nf_cli_warnx_as(cmd, 0, "pid %s is in the host's network namespace: its quickack rules "
		"would change the host's routes, every program's; not applied (naglefix %s --host "
		"does that, if it is meant)", pid, cmd);
	return NF_ATTACH_EXIT_TARGET;
}

int nf_attach_route_target(const char *cmd, enum nf_attach_kind kind, const char *arg,
			   const char *netns, int host, const struct nf_attach_policy *p)
{
	struct nf_attach_netns ns;
	int rc;

	if (kind == NF_ATTACH_ROOT && !netns && !host)
		return nf_cli_usage_error(cmd, "%s's quickack rules change a network namespace's routes "
					  "and none is named: --netns NAME|PATH or --pid PID (a "
					  "container's), or --host for the host's own, every program's",
					  p->source);
	if (kind != NF_ATTACH_PID || netns)
		return 0;
	rc = nf_attach_netns_open(cmd, NULL, arg, &ns);
	if (rc == 0)
		rc = host_by_pid(cmd, arg, &ns);
	nf_attach_netns_close(&ns);
	return rc;
}

int nf_attach_route_cmd(const char *cmd, enum nf_attach_kind kind, const char *arg,
			const char *netns, int host, const struct nf_attach_policy *p, int alone)
{
	struct nf_attach_netns ns;
	int rc = nf_attach_route_target(cmd, kind, arg, netns, host, p);

	if (rc != 0)
		return rc;
	if (!names_netns(kind, netns, host)) {
		nf_cli_warnx_as(cmd, 0, "%s's quickack rules change a network namespace's routes, "
			"and a cgroup names none: not applied (add --netns NAME|PATH, or name a process "
			"with --pid)", p->source);
		return alone ? NF_EXIT_USAGE : 0;
	}
	rc = nf_attach_netns_open(cmd, netns, kind == NF_ATTACH_PID ? arg : NULL, &ns);
	if (rc == 0)
		rc = nf_attach_route_apply(cmd, &ns, p);
	nf_attach_netns_close(&ns);
	return rc;
}

int nf_attach_route_undo(const char *cmd, enum nf_attach_kind kind, const char *arg,
			 const char *netns, int host)
{
	struct nf_attach_netns ns;
	struct nf_attach_route_record rec;
	int rc;

	if (!names_netns(kind, netns, host))
		return 0;
	rc = nf_attach_netns_open(cmd, netns, kind == NF_ATTACH_PID ? arg : NULL, &ns);
	if (rc != 0)
		return rc;
	/* with no --netns, a namespace attach never changed is not worth a line */
	if (netns || (nf_attach_route_record_read(ns.ino, &rec) == 0 && rec.n > 0))
		rc = nf_attach_route_restore(cmd, &ns);
	if (!netns)
		nf_attach_route_record_free(&rec);
	nf_attach_netns_close(&ns);
	return rc;
}

/* One namespace of detach --all: put back if it is still there. */
static int undo_recorded(uint64_t ino, void *arg)
{
	struct nf_attach_route_record rec;
	struct nf_attach_netns ns;
	int *status = arg, rc = -ENOENT;

	if (nf_attach_route_record_read(ino, &rec) == 0 && rec.n > 0 &&
	    nf_attach_netns_open_quiet(rec.path, &ns) == 0) {
		if (ns.ino == ino) {
			snprintf(ns.name, sizeof(ns.name), "%s", rec.name);
			rc = nf_attach_route_restore("detach", &ns);
		}
		nf_attach_netns_close(&ns);
	}
	if (rc == -ENOENT && rec.n > 0)
		printf("naglefix detach: network namespace %s (%s): gone or out of reach: its %zu "
		       "route%s went with it; record kept\n", rec.name, rec.path, rec.n,
		       rec.n == 1 ? "" : "s");
	if (rc > *status)
		*status = rc;
	nf_attach_route_record_free(&rec);
	return 0;
}

int nf_attach_route_undo_all(void)
{
	int status = 0, rc = nf_attach_route_record_each(undo_recorded, &status);

	return rc < 0 ? NF_ATTACH_EXIT_PARTIAL : status;
}
