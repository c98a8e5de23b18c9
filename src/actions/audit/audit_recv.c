/*
 * audit_recv.c - the receive side's rule (see nf_audit.h): is a gap
 * between two reads of an audit socket the peer's split write, its second
 * piece held by the peer's Nagle until our delayed ACK of the first came?
 *
 * The peer writes a message in two pieces. The first leaves at once; the
 * peer's Nagle holds the second, small one until the first is
 * acknowledged; our kernel delays that ACK, for nothing of ours goes back
 * to carry it. So our read of the first piece is followed, one delayed
 * ACK and one round trip later, by the read of the second. audit.c finds
 * the candidates without a system call (a read returning data 35 to 250
 * ms after the previous one did, no send of the program between them:
 * nf_audit_recv_candidate); here TCP_INFO is asked, once per candidate,
 * whether the kernel agrees:
 *
 *  - the first piece was at most one segment: first <= tcpi_rcv_mss. The
 *    kernel ACKs at once when more than one full segment (rcv_mss, its
 *    estimate of the peer's MSS: the largest segment seen,
 *    NF_TCP_MSS_DEFAULT of nf_tcp.h until a larger one comes) is
 *    unacknowledged, and delays the ACK of less. (At most, not fewer
 *    than: a full segment alone is delayed too, and a message of 1.5
 *    segments stalls on it.)
 *  - the second piece had just come when the read returned:
 *    tcpi_last_data_recv <= ARRIVED_MS, one jiffy at HZ=100 (its unit).
 *    A program that reads the first piece, works 45 ms, then finds the
 *    second waiting in the buffer did not wait for it.
 *  - the gap is the delayed ACK's. The timeout our kernel gives it is
 *    d = min(tcpi_ato, max(tcpi_rtt, 40 ms), 200 ms): tcp_send_delayed_ack
 *    bounds a timeout above TCP_DELACK_MIN (40 ms at every HZ) by the
 *    smoothed RTT, and every one by TCP_DELACK_MAX. The gap must be in
 *    [d - EARLY_US, d + tcpi_rtt + LATE_US]: the ACK and the released
 *    piece take a round trip; the timer fires up to a jiffy late (10 ms
 *    at HZ=100) and the reading thread may run up to 5 ms after the
 *    piece came (LATE_US: 15 ms); the first read may have returned up to
 *    5 ms after its piece came, which shortens the gap (EARLY_US).
 *
 * Measured on this project's machine (Linux 6.18, HZ=250, loopback):
 * behind the Java-style split client (6 then 7 bytes, then a read)
 * tcpi_ato read 40000 us at every stall, tcpi_rtt 10-16 us, and the gaps
 * were 41.2-44.1 ms: d = 40 ms, window 35-55 ms. A one-way sender of 10
 * bytes every 45, 60, 100 or 200 ms reads tcpi_ato 40000 too; one every
 * 30 ms inflates it to 48000-60000 (the kernel's estimate follows the
 * arrival interval) while the ACK still waits 40 ms (bounded by the RTT):
 * hence d, not tcpi_ato alone. So a one-way sender pausing 100 ms is no
 * finding; one pausing 35-55 ms on loopback (the window) cannot be told
 * from a held piece by anything the kernel reports, and is one. So can a
 * longer pause that a late read shortened: the gap is between the reads'
 * returns, and a read that a loaded host ran 45-65 ms after its piece came
 * leaves the next piece of a sender pausing 100 ms in the window (its
 * arrival is known only at a TCP_INFO at every read, a system call the
 * rule does not spend).
 */
#include "nf_audit.h"

#include <errno.h>
#ifdef __GLIBC__
#include <linux/tcp.h> /* struct tcp_info as audit.c sees it */
#else
#include <netinet/tcp.h>
#endif
#include <netinet/in.h>
#include <string.h>

#include "core/nf_real.h"

#define DELACK_MIN_US 40000u  /* TCP_DELACK_MIN, HZ/25 */
#define DELACK_MAX_US 200000u /* TCP_DELACK_MAX, HZ/5 */
#define EARLY_US 5000u
#define LATE_US 15000u
#define ARRIVED_MS 10u
#define SEGMENT_MAX 65535u    /* no MSS is larger: rcv_mss <= advmss */

int nf_audit_recv_candidate(const struct nf_audit_gap *g)
{
	return g->first > 0 && g->first <= SEGMENT_MAX && g->gap_ns >= NF_AUDIT_GAP_MIN_NS &&
	       g->gap_ns <= NF_AUDIT_GAP_MAX_NS;
}

/* The timeout the kernel gives a delayed ACK now, in us (see top). */
static unsigned long long delack_us(const struct tcp_info *ti)
{
	unsigned long long cap = DELACK_MAX_US;

	if (ti->tcpi_rtt && ti->tcpi_rtt < cap) /* no RTT measured yet: no bound */
		cap = ti->tcpi_rtt > DELACK_MIN_US ? ti->tcpi_rtt : DELACK_MIN_US;
	return ti->tcpi_ato < cap ? ti->tcpi_ato : cap;
}

/* Is g, with the kernel's ti, a piece held until our delayed ACK? (see top) */
static int held_by_our_ack(const struct nf_audit_gap *g, const struct tcp_info *ti)
{
	unsigned long long d = delack_us(ti), gap_us = g->gap_ns / 1000;

	if (d == 0 || g->first > ti->tcpi_rcv_mss || ti->tcpi_last_data_recv > ARRIVED_MS)
		return 0;
	return gap_us + EARLY_US >= d && gap_us <= d + ti->tcpi_rtt + LATE_US;
}

static void fill_finding(int fd, enum nf_side side, const struct nf_audit_gap *g,
			 const struct tcp_info *ti, struct nf_audit_finding *f)
{
	memset(f, 0, sizeof(*f));
	f->event = NF_AUDIT_RECV_SPLIT;
	f->fd = fd;
	f->side = side;
	f->stall_ms = (double)g->gap_ns / 1e6;
	f->nwrites = 2;
	f->writes[0] = g->first;
	f->writes[1] = g->second;
	f->caller = g->caller;
	f->ato_ms = ti->tcpi_ato / 1e3;
}

int nf_audit_recv_split(int fd, enum nf_side side, const struct nf_audit_gap *g,
			struct nf_audit_finding *f)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	int saved = errno, found;

	memset(&ti, 0, sizeof(ti));
	found = nf_real.getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
		held_by_our_ack(g, &ti);
	if (found)
		fill_finding(fd, side, g, &ti, f);
	errno = saved;
	return found;
}
