/*
 * fuzz_match.c - libFuzzer target for the endpoint matcher:
 * nf_policy_parse_endpoint on a fuzzed ENDPOINT, then nf_policy_match of a
 * fuzzed socket address against a policy holding that endpoint.
 *
 * Input: ENDPOINT '\n' SIDE SOCKADDR...   (no '\n': all ENDPOINT, no address)
 *   SIDE      one byte: bit 0 the rule's side, bit 1 the side asked,
 *             bit 2 a NULL address
 *   SOCKADDR  the rest, as the address, its length the rest's length (at
 *             most sizeof(struct sockaddr_storage)), in a heap block of
 *             exactly that size, so that any read past salen is an ASan
 *             report (salen 0 or 1 found one: see check_policy.c,
 *             test_policy_fuzz_address_shorter_than_family).
 *
 * The answer must be the one a plain bit-by-bit reference matcher gives
 * (rule if same side, port in range, family 0 or the same family after an
 * IPv4-mapped IPv6 address is taken as IPv4, and the first PREFIX bits
 * equal), else the default: any difference aborts.
 */
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "nf_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define EXPECT(cond)                                                          \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "fuzz_match: contract broken: %s\n", #cond); \
			abort();                                              \
		}                                                             \
	} while (0)

static int bit(const uint8_t *b, unsigned i)
{
	return (b[i / 8] >> (7 - i % 8)) & 1;
}

/* The reference: does ep contain sa? */
static int ref_match(const struct nf_endpoint *ep, const struct sockaddr *sa, socklen_t salen)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	const uint8_t *bytes;
	unsigned port;
	int family;

	if (salen < sizeof(sa_family_t))
		return -1;
	if (sa->sa_family == AF_INET && salen >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const void *)sa;

		family = AF_INET;
		bytes = (const uint8_t *)&in->sin_addr;
		port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6 && salen >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		family = AF_INET6;
		bytes = in6->sin6_addr.s6_addr;
		port = ntohs(in6->sin6_port);
		if (memcmp(bytes, v4mapped, 12) == 0) {
			family = AF_INET;
			bytes += 12;
		}
	} else {
		return -1; /* not an IP address: only the default */
	}
	if (port < ep->port_lo || port > ep->port_hi)
		return 0;
	if (ep->family == 0)
		return 1;
	if (ep->family != family)
		return 0;
	for (unsigned i = 0; i < ep->prefix; i++)
		if (bit(ep->addr, i) != bit(bytes, i))
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *end = data + size, *nl = memchr(data, '\n', size);
	const uint8_t *addr = nl ? nl + 1 : end;
	size_t tlen = nl ? (size_t)(nl - data) : size, rest;
	struct nf_rule rule = { .line = 1 };
	struct nf_policy pol = { .rules = &rule, .nrules = 1 };
	const struct nf_opts *got;
	struct sockaddr *sa = NULL;
	socklen_t salen = 0;
	char err[256], *text;
	uint8_t flags = 0;
	int want, side;

	text = malloc(tlen + 1);
	if (!text)
		return 0;
	memcpy(text, data, tlen);
	text[tlen] = '\0';
	if (nf_policy_parse_endpoint(text, &rule.ep, err, sizeof(err)) < 0) {
		EXPECT(err[0] != '\0');
		free(text);
		return 0;
	}
	free(text);
	if (addr < end)
		flags = *addr++;
	rest = (size_t)(end - addr);
	rule.side = flags & 1 ? NF_SIDE_ACCEPT : NF_SIDE_CONNECT;
	side = flags & 2 ? NF_SIDE_ACCEPT : NF_SIDE_CONNECT;
	rule.opts = nf_policy_opts_default(NF_ACT_NODELAY);
	pol.dflt = nf_policy_opts_default(NF_ACT_PASS);
	pol.has_accept_rules = rule.side == NF_SIDE_ACCEPT;
	if (!(flags & 4)) {
		salen = (socklen_t)(rest < sizeof(struct sockaddr_storage) ? rest
								   : sizeof(struct sockaddr_storage));
		sa = malloc(salen ? salen : 1); /* 1: malloc(0) may give NULL */
		if (!sa)
			return 0;
		memcpy(sa, addr, salen);
	}
	got = nf_policy_match(&pol, (enum nf_side)side, sa, salen);
	want = sa ? ref_match(&rule.ep, sa, salen) : -1;
	if (want == 1 && rule.side == (enum nf_side)side)
		EXPECT(got == &rule.opts);
	else
		EXPECT(got == &pol.dflt);
	free(sa);
	return 0;
}
