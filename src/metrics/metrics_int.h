/*
 * metrics_int.h - what the files of src/metrics share: the series table
 * (metrics.c) that the exposition (expo.c) reads, the text buffer both
 * write into, and the HTTP request reader (request.c) and listening
 * socket (listen.c) of the endpoint (endpoint.c). Not for the command.
 */
#ifndef NF_METRICS_INT_H
#define NF_METRICS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "nf_endpoint.h"
#include "nf_metrics.h"

/* One holder's series: its labels as the text writes them
 * (holder="java",side="connect",...), escaped once when it is made. */
struct nf_series {
	char *labels;
	char *fix;        /* the fix's value, escaped */
	uint64_t hash;    /* of labels */
	uint64_t stalls;
	double seconds;
	uint64_t last_s;  /* its last stall */
};

/* The histogram's upper bounds, seconds (then +Inf). */
#define NF_METRICS_BUCKETS 14

extern const double nf_metrics_bounds[NF_METRICS_BUCKETS];

struct nf_metrics {
	struct nf_metrics_opts o;
	struct nf_series *s;       /* n of cap */
	uint32_t n, cap;
	uint32_t *index;           /* series' index + 1 by hash, open addressing */
	uint32_t nindex;           /* a power of two, > 2 * cap */
	uint64_t over_stalls;      /* the overflow series */
	double over_seconds;
	uint64_t expired;          /* series dropped for their age */
	uint64_t hist[NF_METRICS_BUCKETS + 1]; /* stalls per bucket (not cumulative), +Inf last */
	double hist_sum;
	struct nf_metrics_counts c;
};

/* The names of enum nf_metrics_label's labels, in its order. */
extern const char *const nf_metrics_label_names[NF_ML_COUNT];

/* A growing text; once an allocation failed, failed stays set and the
 * text stops growing. */
struct nf_text {
	char *p;
	size_t len, cap;
	int failed;
};

/* Appends printf's output to t. */
void nf_text_printf(struct nf_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends the len bytes of s. */
void nf_text_add(struct nf_text *t, const char *s, size_t len);

/* Appends v (up to NF_METRICS_VALUE_MAX bytes of it, up to a NUL) as a
 * label value is written between its quotes: \\, \" and \n escaped, any
 * other byte outside printable ASCII as '?'. */
void nf_text_label_value(struct nf_text *t, const char *v);

/* --- request.c: an HTTP request as the endpoint reads it --- */

enum nf_req {
	NF_REQ_MORE = 0,  /* the head is not whole yet */
	NF_REQ_GET,       /* GET /metrics */
	NF_REQ_HEAD,      /* HEAD /metrics */
	NF_REQ_BAD,       /* 400: not an HTTP/1.x request line, or a byte no head has */
	NF_REQ_NOT_FOUND, /* 404: another path */
	NF_REQ_METHOD,    /* 405: another method */
	NF_REQ_TOO_LARGE, /* 431: no end of the head within max bytes */
};

/*
 * Reads the first len bytes a client sent (buf need not be
 * NUL-terminated), of at most max: what they ask, once the head (the
 * request line and header lines, up to an empty line) is whole; the
 * request line is judged as soon as it is whole, and its first bytes as
 * they come, so a bad one is answered at once. Header lines are not read
 * beyond their bytes (a NUL or a control byte other than CR, LF and TAB
 * is BAD), nothing after the head at all. So an answer other than MORE
 * stays the answer as more bytes come (up to max). Never reads past len.
 */
enum nf_req nf_req_parse(const char *buf, size_t len, size_t max);

/* --- listen.c --- */

/* A listening socket on sa, non-blocking and close-on-exec: its
 * descriptor, or -1 with err (one line) and errno set. */
int nf_endpoint_listen(const struct sockaddr *sa, socklen_t len, char err[NF_ENDPOINT_ERR_MAX]);

#endif
