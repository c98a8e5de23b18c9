/*
 * leak_loop.c - a long-running client for the leak check of the library:
 * ROUNDS times, it opens CONNS connections to a line-echo peer, does
 * split-write round trips on each (write+write, send+send, writev, sendmsg
 * in pieces, then a read), dup()s one of them, shuts one down, and closes
 * them all; every 16th round it forks a child that does one round trip of
 * its own. Run it under LD_PRELOAD=libnaglefix.so with any mode, under
 * valgrind: what the library allocates per connection, per round or per
 * fork must be freed or reused, so the heap in use at exit must not grow
 * with ROUNDS.
 *
 * The peer is a forked child (it runs the library too, on accepted sockets)
 * serving every connection from one poll() loop.
 *
 * Usage: leak_loop ROUNDS [CONNS]     exit 0 iff every echo came back whole
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXCONNS 64

static void die(const char *what)
{
	fprintf(stderr, "leak_loop: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Echoes complete lines back on fd; returns 0 at EOF or on an error. */
static int echo_some(int fd, char *buf, size_t *have, size_t cap)
{
	ssize_t n = read(fd, buf + *have, cap - *have);
	char *nl;

	if (n <= 0)
		return 0;
	*have += (size_t)n;
	while ((nl = memchr(buf, '\n', *have)) != NULL) {
		size_t line = (size_t)(nl - buf) + 1;

		if (write(fd, buf, line) != (ssize_t)line)
			return 0;
		memmove(buf, buf + line, *have - line);
		*have -= line;
	}
	return *have < cap;
}

/* The peer: accepts and echoes from one poll loop until killed. */
static void peer(int lfd)
{
	struct pollfd p[MAXCONNS + 1];
	static char bufs[MAXCONNS + 1][512];
	size_t have[MAXCONNS + 1];
	int n = 1;

	p[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
	for (;;) {
		if (poll(p, (nfds_t)n, -1) < 0)
			continue;
		for (int i = n - 1; i >= 1; i--) {
			if (!p[i].revents || echo_some(p[i].fd, bufs[i], &have[i], sizeof(bufs[i])))
				continue;
			close(p[i].fd);
			p[i] = p[--n];
			have[i] = have[n];
			memcpy(bufs[i], bufs[n], sizeof(bufs[i]));
		}
		if ((p[0].revents & POLLIN) && n <= MAXCONNS) {
			int fd = accept(lfd, NULL, NULL);

			if (fd >= 0) {
				p[n] = (struct pollfd){ .fd = fd, .events = POLLIN };
				have[n++] = 0;
			}
		}
	}
}

static int connect_to(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("connect");
	return fd;
}

/* Sends "hello world\n" in two pieces, by way number `how`. */
static void send_split(int fd, int how)
{
	static char a[] = "hello ", b[] = "world\n";
	struct iovec iov[2] = { { a, 6 }, { b, 6 } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 1 };
	ssize_t r1, r2;

	switch (how % 4) {
	case 0: r1 = write(fd, a, 6); r2 = write(fd, b, 6); break;
	case 1: r1 = send(fd, a, 6, MSG_NOSIGNAL); r2 = send(fd, b, 6, 0); break;
	case 2: r1 = writev(fd, iov, 1); r2 = writev(fd, iov + 1, 1); break;
	default:
		r1 = sendmsg(fd, &m, 0);
		m.msg_iov = iov + 1;
		r2 = sendmsg(fd, &m, 0);
		break;
	}
	if (r1 != 6 || r2 != 6)
		die("send");
}

/* One round trip on fd; fails the program if the echo is not whole. */
static void round_trip(int fd, int how)
{
	char buf[64];
	size_t have = 0;

	send_split(fd, how);
	while (have < 12) {
		ssize_t n = how & 1 ? recv(fd, buf + have, sizeof(buf) - have, 0)
				    : read(fd, buf + have, sizeof(buf) - have);
		if (n <= 0)
			die("read");
		have += (size_t)n;
	}
	if (have != 12 || memcmp(buf, "hello world\n", 12) != 0) {
		fprintf(stderr, "leak_loop: bad echo\n");
		exit(1);
	}
}

static void one_round(int port, int conns, int round)
{
	int fds[MAXCONNS], dupfd;

	for (int i = 0; i < conns; i++)
		fds[i] = connect_to(port);
	for (int i = 0; i < conns; i++)
		round_trip(fds[i], round + i);
	dupfd = dup(fds[0]);
	if (dupfd < 0)
		die("dup");
	round_trip(dupfd, round);
	close(dupfd);
	if (conns > 1)
		shutdown(fds[1], SHUT_WR);
	if (round % 16 == 15) {
		pid_t pid = fork();
		int st;

		if (pid < 0)
			die("fork");
		if (pid == 0) {
			round_trip(fds[conns - 1], round);
			_exit(0);
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "leak_loop: the child failed\n");
			exit(1);
		}
	}
	for (int i = 0; i < conns; i++)
		close(fds[i]);
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int rounds, conns, lfd;
	pid_t pid;

	if (argc < 2 || (rounds = atoi(argv[1])) < 1) {
		fprintf(stderr, "usage: leak_loop ROUNDS [CONNS]\n");
		return 2;
	}
	conns = argc > 2 ? atoi(argv[2]) : 8;
	if (conns < 1 || conns > MAXCONNS)
		conns = 8;
	signal(SIGPIPE, SIG_IGN);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 128) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&a, &alen) < 0)
		die("listen");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		alarm(600);
		peer(lfd);
	}
	close(lfd);
	for (int r = 0; r < rounds; r++)
		one_round(ntohs(a.sin_port), conns, r);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	printf("leak_loop: %d rounds of %d connections: ok\n", rounds, conns);
	return 0;
}
