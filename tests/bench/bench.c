/*
 * bench.c - one client of the benchmark: a request written in pieces,
 * then a 2-byte reply awaited, over loopback, many rounds.
 *
 *   bench WORKLOAD VARIANT ROUNDS
 *   WORKLOAD: chatty (15 writes of 2 bytes) | split ("hello " + "world\r\n")
 *   VARIANT:  legacy (the pieces as they are) | nodelay (own TCP_NODELAY) |
 *             cork (own TCP_CORK around the pieces) | single (one write)
 *
 * The peer is this program re-executed without LD_PRELOAD, unless
 * NF_BENCH_PEER_SHIM=1 (a receiving-end fix, quickack: both ends under it). Prints
 * "median_us=.. p99_us=.. segs=.. acks=.. cpu_us=.." (per round trip;
 * acks: segments from the peer without data, its pure ACKs; the first
 * tenth of the rounds is a warm-up and not counted).
 */
#include <arpa/inet.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct workload {
	const char *name;
	int npieces;
	const char *pieces[15];
};

static const struct workload workloads[] = {
	{ "chatty", 15, { "ab", "cd", "ef", "gh", "ij", "kl", "mn", "op", "qr", "st",
			  "uv", "wx", "yz", "01", "23" } },
	{ "split", 2, { "hello ", "world\r\n" } },
};

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static size_t request_len(const struct workload *w)
{
	size_t n = 0;

	for (int i = 0; i < w->npieces; i++)
		n += strlen(w->pieces[i]);
	return n;
}

static void read_exactly(int fd, char *buf, size_t n)
{
	while (n > 0) {
		ssize_t r = read(fd, buf, n);

		if (r <= 0)
			exit(r == 0 ? 0 : 3);
		buf += r;
		n -= (size_t)r;
	}
}

/* The peer: reads each whole request, answers "ok" in one write. */
static int serve(int lfd, size_t reqlen)
{
	char buf[256];
	int fd = accept(lfd, NULL, NULL);

	if (fd < 0)
		die("accept");
	for (;;) {
		read_exactly(fd, buf, reqlen);
		if (write(fd, "ok", 2) != 2)
			return 3;
	}
}

static int listen_any(struct sockaddr_in *sa)
{
	socklen_t len = sizeof(*sa);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)sa, sizeof(*sa)) < 0 || listen(lfd, 1) < 0 ||
	    getsockname(lfd, (struct sockaddr *)sa, &len) < 0)
		die("listen");
	return lfd;
}

/* Starts the peer as this program without the shim; returns its pid. */
static pid_t start_peer(int lfd, size_t reqlen)
{
	char fdarg[16], lenarg[16];
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	snprintf(fdarg, sizeof(fdarg), "%d", lfd);
	snprintf(lenarg, sizeof(lenarg), "%zu", reqlen);
	if (!getenv("NF_BENCH_PEER_SHIM"))
		unsetenv("LD_PRELOAD");
	execl("/proc/self/exe", "bench", "--serve", fdarg, lenarg, (char *)NULL);
	_exit(127);
}

static void set_opt(int fd, int name, int on)
{
	if (setsockopt(fd, IPPROTO_TCP, name, &on, sizeof(on)) < 0)
		die("setsockopt");
}

static void send_request(int fd, const struct workload *w, const char *variant, char *whole)
{
	int cork = strcmp(variant, "cork") == 0;

	if (strcmp(variant, "single") == 0) {
		if (write(fd, whole, strlen(whole)) < 0)
			die("write");
		return;
	}
	if (cork)
		set_opt(fd, TCP_CORK, 1);
	for (int i = 0; i < w->npieces; i++)
		if (write(fd, w->pieces[i], strlen(w->pieces[i])) < 0)
			die("write");
	if (cork)
		set_opt(fd, TCP_CORK, 0);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec +
	       ru.ru_stime.tv_usec;
}

static unsigned long long segs_out(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		die("TCP_INFO");
	return ti.tcpi_data_segs_out;
}

/* Segments from the peer that carried no data: its pure ACKs. */
static unsigned long long acks_in(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		die("TCP_INFO");
	return ti.tcpi_segs_in - ti.tcpi_data_segs_in;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int run(const struct workload *w, const char *variant, int rounds)
{
	struct sockaddr_in sa;
	int lfd = listen_any(&sa), fd, warm = rounds / 10, n = rounds - warm, status;
	pid_t peer = start_peer(lfd, request_len(w));
	double *t = calloc((size_t)rounds, sizeof(*t)), cpu0 = 0, t0;
	unsigned long long segs0 = 0, acks0 = 0;
	char whole[64] = "", reply[2];

	for (int i = 0; i < w->npieces; i++)
		strcat(whole, w->pieces[i]);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (!t || fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	close(lfd);
	if (strcmp(variant, "nodelay") == 0)
		set_opt(fd, TCP_NODELAY, 1);
	for (int i = 0; i < rounds; i++) {
		if (i == warm) {
			segs0 = segs_out(fd);
			acks0 = acks_in(fd);
			cpu0 = cpu_us();
		}
		t0 = now_us();
		send_request(fd, w, variant, whole);
		read_exactly(fd, reply, 2);
		t[i] = now_us() - t0;
	}
	printf("segs=%.3f acks=%.3f cpu_us=%.2f ", (double)(segs_out(fd) - segs0) / n,
	       (double)(acks_in(fd) - acks0) / n, (cpu_us() - cpu0) / n);
	qsort(t + warm, (size_t)n, sizeof(*t), cmp_double);
	printf("median_us=%.2f p99_us=%.2f\n", t[warm + n / 2], t[warm + (n * 99) / 100]);
	close(fd);
	waitpid(peer, &status, 0);
	free(t);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--serve") == 0)
		return serve(atoi(argv[2]), (size_t)atoi(argv[3]));
	if (argc != 4) {
		fprintf(stderr, "usage: bench chatty|split legacy|nodelay|cork|single ROUNDS\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++)
		if (strcmp(argv[1], workloads[i].name) == 0)
			return run(&workloads[i], argv[2], atoi(argv[3]));
	fprintf(stderr, "bench: unknown workload %s\n", argv[1]);
	return 2;
}
