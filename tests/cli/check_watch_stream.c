/*
 * check_watch_stream.c - the order of the frames watch's stream hands
 * out (src/cli/watch/watch_stream.c), on the loopback of a network
 * namespace this test makes: two captures of it, their frames held;
 * one removed (as a replaced ring is closed), the frames read after
 * from the one left do not overtake those still held; and a call that
 * must not wait (watch --metrics-file's) hands out none before it is
 * due. Root only
 * (unshare(CLONE_NEWNET)); else SKIP.
 */
#include <arpa/inet.h>
#include <check.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli/watch/watch_int.h"
#include "../unit/unit.h"

#define PORT 7399

/* This process in a namespace of its own, its loopback up. */
static void own_namespace(void)
{
	struct ifreq ifr = { 0 };
	int fd;

	ck_assert_int_eq(unshare(CLONE_NEWNET), 0);
	ck_assert_int_ge(fd = socket(AF_INET, SOCK_DGRAM, 0), 0);
	strcpy(ifr.ifr_name, "lo");
	ifr.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
	ck_assert_int_eq(ioctl(fd, SIOCSIFFLAGS, &ifr), 0);
	close(fd);
}

/* A capture of lo (a queue: its frames readable as soon as sent). */
static struct nf_watch_cap *capture(struct nf_watch *w, struct nf_watch_ns *ns)
{
	char err[NF_RING_ERR_MAX];
	struct nf_watch_cap *c = calloc(1, sizeof(*c));

	ck_assert_ptr_nonnull(c);
	c->ns = ns;
	ck_assert_ptr_nonnull(c->ring = nf_ring_open_queue("lo", 1024, err));
	ck_assert_int_eq(nf_watch_stream_add(w, c), 0);
	return c;
}

/* n connections to 127.0.0.1:PORT (listened on by the caller), 1 ms
 * apart: TCP segments on lo, as the captures' filter keeps. */
static void send_some(int n)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	const struct timespec ms1 = { 0, 1000000 };

	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int i = 0; i < n; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
		close(fd);
		nanosleep(&ms1, NULL);
	}
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A listener on 127.0.0.1:PORT that accepts nothing (the kernel completes
 * send_some's handshakes); its descriptor. */
static int listen_sink(void)
{
	struct sockaddr_in at = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	int sink;

	ck_assert_int_ge(sink = socket(AF_INET, SOCK_STREAM, 0), 0);
	at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(sink, (struct sockaddr *)&at, sizeof(at)), 0);
	ck_assert_int_eq(listen(sink, 64), 0);
	return sink;
}

START_TEST(test_stream_no_wait_gives_none_early)
{
	struct nf_watch *w = calloc(1, sizeof(*w));
	struct nf_watch_ns ns = { 0 };
	struct nf_watch_cap *c[2];
	struct nf_ring_frame f;
	struct nf_watch_ns *got;
	uint64_t end;
	int sink, early = 0, n = 0;

	ck_assert_ptr_nonnull(w);
	own_namespace();
	sink = listen_sink();
	ck_assert_int_eq(nf_watch_stream_open(w), 0);
	c[0] = capture(w, &ns);
	c[1] = capture(w, &ns);
	send_some(5);
	while (nf_watch_stream_next(w, 0, &f, &got) > 0)
		early++;
	ck_assert_uint_gt(w->nheld, 0);
	for (end = mono_ms() + 300; mono_ms() < end;)
		if (nf_watch_stream_next(w, 0, &f, &got) > 0)
			n++;
	ck_assert_int_eq(early, 0); /* none due yet: NF_WATCH_HOLD_MS */
	ck_assert_int_ge(n, 2 * 5 * 3); /* then each, twice */
	for (int i = 0; i < 2; i++) {
		nf_watch_stream_remove(w, c[i]);
		nf_ring_close(c[i]->ring);
		free(c[i]);
	}
	nf_watch_stream_close(w);
	close(sink);
	free(w);
}
END_TEST

START_TEST(test_stream_held_frames_first_after_a_capture_goes)
{
	struct nf_watch *w = calloc(1, sizeof(*w));
	struct nf_watch_ns ns = { 0 }; /* lo 0: its frames are held as a veth's */
	struct nf_watch_cap *a, *b;
	struct nf_ring_frame f;
	struct nf_watch_ns *got;
	const struct timespec ms20 = { 0, 20000000 };
	struct timespec now;
	uint64_t split, end;
	int sink, n = 0, newer = 0, back = 0;

	ck_assert_ptr_nonnull(w);
	own_namespace();
	sink = listen_sink();
	ck_assert_int_eq(nf_watch_stream_open(w), 0);
	a = capture(w, &ns);
	b = capture(w, &ns);
	send_some(5);
	nanosleep(&ms20, NULL); /* their last segments through lo's backlog */
	while (nf_watch_stream_next(w, 1, &f, &got) > 0) /* not due yet: none */
		n++;
	ck_assert_int_eq(n, 0);
	ck_assert_uint_gt(w->nheld, 0);
	nf_watch_stream_remove(w, b); /* its frames held go; a's stay */
	nf_ring_close(b->ring);
	free(b);
	clock_gettime(CLOCK_REALTIME, &now);
	split = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	send_some(5);
	for (end = mono_ms() + 400; mono_ms() < end;) {
		int rc = nf_watch_stream_next(w, 50, &f, &got);

		ck_assert_int_ge(rc, 0);
		if (rc == 0)
			continue;
		n++;
		if (f.ts_ns >= split)
			newer++;
		else if (newer)
			back++; /* one held before the removal, after one read since */
	}
	ck_assert_int_ge(n, 10 * 3); /* the 10 handshakes, by a, once at least */
	ck_assert_int_ge(newer, 5 * 3);
	ck_assert_int_eq(back, 0);
	nf_watch_stream_remove(w, a);
	nf_ring_close(a->ring);
	free(a);
	nf_watch_stream_close(w);
	close(sink);
	free(w);
}
END_TEST

/* One connection to 127.0.0.1:PORT, accepted on sink, both closed. */
static void one_conn(int sink)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), in;

	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
	ck_assert_int_ge(in = accept(sink, NULL, NULL), 0);
	close(in);
	close(fd);
}

START_TEST(test_stream_steady_stream_read_straight_after_a_capture_goes)
{
	struct nf_watch *w = calloc(1, sizeof(*w));
	struct nf_watch_ns ns = { 0 };
	struct nf_watch_cap *a, *b;
	const struct timespec ms1 = { 0, 1000000 };
	struct nf_ring_frame f;
	struct nf_watch_ns *got;
	uint64_t end;
	int sink, n = 0;

	ck_assert_ptr_nonnull(w);
	own_namespace();
	sink = listen_sink();
	ck_assert_int_eq(nf_watch_stream_open(w), 0);
	a = capture(w, &ns);
	b = capture(w, &ns);
	send_some(5);
	while (nf_watch_stream_next(w, 1, &f, &got) > 0)
		n++;
	ck_assert_uint_gt(w->nheld, 0);
	nf_watch_stream_remove(w, b);
	nf_ring_close(b->ring);
	free(b);
	/* a segment every ms or so, never a gap of NF_WATCH_HOLD_MS: once the
	 * hold after the fall to one capture has passed, none is held */
	for (end = mono_ms() + 400; mono_ms() < end;) {
		one_conn(sink);
		nanosleep(&ms1, NULL);
		while (nf_watch_stream_next(w, 0, &f, &got) > 0)
			n++;
	}
	ck_assert_int_gt(n, 100);
	ck_assert_uint_eq(w->nheld, 0);
	nf_watch_stream_remove(w, a);
	nf_ring_close(a->ring);
	free(a);
	nf_watch_stream_close(w);
	close(sink);
	free(w);
}
END_TEST

static Suite *stream_suite(void)
{
	Suite *s = suite_create("watch_stream");
	TCase *tc = tcase_create("stream");
	const char *why = geteuid() ? "needs root (unshare CLONE_NEWNET)" : NULL;

	tcase_set_timeout(tc, 30);
	unit_add_unless(tc, test_stream_no_wait_gives_none_early, why);
	unit_add_unless(tc, test_stream_held_frames_first_after_a_capture_goes, why);
	unit_add_unless(tc, test_stream_steady_stream_read_straight_after_a_capture_goes, why);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return unit_run(srunner_create(stream_suite()), "check_watch_stream");
}
