/*
 * check_addr.c - an address and port as the messages write them
 * (src/common/addr.c): every IPv4 address and port written as
 * inet_ntop's text and "%s:%d" would be (IPv4 and ::ffff:a.b.c.d
 * alike), IPv6 in brackets, no port when it is negative, "?" for
 * another family.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "nf_addr.h"
#include "suites.h"

/* What nf_addr_format must write for a (an IPv4 address) and port. */
static void reference4(const uint8_t a[4], int port, char out[NF_ADDR_MAX])
{
	char t[INET_ADDRSTRLEN];

	ck_assert_ptr_nonnull(inet_ntop(AF_INET, a, t, sizeof(t)));
	if (port < 0)
		snprintf(out, NF_ADDR_MAX, "%s", t);
	else
		snprintf(out, NF_ADDR_MAX, "%s:%d", t, port);
}

/* a, and a as ::ffff:a, formatted with port, both as the reference. */
static void check4(const uint8_t a[4], int port)
{
	uint8_t m[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	char want[NF_ADDR_MAX], got[NF_ADDR_MAX];

	reference4(a, port, want);
	ck_assert_str_eq(nf_addr_format(AF_INET, a, port, got), want);
	memcpy(m + 12, a, 4);
	ck_assert_str_eq(nf_addr_format(AF_INET6, m, port, got), want);
}

START_TEST(test_addr_ipv4_every_byte_and_port)
{
	static const int ports[] = { -1, 0, 1, 9, 10, 99, 100, 999, 1000, 8080, 9999, 10000, 65535 };
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (unsigned v = 0; v < 256; v++)
		for (unsigned k = 0; k < 4; k++) {
			uint8_t a[4] = { 10, 1, 2, 3 };

			a[k] = (uint8_t)v;
			check4(a, ports[v % (sizeof(ports) / sizeof(ports[0]))]);
		}
	for (size_t p = 0; p < sizeof(ports) / sizeof(ports[0]); p++)
		check4((const uint8_t[4]){ 255, 255, 255, 255 }, ports[p]);
	for (int n = 0; n < 20000; n++) { /* any address, any port */
		uint8_t a[4];

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		memcpy(a, &x, 4);
		check4(a, (int)(x >> 40) % 65536);
	}
}
END_TEST

START_TEST(test_addr_ipv6_and_others)
{
	uint8_t a[16];
	char got[NF_ADDR_MAX];

	ck_assert_int_eq(inet_pton(AF_INET6, "2001:db8::1", a), 1);
	ck_assert_str_eq(nf_addr_format(AF_INET6, a, 443, got), "[2001:db8::1]:443");
	ck_assert_str_eq(nf_addr_format(AF_INET6, a, -1, got), "2001:db8::1");
	ck_assert_int_eq(inet_pton(AF_INET6, "::ffff:0:102:304", a), 1); /* not v4-mapped */
	ck_assert_str_eq(nf_addr_format(AF_INET6, a, 7, got), "[::ffff:0:102:304]:7");
	ck_assert_int_eq(inet_pton(AF_INET6, "::1", a), 1);
	ck_assert_str_eq(nf_addr_format(AF_INET6, a, 0, got), "[::1]:0");
	ck_assert_str_eq(nf_addr_format(AF_UNIX, a, 80, got), "?");
}
END_TEST

Suite *addr_suite(void)
{
	Suite *s = suite_create("addr");
	TCase *tc = tcase_create("format");

	unit_add(tc, test_addr_ipv4_every_byte_and_port);
	unit_add(tc, test_addr_ipv6_and_others);
	suite_add_tcase(s, tc);
	return s;
}
