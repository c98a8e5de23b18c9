/*
 * static_client.c - a split-writing line client built with cc -static by
 * tests/fix/run.sh: no dynamic loader, so libnaglefix.so cannot reach it.
 * Usage: static_client HOST PORT ROUNDS
 * Prints "pid N", then per round "round I MS": it writes "hello I " and
 * "world I\r\n" in two writes (Nagle on), reads the echoed line and checks
 * it is "hello I world I\n" to the byte ("BAD ..." and exit 1 if not).
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

/* A connection to HOST (a numeric IPv4 or IPv6 address) and PORT, Nagle on. */
static int dial(const char *host, const char *port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(atoi(port)) };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(atoi(port)) };
	int v6 = inet_pton(AF_INET6, host, &a6.sin6_addr) == 1, fd, off = 0;

	if (!v6 && inet_pton(AF_INET, host, &a4.sin_addr) != 1)
		return -1;
	fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, v6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4,
			      v6 ? sizeof(a6) : sizeof(a4)) < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &off, sizeof(off)); /* Nagle on */
	return fd;
}

static int put(int fd, const char *s)
{
	size_t n = strlen(s);

	return write(fd, s, n) == (ssize_t)n ? 0 : -1;
}

/* Reads one line (to '\n') into buf; 0, or -1 on EOF or an error. */
static int get_line(int fd, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		ssize_t r = read(fd, buf + n, 1);

		if (r <= 0)
			return -1;
		if (buf[n++] == '\n')
			break;
	}
	buf[n] = '\0';
	return 0;
}

int main(int argc, char **argv)
{
	char a[64], b[64], want[128], got[256];
	int fd, rounds;

	if (argc != 4) {
		fputs("usage: static_client HOST PORT ROUNDS\n", stderr);
		return 2;
	}
	rounds = atoi(argv[3]);
	fd = dial(argv[1], argv[2]);
	if (fd < 0) {
		perror("static_client: connect");
		return 1;
	}
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	for (int i = 0; i < rounds; i++) {
		double t0 = now_ms();

		snprintf(a, sizeof(a), "hello %d ", i);
		snprintf(b, sizeof(b), "world %d\r\n", i);
		snprintf(want, sizeof(want), "hello %d world %d\n", i, i);
		if (put(fd, a) < 0 || put(fd, b) < 0 || get_line(fd, got, sizeof(got)) < 0) {
			printf("BAD round %d: connection lost\n", i);
			return 1;
		}
		if (strcmp(got, want) != 0) {
			printf("BAD round %d: got %s", i, got);
			return 1;
		}
		printf("round %d %.3f\n", i, now_ms() - t0);
		fflush(stdout);
	}
	printf("done %d\n", rounds);
	return 0;
}
