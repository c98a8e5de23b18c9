/*
 * nf_addr.h - an address and port as every message of naglefix writes
 * it: "127.0.0.1:80", "[::1]:80", an IPv4-mapped IPv6 address as IPv4.
 * Shared by the library's audit log and the command (src/common/addr.c).
 */
#ifndef NF_ADDR_H
#define NF_ADDR_H

#include <stdint.h>

#define NF_ADDR_MAX 64 /* "[ffff:...:ffff]:65535" and its NUL */

/* family (AF_INET, AF_INET6) and addr (network order; IPv4 in its first
 * 4 bytes) with port (host order; -1: none) into buf; "?" for another
 * family. Returns buf. Calls no function for IPv4 (or v4-mapped);
 * inet_ntop and snprintf for IPv6. */
const char *nf_addr_format(int family, const uint8_t *addr, int port, char buf[NF_ADDR_MAX]);

#endif
