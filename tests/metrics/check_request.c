/*
 * check_request.c - the endpoint's request reader (src/metrics/request.c,
 * nf_req_parse): what each head asks, whole and cut at every byte (a cut
 * head is MORE until its answer is known, then that answer), the bad
 * ones answered from their first bytes, the limit. Each input is copied
 * into a block of exactly its size (valgrind and ASan see a read past it).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics_int.h"
#include "../unit/unit.h"

#define MAX 8192

struct req_case {
	const char *in;
	enum nf_req want;
	size_t known; /* the shortest cut with the answer (0: the whole) */
};

static const struct req_case cases[] = {
	{ "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n", NF_REQ_GET, 0 },
	{ "GET /metrics HTTP/1.0\n\n", NF_REQ_GET, 0 },
	{ "GET /metrics?name[]=x HTTP/1.1\r\n\r\n", NF_REQ_GET, 0 },
	{ "HEAD /metrics HTTP/1.1\r\n\r\n", NF_REQ_HEAD, 0 },
	{ "POST /metrics HTTP/1.1\r\nContent-Length: 1\r\n\r\n", NF_REQ_METHOD, 0 },
	{ "GET / HTTP/1.1\r\n\r\n", NF_REQ_NOT_FOUND, 0 },
	{ "GET /metricsx HTTP/1.1\r\n\r\n", NF_REQ_NOT_FOUND, 0 },
	{ "GET /metric HTTP/1.1\r\n\r\n", NF_REQ_NOT_FOUND, 0 },
	{ "GET /metrics HTTP/2.0\r\n\r\n", NF_REQ_BAD, 23 },
	{ "GET /metrics\r\n\r\n", NF_REQ_BAD, 14 },
	{ "GET  /metrics HTTP/1.1\r\n\r\n", NF_REQ_BAD, 24 },
	{ "get /metrics HTTP/1.1\r\n\r\n", NF_REQ_BAD, 1 },
	{ "\x16\x03\x01\x02\x00", NF_REQ_BAD, 1 },
	{ "GET /metrics HTTP/1.1\r\nX: a\x01" "b\r\n\r\n", NF_REQ_BAD, 28 },
	{ "GET /metrics HTTP/1.1\r\n\r\n\x01\x02garbage after the head", NF_REQ_GET, 25 },
	{ "ABCDEFGHIJKLMNOPQ /metrics HTTP/1.1\r\n\r\n", NF_REQ_BAD, 17 },
};

static enum nf_req parse(const char *in, size_t len, size_t max)
{
	char *b = malloc(len ? len : 1);
	enum nf_req r;

	memcpy(b, in, len);
	r = nf_req_parse(b, len, max);
	free(b);
	return r;
}

/* Each case: MORE at every cut shorter than the answer's, the answer at
 * every cut from there on. */
START_TEST(test_request_cases)
{
	const struct req_case *c = &cases[_i];
	size_t len = strlen(c->in);
	size_t known = c->known ? c->known : len;

	if (c->in[0] == '\x16')
		len = 5;
	for (size_t k = 0; k <= len; k++) {
		enum nf_req r = parse(c->in, k, MAX);

		ck_assert_msg(r == (k < known ? NF_REQ_MORE : c->want), "case %d cut at %zu: %d", _i,
			      k, (int)r);
	}
}
END_TEST

/* No end of the head within the limit: TOO_LARGE at the limit, not before. */
START_TEST(test_request_too_large)
{
	static char big[MAX];

	memcpy(big, "GET /metrics HTTP/1.1\r\n", 23);
	for (size_t i = 23; i < MAX; i++)
		big[i] = i % 64 == 63 ? '\n' : 'x';
	ck_assert_int_eq(parse(big, MAX - 1, MAX), NF_REQ_MORE);
	ck_assert_int_eq(parse(big, MAX, MAX), NF_REQ_TOO_LARGE);
	memset(big, 'A', 16);
	ck_assert_int_eq(parse(big, 16, 16), NF_REQ_TOO_LARGE); /* one long method, not yet bad */
}
END_TEST

static Suite *request_suite(void)
{
	Suite *s = suite_create("request");
	TCase *tc = tcase_create("parse");

	unit_add_loop(tc, test_request_cases, 0, sizeof(cases) / sizeof(cases[0]));
	unit_add(tc, test_request_too_large);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return unit_run(srunner_create(request_suite()), "check_request");
}
