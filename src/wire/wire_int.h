/*
 * wire_int.h - what the detector's files share: the connection table
 * (table.c) and its index (index.c), the signature read on each
 * direction and the loop over segments (detect.c), the rows of findings
 * (holder.c), and what the reading loop (feed.c) makes of a segment
 * for the detector without its table. Not for the command.
 *
 * A connection is kept in 192 bytes, three cache lines (the bench checks
 * that memory stays under 300 bytes a live connection): its two ends, and
 * per direction what the signature needs of the sender (struct dir).
 */
#ifndef NF_WIRE_INT_H
#define NF_WIRE_INT_H

#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "nf_wire.h"

/* What a direction's sender is doing, for the signature (detect.c). */
enum dir_state {
	ST_NONE = 0, /* no small segment waiting */
	ST_HELD,     /* S1 sent, not yet acknowledged */
	ST_ACKED,    /* R's late pure ACK of S1 seen: waiting for S2 */
};

/* A direction's flags (struct dir's f): one word, so that a segment
 * sets or clears several of them in one store. */
#define DF_STATE         0x0003u /* enum dir_state */
#define DF_SEEN          0x0004u /* a segment of ours was seen */
#define DF_HAS_NXT       0x0008u /* nxt holds */
#define DF_DATA_WAIT     0x0010u /* data_end not yet acknowledged */
#define DF_FIN           0x0020u /* our FIN was seen */
#define DF_HAS_DATA      0x0040u /* a payload of ours was seen */
#define DF_HEARD         0x0080u /* the other end sent data since our newest data */
#define DF_S1_HEARD      0x0100u /* ... before S1: S1 and S2 answer it */
#define DF_PEND          0x0200u /* a stall waits for R to answer (struct dir_aside) */
#define DF_PEND_ANSWERED 0x0400u /* R answered the waiting stall */
#define DF_PEND_UNTIED   0x0800u /* ... whose tie waits for our round trip */
#define DF_CLOSED        0x1000u /* d[0]'s only: the connection is closed (RST, or FIN
				  * both ways) and on the closed list */

/*
 * One direction of a connection: what every segment reads of its
 * sender. Times are the low 32 bits of the packets' microseconds
 * (differences modulo 2^32: right for gaps under 71 minutes), so that a
 * connection stays small. In ST_HELD and ST_ACKED, S1 is the newest
 * data: its end is nxt, its time data_us.
 */
struct dir {
	uint32_t nxt;       /* sequence number after the newest data seen */
	uint32_t s1_len;
	uint32_t ack_us;    /* R's late ACK of S1 seen (ST_ACKED) */
	uint32_t data_end;  /* our newest data's end (SYN and FIN count one) */
	uint32_t data_us;   /* ... seen, for the other end's reaction; while
			     * DF_PEND, the waiting stall's S2 */
	uint32_t max_len;   /* the largest payload seen (the MSS when no SYN said it) */
	uint32_t rtt_us;    /* our quickest reaction to the other end (capture -> us -> capture); 0 unknown */
	uint32_t dup_sig;   /* our last segment's hash and time: a second copy is dropped */
	uint32_t dup_us;
	uint16_t mss;       /* the MSS the other end's SYN allows us; 0 unknown */
	uint16_t f;         /* DF_* */
};

/* What a direction keeps aside, read only at a stall: the stall waiting
 * for R to answer (DF_PEND; one-way senders never do), its S2 being
 * struct dir's data_us, and the direction's row. */
struct dir_aside {
	uint32_t pend_start_us, pend_ack_us;
	uint16_t pend_size1, pend_size2;
	uint32_t row;       /* our row (holder.c) + 1 once we stalled; 0 before */
};

/*
 * The table's index (index.c): open addressing with linear probing. An
 * entry is tag << 32 | value (value 0: empty), tag the upper half of a
 * 64-bit hash, its home slot tag & (n - 1). A lookup reads a connection
 * only where the tag matches; entries move (growth, deletion) without
 * their connections being read.
 */
struct nf_index {
	uint64_t *e;
	uint32_t n;    /* a power of two */
	uint32_t used; /* at most 3/4 of n */
	uint32_t gen;  /* changes whenever an entry moves, comes or goes */
};

/* Makes an empty index of n entries (a power of two). 0, or -1 (no memory). */
int nf_index_init(struct nf_index *ix, uint32_t n);
void nf_index_free(struct nf_index *ix);
/* Adds value (not 0) under hash, growing the index past 3/4. 0, or -1
 * when it is full and cannot grow (nothing added). */
int nf_index_add(struct nf_index *ix, uint64_t hash, uint32_t value);
/* Removes value, added under hash (it must be there). */
void nf_index_del(struct nf_index *ix, uint64_t hash, uint32_t value);

static inline uint32_t nf_index_tag(uint64_t hash)
{
	return (uint32_t)(hash >> 32);
}

/* Where the entries of hash begin: the caller reads ix->e[pos], pos + 1,
 * ... (modulo n) up to the first 0, comparing tags. */
static inline uint32_t nf_index_home(const struct nf_index *ix, uint64_t hash)
{
	return nf_index_tag(hash) & (ix->n - 1);
}

/*
 * A connection: ends[0] is the lower of the two (address, then port).
 * Three cache lines, aligned. Every segment reads the first two (its
 * ends, both directions); the third only a SYN, FIN or RST, a stall, and
 * the table's upkeep.
 */
struct conn {
	struct nf_end ends[2];
	uint64_t last_ns;     /* its last segment */
	struct dir d[2];      /* d[i]: ends[i] sending */
	/* the third line */
	struct dir_aside a[2];
	uint64_t close_ns;    /* when it closed (DF_CLOSED) */
	uint32_t queued_s;    /* last_ns's second when it was put at its age list's end */
	uint32_t prev, next;  /* its place in the age list (index + 1); a free
			       * slot's next is the next free one */
	uint32_t idx;         /* its own slot's index + 1 */
	uint8_t client;       /* the end that opened it: 0 or 1, 2 unknown */
	uint8_t used;
	uint16_t tie_lag_us[2]; /* a[i]'s untied stall: its ACK's copy nearest S2
				 * this long after pend_ack_us (at most 65,535) */
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct conn) == 192, "a connection is three cache lines");
_Static_assert(__builtin_offsetof(struct conn, a) == 128, "what every segment reads is two lines");

/* An age list, oldest first: live ones by queued_s (when each was put at
 * its end), closed ones by close_ns (their closing). A segment only sets
 * last_ns; a live connection is put back at the end when it reaches the
 * head still in use (so a packet touches no other connection). */
struct age_list {
	uint32_t head, tail; /* index + 1 */
};

#define NF_WIRE_SLOTS (1u << 24) /* 16.7 M connections at once: 3.2 GB reserved */
#define LISTEN_MAX  4096 /* listening ends remembered (learned from SYN-ACKs) */

/* A stall found whose row is not yet counted (holder.c): its row, and
 * the ends its callbacks are given. */
struct row_due {
	uint32_t row;    /* the row's number + 1 */
	uint8_t joined;  /* its connection's first stall in the row */
	struct nf_stall s;
	struct nf_end self, peer;
};

#define NF_WIRE_DUE 64 /* stalls counted together, their rows read ahead */

struct nf_wire {
	struct nf_wire_opts o;
	struct conn *conns;   /* maxslots slots, reserved (table.c) */
	uint32_t maxslots;
	uint32_t free_head;   /* freed slots (index + 1), chained by next */
	uint32_t nslots;      /* slots ever handed out */
	size_t ready;         /* bytes of conns whose pages are in (table.c) */
	struct nf_index index; /* the slots by their connection's hash */
	struct age_list live, closed;
	uint64_t now_ns;      /* the newest packet time */
	uint64_t expiry_ns;   /* no connection expires before this */
	uint32_t delack_us;   /* o's delack_min_ns and tie_floor_ns in µs */
	uint32_t tie_floor_us;
	struct nf_wire_stats st;
	struct nf_end *listen; /* open addressing, port 0 = empty */
	uint32_t nlisten;
	/* rows (holder.c) */
	struct nf_holder **rows;
	uint32_t nrows, caprows;
	uint64_t *rbucket;     /* row hash << 32 | index + 1, open addressing */
	uint32_t nrbuckets;
	struct nf_holder **sorted; /* nf_wire_holders' answer */
	struct row_due *due;   /* NF_WIRE_DUE stalls, ndue of them yet to count */
	uint32_t ndue;
};

/* --- table.c --- */

/* Takes in the pages within p[0..len) at once, as writable: one call
 * instead of a page fault each, which costs 10 µs and more on a virtual
 * machine (MADV_POPULATE_WRITE; nothing where the kernel has it not). */
void nf_wire_populate(void *p, size_t len);
/* calloc(1, len) with its pages taken in by nf_wire_populate before the
 * zeroing writes them (where calloc's own would fault each). */
void *nf_wire_zalloc(size_t len);

/* The connection in slot idx1 (its index + 1). */
static inline struct conn *nf_slot(const struct nf_wire *w, uint32_t idx1)
{
	return &w->conns[idx1 - 1];
}

/* A new connection for segment s (more: its more, if any) in the table.
 * NULL when no memory is left (counted). */
struct conn *nf_wire_add(struct nf_wire *w, const struct nf_seg *s, const struct nf_seg_more *more);

/* Is c closed? */
static inline int nf_conn_closed(const struct conn *c)
{
	return (c->d[0].f & DF_CLOSED) != 0;
}

/* Moves c, closing it, to the closed list's end. */
void nf_wire_close(struct nf_wire *w, struct conn *c);
/* Moves a closed c back to the live list (a new SYN on its ends). */
void nf_wire_reopen(struct nf_wire *w, struct conn *c);

/* Remembers e as a listening end (a SYN-ACK came from it); is e one? */
void nf_wire_listen_add(struct nf_wire *w, const struct nf_end *e);
int nf_wire_listen_has(const struct nf_wire *w, const struct nf_end *e);

/* --- detect.c: the signature and the loop over segments (nf_wire_segments) --- */

/* The hash of what makes a segment the same segment (a second copy of it,
 * seen on lo or "any" going and coming, has the same), from its two
 * words: seq << 32 | ack, and len << 24 | flags << 16 | win. */
static inline uint32_t nf_seg_sig_words(uint64_t seq_ack, uint64_t len_flags_win)
{
	uint64_t h = seq_ack * 0x9e3779b97f4a7c15ull;

	h ^= len_flags_win * 0xc2b2ae3d27d4eb4full;
	return (uint32_t)(h ^ h >> 32);
}

static inline uint32_t nf_seg_sig_of(uint32_t seq, uint32_t ack, uint32_t len, uint8_t flags,
				     uint16_t win)
{
	return nf_seg_sig_words((uint64_t)seq << 32 | ack,
				(uint64_t)len << 24 | (uint64_t)flags << 16 | win);
}

static inline uint32_t nf_wire_seg_sig(const struct nf_pkt *p)
{
	return nf_seg_sig_of(p->seq, p->ack, p->len, p->flags, p->win);
}

/* --- holder.c --- */

/* Counts stall s of direction i of c in its row, made (and on_first
 * called) at the row's first stall; on_conn called at the first stall
 * of a connection that joins a row that stalled before; on_stall at
 * every stall, after them. The row is found now; its counts and the
 * callbacks may wait for nf_wire_rows_due, which the loop over segments
 * calls before it returns (a row read from memory for each stall in
 * turn costs more than the rest of the scan: read ahead together, they
 * come at once). */
void nf_wire_row_stall(struct nf_wire *w, struct conn *c, int i, const struct nf_stall *s);

/* Counts the stalls nf_wire_row_stall left waiting, in the order found. */
void nf_wire_rows_due(struct nf_wire *w);

/* Frees the rows. */
void nf_wire_rows_free(struct nf_wire *w);

/* --- what the detector learns without its table (nf_wire_prepare) --- */

static inline uint64_t nf_rotl32(uint64_t v)
{
	return v << 32 | v >> 32;
}

/*
 * The hash of a connection from its two ends, the lower first, each
 * address as two 8-byte words of its bytes in memory order (an IPv4
 * address: its 4 bytes, then zeros). Each word of the higher address
 * turned by half (an IPv4 address is in the lower 4 bytes: the two
 * cannot cancel out; an IPv6 interface's last bytes, those that vary
 * most, come low), a product for the addresses and one for the rest,
 * folded and mixed so that every bit of the upper half, the index's tag
 * and home, depends on every input bit. nf_conn_hash_mix is that last
 * part, of the two words made of the addresses (x) and the rest (y).
 */
static inline uint64_t nf_conn_hash_mix(uint64_t x, uint64_t y)
{
	uint64_t h = x * 0x9e3779b97f4a7c15ull + y * 0xc2b2ae3d27d4eb4full;

	h ^= h >> 32;
	h *= 0xff51afd7ed558ccdull;
	return h ^ h >> 29;
}

static inline uint64_t nf_conn_hash_words(uint64_t a0, uint64_t a1, uint16_t lport, uint64_t b0,
					  uint64_t b1, uint16_t hport)
{
	return nf_conn_hash_mix(a0 ^ nf_rotl32(b0),
				nf_rotl32(a1) ^ b1 ^ ((uint64_t)lport << 16 | hport));
}

static inline uint64_t nf_conn_hash(const uint8_t *lo, uint16_t lport, const uint8_t *hi,
				    uint16_t hport)
{
	uint64_t a[2], b[2];

	memcpy(a, lo, 16);
	memcpy(b, hi, 16);
	return nf_conn_hash_words(a[0], a[1], lport, b[0], b[1], hport);
}

/* The index's hash of a segment's connection: the tag is its upper half. */
static inline uint64_t nf_seg_hash(const struct nf_seg *s)
{
	return (uint64_t)s->tag << 32;
}

/* The first 8 bytes of an end as struct nf_end holds it (family, a zero
 * byte, port, the first 4 bytes of the address, whose first word is a0). */
static inline uint64_t nf_end_head(uint8_t family, uint16_t port, uint64_t a0)
{
	return (uint64_t)family | (uint64_t)port << 16 | a0 << 32;
}

_Static_assert(__builtin_offsetof(struct nf_end, port) == 2 &&
		       __builtin_offsetof(struct nf_end, addr) == 4 && sizeof(struct nf_end) == 20,
	       "an end's head is family, a zero byte, port, 4 bytes of address");
_Static_assert(sizeof(struct nf_seg) == 48, "a segment handed to the detector is 48 bytes");

/*
 * The ends of a segment of family into s (head, tag, NF_SEG_SRC; bits
 * otherwise 0), from its source and destination, each address as two
 * words (nf_conn_hash_words): which end sent it (the higher of the two:
 * addresses compared as big-endian numbers, then ports), and the hash
 * and heads of its ends in order. Inline for the reading loop (feed.c),
 * which has the words in registers. Returns the source's place, 0 or 1.
 */
static inline int nf_seg_ends(uint8_t family, uint64_t s0, uint64_t s1, uint16_t sport,
			      uint64_t d0, uint64_t d1, uint16_t dport, struct nf_seg *s)
{
	uint64_t hs = nf_end_head(family, sport, s0), hd = nf_end_head(family, dport, d0);
	int src;

	if (s0 != d0)
		src = __builtin_bswap64(s0) > __builtin_bswap64(d0);
	else if (s1 != d1)
		src = __builtin_bswap64(s1) > __builtin_bswap64(d1);
	else
		src = sport > dport;
	s->tag = (uint32_t)((src ? nf_conn_hash_words(d0, d1, dport, s0, s1, sport)
				 : nf_conn_hash_words(s0, s1, sport, d0, d1, dport)) >> 32);
	s->head[0] = src ? hd : hs;
	s->head[1] = src ? hs : hd;
	s->bits = (uint8_t)src;
	return src;
}

/*
 * nf_seg_ends for an IPv4 segment (addresses as on the wire, in the low 4
 * bytes), without a branch on which end sent it: that follows the
 * traffic, half one way and half the other, and a branch on it was
 * mispredicted about every other segment. The ends compared as one
 * number (the address big-endian, then the port), the lower chosen by
 * a mask; the hash's two words made from the two heads so chosen (an
 * IPv4 address's other words are zero). The same s as nf_seg_ends makes.
 */
static inline void nf_seg_ends4(uint32_t saddr, uint16_t sport, uint32_t daddr, uint16_t dport,
				struct nf_seg *s)
{
	uint64_t ks = (uint64_t)__builtin_bswap32(saddr) << 16 | sport;
	uint64_t kd = (uint64_t)__builtin_bswap32(daddr) << 16 | dport;
	uint64_t src = ks > kd, m = -src;
	uint64_t hs = nf_end_head(AF_INET, sport, saddr), hd = nf_end_head(AF_INET, dport, daddr);
	uint64_t x = (hs ^ hd) & m, lo = hs ^ x, hi = hd ^ x;

	/* nf_conn_hash_words(lo's address, 0, lo's port, hi's address, 0,
	 * hi's port), its words taken from the two heads */
	s->tag = (uint32_t)(nf_conn_hash_mix(lo >> 32 | (hi & 0xffffffff00000000ull),
					     (lo & 0xffff0000u) | (hi >> 16 & 0xffffu)) >> 32);
	s->head[0] = lo;
	s->head[1] = hi;
	s->bits = (uint8_t)src;
}

/* nf_wire_prepare, inline. */
static inline void nf_seg_make(const struct nf_pkt *p, struct nf_seg *s, struct nf_seg_more *more)
{
	uint64_t a[2], b[2];
	int src;

	memcpy(a, p->saddr, 16);
	memcpy(b, p->daddr, 16);
	src = nf_seg_ends(p->family, a[0], a[1], p->sport, b[0], b[1], p->dport, s);
	s->ts_ns = p->ts_ns;
	s->sig = nf_wire_seg_sig(p);
	s->seq = p->seq;
	s->ack = p->ack;
	s->len = p->len;
	s->win = p->win;
	s->flags = p->flags;
	if (p->family == AF_INET6 || (p->flags & NF_TCP_SYN)) {
		s->bits |= NF_SEG_MORE | (p->family == AF_INET6 ? NF_SEG_V6 : 0);
		memcpy(more->tail[0], (src ? p->daddr : p->saddr) + 4, 12);
		memcpy(more->tail[1], (src ? p->saddr : p->daddr) + 4, 12);
		more->mss = p->mss;
	}
}

/* The low 32 bits of ns in microseconds (struct dir's clock). */
static inline uint32_t nf_us(uint64_t ns)
{
	return (uint32_t)(ns / 1000);
}

/* Are a and b the same end (family, address, port)? */
static inline int nf_end_eq(const struct nf_end *a, const struct nf_end *b)
{
	return a->port == b->port && a->family == b->family &&
	       memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

/* Serial-number comparison of sequence numbers (RFC 1982): a before b. */
static inline int nf_seq_lt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

#endif
