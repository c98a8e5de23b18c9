/*
 * scan_floor.c - the least work any per-connection detector must do on
 * a capture, in levels, each a floor under `naglefix scan`: issue 35
 * asks for scan within 3x of `cat FILE >/dev/null`, and the least of
 * the levels `table` and `prefetch`, read or mapped, over cat says
 * whether any detector that reads or maps the file can be.
 * tests/bench/scan_floor.sh times each level beside cat and scan.
 *
 * Usage: scan_floor LEVEL CAPTURE [SLOTS [LINES]]
 *   read      read(2) of the file 256 KiB at a time (scan's read size)
 *             into one buffer, nothing looked at: the kernel's copy
 *   walk      + every pcap record walked: its length checked against
 *             what was read, its time summed
 *   hash      + each frame's IPv4/TCP 4-tuple, its two ends ordered
 *             (lower address and port first, so both directions are one
 *             connection), hashed to 64 bits
 *   table     + the connection found or inserted in an open-addressing
 *             table (linear probing) of SLOTS slots (a power of two,
 *             default 131072: 45,000 connections fill it to 34%, 1.26
 *             slots read a lookup; 65536: 69%, 2.10), each
 *             LINES cache lines (default 1), the key and the state in
 *             the first; its last time and a packet count updated, and
 *             a counter written in each further line
 *   prefetch  table, the frames parsed 32 at a time, each one's slot
 *             (its every line) asked of the cache, a prefetch for
 *             writing, as it is parsed; then the 32 updated
 *   mmap      instead of read: the file mapped read-only (mmap(2) with
 *             MAP_POPULATE: every page's entry made at once), one byte
 *             of each 4 KiB page read, unmapped: the mapping's cost,
 *             no copy
 *   mmap-walk, mmap-hash, mmap-table, mmap-prefetch
 *             the file mapped as mmap does, its records walked in place
 *             at that level, unmapped
 *   fault, fault-walk, fault-hash, fault-table, fault-prefetch
 *             as mmap and mmap-LEVEL, mapped without MAP_POPULATE: each
 *             page's entry made by the fault of its first touch, with
 *             those of cached pages around it (the kernel's fault-around)
 * The mapped levels take the file's size once, when they map it: a file
 * cut short while mapped kills the process with SIGBUS: a floor for a
 * detector that maps, not a way to read that scan could take as is.
 * Prints "scan_floor LEVEL: R records, C connections, S s in the loop,
 * checksum X" (the loop: from the first read, or from the mapping, to
 * the end, the unmapping included; the checksum keeps the compiler from
 * dropping the work)
 * and exits 0; 2 on a bad usage or a file it cannot read; 1 when the
 * table is more than 3/4 full (SLOTS too small: nothing grows).
 *
 * What it assumes, and scan does not: a pcap file in this machine's byte
 * order (microsecond or nanosecond times), Ethernet frames, IPv4 without
 * options, TCP, all at fixed offsets (tests/wire/model.c's captures);
 * a frame that is not (ethertype, version and header length, protocol
 * tested at once) is counted in the walk and skipped. No decoding
 * beyond the 4-tuple, no sequence numbers, no signature, no expiry.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define READ_SIZE (256u << 10)
#define PCAP_HDR 24
#define REC_HDR 16
#define SNAP_MAX 262144u          /* a record longer ends the read as bad */
#define BUF_SIZE (READ_SIZE + REC_HDR + SNAP_MAX)
#define BATCH 32 /* prefetch: frames parsed, their slots asked for, before any is updated */
#define LINE 64
#define PAGE 4096

enum level { L_READ, L_WALK, L_HASH, L_TABLE, L_PREFETCH };

/* How the file reaches the walk: read(2) into a buffer, or mapped with
 * MAP_POPULATE, or mapped and faulted in. */
enum source { S_READ, S_MMAP, S_FAULT };

static const char *const source_prefix[] = { "", "mmap", "fault" };

static const char *const level_names[] = { "read", "walk", "hash", "table", "prefetch" };

/* A connection's slot: its first line. key_lo has bit 63 set once used
 * (an end is 48 bits: address << 16 | port). */
struct slot {
	uint64_t key_lo, key_hi;
	uint32_t last_us, packets;
	uint32_t dir_packets[2];
	uint8_t pad[LINE - 32];
};

_Static_assert(sizeof(struct slot) == LINE, "a slot's first line is one cache line");

/* A frame's connection, between its parse and its lookup. */
struct key {
	uint64_t lo, hi, hash;
	uint32_t ts_us;
	uint32_t src; /* the sender is the higher end */
};

/* The connections: slots of lines cache lines, found from a hash's
 * upper bits (shift = 64 - log2(slots)). */
struct table {
	uint8_t *base;
	uint64_t mask;
	unsigned shift;
	uint64_t conns, max_conns;
};

struct floor_run {
	enum level level;
	int nano;          /* the file's times are in ns */
	uint32_t lines;    /* cache lines a slot */
	struct table t;
	uint64_t records, skipped, sum;
};

static double seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static inline uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* Is frame d (caplen bytes) Ethernet, IPv4 of 20 bytes, TCP? One
 * compare each for the three fields. */
static inline int is_ipv4_tcp(const uint8_t *d, uint32_t caplen)
{
	return caplen >= 54 && (rd32(d + 12) & 0xffffff) == 0x450008 && d[23] == 6;
}

/* The connection of frame d at ts_us: its ends ordered, each as address
 * << 16 | port, and hashed (scan's mix: wire_int.h, nf_conn_hash_mix). */
static inline void key_of(const uint8_t *d, uint32_t ts_us, struct key *k)
{
	uint64_t addrs = rd64(d + 26); /* saddr, daddr as on the wire */
	uint32_t ports = rd32(d + 34); /* sport, dport as on the wire */
	uint64_t ks = (uint64_t)__builtin_bswap32((uint32_t)addrs) << 16 |
		      __builtin_bswap16((uint16_t)ports);
	uint64_t kd = (uint64_t)__builtin_bswap32((uint32_t)(addrs >> 32)) << 16 |
		      __builtin_bswap16((uint16_t)(ports >> 16));
	uint64_t src = ks > kd, x = (ks ^ kd) & -src, h;

	/* by a mask: a branch on the sender is mispredicted about every
	 * other frame (the traffic goes both ways) */
	k->src = (uint32_t)src;
	k->lo = ks ^ x;
	k->hi = kd ^ x;
	h = k->lo * 0x9e3779b97f4a7c15ull + k->hi * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 32;
	h *= 0xff51afd7ed558ccdull;
	k->hash = h ^ h >> 29;
	k->ts_us = ts_us;
}

/* The slot of hash in t, of lines cache lines. */
static inline struct slot *slot_of(const struct table *t, uint32_t lines, uint64_t hash)
{
	return (struct slot *)(t->base + (hash >> t->shift) * lines * LINE);
}

/* The slot of k's connection, found or taken. NULL when the table is
 * 3/4 full. */
static inline struct slot *find(struct table *t, uint32_t lines, const struct key *k)
{
	uint64_t pos = k->hash >> t->shift, used = k->lo | 1ull << 63;
	struct slot *s;

	for (;; pos = (pos + 1) & t->mask) {
		s = (struct slot *)(t->base + pos * lines * LINE);
		if (s->key_lo == used && s->key_hi == k->hi)
			return s;
		if (!s->key_lo)
			break;
	}
	if (t->conns >= t->max_conns)
		return NULL;
	t->conns++;
	s->key_lo = used;
	s->key_hi = k->hi;
	return s;
}

/* k's connection: its state updated, and a counter in each further line.
 * Its packets so far, or 0 (the table is full). */
static inline uint32_t update(struct table *t, uint32_t lines, const struct key *k)
{
	struct slot *s = find(t, lines, k);

	if (!s)
		return 0;
	s->last_us = k->ts_us;
	s->dir_packets[k->src]++;
	for (uint32_t l = 1; l < lines; l++)
		((uint32_t *)s)[l * LINE / 4]++;
	return ++s->packets;
}

/* The n keys of k updated, their packet counts added to *sum. 0, or -1
 * (the table is full). */
static inline int update_all(struct table *t, uint32_t lines, const struct key *k, unsigned n,
			     uint64_t *sum)
{
	for (unsigned i = 0; i < n; i++) {
		uint32_t p = update(t, lines, &k[i]);

		if (!p)
			return -1;
		*sum += p;
	}
	return 0;
}

/* The records whole in buf[start, end) at level lv, slots of lines lines
 * (constants where it is inlined). Returns where the first record not
 * whole begins; end + 1 when a record is bad (longer than SNAP_MAX) or
 * the table is full. The run's numbers are kept in locals meanwhile:
 * the slots' stores would make the compiler read them again from r. */
static inline __attribute__((always_inline)) size_t walk(struct floor_run *r, enum level lv,
							 uint32_t lines, const uint8_t *buf,
							 size_t start, size_t end)
{
	uint64_t sum = r->sum, records = r->records, skipped = r->skipped;
	struct table t = r->t;
	struct key batch[BATCH];
	unsigned nb = 0;
	int nano = r->nano;
	size_t ret = end + 1;

	while (end - start >= REC_HDR) {
		const uint8_t *h = buf + start, *d = h + REC_HDR;
		uint32_t caplen = rd32(h + 8), frac = rd32(h + 4), ts_us, n;
		struct key k;

		if (caplen > SNAP_MAX)
			goto out;
		if (caplen > end - start - REC_HDR)
			break;
		start += REC_HDR + caplen;
		records++;
		ts_us = rd32(h) * 1000000u + (nano ? frac / 1000 : frac); /* low 32 bits */
		if (lv == L_WALK) {
			sum += ts_us;
			continue;
		}
		if (!is_ipv4_tcp(d, caplen)) {
			skipped++;
			continue;
		}
		key_of(d, ts_us, &k);
		if (lv == L_HASH) {
			sum += k.hash;
		} else if (lv == L_TABLE) {
			if (!(n = update(&t, lines, &k)))
				goto out;
			sum += n;
		} else {
			for (uint32_t l = 0; l < lines; l++)
				__builtin_prefetch((char *)slot_of(&t, lines, k.hash) + l * LINE, 1);
			batch[nb++] = k;
			if (nb == BATCH) {
				if (update_all(&t, lines, batch, nb, &sum) < 0)
					goto out;
				nb = 0;
			}
		}
	}
	if (update_all(&t, lines, batch, nb, &sum) == 0)
		ret = start;
out:
	r->sum = sum;
	r->records = records;
	r->skipped = skipped;
	r->t = t;
	return ret;
}

/* walk for r's level; a slot of one line as a constant. */
static size_t walk_level(struct floor_run *r, const uint8_t *buf, size_t start, size_t end)
{
	switch (r->level) {
	case L_WALK:
		return walk(r, L_WALK, 1, buf, start, end);
	case L_HASH:
		return walk(r, L_HASH, 1, buf, start, end);
	case L_TABLE:
		if (r->lines == 1)
			return walk(r, L_TABLE, 1, buf, start, end);
		return walk(r, L_TABLE, r->lines, buf, start, end);
	default:
		if (r->lines == 1)
			return walk(r, L_PREFETCH, 1, buf, start, end);
		return walk(r, L_PREFETCH, r->lines, buf, start, end);
	}
}

/* The file on fd after its 24-byte header, read and walked. 0, or -1
 * (a read error, a bad record, the table full: said on stderr). */
static int run(struct floor_run *r, int fd, uint8_t *buf)
{
	size_t start = 0, end = 0;
	ssize_t got;

	while ((got = read(fd, buf + end, READ_SIZE)) > 0) {
		end += (size_t)got;
		if (r->level == L_READ) {
			r->sum += buf[0];
			end = 0;
			continue;
		}
		start = walk_level(r, buf, start, end);
		if (start > end) {
			fputs("scan_floor: a bad record, or the table is full\n", stderr);
			return -1;
		}
		memmove(buf, buf + start, end - start);
		end -= start;
		start = 0;
	}
	if (got < 0) {
		perror("scan_floor: read");
		return -1;
	}
	return 0;
}

/* The pcap header h (PCAP_HDR bytes, or NULL when the file is shorter):
 * this machine's byte order, Ethernet. Sets the time unit. 0, or -1
 * (said on stderr). */
static int header_check(struct floor_run *r, const uint8_t *h)
{
	if (!h)
		goto bad;
	if (rd32(h) == 0xa1b2c3d4u)
		r->nano = 0;
	else if (rd32(h) == 0xa1b23c4du)
		r->nano = 1;
	else
		goto bad;
	if (rd32(h + 20) == 1)
		return 0;
bad:
	fputs("scan_floor: not a pcap file of Ethernet frames in this machine's byte order\n",
	      stderr);
	return -1;
}

/* The pcap header read from fd, checked. 0, or -1 (said on stderr). */
static int header(struct floor_run *r, int fd)
{
	uint8_t h[PCAP_HDR];

	return header_check(r, read(fd, h, sizeof(h)) == (ssize_t)sizeof(h) ? h : NULL);
}

/* The n bytes at p: one of each page read into r's sum. */
static void touch_pages(struct floor_run *r, const uint8_t *p, size_t n)
{
	for (size_t off = 0; off < n; off += PAGE)
		r->sum += ((const volatile uint8_t *)p)[off];
}

/* The file on fd mapped (MAP_POPULATE when populate), its header checked
 * and its records walked in place, unmapped. 0, or -1 (said on stderr).
 * A partial record at the end is left, as run leaves it. */
static int run_mapped(struct floor_run *r, int fd, int populate)
{
	struct stat st;
	uint8_t *p;
	size_t n;
	int rc = 0;

	if (fstat(fd, &st) < 0 || (n = (size_t)st.st_size) == 0) {
		fputs("scan_floor: cannot size the file, or it is empty\n", stderr);
		return -1;
	}
	p = mmap(NULL, n, PROT_READ, MAP_PRIVATE | (populate ? MAP_POPULATE : 0), fd, 0);
	if (p == MAP_FAILED) {
		perror("scan_floor: mmap");
		return -1;
	}
	if (header_check(r, n >= PCAP_HDR ? p : NULL) < 0) {
		rc = -1;
	} else if (r->level == L_READ) {
		touch_pages(r, p, n);
	} else if (walk_level(r, p, PCAP_HDR, n) > n) {
		fputs("scan_floor: a bad record, or the table is full\n", stderr);
		rc = -1;
	}
	munmap(p, n);
	return rc;
}

/* The table: slots of lines cache lines, its pages taken in at once
 * (as scan's connections are). 0, or -1. */
static int table_make(struct floor_run *r, uint64_t slots, uint32_t lines)
{
	size_t len = slots * lines * LINE;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
#ifdef MADV_POPULATE_WRITE
	madvise(p, len, MADV_POPULATE_WRITE);
#endif
	r->t.base = p;
	r->t.mask = slots - 1;
	r->t.shift = (unsigned)__builtin_clzll(slots) + 1;
	r->t.max_conns = slots / 4 * 3;
	r->lines = lines;
	return 0;
}

/* NAME's level in level_names, or -1. */
static int level_named(const char *name)
{
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcmp(name, level_names[i]) == 0)
			return (int)i;
	return -1;
}

/* LEVEL's number and *src its source: "walk" (read), "mmap-walk",
 * "fault-walk"; "mmap" and "fault" alone are the read level mapped.
 * -1 for no level. */
static int level_of(const char *name, enum source *src)
{
	size_t n;
	int lv;

	for (int i = S_FAULT; i > S_READ; i--) {
		n = strlen(source_prefix[i]);
		if (strncmp(name, source_prefix[i], n) != 0)
			continue;
		*src = (enum source)i;
		if (!name[n])
			return L_READ;
		lv = name[n] == '-' ? level_named(name + n + 1) : -1;
		return lv == L_READ ? -1 : lv;
	}
	*src = S_READ;
	return level_named(name);
}

int main(int argc, char **argv)
{
	static struct floor_run r;
	uint64_t slots = argc > 3 ? strtoull(argv[3], NULL, 0) : 131072;
	uint32_t lines = argc > 4 ? (uint32_t)atoi(argv[4]) : 1;
	enum source src = S_READ;
	int lv = argc > 2 ? level_of(argv[1], &src) : -1, fd, rc;
	uint8_t *buf = NULL;
	double t0;

	if (lv < 0 || slots < 2 || (slots & (slots - 1)) || lines < 1 || lines > 4) {
		fputs("usage: scan_floor LEVEL CAPTURE [SLOTS [LINES]]\n"
		      "LEVEL: read, mmap, fault, or [mmap-|fault-]walk|hash|table|prefetch\n",
		      stderr);
		return 2;
	}
	r.level = (enum level)lv;
	if ((fd = open(argv[2], O_RDONLY)) < 0) {
		perror(argv[2]);
		return 2;
	}
	if (src == S_READ && (!(buf = malloc(BUF_SIZE)) || header(&r, fd) < 0))
		return 2;
	if (lv >= L_TABLE && table_make(&r, slots, lines) < 0)
		return 2;
	t0 = seconds();
	rc = src == S_READ ? run(&r, fd, buf) : run_mapped(&r, fd, src == S_MMAP);
	t0 = seconds() - t0;
	printf("scan_floor %s: %llu records, %llu connections, %.4f s in the loop, checksum %llx\n",
	       argv[1], (unsigned long long)r.records, (unsigned long long)r.t.conns, t0,
	       (unsigned long long)r.sum);
	return rc < 0 ? (r.t.conns && r.t.conns >= r.t.max_conns ? 1 : 2) : 0;
}
