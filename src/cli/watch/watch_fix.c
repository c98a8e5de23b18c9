/*
 * watch_fix.c - naglefix watch --fix: at a connection's first stall, the
 * holder's socket fixed at once when the holder is a process of this host
 * (TCP_NODELAY set through a duplicate of its descriptor, nf_fix_inode of
 * fix_int.h, recorded for `naglefix fix --undo PID`), and the listener it
 * was accepted from too (nf_fix_listener: the connections it accepts from
 * then on get TCP_NODELAY from it). When the holder is elsewhere and the
 * end that delays its ACK is here, the receiving end's fix is printed
 * (the quickack rule, or Linux's per-route quickack) and nothing is
 * changed. Only the socket of the stall and its listener are ever touched.
 * With --attach, the holder's rule is added to its cgroup's program, and
 * where the rules there give the connection nodelay its socket is marked
 * for the setsockopt program (nf_fix_mark_inode, with the map of marks
 * nf_attach_rule hands back): it was established before them, unmarked.
 * Each is said in a line after the finding's (text: "  fix: ...", JSON:
 * "event":"wire_fix").
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/attach/nf_attach.h"
#include "cli/common/nf_cli.h"
#include "cli/common/nf_wire_out.h"
#include "cli/fix/nf_fix.h"
#include "nf_addr.h"
#include "watch_int.h"
#include "wire/nf_owner.h"

/* What was done to one socket. */
struct done {
	int rc;          /* nf_fix_*'s return */
	int fd;          /* the program's descriptor, -1 unknown */
	int before, after; /* TCP_NODELAY, -1 unknown */
	int marked;      /* --attach: marked for its cgroup's setsockopt program: 1,
			    0 not asked, else the error */
	int off_again;   /* --attach: not marked, TCP_NODELAY 0 again since the fix */
};

static const char *result_of(const struct done *d)
{
	if (d->rc == 0)
		return d->before == 0 ? "set" : "unchanged";
	if (d->rc == -EALREADY)
		return "left";
	return "failed";
}

/* Why, for a result other than set and unchanged. */
static const char *why_of(const struct done *d)
{
	switch (d->rc) {
	case 0:
		return "";
	case -EALREADY:
		return "the process runs under libnaglefix.so: left to it";
	case -ENOENT:
		return "no such socket in the process any more";
	case -ESRCH:
		return "the process ended";
	case -EPERM:
		return "no ptrace right over the process (CAP_SYS_PTRACE)";
	case -ENOSYS:
		return "no pidfd_getfd in this kernel (Linux 5.6 or later)";
	default:
		return strerror(-d->rc);
	}
}

static void from_fix(struct done *d, int rc, const struct nf_fix_done *f)
{
	d->rc = rc;
	d->fd = rc == 0 ? f->sock.fd : -1;
	d->before = rc == 0 ? f->before : -1;
	d->after = rc == 0 ? f->sock.nodelay : -1;
	d->marked = 0;
	d->off_again = 0;
}

static const char *end_text(const struct nf_end *e, char buf[NF_ADDR_MAX])
{
	return nf_addr_format(e->family, e->addr, e->port, buf);
}

/* The command that undoes the fix of h's socket s: fix --undo, after
 * detach where --attach (a) marked it, whose setsockopt program would
 * turn undo's setsockopt(TCP_NODELAY, 0) into 1 too. */
static const char *undo_text(const struct nf_holder *h, const struct done *s,
			     const struct nf_attach_rule_done *a, char *buf, size_t len)
{
	if (a && s->marked > 0)
		snprintf(buf, len, "naglefix detach --cgroup %s, then naglefix fix --undo %ld",
			 a->dir, h->pid);
	else
		snprintf(buf, len, "naglefix fix --undo %ld", h->pid);
	return buf;
}

static void json_done(FILE *out, const char *key, const struct done *d)
{
	fprintf(out, ",\"%s\":{\"result\":\"%s\",\"fd\":%d,\"before\":%d,\"after\":%d", key,
		result_of(d), d->fd, d->before, d->after);
	if (*why_of(d)) {
		fputs(",\"why\":", out);
		nf_cli_json_str(out, why_of(d));
	}
	fputc('}', out);
}

/* --attach's part of the JSON line (a NULL: not asked), with whether the
 * socket s was marked. */
static void json_attach(FILE *out, const struct nf_attach_rule_done *a, const struct done *s)
{
	if (!a)
		return;
	fprintf(out, ",\"attach\":{\"result\":\"%s\",\"cgroup\":", nf_attach_rule_result_name(a->result));
	nf_cli_json_str(out, a->dir);
	if (a->id)
		fprintf(out, ",\"program\":%u", (unsigned)a->id);
	if (s->marked || s->off_again)
		fprintf(out, ",\"marked\":%s", s->marked > 0 ? "true" : "false");
	fputs(",\"why\":", out);
	nf_cli_json_str(out, a->why);
	fputc('}', out);
}

/* The JSON line of a local fix: the socket, and the listener (l may be
 * NULL), and what --attach did (a may be NULL). */
static void json_fixed(FILE *out, const struct nf_holder *h, const struct done *s,
		       const struct done *l, const struct nf_attach_rule_done *a)
{
	char b[NF_ADDR_MAX], undo[NF_CGROUP_PATH_MAX + 96];

	fprintf(out, "{\"event\":\"wire_fix\",\"source\":\"watch\",\"pid\":%ld,\"prog\":", h->pid);
	nf_cli_json_str(out, h->cmd);
	nf_cli_wire_json_netns(out, h);
	fprintf(out, ",\"side\":\"%s\",\"local\":\"%s\"",
		h->side == NF_WIRE_ACCEPT ? "accept" : "connect", end_text(&h->self, b));
	fprintf(out, ",\"peer\":\"%s\",\"action\":\"nodelay\"", end_text(&h->peer, b));
	json_done(out, "socket", s);
	if (l)
		json_done(out, "listener", l);
	json_attach(out, a, s);
	fputs(",\"undo\":", out);
	nf_cli_json_str(out, undo_text(h, s, a, undo, sizeof(undo)));
	fputs("}\n", out);
}

static void text_done(FILE *out, const char *what, const struct done *d)
{
	if (d->rc == 0)
		fprintf(out, "%s fd %d TCP_NODELAY %d -> %d", what, d->fd, d->before, d->after);
	else
		fprintf(out, "%s %s (%s)", what, result_of(d), why_of(d));
}

/* --attach's part of the text line: which was done, and where, and
 * whether the socket s was marked. */
static void text_attach(FILE *out, const struct nf_attach_rule_done *a, const struct done *s)
{
	fprintf(out, "; attach: ");
	switch (a->result) {
	case NF_ATTACH_RULE_ATTACHED:
		fprintf(out, "%s (%s): program %u, %s", a->dir, a->name, (unsigned)a->id, a->why);
		break;
	case NF_ATTACH_RULE_ALREADY:
	case NF_ATTACH_RULE_LEFT:
		fprintf(out, "%s (%s): %s, %s", a->dir, a->name, nf_attach_rule_result_name(a->result),
			a->why);
		break;
	default:
		fprintf(out, "not attached (%s)", a->why);
	}
	if (s->marked > 0)
		fputs("; socket marked", out);
	else if (s->marked < 0)
		fprintf(out, "; socket not marked (%s): its own setsockopt can turn it off",
			strerror(-s->marked));
	else if (s->off_again)
		fputs("; socket not marked: its TCP_NODELAY is 0 again (turned off since the fix)",
		      out);
}

static void text_fixed(FILE *out, const struct nf_holder *h, const struct done *s,
		       const struct done *l, const struct nf_attach_rule_done *a)
{
	char undo[NF_CGROUP_PATH_MAX + 96];

	fprintf(out, "  fix: pid %ld ", h->pid);
	text_done(out, "socket", s);
	if (l) {
		fputs("; ", out);
		text_done(out, "its listener", l);
	}
	if (s->rc == 0 || (l && l->rc == 0))
		fprintf(out, "; undo: %s", undo_text(h, s, a, undo, sizeof(undo)));
	if (a)
		text_attach(out, a, s);
	fputc('\n', out);
}

/* e as a socket address into ss; its length. */
static socklen_t end_sockaddr(const struct nf_end *e, struct sockaddr_storage *ss)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (e->family == AF_INET6) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(e->port);
		memcpy(&in6->sin6_addr, e->addr, 16);
		return sizeof(*in6);
	}
	in->sin_family = AF_INET;
	in->sin_port = htons(e->port);
	memcpy(&in->sin_addr, e->addr, 4);
	return sizeof(*in);
}

/* --attach: the holder's rule (its peer's for a client, its own end for
 * a server) added to naglefix's program on its cgroup. */
static void attach_holder(const struct nf_holder *h, const struct nf_owner *o,
			  struct nf_attach_rule_done *d)
{
	int accepted = h->side == NF_WIRE_ACCEPT;
	const struct nf_end *e = accepted ? &h->self : &h->peer;
	char rule[NF_ADDR_MAX + 32], a[NF_ADDR_MAX];
	struct sockaddr_storage ss;
	socklen_t len = end_sockaddr(e, &ss);

	snprintf(rule, sizeof(rule), "%s %s nodelay", accepted ? "accept" : "connect", end_text(e, a));
	nf_attach_rule((pid_t)o->pid, accepted ? NF_SIDE_ACCEPT : NF_SIDE_CONNECT,
		       (const struct sockaddr *)&ss, len, rule, d);
}

/* --attach, the rules of the holder's cgroup giving its connection
 * nodelay: the socket fixed before marked in marks_fd (a->marks_fd:
 * above 0 the map of marks of the setsockopt program there, below 0 why
 * there is none), so that program keeps it on too; it was established
 * before, and no program marked it. Only marked: one turned off since the
 * fix is neither set again nor recorded twice. */
static void mark_holder(const struct nf_owner *o, struct done *s, int marks_fd)
{
	struct nf_fix_done f;
	int rc;

	if (marks_fd <= 0) {
		s->marked = marks_fd == -ENOENT ? 0 : marks_fd; /* -ENOENT: no hook, said */
		return;
	}
	memset(&f, 0, sizeof(f));
	rc = nf_fix_mark_inode(o->pid, (unsigned long)o->inode, s->fd, marks_fd, &f);
	s->marked = rc < 0 ? rc : f.marked;
	s->off_again = rc == 0 && !f.marked;
	close(marks_fd);
}

/* The holder h is the process of o: its socket, and for an accepted
 * connection its listener (any family: an IPv6 wildcard listener accepts
 * IPv4 too). */
static void fix_local(struct nf_watch *w, const struct nf_holder *h, const struct nf_owner *o)
{
	struct nf_fix_done f;
	struct nf_attach_rule_done att, *a = w->attach ? &att : NULL;
	struct done s, l;
	int rc, accepted = h->side == NF_WIRE_ACCEPT;

	memset(&f, 0, sizeof(f));
	rc = nf_fix_inode(o->pid, (unsigned long)o->inode, o->fd, &f);
	from_fix(&s, rc, &f);
	if (accepted) {
		memset(&f, 0, sizeof(f));
		rc = nf_fix_listener(o->pid, 0, h->self.port, &f);
		from_fix(&l, rc, &f);
	}
	if (a)
		attach_holder(h, o, a);
	if (a && s.rc == 0)
		mark_holder(o, &s, a->marks_fd);
	else if (a && a->marks_fd > 0)
		close(a->marks_fd);
	if (w->json)
		json_fixed(w->out, h, &s, accepted ? &l : NULL, a);
	else
		text_fixed(w->out, h, &s, accepted ? &l : NULL, a);
	if (w->log)
		json_fixed(w->log, h, &s, accepted ? &l : NULL, a);
}

/* The rule for the waiting end's host, which acknowledges at once. */
static const char *quickack_rule(const struct nf_holder *h, char *buf, size_t len)
{
	char a[NF_ADDR_MAX];

	if (h->side == NF_WIRE_ACCEPT) /* the waiting end connected to the holder */
		snprintf(buf, len, "connect %s quickack", end_text(&h->self, a));
	else
		snprintf(buf, len, "accept %s quickack", end_text(&h->peer, a));
	return buf;
}

/* --attach's route: what was done ("route 'R' quickack 1 set"), and the
 * namespace's path for detach. */
struct route_done {
	int rc;
	char said[NF_ATTACH_ROUTE_SAID_MAX];
	char path[NF_CGROUP_PATH_MAX];
};

/* The path watch's namespace ns is reopened by (the host: PID 1's). */
static void ns_path(const struct nf_watch_ns *ns, char *buf, size_t len)
{
	if (strncmp(ns->name, "pid:", 4) == 0)
		snprintf(buf, len, "/proc/%s/ns/net", ns->name + 4);
	else if (strcmp(ns->name, "host") == 0)
		snprintf(buf, len, "/proc/1/ns/net");
	else if (strchr(ns->name, '/'))
		snprintf(buf, len, "%s", ns->name);
	else
		snprintf(buf, len, "/run/netns/%s", ns->name);
}

/* --attach, the holder elsewhere: quickack 1 on the route the waiting
 * end's namespace ns takes to the holder. */
static void route_holder(const struct nf_holder *h, const struct nf_watch_ns *ns,
			 struct route_done *d)
{
	struct nf_attach_netns n = { .fd = ns->fd, .ino = ns->ino };
	char why[NF_ADDR_MAX + 48], a[NF_ADDR_MAX];

	ns_path(ns, d->path, sizeof(d->path));
	snprintf(n.path, sizeof(n.path), "%s", d->path);
	snprintf(n.name, sizeof(n.name), "%s", ns->name);
	nf_addr_format(h->self.family, h->self.addr, -1, a);
	snprintf(why, sizeof(why), "watch --fix --attach: the holder %s", a);
	d->rc = nf_attach_route_peer(&n, h->self.family, h->self.addr, why, d->said, sizeof(d->said));
}

static void json_advice(FILE *out, const struct nf_holder *h, const struct nf_owner *r,
			const char *rule, const char *route, const struct route_done *rd)
{
	char a[NF_ADDR_MAX];

	fprintf(out, "{\"event\":\"wire_fix\",\"source\":\"watch\",\"local\":\"%s\"",
		end_text(&h->self, a));
	fprintf(out, ",\"peer\":\"%s\",\"action\":\"%s\",\"holder_here\":false",
		end_text(&h->peer, a), rd && rd->rc == 0 ? "quickack" : "none");
	if (r) {
		fprintf(out, ",\"waiting_pid\":%d,\"waiting_prog\":", (int)r->pid);
		nf_cli_json_str(out, r->cmd);
	}
	fputs(",\"peer_fix\":", out);
	nf_cli_json_str(out, rule);
	fputs(",\"route_fix\":", out);
	nf_cli_json_str(out, route);
	if (rd) {
		fprintf(out, ",\"route\":{\"result\":\"%s\",\"netns\":", rd->rc == 0 ? "set" : "failed");
		nf_cli_json_str(out, rd->path);
		fputs(",\"said\":", out);
		nf_cli_json_str(out, rd->said);
		fputc('}', out);
	}
	fputs("}\n", out);
}

/* The text line of --attach's route. */
static void text_route(FILE *out, const struct nf_owner *r, int here, const struct route_done *d)
{
	fprintf(out, "  fix: the holder is not on this host; the end that delays its ACK is ");
	if (here)
		fprintf(out, "pid %d %s", (int)r->pid, r->cmd);
	else
		fprintf(out, "a socket of this host");
	if (d->rc == 0)
		fprintf(out, "; attach: %s in its network namespace (%s); undo: naglefix detach "
			"--netns %s\n", d->said, d->path, d->path);
	else
		fprintf(out, "; attach: its route to the holder not set (%s); nothing changed\n",
			d->said);
}

/* The holder is not on this host: the receiving end's fix, if that end
 * is here; with --attach, its route's quickack metric set. */
static void advise_remote(struct nf_watch *w, const struct nf_holder *h,
			  const struct nf_watch_look *look)
{
	struct nf_owner r;
	const struct nf_watch_ns *where = NULL;
	struct route_done rd, *d = NULL;
	char rule[NF_ADDR_MAX + 32], route[NF_ADDR_MAX + 96], a[NF_ADDR_MAX];
	int here = nf_watch_owner(w, look, &h->peer, &h->self, &r, &where) == 0;

	quickack_rule(h, rule, sizeof(rule));
	nf_addr_format(h->self.family, h->self.addr, -1, a);
	snprintf(route, sizeof(route),
		 "ip route change ROUTE quickack 1 (ROUTE: the route 'ip route get %s' names)", a);
	if (w->attach && where) {
		memset(&rd, 0, sizeof(rd));
		route_holder(h, where, &rd);
		d = &rd;
	}
	if (w->json)
		json_advice(w->out, h, here ? &r : NULL, rule, route, d);
	else if (d)
		text_route(w->out, &r, here, d);
	else if (here)
		fprintf(w->out,
			"  fix: the holder is not on this host; the end that delays its ACK is pid %d %s:"
			" restart it under the library with '%s', or: %s; nothing changed\n",
			(int)r.pid, r.cmd, rule, route);
	else
		fprintf(w->out, "  fix: neither end is a process of this host; on the holder's: "
				"see the fix above; nothing changed\n");
	if (w->log)
		json_advice(w->log, h, here ? &r : NULL, rule, route, d);
}

void nf_watch_fix(struct nf_watch *w, const struct nf_holder *h, const struct nf_owner *o,
		  const struct nf_watch_look *look)
{
	if (o->pid)
		fix_local(w, h, o);
	else if (!o->inode)
		advise_remote(w, h, look);
	else if (w->json || w->log)
		; /* the socket is here, its process unreadable: the finding has no pid */
	else
		fputs("  fix: the holder's socket is on this host but no process could be named "
		      "(not root?): nothing changed\n", w->out);
	fflush(w->out);
	if (w->log)
		fflush(w->log);
}
