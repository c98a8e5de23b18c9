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

const char *nf_addr_format(int family, const uint8_t *addr, int port, char buf[NF_ADDR_MAX])
{
	char a[INET6_ADDRSTRLEN];
	int v6 = family == AF_INET6 && !v4_mapped(addr);

	if ((family != AF_INET && family != AF_INET6) ||
	    !inet_ntop(v6 ? AF_INET6 : AF_INET, family == AF_INET6 && !v6 ? addr + 12 : addr, a,
		       sizeof(a))) {
		snprintf(buf, NF_ADDR_MAX, "?");
		return buf;
	}
	if (port < 0)
		snprintf(buf, NF_ADDR_MAX, "%s", a);
	else
		snprintf(buf, NF_ADDR_MAX, v6 ? "[%s]:%d" : "%s:%d", a, port);
	return buf;
}
