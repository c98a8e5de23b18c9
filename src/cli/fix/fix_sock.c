/*
 * fix_sock.c - one socket of another process: taken by duplicate
 * (pidfd_getfd), its inode checked, identified from the duplicate itself
 * (which answers in the program's network namespace), TCP_NODELAY read
 * and set on it (the same socket the program holds).
 */
#include "fix_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int sys_pidfd_getfd(int pidfd, int fd)
{
	return (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
}

int nf_fix_sock_take(const struct nf_fix_proc *p, int fd, unsigned long ino)
{
	struct stat st;
	int dup = sys_pidfd_getfd(p->pidfd, fd);

	if (dup < 0)
		return -errno;
	if (fstat(dup, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_ino != ino) {
		close(dup);
		return -ESTALE;
	}
	return dup;
}

static int int_opt(int fd, int level, int name, int *out)
{
	socklen_t len = sizeof(*out);

	return getsockopt(fd, level, name, out, &len) < 0 ? -errno : 0;
}

int nf_fix_sock_identify(int dup, int fd, unsigned long ino, struct nf_fix_sock *s)
{
	int domain, type, proto;
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->ino = ino;
	s->nodelay = -1;
	if (int_opt(dup, SOL_SOCKET, SO_DOMAIN, &domain) < 0 ||
	    int_opt(dup, SOL_SOCKET, SO_TYPE, &type) < 0 ||
	    int_opt(dup, SOL_SOCKET, SO_PROTOCOL, &proto) < 0)
		return -EPROTONOSUPPORT;
	if ((domain != AF_INET && domain != AF_INET6) || type != SOCK_STREAM ||
	    proto != IPPROTO_TCP)
		return -EPROTONOSUPPORT;
	s->family = domain;
	if (int_opt(dup, SOL_SOCKET, SO_ACCEPTCONN, &s->listening) < 0)
		s->listening = 0;
	s->local_len = sizeof(s->local);
	if (getsockname(dup, (struct sockaddr *)&s->local, &s->local_len) < 0)
		s->local_len = 0;
	s->peer_len = sizeof(s->peer);
	if (getpeername(dup, (struct sockaddr *)&s->peer, &s->peer_len) < 0)
		s->peer_len = 0;
	s->state = getsockopt(dup, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 ? ti.tcpi_state : -1;
	s->nodelay = nf_fix_sock_nodelay(dup);
	return 0;
}

int nf_fix_sock_set_nodelay(int dup, int on)
{
	return setsockopt(dup, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) < 0 ? -errno : 0;
}

int nf_fix_sock_nodelay(int dup)
{
	int v;
	int rc = int_opt(dup, IPPROTO_TCP, TCP_NODELAY, &v);

	return rc < 0 ? rc : !!v;
}

/* The address bytes and port of a sockaddr_in or sockaddr_in6. */
static const uint8_t *addr_of(const struct sockaddr_storage *ss, int *port)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;

		*port = ntohs(in->sin_port);
		return (const uint8_t *)&in->sin_addr;
	}
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

	*port = ntohs(in6->sin6_port);
	return in6->sin6_addr.s6_addr;
}

static const char *format(const struct sockaddr_storage *ss, socklen_t len, char buf[NF_ADDR_MAX])
{
	int port;
	const uint8_t *a;

	if (!len || (ss->ss_family != AF_INET && ss->ss_family != AF_INET6)) {
		strcpy(buf, "-");
		return buf;
	}
	a = addr_of(ss, &port);
	return nf_addr_format(ss->ss_family, a, port, buf);
}

const char *nf_fix_sock_local(const struct nf_fix_sock *s, char buf[NF_ADDR_MAX])
{
	return format(&s->local, s->local_len, buf);
}

const char *nf_fix_sock_peer(const struct nf_fix_sock *s, char buf[NF_ADDR_MAX])
{
	return format(&s->peer, s->peer_len, buf);
}

int nf_fix_sock_port(const struct nf_fix_sock *s)
{
	int port = -1;

	if (s->local_len)
		addr_of(&s->local, &port);
	return port;
}

/* The address of ss as 16 bytes of IPv6 (IPv4 as ::ffff:a.b.c.d). */
static void as_v6(const struct sockaddr_storage *ss, uint8_t out[16])
{
	int port;
	const uint8_t *a = addr_of(ss, &port);

	if (ss->ss_family == AF_INET) {
		memset(out, 0, 10);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, a, 4);
	} else {
		memcpy(out, a, 16);
	}
}

static int is_wildcard(const struct sockaddr_storage *ss)
{
	static const uint8_t any6[16], any4[16] = { [10] = 0xff, [11] = 0xff };
	uint8_t a[16];

	as_v6(ss, a);
	return memcmp(a, ss->ss_family == AF_INET ? any4 : any6, 16) == 0;
}

int nf_fix_sock_listener_of(const struct nf_fix_sock *l, const struct nf_fix_sock *s)
{
	uint8_t la[16], sa[16];

	if (!l->listening || s->listening || !l->local_len || !s->local_len ||
	    nf_fix_sock_port(l) != nf_fix_sock_port(s))
		return 0;
	if (is_wildcard(&l->local))
		/* what :: accepts from IPv4 is an AF_INET6 socket (::ffff:a.b.c.d) */
		return l->family == s->family;
	as_v6(&l->local, la);
	as_v6(&s->local, sa);
	return memcmp(la, sa, 16) == 0;
}

const char *nf_fix_state_name(int state)
{
	static const char *const names[] = {
		[TCP_ESTABLISHED] = "established", [TCP_SYN_SENT] = "syn-sent",
		[TCP_SYN_RECV] = "syn-recv",       [TCP_FIN_WAIT1] = "fin-wait-1",
		[TCP_FIN_WAIT2] = "fin-wait-2",    [TCP_TIME_WAIT] = "time-wait",
		[TCP_CLOSE] = "close",             [TCP_CLOSE_WAIT] = "close-wait",
		[TCP_LAST_ACK] = "last-ack",       [TCP_LISTEN] = "listen",
		[TCP_CLOSING] = "closing",
	};

	if (state < 0 || (size_t)state >= sizeof(names) / sizeof(names[0]) || !names[state])
		return "unknown";
	return names[state];
}
