/*
 * overhead.c - what audit costs a program: a client thread and a server
 * thread on one loopback TCP connection, timed in the client.
 *
 *   overhead stream N     N writes of 64 bytes, the server only reads:
 *                         ns per write
 *   overhead pingpong N   N rounds of one 100-byte write and its echo:
 *                         ns per round trip
 *
 * Run it as it is, under `naglefix -m pass` and under `naglefix -m audit`
 * (tests/audit/overhead.sh): the differences are the cost of the hooks.
 * Prints one line: "<workload> <ns>".
 */
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int listener, echo;

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void *server(void *arg)
{
	char buf[65536];
	int c = accept(listener, NULL, NULL);
	ssize_t n;

	(void)arg;
	while ((n = recv(c, buf, sizeof(buf), 0)) > 0)
		if (echo && send(c, buf, (size_t)n, 0) != n)
			break;
	close(c);
	return NULL;
}

static int connect_loopback(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd;

	listener = socket(AF_INET, SOCK_STREAM, 0);
	if (listener < 0 || bind(listener, (struct sockaddr *)&sa, len) < 0 ||
	    listen(listener, 1) < 0 || getsockname(listener, (struct sockaddr *)&sa, &len) < 0)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, len) < 0)
		return -1;
	return fd;
}

static int round_trip(int fd, char *buf)
{
	size_t got = 0;

	if (send(fd, buf, 100, 0) != 100)
		return -1;
	while (got < 100) {
		ssize_t n = recv(fd, buf + got, 100 - got, 0);

		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char buf[100] = { 0 };
	pthread_t t;
	long n;
	int fd;
	double t0;

	if (argc != 3 || (n = atol(argv[2])) <= 0) {
		fprintf(stderr, "usage: overhead stream|pingpong N\n");
		return 2;
	}
	echo = strcmp(argv[1], "pingpong") == 0;
	fd = connect_loopback();
	if (fd < 0 || pthread_create(&t, NULL, server, NULL) != 0) {
		perror("overhead");
		return 1;
	}
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		if (echo ? round_trip(fd, buf) < 0 : send(fd, buf, 64, 0) != 64) {
			perror("overhead");
			return 1;
		}
	printf("%s %.0f\n", argv[1], (now_ns() - t0) / (double)n);
	close(fd);
	pthread_join(t, NULL);
	return 0;
}
