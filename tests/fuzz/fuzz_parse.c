/*
 * fuzz_parse.c - libFuzzer target for the config parser,
 * nf_policy_parse_bytes (src/common/policy.c): the input is a config text, all
 * its bytes, NULs included.
 *
 * Besides what the sanitizers catch, it aborts when the parser breaks its
 * contract: on success every rule must be one the grammar allows (action,
 * options within their bounds, address family and prefix length, host bits
 * cleared, port range in order); on failure the policy must be empty, the
 * default pass, and the message "fuzz.conf:LINE: reason" in printable
 * ASCII only, or "-ENOMEM". It parses once more with a 9-byte message
 * buffer (truncation) and with none.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define EXPECT(cond)                                                          \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "fuzz_parse: contract broken: %s\n", #cond); \
			abort();                                              \
		}                                                             \
	} while (0)

static void check_opts(const struct nf_opts *o)
{
	EXPECT(o->action >= NF_ACT_PASS && o->action <= NF_ACT_QUICKACK);
	EXPECT(o->buffer >= NF_BUFFER_MIN && o->buffer <= NF_BUFFER_MAX);
	EXPECT(o->flush_us >= NF_FLUSH_MIN_US && o->flush_us <= NF_FLUSH_MAX_US);
	EXPECT(o->drain_ms >= NF_DRAIN_MIN_MS && o->drain_ms <= NF_DRAIN_MAX_MS);
	EXPECT(o->audit == 0 || o->audit == 1);
	EXPECT(!o->audit || o->action == NF_ACT_NODELAY || o->action == NF_ACT_COALESCE ||
	       o->action == NF_ACT_AUTO);
	if (o->action != NF_ACT_COALESCE) /* buffer= is coalesce's alone */
		EXPECT(o->buffer == NF_BUFFER_DEFAULT);
	if (o->action != NF_ACT_COALESCE && o->action != NF_ACT_AUTO) /* flush= too, and auto's */
		EXPECT(o->flush_us == NF_FLUSH_DEFAULT_US);
	if (o->action != NF_ACT_COALESCE) /* drain= is coalesce's alone */
		EXPECT(o->drain_ms == NF_DRAIN_DEFAULT_MS);
}

static void check_endpoint(const struct nf_endpoint *ep)
{
	unsigned bits = ep->family == AF_INET ? 32 : 128;

	EXPECT(ep->port_lo <= ep->port_hi);
	EXPECT(ep->family == 0 || ep->family == AF_INET || ep->family == AF_INET6);
	if (ep->family == 0) {
		for (unsigned i = 0; i < 16; i++)
			EXPECT(ep->addr[i] == 0);
		return;
	}
	EXPECT(ep->prefix <= bits);
	for (unsigned b = ep->prefix; b < 128; b++) /* host bits, and past the family */
		EXPECT(!(ep->addr[b / 8] & (0x80u >> (b % 8))));
}

static void check_policy(const struct nf_policy *p)
{
	int accept = 0;

	EXPECT((p->nrules == 0) == (p->rules == NULL));
	check_opts(&p->dflt);
	for (size_t i = 0; i < p->nrules; i++) {
		const struct nf_rule *r = &p->rules[i];

		EXPECT(r->side == NF_SIDE_CONNECT || r->side == NF_SIDE_ACCEPT);
		EXPECT(r->line >= 1);
		EXPECT(i == 0 || r->line > p->rules[i - 1].line);
		check_endpoint(&r->ep);
		check_opts(&r->opts);
		accept |= r->side == NF_SIDE_ACCEPT;
	}
	EXPECT(p->has_accept_rules == accept);
}

/* Is every byte of the string s printable ASCII? */
static int printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

static void parse(const char *text, size_t len, char *err, size_t errlen)
{
	struct nf_policy p;
	int rc;

	if (err && errlen)
		memset(err, 'X', errlen);
	rc = nf_policy_parse_bytes(&p, text, len, "fuzz.conf", err, errlen);
	EXPECT(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	if (rc == 0) {
		check_policy(&p);
	} else {
		EXPECT(p.nrules == 0 && p.rules == NULL && !p.has_accept_rules);
		EXPECT(p.dflt.action == NF_ACT_PASS);
		if (err && errlen) {
			EXPECT(memchr(err, '\0', errlen) != NULL);
			EXPECT(printable(err));
			if (rc == -EINVAL && errlen > 10)
				EXPECT(strncmp(err, "fuzz.conf:", 10) == 0);
		}
	}
	nf_policy_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size ? size : 1); /* exactly the input: ASan sees a read past it */
	char err[512], tiny[9];

	if (!text)
		return 0;
	memcpy(text, data, size);
	parse(text, size, err, sizeof(err));
	parse(text, size, tiny, sizeof(tiny));
	parse(text, size, NULL, 0);
	free(text);
	return 0;
}
