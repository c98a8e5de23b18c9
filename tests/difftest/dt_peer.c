/* dt_peer.c: the differential test's peer. It runs in a process forked from
 * dt_run (which never loads the library: run.sh and dt_run clear LD_PRELOAD
 * and NAGLEFIX_*), accepts one connection per listener, behaves on each as
 * the op list says (dt.h, B_*) and records every byte it reads to
 * DIR/peer.C, how the connection ended and how many reply bytes it sent to
 * DIR/peer.C.end ("eof 0", "reset 1234"...). It stops by itself:
 * when dt_run says the program is gone (SIGUSR1) and every connection has
 * ended, or once a wait of 1.5 s after that signal found nothing to read
 * (a peer kept off the CPU that long still reads what is there first),
 * and at the latest after PEER_DEADLINE_US (past dt_run's longest wait for
 * a program: 10 x its limit); it dies with dt_run.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dt.h"
#include "dt_peer.h"

#define PEER_DEADLINE_US 60000000L

static volatile sig_atomic_t prog_gone;

static void on_usr1(int s) { (void)s; prog_gone = 1; }

static long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

int dt_peer_listen(struct dt_peer *p, const struct dt_list *l)
{
	memset(p, 0, sizeof *p);
	p->nconn = l->nconn;
	p->filler = -1;
	for (int c = 0; c < l->nconn; c++) {
		struct sockaddr_in a = { .sin_family = AF_INET };
		socklen_t len = sizeof a;
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), backlog = l->conn[c].beh == B_BACKLOG;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
		    listen(fd, backlog ? 0 : 4) < 0 || getsockname(fd, (struct sockaddr *)&a, &len) < 0)
			return -1;
		p->lfd[c] = fd;
		p->port[c] = ntohs(a.sin_port);
		p->conn[c] = l->conn[c];
		if (backlog) {
			/* backlog 0 queues one connection: the filler; the program's SYN is then
			 * dropped and its connect stays in progress (retried after 1 s, 3 s...) */
			int f = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (f < 0 || connect(f, (struct sockaddr *)&a, sizeof a) < 0)
				return -1;
			p->filler = f;
		}
	}
	return 0;
}

struct pc {
	int fd, done, shut;
	long got, cap, next_us, rleft, rpend, roff;
	unsigned char *buf;
	const char *end;
};

static void keep(struct pc *s, const unsigned char *b, long n)
{
	if (s->got + n > s->cap) {
		s->cap = (s->got + n) * 2;
		s->buf = realloc(s->buf, (size_t)s->cap);
	}
	memcpy(s->buf + s->got, b, (size_t)n);
	s->got += n;
}

static void finish(struct pc *s, const char *why)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->done = 1;
	s->end = why;
}

/* Reads what the behaviour allows now from connection S. */
static void take(struct dt_conn *b, struct pc *s, long now)
{
	static unsigned char buf[65536];
	long want = sizeof buf;
	ssize_t r;

	if (b->beh == B_SLOW) {
		if (now < s->next_us)
			return;
		want = 2048;
		s->next_us = now + 1000;
	}
	if (b->beh == B_CLOSE || b->beh == B_RST) {
		if (s->got >= b->k) {
			if (b->beh == B_RST) {
				struct linger lg = { 1, 0 };
				setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
			}
			finish(s, b->beh == B_RST ? "peer-rst" : "peer-close");
			return;
		}
		if (want > b->k - s->got)
			want = b->k - s->got;
	}
	r = recv(s->fd, buf, (size_t)want, MSG_DONTWAIT);
	if (r > 0) {
		keep(s, buf, r);
		if (b->beh == B_REPLY) {
			long m = r * 4 < s->rleft ? r * 4 : s->rleft;
			s->rpend += m;
			s->rleft -= m;
		}
		if (b->beh == B_SHUTRD && !s->shut && s->got >= b->k) {
			shutdown(s->fd, SHUT_RD);
			s->shut = 1;
		}
		if ((b->beh == B_CLOSE || b->beh == B_RST) && s->got >= b->k)
			take(b, s, now);
		return;
	}
	if (r == 0 && s->shut) {
		/* after our SHUT_RD, recv says 0 with data still to come: end only on the
		 * program's FIN */
		struct tcp_info ti;
		socklen_t tl = sizeof ti;
		if (getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0 && ti.tcpi_state == TCP_ESTABLISHED) {
			s->next_us = now + 1000;
			return;
		}
		/* The FIN is in. But recv said 0 before the kernel processed what
		 * came while the socket was busy (its backlog): getsockopt did, and the
		 * data before that FIN may be queued only now. Read again. */
		r = recv(s->fd, buf, (size_t)want, MSG_DONTWAIT);
		if (r > 0) {
			keep(s, buf, r);
			s->next_us = now;
			return;
		}
	}
	if (r == 0)
		finish(s, "eof");
	else if (errno != EAGAIN && errno != EINTR)
		finish(s, errno == ECONNRESET ? "reset" : "error");
}

static void answer(int c, struct pc *s)
{
	unsigned char buf[16384];
	long n = s->rpend < (long)sizeof buf ? s->rpend : (long)sizeof buf;
	ssize_t r;
	for (long i = 0; i < n; i++)
		buf[i] = dt_reply_byte(c, s->roff + i);
	r = send(s->fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (r > 0) {
		s->roff += r;
		s->rpend -= r;
	}
}

static void save(const char *dir, int c, const struct pc *s)
{
	char path[4200];
	int fd;
	snprintf(path, sizeof path, "%s/peer.%d", dir, c);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		if (s->got && write(fd, s->buf, (size_t)s->got) != s->got)
			_exit(3);
		close(fd);
	}
	snprintf(path, sizeof path, "%s/peer.%d.end", dir, c);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		dprintf(fd, "%s %ld\n", s->end ? s->end : "unended", s->roff);
		close(fd);
	}
}

/* What a behaviour does as soon as its connection is there. */
static void after_accept(struct dt_peer *p, int c, struct pc *s, long now)
{
	if ((p->conn[c].beh == B_CLOSE || p->conn[c].beh == B_RST) && p->conn[c].k == 0)
		take(&p->conn[c], s, now);
	else if (p->conn[c].beh == B_SHUTRD && p->conn[c].k == 0) {
		shutdown(s->fd, SHUT_RD);
		s->shut = 1;
	}
}

void dt_peer_serve(struct dt_peer *p, const char *dir)
{
	struct pc st[DT_MAXCONN];
	struct sigaction sa;
	sigset_t blk, old;
	long start = now_us(), gone_at = 0, quiet_from = 0; /* since: no byte, no accept */

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&blk);
	sigaddset(&blk, SIGUSR1);
	sigprocmask(SIG_BLOCK, &blk, &old);
	sigdelset(&old, SIGUSR1); /* dt_run forks us with it blocked */
	memset(st, 0, sizeof st);
	for (int c = 0; c < p->nconn; c++) {
		st[c].fd = -1;
		st[c].rleft = p->conn[c].k * 1024L;
		if (p->conn[c].beh == B_BACKLOG)
			st[c].done = 1, st[c].end = "backlog";
	}
	for (;;) {
		struct pollfd pf[2 * DT_MAXCONN];
		int np = 0, open_ = 0, n, who[2 * DT_MAXCONN];
		long now = now_us(), wake = now + 100000;
		struct timespec ts;

		if (prog_gone && !gone_at)
			gone_at = quiet_from = now;
		if (now - start > PEER_DEADLINE_US)
			break;
		for (int c = 0; c < p->nconn; c++) {
			struct pc *s = &st[c];
			struct dt_conn *b = &p->conn[c];
			if (s->done)
				continue;
			open_++;
			if (s->fd < 0 && b->accepted) {
				/* the program accepts this one: we connect (the listener's queue
				 * completes it before the program's accept) */
				struct sockaddr_in a = { .sin_family = AF_INET };
				a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
				a.sin_port = htons((uint16_t)p->port[c]);
				s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
				if (s->fd < 0 || connect(s->fd, (struct sockaddr *)&a, sizeof a) < 0) {
					finish(s, "connect-failed");
					continue;
				}
				fcntl(s->fd, F_SETFL, O_NONBLOCK);
				close(p->lfd[c]);
				after_accept(p, c, s, now);
			}
			if (s->fd < 0) {
				if (gone_at) { /* accept what is queued, else it never came */
					s->fd = accept4(p->lfd[c], NULL, NULL, SOCK_NONBLOCK);
					if (s->fd < 0)
						finish(s, "never-connected");
					continue;
				}
				pf[np] = (struct pollfd){ p->lfd[c], POLLIN, 0 };
				who[np++] = c;
				continue;
			}
			if (b->beh == B_PAUSE && now < start + b->k * 1000L) {
				if (start + b->k * 1000L < wake)
					wake = start + b->k * 1000L;
				continue;
			}
			if ((b->beh == B_SLOW || s->shut) && now < s->next_us) {
				if (s->next_us < wake)
					wake = s->next_us;
				continue;
			}
			pf[np] = (struct pollfd){ s->fd, POLLIN | (s->rpend ? POLLOUT : 0), 0 };
			who[np++] = DT_MAXCONN + c;
		}
		/* keep the listeners until the program is gone: a pending connect's SYN
		 * retried to a closed port would be refused */
		if (!open_ && gone_at)
			break;
		if (gone_at && quiet_from + 1500000 < wake)
			wake = quiet_from + 1500000;
		if (wake < now)
			wake = now;
		ts.tv_sec = (wake - now) / 1000000;
		ts.tv_nsec = (wake - now) % 1000000 * 1000;
		if ((n = ppoll(pf, (nfds_t)np, &ts, &old)) < 0)
			continue;
		now = now_us();
		if (!n && gone_at && now - quiet_from >= 1500000)
			break; /* nothing came since quiet_from: unread data would wake it */
		for (int i = 0; i < np; i++) {
			int c = who[i] % DT_MAXCONN;
			struct pc *s = &st[c];
			if (!pf[i].revents)
				continue;
			if (gone_at && (who[i] < DT_MAXCONN || (pf[i].revents & (POLLIN | POLLHUP | POLLERR))))
				quiet_from = now;
			if (who[i] < DT_MAXCONN) {
				s->fd = accept4(p->lfd[c], NULL, NULL, SOCK_NONBLOCK);
				if (s->fd >= 0)
					after_accept(p, c, s, now);
				continue;
			}
			if (pf[i].revents & POLLOUT)
				answer(c, s);
			if (pf[i].revents & (POLLIN | POLLHUP | POLLERR))
				take(&p->conn[c], s, now);
		}
	}
	for (int c = 0; c < p->nconn; c++)
		save(dir, c, &st[c]);
}
