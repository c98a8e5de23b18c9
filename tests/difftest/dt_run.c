/* dt_run: the driver of the differential test. For a seed (or an op list
 * file) it runs dt_prog without the library and then with it under each
 * action asked for, each run against its own fresh peer, and compares.
 *
 *   dt_run -p DT_PROG -l LIBNAGLEFIX -w WORKDIR [-a "coalesce pass ..."]
 *          [-S] [-v] (-s SEED | -f OPSFILE | -L)
 *
 * -L: many in one process, each line of standard input "SEED ACTION..." or
 * "OPSFILE ACTION..." (a name holding a '/'), as -s or -f with -a would.
 *
 * Prints "PASS <seed> <action>" or "FAIL <seed> <action>: <first difference>"
 * per action, a failing seed's op list, and (with -S) the list shrunk by delta
 * debugging to one that still fails the same way, saved as
 * WORKDIR/min-<seed>-<action>.ops with the command that replays it.
 * Exit status: 0 if all passed, 1 if one failed, 2 on a usage error.
 *
 * What fails (each check below names the rule that lets a difference pass):
 *  - a hang (the program runs past RUN_LIMIT_MS of the time its lane had
 *    a CPU: wait_for()) or a death by a signal;
 *  - in each run, the peer's bytes of a connection differ from the
 *    concatenation of what the program was told it wrote (a prefix is enough
 *    where the peer closed or reset early); inside a thread block the threads'
 *    streams may interleave, each in its own order;
 *  - a read returning bytes the peer never sent;
 *  - a different exit status;
 *  - a different return value, errno, count or SIGPIPE of any op, unless
 *    classify() calls it timing;
 *  - different byte streams for a connection where no op differed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dt.h"
#include "dt_clock.h"
#include "dt_exp.h"
#include "dt_gen.h"
#include "dt_peer.h"

#define RUN_LIMIT_MS 2500
#define PEER_LIMIT_MS 4000

extern char **environ;

static const char *prog, *lib, *work;
static int verbose;

struct tline {
	int seen;
	long ret, acc;
	int err, sp, nb, sig, bad;
};

struct run {
	int hang, status, peer_hang;
	long hang_wall_ms; /* a hang's wall time */
	struct tline t[DT_MAXOPS];
	unsigned char *peer[DT_MAXCONN];
	long npeer[DT_MAXCONN];
	char end[DT_MAXCONN][32];
	long sent[DT_MAXCONN]; /* reply bytes the peer sent */
	unsigned char *exp;
	long nexp;
	char dir[4096];
};

static unsigned char *slurp(const char *path, long *n)
{
	int fd = open(path, O_RDONLY);
	struct stat sb;
	unsigned char *b;
	*n = 0;
	if (fd < 0 || fstat(fd, &sb) < 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	b = malloc((size_t)sb.st_size + 1);
	while (*n < sb.st_size) {
		ssize_t r = read(fd, b + *n, (size_t)(sb.st_size - *n));
		if (r <= 0)
			break;
		*n += r;
	}
	b[*n] = 0;
	close(fd);
	return b;
}

static void free_run(struct run *r)
{
	for (int c = 0; c < DT_MAXCONN; c++)
		free(r->peer[c]);
	free(r->exp);
	memset(r, 0, sizeof *r);
}

/* Whether PID ended by now (then *ST is its wait status) or waiting on it
 * failed (*ST -1). */
static int ended(pid_t pid, int pfd, int *st)
{
	struct pollfd p = { pfd, POLLIN, 0 };
	pid_t r;
	if (pfd >= 0 && poll(&p, 1, 0) == 0)
		return 0;
	while ((r = waitpid(pid, st, pfd >= 0 ? 0 : WNOHANG)) < 0 && errno == EINTR)
		;
	if (r < 0)
		*st = -1;
	return r != 0;
}

/* Waits for PID up to MS milliseconds of its run's time (dt_clock.h: wall
 * time less the time the run was kept off a CPU; the run: the N process
 * groups PGRP), and never past 10 x MS of wall time. Its wait status, or -1
 * on timeout (*WALL_MS, if not NULL: the wall time waited). Without a pidfd
 * it looks every 50 ms. */
static int wait_for(pid_t pid, const pid_t *pgrp, int n, int ms, long *wall_ms)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0), st = -1, done;
	struct pollfd p = { pfd, POLLIN, 0 };
	long long limit = ms * 1000000LL, wall = 0, used = 0;
	struct dt_clock c;
	dt_clock_start(&c, pgrp, n);
	while (!(done = ended(pid, pfd, &st)) && used < limit && wall < 10 * limit) {
		long long left = (limit - used) / 1000000 + 1, t0 = c.last;
		poll(&p, pfd >= 0, left < 50 ? (int)left : 50);
		used = dt_clock_tick(&c);
		wall += c.last - t0;
	}
	if (pfd >= 0)
		close(pfd);
	if (wall_ms)
		*wall_ms = (long)(wall / 1000000);
	return done ? st : -1;
}

static char *envdup(const char *k, const char *v)
{
	char *s = malloc(strlen(k) + strlen(v) + 2);
	sprintf(s, "%s=%s", k, v);
	return s;
}

/* The environment of a run: ours without LD_PRELOAD and NAGLEFIX_*, plus the
 * library's settings for ACTION (NULL: the bare run). */
static char **make_env(const char *action, const struct dt_list *l, const char *dir)
{
	int n = 0, k = 0;
	char **e, path[4200];
	while (environ[n])
		n++;
	e = calloc((size_t)n + 6, sizeof *e);
	for (int i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) && strncmp(environ[i], "NAGLEFIX_", 9))
			e[k++] = environ[i];
	if (!action)
		return e;
	e[k++] = envdup("LD_PRELOAD", lib);
	e[k++] = envdup("NAGLEFIX_MODE", action);
	snprintf(path, sizeof path, "%s/nf.log", dir);
	e[k++] = envdup("NAGLEFIX_LOG", path);
	if (!strcmp(action, "coalesce")) {
		FILE *f;
		snprintf(path, sizeof path, "%s/nf.conf", dir);
		f = fopen(path, "w");
		fprintf(f, "default coalesce buffer=%s flush=%s start=%s\n", l->buffer, l->flush,
			l->start);
		fclose(f);
		e[k++] = envdup("NAGLEFIX_CONF", path);
	} else {
		e[k++] = envdup("NAGLEFIX_CONF", "none");
	}
	return e;
}

static void parse_trace(struct run *r)
{
	char path[4200], *p;
	long n;
	unsigned char *b;
	snprintf(path, sizeof path, "%s/trace", r->dir);
	b = slurp(path, &n);
	if (!b)
		return;
	for (p = (char *)b; *p;) {
		int id;
		char kind[32];
		struct tline t = { 1, 0, 0, 0, 0, 0, 0, 0 };
		if (sscanf(p, "%d %31s %ld %d %ld %d %d %d %d", &id, kind, &t.ret, &t.err, &t.acc,
			   &t.sp, &t.nb, &t.sig, &t.bad) == 9 && id >= 0 && id < DT_MAXOPS)
			r->t[id] = t;
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
	free(b);
}

static void load_run(const struct dt_list *l, const char *dir, struct run *r);

/* Runs L once (ACTION NULL: without the library) in directory DIR. */
static int run_once(const struct dt_list *l, const char *action, const char *dir, struct run *r)
{
	struct dt_peer pe;
	char path[4200], ports[64] = "", **env;
	pid_t peer, pid;
	sigset_t usr1, old;
	FILE *f;

	memset(r, 0, sizeof *r);
	snprintf(r->dir, sizeof r->dir, "%s", dir);
	mkdir(dir, 0755);
	snprintf(path, sizeof path, "%s/ops", dir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	dt_print_list(f, l);
	fclose(f);
	for (int c = 0; c < DT_MAXCONN; c++) {
		snprintf(path, sizeof path, "%s/peer.%d", dir, c);
		unlink(path);
	}
	if (dt_peer_listen(&pe, l) < 0) {
		perror("dt_run: listen");
		return -1;
	}
	/* a port to connect to, or A<fd>: the listener to accept from, which the
	 * program inherits on descriptor 200+C */
	for (int c = 0; c < l->nconn; c++)
		snprintf(ports + strlen(ports), sizeof ports - strlen(ports), l->conn[c].accepted ? "%sA%d" : "%s%d",
			 c ? "," : "", l->conn[c].accepted ? 200 + c : pe.port[c]);
	/* SIGUSR1 (the program is gone) stays blocked until the peer waits for it:
	 * a fast program must not kill a peer that has not set its handler yet */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &old);
	peer = fork();
	if (peer == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(0); /* dt_run died before the prctl */
		setpgid(0, 0); /* its own group: wait_for() reads its delays */
		dt_peer_serve(&pe, dir);
		_exit(0);
	}
	setpgid(peer, peer); /* the group before the peer runs (or it did) */
	env = make_env(action, l, dir);
	pid = fork();
	if (pid == 0) {
		int fd;
		sigprocmask(SIG_SETMASK, &old, NULL);
		setpgid(0, 0);
		snprintf(path, sizeof path, "%s/out", dir);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		dup2(fd, 2);
		fd = open("/dev/null", O_RDONLY);
		dup2(fd, 0);
		for (int c = 0; c < l->nconn; c++)
			if (l->conn[c].accepted)
				dup2(pe.lfd[c], 200 + c);
		close_range(3, 199, 0);
		closefrom(200 + DT_MAXCONN);
		snprintf(path, sizeof path, "%s/ops", dir);
		execve(prog, (char *[]){ (char *)prog, path, (char *)dir, ports, NULL }, env);
		_exit(127);
	}
	setpgid(pid, pid); /* the group before the program runs (or it did) */
	sigprocmask(SIG_SETMASK, &old, NULL);
	for (int c = 0; c < l->nconn; c++)
		close(pe.lfd[c]);
	if (pe.filler >= 0)
		close(pe.filler);
	for (int i = 0; env[i]; i++)
		if (!strncmp(env[i], "LD_PRELOAD=", 11) || !strncmp(env[i], "NAGLEFIX_", 9))
			free(env[i]);
	free(env);
	r->status = wait_for(pid, (pid_t[]){ pid, peer }, 2, RUN_LIMIT_MS, &r->hang_wall_ms);
	if (r->status == -1) {
		r->hang = 1;
		kill(-pid, SIGKILL);
		wait_for(pid, NULL, 0, 1000, NULL);
	}
	kill(-pid, SIGKILL); /* anything it left behind */
	kill(peer, SIGUSR1);
	if (wait_for(peer, &peer, 1, PEER_LIMIT_MS, NULL) == -1) {
		r->peer_hang = 1;
		kill(peer, SIGKILL);
		wait_for(peer, NULL, 0, 1000, NULL);
	}
	load_run(l, dir, r);
	return 0;
}

/* Reads what a run left in DIR into R (all but its status). */
static void load_run(const struct dt_list *l, const char *dir, struct run *r)
{
	char path[4200];
	snprintf(r->dir, sizeof r->dir, "%s", dir);
	for (int c = 0; c < l->nconn; c++) {
		long n;
		unsigned char *e;
		snprintf(path, sizeof path, "%s/peer.%d", dir, c);
		r->peer[c] = slurp(path, &r->npeer[c]);
		snprintf(path, sizeof path, "%s/peer.%d.end", dir, c);
		e = slurp(path, &n);
		if (!e || sscanf((char *)e, "%31s %ld", r->end[c], &r->sent[c]) != 2)
			snprintf(r->end[c], sizeof r->end[c], "?");
		free(e);
	}
	snprintf(path, sizeof path, "%s/exp", dir);
	r->exp = slurp(path, &r->nexp);
	parse_trace(r);
}

static int lossy(const struct dt_list *l, int c)
{
	return l->conn[c].beh == B_CLOSE || l->conn[c].beh == B_RST;
}

/* Checks connection C's received bytes in run R against what its program was
 * told it wrote. Writes the first mismatch to WHY; 0 if none. */
/* Whether the program left replies of the peer on connection C unread: closing
 * it then sends RST instead of FIN, which drops what the kernel had not
 * delivered yet (RFC 2525 2.17), without or with the library, so the peer may
 * get only a prefix of the stream. (The peer cannot tell reliably: after its
 * own send met the reset, its recv says end of file.) */
static int reset_unread(const struct dt_list *l, const struct run *r, int c)
{
	long rd = 0;
	for (int i = 0; i < l->nops; i++) {
		const struct dt_op *o = &l->op[i];
		if (o->kind == K_READ && o->c == c && r->t[o->id].seen && r->t[o->id].ret > 0)
			rd += r->t[o->id].ret;
	}
	return r->sent[c] > rd;
}

static int check_stream(const struct dt_list *l, struct run *r, int c, char *why, size_t wl)
{
	const unsigned char *got = r->peer[c];
	long ngot = r->npeer[c], pos = 0, off = 0;
	/* the peer closes or resets early, or never accepts: a prefix */
	int allow_short = lossy(l, c) || l->conn[c].beh == B_BACKLOG || reset_unread(l, r, c);

	if (!got && l->conn[c].beh != B_BACKLOG) {
		snprintf(why, wl, "no peer record for connection %d (peer %s)", c, r->peer_hang ? "hung" : "died");
		return 1;
	}
	while (off + (long)sizeof(struct dt_exp) <= r->nexp) {
		struct dt_exp h;
		long gend = off, glen = 0, wlen[DT_WRITERS] = { 0 }, wpos[DT_WRITERS] = { 0 };
		memcpy(&h, r->exp + off, sizeof h);
		if (h.len < 0) /* a stdio error: what left is unknown; stop checking here */
			return 0;
		if (h.c != c) {
			off += (long)sizeof h + h.len;
			continue;
		}
		if (h.blk < 0) {
			long n = h.len;
			const unsigned char *e = r->exp + off + sizeof h;
			for (long i = 0; i < n; i++) {
				if (pos + i >= ngot) {
					if (allow_short)
						return 0;
					snprintf(why, wl, "connection %d: peer got %ld bytes, program wrote more "
						 "(lost from op %d offset %ld on)", c, ngot, h.id, i);
					return 1;
				}
				if (got[pos + i] != e[i]) {
					snprintf(why, wl, "connection %d byte %ld: expected op %d offset %ld "
						 "(0x%02x), got 0x%02x", c, pos + i, h.id, i, e[i], got[pos + i]);
					return 1;
				}
			}
			pos += n;
			off += (long)sizeof h + h.len;
			continue;
		}
		/* a thread block: gather each writer's stream of this block */
		{
			int blk = h.blk;
			unsigned char *ws[DT_WRITERS] = { 0 };
			for (gend = off; gend + (long)sizeof h <= r->nexp;) {
				struct dt_exp g;
				memcpy(&g, r->exp + gend, sizeof g);
				if (g.blk != blk && g.c == c)
					break;
				if (g.len < 0)
					break;
				if (g.c == c) {
					int w = g.w & 3;
					ws[w] = realloc(ws[w], (size_t)(wlen[w] + g.len + 1));
					memcpy(ws[w] + wlen[w], r->exp + gend + sizeof g, (size_t)g.len);
					wlen[w] += g.len;
					glen += g.len;
				}
				gend += (long)sizeof g + g.len;
			}
			for (long i = 0; i < glen; i++) {
				int w;
				unsigned char b;
				if (pos + i >= ngot) {
					if (allow_short)
						break;
					snprintf(why, wl, "connection %d: peer got %ld bytes, program's threads wrote more",
						 c, ngot);
					goto bad;
				}
				b = got[pos + i];
				w = b >= 0xc0 ? 2 : b >= 0x80 ? 1 : b >= 0x40 ? 0 : 3;
				if (wpos[w] >= wlen[w] || ws[w][wpos[w]] != b) {
					snprintf(why, wl, "connection %d byte %ld (thread block %d): writer %d's "
						 "stream broken at its byte %ld", c, pos + i, blk, w, wpos[w]);
					goto bad;
				}
				wpos[w]++;
			}
			for (int w = 0; w < DT_WRITERS; w++)
				free(ws[w]);
			pos += glen;
			off = gend;
			continue;
bad:
			for (int w = 0; w < DT_WRITERS; w++)
				free(ws[w]);
			return 1;
		}
	}
	if (pos < ngot) {
		snprintf(why, wl, "connection %d: peer got %ld bytes, the program was told it wrote %ld "
			 "(extra bytes from 0x%02x on)", c, ngot, pos, got[pos]);
		return 1;
	}
	return 0;
}

static int ok_or(long ret, int err, int e1, int e2, int e3)
{
	return ret >= 0 || err == e1 || err == e2 || err == e3;
}

/* Whether op I is in a thread block where another thread does an op on the
 * same connection that SIBLING(kind) accepts. */
static int races_sibling(const struct dt_list *l, int i, int (*sibling)(int kind))
{
	for (int p = i - 1; p >= 0; p--) {
		if (l->op[p].kind != K_THREADS)
			continue;
		if (p + l->op[p].n < i)
			return 0;
		for (int j = p + 1; j <= p + l->op[p].n && j < l->nops; j++)
			if (sibling(l->op[j].kind) && l->op[j].c == l->op[i].c && l->op[j].t != l->op[i].t)
				return 1;
		return 0;
	}
	return 0;
}

/* Shuts down or closes (the generator makes none in a thread block;
 * hand-written lists do). */
static int ends_conn(int kind)
{
	return kind == K_SHUT || kind == K_CLOSE;
}

/* Whether a difference between the bare (A) and library (B) results of op O
 * is timing: 1 if it is, 0 if it is a real difference. Every rule says why. */

/* Whether a read saying end of file in one run (EOF: its tline) and data in
 * the other (DATA) is the same stream met at another op: the EOF run had
 * already read, by earlier ops on the connection, at least what the other
 * had read plus what it reads now. read_eof, read_data: those earlier
 * totals. */
static int eof_read_earlier(const struct tline *eof, const struct tline *data, long read_eof,
			    long read_data)
{
	return eof->ret == 0 && data->ret > 0 && read_eof >= read_data + data->ret;
}

static int classify(const struct dt_list *l, const struct dt_op *o, const struct tline *a,
		    const struct tline *b, int shut_wr, long read_a, long read_b)
{
	int c = o->c < l->nconn ? o->c : 0, k = o->kind;

	/* Another thread of the program shuts the connection down while this send
	 * may be blocked: how much it had taken by then (a partial count, or EPIPE
	 * if nothing) is a race of the program's own threads. The stream check
	 * still holds it to the count it returned. */
	if (dt_is_send(k) && races_sibling(l, (int)(o - l->op), ends_conn) && ok_or(a->ret, a->err, EPIPE, 0, 0) &&
	    ok_or(b->ret, b->err, EPIPE, 0, 0) && a->acc <= o->n && b->acc <= o->n)
		return 1;
	/* A connection's pending error (ECONNRESET after a reset, or after the
	 * program's shutdown of a connect still in progress) is returned once, to
	 * the first call that meets it; later sends say EPIPE (and raise SIGPIPE).
	 * When threads of the program send on that connection at once, which one
	 * is first is the race of the program's own threads. */
	if (dt_is_send(k) && races_sibling(l, (int)(o - l->op), dt_is_send) && a->ret < 0 && b->ret < 0 &&
	    ok_or(-1, a->err, EPIPE, ECONNRESET, 0) && ok_or(-1, b->err, EPIPE, ECONNRESET, 0))
		return 1;

	/* The program shut down reading: a read returns what was queued or 0, as
	 * the peer's replies had arrived or not. */
	if ((shut_wr & 2) && dt_is_read(k) && ok_or(a->ret, a->err, EAGAIN, ECONNRESET, 0) &&
	    ok_or(b->ret, b->err, EAGAIN, ECONNRESET, 0))
		return 1;
	/* The program shut down writing on this connection earlier: the peer sees
	 * end of file and closes, and whether its FIN has arrived yet is timing:
	 * a read says 0 or EAGAIN, shutdown says 0 or ENOTCONN (a socket whose both
	 * FINs are through is in CLOSE). Replies the peer still sends to a socket
	 * shut for reading make the kernel answer RST, so a send fails with EPIPE
	 * (and SIGPIPE) or ECONNRESET, as that RST is there or not. Success must
	 * still agree. */
	if (shut_wr & 1) {
		if (dt_is_read(k) && ok_or(a->ret, a->err, EAGAIN, ECONNRESET, 0) &&
		    ok_or(b->ret, b->err, EAGAIN, ECONNRESET, 0) && a->ret <= 0 && b->ret <= 0)
			return 1;
		if (k == K_SHUT && ok_or(a->ret, a->err, ENOTCONN, 0, 0) && ok_or(b->ret, b->err, ENOTCONN, 0, 0))
			return 1;
		if (dt_is_send(k) && a->ret < 0 && b->ret < 0 && ok_or(-1, a->err, EPIPE, ECONNRESET, 0) &&
		    ok_or(-1, b->err, EPIPE, ECONNRESET, 0))
			return 1;
	}

	/* Waits: readiness (POLLIN from the peer's replies or reset, POLLOUT from
	 * room in the send buffer, which depends on how fast the peer reads and on
	 * what the library still holds) is the peer's timing; a wait that did not
	 * fail can report any count. Errors (EBADF, EINVAL) must agree. */
	if (dt_is_wait(k) && a->ret >= 0 && b->ret >= 0)
		return 1;
	/* An interval timer was armed: a blocking call may be interrupted (EINTR, or
	 * a partial count) at any point, and the library's waits for earlier bytes
	 * go on through signals (README: as with SA_RESTART). */
	if ((a->sig || b->sig) && ok_or(a->ret, a->err, EINTR, a->nb ? EAGAIN : 0, 0) &&
	    ok_or(b->ret, b->err, EINTR, b->nb ? EAGAIN : 0, 0) && (a->acc <= o->n && b->acc <= o->n))
		return 1;
	/* ... and a signal pending when a call starts can end it with EINTR before
	 * it meets the error it would have returned (EPIPE on a shut socket). */
	if ((a->sig || b->sig) && a->ret < 0 && b->ret < 0 && (a->err == EINTR || b->err == EINTR))
		return 1;
	/* Reads and peeks never block here: whether the peer's reply had arrived
	 * (data, how much, or EAGAIN) is the peer's timing. Bytes are checked for
	 * content separately (bad). End of file and other errors must agree, except
	 * on connections the peer closes or resets: when its FIN/RST lands is timing. */
	if (dt_is_read(k)) {
		if (ok_or(a->ret, a->err, EAGAIN, 0, 0) && ok_or(b->ret, b->err, EAGAIN, 0, 0) &&
		    (a->ret != 0 || b->ret != 0) && !(a->ret == 0 || b->ret == 0))
			return 1;
		/* ... and end of file where the other run still reads the peer's
		 * last bytes: one run took them at an earlier read (seeds 51874,
		 * 52241: a reply that came before or after the held request
		 * left). The stream check holds both to the same bytes. */
		if (eof_read_earlier(a, b, read_a, read_b) || eof_read_earlier(b, a, read_b, read_a))
			return 1;
		if (lossy(l, c) && ok_or(a->ret, a->err, EAGAIN, ECONNRESET, EPIPE) &&
		    ok_or(b->ret, b->err, EAGAIN, ECONNRESET, EPIPE))
			return 1;
		return 0;
	}
	/* The peer closes or resets this connection after K bytes: whether a send
	 * or a socket call met its FIN/RST yet (success, EPIPE, ECONNRESET,
	 * ENOTCONN, with or without SIGPIPE) is timing; and the README documents
	 * that an error met by a background flush is returned one call later. */
	if (lossy(l, c) && ok_or(a->ret, a->err, EPIPE, ECONNRESET, ENOTCONN) &&
	    ok_or(b->ret, b->err, EPIPE, ECONNRESET, ENOTCONN) && (a->ret < 0 || a->acc <= o->n) &&
	    (b->ret < 0 || b->acc <= o->n))
		return 1;
	/* ... and a send of a bad buffer there: the kernel looks at the
	 * connection's error (EPIPE, ECONNRESET) before it reads the buffer
	 * (EFAULT), so which one it says is whether the FIN/RST has landed. */
	if (lossy(l, c) && dt_is_send(k) && a->ret < 0 && b->ret < 0 &&
	    (a->err == EFAULT || b->err == EFAULT) && ok_or(-1, a->err, EFAULT, EPIPE, ECONNRESET) &&
	    ok_or(-1, b->err, EFAULT, EPIPE, ECONNRESET))
		return 1;
	/* ... and a child shell writing on such a connection fails ("I/O error",
	 * reported as -1 with no errno) or not, as the peer's FIN/RST is there or
	 * not; what it wrote is then unknown and the stream check stops there. */
	if (k == K_SPAWN && lossy(l, c) && a->err == 0 && b->err == 0)
		return 1;
	if (lossy(l, c) && ok_or(a->ret, a->err, EPIPE, ECONNRESET, EAGAIN) &&
	    ok_or(b->ret, b->err, EPIPE, ECONNRESET, EAGAIN) && a->nb && b->nb)
		return 1;
	/* A send that could not block (O_NONBLOCK or MSG_DONTWAIT): EAGAIN or a
	 * partial count depends on how full the socket's send buffer was, which is
	 * the peer's reading speed (and, with coalesce, what is still held). Not on
	 * a connect that is still pending (the backlog peer): the kernel's EAGAIN
	 * there is certain, since the connect cannot complete during the run. */
	if (dt_is_send(k) && a->nb && b->nb && l->conn[c].beh != B_BACKLOG &&
	    ok_or(a->ret, a->err, EAGAIN, 0, 0) && ok_or(b->ret, b->err, EAGAIN, 0, 0) &&
	    a->sp == b->sp && a->acc <= o->n && b->acc <= o->n)
		return 1;
	return 0;
}

static void describe(char *s, size_t n, const struct tline *t)
{
	if (!t->seen)
		snprintf(s, n, "(never ran)");
	else
		snprintf(s, n, "ret %ld errno %d (%s) acc %ld sigpipe %d%s", t->ret, t->err,
			 t->err ? strerrorname_np(t->err) : "-", t->acc, t->sp, t->bad ? " BAD-DATA" : "");
}

static const char *status_str(const struct run *r, char *buf, size_t n)
{
	if (r->hang)
		snprintf(buf, n, "hang (over %d ms; %ld ms of wall time)", RUN_LIMIT_MS, r->hang_wall_ms);
	else if (WIFSIGNALED(r->status))
		snprintf(buf, n, "killed by %s", sigabbrev_np(WTERMSIG(r->status)) ?: "?");
	else
		snprintf(buf, n, "exit %d", WEXITSTATUS(r->status));
	return buf;
}

/* Compares bare run A with library run B of L. 0 if they agree; else writes
 * the first difference to WHY (its first word is the failure's class, which
 * shrinking keeps). */
static int compare(const struct dt_list *l, struct run *a, struct run *b, char *why, size_t wl)
{
	char s1[200], s2[200];
	int timing[DT_MAXCONN] = { 0 };
	struct run *rs[2] = { a, b };

	if (b->hang || (WIFSIGNALED(b->status))) {
		int last = -1, nx = -1;
		for (int i = 0; i < l->nops; i++)
			if (b->t[l->op[i].id].seen)
				last = i;
			else if (nx < 0 && last >= 0)
				nx = i;
		snprintf(why, wl, "%s: library run %s (bare: %s); last op recorded: %s%s%s", b->hang ? "hang" : "crash",
			 status_str(b, s1, sizeof s1), status_str(a, s2, sizeof s2),
			 last < 0 ? "none" : dt_kind_names[l->op[last].kind],
			 nx >= 0 ? ", first missing: " : "", nx >= 0 ? dt_kind_names[l->op[nx].kind] : "");
		return 1;
	}
	if (a->hang || WIFSIGNALED(a->status) || a->peer_hang) {
		snprintf(why, wl, "bare-run: the run without the library went wrong (%s%s): the test's fault",
			 status_str(a, s1, sizeof s1), a->peer_hang ? ", peer hung" : "");
		return 1;
	}
	for (int i = 0; i < l->nops; i++) {
		const struct dt_op *o = &l->op[i];
		for (int j = 0; j < 2; j++)
			if (rs[j]->t[o->id].bad) {
				snprintf(why, wl, "bad-read: op %d %s (%s run) read bytes the peer never sent",
					 o->id, dt_kind_names[o->kind], j ? "library" : "bare");
				return 1;
			}
	}
	for (int j = 0; j < 2; j++)
		for (int c = 0; c < l->nconn; c++)
			if (check_stream(l, rs[j], c, s1, sizeof s1)) {
				snprintf(why, wl, "stream: %s run: %s", j ? "library" : "bare", s1);
				if (!j)
					snprintf(why, wl, "bare-run: stream check failed without the library: %s", s1);
				return 1;
			}
	if (a->status != b->status) {
		snprintf(why, wl, "status: exit status differs: bare %s, library %s",
			 status_str(a, s1, sizeof s1), status_str(b, s2, sizeof s2));
		return 1;
	}
	if (b->peer_hang) {
		snprintf(why, wl, "hang: the peer did not finish in the library run");
		return 1;
	}
	int shut_wr[DT_MAXCONN] = { 0 };
	long rd[2][DT_MAXCONN] = { { 0 } }; /* bytes read by earlier ops, per run */
	for (int i = 0; i < l->nops; i++) {
		const struct dt_op *o = &l->op[i];
		const struct tline *x = &a->t[o->id], *y = &b->t[o->id];
		int sw = o->c < DT_MAXCONN ? shut_wr[o->c] : 0, c = o->c < DT_MAXCONN ? o->c : 0;
		long ra = rd[0][c], rb = rd[1][c];

		if (o->kind == K_READ) {
			rd[0][c] += x->ret > 0 ? x->ret : 0;
			rd[1][c] += y->ret > 0 ? y->ret : 0;
		}
		if (o->kind == K_SHUT && o->c < DT_MAXCONN) /* bit 0: SHUT_WR, bit 1: SHUT_RD */
			shut_wr[o->c] |= o->a == 0 ? 2 : o->a == 1 ? 1 : 3;
		if (x->seen != y->seen) {
			describe(s1, sizeof s1, x);
			describe(s2, sizeof s2, y);
			snprintf(why, wl, "result: op %d %s: bare %s, library %s", o->id,
				 dt_kind_names[o->kind], s1, s2);
			return 1;
		}
		if (x->ret == y->ret && x->err == y->err && x->acc == y->acc && x->sp == y->sp)
			continue;
		if (classify(l, o, x, y, sw, ra, rb)) {
			if (o->c < DT_MAXCONN)
				timing[o->c] = 1;
			if (verbose) {
				describe(s1, sizeof s1, x);
				describe(s2, sizeof s2, y);
				fprintf(stderr, "  timing: op %d %s: bare %s, library %s\n", o->id,
					dt_kind_names[o->kind], s1, s2);
			}
			continue;
		}
		describe(s1, sizeof s1, x);
		describe(s2, sizeof s2, y);
		snprintf(why, wl, "result: op %d %s c%d: bare %s, library %s", o->id,
			 dt_kind_names[o->kind], o->c, s1, s2);
		return 1;
	}
	/* No op on the connection differed: then the streams must be the same
	 * bytes (thread blocks may interleave differently). */
	for (int c = 0; c < l->nconn; c++) {
		int threads = 0;
		for (int i = 0; i < l->nops; i++)
			threads |= l->op[i].kind == K_THREADS;
		long n = a->npeer[c];
		if (timing[c] || threads)
			continue;
		/* a reset with replies unread drops a timing-dependent tail: compare what
		 * both got */
		if (reset_unread(l, a, c) || reset_unread(l, b, c))
			n = a->npeer[c] < b->npeer[c] ? a->npeer[c] : b->npeer[c];
		else if (a->npeer[c] != b->npeer[c])
			n = -1;
		if (n < 0 || (n && memcmp(a->peer[c], b->peer[c], (size_t)n))) {
			snprintf(why, wl, "stream: connection %d: bare peer got %ld bytes, library %ld, different",
				 c, a->npeer[c], b->npeer[c]);
			return 1;
		}
	}
	return 0;
}

static char last_dir[4200];

/* Runs L bare and under ACTION; 1 and WHY if they differ. */
/* Runs L under ACTION and compares with the bare run *BARE, which it makes
 * first if *BARE is NULL (the caller frees it: the actions of a seed share
 * one bare run); 1 and WHY if they differ. */
static int trial(const struct dt_list *l, const char *action, const char *tag, char *why, size_t wl,
		 struct run **bare)
{
	struct run *b = calloc(1, sizeof *b);
	char d1[4200], d2[4200];
	int bad;
	snprintf(d1, sizeof d1, "%s/%s-bare", work, tag);
	snprintf(d2, sizeof d2, "%s/%s-%s", work, tag, action);
	if (!*bare) {
		*bare = calloc(1, sizeof **bare);
		if (run_once(l, NULL, d1, *bare) < 0)
			(*bare)->hang = -1;
	}
	if ((*bare)->hang < 0 || run_once(l, action, d2, b) < 0) {
		snprintf(why, wl, "setup: could not run");
		bad = 1;
	} else {
		bad = compare(l, *bare, b, why, wl);
	}
	snprintf(last_dir, sizeof last_dir, "%s", d2);
	free_run(b);
	free(b);
	return bad;
}

static void drop_run(struct run **r)
{
	if (*r) {
		free_run(*r);
		free(*r);
	}
	*r = NULL;
}

/* The list L with only the ops KEEP[i] set; block counts recomputed. */
static void subset(const struct dt_list *l, const int *keep, struct dt_list *out)
{
	*out = *l;
	out->nops = 0;
	for (int i = 0; i < l->nops; i++) {
		if (!keep[i])
			continue;
		out->op[out->nops] = l->op[i];
		if (l->op[i].kind == K_FORK || l->op[i].kind == K_THREADS) {
			int n = 0;
			for (int j = i + 1; j <= i + l->op[i].n && j < l->nops; j++)
				n += keep[j];
			out->op[out->nops].n = n;
		}
		out->nops++;
	}
}

/* A failure's signature: its message without numbers and without the op's
 * kind ("result: op  cN: bare ret - errno  (EPIPE)..."), so shrinking keeps
 * the same kind of difference (the same errnos, the same stream fault) while
 * ops and offsets change. */
static void signature(const char *m, char *out, size_t n)
{
	size_t k = 0;
	for (const char *p = m; *p && *p != ';' && k + 1 < n; p++) { /* ";": details */
		if (*p >= '0' && *p <= '9')
			continue;
		if (!strncmp(p, "op ", 3) && p[3] >= '0' && p[3] <= '9') {
			p += 3;
			while (*p == ' ' || (*p >= '0' && *p <= '9'))
				p++;
			while ((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))
				p++;
			p--;
			continue;
		}
		if (!strncmp(p, "(0x", 3) || !strncmp(p, "0x", 2)) { /* the bytes themselves */
			while (*p && *p != ' ' && *p != ',')
				p++;
			if (!*p)
				break;
		}
		out[k++] = *p;
	}
	out[k] = 0;
}

static int same_class(const char *a, const char *b)
{
	char x[600], y[600];
	signature(a, x, sizeof x);
	signature(b, y, sizeof y);
	return !strcmp(x, y);
}

/* Delta debugging over the ops of L: drops chunks while the failure keeps
 * its class; L becomes the smallest list found. */
static void shrink(struct dt_list *l, const char *action, const char *why0, char *why, size_t wl)
{
	int keep[DT_MAXOPS], n = l->nops, chunks = 2, tries = 0;
	struct dt_list cur = *l, t;
	time_t t0 = time(NULL);
	char w[600];

	while (n >= 1 && tries < 150 && time(NULL) - t0 < 30) {
		int len = (n + chunks - 1) / chunks, reduced = 0;
		for (int s = 0; s < n && tries < 150; s += len) {
			for (int i = 0; i < n; i++)
				keep[i] = i < s || i >= s + len;
			struct run *bare = NULL;
			int bad;
			subset(&cur, keep, &t);
			tries++;
			bad = trial(&t, action, "shrink", w, sizeof w, &bare);
			drop_run(&bare);
			if (bad && same_class(w, why0)) {
				cur = t;
				snprintf(why, wl, "%s", w);
				n = cur.nops;
				chunks = chunks > 2 ? chunks - 1 : 2;
				reduced = 1;
				break;
			}
		}
		if (reduced)
			continue;
		if (len <= 1)
			break;
		chunks = chunks * 2 > n ? n : chunks * 2;
	}
	*l = cur;
}

/* Runs list L (named TAG in the PASS and FAIL lines) without the library
 * and under each of ACTIONS (separated by spaces or commas), printing a
 * line per action; with do_shrink, a failure's list is shrunk (argv0: this
 * program, for the replay line). Returns 1 if one failed, else 0. */
static int run_list(struct dt_list *lp, const char *tag, const char *actions, int do_shrink,
		    const char *argv0)
{
	struct dt_list l = *lp;
	struct run *bare = NULL;
	char why[600];
	int failed = 0;

	for (const char *a = actions; *a;) {
		char action[32], rtag[128];
		size_t n = strcspn(a, " ,");
		if (n == 0 || n >= sizeof action) {
			a += n ? n : 1;
			continue;
		}
		memcpy(action, a, n);
		action[n] = 0;
		a += n;
		snprintf(rtag, sizeof rtag, "%s", tag);
		if (!trial(&l, action, rtag, why, sizeof why, &bare)) {
			printf("PASS %s %s\n", tag, action);
			fflush(stdout);
			continue;
		}
		failed = 1;
		printf("FAIL %s %s: %s\n", tag, action, why);
		printf("  run directory: %s\n", last_dir);
		if (verbose) {
			printf("  ops:\n");
			dt_print_list(stdout, &l);
		}
		if (do_shrink && strncmp(why, "bare-run", 8)) {
			struct dt_list m = l;
			char mwhy[600], path[4200];
			FILE *f;
			snprintf(mwhy, sizeof mwhy, "%s", why);
			shrink(&m, action, why, mwhy, sizeof mwhy);
			snprintf(path, sizeof path, "%s/min-%s-%s.ops", work, tag, action);
			f = fopen(path, "w");
			fprintf(f, "# %s under %s: %s\n", tag, action, mwhy);
			dt_print_list(f, &m);
			fclose(f);
			printf("  shrunk to %d ops (from %d): %s\n", m.nops, l.nops, mwhy);
			dt_print_list(stdout, &m);
			printf("  replay: %s -p %s -l %s -w %s -a %s -v -f %s\n", argv0, prog, lib, work,
			       action, path);
		}
		fflush(stdout);
	}
	drop_run(&bare);
	return failed;
}

/* Loads the list NAME names (an op list file if it holds a '/', else a
 * seed) into L, its tag into TAG. Returns 0, or -1 if the file is bad. */
static int load_list(const char *name, int is_file, struct dt_list *l, char *tag, size_t tl)
{
	if (is_file) {
		if (dt_read_list(name, l) < 0)
			return -1;
		snprintf(tag, tl, "%s", strrchr(name, '/') ? strrchr(name, '/') + 1 : name);
	} else {
		unsigned long long seed = strtoull(name, NULL, 0);
		dt_generate(seed, l);
		snprintf(tag, tl, "%llu", seed);
	}
	return 0;
}

/* -L: each line of standard input "NAME ACTION..." (NAME a seed, or an op
 * list file if it holds a '/'), run as -s/-f NAME -a "ACTION..." would be
 * in a process of its own. Returns 1 if one failed, 2 if a file was bad. */
static int run_lines(int do_shrink, const char *argv0)
{
	char line[1024], tag[64];
	struct dt_list l;
	int failed = 0;

	while (fgets(line, sizeof line, stdin)) {
		char *name = line, *acts;
		line[strcspn(line, "\n")] = 0;
		name += strspn(name, " ");
		acts = name + strcspn(name, " ");
		if (*acts)
			*acts++ = 0;
		if (!*name)
			continue;
		if (load_list(name, strchr(name, '/') != NULL, &l, tag, sizeof tag) < 0) {
			failed = 2;
			continue;
		}
		if (run_list(&l, tag, *acts ? acts : "coalesce", do_shrink, argv0) && !failed)
			failed = 1;
	}
	return failed;
}

int main(int argc, char **argv)
{
	const char *actions = "coalesce", *file = NULL, *seedarg = NULL;
	int opt, do_shrink = 0, lines = 0;
	struct dt_list l;
	char tag[64], why[600];

	if (getenv("LD_PRELOAD")) { /* the peer (a fork of ours) must never load the library */
		unsetenv("LD_PRELOAD");
		execv("/proc/self/exe", argv);
		perror("dt_run: re-exec without LD_PRELOAD");
		return 2;
	}
	if (argc == 4 && !strcmp(argv[1], "-C")) {
		/* -C BAREDIR LIBDIR: compare two runs already made (exit statuses
		 * taken as equal), to debug the comparison itself */
		struct run *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
		char path[4200];
		snprintf(path, sizeof path, "%s/ops", argv[2]);
		if (dt_read_list(path, &l) < 0)
			return 2;
		verbose = 1;
		load_run(&l, argv[2], a);
		load_run(&l, argv[3], b);
		if (compare(&l, a, b, why, sizeof why)) {
			printf("FAIL %s\n", why);
			return 1;
		}
		printf("PASS\n");
		return 0;
	}
	while ((opt = getopt(argc, argv, "p:l:w:a:s:f:LSv")) != -1) {
		switch (opt) {
		case 'p': prog = optarg; break;
		case 'l': lib = optarg; break;
		case 'w': work = optarg; break;
		case 'a': actions = optarg; break;
		case 's': seedarg = optarg; break;
		case 'f': file = optarg; break;
		case 'L': lines = 1; break;
		case 'S': do_shrink = 1; break;
		case 'v': verbose = 1; break;
		default: return 2;
		}
	}
	if (!prog || !lib || !work || lib[0] != '/') {
		fprintf(stderr, "usage: dt_run -p DT_PROG -l /ABS/libnaglefix.so -w WORKDIR [-a ACTIONS] [-S] [-v] (-s SEED | -f OPS | -L)\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	mkdir(work, 0755);
	if (lines)
		return run_lines(do_shrink, argv[0]);
	if (file ? load_list(file, 1, &l, tag, sizeof tag) < 0 :
		   load_list(seedarg ? seedarg : "0", 0, &l, tag, sizeof tag) < 0)
		return 2;
	return run_list(&l, tag, actions, do_shrink, argv[0]);
}
