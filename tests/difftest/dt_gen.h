/* dt_gen.h: the seeded generator of op lists (used by dt_run and by
 * `dt_prog --gen SEED`). Everything it draws comes from splitmix64 streams of
 * the seed, so a seed names one list on every machine.
 *
 * It keeps the rules that make the run without the library deterministic
 * enough to compare: a connection whose connect stays pending is only used
 * non-blocking; reads are non-blocking; forked children and threads only send,
 * sleep, wait and set TCP_NODELAY (their order against the parent is then
 * fixed by waitpid/join, and a close racing a thread's write would be a race
 * of the program, not of the library).
 */
#ifndef DT_GEN_H
#define DT_GEN_H

#include "dt.h"

static int dt_gen_size(uint64_t *r)
{
	int p = dt_rand(r, 100);
	if (p < 65)
		return 1 + dt_rand(r, 64);
	if (p < 88)
		return 65 + dt_rand(r, 2000);
	if (p < 97)
		return 2065 + dt_rand(r, 14000);
	return 16385 + dt_rand(r, 49152);
}

struct dt_gstate {
	int closed[DT_MAXCONN], nb[DT_MAXCONN], pending[DT_MAXCONN];
};

static int dt_gen_conn(uint64_t *r, const struct dt_list *l, const struct dt_gstate *g)
{
	int c = dt_rand(r, l->nconn);
	/* mostly an open connection; a closed one now and then (EBADF both ways) */
	for (int i = 0; i < l->nconn && g->closed[c] && dt_rand(r, 8); i++)
		c = (c + 1) % l->nconn;
	return c;
}

/* One op of the restricted set that children and threads use. */
static void dt_gen_simple(uint64_t *r, const struct dt_list *l, const struct dt_gstate *g,
			  struct dt_op *o)
{
	static const int kinds[] = { K_WRITE, K_WRITE, K_WRITEV, K_SEND, K_SENDTO, K_SENDMSG,
				     K_SENDMMSG, K_SLEEP, K_POLL, K_NODELAY };
	o->kind = kinds[dt_rand(r, sizeof kinds / sizeof kinds[0])];
	o->c = dt_gen_conn(r, l, g);
	o->n = dt_gen_size(r);
	o->f = dt_rand(r, 4) ? 0 : (F_NOSIGNAL | (dt_rand(r, 3) ? 0 : F_MORE));
	o->a = dt_rand(r, 1 << 20);
	o->b = 1 + dt_rand(r, 6);
	if (o->kind == K_SLEEP)
		o->n = dt_rand(r, 1500);
	if (o->kind == K_POLL)
		o->a = dt_rand(r, 2);
	if (o->kind == K_NODELAY)
		o->a = dt_rand(r, 2);
	if (o->kind == K_SENDMMSG)
		o->b = 1 + dt_rand(r, 3);
	if (g->pending[o->c] && dt_is_send(o->kind))
		o->f |= F_DONTWAIT;
}

static int dt_avoids(const char *avoid, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = avoid; p && (p = strstr(p, name)); p += n)
		if ((p == avoid || p[-1] == ',') && (p[n] == ',' || p[n] == 0))
			return 1;
	return 0;
}

/* Takes out of L what AVOID names (comma-separated: op kinds such as
 * SENDFILE64 or STDIO, and backlog, quick_exit, pthread_exit, badptr,
 * iovcnt), so a search can go past bugs already known: an avoided op becomes
 * a SLEEP, an avoided end an exit(), a backlog peer a sink. */
static void dt_avoid(struct dt_list *l, const char *avoid)
{
	for (int c = 0; c < l->nconn; c++)
		if (l->conn[c].beh == B_BACKLOG && dt_avoids(avoid, "backlog"))
			l->conn[c].beh = B_SINK;
	for (int i = 0; i < l->nops; i++) {
		struct dt_op *o = &l->op[i];
		if (dt_avoids(avoid, dt_kind_names[o->kind]))
			o->kind = K_SLEEP, o->n = 50;
		if ((o->kind == K_END || o->kind == K_FORK) && dt_avoids(avoid, dt_end_names[o->a]))
			o->a = E_EXIT;
		if (dt_avoids(avoid, "badptr"))
			o->f &= ~F_BADPTR;
		if (o->kind == K_WRITEV && (o->b < 0 || o->b > 1024) && dt_avoids(avoid, "iovcnt"))
			o->b = 1;
	}
}

/* One seed in four starts with DT_WHOLE messages of one write each on
 * connection 0, each followed by a read (the library learns from these to
 * let a connection's writes go straight: coalesce_int.h's WHOLE_AFTER, 64),
 * so the ops after them meet a connection in that state. From a stream of
 * its own, as the other draws of a seed are the same without it. */
#define DT_WHOLE 70
static void dt_gen_whole(uint64_t seed, struct dt_list *l)
{
	uint64_t rw = seed ^ 0x3a01ebe55a9eULL;

	if (dt_rand(&rw, 4) != 0 || l->conn[0].beh == B_BACKLOG)
		return;
	for (int i = 0; i < DT_WHOLE; i++) {
		struct dt_op *w = &l->op[l->nops], *rd = &l->op[l->nops + 1];

		memset(w, 0, 2 * sizeof *w);
		w->id = l->nops;
		w->kind = K_WRITE;
		w->n = 1 + dt_rand(&rw, 300);
		rd->id = l->nops + 1;
		rd->kind = K_READ;
		rd->n = 1 + dt_rand(&rw, 4096);
		rd->b = dt_rand(&rw, 5);
		l->nops += 2;
	}
}

/* Fills L from SEED, less what the environment's DT_AVOID names. */
static void dt_generate(uint64_t seed, struct dt_list *l)
{
	static const int bw[B_NBEHAV] = { 30, 10, 10, 15, 10, 8, 5, 5 };
	static const char *const bufs[] = { "64", "100", "256", "1k", "4k", "16k", "64k", "1m" };
	static const char *const fls[] = { "10us", "50us", "200us", "500us", "2ms", "10ms", "100ms", "1s" };
	uint64_t r = seed * 0x100000001b3ULL + 1;
	struct dt_gstate g;
	int nops, tb = 0;

	memset(l, 0, sizeof *l);
	memset(&g, 0, sizeof g);
	l->nconn = 1 + dt_rand(&r, DT_MAXCONN);
	for (int c = 0; c < l->nconn; c++) {
		int x = dt_rand(&r, 93), b = 0;
		while (x >= bw[b])
			x -= bw[b++];
		l->conn[c].beh = b;
		switch (b) {
		case B_PAUSE: l->conn[c].k = 5 + dt_rand(&r, 30); break;
		case B_REPLY: l->conn[c].k = 16 + dt_rand(&r, 240); break;
		case B_CLOSE: case B_RST: l->conn[c].k = dt_rand(&r, 3000); break;
		case B_SHUTRD: l->conn[c].k = dt_rand(&r, 2000); break;
		default: break;
		}
		if (b == B_BACKLOG)
			g.pending[c] = g.nb[c] = 1;
		else if (c == 0 && dt_rand(&r, 8) == 0)
			l->conn[c].on_stdout = 1;
	}
	{ /* a stream of its own, so adding this kept the lists of other draws */
		uint64_t ra = seed ^ 0x5eedacce97ULL;
		for (int c = 0; c < l->nconn; c++)
			l->conn[c].accepted = l->conn[c].beh != B_BACKLOG && dt_rand(&ra, 4) == 0;
	}
	strcpy(l->buffer, bufs[dt_rand(&r, 8)]);
	strcpy(l->flush, fls[dt_rand(&r, 8)]);
	{ /* start=: half the lists each, from a stream of its own (as above) */
		uint64_t rs = seed ^ 0x57a27ULL;
		strcpy(l->start, dt_rand(&rs, 2) ? "whole" : "split");
	}
	dt_gen_whole(seed, l);

	nops = 3 + dt_rand(&r, 30);
	for (int i = 0; i < nops && l->nops < DT_MAXOPS - 12; i++) {
		struct dt_op *o = &l->op[l->nops];
		int p = dt_rand(&r, 1000);
		memset(o, 0, sizeof *o);
		o->id = l->nops;
		o->c = dt_gen_conn(&r, l, &g);
		o->n = dt_gen_size(&r);
		o->a = dt_rand(&r, 1 << 20);
		if (dt_rand(&r, 5) == 0)
			o->f = (dt_rand(&r, 2) ? F_DONTWAIT : 0) | (dt_rand(&r, 2) ? F_NOSIGNAL : 0) |
			       (dt_rand(&r, 3) ? 0 : F_MORE);
		if (p < 180) o->kind = K_WRITE;
		else if (p < 250) { o->kind = K_WRITEV; o->b = dt_rand(&r, 12) ? 1 + dt_rand(&r, 8) : 0; }
		else if (p < 260) { o->kind = K_PWRITEV2; o->b = 1 + dt_rand(&r, 8); } /* a's bit 0: pwritev64v2 */
		else if (p < 330) o->kind = K_SEND;
		else if (p < 370) o->kind = K_SENDTO;
		else if (p < 420) { o->kind = K_SENDMSG; o->b = dt_rand(&r, 10) ? 1 + dt_rand(&r, 5) : 0; }
		else if (p < 440) { o->kind = K_SENDMMSG; o->b = 1 + dt_rand(&r, 3); }
		else if (p < 455) o->kind = K_SENDFILE;
		else if (p < 470) o->kind = K_SENDFILE64;
		else if (p < 485) o->kind = K_SPLICE;
		else if (p < 500) { o->kind = K_STDIO; o->a = dt_rand(&r, 4); }
		else if (p < 510) o->kind = K_DPRINTF;
		else if (p < 570) { o->kind = K_READ; o->n = 1 + dt_rand(&r, 8192); o->b = dt_rand(&r, 5); }
		else if (p < 590) { o->kind = K_PEEK; o->n = 1 + dt_rand(&r, 4096); }
		else if (p < 670) {
			o->kind = K_POLL + dt_rand(&r, 5);
			o->a = dt_rand(&r, 2) ? 0 : 1 + dt_rand(&r, 3);
			o->b = dt_rand(&r, 2); /* EPOLL: 1 is epoll_pwait */
		} else if (p < 700) { o->kind = K_NODELAY; o->a = dt_rand(&r, 2); }
		else if (p < 720) { o->kind = K_CORK; o->a = dt_rand(&r, 2); }
		else if (p < 745) { o->kind = K_SHUT; o->a = dt_rand(&r, 3); }
		else if (p < 770) {
			if (g.pending[o->c])
				o->kind = K_SLEEP, o->n = 200;
			else
				o->kind = K_NONBLOCK, o->a = dt_rand(&r, 2);
		} else if (p < 800) { o->kind = K_DUP; o->a = dt_rand(&r, 5); o->b = dt_rand(&r, 2); }
		else if (p < 820) o->kind = K_CLOSE;
		else if (p < 830) { o->kind = K_CLOSERANGE; o->a = dt_rand(&r, 2); }
		else if (p < 835) o->kind = K_CLOSEFROM;
		else if (p < 850) { o->kind = K_SPAWN; o->n = 1 + dt_rand(&r, 200); o->a = dt_rand(&r, 4); }
		else if (p < 890) { o->kind = K_SLEEP; o->n = dt_rand(&r, 3000); }
		else if (p < 910) { o->kind = K_SIGTIMER; o->n = dt_rand(&r, 3) ? 200 + dt_rand(&r, 2000) : 0; }
		else if (p < 950) {
			int n = 1 + dt_rand(&r, 4);
			o->kind = K_FORK;
			o->n = n;
			o->a = dt_rand(&r, E_N);
			l->nops++;
			for (int j = 0; j < n; j++) {
				struct dt_op *s = &l->op[l->nops];
				memset(s, 0, sizeof *s);
				s->id = l->nops++;
				dt_gen_simple(&r, l, &g, s);
			}
			continue;
		} else if (p < 985) {
			int n = 2 + dt_rand(&r, 8), one = dt_rand(&r, 2), c0 = o->c;
			o->kind = K_THREADS;
			o->n = n;
			o->a = tb++;
			l->nops++;
			for (int j = 0; j < n; j++) {
				struct dt_op *s = &l->op[l->nops];
				memset(s, 0, sizeof *s);
				s->id = l->nops++;
				dt_gen_simple(&r, l, &g, s);
				s->t = dt_rand(&r, 3);
				if (one) /* threads on one socket; else on several */
					s->c = c0;
				if (g.pending[s->c] && dt_is_send(s->kind))
					s->f |= F_DONTWAIT;
			}
			continue;
		} else if (p < 993) {
			o->kind = K_EXEC;
		} else {
			/* invalid arguments: a bad buffer (EFAULT), an iovcnt out of range */
			o->kind = dt_rand(&r, 2) ? K_WRITE : K_SEND;
			o->f |= F_BADPTR;
			if (dt_rand(&r, 2)) {
				o->kind = K_WRITEV;
				o->f &= ~F_BADPTR;
				o->b = dt_rand(&r, 2) ? -1 - dt_rand(&r, 3) : 1025 + dt_rand(&r, 3);
			}
		}
		if (g.pending[o->c] && (dt_is_send(o->kind)))
			o->f |= F_DONTWAIT;
		if (o->kind == K_CLOSE || (o->kind == K_STDIO && o->a == 1))
			g.closed[o->c] = 1;
		if (o->kind == K_CLOSERANGE || o->kind == K_CLOSEFROM)
			g.closed[o->c] = 1; /* and perhaps others: the program tracks it */
		if (o->kind == K_NONBLOCK)
			g.nb[o->c] = o->a;
		l->nops++;
	}
	if (dt_rand(&r, 10)) {
		struct dt_op *o = &l->op[l->nops];
		memset(o, 0, sizeof *o);
		o->id = l->nops++;
		o->kind = K_END;
		o->a = dt_rand(&r, E_N);
	}
	if (getenv("DT_AVOID"))
		dt_avoid(l, getenv("DT_AVOID"));
}

#endif
