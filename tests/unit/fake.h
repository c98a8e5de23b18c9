/*
 * fake.h - the kernel and the timer as the unit tests of coalesce and
 * audit give them: nf_real filled with fakes that answer as the test
 * scripts and record what they were given (fake_kernel.c), and a timer
 * whose clock moves only when the test moves it (fake_timer.c).
 *
 * Nothing is interposed: the unit binary links coalesce.c, audit.c and
 * the modules they call, never real.c, init.c or interpose/, so every
 * libc name in it is libc's. What the library does to the kernel goes
 * through nf_real, which fake_install fills: an entry no fake stands for
 * stays NULL, and a test that reaches it crashes (an error, not a pass).
 */
#ifndef NF_TEST_FAKE_H
#define NF_TEST_FAKE_H

#include <stddef.h>
#include <sys/types.h>

#include "nf_tcp.h"

#define FAKE_FD 100        /* the tests' socket: a number, no file behind it */
#define FAKE_SENDS 256     /* sends recorded, and answers scripted, at most */
#define FAKE_BYTES 65536   /* bytes recorded of what was offered, taken, logged */
#define FAKE_MSS 1448      /* tcpi_snd_mss unless a test says otherwise */
#define FAKE_RCV_MSS NF_TCP_MSS_DEFAULT /* tcpi_rcv_mss: the kernel's first estimate */
#define FAKE_ATO 40000     /* tcpi_ato (us): TCP_ATO_MIN, as loopback reads */
#define FAKE_RTT 15        /* tcpi_rtt (us), as loopback reads */

enum fake_call { FAKE_SENDMSG = 1, FAKE_SEND_NOCANCEL };

/* One send the code under test made. */
struct fake_send {
	enum fake_call call;
	int fd;
	int flags;
	int niov;          /* pieces offered (send_nocancel: 1) */
	size_t len;        /* bytes offered, in all */
	size_t first_len;  /* of which in the first piece */
	size_t at;         /* where they start in fake.offered */
	ssize_t ret;       /* what the fake answered */
};

struct fake_kernel {
	int nsends;
	struct fake_send sends[FAKE_SENDS];
	char offered[FAKE_BYTES];  /* every send's bytes, one after another */
	size_t noffered;
	char wire[FAKE_BYTES];     /* the bytes the fake kernel took, in order */
	size_t nwire;
	struct { ssize_t take; int err; } answer[FAKE_SENDS]; /* scripted, in order */
	int nanswers, next_answer;

	int tcp_state;             /* TCP_INFO: tcpi_state (netinet/tcp.h's TCP_*) */
	unsigned unacked, snd_mss, notsent;
	unsigned rcv_mss, ato, rtt;  /* TCP_INFO: tcpi_rcv_mss, tcpi_ato, tcpi_rtt (us) */
	unsigned last_data_recv;     /* TCP_INFO: tcpi_last_data_recv (ms) */
	int tcp_info_err;            /* non-zero: TCP_INFO fails with this errno */
	int ntcp_info;             /* getsockopt(TCP_INFO) calls */
	int fl;                    /* fcntl(F_GETFL)'s answer: 0 or O_NONBLOCK */
	int npoll, nsetsockopt;
	char log[FAKE_BYTES];      /* what the library wrote to its log (stderr) */
	size_t nlog;
};

extern struct fake_kernel fake;

/* Empties fake (an established socket with nothing unacked, MSS FAKE_MSS,
 * receive MSS FAKE_RCV_MSS, tcpi_ato FAKE_ATO, tcpi_rtt FAKE_RTT, data
 * just received, blocking) and fills nf_real with the fakes. */
void fake_install(void);

/* The next unanswered send takes at most n bytes. A send with no scripted
 * answer takes everything it is offered. */
void fake_take(size_t n);

/* The next unanswered send fails with err, taking nothing. */
void fake_fail(int err);

/* The bytes send i was offered (fake.sends[i].len of them). */
const char *fake_offered(int i);

/* The wire (what was taken), as a NUL-terminated string. */
const char *fake_wire(void);

/* --- fake_timer.c: nf_timer_* and the clock --- */

extern unsigned long long fake_now;       /* nf_clock_now_ns's answer */
extern int fake_narms;                    /* nf_timer_arm calls */
extern unsigned long long fake_armed_at;  /* the last one's deadline */
extern int fake_timer_down;               /* nf_timer_failed's answer (0: it runs) */

#endif
