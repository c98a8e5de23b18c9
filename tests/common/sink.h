/*
 * sink.h - the stress tests' peer (tests/common/, on peer.h).
 *
 * It builds on peer.h (and harness.h: CHECK, the seeded generator,
 * FNV-1a) and adds a "sink": a peer for many connections at once, this
 * same executable re-executed as "PROG --sink FD N" with LD_PRELOAD
 * unset, so it never runs with the library. It serves every connection
 * from one epoll loop. Each connection starts with a 4-byte id (0..N-1,
 * host order); everything after it is counted and hashed (FNV-1a, and a
 * plain byte sum that does not depend on order). When N connections have
 * ended, the sink sends one struct st_result per id over the control
 * channel (an AF_UNIX SOCK_SEQPACKET pair, which the library leaves alone)
 * and exits.
 *
 * Everything is static inline: each test uses some of it.
 */
#ifndef NF_TEST_SINK_H
#define NF_TEST_SINK_H

#include <sys/epoll.h>
#include <sys/resource.h>

#include "peer.h"

#define ST_MAX_CONNS 4096
#define ST_CHUNK 256 /* results per control message */

struct st_result {
	uint32_t id;
	int32_t err;      /* the read error that ended it, 0 for EOF */
	int32_t done;     /* the connection ended */
	int32_t pad;
	long long total;  /* bytes after the id */
	uint64_t hash;    /* FNV-1a of them */
	uint64_t sum;     /* sum of their values */
};

/* What the writing side keeps of what it had accepted, per connection. */
struct st_sent {
	long long total;
	uint64_t hash;
	uint64_t sum;
};

static inline void st_account(struct st_sent *s, const void *p, size_t n)
{
	const unsigned char *b = p;

	s->total += (long long)n;
	s->hash = ct_fnv(s->hash, p, n);
	for (size_t i = 0; i < n; i++)
		s->sum += b[i];
}

/* Soft RLIMIT_NOFILE up to the hard one; returns the new soft limit. */
static inline long st_raise_nofile(void)
{
	struct rlimit rl;

	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0, "getrlimit");
	rl.rlim_cur = rl.rlim_max;
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0, "setrlimit");
	return (long)rl.rlim_cur;
}

/* ---- the sink (runs without the library) --------------------------------- */

struct st_sconn {
	int idn;            /* id bytes read so far (4: known) */
	unsigned char idb[4];
	struct st_result r;
};

/* One read on a connection; returns 1 when it ended. */
static inline int st_sink_read(int fd, struct st_sconn *c)
{
	static unsigned char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));
	size_t off = 0;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		c->r.err = n < 0 ? errno : 0;
		return 1;
	}
	while (c->idn < 4 && off < (size_t)n)
		c->idb[c->idn++] = buf[off++];
	if (c->idn == 4 && c->r.done == 0) {
		memcpy(&c->r.id, c->idb, 4);
		c->r.done = -1; /* id known */
	}
	c->r.total += (long long)(n - (ssize_t)off);
	c->r.hash = ct_fnv(c->r.hash, buf + off, (size_t)n - off);
	for (size_t i = off; i < (size_t)n; i++)
		c->r.sum += buf[i];
	return 0;
}

static inline void st_sink_send_results(int ctl, const struct st_result *res, int n)
{
	for (int i = 0; i < n; i += ST_CHUNK) {
		int k = n - i < ST_CHUNK ? n - i : ST_CHUNK;

		if (send(ctl, res + i, (size_t)k * sizeof(*res), MSG_NOSIGNAL) < 0)
			_exit(0); /* the test is gone */
	}
}

static inline void st_sink_main(int ctl, int n)
{
	struct sockaddr_in a = ct_loopback(0);
	socklen_t alen = sizeof(a);
	struct epoll_event ev[64];
	struct st_result *res = calloc((size_t)n, sizeof(*res));
	long limit = st_raise_nofile();
	struct st_sconn *conns = calloc((size_t)limit, sizeof(*conns));
	int lfd, ep, ended = 0, port;

	ct_prog = "sink";
	ct_is_peer = 1;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(CT_PEER_LIFETIME_S * 3);
	signal(SIGPIPE, SIG_IGN);
	CHECK(getenv("LD_PRELOAD") == NULL, "the sink must run without the library");
	CHECK(res && conns && n > 0 && n <= ST_MAX_CONNS, "sink set-up");
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(lfd, 4096) == 0,
	      "sink listen");
	CHECK(getsockname(lfd, (struct sockaddr *)&a, &alen) == 0, "getsockname");
	port = ntohs(a.sin_port);
	CHECK(send(ctl, &port, sizeof(port), 0) == sizeof(port), "sink: report port");
	ep = epoll_create1(EPOLL_CLOEXEC);
	ev[0] = (struct epoll_event){ .events = EPOLLIN, .data.fd = lfd };
	CHECK(ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev[0]) == 0, "epoll");
	while (ended < n) {
		int k = epoll_wait(ep, ev, 64, -1);

		for (int i = 0; i < k; i++) {
			int fd = ev[i].data.fd, nfd;
			struct st_sconn *c = &conns[fd];

			if (fd == lfd) {
				while ((nfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					struct epoll_event e = { .events = EPOLLIN, .data.fd = nfd };

					CHECK(nfd < limit, "fd %d", nfd);
					memset(&conns[nfd], 0, sizeof(conns[nfd]));
					conns[nfd].r.hash = CT_FNV_INIT;
					CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, nfd, &e) == 0, "epoll add");
				}
				continue;
			}
			if (!st_sink_read(fd, c))
				continue;
			if (c->idn == 4 && c->r.id < (uint32_t)n && !res[c->r.id].done) {
				res[c->r.id] = c->r;
				res[c->r.id].done = 1;
			}
			ended++;
			close(fd);
		}
	}
	st_sink_send_results(ctl, res, n);
	_exit(0);
}

/* Turns "PROG --sink FD N" into the sink; returns otherwise. */
static inline void st_maybe_sink(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--sink") == 0)
		st_sink_main(atoi(argv[2]), atoi(argv[3]));
}

struct st_sink {
	pid_t pid;
	int port;
	int ctl;
	int n;
};

/* Starts a sink for n connections. */
static inline void st_sink_start(struct st_sink *s, int n)
{
	char fdarg[16], narg[16];
	struct timeval tv = { .tv_sec = 5 };
	int sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
	snprintf(fdarg, sizeof(fdarg), "%d", sv[1]);
	snprintf(narg, sizeof(narg), "%d", n);
	s->n = n;
	s->pid = fork();
	CHECK(s->pid >= 0, "fork");
	if (s->pid == 0) {
		char *args[] = { (char *)ct_prog, "--sink", fdarg, narg, NULL };

		ct_exec_self(args, sv[1]);
	}
	close(sv[1]);
	s->ctl = sv[0];
	CHECK(setsockopt(s->ctl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0, "SO_RCVTIMEO");
	CHECK(recv(s->ctl, &s->port, sizeof(s->port), 0) == sizeof(s->port), "the sink did not start");
}

/* Waits up to secs for the sink's results (every connection ended). */
static inline void st_sink_results(struct st_sink *s, struct st_result *res, int secs)
{
	struct timeval tv = { .tv_sec = secs };

	CHECK(setsockopt(s->ctl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0, "SO_RCVTIMEO");
	for (int i = 0; i < s->n; i += ST_CHUNK) {
		int k = s->n - i < ST_CHUNK ? s->n - i : ST_CHUNK;
		ssize_t got = recv(s->ctl, res + i, (size_t)k * sizeof(*res), 0);

		CHECK(got == (ssize_t)((size_t)k * sizeof(*res)),
		      "no results from the sink within %d s (got %zd): a connection did not end", secs, got);
	}
	waitpid(s->pid, NULL, 0);
	close(s->ctl);
}

/* A connection to the sink, introduced by its id (a write, as a program's). */
static inline int st_connect(const struct st_sink *s, uint32_t id)
{
	int fd = ct_connect(s->port);

	CHECK(write(fd, &id, sizeof(id)) == sizeof(id), "write the id");
	return fd;
}

/* What the sink got on id must be exactly what was accepted. */
static inline void st_expect_same(const struct st_result *r, uint32_t id, const struct st_sent *s,
				  int ordered)
{
	CHECK(r->done == 1 && r->id == id, "connection %u never ended at the sink", id);
	CHECK(r->err == 0, "connection %u: the sink's read failed with %s", id, ct_errname(r->err));
	CHECK(r->total == s->total, "connection %u: the sink got %lld bytes, %lld were accepted "
	      "(%s)", id, r->total, s->total, r->total < s->total ? "lost" : "duplicated");
	CHECK(r->sum == s->sum, "connection %u: the bytes differ (sum)", id);
	CHECK(!ordered || r->hash == s->hash, "connection %u: same bytes, another order "
	      "(hash %016llx, want %016llx)", id, (unsigned long long)r->hash,
	      (unsigned long long)s->hash);
}

#endif
