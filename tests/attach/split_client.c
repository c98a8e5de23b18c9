/*
 * split_client.c - a split-writing line client that never touches
 * TCP_NODELAY (the kernel's default, off, stays unless something else
 * sets it), or, with "off", turns it off itself right after connecting
 * (the legacy shape: setsockopt(TCP_NODELAY, 0) after connect), built
 * with cc -static by tests/attach/run.sh: no dynamic loader, so the
 * library could not reach it; only the kernel's programs.
 * Usage: split_client HOST PORT ROUNDS [off|each]
 * Per round it writes "hello I " and "world I\r\n" (two writes) and reads
 * the echoed line, checked to the byte. Prints
 * "median_ms=X p99_ms=Y rounds=N nodelay=V" (V read after connect, and
 * after its own setsockopt), every round counted, the first too; with
 * "each", also "round I MS" as each round ends (flushed: a test reads the
 * rounds of one open connection as they come); exits 1 on a wrong line,
 * a lost connection or a failed setsockopt.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int dial(const char *host, const char *port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(atoi(port)) };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(atoi(port)) };
	int v6 = inet_pton(AF_INET6, host, &a6.sin6_addr) == 1, fd;

	if (!v6 && inet_pton(AF_INET, host, &a4.sin_addr) != 1)
		return -1;
	fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, v6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4,
			      v6 ? sizeof(a6) : sizeof(a4)) < 0)
		return -1;
	return fd;
}

/* One round: two writes, the echoed line read and checked; its ms, or -1. */
static double one_round(int fd, int i)
{
	char a[64], b[64], want[128], got[256];
	size_t n = 0;
	double t0 = now_ms();

	snprintf(a, sizeof(a), "hello %d ", i);
	snprintf(b, sizeof(b), "world %d\r\n", i);
	snprintf(want, sizeof(want), "hello %d world %d\n", i, i);
	if (write(fd, a, strlen(a)) != (ssize_t)strlen(a) || write(fd, b, strlen(b)) != (ssize_t)strlen(b))
		return -1;
	while (n == 0 || got[n - 1] != '\n') {
		ssize_t r = read(fd, got + n, sizeof(got) - 1 - n);

		if (r <= 0 || (n += (size_t)r) >= sizeof(got) - 1)
			return -1;
	}
	got[n] = '\0';
	return strcmp(got, want) == 0 ? now_ms() - t0 : -1;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int fd, rounds, v = -1, each = argc == 5 && strcmp(argv[4], "each") == 0,
	    off = argc == 5 && strcmp(argv[4], "off") == 0;
	socklen_t len = sizeof(v);
	double *ms;

	if (argc < 4 || argc > 5 || (rounds = atoi(argv[3])) < 1 || (argc == 5 && !each && !off)) {
		fputs("usage: split_client HOST PORT ROUNDS [off|each]\n", stderr);
		return 2;
	}
	ms = calloc((size_t)rounds, sizeof(*ms));
	fd = dial(argv[1], argv[2]);
	if (fd < 0 || !ms) {
		perror("split_client: connect");
		return 1;
	}
	if (off && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 0 }, sizeof(int)) < 0) {
		perror("split_client: setsockopt");
		return 1;
	}
	getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len);
	for (int i = 0; i < rounds; i++) {
		if ((ms[i] = one_round(fd, i)) < 0) {
			printf("BAD round %d\n", i);
			return 1;
		}
		if (each) {
			printf("round %d %.3f\n", i, ms[i]);
			fflush(stdout);
		}
	}
	qsort(ms, (size_t)rounds, sizeof(*ms), cmp);
	printf("median_ms=%.3f p99_ms=%.3f rounds=%d nodelay=%d\n", ms[rounds / 2],
	       ms[(rounds * 99 + 99) / 100 - 1], rounds, v);
	return 0;
}
