/*
 * split_client.c - LegacyClient's protocol in C, for t_watch.sh to build
 * statically (cc -static): no LD_PRELOAD can reach it, but watch sees its
 * packets. Usage: split_client HOST PORT ROUNDS. Per round: write
 * "hello " and "world\r\n" (two writes, Nagle on), read the echoed line.
 * Round 1 is a warm-up, outside the median. Last line: median_ms=<x>
 * rounds=<n> slow=<rounds of 30 ms or more, the warm-up too>.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
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
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A numeric HOST (no resolver: getaddrinfo in a static binary wants
 * glibc's shared NSS modules at run time). */
static int dial(const char *host, const char *port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)atoi(port)) };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = a6.sin6_port };
	int v6 = inet_pton(AF_INET6, host, &a6.sin6_addr) == 1, fd;

	if (!v6 && inet_pton(AF_INET, host, &a4.sin_addr) != 1)
		return -1;
	fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
	if (fd >= 0 && connect(fd, v6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4,
			       v6 ? sizeof(a6) : sizeof(a4)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Reads up to and including '\n'; 0, or -1 at EOF or an error. */
static int read_line(int fd)
{
	char c;

	do {
		if (read(fd, &c, 1) != 1)
			return -1;
	} while (c != '\n');
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int rounds = argc == 4 ? atoi(argv[3]) : 0, fd;
	double *t;
	int slow = 0;

	if (rounds < 3) {
		fputs("usage: split_client HOST PORT ROUNDS(>=3)\n", stderr);
		return 2;
	}
	fd = dial(argv[1], argv[2]);
	t = calloc((size_t)rounds, sizeof(*t));
	if (fd < 0 || !t) {
		perror("split_client: connect");
		return 1;
	}
	for (int i = 0; i < rounds; i++) {
		double t0 = now_ms();

		if (write(fd, "hello ", 6) != 6 || write(fd, "world\r\n", 7) != 7 || read_line(fd)) {
			perror("split_client: round");
			return 1;
		}
		t[i] = now_ms() - t0;
		slow += t[i] >= 30;
	}
	qsort(t + 1, (size_t)rounds - 1, sizeof(*t), cmp);
	printf("median_ms=%.3f rounds=%d slow=%d\n", t[1 + (rounds - 1) / 2], rounds - 1, slow);
	close(fd);
	free(t);
	return 0;
}
