/*
 * check_policy.c - config parsing and rule matching (src/common/policy.c).
 *
 * Texts that are one rule are written inline; whole files are fixtures in
 * fixtures/, named by scenario and read by path relative to tests/unit.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/un.h>
#include <unistd.h>

#include "nf_config.h"
#include "nf_policy.h"
#include "suites.h"

static struct nf_policy pol;
static char err[512];
static struct sockaddr_storage peer;
static socklen_t peerlen;

static void setup(void)
{
	memset(&pol, 0, sizeof(pol));
	err[0] = '\0';
}

static void teardown(void)
{
	nf_policy_free(&pol);
}

/* Parses text (named "t.conf") into pol; the test fails on any error. */
static void given(const char *text)
{
	int rc = nf_policy_parse(&pol, text, "t.conf", err, sizeof(err));

	ck_assert_msg(rc == 0, "'%s' was refused: %s", text, err);
}

/* Parses a fixture into pol; the test fails on any error. */
static void given_file(const char *path)
{
	int rc = nf_config_parse_file(path, &pol, err, sizeof(err));

	ck_assert_msg(rc == 0, "%s was refused: %s", path, err);
}

/* The only rule of a one-rule text. */
static const struct nf_rule *only_rule(const char *text)
{
	given(text);
	ck_assert_uint_eq(pol.nrules, 1);
	return &pol.rules[0];
}

/* 16 bytes of an IPv4 or IPv6 literal, zero-padded. */
static void ip_bytes(const char *ip, uint8_t out[16])
{
	memset(out, 0, 16);
	if (inet_pton(AF_INET, ip, out) != 1)
		ck_assert_msg(inet_pton(AF_INET6, ip, out) == 1, "bad literal %s in test", ip);
}

/* Fills peer with ip:port, as sockaddr_in or sockaddr_in6. */
static const struct sockaddr *sockaddr_of(const char *ip, unsigned port)
{
	struct sockaddr_in *in = (struct sockaddr_in *)&peer;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&peer;

	memset(&peer, 0, sizeof(peer));
	if (inet_pton(AF_INET, ip, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		peerlen = sizeof(*in);
	} else {
		ck_assert_msg(inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1, "bad literal %s", ip);
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		peerlen = sizeof(*in6);
	}
	return (const struct sockaddr *)&peer;
}

static const struct nf_opts *lookup(enum nf_side side, const char *ip, unsigned port)
{
	const struct sockaddr *sa = sockaddr_of(ip, port); /* sets peerlen */

	return nf_policy_match(&pol, side, sa, peerlen);
}

/* Matching tests write their rule as "... nodelay" over a pass default. */
static int hits(enum nf_side side, const char *ip, unsigned port)
{
	return lookup(side, ip, port)->action == NF_ACT_NODELAY;
}

#define ck_assert_hits(ip, port) \
	ck_assert_msg(hits(NF_SIDE_CONNECT, ip, port), "%s port %u should match", ip, port)
#define ck_assert_misses(ip, port) \
	ck_assert_msg(!hits(NF_SIDE_CONNECT, ip, port), "%s port %u should not match", ip, port)

/* ---- rule forms ---------------------------------------------------------- */

START_TEST(test_policy_default_sets_default_action)
{
	given("default coalesce");
	ck_assert_int_eq(pol.dflt.action, NF_ACT_COALESCE);
	ck_assert_uint_eq(pol.nrules, 0);
}
END_TEST

START_TEST(test_policy_default_is_pass_without_default_line)
{
	pol.dflt.action = NF_ACT_AUDIT; /* parse must initialise it */
	given("*:80 nodelay");
	ck_assert_int_eq(pol.dflt.action, NF_ACT_PASS);
}
END_TEST

START_TEST(test_policy_connect_rule_is_connect_side)
{
	const struct nf_rule *r = only_rule("connect 192.0.2.7 nodelay");

	ck_assert_int_eq(r->side, NF_SIDE_CONNECT);
	ck_assert_int_eq(r->opts.action, NF_ACT_NODELAY);
	ck_assert_int_eq(pol.has_accept_rules, 0);
}
END_TEST

START_TEST(test_policy_bare_rule_is_connect_side)
{
	const struct nf_rule *r = only_rule("192.0.2.7 audit");

	ck_assert_int_eq(r->side, NF_SIDE_CONNECT);
	ck_assert_int_eq(r->opts.action, NF_ACT_AUDIT);
}
END_TEST

START_TEST(test_policy_accept_rule_is_accept_side)
{
	const struct nf_rule *r = only_rule("accept *:8080 coalesce");

	ck_assert_int_eq(r->side, NF_SIDE_ACCEPT);
	ck_assert_int_eq(r->opts.action, NF_ACT_COALESCE);
	ck_assert_int_eq(pol.has_accept_rules, 1);
}
END_TEST

START_TEST(test_policy_rule_records_its_line)
{
	given("# one\n\n*:1 pass\n*:2 nodelay\n");
	ck_assert_uint_eq(pol.nrules, 2);
	ck_assert_int_eq(pol.rules[0].line, 3);
	ck_assert_int_eq(pol.rules[1].line, 4);
}
END_TEST

/* ---- the fixture with every form ---------------------------------------- */

struct want_rule {
	int line;
	enum nf_side side;
	int family;
	const char *addr;
	unsigned prefix, port_lo, port_hi;
	enum nf_action action;
	unsigned buffer, flush_us;
	int audit;
};

#define C NF_SIDE_CONNECT
#define A NF_SIDE_ACCEPT
static const struct want_rule every_form[] = {
	{ 6, C, 0, "0.0.0.0", 0, 0, 65535, NF_ACT_PASS, 16384, 500, 0 },
	{ 7, C, 0, "0.0.0.0", 0, 8080, 8080, NF_ACT_COALESCE, 16384, 500, 0 },
	{ 8, C, 0, "0.0.0.0", 0, 8080, 8090, NF_ACT_COALESCE, 1048576, 2000, 1 },
	{ 9, C, AF_INET, "192.0.2.7", 32, 0, 65535, NF_ACT_NODELAY, 16384, 500, 0 },
	{ 10, C, AF_INET, "192.0.2.7", 32, 80, 80, NF_ACT_AUDIT, 16384, 500, 0 },
	{ 11, C, AF_INET, "10.1.0.0", 16, 6379, 6379, NF_ACT_COALESCE, 4096, 1000000, 0 },
	{ 12, A, AF_INET, "10.0.0.0", 8, 0, 65535, NF_ACT_NODELAY, 16384, 500, 1 },
	{ 13, C, AF_INET6, "::1", 128, 8080, 8080, NF_ACT_NODELAY, 16384, 500, 0 },
	{ 14, A, AF_INET6, "2001:db8::", 32, 0, 65535, NF_ACT_COALESCE, 16384, 500, 0 },
	{ 15, C, AF_INET6, "::1", 128, 0, 65535, NF_ACT_PASS, 16384, 500, 0 },
	{ 16, C, AF_INET6, "::1", 128, 0, 65535, NF_ACT_AUDIT, 16384, 500, 0 },
};
#undef C
#undef A
#define N_EVERY_FORM (sizeof(every_form) / sizeof(every_form[0]))

static void check_rule(const struct nf_rule *r, const struct want_rule *w)
{
	uint8_t addr[16];

	ip_bytes(w->addr, addr);
	ck_assert_int_eq(r->line, w->line);
	ck_assert_msg(r->side == w->side, "line %d: side", w->line);
	ck_assert_msg(r->ep.family == w->family, "line %d: family", w->line);
	ck_assert_msg(memcmp(r->ep.addr, addr, 16) == 0, "line %d: address", w->line);
	ck_assert_msg(r->ep.prefix == w->prefix, "line %d: prefix %u", w->line, r->ep.prefix);
	ck_assert_msg(r->ep.port_lo == w->port_lo && r->ep.port_hi == w->port_hi,
		      "line %d: ports %u-%u", w->line, r->ep.port_lo, r->ep.port_hi);
	ck_assert_msg(r->opts.action == w->action, "line %d: action", w->line);
	ck_assert_msg(r->opts.buffer == w->buffer, "line %d: buffer %u", w->line, r->opts.buffer);
	ck_assert_msg(r->opts.flush_us == w->flush_us, "line %d: flush %u", w->line, r->opts.flush_us);
	ck_assert_msg(r->opts.audit == w->audit, "line %d: audit", w->line);
}

START_TEST(test_policy_parses_every_form)
{
	given_file("fixtures/good-every-form.conf");
	ck_assert_uint_eq(pol.nrules, N_EVERY_FORM);
	for (size_t i = 0; i < N_EVERY_FORM; i++)
		check_rule(&pol.rules[i], &every_form[i]);
	ck_assert_int_eq(pol.dflt.action, NF_ACT_NODELAY);
	ck_assert_int_eq(pol.dflt.audit, 1);
	ck_assert_int_eq(pol.has_accept_rules, 1);
}
END_TEST

/* ---- nf_policy_parse_endpoint on its own -------------------------------- */

struct want_endpoint {
	const char *text;
	int family;
	const char *addr;
	unsigned prefix, port_lo, port_hi;
};

static const struct want_endpoint endpoint_forms[] = {
	{ "*", 0, "0.0.0.0", 0, 0, 65535 },
	{ "*:8080", 0, "0.0.0.0", 0, 8080, 8080 },
	{ "*:8080-8090", 0, "0.0.0.0", 0, 8080, 8090 },
	{ "192.0.2.7", AF_INET, "192.0.2.7", 32, 0, 65535 },
	{ "192.0.2.7:80", AF_INET, "192.0.2.7", 32, 80, 80 },
	{ "10.1.0.0/16:6379", AF_INET, "10.1.0.0", 16, 6379, 6379 },
	{ "10.0.0.0/8:*", AF_INET, "10.0.0.0", 8, 0, 65535 },
	{ "10.1.3.255/23", AF_INET, "10.1.2.0", 23, 0, 65535 },
	{ "[::1]:8080", AF_INET6, "::1", 128, 8080, 8080 },
	{ "[2001:db8::/32]:*", AF_INET6, "2001:db8::", 32, 0, 65535 },
	{ "[2001:db8:aa01:ffff::1/47]:1-1024", AF_INET6, "2001:db8:aa00::", 47, 1, 1024 },
	{ "[::1]", AF_INET6, "::1", 128, 0, 65535 },
	{ "[2001:db8::/32]", AF_INET6, "2001:db8::", 32, 0, 65535 },
};

START_TEST(test_policy_parse_endpoint_forms)
{
	const struct want_endpoint *w = &endpoint_forms[_i];
	struct nf_endpoint ep;
	uint8_t addr[16];

	ck_assert_msg(nf_policy_parse_endpoint(w->text, &ep, err, sizeof(err)) == 0,
		      "'%s' refused: %s", w->text, err);
	ip_bytes(w->addr, addr);
	ck_assert_msg(ep.family == w->family, "'%s': family %d", w->text, ep.family);
	ck_assert_msg(memcmp(ep.addr, addr, 16) == 0, "'%s': address (host bits kept?)", w->text);
	ck_assert_msg(ep.prefix == w->prefix, "'%s': prefix %u", w->text, ep.prefix);
	ck_assert_msg(ep.port_lo == w->port_lo && ep.port_hi == w->port_hi,
		      "'%s': ports %u-%u", w->text, ep.port_lo, ep.port_hi);
}
END_TEST

START_TEST(test_policy_parse_endpoint_reports_reason)
{
	struct nf_endpoint ep;

	ck_assert_int_eq(nf_policy_parse_endpoint("10.0.0.0/8:0", &ep, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "bad port '0' (expected *, N or N-M within 1-65535)");
}
END_TEST

/* ---- layout: comments, blank lines, tabs, CRLF ---------------------------- */

START_TEST(test_policy_comments_and_blank_lines_ignored)
{
	given("# default nodelay\n\n   \n\t# indented\n*:80 nodelay # audit=1\n");
	ck_assert_int_eq(pol.dflt.action, NF_ACT_PASS);
	ck_assert_uint_eq(pol.nrules, 1);
	ck_assert_int_eq(pol.rules[0].opts.audit, 0);
}
END_TEST

START_TEST(test_policy_tabs_separate_words)
{
	const struct nf_rule *r = only_rule("\taccept\t*:80\tcoalesce\tbuffer=4k\t");

	ck_assert_int_eq(r->side, NF_SIDE_ACCEPT);
	ck_assert_uint_eq(r->ep.port_lo, 80);
	ck_assert_uint_eq(r->opts.buffer, 4096);
}
END_TEST

/* A checkout that turned CRLF into LF would make the CRLF tests prove nothing. */
static void assert_has_crlf(const char *path)
{
	char *text;

	ck_assert_int_eq(nf_config_read_file(path, &text), 0);
	ck_assert_msg(strstr(text, "\r\n") != NULL, "%s lost its CRLF line endings", path);
	free(text);
}

START_TEST(test_policy_crlf_line_endings)
{
	assert_has_crlf("fixtures/good-crlf.conf");
	given_file("fixtures/good-crlf.conf");
	ck_assert_int_eq(pol.dflt.action, NF_ACT_NODELAY);
	ck_assert_uint_eq(pol.nrules, 2);
	ck_assert_int_eq(pol.rules[0].line, 4);
	ck_assert_uint_eq(pol.rules[0].opts.flush_us, 2000);
	ck_assert_int_eq(pol.rules[1].line, 5);
	ck_assert_int_eq(pol.rules[1].opts.audit, 1);
}
END_TEST

START_TEST(test_policy_crlf_error_names_line)
{
	assert_has_crlf("fixtures/bad-crlf-flush.conf");
	ck_assert_int_eq(nf_config_parse_file("fixtures/bad-crlf-flush.conf", &pol, err,
					      sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "fixtures/bad-crlf-flush.conf:4: "
			 "bad flush time '2s' (expected 10us to 1s, e.g. 500us)");
}
END_TEST

/* ---- options ------------------------------------------------------------- */

struct size_case {
	const char *text;
	unsigned value;
};

static const struct size_case buffer_sizes[] = {
	{ "16k", 16384 }, { "1m", 1048576 }, { "4096", 4096 },
	{ "64", 64 }, { "16m", 16777216 }, { "2K", 2048 }, { "1M", 1048576 },
};

START_TEST(test_policy_buffer_sizes)
{
	char line[64];

	snprintf(line, sizeof(line), "*:80 coalesce buffer=%s", buffer_sizes[_i].text);
	ck_assert_uint_eq(only_rule(line)->opts.buffer, buffer_sizes[_i].value);
}
END_TEST

static const struct size_case flush_times[] = {
	{ "500us", 500 }, { "2ms", 2000 }, { "1s", 1000000 },
	{ "10us", 10 }, { "1000ms", 1000000 },
};

START_TEST(test_policy_flush_times)
{
	char line[64];

	snprintf(line, sizeof(line), "*:80 coalesce flush=%s", flush_times[_i].text);
	ck_assert_uint_eq(only_rule(line)->opts.flush_us, flush_times[_i].value);
}
END_TEST

static const struct size_case drain_times[] = {
	{ "5s", 5000 }, { "200ms", 200 }, { "1ms", 1 }, { "60s", 60000 },
	{ "60000ms", 60000 }, { "3000us", 3 },
};

START_TEST(test_policy_drain_times)
{
	char line[64];

	snprintf(line, sizeof(line), "*:80 coalesce drain=%s", drain_times[_i].text);
	ck_assert_uint_eq(only_rule(line)->opts.drain_ms, drain_times[_i].value);
}
END_TEST

START_TEST(test_policy_coalesce_option_defaults)
{
	const struct nf_rule *r = only_rule("*:80 coalesce");

	ck_assert_uint_eq(r->opts.buffer, 16384);
	ck_assert_uint_eq(r->opts.flush_us, 500);
	ck_assert_int_eq(r->opts.audit, 0);
	ck_assert_uint_eq(r->opts.drain_ms, 5000);
}
END_TEST

START_TEST(test_policy_audit_on_nodelay)
{
	ck_assert_int_eq(only_rule("*:80 nodelay audit=1")->opts.audit, 1);
}
END_TEST

START_TEST(test_policy_audit_on_coalesce)
{
	ck_assert_int_eq(only_rule("*:80 coalesce audit=1")->opts.audit, 1);
}
END_TEST

START_TEST(test_policy_audit_zero_is_off)
{
	ck_assert_int_eq(only_rule("*:80 nodelay audit=0")->opts.audit, 0);
}
END_TEST

START_TEST(test_policy_coalesce_starts_whole_unless_told)
{
	ck_assert_int_eq(only_rule("*:80 coalesce")->opts.start, NF_START_WHOLE);
	nf_policy_free(&pol);
	ck_assert_int_eq(only_rule("*:80 coalesce start=split")->opts.start, NF_START_SPLIT);
	nf_policy_free(&pol);
	ck_assert_int_eq(only_rule("*:80 coalesce flush=2ms start=whole")->opts.start,
			 NF_START_WHOLE);
}
END_TEST

START_TEST(test_policy_default_takes_options)
{
	given("default coalesce buffer=4096 flush=2ms audit=1");
	ck_assert_int_eq(pol.dflt.action, NF_ACT_COALESCE);
	ck_assert_uint_eq(pol.dflt.buffer, 4096);
	ck_assert_uint_eq(pol.dflt.flush_us, 2000);
	ck_assert_int_eq(pol.dflt.audit, 1);
}
END_TEST

START_TEST(test_policy_action_names_round_trip)
{
	static const char *const names[] = { "pass", "nodelay", "coalesce", "audit",
					      "auto", "quickack" };
	enum nf_action a;

	for (int i = 0; i < 6; i++) {
		ck_assert_int_eq(nf_policy_parse_action(names[i], &a), 0);
		ck_assert_int_eq(a, i);
		ck_assert_str_eq(nf_policy_action_name(a), names[i]);
	}
	ck_assert_int_eq(nf_policy_parse_action("Nodelay", &a), -EINVAL);
	ck_assert_int_eq(nf_policy_parse_action("quick", &a), -EINVAL);
	ck_assert_str_eq(nf_policy_action_name((enum nf_action)42), "?");
}
END_TEST

START_TEST(test_policy_auto_option_defaults)
{
	const struct nf_rule *r = only_rule("*:80 auto");

	ck_assert_int_eq(r->opts.action, NF_ACT_AUTO);
	ck_assert_uint_eq(r->opts.flush_us, 1000); /* at most 1 ms, as issue 10 asks */
	ck_assert_int_eq(r->opts.audit, 0);
}
END_TEST

START_TEST(test_policy_auto_takes_flush_and_audit)
{
	const struct nf_rule *r = only_rule("connect 10.0.0.0/8 auto flush=200us audit=1");

	ck_assert_int_eq(r->opts.action, NF_ACT_AUTO);
	ck_assert_uint_eq(r->opts.flush_us, 200);
	ck_assert_int_eq(r->opts.audit, 1);
}
END_TEST

START_TEST(test_policy_quickack_on_accept_side)
{
	const struct nf_rule *r = only_rule("accept 127.0.0.1 quickack");

	ck_assert_int_eq(r->side, NF_SIDE_ACCEPT);
	ck_assert_int_eq(r->opts.action, NF_ACT_QUICKACK);
	ck_assert_int_eq(pol.has_accept_rules, 1);
}
END_TEST

/* Per-side rules: the same address picks a different action on each side. */
START_TEST(test_policy_match_auto_and_quickack_per_side)
{
	given("accept 127.0.0.1 quickack\nconnect 127.0.0.1 auto\ndefault pass\n");
	ck_assert_int_eq(lookup(NF_SIDE_ACCEPT, "127.0.0.1", 7000)->action, NF_ACT_QUICKACK);
	ck_assert_int_eq(lookup(NF_SIDE_CONNECT, "127.0.0.1", 7000)->action, NF_ACT_AUTO);
	ck_assert_int_eq(lookup(NF_SIDE_CONNECT, "192.0.2.1", 7000)->action, NF_ACT_PASS);
}
END_TEST

START_TEST(test_policy_default_auto_and_quickack)
{
	given("default quickack");
	ck_assert_int_eq(pol.dflt.action, NF_ACT_QUICKACK);
	nf_policy_free(&pol);
	given("default auto flush=2ms");
	ck_assert_int_eq(pol.dflt.action, NF_ACT_AUTO);
	ck_assert_uint_eq(pol.dflt.flush_us, 2000);
}
END_TEST

/* ---- errors -------------------------------------------------------------- */

/*
 * Each bad line is parsed after a preamble holding a comment, a good accept
 * rule and a blank line: the error must name line 4 and the accept rule
 * must be gone afterwards.
 */
#define PREAMBLE "# preamble\naccept *:1 nodelay\n\n"

struct bad_line {
	const char *line;
	const char *reason;
};

static void expect_rejected(const struct bad_line *b)
{
	char text[512], want[512];

	snprintf(text, sizeof(text), PREAMBLE "%s\n# after\n*:2 nodelay\n", b->line);
	snprintf(want, sizeof(want), "t.conf:4: %s", b->reason);
	pol.nrules = 99; /* parse must reset it */
	ck_assert_msg(nf_policy_parse(&pol, text, "t.conf", err, sizeof(err)) == -EINVAL,
		      "'%s' was accepted", b->line);
	ck_assert_str_eq(err, want);
	ck_assert_uint_eq(pol.nrules, 0);
	ck_assert_ptr_null(pol.rules);
	ck_assert_int_eq(pol.has_accept_rules, 0);
}

#define EXPECTED_ACTIONS "(expected pass, nodelay, coalesce, audit, auto or quickack)"
static const struct bad_line bad_actions[] = {
	{ "connect *:80 fast", "unknown action 'fast' " EXPECTED_ACTIONS },
	{ "default NODELAY", "unknown action 'NODELAY' " EXPECTED_ACTIONS },
	{ "192.0.2.7:80", "missing action (pass, nodelay, coalesce, audit, auto or quickack)" },
	{ "accept *:80 # nodelay", "missing action (pass, nodelay, coalesce, audit, auto or quickack)" },
	{ "default", "missing action (pass, nodelay, coalesce, audit, auto or quickack)" },
};

START_TEST(test_policy_rejects_bad_action)
{
	expect_rejected(&bad_actions[_i]);
}
END_TEST

static const struct bad_line bad_options[] = {
	{ "*:80 coalesce bufsize=4k", "unknown option 'bufsize'" },
	{ "*:80 coalesce buffer", "expected KEY=VALUE, got 'buffer'" },
	{ "*:80 coalesce =4k", "expected KEY=VALUE, got '=4k'" },
	{ "*:80 nodelay buffer=4k", "option 'buffer' applies only to coalesce" },
	{ "default pass buffer=4k", "option 'buffer' applies only to coalesce" },
	{ "*:80 nodelay flush=2ms", "option 'flush' applies only to coalesce and auto" },
	{ "*:80 audit flush=2ms", "option 'flush' applies only to coalesce and auto" },
	{ "*:80 quickack flush=2ms", "option 'flush' applies only to coalesce and auto" },
	{ "*:80 auto buffer=4k", "option 'buffer' applies only to coalesce" },
	{ "*:80 quickack buffer=4k", "option 'buffer' applies only to coalesce" },
	{ "*:80 audit audit=1", "option 'audit' applies only to nodelay, coalesce and auto" },
	{ "*:80 pass audit=1", "option 'audit' applies only to nodelay, coalesce and auto" },
	{ "accept *:80 quickack audit=1", "option 'audit' applies only to nodelay, coalesce and auto" },
	{ "*:80 auto flush=1ms flush=2ms", "option 'flush' given twice" },
	{ "*:80 auto flush=5us", "bad flush time '5us' (expected 10us to 1s, e.g. 500us)" },
	{ "*:80 nodelay audit=yes", "bad audit value 'yes' (expected 0 or 1)" },
	{ "*:80 coalesce buffer=4k buffer=8k", "option 'buffer' given twice" },
	{ "*:80 coalesce flush=1ms flush=2ms", "option 'flush' given twice" },
	{ "*:80 nodelay audit=1 audit=0", "option 'audit' given twice" },
	{ "*:80 nodelay start=split", "option 'start' applies only to coalesce" },
	{ "*:80 auto start=whole", "option 'start' applies only to coalesce" },
	{ "*:80 coalesce start=Split", "bad start value 'Split' (expected whole or split)" },
	{ "*:80 coalesce start=", "bad start value '' (expected whole or split)" },
	{ "*:80 coalesce start=split start=whole", "option 'start' given twice" },
	{ "*:80 nodelay drain=1s", "option 'drain' applies only to coalesce" },
	{ "*:80 auto drain=1s", "option 'drain' applies only to coalesce" },
	{ "*:80 coalesce drain=1s drain=2s", "option 'drain' given twice" },
};

START_TEST(test_policy_rejects_bad_option)
{
	expect_rejected(&bad_options[_i]);
}
END_TEST

#define EXPECTED_SIZE "(expected 64 to 16m, e.g. 16k)"
static const struct bad_line bad_buffers[] = {
	{ "*:80 coalesce buffer=0", "bad buffer size '0' " EXPECTED_SIZE },
	{ "*:80 coalesce buffer=63", "bad buffer size '63' " EXPECTED_SIZE },
	{ "*:80 coalesce buffer=17m", "bad buffer size '17m' " EXPECTED_SIZE },
	{ "*:80 coalesce buffer=16777217", "bad buffer size '16777217' " EXPECTED_SIZE },
	{ "*:80 coalesce buffer=1x", "bad buffer size '1x' " EXPECTED_SIZE },
	{ "*:80 coalesce buffer=", "bad buffer size '' " EXPECTED_SIZE },
};

START_TEST(test_policy_rejects_bad_buffer)
{
	expect_rejected(&bad_buffers[_i]);
}
END_TEST

#define EXPECTED_TIME "(expected 10us to 1s, e.g. 500us)"
static const struct bad_line bad_flushes[] = {
	{ "*:80 coalesce flush=0us", "bad flush time '0us' " EXPECTED_TIME },
	{ "*:80 coalesce flush=5us", "bad flush time '5us' " EXPECTED_TIME },
	{ "*:80 coalesce flush=9us", "bad flush time '9us' " EXPECTED_TIME },
	{ "*:80 coalesce flush=2s", "bad flush time '2s' " EXPECTED_TIME },
	{ "*:80 coalesce flush=1001ms", "bad flush time '1001ms' " EXPECTED_TIME },
	{ "*:80 coalesce flush=10", "bad flush time '10' " EXPECTED_TIME },
	{ "*:80 coalesce flush=1h", "bad flush time '1h' " EXPECTED_TIME },
	{ "*:80 coalesce flush=", "bad flush time '' " EXPECTED_TIME },
};

START_TEST(test_policy_rejects_bad_flush)
{
	expect_rejected(&bad_flushes[_i]);
}
END_TEST

#define EXPECTED_DRAIN "(expected 1ms to 60s in whole ms, e.g. 5s)"
static const struct bad_line bad_drains[] = {
	{ "*:80 coalesce drain=0ms", "bad drain time '0ms' " EXPECTED_DRAIN },
	{ "*:80 coalesce drain=999us", "bad drain time '999us' " EXPECTED_DRAIN },
	{ "*:80 coalesce drain=1500us", "bad drain time '1500us' " EXPECTED_DRAIN },
	{ "*:80 coalesce drain=61s", "bad drain time '61s' " EXPECTED_DRAIN },
	{ "*:80 coalesce drain=60001ms", "bad drain time '60001ms' " EXPECTED_DRAIN },
	{ "*:80 coalesce drain=5", "bad drain time '5' " EXPECTED_DRAIN },
	{ "*:80 coalesce drain=", "bad drain time '' " EXPECTED_DRAIN },
};

START_TEST(test_policy_rejects_bad_drain)
{
	expect_rejected(&bad_drains[_i]);
}
END_TEST

static const struct bad_line bad_addresses[] = {
	{ "300.1.2.3:80 nodelay", "bad IP address '300.1.2.3'" },
	{ "[::1::2]:80 nodelay", "bad IP address '::1::2'" },
	{ "listen 192.0.2.7 nodelay", "'listen' is neither a keyword (default, connect, accept) nor an IP address" },
	{ "::1 nodelay", "an IPv6 address goes in brackets: '[::1]' or '[::1]:PORT'" },
	{ "::1:8080 nodelay", "an IPv6 address goes in brackets: '[::1:8080]' or '[::1:8080]:PORT'" },
	{ "example.com:80 nodelay", "'example.com' is not an IP address (host names are not supported)" },
	{ "connect [localhost]:80 nodelay", "'localhost' is not an IP address (host names are not supported)" },
	{ "accept example.com/24 nodelay", "'example.com' is not an IP address (host names are not supported)" },
};

START_TEST(test_policy_rejects_bad_address)
{
	expect_rejected(&bad_addresses[_i]);
}
END_TEST

static const struct bad_line bad_prefixes[] = {
	{ "10.0.0.0/33:80 nodelay", "bad prefix length '/33' (expected 0 to 32)" },
	{ "[2001:db8::/129]:* nodelay", "bad prefix length '/129' (expected 0 to 128)" },
	{ "10.0.0.0/8x nodelay", "bad prefix length '/8x' (expected 0 to 32)" },
	{ "10.0.0.0/:80 nodelay", "bad prefix length '/' (expected 0 to 32)" },
};

START_TEST(test_policy_rejects_bad_prefix)
{
	expect_rejected(&bad_prefixes[_i]);
}
END_TEST

#define EXPECTED_PORT "(expected *, N or N-M within 1-65535)"
static const struct bad_line bad_ports[] = {
	{ "*:0 nodelay", "bad port '0' " EXPECTED_PORT },
	{ "192.0.2.7:65536 nodelay", "bad port '65536' " EXPECTED_PORT },
	{ "*:90-80 nodelay", "bad port '90-80' " EXPECTED_PORT },
	{ "*:abc nodelay", "bad port 'abc' " EXPECTED_PORT },
	{ "192.0.2.7: nodelay", "bad port '' " EXPECTED_PORT },
	{ "[::1]: nodelay", "bad port '' " EXPECTED_PORT },
	{ "*:80- nodelay", "bad port '80-' " EXPECTED_PORT },
	{ "*:80x nodelay", "bad port '80x' " EXPECTED_PORT },
};

START_TEST(test_policy_rejects_bad_port)
{
	expect_rejected(&bad_ports[_i]);
}
END_TEST

static const struct bad_line bad_brackets[] = {
	{ "[::1:80 nodelay", "missing ']' in '[::1:80'" },
	{ "accept [2001:db8::/32 nodelay", "missing ']' in '[2001:db8::/32'" },
	{ "[::1]80 nodelay", "expected ':PORT' after ']'" },
};

START_TEST(test_policy_rejects_bad_brackets)
{
	expect_rejected(&bad_brackets[_i]);
}
END_TEST

static const struct bad_line missing_endpoints[] = {
	{ "connect", "missing endpoint after 'connect'" },
	{ "accept", "missing endpoint after 'accept'" },
	{ "\taccept   # *:80 nodelay", "missing endpoint after 'accept'" },
};

START_TEST(test_policy_rejects_missing_endpoint)
{
	expect_rejected(&missing_endpoints[_i]);
}
END_TEST

static const struct bad_line word_counts[] = {
	/* 16 words is the most a line may hold: this one fails later */
	{ "*:80 nodelay audit=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1",
	  "unknown option 'a'" },
	{ "*:80 nodelay audit=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1",
	  "too many words (at most 16)" },
};

START_TEST(test_policy_rejects_too_many_words)
{
	expect_rejected(&word_counts[_i]);
}
END_TEST

/* A byte of the line that is not printable ASCII reaches the message as
 * \xNN, a backslash as \\: no escape sequence reaches a terminal. */
static const struct bad_line bad_bytes[] = {
	{ "*:80 \x1b[31mfast", "unknown action '\\x1b[31mfast' " EXPECTED_ACTIONS },
	{ "*:80 caf\xc3\xa9", "unknown action 'caf\\xc3\\xa9' " EXPECTED_ACTIONS },
	{ "*:80 a\\b\x7f", "unknown action 'a\\\\b\\x7f' " EXPECTED_ACTIONS },
	{ "10.0.0.\x01", "'10.0.0.\\x01' is not an IP address (host names are not supported)" },
	{ "*:80 coalesce buffer=\x08\x08", "bad buffer size '\\x08\\x08' " EXPECTED_SIZE },
};

START_TEST(test_policy_error_escapes_bytes)
{
	expect_rejected(&bad_bytes[_i]);
}
END_TEST

/* A NUL byte in a line, even in a comment, is an error naming its place:
 * a C string of the text would silently end there. */
START_TEST(test_policy_rejects_nul_byte)
{
	static const char rule[] = "default nodelay\n*:80 coal\0esce\n";
	static const char comment[] = "# a\0b\ndefault nodelay\n";

	ck_assert_int_eq(nf_policy_parse_bytes(&pol, rule, sizeof(rule) - 1, "t.conf", err,
					       sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "t.conf:2: NUL byte at column 10");
	ck_assert_uint_eq(pol.nrules, 0);
	ck_assert_int_eq(pol.dflt.action, NF_ACT_PASS);
	ck_assert_int_eq(nf_policy_parse_bytes(&pol, comment, sizeof(comment) - 1, "t.conf", err,
					       sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "t.conf:1: NUL byte at column 4");
	ck_assert_int_eq(nf_policy_parse_bytes(&pol, rule, 16, "t.conf", err, sizeof(err)), 0);
	ck_assert_int_eq(pol.dflt.action, NF_ACT_NODELAY); /* the bytes before it */
}
END_TEST

START_TEST(test_policy_rejects_second_default)
{
	ck_assert_int_eq(nf_config_parse_file("fixtures/bad-second-default.conf", &pol, err,
					      sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "fixtures/bad-second-default.conf:7: "
			 "second 'default' line (the first is line 3)");
	ck_assert_uint_eq(pol.nrules, 0);
}
END_TEST

START_TEST(test_policy_error_names_file_and_line)
{
	ck_assert_int_eq(nf_config_parse_file("fixtures/bad-port-range.conf", &pol, err,
					      sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "fixtures/bad-port-range.conf:6: "
			 "bad port '90-80' " EXPECTED_PORT);
}
END_TEST

START_TEST(test_policy_error_leaves_policy_empty)
{
	ck_assert_int_eq(nf_config_parse_file("fixtures/bad-port-range.conf", &pol, err,
					      sizeof(err)), -EINVAL);
	ck_assert_uint_eq(pol.nrules, 0);
	ck_assert_ptr_null(pol.rules);
	ck_assert_int_eq(pol.has_accept_rules, 0);
}
END_TEST

START_TEST(test_policy_free_leaves_policy_reusable)
{
	given("accept *:80 nodelay\n*:81 pass");
	nf_policy_free(&pol);
	ck_assert_uint_eq(pol.nrules, 0);
	ck_assert_ptr_null(pol.rules);
	ck_assert_int_eq(pol.has_accept_rules, 0);
	given("*:82 coalesce");
	ck_assert_uint_eq(pol.nrules, 1);
}
END_TEST

/* ---- matching ------------------------------------------------------------ */

START_TEST(test_policy_match_ipv4_prefix)
{
	given("10.1.0.0/16:6379 nodelay");
	ck_assert_hits("10.1.0.0", 6379);
	ck_assert_hits("10.1.255.255", 6379);
	ck_assert_misses("10.0.255.255", 6379);
	ck_assert_misses("10.2.0.0", 6379);
}
END_TEST

START_TEST(test_policy_match_ipv4_prefix_not_byte_aligned)
{
	given("10.1.2.0/23 nodelay");
	ck_assert_hits("10.1.2.0", 1);
	ck_assert_hits("10.1.3.255", 1);
	ck_assert_misses("10.1.1.255", 1);
	ck_assert_misses("10.1.4.0", 1);
}
END_TEST

START_TEST(test_policy_match_ipv4_host)
{
	given("192.0.2.7 nodelay");
	ck_assert_hits("192.0.2.7", 1);
	ck_assert_hits("192.0.2.7", 65535);
	ck_assert_misses("192.0.2.6", 1);
	ck_assert_misses("192.0.2.8", 1);
}
END_TEST

START_TEST(test_policy_match_ipv4_zero_prefix)
{
	given("0.0.0.0/0 nodelay");
	ck_assert_hits("0.0.0.0", 80);
	ck_assert_hits("255.255.255.255", 80);
	ck_assert_misses("::1", 80);
}
END_TEST

START_TEST(test_policy_match_ipv6_prefix)
{
	given("[2001:db8::/32]:* nodelay");
	ck_assert_hits("2001:db8::", 443);
	ck_assert_hits("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", 443);
	ck_assert_misses("2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", 443);
	ck_assert_misses("2001:db9::", 443);
}
END_TEST

START_TEST(test_policy_match_ipv6_prefix_not_byte_aligned)
{
	given("[2001:db8:aa00::/47]:* nodelay\n[2001:db8::/33]:* nodelay");
	ck_assert_hits("2001:db8:aa00::", 1);
	ck_assert_hits("2001:db8:aa01:ffff:ffff:ffff:ffff:ffff", 1);
	ck_assert_misses("2001:db8:a9ff:ffff:ffff:ffff:ffff:ffff", 1);
	ck_assert_misses("2001:db8:aa02::", 1);
	ck_assert_hits("2001:db8:7fff:ffff::", 1);
	ck_assert_misses("2001:db8:8000::", 1);
}
END_TEST

START_TEST(test_policy_match_ipv6_host)
{
	given("[::1] nodelay");
	ck_assert_hits("::1", 8080);
	ck_assert_misses("::2", 8080);
	ck_assert_misses("::", 8080);
}
END_TEST

START_TEST(test_policy_match_port_range)
{
	given("*:8080-8090 nodelay");
	ck_assert_hits("192.0.2.1", 8080);
	ck_assert_hits("2001:db8::1", 8090);
	ck_assert_misses("192.0.2.1", 8079);
	ck_assert_misses("2001:db8::1", 8091);
}
END_TEST

START_TEST(test_policy_match_single_port)
{
	given("192.0.2.7:80 nodelay");
	ck_assert_hits("192.0.2.7", 80);
	ck_assert_misses("192.0.2.7", 79);
	ck_assert_misses("192.0.2.7", 81);
}
END_TEST

START_TEST(test_policy_match_star_covers_both_families)
{
	given("* nodelay");
	ck_assert_hits("192.0.2.7", 1);
	ck_assert_hits("2001:db8::1", 65535);
}
END_TEST

START_TEST(test_policy_match_ipv4_rule_skips_ipv6_address)
{
	given("0.0.0.0/0 nodelay");
	ck_assert_misses("2001:db8::1", 80);
}
END_TEST

START_TEST(test_policy_match_first_rule_wins)
{
	given("10.0.0.0/8 nodelay\n10.1.0.0/16 coalesce\n10.0.0.0/8 audit");
	ck_assert_int_eq(lookup(NF_SIDE_CONNECT, "10.1.2.3", 80)->action, NF_ACT_NODELAY);
	nf_policy_free(&pol);
	given("10.1.0.0/16 coalesce\n10.0.0.0/8 nodelay");
	ck_assert_int_eq(lookup(NF_SIDE_CONNECT, "10.1.2.3", 80)->action, NF_ACT_COALESCE);
	ck_assert_int_eq(lookup(NF_SIDE_CONNECT, "10.2.0.1", 80)->action, NF_ACT_NODELAY);
}
END_TEST

START_TEST(test_policy_match_connect_rule_only_on_connect_side)
{
	given("connect *:80 nodelay");
	ck_assert(hits(NF_SIDE_CONNECT, "192.0.2.7", 80));
	ck_assert(!hits(NF_SIDE_ACCEPT, "192.0.2.7", 80));
}
END_TEST

START_TEST(test_policy_match_bare_rule_only_on_connect_side)
{
	given("*:80 nodelay");
	ck_assert(hits(NF_SIDE_CONNECT, "192.0.2.7", 80));
	ck_assert(!hits(NF_SIDE_ACCEPT, "192.0.2.7", 80));
}
END_TEST

START_TEST(test_policy_match_accept_rule_only_on_accept_side)
{
	given("accept *:80 nodelay");
	ck_assert(hits(NF_SIDE_ACCEPT, "192.0.2.7", 80));
	ck_assert(!hits(NF_SIDE_CONNECT, "192.0.2.7", 80));
}
END_TEST

START_TEST(test_policy_match_ipv4_mapped_as_ipv4)
{
	given("[::/0]:* coalesce\n10.0.0.0/8 nodelay");
	ck_assert_int_eq(lookup(NF_SIDE_CONNECT, "::ffff:10.1.2.3", 80)->action, NF_ACT_NODELAY);
	ck_assert_int_eq(lookup(NF_SIDE_CONNECT, "::ffff:11.1.2.3", 80)->action, NF_ACT_PASS);
	ck_assert_int_eq(lookup(NF_SIDE_CONNECT, "2001:db8::1", 80)->action, NF_ACT_COALESCE);
}
END_TEST

START_TEST(test_policy_match_default_when_nothing_matches)
{
	given("default audit\n10.0.0.0/8 nodelay");
	ck_assert_ptr_eq(lookup(NF_SIDE_CONNECT, "192.0.2.7", 80), &pol.dflt);
	ck_assert_int_eq(lookup(NF_SIDE_CONNECT, "192.0.2.7", 80)->action, NF_ACT_AUDIT);
}
END_TEST

START_TEST(test_policy_match_null_address_gives_default)
{
	given("default coalesce\n* nodelay\naccept * nodelay");
	ck_assert_ptr_eq(nf_policy_match(&pol, NF_SIDE_CONNECT, NULL, 0), &pol.dflt);
	ck_assert_ptr_eq(nf_policy_match(&pol, NF_SIDE_ACCEPT, NULL, 0), &pol.dflt);
}
END_TEST

START_TEST(test_policy_match_non_ip_address_gives_default)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX, .sun_path = "/tmp/x" };

	given("* nodelay");
	ck_assert_ptr_eq(nf_policy_match(&pol, NF_SIDE_CONNECT, (struct sockaddr *)&un,
					 sizeof(un)), &pol.dflt);
}
END_TEST

START_TEST(test_policy_match_short_sockaddr_gives_default)
{
	const struct sockaddr *sa;

	given("* nodelay");
	sa = sockaddr_of("192.0.2.7", 80);
	ck_assert_ptr_eq(nf_policy_match(&pol, NF_SIDE_CONNECT, sa, peerlen - 1), &pol.dflt);
	sa = sockaddr_of("2001:db8::1", 80);
	ck_assert_ptr_eq(nf_policy_match(&pol, NF_SIDE_CONNECT, sa, peerlen - 1), &pol.dflt);
}
END_TEST

START_TEST(test_policy_match_carries_options)
{
	const struct nf_opts *o;

	given("10.0.0.0/8:6379 coalesce buffer=1m flush=2ms audit=1\n");
	o = lookup(NF_SIDE_CONNECT, "10.9.9.9", 6379);
	ck_assert_int_eq(o->action, NF_ACT_COALESCE);
	ck_assert_uint_eq(o->buffer, 1048576);
	ck_assert_uint_eq(o->flush_us, 2000);
	ck_assert_int_eq(o->audit, 1);
}
END_TEST

START_TEST(test_policy_has_accept_rules_only_with_accept_rule)
{
	given("default nodelay\nconnect *:80 coalesce\n*:81 pass");
	ck_assert_int_eq(pol.has_accept_rules, 0);
	nf_policy_free(&pol);
	given("*:81 pass\naccept [::1]:80 nodelay");
	ck_assert_int_eq(pol.has_accept_rules, 1);
}
END_TEST

/* ---- inputs found by the fuzzers (tests/fuzz) ------------------------------ */

/*
 * fuzz_match: an address shorter than its family field (salen 0 or 1) was
 * read for sa_family past salen (heap-buffer-overflow in address_of). The
 * address ends where an unmapped page begins, so any read past salen
 * faults, with or without a sanitizer.
 */
START_TEST(test_policy_fuzz_address_shorter_than_family)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *two = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *end;

	ck_assert_ptr_ne(two, MAP_FAILED);
	end = two + pg;
	ck_assert_int_eq(mprotect(end, (size_t)pg, PROT_NONE), 0);
	end[-1] = AF_INET; /* the family's first byte, on little-endian */
	given("* nodelay\naccept * nodelay");
	ck_assert_ptr_eq(nf_policy_match(&pol, NF_SIDE_CONNECT, (struct sockaddr *)end, 0), &pol.dflt);
	ck_assert_ptr_eq(nf_policy_match(&pol, NF_SIDE_ACCEPT, (struct sockaddr *)end, 0), &pol.dflt);
	ck_assert_ptr_eq(nf_policy_match(&pol, NF_SIDE_CONNECT, (struct sockaddr *)(end - 1), 1),
			 &pol.dflt);
	munmap(two, (size_t)pg * 2);
}
END_TEST

/* ---- suite --------------------------------------------------------------- */

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static TCase *parse_tcase(void)
{
	TCase *tc = tcase_create("parse");

	tcase_add_checked_fixture(tc, setup, teardown);
	unit_add(tc, test_policy_default_sets_default_action);
	unit_add(tc, test_policy_default_is_pass_without_default_line);
	unit_add(tc, test_policy_connect_rule_is_connect_side);
	unit_add(tc, test_policy_bare_rule_is_connect_side);
	unit_add(tc, test_policy_accept_rule_is_accept_side);
	unit_add(tc, test_policy_rule_records_its_line);
	unit_add(tc, test_policy_parses_every_form);
	unit_add_loop(tc, test_policy_parse_endpoint_forms, 0, N(endpoint_forms));
	unit_add(tc, test_policy_parse_endpoint_reports_reason);
	unit_add(tc, test_policy_comments_and_blank_lines_ignored);
	unit_add(tc, test_policy_tabs_separate_words);
	unit_add(tc, test_policy_crlf_line_endings);
	unit_add(tc, test_policy_crlf_error_names_line);
	unit_add_loop(tc, test_policy_buffer_sizes, 0, N(buffer_sizes));
	unit_add_loop(tc, test_policy_flush_times, 0, N(flush_times));
	unit_add_loop(tc, test_policy_drain_times, 0, N(drain_times));
	unit_add(tc, test_policy_coalesce_option_defaults);
	unit_add(tc, test_policy_audit_on_nodelay);
	unit_add(tc, test_policy_audit_on_coalesce);
	unit_add(tc, test_policy_audit_zero_is_off);
	unit_add(tc, test_policy_coalesce_starts_whole_unless_told);
	unit_add(tc, test_policy_default_takes_options);
	unit_add(tc, test_policy_action_names_round_trip);
	unit_add(tc, test_policy_auto_option_defaults);
	unit_add(tc, test_policy_auto_takes_flush_and_audit);
	unit_add(tc, test_policy_quickack_on_accept_side);
	unit_add(tc, test_policy_default_auto_and_quickack);
	unit_add(tc, test_policy_free_leaves_policy_reusable);
	return tc;
}

static TCase *errors_tcase(void)
{
	TCase *tc = tcase_create("errors");

	tcase_add_checked_fixture(tc, setup, teardown);
	unit_add_loop(tc, test_policy_rejects_bad_action, 0, N(bad_actions));
	unit_add_loop(tc, test_policy_rejects_bad_option, 0, N(bad_options));
	unit_add_loop(tc, test_policy_rejects_bad_buffer, 0, N(bad_buffers));
	unit_add_loop(tc, test_policy_rejects_bad_flush, 0, N(bad_flushes));
	unit_add_loop(tc, test_policy_rejects_bad_drain, 0, N(bad_drains));
	unit_add_loop(tc, test_policy_rejects_bad_address, 0, N(bad_addresses));
	unit_add_loop(tc, test_policy_rejects_bad_prefix, 0, N(bad_prefixes));
	unit_add_loop(tc, test_policy_rejects_bad_port, 0, N(bad_ports));
	unit_add_loop(tc, test_policy_rejects_bad_brackets, 0, N(bad_brackets));
	unit_add_loop(tc, test_policy_rejects_missing_endpoint, 0, N(missing_endpoints));
	unit_add_loop(tc, test_policy_rejects_too_many_words, 0, N(word_counts));
	unit_add(tc, test_policy_rejects_second_default);
	unit_add(tc, test_policy_error_names_file_and_line);
	unit_add(tc, test_policy_error_leaves_policy_empty);
	unit_add(tc, test_policy_rejects_nul_byte);
	unit_add_loop(tc, test_policy_error_escapes_bytes, 0, N(bad_bytes));
	return tc;
}

static TCase *match_tcase(void)
{
	TCase *tc = tcase_create("match");

	tcase_add_checked_fixture(tc, setup, teardown);
	unit_add(tc, test_policy_match_ipv4_prefix);
	unit_add(tc, test_policy_match_ipv4_prefix_not_byte_aligned);
	unit_add(tc, test_policy_match_ipv4_host);
	unit_add(tc, test_policy_match_ipv4_zero_prefix);
	unit_add(tc, test_policy_match_ipv6_prefix);
	unit_add(tc, test_policy_match_ipv6_prefix_not_byte_aligned);
	unit_add(tc, test_policy_match_ipv6_host);
	unit_add(tc, test_policy_match_port_range);
	unit_add(tc, test_policy_match_single_port);
	unit_add(tc, test_policy_match_star_covers_both_families);
	unit_add(tc, test_policy_match_ipv4_rule_skips_ipv6_address);
	unit_add(tc, test_policy_match_first_rule_wins);
	unit_add(tc, test_policy_match_connect_rule_only_on_connect_side);
	unit_add(tc, test_policy_match_bare_rule_only_on_connect_side);
	unit_add(tc, test_policy_match_accept_rule_only_on_accept_side);
	unit_add(tc, test_policy_match_ipv4_mapped_as_ipv4);
	unit_add(tc, test_policy_match_default_when_nothing_matches);
	unit_add(tc, test_policy_match_auto_and_quickack_per_side);
	unit_add(tc, test_policy_match_null_address_gives_default);
	unit_add(tc, test_policy_match_non_ip_address_gives_default);
	unit_add(tc, test_policy_match_short_sockaddr_gives_default);
	unit_add(tc, test_policy_match_carries_options);
	unit_add(tc, test_policy_has_accept_rules_only_with_accept_rule);
	unit_add(tc, test_policy_fuzz_address_shorter_than_family);
	return tc;
}

Suite *policy_suite(void)
{
	Suite *s = suite_create("policy");

	suite_add_tcase(s, parse_tcase());
	suite_add_tcase(s, errors_tcase());
	suite_add_tcase(s, match_tcase());
	return s;
}
