/* dt.h: what the differential test's program (dt_prog), peer (dt_peer) and
 * driver (dt_run) share: the operations, their text form, the generator
 * (splitmix64, fully determined by the seed) and the content of every byte.
 *
 * An op list is text, one item a line:
 *   # comment
 *   conn C BEHAVIOUR K [stdout] [accept]  connection C (0..DT_MAXCONN-1),
 *                             the peer's behaviour on it and its parameter;
 *                             "stdout": the program's socket is descriptor 1;
 *                             "accept": the program accepts it (else connects)
 *   cfg BUFFER FLUSH [START]  coalesce options for this list (buffer=, flush=,
 *                             start=; a list without START: split, as every
 *                             connection began before start= existed)
 *   ID NAME cC tT nN fF aA bB  one operation (see dt_kind_names)
 * ID is the op's number when it was generated; it names the op in traces and
 * fixes the content of its bytes, so a shrunk list sends the same bytes.
 */
#ifndef DT_H
#define DT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DT_MAXCONN 3
#define DT_MAXOPS 200
#define DT_WRITERS 4 /* main thread/forked child = 0, threads 1..2, stdio 3 */

/* Peer behaviours. */
enum {
	B_SINK,    /* reads everything at once */
	B_SLOW,    /* reads 2 KiB a millisecond */
	B_PAUSE,   /* reads nothing for K ms, then sinks */
	B_REPLY,   /* sinks and answers each read with up to 4x its size, K KiB in all */
	B_CLOSE,   /* reads exactly K bytes, then close() (RST if data is left) */
	B_RST,     /* reads exactly K bytes, then close() with SO_LINGER 0 */
	B_SHUTRD,  /* shutdown(SHUT_RD) after K bytes, then goes on reading */
	B_BACKLOG, /* a listener whose accept queue is full: connect stays pending */
	B_NBEHAV
};
static const char *const dt_beh_names[] = {
	"sink", "slow", "pause", "reply", "close", "rst", "shutrd", "backlog",
};

/* Operation kinds. Send kinds first (dt_is_send relies on the order). */
#define DT_KINDS(X) \
	X(WRITE) X(WRITEV) X(SEND) X(SENDTO) X(SENDMSG) X(SENDMMSG) \
	X(SENDFILE) X(SENDFILE64) X(SPLICE) X(PWRITEV2) X(STDIO) X(DPRINTF) X(SPAWN) \
	X(READ) X(PEEK) \
	X(POLL) X(PPOLL) X(SELECT) X(PSELECT) X(EPOLL) \
	X(NODELAY) X(CORK) X(SHUT) X(NONBLOCK) X(DUP) X(CLOSE) \
	X(CLOSERANGE) X(CLOSEFROM) X(SLEEP) X(SIGTIMER) \
	X(FORK) X(THREADS) X(EXEC) X(END)
#define DT_ENUM(k) K_##k,
enum { DT_KINDS(DT_ENUM) K_NKINDS };
#define DT_NAME(k) #k,
static const char *const dt_kind_names[] = { DT_KINDS(DT_NAME) };

static inline int dt_is_send(int k) { return k <= K_SPAWN; }
static inline int dt_is_read(int k) { return k == K_READ || k == K_PEEK; }
static inline int dt_is_wait(int k) { return k >= K_POLL && k <= K_EPOLL; }

/* Flag bits of an op's f field (mapped to MSG_* by dt_prog). */
#define F_DONTWAIT 1
#define F_NOSIGNAL 2
#define F_MORE 4
#define F_BADPTR 8 /* pass (void *)16 as the buffer: the kernel says EFAULT */

/* How a process or a forked child ends (END and FORK's a). */
enum { E_RETURN, E_EXIT, E_UEXIT, E_CEXIT, E_QUICK, E_PTHREAD, E_N };
static const char *const dt_end_names[] = {
	"return", "exit", "_exit", "_Exit", "quick_exit", "pthread_exit",
};

struct dt_op {
	int id, kind, c, t, n, f, a, b;
};

struct dt_conn {
	int beh, k;
	int on_stdout; /* the socket is made on fd 1 (inetd style): stdio reaches it */
	int accepted;  /* the program accepts it (the peer connects), else connects */
};

struct dt_list {
	int nconn;
	struct dt_conn conn[DT_MAXCONN];
	char buffer[16], flush[16], start[8]; /* coalesce options */
	int nops;
	struct dt_op op[DT_MAXOPS];
};

static inline uint64_t dt_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* splitmix64 */
static inline uint64_t dt_next(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ULL;
	return dt_mix(*s);
}

static inline int dt_rand(uint64_t *s, int n) { return (int)(dt_next(s) % (uint64_t)n); }

/* The byte at offset OFF of op ID's payload on connection C by writer W:
 * writer W's bytes lie in their own range of 63 values, so the stream of
 * each writer can be picked out of an interleaving; no byte is 0. */
static inline unsigned char dt_byte(int c, int w, int id, long off)
{
	static const unsigned char base[DT_WRITERS] = { 0x40, 0x80, 0xc0, 0x01 };
	uint64_t h = dt_mix(((uint64_t)c << 56) ^ ((uint64_t)id << 32) ^ (uint64_t)off);
	return (unsigned char)(base[w & 3] + h % 63);
}

static inline void dt_fill(unsigned char *p, int c, int w, int id, long n)
{
	for (long i = 0; i < n; i++)
		p[i] = dt_byte(c, w, id, i);
}

/* The writer of an op: its thread, or the stdio range for stdio ops. */
static inline int dt_writer(const struct dt_op *o)
{
	if (o->kind == K_STDIO || o->kind == K_DPRINTF)
		return 3;
	return o->t;
}

/* Byte R of the peer's replies on connection C. */
static inline unsigned char dt_reply_byte(int c, long r)
{
	return (unsigned char)('a' + dt_mix(((uint64_t)(c + 1) << 48) ^ (uint64_t)r) % 26);
}

static inline void dt_print_op(FILE *f, const struct dt_op *o)
{
	fprintf(f, "%d %s c%d t%d n%d f%d a%d b%d\n", o->id, dt_kind_names[o->kind],
		o->c, o->t, o->n, o->f, o->a, o->b);
}

static inline void dt_print_list(FILE *f, const struct dt_list *l)
{
	for (int i = 0; i < l->nconn; i++)
		fprintf(f, "conn %d %s %d%s%s\n", i, dt_beh_names[l->conn[i].beh], l->conn[i].k,
			l->conn[i].on_stdout ? " stdout" : "", l->conn[i].accepted ? " accept" : "");
	fprintf(f, "cfg %s %s %s\n", l->buffer, l->flush, l->start);
	for (int i = 0; i < l->nops; i++)
		dt_print_op(f, &l->op[i]);
}

static inline int dt_lookup(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], s))
			return i;
	return -1;
}

/* Reads an op list; 0, or -1 with a message on stderr. */
static inline int dt_read_list(const char *path, struct dt_list *l)
{
	FILE *f = fopen(path, "r");
	char line[256], name[32];
	int ln = 0;

	if (!f) {
		perror(path);
		return -1;
	}
	memset(l, 0, sizeof *l);
	strcpy(l->buffer, "16k");
	strcpy(l->flush, "500us");
	strcpy(l->start, "split");
	while (fgets(line, sizeof line, f)) {
		struct dt_op o;
		int c, k;
		ln++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "conn %d %31s %d", &c, name, &k) == 3) {
			int b = dt_lookup(dt_beh_names, B_NBEHAV, name);
			if (c != l->nconn || c >= DT_MAXCONN || b < 0)
				goto bad;
			if (b == B_BACKLOG && strstr(line, " accept"))
				goto bad;
			l->conn[l->nconn++] = (struct dt_conn){ b, k, strstr(line, " stdout") != NULL,
								strstr(line, " accept") != NULL };
			continue;
		}
		if (sscanf(line, "cfg %15s %15s %7s", l->buffer, l->flush, l->start) >= 2)
			continue;
		if (sscanf(line, "%d %31s c%d t%d n%d f%d a%d b%d", &o.id, name, &o.c, &o.t,
			   &o.n, &o.f, &o.a, &o.b) != 8)
			goto bad;
		o.kind = dt_lookup(dt_kind_names, K_NKINDS, name);
		if (o.kind < 0 || l->nops >= DT_MAXOPS || o.c < 0 || o.c >= DT_MAXCONN ||
		    o.t < 0 || o.t > 2 || o.n < 0 || o.n > (1 << 22))
			goto bad;
		l->op[l->nops++] = o;
	}
	fclose(f);
	return 0;
bad:
	fprintf(stderr, "%s:%d: bad line: %s", path, ln, line);
	fclose(f);
	return -1;
}

#endif
