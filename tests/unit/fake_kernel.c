/*
 * fake_kernel.c - the real-call table filled with fakes (see fake.h), as
 * torsocks tests its SOCKS code with send and recv it can swap.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/tcp.h> /* struct tcp_info with tcpi_notsent_bytes, as audit.c */
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>

#include <check.h>

#include "process/nf_init.h"
#include "core/nf_real.h"
#include "fake.h"

/* What init.c defines for the library: the unit binary does not link
 * init.c, which would bring real.c and every hook with it. (nf_policy is
 * track.c's, which the binary links.) */
__thread int nf_guard_inside __attribute__((tls_model("initial-exec")));

struct fake_kernel fake;

void fake_take(size_t n)
{
	ck_assert_int_lt(fake.nanswers, FAKE_SENDS);
	fake.answer[fake.nanswers].take = (ssize_t)n;
	fake.answer[fake.nanswers++].err = 0;
}

void fake_fail(int err)
{
	ck_assert_int_lt(fake.nanswers, FAKE_SENDS);
	fake.answer[fake.nanswers].take = -1;
	fake.answer[fake.nanswers++].err = err;
}

const char *fake_offered(int i)
{
	return fake.offered + fake.sends[i].at;
}

const char *fake_wire(void)
{
	fake.wire[fake.nwire] = '\0';
	return fake.wire;
}

/* Records a send of iov[0..niov) and answers it as scripted. */
static ssize_t fake_send(enum fake_call call, int fd, const struct iovec *iov, int niov,
			 int flags)
{
	struct fake_send *s;
	ssize_t take;

	ck_assert_msg(fake.nsends < FAKE_SENDS, "more than %d sends", FAKE_SENDS);
	s = &fake.sends[fake.nsends++];

	*s = (struct fake_send){ .call = call, .fd = fd, .flags = flags, .niov = niov,
				 .first_len = niov > 0 ? iov[0].iov_len : 0,
				 .at = fake.noffered };
	for (int i = 0; i < niov; i++) {
		ck_assert_uint_le(iov[i].iov_len, sizeof(fake.offered) - 1 - fake.noffered);
		memcpy(fake.offered + fake.noffered, iov[i].iov_base, iov[i].iov_len);
		fake.noffered += iov[i].iov_len;
		s->len += iov[i].iov_len;
	}
	take = (ssize_t)s->len;
	if (fake.next_answer < fake.nanswers) {
		ssize_t script = fake.answer[fake.next_answer].take;
		int err = fake.answer[fake.next_answer++].err;

		if (script < 0) {
			s->ret = -1;
			errno = err;
			return -1;
		}
		if (script < take)
			take = script;
	}
	memcpy(fake.wire + fake.nwire, fake.offered + s->at, (size_t)take);
	fake.nwire += (size_t)take;
	s->ret = take;
	return take;
}

static ssize_t fake_sendmsg(int fd, const struct msghdr *m, int flags)
{
	return fake_send(FAKE_SENDMSG, fd, m->msg_iov, (int)m->msg_iovlen, flags);
}

static ssize_t fake_send_nocancel(int fd, const void *buf, size_t len, int flags)
{
	struct iovec v = { .iov_base = (void *)buf, .iov_len = len };

	return fake_send(FAKE_SEND_NOCANCEL, fd, &v, 1, flags);
}

static int fake_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	struct tcp_info ti;

	(void)fd;
	if (level != IPPROTO_TCP || name != TCP_INFO) {
		errno = ENOPROTOOPT;
		return -1;
	}
	fake.ntcp_info++;
	if (fake.tcp_info_err) {
		errno = fake.tcp_info_err;
		return -1;
	}
	memset(&ti, 0, sizeof(ti));
	ti.tcpi_state = (__u8)fake.tcp_state;
	ti.tcpi_unacked = fake.unacked;
	ti.tcpi_snd_mss = fake.snd_mss;
	ti.tcpi_notsent_bytes = fake.notsent;
	ti.tcpi_rcv_mss = fake.rcv_mss;
	ti.tcpi_ato = fake.ato;
	ti.tcpi_rtt = fake.rtt;
	ti.tcpi_last_data_recv = fake.last_data_recv;
	if (*len > sizeof(ti))
		*len = sizeof(ti);
	memcpy(val, &ti, *len);
	return 0;
}

static int fake_fcntl(int fd, int cmd, ...)
{
	(void)fd;
	return cmd == F_GETFL ? fake.fl : 0;
}

static int fake_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	(void)fd, (void)level, (void)name, (void)val, (void)len;
	fake.nsetsockopt++;
	return 0;
}

/* A socket that never gets room: each poll times out, and the clock moves
 * by its timeout, so a drain reaches its deadline at once. */
static int fake_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	(void)fds, (void)n;
	fake.npoll++;
	fake_now += (unsigned long long)(timeout_ms > 0 ? timeout_ms : 0) * 1000000ull;
	return 0;
}

/* The log (stderr, log.c's default) and nothing else. */
static ssize_t fake_write(int fd, const void *buf, size_t len)
{
	if (fd != 2) {
		errno = EBADF;
		return -1;
	}
	if (len > sizeof(fake.log) - 1 - fake.nlog)
		len = sizeof(fake.log) - 1 - fake.nlog;
	memcpy(fake.log + fake.nlog, buf, len);
	fake.nlog += len;
	return (ssize_t)len;
}

void fake_install(void)
{
	memset(&fake, 0, sizeof(fake));
	fake.tcp_state = 1; /* TCP_ESTABLISHED */
	fake.snd_mss = FAKE_MSS;
	fake.rcv_mss = FAKE_RCV_MSS;
	fake.ato = FAKE_ATO;
	fake.rtt = FAKE_RTT;
	memset(&nf_real, 0, sizeof(nf_real));
	nf_real.sendmsg = fake_sendmsg;
	nf_real.send_nocancel = fake_send_nocancel;
	nf_real.getsockopt = fake_getsockopt;
	nf_real.fcntl = fake_fcntl;
	nf_real.setsockopt = fake_setsockopt;
	nf_real.poll = fake_poll;
	nf_real.write = fake_write;
}
