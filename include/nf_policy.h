/*
 * nf_policy.h - the per-destination policy: parsing a config text and
 * matching a socket's address against its rules.
 *
 * Pure code: no system call, no global state, so the unit tests drive it
 * directly.
 */
#ifndef NF_POLICY_H
#define NF_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

enum nf_action {
	NF_ACT_PASS = 0,
	NF_ACT_NODELAY,
	NF_ACT_COALESCE,
	NF_ACT_AUDIT,
	NF_ACT_AUTO,     /* push what Nagle holds when the program waits */
	NF_ACT_QUICKACK, /* TCP_QUICKACK around reads: release the peer's Nagle */
};

/* The action names, for messages that list them. */
#define NF_ACTION_LIST "pass, nodelay, coalesce, audit, auto or quickack"

/* Which end of a connection a rule is about. */
enum nf_side {
	NF_SIDE_CONNECT = 0, /* sockets the program connects: matched on the peer */
	NF_SIDE_ACCEPT,      /* sockets it accepts: matched on its own local end */
};

#define NF_BUFFER_DEFAULT   (16u * 1024u)   /* coalesce buffer=, bytes */
#define NF_BUFFER_MIN       64u
#define NF_BUFFER_MAX       (16u * 1024u * 1024u)
#define NF_FLUSH_DEFAULT_US 500u            /* coalesce flush=, microseconds */
#define NF_FLUSH_MIN_US     10u
#define NF_FLUSH_MAX_US     1000000u
#define NF_AUTO_FLUSH_DEFAULT_US 1000u      /* auto flush=: the timer's push */
#define NF_DRAIN_DEFAULT_MS 5000u           /* coalesce drain=, milliseconds */
#define NF_DRAIN_MIN_MS     1u
#define NF_DRAIN_MAX_MS     60000u

/* How a coalesce connection begins (start=). */
enum nf_start {
	NF_START_WHOLE = 0, /* as one that writes whole messages: its writes go
			       straight until a second write comes before a read */
	NF_START_SPLIT,     /* as one that splits them: held from the first write */
};

/* What to do with one socket: the action and its options. */
struct nf_opts {
	enum nf_action action;
	uint32_t buffer;    /* coalesce: bound of the per-connection buffer */
	uint32_t flush_us;  /* coalesce: longest any byte may wait; auto: the
			       longest Nagle may hold a write no wait follows */
	int audit;          /* nodelay/coalesce/auto: also log what the fix prevented */
	enum nf_start start; /* coalesce: how a new connection begins */
	uint32_t drain_ms;  /* coalesce: how long close, shutdown, exec, exit and
			       a child's start wait for a peer that takes
			       nothing, before the held bytes are given up */
};

/* An address prefix and a port range; family 0 means any address. */
struct nf_endpoint {
	int family;          /* 0, AF_INET or AF_INET6 */
	uint8_t addr[16];    /* network byte order, host bits cleared */
	unsigned prefix;     /* significant leading bits of addr */
	uint16_t port_lo;    /* 0..65535 for '*' */
	uint16_t port_hi;
};

struct nf_rule {
	enum nf_side side;
	struct nf_endpoint ep;
	struct nf_opts opts;
	int line;
};

struct nf_policy {
	struct nf_rule *rules;
	size_t nrules;
	struct nf_opts dflt;     /* the 'default' line, else pass */
	int has_accept_rules;    /* lets accept() skip getsockname when 0 */
};

/*
 * Copies s into out (outlen > 0) with each byte that is not printable
 * ASCII as \xNN and a backslash as \\, so no byte of a config line (or of
 * a command line the naglefix command quotes) reaches a terminal or a log
 * raw; a cut falls between whole escapes.
 */
void nf_policy_escape(const char *s, char *out, size_t outlen);

/* Options for an action with its documented defaults. */
struct nf_opts nf_policy_opts_default(enum nf_action action);

/*
 * Parses an action name ("pass", "nodelay", "coalesce", "audit", "auto",
 * "quickack").
 * Returns 0 and sets *out, or -EINVAL.
 */
int nf_policy_parse_action(const char *name, enum nf_action *out);

/* The name of an action, for messages. */
const char *nf_policy_action_name(enum nf_action action);

/*
 * Parses a whole config text, the len bytes at text, into *p (which it
 * initialises). On an error returns -EINVAL, leaves *p empty and writes
 * "NAME:LINE: what is wrong" into err, each byte of the line quoted there
 * that is not printable ASCII as \xNN (a backslash as \\); a NUL byte in a
 * line is an error. Returns -ENOMEM if memory runs out. 0 on success.
 */
int nf_policy_parse_bytes(struct nf_policy *p, const char *text, size_t len,
			  const char *name, char *err, size_t errlen);

/*
 * Parses text as nf_policy_parse_bytes does, but on to its end: each
 * error, in the form nf_policy_parse_bytes gives its first one ("NAME:LINE:
 * what is wrong", so the first is the very message the library gives), is
 * passed to each in order of lines. *p holds the rules of the lines
 * without error (nf_policy_free it). Returns the number of errors (0: the
 * library takes the text), or -ENOMEM.
 */
int nf_policy_check_bytes(struct nf_policy *p, const char *text, size_t len, const char *name,
			  void (*each)(const char *err, void *arg), void *arg);

/* nf_policy_parse_bytes of the string text (which can hold no NUL byte). */
int nf_policy_parse(struct nf_policy *p, const char *text, const char *name,
		    char *err, size_t errlen);

/*
 * Parses an ENDPOINT ("10.0.0.0/8:80-90", "[::1]:*", "*:8080", "*").
 * Returns 0, or -EINVAL with a reason in err.
 */
int nf_policy_parse_endpoint(const char *s, struct nf_endpoint *ep,
			     char *err, size_t errlen);

/*
 * The options for a socket on the given side whose matched address is sa
 * (the peer for NF_SIDE_CONNECT, the local end for NF_SIDE_ACCEPT): the
 * first rule of that side that matches, else the default. An IPv4-mapped
 * IPv6 address matches as IPv4. sa may be NULL (unknown): only the default.
 */
const struct nf_opts *nf_policy_match(const struct nf_policy *p,
				      enum nf_side side,
				      const struct sockaddr *sa,
				      socklen_t salen);

/* Frees the rules; *p is left empty and reusable. */
void nf_policy_free(struct nf_policy *p);

#endif
