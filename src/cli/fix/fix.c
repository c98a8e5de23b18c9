/*
 * fix.c - naglefix fix: the config's rule applied to the TCP sockets of
 * running processes from outside, by duplicate (see fix_int.h), once or
 * (--follow) until they end (--undo: fix_undo.c; the command line's
 * usage, options table and checks: fix_args.c; the policy: fix_policy.c;
 * the marks for attach --now: fix_mark.c).
 *
 *   naglefix fix [-c CONF | -m nodelay] [--dry-run] [--follow] [--json] PID...
 *   naglefix fix --undo [--dry-run] [--json] PID...
 * where --cgroup PATH and --unit NAME (fix_cgroup.c) stand for the PIDs of
 * the processes in a cgroup, beside those given or instead. nf_cli_fix
 * reads the command line into a struct nf_fix_req, which nf_fix_apply
 * runs (attach --now calls it with its own).
 */
#include "fix_int.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/common/nf_cgroup.h"
#include "cli/common/nf_cli.h"

#define FOLLOW_INTERVAL_MS 100 /* --follow: a rescan at least this often */
#define FOLLOW_INTERVAL_MAX 60000

/* The run's settings and what it met. */
struct fixer {
	struct nf_fix_run run;
	struct nf_fix_policy pol; /* the rules and what of them was said (fix_policy.c) */
	size_t nset;           /* sockets set, over all processes */
	int given;             /* pids[0..given) named; the rest from --cgroup or --unit */
	struct nf_fix_marks marks; /* the map each connection set is marked in (nf_fix_req) */
};

/* One process and what was done to it. */
struct target {
	struct nf_fix_proc p;
	int live;               /* still to scan */
	int checked;            /* the library and the undo record looked at */
	int scanned;            /* one scan done to its end */
	size_t ntcp;            /* TCP sockets seen, over all scans */
	int grouped;            /* from --cgroup or --unit: its end, or no TCP socket, is
				 * no failure (a cgroup's helpers; said once for all) */
	char cgroup[NF_CGROUP_NAME_MAX]; /* its name, read when it is opened: a process
					  * fixed may end before its line is printed */
	unsigned long *seen;    /* seen[fd]: the inode handled there, 0 none */
	size_t nseen;
	struct nf_fix_sock *ls; /* its listeners */
	size_t nls, capls;
	size_t nset;
};

/* A descriptor found in a scan, then what its duplicate said. */
struct found {
	int fd;
	unsigned long ino;
	int ok; /* s filled: a TCP socket */
	struct nf_fix_sock s;
};

struct found_list {
	struct target *t;
	struct found *v;
	size_t n, cap;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* --- what a scan finds ---------------------------------------------------- */

static int seen_is(const struct target *t, int fd, unsigned long ino)
{
	return (size_t)fd < t->nseen && t->seen[fd] == ino;
}

static int seen_set(struct target *t, int fd, unsigned long ino)
{
	if ((size_t)fd >= t->nseen) {
		size_t n = t->nseen ? t->nseen : 64;
		unsigned long *v;

		while (n <= (size_t)fd)
			n *= 2;
		v = realloc(t->seen, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(v + t->nseen, 0, (n - t->nseen) * sizeof(*v));
		t->seen = v;
		t->nseen = n;
	}
	t->seen[fd] = ino;
	return 0;
}

static int collect(int fd, unsigned long ino, void *arg)
{
	struct found_list *l = arg;

	if (seen_is(l->t, fd, ino))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct found *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (struct found){ .fd = fd, .ino = ino };
	return 0;
}

/* Forgets the listener that was at fd (its descriptor now holds another file). */
static void drop_listener(struct target *t, int fd)
{
	for (size_t i = 0; i < t->nls; i++)
		if (t->ls[i].fd == fd)
			t->ls[i--] = t->ls[--t->nls];
}

static int add_listener(struct target *t, const struct nf_fix_sock *s)
{
	if (t->nls == t->capls) {
		size_t cap = t->capls ? 2 * t->capls : 8;
		struct nf_fix_sock *v = realloc(t->ls, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->ls = v;
		t->capls = cap;
	}
	t->ls[t->nls++] = *s;
	return 0;
}

/* --- messages ---------------------------------------------------------------- */

/* The end of following t: it ended, or a signal; says what it came to. */
static void follow_end(struct fixer *f, struct target *t, int ended)
{
	t->live = 0;
	if (ended)
		nf_cli_warnx(0, "pid %d ended (%zu socket%s set)", (int)t->p.pid,
			t->nset, t->nset == 1 ? "" : "s");
	if (t->scanned && !t->ntcp && !t->grouped)
		nf_fix_say_no_tcp(&f->run, t->p.pid, NF_FIX_NOTCP_FOLLOWED);
}

/* The end of process t's handling, after an error rc; says what was done. */
static void say_stopped(struct fixer *f, struct target *t, int rc)
{
	int pid = (int)t->p.pid;

	if (rc == -ESRCH && f->run.follow) {
		/* what --follow waits for: the end of the process, not a failure */
		follow_end(f, t, 1);
		return;
	}
	if (rc == -ESRCH && t->grouped && !t->nset) {
		t->live = 0; /* it left its cgroup meanwhile */
		return;
	}
	t->live = 0;
	nf_fix_say_error(&f->run, &t->p, rc, t->checked);
	if (t->nset)
		nf_cli_warnx(0,
			"pid %d: %zu socket%s set before that (listed above); the others "
			"left as they were",
			pid, t->nset, t->nset == 1 ? "" : "s");
}

/* --- one socket ---------------------------------------------------------------- */

/* Turns TCP_NODELAY on for s of t, recorded for undo first, and marks it
 * (where asked: fix_mark.c) once it is on. Fills r. */
static int apply_nodelay(struct fixer *f, struct target *t, const struct nf_fix_sock *s,
			 struct nf_fix_row *r)
{
	static char why[256];
	int dup = nf_fix_sock_take(&t->p, s->fd, s->ino), rc;

	if (dup < 0) {
		if (dup != -ESTALE && dup != -EBADF)
			return dup;
		r->result = NF_FIX_SKIPPED;
		r->why = "closed meanwhile";
		return 0;
	}
	r->before = nf_fix_sock_nodelay(dup);
	r->after = r->before;
	if (r->before == 1) {
		r->result = NF_FIX_UNCHANGED;
		nf_fix_mark_row(&f->run, &f->marks, t->p.pid, s, dup, r);
	} else if ((rc = nf_fix_record_add(&t->p, s->fd, s->ino)) < 0 && nf_fix_is_mfile(rc)) {
		close(dup);
		return rc; /* the record needs one descriptor more than the duplicate */
	} else if (rc < 0) {
		char err[160];

		snprintf(why, sizeof(why), "not changed: cannot record it for undo in %s: %s",
			 nf_fix_state_dir(), nf_fix_state_dir_why(rc, err, sizeof(err)));
		r->result = NF_FIX_SKIPPED;
		r->why = why;
		nf_fix_worse(&f->run, NF_FIX_EXIT_PARTIAL);
	} else if ((rc = nf_fix_sock_set_nodelay(dup, 1)) < 0) {
		snprintf(why, sizeof(why), "setsockopt: %s", strerror(-rc));
		r->result = NF_FIX_SKIPPED;
		r->why = why;
		nf_fix_worse(&f->run, NF_FIX_EXIT_PARTIAL);
	} else {
		r->after = nf_fix_sock_nodelay(dup);
		r->result = NF_FIX_SET;
		t->nset++;
		f->nset++;
		nf_fix_mark_row(&f->run, &f->marks, t->p.pid, s, dup, r);
	}
	close(dup);
	return 0;
}

/* The side of s in t and the options its rule gives. */
static const struct nf_opts *choose(const struct fixer *f, const struct target *t,
				    const struct nf_fix_sock *s, const char **side)
{
	if (s->listening) {
		*side = "listen";
		return nf_policy_match(&f->pol.pol, NF_SIDE_ACCEPT, (const struct sockaddr *)&s->local,
				       s->local_len);
	}
	for (size_t i = 0; i < t->nls; i++)
		if (nf_fix_sock_listener_of(&t->ls[i], s)) {
			*side = "accept";
			return nf_policy_match(&f->pol.pol, NF_SIDE_ACCEPT,
					       (const struct sockaddr *)&s->local, s->local_len);
		}
	*side = "connect";
	return nf_policy_match(&f->pol.pol, NF_SIDE_CONNECT,
			       s->peer_len ? (const struct sockaddr *)&s->peer : NULL, s->peer_len);
}

/* Applies the rule to one identified socket; prints its line. */
static int handle(struct fixer *f, struct target *t, const struct nf_fix_sock *s)
{
	char label[4200];
	size_t index;
	struct nf_fix_row r = { .pid = t->p.pid, .s = s, .before = s->nodelay, .after = s->nodelay,
				.cgroup = t->cgroup };
	const struct nf_opts *o = choose(f, t, s, &r.side);
	int rc = 0;

	r.action = nf_policy_action_name(o->action);
	r.rule = nf_fix_policy_rule(&f->pol, o, label, sizeof(label), &index);
	if (o->action == NF_ACT_PASS) {
		r.result = NF_FIX_LEFT;
	} else if (o->action != NF_ACT_NODELAY) {
		r.result = NF_FIX_LEFT;
		r.why = "needs the library";
		nf_fix_policy_say_needs_library(&f->pol, index, r.rule, r.action);
	} else if (s->nodelay == 1 && !nf_fix_mark_wanted(&f->marks, f->run.dry, s)) {
		r.result = NF_FIX_UNCHANGED;
	} else if (f->run.dry) {
		r.result = NF_FIX_WOULD_SET;
		r.after = 1;
	} else if ((rc = apply_nodelay(f, t, s, &r)) < 0) {
		return rc;
	}
	nf_fix_out_row(stdout, f->run.json, &r);
	return 0;
}

/* --- one process ---------------------------------------------------------------- */

/* Takes and identifies each descriptor of l (each duplicate closed at once). */
static int identify_all(struct target *t, struct found_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		struct found *x = &l->v[i];
		int dup = nf_fix_sock_take(&t->p, x->fd, x->ino), rc;

		if (dup == -ESTALE || dup == -EBADF)
			continue; /* closed (and reused) meanwhile: the next scan sees it anew */
		if (dup < 0)
			return dup;
		rc = nf_fix_sock_identify(dup, x->fd, x->ino, &x->s);
		close(dup);
		if (rc < 0 && rc != -EPROTONOSUPPORT)
			return rc;
		x->ok = rc == 0;
		if ((size_t)x->fd < t->nseen && t->seen[x->fd])
			drop_listener(t, x->fd);
		if (x->ok && x->s.listening && (rc = add_listener(t, &x->s)) < 0)
			return rc;
		if ((rc = seen_set(t, x->fd, x->ino)) < 0)
			return rc;
	}
	return 0;
}

/* The checks before t's first scan: the library, the undo record. */
static int first_checks(struct fixer *f, struct target *t)
{
	int rc = nf_fix_proc_has_library(&t->p);

	t->checked = 1;
	if (rc == 1) {
		nf_cli_warnx(0,
			"pid %d runs under libnaglefix.so (its /proc/%d/maps): left to the "
			"library and its own policy; restart it to change that",
			(int)t->p.pid, (int)t->p.pid);
		t->live = 0;
		return 0;
	}
	if (rc < 0)
		return rc;
	if (!f->run.dry && (rc = nf_fix_record_writable(t->p.pid)) < 0) {
		char why[160];

		if (nf_fix_is_mfile(rc))
			return rc;
		nf_cli_warnx(0,
			"pid %d: nothing changed: cannot keep the undo record in %s: %s "
			"(NAGLEFIX_STATE_DIR names another directory)",
			(int)t->p.pid, nf_fix_state_dir(), nf_fix_state_dir_why(rc, why, sizeof(why)));
		nf_fix_worse(&f->run, NF_FIX_EXIT_PARTIAL);
		t->live = 0;
	}
	return 0;
}

/* One pass over t's descriptors: every socket not handled yet. */
static void scan(struct fixer *f, struct target *t)
{
	struct found_list l = { .t = t };
	int rc = 0;

	if (!t->checked && (rc = first_checks(f, t)) < 0)
		goto stop;
	if (!t->live)
		return;
	rc = nf_fix_proc_each_socket(&t->p, collect, &l);
	if (rc == 0)
		rc = identify_all(t, &l);
	for (size_t i = 0; rc == 0 && i < l.n; i++)
		if (l.v[i].ok) {
			t->ntcp++;
			rc = handle(f, t, &l.v[i].s);
		}
	free(l.v);
	if (rc == 0) {
		if (!t->scanned && !t->ntcp && f->run.follow && !t->grouped)
			nf_fix_say_no_tcp(&f->run, t->p.pid, NF_FIX_NOTCP_WAITING);
		t->scanned = 1;
		return;
	}
stop:
	say_stopped(f, t, rc);
}

/* --- the run -------------------------------------------------------------------- */

/* The process (Tgid) that the thread pid belongs to, or 0 if pid is no thread. */
static int thread_group(const char *pid)
{
	char path[64], line[128];
	FILE *fp;
	int tgid = 0;

	snprintf(path, sizeof(path), "/proc/%s/status", pid);
	fp = fopen(path, "re");
	if (!fp)
		return 0;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(fp);
	return tgid != atoi(pid) ? tgid : 0;
}

static int open_targets(struct fixer *f, struct target *ts, int n, char **pids)
{
	int live = 0, tgid;

	for (int i = 0; i < n; i++) {
		int rc = nf_fix_proc_open((pid_t)atoi(pids[i]), &ts[i].p);

		ts[i].grouped = i >= f->given;
		if (rc == 0) {
			nf_cgroup_name_of(ts[i].p.pid, ts[i].cgroup, sizeof(ts[i].cgroup));
			ts[i].live = 1;
			live++;
		} else if (rc == -ENOSYS) {
			nf_fix_say_nosys(&f->run);
		} else if (rc == -ESRCH && ts[i].grouped) {
			/* it left its cgroup since the cgroup was read */
		} else if (rc == -ESRCH) {
			nf_cli_warnx(0, "pid %s: no such process", pids[i]);
			nf_fix_worse(&f->run, NF_FIX_EXIT_GONE);
		} else if ((rc == -EINVAL || rc == -ENOENT) && (tgid = thread_group(pids[i])) > 0) {
			nf_cli_warnx(0,
				"pid %s is a thread of process %d, not a process: give %d",
				pids[i], tgid, tgid);
			nf_fix_worse(&f->run, NF_FIX_EXIT_PARTIAL);
		} else if (nf_fix_is_mfile(rc)) {
			nf_fix_say_mfile(&f->run, (pid_t)atoi(pids[i]), "pidfd_open");
		} else {
			nf_cli_warnx(0, "pid %s: pidfd_open: %s", pids[i], strerror(-rc));
			nf_fix_worse(&f->run, NF_FIX_EXIT_PARTIAL);
		}
		if (rc < 0)
			ts[i].p.pidfd = -1;
	}
	return live;
}

/* Waits up to ms for a process to end or a signal. */
static void follow_wait(struct fixer *f, struct target *ts, int n, int ms,
			const sigset_t *wait_mask)
{
	struct pollfd pfd[n];
	struct timespec ts_int = { ms / 1000, (ms % 1000) * 1000000L };
	int m = 0;

	for (int i = 0; i < n; i++)
		if (ts[i].live)
			pfd[m++] = (struct pollfd){ .fd = ts[i].p.pidfd, .events = POLLIN };
	if (ppoll(pfd, (nfds_t)m, &ts_int, wait_mask) <= 0)
		return;
	for (int i = 0; i < n; i++)
		if (ts[i].live && nf_fix_proc_ended(&ts[i].p))
			follow_end(f, &ts[i], 1);
}

static int any_live(const struct target *ts, int n)
{
	for (int i = 0; i < n; i++)
		if (ts[i].live)
			return 1;
	return 0;
}

static void run_follow(struct fixer *f, struct target *ts, int n)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block, old;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigdelset(&old, SIGINT);
	sigdelset(&old, SIGTERM);
	while (!stop_signal && any_live(ts, n)) {
		for (int i = 0; i < n && !stop_signal; i++)
			if (ts[i].live)
				scan(f, &ts[i]);
		if (!stop_signal && any_live(ts, n))
			follow_wait(f, ts, n, f->run.interval_ms, &old);
	}
	if (!stop_signal)
		return;
	nf_cli_warnx(0, "%s: stopped following (%zu socket%s set)",
		strsignal(stop_signal), f->nset, f->nset == 1 ? "" : "s");
	for (int i = 0; i < n; i++)
		if (ts[i].live)
			follow_end(f, &ts[i], 0);
}

/* Says so when no process of the cgroups given held a TCP socket (one of
 * them holding none is no failure: a service's helpers, a shell). */
static void groups_no_tcp(struct fixer *f, const struct target *ts, int n)
{
	size_t ntcp = 0;

	if (f->given >= n)
		return;
	for (int i = f->given; i < n; i++)
		ntcp += ts[i].ntcp;
	if (ntcp)
		return;
	nf_cli_warnx(0, "none of the %d process%s of the cgroups given holds a TCP "
		"socket: nothing to fix", n - f->given, n - f->given == 1 ? "" : "es");
	nf_fix_worse(&f->run, NF_FIX_EXIT_NOTCP);
}

static int run_fix(struct fixer *f, int n, char **pids)
{
	struct target *ts = calloc((size_t)n, sizeof(*ts));

	f->pol.left = calloc(f->pol.pol.nrules + 1, 1);
	if (!ts || !f->pol.left) {
		nf_cli_warnx(0, "out of memory");
		free(ts);
		return NF_FIX_EXIT_PARTIAL;
	}
	open_targets(f, ts, n, pids);
	if (f->run.follow) {
		run_follow(f, ts, n);
	} else {
		for (int i = 0; i < n; i++)
			if (ts[i].live)
				scan(f, &ts[i]);
		for (int i = 0; i < n; i++)
			if (ts[i].live && ts[i].scanned && !ts[i].ntcp && !ts[i].grouped)
				nf_fix_say_no_tcp(&f->run, ts[i].p.pid, NF_FIX_NOTCP_SCANNED);
	}
	groups_no_tcp(f, ts, n);
	for (int i = 0; i < n; i++) {
		nf_fix_proc_close(&ts[i].p);
		free(ts[i].seen);
		free(ts[i].ls);
	}
	free(ts);
	free(f->pol.left);
	if (!f->run.dry)
		nf_fix_record_sweep(); /* --follow's own too: their processes have ended */
	return f->run.status;
}

/* --- options -------------------------------------------------------------------- */

/* The PIDs given and those of the cgroups g[0..ng) into *v. 0, or the
 * exit status when there is none to handle (each cgroup's failure said). */
static int targets(struct fixer *f, int n, char **pids, const struct nf_fix_group *g, int ng,
		   struct nf_fix_pidv *v)
{
	int rc = nf_fix_pidv_add(v, n, pids);

	if (rc == 0)
		rc = nf_fix_pidv_groups(&f->run, g, ng, v);
	if (rc < 0) {
		nf_cli_warnx(0, "out of memory");
		return NF_FIX_EXIT_PARTIAL;
	}
	return v->n ? 0 : f->run.status;
}

/* nf_fix_apply's work, its messages fix's. */
static int apply(const struct nf_fix_req *req)
{
	struct fixer f = { .run = { .dry = req->dry, .json = req->json, .follow = req->follow,
				    .interval_ms = req->interval_ms ? req->interval_ms
								    : FOLLOW_INTERVAL_MS },
			   .marks = { .fd = req->marks_fd } };
	struct nf_fix_pidv v = { 0 };
	int rc;

	if ((rc = nf_fix_check_pids(req->npids, req->pids, req->ngroups)) != 0)
		return rc;
	if (req->undo && (req->conf || req->mode || req->follow))
		return nf_fix_usage_err("--undo takes no -c, -m or --follow", NULL);
	if (!req->undo && (rc = nf_fix_policy_load(&f.pol, req->conf, req->mode)) != 0)
		return rc;
	rc = targets(&f, req->npids, req->pids, req->groups, req->ngroups, &v);
	f.given = v.given;
	if (rc == 0 && req->undo)
		rc = nf_fix_pidv_recorded(&f.run, &v);
	if (rc == 0)
		rc = req->undo ? nf_fix_undo(&f.run, v.n, v.v) : run_fix(&f, v.n, v.v);
	if (!req->undo)
		nf_policy_free(&f.pol.pol);
	nf_fix_pidv_free(&v);
	return rc;
}

int nf_fix_apply(const struct nf_fix_req *req)
{
	const char *was = nf_cli_set_cmd("fix");
	int rc = apply(req);

	nf_cli_set_cmd(was);
	return rc;
}

int nf_cli_fix(int argc, char **argv)
{
	struct nf_fix_group g[argc]; /* --cgroup and --unit */
	struct nf_fix_req req = { .groups = g };
	char *end;
	int opt;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:c:m:nfuhi:", nf_fix_longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': req.conf = optarg; break;
		case 'm': req.mode = optarg; break;
		case 'n': req.dry = 1; break;
		case 'f': req.follow = 1; break;
		case 'j': req.json = 1; break;
		case 'u': req.undo = 1; break;
		case 'i':
			req.interval_ms = (int)strtol(optarg, &end, 10);
			if (*end || end == optarg || req.interval_ms < 1 || req.interval_ms > FOLLOW_INTERVAL_MAX)
				return nf_fix_usage_err("--interval takes milliseconds, 1 to 60000:", optarg);
			break;
		case 'G': case 'U': g[req.ngroups++] = (struct nf_fix_group){ optarg, opt == 'U' }; break;
		case 'h': fputs(nf_cli_usage_fix, stdout); return 0;
		default: return nf_cli_bad_option("fix", opt, argc, argv, nf_fix_longopts);
		}
	}
	req.pids = argv + optind;
	req.npids = argc - optind;
	return nf_fix_apply(&req);
}
