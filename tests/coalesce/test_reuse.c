/*
 * test_reuse.c - bytes held for one socket never reach another, and
 * closing one socket costs no other socket its bytes (found in review).
 *
 *   closed-mid-send   a thread's overflow send is blocked on a full socket
 *                     when another thread closes the fd and a new socket
 *                     gets the same number: the new peer sees only its own
 *                     bytes, none of the old connection's; the close gives
 *                     up on the held bytes after the rule's drain= (run
 *                     with conf/split-drain-300ms.conf: 300 ms, no less,
 *                     and well before the default 5 s)
 *   close-while-sending  a thread writes (buffered) while another thread's
 *                     big send is in flight, then closes: every byte arrives
 *   close-range-other    close_range of an unrelated fd neither waits on
 *                     nor drops the bytes of a live, full connection
 * Run under NAGLEFIX_MODE=coalesce with conf/split.conf (closed-mid-send:
 * conf/split-drain-300ms.conf). Exit 0 = pass.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "../common/harness.h"

static int listener(struct sockaddr_in *sa, int rcvbuf)
{
	socklen_t len = sizeof(*sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa->sin_port = 0;
	if (rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	CHECK(fd >= 0 && bind(fd, (struct sockaddr *)sa, len) == 0 && listen(fd, 1) == 0 &&
	      getsockname(fd, (struct sockaddr *)sa, &len) == 0, "listen: %s", strerror(errno));
	return fd;
}

static int dial(const struct sockaddr_in *sa, int sndbuf)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (sndbuf)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	CHECK(connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0, "connect: %s",
	      strerror(errno));
	return fd;
}

/* Fills fd's socket until the kernel takes no more, around the library
 * (sendmmsg is never held, nor its answer seen): the library then still
 * holds small writes, as after a send that left the socket exactly full. */
static void fill(int fd)
{
	static char junk[1 << 16];
	struct iovec v = { .iov_base = junk, .iov_len = sizeof(junk) };
	struct mmsghdr m = { .msg_hdr = { .msg_iov = &v, .msg_iovlen = 1 } };

	for (int k = 0; k < 10; k++) {
		while (sendmmsg(fd, &m, 1, MSG_DONTWAIT) == 1)
			;
		usleep(20000);
	}
}

/* conf/split-drain-300ms.conf's drain= */
#define DRAIN_MS 300

static int shared_fd;
static volatile pid_t sender; /* the sending thread, once it sends */

static void *big_write(void *arg)
{
	static char big[20000];

	(void)arg;
	memset(big, 'b', sizeof(big));
	sender = ct_tid();
	(void)!write(shared_fd, big, sizeof(big)); /* fails when the fd goes */
	return NULL;
}

static void closed_mid_send(void)
{
	struct sockaddr_in s1, s2;
	struct timeval tv = { 0, 400000 };
	int l1 = listener(&s1, 4096), l2 = listener(&s2, 0), fd, nfd, peer2;
	char buf[256];
	pthread_t t;
	ssize_t r;
	double t0, took;

	fd = dial(&s1, 4096);
	(void)accept(l1, NULL, NULL); /* a peer that never reads */
	fill(fd);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	CHECK(write(fd, "OLD-CONNECTION-SECRET", 21) == 21, "held write");
	shared_fd = fd;
	sender = 0;
	pthread_create(&t, NULL, big_write, NULL);
	ct_wait_blocked(&sender); /* the overflow send blocked, bytes taken out */
	t0 = ct_now_ms();
	close(fd);
	took = ct_now_ms() - t0;
	CHECK(took >= DRAIN_MS - 1 && took < DRAIN_MS + 2000,
	      "close gave up after %.0f ms, want the rule's drain=%d ms", took, DRAIN_MS);
	nfd = dial(&s2, 0);
	peer2 = accept(l2, NULL, NULL);
	CHECK(nfd == fd, "the new socket did not reuse fd %d (got %d)", fd, nfd);
	CHECK(write(nfd, "new:", 4) == 4, "new write");
	pthread_join(t, NULL);
	tv.tv_sec = 2;
	tv.tv_usec = 0;
	setsockopt(peer2, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	r = recv(peer2, buf, sizeof(buf) - 1, 0);
	buf[r > 0 ? r : 0] = '\0';
	CHECK(r == 4 && strcmp(buf, "new:") == 0, "the new peer got %zd bytes: \"%s\"", r, buf);
}

static void *read_all(void *arg)
{
	int *io = arg, fd = accept(io[0], NULL, NULL);
	char buf[65536];
	ssize_t n;
	long total = 0;
	char last[3] = "";

	usleep(300000);
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		total += n;
		memcpy(last, n >= 3 ? buf + n - 3 : last, 3);
	}
	io[1] = (int)total;
	io[2] = memcmp(last, "XYZ", 3) == 0;
	return NULL;
}

static void *write_big(void *arg)
{
	size_t big = (size_t)4 << 20;
	char *b = malloc(big);

	(void)arg;
	memset(b, 'b', big);
	sender = ct_tid();
	CHECK(write(shared_fd, b, big) == (ssize_t)big, "big write");
	free(b);
	return NULL;
}

static void close_while_sending(void)
{
	struct sockaddr_in sa;
	int io[3] = { listener(&sa, 0), 0, 0 };
	pthread_t reader, writer;

	pthread_create(&reader, NULL, read_all, io);
	shared_fd = dial(&sa, 0);
	CHECK(write(shared_fd, "sssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss", 63) == 63,
	      "first write");
	sender = 0;
	pthread_create(&writer, NULL, write_big, NULL);
	ct_wait_blocked(&sender); /* the big send in flight, waiting for the reader */
	CHECK(write(shared_fd, "XYZ", 3) == 3, "small write");
	close(shared_fd);
	pthread_join(writer, NULL);
	pthread_join(reader, NULL);
	CHECK(io[1] == 63 + (4 << 20) + 3 && io[2], "the peer got %d bytes (want %d), ends in XYZ: %d",
	      io[1], 63 + (4 << 20) + 3, io[2]);
}

static void close_range_other(void)
{
#ifdef __GLIBC__
	struct sockaddr_in sa;
	int l = listener(&sa, 4096), fd = dial(&sa, 4096); /* small: easily full */
	struct timespec t0, t1;
	double secs;

	static char kb[1000];

	int peer = accept(l, NULL, NULL); /* never reads */

	fill(fd);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	for (int k = 0; k < 15; k++) /* the library's buffer (16k) nearly full too */
		CHECK(write(fd, kb, sizeof(kb)) == sizeof(kb), "held write %d", k);
	CHECK(write(fd, "hello", 5) == 5, "held write");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(close_range(5000, 5000, 0) == 0, "close_range: %s", strerror(errno));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	CHECK(secs < 1, "close_range of an unrelated fd took %.1f s", secs);
	CHECK(write(fd, "x", 1) == 1, "the live connection's next write failed: %s", strerror(errno));
	close(peer); /* so exit need not wait for a peer that never reads */
#else
	ct_skip("musl has no close_range(): a program can only make the system call, "
		"which no preload library sees");
#endif
}

int main(int argc, char **argv)
{
	ct_set_prog(argv[0]);
	ct_variant = argc == 2 ? argv[1] : "";
	ct_arm_timeout();
	if (argc == 2 && strcmp(argv[1], "closed-mid-send") == 0)
		closed_mid_send();
	else if (argc == 2 && strcmp(argv[1], "close-while-sending") == 0)
		close_while_sending();
	else if (argc == 2 && strcmp(argv[1], "close-range-other") == 0)
		close_range_other();
	else
		return 2;
	return 0;
}
