/*
 * check_ring.c - the live capture (src/wire/ring.c) on this host's real
 * loopback: a TCP connection made in the test, its segments seen exactly
 * once each with their payload lengths and direction; UDP filtered out in
 * the kernel; the headers kept, not the payload; the drop count read (and
 * made to grow by a ring left unread); a reader away for 1.5 s at a low
 * rate losing nothing, and the smallest ring away for 0.3 s (the sender's
 * time measured: its premise checked); a take that
 * does not wait; a ring stopped; the errors for an unknown interface
 * and a process without CAP_NET_RAW; the same of a queue (no ring: the
 * socket's own queue), which maps nothing, keeps a burst nobody reads
 * up to its size and counts what it drops past it. Needs CAP_NET_RAW (root): without it
 * the program says SKIP. Each test runs in a network namespace of its own
 * (CAP_SYS_ADMIN), so no other program's loopback traffic reaches its ring.
 * The frames are parsed here by hand (not by nf_pkt_decode), so the ring
 * is tested on its own.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wire/nf_ring.h"
#include "../unit/unit.h"

/* What the test reads of a frame. */
struct seen {
	int family, proto;
	uint16_t sport, dport;
	uint32_t iplen;   /* the length the IP header gives */
	int32_t payload;  /* TCP payload bytes; -1 not TCP or cut short */
};

static void parse(const struct nf_ring_frame *f, struct seen *s)
{
	const uint8_t *d = f->data;
	uint32_t hl;

	memset(s, 0, sizeof(*s));
	s->payload = -1;
	if (f->ethertype == ETH_P_IP && f->caplen >= 20) {
		s->family = AF_INET;
		hl = (d[0] & 15u) * 4;
		s->proto = d[9];
		s->iplen = (uint32_t)d[2] << 8 | d[3];
	} else if (f->ethertype == ETH_P_IPV6 && f->caplen >= 40) {
		s->family = AF_INET6;
		hl = 40;
		s->proto = d[6];
		s->iplen = 40 + ((uint32_t)d[4] << 8 | d[5]);
	} else {
		return;
	}
	if (f->caplen < hl + 4)
		return;
	s->sport = (uint16_t)(d[hl] << 8 | d[hl + 1]);
	s->dport = (uint16_t)(d[hl + 2] << 8 | d[hl + 3]);
	if (s->proto == IPPROTO_TCP && f->caplen >= hl + 13)
		s->payload = (int32_t)(s->iplen - hl - (uint32_t)(d[hl + 12] >> 4) * 4);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The longest a test reads for frames that must come: only a host that
 * keeps this process off the CPU takes more than some ms. */
#define WAIT_NS 10000000000u
/* After the last frame expected: a read this long that finds nothing
 * (the kernel hands a block over by its timer within 10 ms of a frame,
 * so a frame seen twice shows up in it). */
#define QUIET_MS 300

/* This thread's time runnable but off a CPU so far (ns; the second
 * field of schedstat), 0 if the kernel does not say. */
static uint64_t run_delay_ns(void)
{
	unsigned long long on = 0, delay = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	if (f) {
		if (fscanf(f, "%llu %llu", &on, &delay) != 2)
			delay = 0;
		fclose(f);
	}
	return delay;
}

/* The times this thread went to sleep so far (voluntary switches). */
static long sleeps(void)
{
	struct rusage ru;

	ck_assert_int_eq(getrusage(RUSAGE_THREAD, &ru), 0);
	return ru.ru_nvcsw;
}

static uint16_t port_of(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
	return ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					     : ((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* A connected pair on loopback (family), Nagle off on both so each send
 * is a segment of its own; *srv the accepted end. */
static int pair(int family, int *srv)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1, l = socket(family, SOCK_STREAM, 0), c = socket(family, SOCK_STREAM, 0);

	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	}
	ck_assert_int_eq(bind(l, (struct sockaddr *)&ss, len), 0);
	ck_assert_int_eq(listen(l, 1), 0);
	ck_assert_int_eq(getsockname(l, (struct sockaddr *)&ss, &len), 0);
	ck_assert_int_eq(connect(c, (struct sockaddr *)&ss, len), 0);
	*srv = accept(l, NULL, NULL);
	ck_assert_int_ge(*srv, 0);
	close(l);
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(*srv, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return c;
}

static void read_n(int fd, size_t n)
{
	char buf[4096];

	while (n > 0) {
		ssize_t got = read(fd, buf, n < sizeof(buf) ? n : sizeof(buf));

		ck_assert_int_gt(got, 0);
		n -= (size_t)got;
	}
}

static struct nf_ring *open_ring(const char *ifname, unsigned kib)
{
	char err[NF_RING_ERR_MAX];
	struct nf_ring *r = nf_ring_open(ifname, kib, 0, err);

	ck_assert_msg(r != NULL, "nf_ring_open(%s): %s", ifname ? ifname : "any", err);
	return r;
}

#define SIZES 5
static const size_t sizes[SIZES] = { 1, 7, 100, 333, 1000 };

/*
 * Sends sizes[] from the client, each answered by 2 bytes, over a new
 * connection of family, with the ring r open; then reads the ring until
 * all those were seen (WAIT_NS at most) and a read of QUIET_MS finds
 * nothing more, and checks that each of the client's segments of data
 * was seen exactly once (payload length, PACKET_HOST on lo, a kernel
 * time between the test's start and end), the answers too, and every
 * frame cut to the headers with its length on the wire kept.
 */
static void see_each_once(struct nf_ring *r, int family)
{
	uint64_t t0 = now_ns(), t1; /* before the handshake */
	int srv, c = pair(family, &srv);
	uint16_t cport = port_of(c), sport = port_of(srv);
	int count[SIZES] = { 0 }, answers = 0, frames = 0, all = 0;
	char buf[1000];
	struct nf_ring_frame f;
	struct seen s;

	memset(buf, 'x', sizeof(buf));
	for (int i = 0; i < SIZES; i++) {
		ck_assert_int_eq(write(c, buf, sizes[i]), (ssize_t)sizes[i]);
		read_n(srv, sizes[i]);
		ck_assert_int_eq(write(srv, "ok", 2), 2);
		read_n(c, 2);
	}
	close(c);
	close(srv);
	t1 = now_ns();
	for (uint64_t end = now_ns() + WAIT_NS; now_ns() < end;) {
		if (nf_ring_next(r, all ? QUIET_MS : 50, &f) != 1) {
			if (all)
				break;
			continue;
		}
		parse(&f, &s);
		if (s.family != family || s.proto != IPPROTO_TCP ||
		    !((s.sport == cport && s.dport == sport) || (s.sport == sport && s.dport == cport)))
			continue;
		frames++;
		ck_assert_uint_le(f.caplen, NF_RING_SNAP);
		ck_assert_uint_eq(f.origlen, s.iplen);
		ck_assert_int_eq(f.pkttype, PACKET_HOST);
		/* data went out before t1; an ACK or FIN after the close may be
		 * stamped later on a loaded machine, never after its reading */
		ck_assert_int_ge(s.payload, 0);
		ck_assert_msg(f.ts_ns >= t0 - 1000000u &&
				      f.ts_ns <= (s.payload ? t1 : now_ns()) + 1000000u,
			      "time %llu not within the test's (%d bytes)", (unsigned long long)f.ts_ns,
			      s.payload);
		if (s.sport == sport && s.payload == 2)
			answers++;
		all = answers >= SIZES && frames >= 2 * SIZES + 3;
		for (int i = 0; i < SIZES; i++) {
			if (s.sport == cport && (size_t)s.payload == sizes[i])
				count[i]++;
			all = all && count[i] > 0;
		}
	}
	for (int i = 0; i < SIZES; i++)
		ck_assert_msg(count[i] == 1, "the %zu-byte segment seen %d times", sizes[i], count[i]);
	ck_assert_int_eq(answers, SIZES);
	/* and the handshake and the closing: SYN, SYN-ACK, ACK, FIN... each once */
	ck_assert_int_ge(frames, 2 * SIZES + 3);
}

START_TEST(test_ring_loopback_ipv4_once_on_any)
{
	struct nf_ring *r = open_ring(NULL, 0);

	see_each_once(r, AF_INET);
	nf_ring_close(r);
}
END_TEST

START_TEST(test_ring_loopback_ipv6_once_on_any)
{
	struct nf_ring *r = open_ring("any", 0);

	see_each_once(r, AF_INET6);
	nf_ring_close(r);
}
END_TEST

START_TEST(test_ring_loopback_once_on_lo)
{
	struct nf_ring *r = open_ring("lo", 0);

	see_each_once(r, AF_INET);
	nf_ring_close(r);
}
END_TEST

/* UDP to a port of ours is dropped by the kernel's filter; TCP sent after
 * it still comes, so the ring was reading (read until it came, WAIT_NS
 * at most, and then a read of QUIET_MS finds nothing). */
START_TEST(test_ring_udp_filtered_out)
{
	struct nf_ring *r = open_ring(NULL, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int u = socket(AF_INET, SOCK_DGRAM, 0), srv, c, udp = 0, tcp = 0;
	uint16_t uport, cport;
	struct nf_ring_frame f;
	struct seen s;

	ck_assert_int_eq(bind(u, (struct sockaddr *)&a, len), 0);
	ck_assert_int_eq(getsockname(u, (struct sockaddr *)&a, &len), 0);
	uport = ntohs(a.sin_port);
	for (int i = 0; i < 20; i++)
		ck_assert_int_eq(sendto(u, "udp!", 4, 0, (struct sockaddr *)&a, len), 4);
	c = pair(AF_INET, &srv);
	cport = port_of(c);
	ck_assert_int_eq(write(c, "tcp", 3), 3);
	read_n(srv, 3);
	for (uint64_t end = now_ns() + WAIT_NS; now_ns() < end;) {
		if (nf_ring_next(r, tcp ? QUIET_MS : 50, &f) != 1) {
			if (tcp)
				break;
			continue;
		}
		parse(&f, &s);
		udp += s.proto == IPPROTO_UDP;
		udp += s.dport == uport && s.sport == uport;
		tcp += s.proto == IPPROTO_TCP && s.sport == cport && s.payload == 3;
	}
	ck_assert_int_eq(udp, 0);
	ck_assert_int_eq(tcp, 1);
	close(u);
	close(c);
	close(srv);
	nf_ring_close(r);
}
END_TEST

/* The kernel's counts are read and added up; a ring of one block that
 * nobody reads overflows, and the drops are counted. */
START_TEST(test_ring_drops_counted)
{
	struct nf_ring *r = open_ring("lo", 1024);
	struct nf_ring_stats st, st2;
	int srv, c = pair(AF_INET, &srv);
	char buf[64] = { 0 };

	ck_assert_int_eq(nf_ring_stats(r, &st), 0);
	ck_assert_uint_eq(st.drops, 0);
	/* a 1 MiB ring holds a few thousand frames of ~250 bytes */
	size_t pending = 0;

	for (int i = 0; i < 20000; i++) {
		ck_assert_int_eq(write(c, buf, 1 + i % 32), 1 + i % 32);
		pending += 1 + (size_t)(i % 32);
		if (i % 64 == 63)
			read_n(srv, pending), pending = 0;
	}
	usleep(100000);
	ck_assert_int_eq(nf_ring_stats(r, &st), 0);
	ck_assert_uint_gt(st.drops, 0);
	ck_assert_uint_ge(st.packets, st.drops);
	/* a second read adds the kernel's new counts (reset at each read) to the first */
	ck_assert_int_eq(nf_ring_stats(r, &st2), 0);
	ck_assert_uint_ge(st2.drops, st.drops);
	ck_assert_uint_ge(st2.packets, st.packets);
	close(c);
	close(srv);
	nf_ring_close(r);
}
END_TEST

/* A ring's blocks are handed over RETIRE_MS after their first packet
 * (nf_ring_open's default): a ring of n blocks that nobody reads lasts
 * n * RETIRE_MS of packets trickling in, one block each RETIRE_MS. */
#define RETIRE_MS 10
/* Runs of a sender that outran the ring's span, before the test gives up */
#define TRIES 3

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A ring read out after a sender's rounds: what it saw, what it lost. */
struct away {
	uint64_t ms;    /* the rounds' wall time: how long the ring went unread */
	uint64_t drops; /* the kernel's count */
	int got;        /* the client's one-byte segments seen */
};

/* rounds one-byte writes over a new loopback connection, each read by
 * its peer, one each 5 ms, with a ring of kib KiB on lo that nobody
 * reads meanwhile; then the ring read out and closed. */
static struct away away_rounds(unsigned kib, int rounds)
{
	struct nf_ring *r = open_ring("lo", kib);
	struct nf_ring_stats st;
	struct nf_ring_frame f;
	struct seen s;
	struct away a = { 0, 0, 0 };
	int srv, c = pair(AF_INET, &srv);
	uint16_t cport = port_of(c);
	uint64_t t0 = mono_ms();

	if (kib == 1)
		ck_assert_uint_eq(nf_ring_bytes(r), 256u << 10);
	for (int i = 0; i < rounds; i++) {
		ck_assert_int_eq(write(c, "x", 1), 1);
		read_n(srv, 1);
		usleep(5000);
	}
	a.ms = mono_ms() - t0;
	while (nf_ring_next(r, 100, &f) == 1) {
		parse(&f, &s);
		a.got += s.sport == cport && s.payload == 1;
	}
	ck_assert_int_eq(nf_ring_stats(r, &st), 0);
	a.drops = st.drops;
	close(c);
	close(srv);
	nf_ring_close(r);
	return a;
}

/*
 * A ring of kib KiB that must last blocks * RETIRE_MS holds every one of
 * rounds sent at a low rate, nothing dropped. Its premise, that the ring
 * outlasts the sender, is timed: a run whose sender took more than 80%
 * of that span (a busy host kept it off the CPU, each round a block of
 * its own) and lost packets proves nothing and is run again, up to
 * TRIES times. Any other run is judged: one within the span that lost a
 * packet fails at once, as does a ring that lasts less (each run loses
 * then), and so do TRIES runs that all outran it.
 */
static void outlasts(unsigned kib, unsigned blocks, int rounds)
{
	uint64_t span = (uint64_t)blocks * RETIRE_MS, took[TRIES];
	struct away a;

	for (int t = 0; t < TRIES; t++) {
		a = away_rounds(kib, rounds);
		took[t] = a.ms;
		if (a.ms * 10 <= span * 8 || a.drops == 0) {
			ck_assert_msg(a.drops == 0 && a.got == rounds,
				      "%d of %d rounds seen, %llu dropped, in %llu ms (the ring: %llu ms)",
				      a.got, rounds, (unsigned long long)a.drops,
				      (unsigned long long)a.ms, (unsigned long long)span);
			return;
		}
	}
	ck_abort_msg("the sender took %llu, %llu and %llu ms, past 80%% of the ring's %llu ms, "
		     "and lost packets each time: the ring's span not checked",
		     (unsigned long long)took[0], (unsigned long long)took[1],
		     (unsigned long long)took[2], (unsigned long long)span);
}

/* A reader that looks away for 1.5 s while packets trickle in (one each
 * 5 ms: the kernel hands over a block per 10 ms, holding two or so): the
 * default ring (256 blocks: 2.56 s) must last that long with nothing
 * dropped (16 blocks of 1 MiB lasted 160 ms, and dropped). */
START_TEST(test_ring_slow_reader_low_rate)
{
	outlasts(0, 256, 300);
}
END_TEST

/* The smallest ring (256 KiB: 64 blocks of a page, what watch gives a
 * namespace at first) and a reader away for 0.3 s at a low rate (a
 * round each 5 ms): nothing lost (64 blocks of 10 ms last 640 ms; 4
 * blocks of 64 KiB, the same bytes in the old geometry, last 40 ms). */
START_TEST(test_ring_small_ring_lasts)
{
	outlasts(1, 64, 60);
}
END_TEST

/* nf_ring_take hands over what the kernel has, and on an empty ring
 * returns 0 without sleeping (this thread's voluntary switches); the
 * ring knows its loopback's ifindex, and a frame of lo carries it. */
START_TEST(test_ring_take_without_waiting)
{
	struct nf_ring *r = open_ring(NULL, 0);
	struct nf_ring_frame f;
	int srv, c = pair(AF_INET, &srv), got = 0;
	long slept;

	ck_assert_uint_eq(nf_ring_loopback(r), if_nametoindex("lo"));
	ck_assert_int_eq(write(c, "take", 4), 4);
	read_n(srv, 4);
	for (int i = 0; i < 50 && !got; i++) {
		usleep(20000);
		while (nf_ring_take(r, &f) == 1)
			got += f.ifindex == (int)nf_ring_loopback(r);
	}
	ck_assert_int_gt(got, 0);
	while (nf_ring_take(r, &f) == 1)
		;
	slept = sleeps();
	ck_assert_int_eq(nf_ring_take(r, &f), 0);
	slept = sleeps() - slept;
	ck_assert_msg(slept == 0, "an empty take slept %ld times", slept);
	close(c);
	close(srv);
	nf_ring_close(r);
}
END_TEST

/* A ring stopped keeps what it received and receives nothing more; the
 * blocks handed back are counted. */
START_TEST(test_ring_stop)
{
	struct nf_ring *r = open_ring("lo", 1);
	struct nf_ring_frame f;
	struct seen s;
	int srv, c = pair(AF_INET, &srv), before = 0, after = 0;
	uint16_t cport = port_of(c);
	unsigned nblocks;

	ck_assert_int_eq(write(c, "before", 6), 6);
	read_n(srv, 6);
	usleep(50000); /* its block handed over */
	ck_assert_int_eq(nf_ring_stop(r), 0);
	ck_assert_int_eq(write(c, "after!!", 7), 7);
	read_n(srv, 7);
	usleep(50000);
	while (nf_ring_next(r, 50, &f) == 1) {
		parse(&f, &s);
		before += s.sport == cport && s.payload == 6;
		after += s.sport == cport && s.payload == 7;
	}
	ck_assert_int_eq(before, 1);
	ck_assert_int_eq(after, 0);
	ck_assert_uint_gt(nf_ring_blocks(r, &nblocks), 0);
	ck_assert_uint_eq(nblocks, 64);
	close(c);
	close(srv);
	nf_ring_close(r);
}
END_TEST

/* An idle ring returns 0 after its timeout, not before, and not much
 * after: under 1 s of the wall less the time this thread was runnable
 * but kept off a CPU (a busy host delays its wake-up, not the ring). */
START_TEST(test_ring_timeout)
{
	struct nf_ring *r = open_ring("lo", 0);
	struct nf_ring_frame f;
	struct timespec a, b;
	uint64_t delay;
	int rc;

	/* let loopback go quiet, then read what is there */
	while (nf_ring_next(r, 20, &f) == 1)
		;
	delay = run_delay_ns();
	clock_gettime(CLOCK_MONOTONIC, &a);
	rc = nf_ring_next(r, 100, &f);
	clock_gettime(CLOCK_MONOTONIC, &b);
	delay = run_delay_ns() - delay;
	if (rc == 0) {
		double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
		double off = (double)delay / 1e6;

		ck_assert_msg(ms >= 90 && ms - off < 1000, "returned after %.1f ms (%.1f ms off a CPU)",
			      ms, off);
	}
	ck_assert_int_ge(rc, 0);
	nf_ring_close(r);
}
END_TEST

START_TEST(test_ring_unknown_interface)
{
	char err[NF_RING_ERR_MAX];

	ck_assert_ptr_null(nf_ring_open("nf-no-such0", 0, 0, err));
	ck_assert_int_eq(errno, ENODEV);
	ck_assert_ptr_nonnull(strstr(err, "nf-no-such0"));
}
END_TEST

/* A process that is not root (and so has no CAP_NET_RAW) gets EPERM and
 * a line that names the capability. */
START_TEST(test_ring_no_cap_net_raw)
{
	int pipefd[2], status;
	pid_t pid;
	char line[NF_RING_ERR_MAX + 16] = { 0 };

	ck_assert_int_eq(pipe(pipefd), 0);
	pid = fork();
	if (pid == 0) {
		char err[NF_RING_ERR_MAX];
		struct nf_ring *r;

		if (setgid(65534) || setuid(65534))
			_exit(2);
		r = nf_ring_open(NULL, 0, 0, err);
		dprintf(pipefd[1], "%d %s", r ? 0 : errno, r ? "" : err);
		_exit(r ? 1 : 0);
	}
	close(pipefd[1]);
	ck_assert_int_gt(read(pipefd[0], line, sizeof(line) - 1), 0);
	close(pipefd[0]);
	waitpid(pid, &status, 0);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_int_eq(atoi(line), EPERM);
	ck_assert_ptr_nonnull(strstr(line, "CAP_NET_RAW"));
}
END_TEST

/* ---- a queue: no ring mapped, the socket's own queue ---------------------------- */

static struct nf_ring *open_queue(const char *ifname, unsigned kib)
{
	char err[NF_RING_ERR_MAX];
	struct nf_ring *r = nf_ring_open_queue(ifname, kib, err);

	ck_assert_msg(r != NULL, "nf_ring_open_queue(%s): %s", ifname ? ifname : "any", err);
	return r;
}

/* A queue reads each segment once, cut to its headers, with its time,
 * its length on the wire and its direction, as a ring does; it maps no
 * byte into the process. */
START_TEST(test_ring_queue_once_on_any)
{
	struct nf_ring *r = open_queue(NULL, 1024);

	ck_assert_uint_eq(nf_ring_bytes(r), 0);
	see_each_once(r, AF_INET);
	nf_ring_close(r);
}
END_TEST

START_TEST(test_ring_queue_once_on_lo)
{
	struct nf_ring *r = open_queue("lo", 1024);

	see_each_once(r, AF_INET6);
	nf_ring_close(r);
}
END_TEST

/* What waits in a queue nobody reads is kept up to its size (a burst
 * read later, whole), past it dropped and counted; the frames read turn
 * its blocks over (NF_RING_QUEUE_FRAMES a block). */
START_TEST(test_ring_queue_holds_then_counts_drops)
{
	struct nf_ring *big = open_queue("lo", 32u << 10), *small = open_queue("lo", 64);
	struct nf_ring_stats st;
	struct nf_ring_frame f;
	int srv, c = pair(AF_INET, &srv), got = 0;
	uint16_t cport = port_of(c);
	unsigned nblocks;
	struct seen s;

	for (int i = 0; i < 5000; i++) {
		ck_assert_int_eq(write(c, "0123456789", 10), 10);
		read_n(srv, 10);
	}
	usleep(100000);
	while (nf_ring_take(big, &f) == 1) {
		parse(&f, &s);
		got += s.sport == cport && s.payload == 10;
	}
	ck_assert_int_eq(got, 5000);
	ck_assert_uint_ge(nf_ring_blocks(big, &nblocks), 5000 / NF_RING_QUEUE_FRAMES);
	ck_assert_uint_eq(nblocks, NF_RING_QUEUE_BLOCKS);
	ck_assert_int_eq(nf_ring_stats(big, &st), 0);
	ck_assert_uint_eq(st.drops, 0);
	ck_assert_int_eq(nf_ring_stats(small, &st), 0);
	ck_assert_uint_gt(st.drops, 0);
	ck_assert_uint_ge(st.packets, 10000);
	close(c);
	close(srv);
	nf_ring_close(big);
	nf_ring_close(small);
}
END_TEST

/* A queue stopped keeps what it received and receives nothing more. */
START_TEST(test_ring_queue_stop)
{
	struct nf_ring *r = open_queue("lo", 1024);
	struct nf_ring_frame f;
	struct seen s;
	int srv, c = pair(AF_INET, &srv), before = 0, after = 0;
	uint16_t cport = port_of(c);

	ck_assert_int_eq(write(c, "before", 6), 6);
	read_n(srv, 6);
	ck_assert_int_eq(nf_ring_stop(r), 0);
	ck_assert_int_eq(write(c, "after!!", 7), 7);
	read_n(srv, 7);
	usleep(50000);
	while (nf_ring_next(r, 50, &f) == 1) {
		parse(&f, &s);
		before += s.sport == cport && s.payload == 6;
		after += s.sport == cport && s.payload == 7;
	}
	ck_assert_int_eq(before, 1);
	ck_assert_int_eq(after, 0);
	close(c);
	close(srv);
	nf_ring_close(r);
}
END_TEST

/* The test's process in a network namespace of its own, its loopback up:
 * its rings see the test's traffic alone, not that of programs beside it. */
static void own_netns(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	int fd;

	ck_assert_msg(unshare(CLONE_NEWNET) == 0, "unshare(CLONE_NEWNET): %s", strerror(errno));
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ioctl(fd, SIOCGIFFLAGS, &ifr), 0);
	ifr.ifr_flags |= IFF_UP;
	ck_assert_int_eq(ioctl(fd, SIOCSIFFLAGS, &ifr), 0);
	close(fd);
}

static Suite *ring_suite(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("live");

	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, own_netns, NULL);
	unit_add(tc, test_ring_loopback_ipv4_once_on_any);
	unit_add(tc, test_ring_loopback_ipv6_once_on_any);
	unit_add(tc, test_ring_loopback_once_on_lo);
	unit_add(tc, test_ring_udp_filtered_out);
	unit_add(tc, test_ring_drops_counted);
	unit_add(tc, test_ring_slow_reader_low_rate);
	unit_add(tc, test_ring_small_ring_lasts);
	unit_add(tc, test_ring_take_without_waiting);
	unit_add(tc, test_ring_stop);
	unit_add(tc, test_ring_timeout);
	unit_add(tc, test_ring_unknown_interface);
	unit_add(tc, test_ring_no_cap_net_raw);
	unit_add(tc, test_ring_queue_once_on_any);
	unit_add(tc, test_ring_queue_once_on_lo);
	unit_add(tc, test_ring_queue_holds_then_counts_drops);
	unit_add(tc, test_ring_queue_stop);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	char err[NF_RING_ERR_MAX];
	struct nf_ring *probe = nf_ring_open("lo", 1024, 0, err);

	if (!probe && errno == EPERM) {
		printf("SKIP check_ring: %s\n0 passed, 0 failed\n", err);
		return 0;
	}
	nf_ring_close(probe);
	return unit_run(srunner_create(ring_suite()), "check_ring");
}
