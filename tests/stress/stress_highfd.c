/*
 * stress_highfd.c - sockets on the highest descriptor numbers the process
 * can have, and above 65,536 where the system lets the test get there.
 *
 *   stress_highfd top|dup2|above64k
 *
 * The soft RLIMIT_NOFILE is raised to the hard one first. Under a
 * flush=1s coalesce rule:
 *   top       every descriptor below hard-1 is filled (dup of /dev/null),
 *             so the next socket is hard-1: its writes must be held (its
 *             rule applies there), the echo must come back, byte for byte
 *   dup2      a coalesce socket is dup2()ed to hard-1 and the original
 *             closed: what it held arrives first, then a hashed stream
 *             written through hard-1
 *   above64k  the hard limit is raised to 70,000 (needs CAP_SYS_RESOURCE
 *             when above the current hard limit) and "top" runs at fd
 *             69,999; otherwise the test says SKIP and why (exit 77)
 */
#include <sys/resource.h>

#include "../common/sink.h"

/* Fills every free descriptor below top with /dev/null; returns how many. */
static int fill_below(int top)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC), n = 0, d;

	CHECK(null >= 0, "open /dev/null");
	while ((d = fcntl(null, F_DUPFD_CLOEXEC, 0)) >= 0 && d < top)
		n++;
	if (d >= top)
		close(d);
	CHECK(d >= top || errno == EMFILE, "F_DUPFD");
	return n;
}

/* The echo round trip and a held check on fd (a coalesce socket). */
static void use(int fd, const char *where)
{
	static char out[4096], back[4096];
	uint64_t seed = (uint64_t)fd;
	char line[32];
	size_t have = 0;

	ct_send_str(fd, "hello ");
	ct_send_str(fd, "world\n");
	ct_expect_held(fd, 0);
	while (have < 12) {
		ssize_t r = read(fd, line + have, 12 - have);

		CHECK(r > 0, "echo at %s", where);
		have += (size_t)r;
	}
	CHECK(memcmp(line, "hello world\n", 12) == 0, "bad echo at %s", where);
	for (int round = 0; round < 200; round++) {
		size_t n = ct_rand_size(&seed, sizeof(out) - 1);

		ct_fill(&seed, out, n);
		for (size_t i = 0; i < n; i++)
			if (out[i] == '\n')
				out[i] = '.';
		out[n - 1] = '\n';
		ct_send_all(fd, out, n, (enum ct_how)(round % CT_NHOW), 0);
		for (have = 0; have < n;) {
			ssize_t r = read(fd, back + have, n - have);

			CHECK(r > 0, "echo at %s", where);
			have += (size_t)r;
		}
		CHECK(memcmp(out, back, n) == 0, "the echo of %zu bytes at %s differs", n, where);
	}
}

static void run_top(int limit)
{
	struct ct_peer p;
	char where[32];
	int fd;

	ct_peer_start(&p, "echo");
	fill_below(limit - 1);
	fd = ct_connect(p.port);
	CHECK(fd == limit - 1, "the socket is fd %d, want %d", fd, limit - 1);
	snprintf(where, sizeof(where), "fd %d", fd);
	use(fd, where);
	ct_say("a coalesce socket on fd %d: held, echoed, byte for byte", fd);
	close(fd);
	ct_peer_stop(&p);
}

static void run_dup2(int limit)
{
	struct ct_peer p;
	int fd, hi = limit - 1;

	ct_peer_start(&p, "lines");
	fd = ct_connect(p.port);
	ct_send_str(fd, "ab");
	ct_expect_held(fd, 0);
	CHECK(dup2(fd, hi) == hi, "dup2 to %d", hi);
	CHECK(close(fd) == 0, "close");
	ct_send_str(hi, "cd\n");
	ct_expect_line(p.rep, "abcd\n", CT_WAIT_MS);
	CHECK(close(hi) == 0, "close %d", hi);
	ct_expect_end(p.rep, 5, CT_WAIT_MS);
	ct_say("dup2 to fd %d: the held bytes first, then the rest", hi);
	ct_peer_stop(&p);
}

static void run(int which)
{
	struct rlimit rl;
	long limit = st_raise_nofile();

	if (which == 2) {
		CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0, "getrlimit");
		if (rl.rlim_max < 70000) {
			rl.rlim_cur = rl.rlim_max = 70000;
			if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
				char why[200];

				snprintf(why, sizeof(why), "the hard RLIMIT_NOFILE is %ld and cannot be "
					 "raised to 70000 (setrlimit: %s; needs CAP_SYS_RESOURCE)", limit,
					 ct_errname(errno));
				ct_skip(why);
			}
		}
		limit = 70000;
	}
	if (which == 1)
		run_dup2((int)limit);
	else
		run_top((int)limit);
}

static const struct ct_case cases[] = {
	{ "top", run, 0 },
	{ "dup2", run, 1 },
	{ "above64k", run, 2 },
};

int main(int argc, char **argv)
{
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
