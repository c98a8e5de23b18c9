/*
 * listen.c - the endpoint's address ("[ADDR:]PORT", nf_endpoint_parse)
 * and its listening socket, made for the loop of endpoint.c: non-blocking
 * and close-on-exec, so that neither an accept nor a child of watch ever
 * holds it.
 */
#include "metrics_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BACKLOG 64

/* PORT: decimal 0-65535, nothing after. -1 if it is not one. */
static long port_of(const char *s)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v > 65535)
		return -1;
	return v;
}

static int v4(const char *addr, long port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;

	in->sin_family = AF_INET;
	in->sin_port = htons((uint16_t)port);
	*len = sizeof(*in);
	return inet_pton(AF_INET, addr, &in->sin_addr) == 1 ? 0 : -EINVAL;
}

/* "[ADDR6]" (n bytes) and port. */
static int v6(const char *addr, size_t n, long port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	char a[INET6_ADDRSTRLEN];

	if (n < 3 || n - 2 >= sizeof(a) || addr[n - 1] != ']')
		return -EINVAL;
	memcpy(a, addr + 1, n - 2);
	a[n - 2] = '\0';
	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons((uint16_t)port);
	*len = sizeof(*in6);
	return inet_pton(AF_INET6, a, &in6->sin6_addr) == 1 ? 0 : -EINVAL;
}

int nf_endpoint_parse(const char *spec, struct sockaddr_storage *ss, socklen_t *sslen)
{
	const char *colon = strrchr(spec, ':');
	char a[INET_ADDRSTRLEN];
	long port = port_of(colon ? colon + 1 : spec);
	size_t n = colon ? (size_t)(colon - spec) : 0;

	memset(ss, 0, sizeof(*ss));
	if (port < 0)
		return -EINVAL;
	if (!colon)
		return v4("127.0.0.1", port, ss, sslen);
	if (spec[0] == '[')
		return v6(spec, n, port, ss, sslen);
	if (n == 0 || n >= sizeof(a))
		return -EINVAL;
	memcpy(a, spec, n);
	a[n] = '\0';
	return v4(a, port, ss, sslen);
}

int nf_endpoint_listen(const struct sockaddr *sa, socklen_t len, char err[NF_ENDPOINT_ERR_MAX])
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1, e;
	const char *what = "socket";

	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		what = "bind";
		if (bind(fd, sa, len) == 0) {
			what = "listen";
			if (listen(fd, BACKLOG) == 0)
				return fd;
		}
	}
	e = errno;
	snprintf(err, NF_ENDPOINT_ERR_MAX, "the metrics endpoint: %s: %s%s", what, strerror(e),
		 e == EADDRINUSE ? " (another program listens there)" : "");
	if (fd >= 0)
		close(fd);
	errno = e;
	return -1;
}
