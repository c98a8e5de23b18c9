/*
 * test_bigtls.c - the flush timer runs in a program with a large static
 * thread-local area.
 *
 * glibc places the static TLS block of every thread at the top of its
 * stack, so a thread whose stack is smaller than that block cannot be
 * created. This program has 256 KiB of __thread data (a few big per-thread
 * buffers are enough). Under conf/flush-2ms.conf it writes a line (held)
 * and then only sleeps: the timer alone must deliver it, within 200 ms.
 *
 *   test_bigtls timer
 */
#include "../common/peer.h"

#define ARRIVE_MS 200

static __thread char big_tls[256 * 1024];

static void run(int unused)
{
	struct ct_report r;
	struct ct_peer p;
	double t0;
	int fd;

	(void)unused;
	memset(big_tls, 1, sizeof(big_tls));
	ct_peer_start(&p, "lines");
	fd = ct_connect(p.port);
	t0 = ct_now_ms();
	ct_send_str(fd, "tick\n");
	ct_expect_held_briefly(fd, 0, t0, 2);
	CHECK(ct_report_recv(p.rep, &r, ARRIVE_MS) == 0, "a held line was not delivered within "
	      "%d ms (flush=2ms): the flush timer is not running", ARRIVE_MS);
	CHECK(r.kind == CT_LINE && strcmp(r.text, "tick\n") == 0, "report '%c' '%s'", r.kind, r.text);
	ct_say("delivered by the timer after %.1f ms, with %zu KiB of TLS", ct_now_ms() - t0,
	       sizeof(big_tls) / 1024);
	close(fd);
	ct_peer_stop(&p);
}

static const struct ct_case cases[] = {
	{ "timer", run, 0 },
};

int main(int argc, char **argv)
{
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
