/*
 * addr.c - an address and port as naglefix's messages write them.
 */
#include "nf_addr.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* Is addr ::ffff:a.b.c.d? */
static int v4_mapped(const uint8_t *addr)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(addr, prefix, sizeof(prefix)) == 0;
}

/* The decimal digits of v at p; returns the end. */
static char *decimal(char *p, unsigned v)
{
	char d[10];
	int n = 0;

	do
		d[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n > 0)
		*p++ = d[--n];
	return p;
}

/* An IPv4 address a (4 bytes), and ":port" unless port < 0, into buf as
 * inet_ntop and "%s:%d" write them, without their sprintf of each byte
 * (a scan's table formats thousands of rows). */
static const char *format4(const uint8_t *a, int port, char buf[NF_ADDR_MAX])
{
	char *p = buf;

	for (int k = 0; k < 4; k++) {
		if (k)
			*p++ = '.';
		p = decimal(p, a[k]);
	}
	if (port >= 0) {
		*p++ = ':';
		p = decimal(p, (unsigned)port);
	}
	*p = '\0';
	return buf;
}

const char *nf_addr_format(int family, const uint8_t *addr, int port, char buf[NF_ADDR_MAX])
{
	char a[INET6_ADDRSTRLEN];

	if (family == AF_INET || (family == AF_INET6 && v4_mapped(addr)))
		return format4(family == AF_INET ? addr : addr + 12, port, buf);
	if (family != AF_INET6 || !inet_ntop(AF_INET6, addr, a, sizeof(a))) {
		snprintf(buf, NF_ADDR_MAX, "?");
		return buf;
	}
	if (port < 0)
		snprintf(buf, NF_ADDR_MAX, "%s", a);
	else
		snprintf(buf, NF_ADDR_MAX, "[%s]:%d", a, port);
	return buf;
}
