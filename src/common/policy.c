/*
 * policy.c - config parsing and rule matching.
 *
 * Grammar, one rule a line, '#' starts a comment (ACTION: pass, nodelay,
 * coalesce, audit, auto, quickack):
 *   default ACTION [KEY=VALUE...]
 *   [connect] ENDPOINT ACTION [KEY=VALUE...]
 *   accept ENDPOINT ACTION [KEY=VALUE...]
 * No system call here: the caller reads the file, this file judges it.
 */
#include "nf_policy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_TOKENS 16

static const char *const action_names[] = {
	[NF_ACT_PASS] = "pass",
	[NF_ACT_NODELAY] = "nodelay",
	[NF_ACT_COALESCE] = "coalesce",
	[NF_ACT_AUDIT] = "audit",
	[NF_ACT_AUTO] = "auto",
	[NF_ACT_QUICKACK] = "quickack",
};


static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* nf_policy.h */
void nf_policy_escape(const char *s, char *out, size_t outlen)
{
	size_t o = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[5] = { (char)c, '\0' };

		if (c == '\\')
			strcpy(esc, "\\\\");
		else if (c < 0x20 || c >= 0x7f)
			snprintf(esc, sizeof(esc), "\\x%02x", c);
		if (o + strlen(esc) >= outlen)
			break;
		memcpy(out + o, esc, strlen(esc));
		o += strlen(esc);
	}
	out[o] = '\0';
}

/* Writes the reason, escaped (the messages quote the line's words), into err. */
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	char raw[256];
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(raw, sizeof(raw), fmt, ap);
		va_end(ap);
		nf_policy_escape(raw, err, errlen);
	}
	return -EINVAL;
}

struct nf_opts nf_policy_opts_default(enum nf_action action)
{
	struct nf_opts o = {
		.action = action,
		.buffer = NF_BUFFER_DEFAULT,
		.flush_us = action == NF_ACT_AUTO ? NF_AUTO_FLUSH_DEFAULT_US
						  : NF_FLUSH_DEFAULT_US,
		.audit = 0,
		.start = NF_START_WHOLE,
		.drain_ms = NF_DRAIN_DEFAULT_MS,
	};
	return o;
}

const char *nf_policy_action_name(enum nf_action action)
{
	if ((unsigned)action < sizeof(action_names) / sizeof(action_names[0]))
		return action_names[action];
	return "?";
}

int nf_policy_parse_action(const char *name, enum nf_action *out)
{
	for (unsigned i = 0; i < sizeof(action_names) / sizeof(action_names[0]); i++) {
		if (strcmp(name, action_names[i]) == 0) {
			*out = (enum nf_action)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* Parses decimal digits up to max; *end gets the first non-digit. */
static int parse_uint(const char *s, unsigned long long max,
		      unsigned long long *out, const char **end)
{
	unsigned long long v = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		v = v * 10 + (unsigned long long)(*p - '0');
		if (v > max)
			return -ERANGE;
	}
	*out = v;
	*end = p;
	return 0;
}

/* "16384", "16k", "1m": bytes within [NF_BUFFER_MIN, NF_BUFFER_MAX]. */
static int parse_size(const char *s, uint32_t *out)
{
	unsigned long long v, mult = 1;
	const char *end;

	if (parse_uint(s, NF_BUFFER_MAX, &v, &end) < 0)
		return -EINVAL;
	if (*end == 'k' || *end == 'K')
		mult = 1024, end++;
	else if (*end == 'm' || *end == 'M')
		mult = 1024 * 1024, end++;
	if (*end != '\0' || v * mult < NF_BUFFER_MIN || v * mult > NF_BUFFER_MAX)
		return -EINVAL;
	*out = (uint32_t)(v * mult);
	return 0;
}

/* "500us", "2ms", "1s": microseconds within [min_us, max_us]. */
static int parse_duration(const char *s, unsigned long long min_us,
			  unsigned long long max_us, unsigned long long *out)
{
	unsigned long long v, mult;
	const char *end;

	if (parse_uint(s, max_us, &v, &end) < 0)
		return -EINVAL;
	if (strcmp(end, "us") == 0)
		mult = 1;
	else if (strcmp(end, "ms") == 0)
		mult = 1000;
	else if (strcmp(end, "s") == 0)
		mult = 1000000;
	else
		return -EINVAL;
	if (v * mult < min_us || v * mult > max_us)
		return -EINVAL;
	*out = v * mult;
	return 0;
}

/* Each option's value into its field of o: 0, or -EINVAL. */
static int set_buffer(const char *s, struct nf_opts *o)
{
	return parse_size(s, &o->buffer);
}

static int set_flush(const char *s, struct nf_opts *o)
{
	unsigned long long us;

	if (parse_duration(s, NF_FLUSH_MIN_US, NF_FLUSH_MAX_US, &us) < 0)
		return -EINVAL;
	o->flush_us = (uint32_t)us;
	return 0;
}

/* Whole milliseconds only: "250ms", "2s". */
static int set_drain(const char *s, struct nf_opts *o)
{
	unsigned long long us;

	if (parse_duration(s, NF_DRAIN_MIN_MS * 1000ull, NF_DRAIN_MAX_MS * 1000ull, &us) < 0 ||
	    us % 1000)
		return -EINVAL;
	o->drain_ms = (uint32_t)(us / 1000);
	return 0;
}

static int set_audit(const char *s, struct nf_opts *o)
{
	if (strcmp(s, "0") != 0 && strcmp(s, "1") != 0)
		return -EINVAL;
	o->audit = s[0] == '1';
	return 0;
}

static int set_start(const char *s, struct nf_opts *o)
{
	if (strcmp(s, "whole") == 0)
		o->start = NF_START_WHOLE;
	else if (strcmp(s, "split") == 0)
		o->start = NF_START_SPLIT;
	else
		return -EINVAL;
	return 0;
}

#define ACTS(a) (1u << (a))

/* The options a rule may give: the actions each applies to (and how the
 * message names them), its setter, and what a good value looks like. */
static const struct option {
	const char *key;
	unsigned actions;
	const char *applies; /* "option 'KEY' applies only to ..." */
	int (*set)(const char *val, struct nf_opts *o);
	const char *bad;     /* "bad ... '%s' (expected ...)" */
} options[] = {
	{ "buffer", ACTS(NF_ACT_COALESCE), "coalesce", set_buffer,
	  "bad buffer size '%s' (expected 64 to 16m, e.g. 16k)" },
	{ "flush", ACTS(NF_ACT_COALESCE) | ACTS(NF_ACT_AUTO), "coalesce and auto", set_flush,
	  "bad flush time '%s' (expected 10us to 1s, e.g. 500us)" },
	{ "audit", ACTS(NF_ACT_NODELAY) | ACTS(NF_ACT_COALESCE) | ACTS(NF_ACT_AUTO),
	  "nodelay, coalesce and auto", set_audit, "bad audit value '%s' (expected 0 or 1)" },
	{ "start", ACTS(NF_ACT_COALESCE), "coalesce", set_start,
	  "bad start value '%s' (expected whole or split)" },
	{ "drain", ACTS(NF_ACT_COALESCE), "coalesce", set_drain,
	  "bad drain time '%s' (expected 1ms to 60s in whole ms, e.g. 5s)" },
};

#define NOPTIONS (sizeof(options) / sizeof(options[0]))

/* Applies one KEY=VALUE to o, whose action is already set; seen has a bit
 * for each option already given. */
static int parse_option(const char *tok, struct nf_opts *o, unsigned *seen,
			char *err, size_t errlen)
{
	const char *eq = strchr(tok, '=');
	size_t klen, i;

	if (!eq || eq == tok)
		return fail(err, errlen, "expected KEY=VALUE, got '%s'", tok);
	klen = (size_t)(eq - tok);
	for (i = 0; i < NOPTIONS; i++)
		if (strlen(options[i].key) == klen && strncmp(tok, options[i].key, klen) == 0)
			break;
	if (i == NOPTIONS)
		return fail(err, errlen, "unknown option '%.*s'", (int)klen, tok);
	if (!(options[i].actions & ACTS(o->action)))
		return fail(err, errlen, "option '%s' applies only to %s", options[i].key,
			    options[i].applies);
	if (*seen & (1u << i))
		return fail(err, errlen, "option '%s' given twice", options[i].key);
	*seen |= 1u << i;
	if (options[i].set(eq + 1, o) < 0)
		return fail(err, errlen, options[i].bad, eq + 1);
	return 0;
}

/* ACTION [KEY=VALUE...] from tokens tok[0..n). */
static int parse_action_opts(char **tok, int n, struct nf_opts *o,
			     char *err, size_t errlen)
{
	enum nf_action a;
	unsigned seen = 0;

	if (n < 1)
		return fail(err, errlen, "missing action (" NF_ACTION_LIST ")");
	if (nf_policy_parse_action(tok[0], &a) < 0)
		return fail(err, errlen, "unknown action '%s' (expected " NF_ACTION_LIST ")", tok[0]);
	*o = nf_policy_opts_default(a);
	for (int i = 1; i < n; i++)
		if (parse_option(tok[i], o, &seen, err, errlen) < 0)
			return -EINVAL;
	return 0;
}

/* "*", "N", "N-M" into a port range. */
static int parse_ports(const char *s, struct nf_endpoint *ep)
{
	unsigned long long lo, hi;
	const char *end;

	if (strcmp(s, "*") == 0) {
		ep->port_lo = 0;
		ep->port_hi = 65535;
		return 0;
	}
	if (parse_uint(s, 65535, &lo, &end) < 0 || lo == 0)
		return -EINVAL;
	hi = lo;
	if (*end == '-' && parse_uint(end + 1, 65535, &hi, &end) < 0)
		return -EINVAL;
	if (*end != '\0' || hi < lo)
		return -EINVAL;
	ep->port_lo = (uint16_t)lo;
	ep->port_hi = (uint16_t)hi;
	return 0;
}

/* Clears the bits past the prefix so matching can compare bytes. */
static void mask_host_bits(struct nf_endpoint *ep)
{
	unsigned nbytes = ep->family == AF_INET ? 4 : 16;

	for (unsigned i = 0; i < nbytes; i++) {
		unsigned bits = ep->prefix > i * 8 ? ep->prefix - i * 8 : 0;

		if (bits < 8)
			ep->addr[i] &= (uint8_t)(0xff00u >> bits);
	}
}

/* The first 12 bytes of an IPv4-mapped IPv6 address, ::ffff:a.b.c.d. */
static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* A rule on ::ffff:a.b.c.d/96+ is an IPv4 rule: mapped peers match as IPv4. */
static void unmap_v4(struct nf_endpoint *ep)
{
	if (ep->family != AF_INET6 || ep->prefix < 96 || memcmp(ep->addr, v4mapped, 12) != 0)
		return;
	memmove(ep->addr, ep->addr + 12, 4);
	memset(ep->addr + 4, 0, 12);
	ep->family = AF_INET;
	ep->prefix -= 96;
}

/* "ADDR" or "ADDR/PREFIX", IPv4 or IPv6, into ep. */
static int parse_prefix(char *s, struct nf_endpoint *ep, char *err, size_t errlen)
{
	char *slash = strchr(s, '/');
	unsigned long long prefix;
	const char *end;
	unsigned maxbits;

	if (slash)
		*slash = '\0';
	if (inet_pton(AF_INET, s, ep->addr) == 1)
		ep->family = AF_INET;
	else if (inet_pton(AF_INET6, s, ep->addr) == 1)
		ep->family = AF_INET6;
	else if (strspn(s, "0123456789.:abcdefABCDEF") != strlen(s) || !strpbrk(s, ".:"))
		return fail(err, errlen, "'%s' is not an IP address (host names are not supported)", s);
	else
		return fail(err, errlen, "bad IP address '%s'", s);
	maxbits = ep->family == AF_INET ? 32 : 128;
	ep->prefix = maxbits;
	if (slash) {
		if (parse_uint(slash + 1, maxbits, &prefix, &end) < 0 || *end != '\0')
			return fail(err, errlen, "bad prefix length '/%s' (expected 0 to %u)", slash + 1, maxbits);
		ep->prefix = (unsigned)prefix;
	}
	unmap_v4(ep);
	mask_host_bits(ep);
	return 0;
}

/* Splits "[v6]:ports", "[v6]", "v4:ports", "v4" or "*:ports" into parts; a
 * bare IPv6 address is refused, for "::1:8080" would be ambiguous. */
static int split_endpoint(char *s, char **addr, char **ports, char *err, size_t errlen)
{
	char *colon;

	*ports = NULL;
	if (s[0] == '[') {
		char *close = strchr(s, ']');

		if (!close)
			return fail(err, errlen, "missing ']' in '%s'", s);
		*close = '\0';
		*addr = s + 1;
		if (close[1] == ':')
			*ports = close + 2;
		else if (close[1] != '\0')
			return fail(err, errlen, "expected ':PORT' after ']'");
		return 0;
	}
	*addr = s;
	colon = strchr(s, ':');
	if (colon && strchr(colon + 1, ':') != NULL) /* "::1:8080": address or port? */
		return fail(err, errlen, "an IPv6 address goes in brackets: '[%s]' or '[%s]:PORT'", s, s);
	if (colon) {
		*colon = '\0';
		*ports = colon + 1;
	}
	return 0;
}

int nf_policy_parse_endpoint(const char *s, struct nf_endpoint *ep,
			     char *err, size_t errlen)
{
	char buf[128];
	char *addr = NULL, *ports = NULL;
	int rc;

	memset(ep, 0, sizeof(*ep));
	ep->port_hi = 65535;
	if (strlen(s) >= sizeof(buf))
		return fail(err, errlen, "endpoint too long");
	strcpy(buf, s);
	rc = split_endpoint(buf, &addr, &ports, err, errlen);
	if (rc < 0)
		return rc;
	if (ports && parse_ports(ports, ep) < 0)
		return fail(err, errlen, "bad port '%s' (expected *, N or N-M within 1-65535)", ports);
	if (strcmp(addr, "*") == 0)
		return 0;
	return parse_prefix(addr, ep, err, errlen);
}

/* Cuts a line into whitespace-separated tokens, dropping a '#' comment. */
static int tokenize(char *line, char **tok, int max)
{
	int n = 0;
	char *save = NULL, *p = strchr(line, '#');

	if (p)
		*p = '\0';
	for (p = strtok_r(line, " \t\r\v\f", &save); p; p = strtok_r(NULL, " \t\r\v\f", &save)) {
		if (n == max)
			return -1;
		tok[n++] = p;
	}
	return n;
}

static int add_rule(struct nf_policy *p, const struct nf_rule *r)
{
	struct nf_rule *nr = realloc(p->rules, (p->nrules + 1) * sizeof(*nr));

	if (!nr)
		return -ENOMEM;
	p->rules = nr;
	p->rules[p->nrules++] = *r;
	if (r->side == NF_SIDE_ACCEPT)
		p->has_accept_rules = 1;
	return 0;
}

/* One line's tokens; *default_line tracks a second 'default'. */
static int parse_tokens(struct nf_policy *p, char **tok, int n, int lineno,
			int *default_line, char *err, size_t errlen)
{
	struct nf_rule r = { .side = NF_SIDE_CONNECT, .line = lineno };
	int i = 0;

	if (strcmp(tok[0], "default") == 0) {
		if (*default_line)
			return fail(err, errlen, "second 'default' line (the first is line %d)", *default_line);
		*default_line = lineno;
		return parse_action_opts(tok + 1, n - 1, &p->dflt, err, errlen);
	}
	if (strcmp(tok[0], "connect") == 0 || strcmp(tok[0], "accept") == 0) {
		r.side = tok[0][0] == 'a' ? NF_SIDE_ACCEPT : NF_SIDE_CONNECT;
		if (n < 2)
			return fail(err, errlen, "missing endpoint after '%s'", tok[0]);
		i = 1;
	}
	if (i == 0 && strspn(tok[0], "abcdefghijklmnopqrstuvwxyz") == strlen(tok[0]))
		return fail(err, errlen, "'%s' is neither a keyword (default, connect, accept) "
			    "nor an IP address", tok[0]);
	if (nf_policy_parse_endpoint(tok[i], &r.ep, err, errlen) < 0)
		return -EINVAL;
	if (parse_action_opts(tok + i + 1, n - i - 1, &r.opts, err, errlen) < 0)
		return -EINVAL;
	return add_rule(p, &r);
}

/* Prefixes err (which holds the reason) with "NAME:LINE: ". */
static void locate_error(char *err, size_t errlen, const char *name, int lineno)
{
	char reason[1024]; /* an escaped reason: up to 4 bytes for one of raw */

	if (!err || !errlen)
		return;
	snprintf(reason, sizeof(reason), "%s", err);
	snprintf(err, errlen, "%s:%d: %s", name, lineno, reason);
}

/* The len bytes of line (NUL-terminated after them) as one rule or none. */
static int parse_line(struct nf_policy *p, char *line, size_t len, int lineno,
		      int *default_line, char *err, size_t errlen)
{
	const char *nul = memchr(line, '\0', len);
	char *tok[MAX_TOKENS];
	int n;

	if (nul) /* C would end the line there, silently */
		return fail(err, errlen, "NUL byte at column %zu", (size_t)(nul - line) + 1);
	n = tokenize(line, tok, MAX_TOKENS);
	if (n < 0)
		return fail(err, errlen, "too many words (at most %d)", MAX_TOKENS);
	if (n == 0)
		return 0;
	return parse_tokens(p, tok, n, lineno, default_line, err, errlen);
}

/*
 * The lines of text into *p, each error located ("NAME:LINE: reason" in
 * err) and given to each (if set); with stop, the first error ends the
 * parse. Returns the number of errors, or -ENOMEM.
 */
static int parse_text(struct nf_policy *p, const char *text, size_t len, const char *name,
		      int stop, void (*each)(const char *err, void *arg), void *arg,
		      char *err, size_t errlen)
{
	char *copy, *end, *line, *next;
	int lineno = 0, default_line = 0, rc, nerr = 0;

	memset(p, 0, sizeof(*p));
	p->dflt = nf_policy_opts_default(NF_ACT_PASS);
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	end = copy + len;
	*end = '\0';
	for (line = copy; line && !(stop && nerr); line = next) {
		next = memchr(line, '\n', (size_t)(end - line));
		if (next)
			*next++ = '\0';
		lineno++;
		rc = parse_line(p, line, (size_t)((next ? next - 1 : end) - line), lineno,
				&default_line, err, errlen);
		if (rc == -ENOMEM) {
			nerr = rc;
			break;
		}
		if (rc < 0) {
			locate_error(err, errlen, name, lineno);
			nerr++;
			if (each)
				each(err, arg);
		}
	}
	free(copy);
	return nerr;
}

int nf_policy_parse_bytes(struct nf_policy *p, const char *text, size_t len,
			  const char *name, char *err, size_t errlen)
{
	int n = parse_text(p, text, len, name, 1, NULL, NULL, err, errlen);

	if (n != 0) {
		nf_policy_free(p);
		p->dflt = nf_policy_opts_default(NF_ACT_PASS);
	}
	return n > 0 ? -EINVAL : n;
}

int nf_policy_check_bytes(struct nf_policy *p, const char *text, size_t len, const char *name,
			  void (*each)(const char *err, void *arg), void *arg)
{
	char err[1024];

	return parse_text(p, text, len, name, 0, each, arg, err, sizeof(err));
}

int nf_policy_parse(struct nf_policy *p, const char *text, const char *name,
		    char *err, size_t errlen)
{
	return nf_policy_parse_bytes(p, text, strlen(text), name, err, errlen);
}

/* The address bytes to match: IPv4-mapped IPv6 counts as IPv4. */
static int address_of(const struct sockaddr *sa, socklen_t salen,
		      const uint8_t **bytes, uint16_t *port)
{
	if (salen < (socklen_t)sizeof(sa_family_t)) /* no family to read */
		return 0;
	if (sa->sa_family == AF_INET && salen >= (socklen_t)sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		*bytes = (const uint8_t *)&in->sin_addr;
		*port = ntohs(in->sin_port);
		return AF_INET;
	}
	if (sa->sa_family == AF_INET6 && salen >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		*bytes = in6->sin6_addr.s6_addr;
		*port = ntohs(in6->sin6_port);
		if (memcmp(*bytes, v4mapped, sizeof(v4mapped)) == 0) {
			*bytes += 12;
			return AF_INET;
		}
		return AF_INET6;
	}
	return 0;
}

/* Does ep contain the address (family, bytes) and port? */
static int endpoint_matches(const struct nf_endpoint *ep, int family,
			    const uint8_t *bytes, uint16_t port)
{
	unsigned full, rest;

	if (port < ep->port_lo || port > ep->port_hi)
		return 0;
	if (ep->family == 0)
		return 1;
	if (ep->family != family)
		return 0;
	full = ep->prefix / 8;
	rest = ep->prefix % 8;
	if (memcmp(ep->addr, bytes, full) != 0)
		return 0;
	return rest == 0 || ((ep->addr[full] ^ bytes[full]) & (0xff00u >> rest)) == 0;
}

const struct nf_opts *nf_policy_match(const struct nf_policy *p,
				      enum nf_side side,
				      const struct sockaddr *sa,
				      socklen_t salen)
{
	const uint8_t *bytes;
	uint16_t port;
	int family = sa ? address_of(sa, salen, &bytes, &port) : 0;

	if (family == 0)
		return &p->dflt;
	for (size_t i = 0; i < p->nrules; i++) {
		const struct nf_rule *r = &p->rules[i];

		if (r->side == side && endpoint_matches(&r->ep, family, bytes, port))
			return &r->opts;
	}
	return &p->dflt;
}

void nf_policy_free(struct nf_policy *p)
{
	free(p->rules);
	p->rules = NULL;
	p->nrules = 0;
	p->has_accept_rules = 0;
}
