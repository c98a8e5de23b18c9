/*
 * fuzz_route.c - libFuzzer target for src/route's reader of the kernel's
 * route messages (msg.c, nf_route_parse): the input is one RTM_NEWROUTE
 * message as the kernel would send it, in a heap block of exactly its
 * size (so a read past it is an ASan report).
 *
 * The contract: the answer is 0 or a negative errno; a route read is
 * written again (nf_route_msg_replace) and read back the same
 * (nf_route_equal), its metrics payload byte for byte; written with
 * quickack 1 it reads back with quickack 1, the same entry; its hex form
 * reads back the same; its text is a string. Any difference aborts.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "route/nf_route.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define EXPECT(cond)                                                                 \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "fuzz_route: contract broken: %s\n", #cond); \
			abort();                                                     \
		}                                                                    \
	} while (0)

static struct nf_route r, back;
static uint8_t out[NF_ROUTE_MSG_MAX];
static char hex[2 * NF_ROUTE_MSG_MAX + 1];

/* r written with quickack q and read back into back. */
static void again(int q)
{
	int n = nf_route_msg_replace(out, sizeof(out), &r, q, 1);

	if (n == -ENOSPC)
		return; /* a route too big to write again is said, never cut */
	EXPECT(n > 0 && (size_t)n <= sizeof(out));
	EXPECT(nf_route_parse(out, (size_t)n, &back) == 0);
	EXPECT(nf_route_same(&r, &back));
	if (q < 0) {
		EXPECT(nf_route_equal(&r, &back));
		EXPECT(back.metrics_len == r.metrics_len);
	} else {
		EXPECT(back.quickack == q);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *msg = malloc(size ? size : 1);
	char t[NF_ROUTE_TEXT_MAX];
	int rc;

	if (!msg)
		return 0;
	memcpy(msg, data, size);
	rc = nf_route_parse(msg, size, &r);
	EXPECT(rc <= 0);
	if (rc == 0) {
		EXPECT(r.attrs_len <= sizeof(r.attrs) && r.metrics_len <= sizeof(r.metrics));
		again(-1);
		again(1);
		if (nf_route_to_hex(&r, hex, sizeof(hex)) == 0) {
			EXPECT(nf_route_from_hex(hex, &back) == 0);
			EXPECT(nf_route_equal(&r, &back));
		}
		EXPECT(strlen(nf_route_format(&r, "lo", t, sizeof(t))) < sizeof(t));
	}
	free(msg);
	return 0;
}
