/*
 * sockopt_diff.c - a program's own socket options and errors, one line a
 * call, for tests/attach/run.sh to run inside a cgroup with naglefix's
 * programs and outside it and compare: every line must be the same but
 * those the rule changes, whose names begin with "rule-" (a
 * setsockopt(TCP_NODELAY, 0) of 4 or more bytes on a connected or
 * accepted TCP socket, and the option an unconnected socket has once
 * connected). Each line: NAME set=RC/ERRNO get=RC/ERRNO value=V, the
 * value read back by getsockopt after the call.
 * Usage: sockopt_diff   (it listens and connects on loopback itself)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* setsockopt(level, name, val, len) on fd, then getsockopt of (glevel,
 * gname) read back; one line. */
static void call(const char *tag, int fd, int level, int name, const void *val, socklen_t len,
		 int glevel, int gname)
{
	int rc = setsockopt(fd, level, name, val, len), e = rc < 0 ? errno : 0, v = -1, grc, ge;
	socklen_t vl = sizeof(v);

	grc = getsockopt(fd, glevel, gname, &v, &vl);
	ge = grc < 0 ? errno : 0;
	printf("%s set=%d/%s get=%d/%s value=%d\n", tag, rc, e ? strerror(e) : "0", grc,
	       ge ? strerror(ge) : "0", v);
}

/* getsockopt(TCP_NODELAY) alone; one line. */
static void get_only(const char *tag, int fd)
{
	int v = -1, rc;
	socklen_t vl = sizeof(v);

	rc = getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &vl);
	printf("%s get=%d/%s value=%d\n", tag, rc, rc < 0 ? strerror(errno) : "0", v);
}

/* The usual shape: an int option set and read back at its own place. */
static void set_int(const char *tag, int fd, int level, int name, int val)
{
	call(tag, fd, level, name, &val, sizeof(val), level, name);
}

/* A listener on 127.0.0.1 (or ::1), its address into a. */
static int listener(int family, struct sockaddr_storage *a, socklen_t *len)
{
	int fd = socket(family, SOCK_STREAM, 0);

	memset(a, 0, sizeof(*a));
	a->ss_family = (sa_family_t)family;
	if (family == AF_INET)
		((struct sockaddr_in *)a)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else
		((struct sockaddr_in6 *)a)->sin6_addr = in6addr_loopback;
	*len = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	if (fd < 0 || bind(fd, (struct sockaddr *)a, *len) < 0 || listen(fd, 8) < 0 ||
	    getsockname(fd, (struct sockaddr *)a, len) < 0) {
		perror("sockopt_diff: listener");
		exit(2);
	}
	return fd;
}

/* The calls on a connected socket c (prefix p). */
static void connected(const char *p, int c)
{
	char t[64];
	static int big0[2048], big1[2048] = { 40000 };
	int64_t zero64 = 0;
	int zero = 0;

#define TAG(s) (snprintf(t, sizeof(t), "%s%s", p, s), t)
	set_int(TAG("nodelay-1"), c, IPPROTO_TCP, TCP_NODELAY, 1);
	set_int(TAG("nodelay-5"), c, IPPROTO_TCP, TCP_NODELAY, 5);
	call(TAG("nodelay-0-len2"), c, IPPROTO_TCP, TCP_NODELAY, &zero, 2, IPPROTO_TCP, TCP_NODELAY);
	call(TAG("nodelay-0-len0"), c, IPPROTO_TCP, TCP_NODELAY, &zero, 0, IPPROTO_TCP, TCP_NODELAY);
	call(TAG("nodelay-null"), c, IPPROTO_TCP, TCP_NODELAY, NULL, 4, IPPROTO_TCP, TCP_NODELAY);
	call(TAG("nodelay-badptr"), c, IPPROTO_TCP, TCP_NODELAY, (void *)8, 4, IPPROTO_TCP, TCP_NODELAY);
	set_int(TAG("cork-1"), c, IPPROTO_TCP, TCP_CORK, 1);
	set_int(TAG("cork-0"), c, IPPROTO_TCP, TCP_CORK, 0);
	set_int(TAG("quickack-1"), c, IPPROTO_TCP, TCP_QUICKACK, 1);
	set_int(TAG("keepalive-1"), c, SOL_SOCKET, SO_KEEPALIVE, 1);
	set_int(TAG("keepidle-30"), c, IPPROTO_TCP, TCP_KEEPIDLE, 30);
	set_int(TAG("keepidle-0"), c, IPPROTO_TCP, TCP_KEEPIDLE, 0);
	set_int(TAG("sndbuf-65536"), c, SOL_SOCKET, SO_SNDBUF, 65536);
	set_int(TAG("rcvbuf-65536"), c, SOL_SOCKET, SO_RCVBUF, 65536);
	set_int(TAG("tcp-999"), c, IPPROTO_TCP, 999, 0);
	/* option number 1 (TCP_NODELAY's) at other levels: SO_DEBUG, IP_TOS */
	set_int(TAG("sol-socket-1-0"), c, SOL_SOCKET, 1, 0);
	set_int(TAG("ip-1-0"), c, IPPROTO_IP, 1, 0);
	call(TAG("nodelay-0-get-cork"), c, IPPROTO_TCP, TCP_CORK, &zero, 4, IPPROTO_TCP, TCP_NODELAY);
	/* longer than the page the kernel copies for the programs: the
	 * caller's own bytes (value 0: the rule's write is not seen) */
	call(TAG("nodelay-1-len8192"), c, IPPROTO_TCP, TCP_NODELAY, big1, sizeof(big1), IPPROTO_TCP,
	     TCP_NODELAY);
	call(TAG("nodelay-0-len8192"), c, IPPROTO_TCP, TCP_NODELAY, big0, sizeof(big0), IPPROTO_TCP,
	     TCP_NODELAY);
	call(TAG("sndbuf-len8192"), c, SOL_SOCKET, SO_SNDBUF, big1, sizeof(big1), SOL_SOCKET, SO_SNDBUF);
	/* the rule's own: the value 0 of 4 or more bytes, last (it stays) */
	call(TAG("rule-nodelay-0-len8"), c, IPPROTO_TCP, TCP_NODELAY, &zero64, 8, IPPROTO_TCP,
	     TCP_NODELAY);
	set_int(TAG("rule-nodelay-0"), c, IPPROTO_TCP, TCP_NODELAY, 0);
#undef TAG
}

/* A TCP pair of family over loopback: its connected and accepted ends. */
static void tcp(int family, const char *p)
{
	struct sockaddr_storage a;
	socklen_t len;
	int l = listener(family, &a, &len), c = socket(family, SOCK_STREAM, 0), s;
	char t[64];

	snprintf(t, sizeof(t), "%sunconnected-nodelay-0", p);
	set_int(t, c, IPPROTO_TCP, TCP_NODELAY, 0);
	snprintf(t, sizeof(t), "%slistener-nodelay-0", p);
	set_int(t, l, IPPROTO_TCP, TCP_NODELAY, 0);
	if (connect(c, (struct sockaddr *)&a, len) < 0 || (s = accept(l, NULL, NULL)) < 0) {
		perror("sockopt_diff: connect");
		exit(2);
	}
	snprintf(t, sizeof(t), "%srule-connected-then", p);
	get_only(t, c);
	snprintf(t, sizeof(t), "%sconnect-", p);
	connected(t, c);
	snprintf(t, sizeof(t), "%saccept-", p);
	connected(t, s);
	close(c);
	close(s);
	close(l);
}

int main(void)
{
	int u = socket(AF_INET, SOCK_DGRAM, 0), x = socket(AF_UNIX, SOCK_STREAM, 0);

	setvbuf(stdout, NULL, _IOLBF, 0);
	tcp(AF_INET, "v4-");
	tcp(AF_INET6, "v6-");
	set_int("udp-nodelay-0", u, IPPROTO_TCP, TCP_NODELAY, 0);
	set_int("udp-nodelay-1", u, IPPROTO_TCP, TCP_NODELAY, 1);
	set_int("udp-sndbuf", u, SOL_SOCKET, SO_SNDBUF, 32768);
	set_int("unix-nodelay-0", x, IPPROTO_TCP, TCP_NODELAY, 0);
	set_int("unix-sndbuf", x, SOL_SOCKET, SO_SNDBUF, 32768);
	return 0;
}
