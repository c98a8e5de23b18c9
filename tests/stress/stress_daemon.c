/*
 * stress_daemon.c - a daemon-style program: it closes every descriptor it
 * did not open (close_range(3, ~0U, 0), then close() of 0..limit-1 one by
 * one), forks twice (fork, setsid, fork), and only then uses coalesce
 * sockets. The library must keep no descriptor of its own that this
 * breaks, and its state must follow the process through both forks.
 *
 *   stress_daemon run
 *
 * Under a flush=2ms rule. Before daemonising, the process holds bytes on
 * a connection of its own (so the timer thread runs and the pending set is
 * not empty at fork). The grandchild, whose first socket is fd 3 (after
 * its own stdin, stdout and stderr), then:
 *   - writes "hello " and "world\n" (held: checked in the kernel), waits
 *     20 ms without any call that flushes: the timer must have sent them;
 *   - writes a 2 MiB stream of random pieces and gets it echoed line by
 *     line: the echo must match byte for byte;
 *   - exits 0; its status reaches this process (a child subreaper).
 * The echo peer reports each connection's byte count and hash: the
 * original connection must carry exactly its bytes (none sent again by a
 * child), the grandchild's exactly its own.
 */
#include <inttypes.h>
#include <sys/resource.h>

#include "../common/sink.h"

#define STREAM (2 << 20)

static int held_before_fork(int port)
{
	int fd = ct_connect(port);

	ct_send_str(fd, "parent\n");
	return fd;
}

/* Reads exactly n bytes of echo into buf. */
static void read_exact(int fd, char *buf, size_t n)
{
	size_t have = 0;

	while (have < n) {
		ssize_t r = read(fd, buf + have, n - have);

		if (r < 0 && errno == EINTR)
			continue;
		CHECK(r > 0, "echo ended after %zu of %zu bytes", have, n);
		have += (size_t)r;
	}
}

/* The grandchild's work: returns only if all went well. */
static void daemon_work(int port, const char *errpath, struct ct_sent *sent)
{
	static char out[65536], back[65536];
	uint64_t seed = 99;
	long long left = STREAM;
	int in = open("/dev/null", O_RDONLY), fd, err;
	char line[64];

	/* stdin from /dev/null, stdout and stderr (fds 1 and 2) to a file the
	 * test reads: fds 0-2 are never buffered (stdio writes them), so the
	 * socket comes after them, as a daemon's does */
	err = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (in != 0 || err != 1 || dup2(1, 2) != 2)
		_exit(6);
	setvbuf(stdout, NULL, _IONBF, 0);
	fd = ct_connect(port);
	CHECK(fd == 3, "the daemon's first socket is fd %d, want 3 (a descriptor was left open)", fd);
	ct_send_str(fd, "hello ");
	ct_send_str(fd, "world\n");
	ct_expect_held(fd, 0);
	ct_sleep_ms(20);
	CHECK(ct_kernel_bytes(fd) == 12, "%lld bytes sent 20 ms after the writes: the flush timer "
	      "did not run in the daemon", ct_kernel_bytes(fd));
	read_exact(fd, line, 12);
	CHECK(memcmp(line, "hello world\n", 12) == 0, "bad echo");
	sent->total = 12;
	sent->hash = ct_fnv(CT_FNV_INIT, "hello world\n", 12);
	while (left > 0) {
		size_t n = ct_rand_size(&seed, sizeof(out) - 1), at = 0;

		if ((long long)n > left)
			n = (size_t)left;
		ct_fill(&seed, out, n);
		for (size_t i = 0; i < n; i++)
			if (out[i] == '\n')
				out[i] = ' ';
		out[n - 1] = '\n';
		while (at < n) { /* in pieces, with every call family */
			size_t k = ct_rand_size(&seed, n - at);

			ct_send_all(fd, out + at, k, (enum ct_how)(ct_rand(&seed) % CT_NHOW), 0);
			at += k;
		}
		read_exact(fd, back, n);
		CHECK(memcmp(out, back, n) == 0, "the echo of a %zu-byte line differs", n);
		sent->total += (long long)n;
		sent->hash = ct_fnv(sent->hash, out, n);
		left -= (long long)n;
	}
	CHECK(close(fd) == 0, "close");
	printf("sent %lld %" PRIx64 "\n", sent->total, sent->hash);
}

/* Closes every descriptor, both ways a daemon does it. */
static void close_everything(void)
{
	struct rlimit rl;

#ifdef SYS_close_range
	if (close_range(3, ~0U, 0) != 0)
		CHECK(errno == ENOSYS, "close_range");
#endif
	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0, "getrlimit");
	for (long fd = 0; fd < (long)rl.rlim_cur; fd++)
		close((int)fd);
}

static void run(int unused)
{
	struct ct_sent sent = { 0 };
	struct ct_report r;
	struct ct_peer p;
	char path[64], errs[600] = "";
	int fd, st, in;
	pid_t pid, g;

	(void)unused;
	CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0, "PR_SET_CHILD_SUBREAPER");
	ct_peer_start(&p, "echo");
	fd = held_before_fork(p.port);
	ct_expect_held(fd, 0);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		int port = p.port;

		snprintf(path, sizeof(path), "/tmp/naglefix-daemon-%d", (int)getppid());
		close_everything();
		CHECK(setsid() > 0, "setsid");
		g = fork();
		if (g != 0)
			_exit(g > 0 ? 0 : 1);
		daemon_work(port, path, &sent);
		_exit(0);
	}
	snprintf(path, sizeof(path), "/tmp/naglefix-daemon-%d", (int)getpid());
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the first child ended with 0x%x", st);
	g = waitpid(-1, &st, 0); /* the grandchild, reparented to us */
	CHECK(g > 0, "no grandchild to wait for");
	in = open(path, O_RDONLY | O_CLOEXEC); /* what the daemon said on its stderr */
	if (in >= 0) {
		(void)!read(in, errs, sizeof(errs) - 1);
		close(in);
		unlink(path);
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the daemon ended with 0x%x: %s", st, errs);
	CHECK(sscanf(errs, "sent %lld %" SCNx64, &sent.total, &sent.hash) == 2,
	      "the daemon did not report its totals: '%s'", errs);
	/* Our own connection: its 7 held bytes, once, then "end\n"; read the
	 * echo to the end, so that closing it does not reset it. */
	ct_send_str(fd, "end\n");
	CHECK(shutdown(fd, SHUT_WR) == 0, "shutdown");
	read_exact(fd, errs, 11);
	CHECK(memcmp(errs, "parent\nend\n", 11) == 0, "the parent's echo differs");
	CHECK(read(fd, errs, 1) == 0, "more echo than was sent: bytes sent twice");
	close(fd);
	for (int seen = 0; seen < 2; seen++) {
		ct_report_expect(p.rep, CT_END, CT_WAIT_MS * 3, &r);
		if (r.len == 11) {
			CHECK(r.hash == ct_fnv(CT_FNV_INIT, "parent\nend\n", 11), "the parent's bytes differ");
		} else {
			CHECK(r.len == sent.total, "the daemon's connection carried %lld bytes, it sent %lld",
			      r.len, sent.total);
			CHECK(r.hash == sent.hash, "the daemon's bytes differ at the peer");
		}
	}
	ct_say("daemon: %lld bytes echoed after close_range, close x N and two forks", sent.total);
	ct_peer_stop(&p);
}

static const struct ct_case cases[] = {
	{ "run", run, 0 },
};

int main(int argc, char **argv)
{
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
