/*
 * fuzz_request.c - libFuzzer target for the metrics endpoint's request
 * reader (src/metrics/request.c, nf_req_parse): the input is what a
 * client sent, read as the endpoint reads it, a byte more at a time, in
 * a heap block of exactly that size (so a read past len is an ASan
 * report), with the endpoint's limit cut to MAX so the limit is reached.
 *
 * The contract, held at every length k from 0 to the input's (at most
 * MAX): the answer is one of enum nf_req; TOO_LARGE only at k == MAX;
 * the first answer other than MORE stays the answer at every longer k
 * (the endpoint answers at the first, so a later byte must not change
 * what it should have said); GET and HEAD only for a request line
 * "GET /metrics" or "HEAD /metrics" (then a query, or a space), an
 * HTTP/1.x version, and an empty line after it. Any difference aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics_int.h"

#define MAX 512

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define EXPECT(cond)                                                                   \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "fuzz_request: contract broken: %s\n", #cond); \
			abort();                                                       \
		}                                                                      \
	} while (0)

/* Does buf[0..len-1] begin with s? */
static int starts(const char *buf, size_t len, const char *s)
{
	return len >= strlen(s) && memcmp(buf, s, strlen(s)) == 0;
}

/* Does buf[0..len-1] hold an empty line ("\n\n" or "\n\r\n")? */
static int has_empty_line(const char *buf, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++)
		if (buf[i] == '\n' && (buf[i + 1] == '\n' || (buf[i + 1] == '\r' && i + 2 < len &&
							      buf[i + 2] == '\n')))
			return 1;
	return 0;
}

static void check_served(const char *buf, size_t len, enum nf_req r)
{
	const char *m = r == NF_REQ_GET ? "GET /metrics" : "HEAD /metrics";
	size_t n = strlen(m);

	EXPECT(starts(buf, len, m));
	EXPECT(buf[n] == ' ' || buf[n] == '?');
	EXPECT(memmem(buf, len, " HTTP/1.", 8) != NULL);
	EXPECT(has_empty_line(buf, len));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t len = size < MAX ? size : MAX;
	char *buf = malloc(len ? len : 1);
	enum nf_req first = NF_REQ_MORE;

	memcpy(buf, data, len);
	for (size_t k = 0; k <= len; k++) {
		enum nf_req r = nf_req_parse(buf, k, MAX);

		EXPECT(r >= NF_REQ_MORE && r <= NF_REQ_TOO_LARGE);
		EXPECT(r != NF_REQ_TOO_LARGE || k == MAX);
		EXPECT(first == NF_REQ_MORE || r == first);
		if (r == NF_REQ_GET || r == NF_REQ_HEAD)
			check_served(buf, k, r);
		if (first == NF_REQ_MORE)
			first = r;
	}
	free(buf);
	return 0;
}
