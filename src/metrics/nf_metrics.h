/*
 * nf_metrics.h - what `naglefix watch --metrics` exports, in Prometheus'
 * text exposition format (version 0.0.4): a series of counters per holder
 * (its stalls, the time lost to them, the rule that fixes it), a
 * histogram of stall durations, and what the capture saw (src/metrics/:
 * metrics.c keeps the series, expo.c writes the text, textfile.c writes
 * it to a file for node_exporter's textfile collector).
 *
 * A holder's series is named by labels (enum nf_metrics_label): which
 * program held and its service or container, its side, its own end and
 * the end it waited on, the network namespace it is in. A
 * connection that never stalled makes none. Their number is bounded (the
 * stalls of holders past the bound are counted in one series labelled
 * overflow="true"), and a series with no stall for expire_s seconds is
 * dropped. No thread, no system call but textfile.c's.
 */
#ifndef NF_METRICS_H
#define NF_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define NF_METRICS_SERIES_DEFAULT 500 /* holder series at most */
#define NF_METRICS_EXPIRE_DEFAULT 900 /* seconds without a stall before a series goes */
#define NF_METRICS_VALUE_MAX 128      /* bytes of a label's value kept (before escaping) */

/* The labels of a holder's series, in the order they are written. A
 * label added here (a service or container's name) is a name in
 * metrics.c's table and a value its caller fills. */
enum nf_metrics_label {
	NF_ML_HOLDER = 0, /* the holder's program ("java"), "" if not named */
	NF_ML_CGROUP,     /* its service or container ("nginx.service", "docker-<id>"), "" if not named */
	NF_ML_SIDE,       /* "connect" or "accept" */
	NF_ML_LOCAL,      /* the holder's end: a server's "addr:port", a client's address */
	NF_ML_PEER,       /* the end it waited on: a client's server "addr:port", a server's client address */
	NF_ML_NETNS,      /* the network namespace the holder was named in ("host", a name, "pid:N") */
	NF_ML_COUNT
};

/* A holder series' label values, in enum nf_metrics_label's order: any
 * bytes (escaped, and bytes outside printable ASCII written as '?', so
 * that the text is valid UTF-8), cut to NF_METRICS_VALUE_MAX; NULL or ""
 * leaves the label out. */
struct nf_metrics_key {
	const char *v[NF_ML_COUNT];
};

struct nf_metrics_opts {
	uint32_t max_series; /* holder series kept at most (>= 1) */
	uint64_t expire_s;   /* a series with no stall this long is dropped (>= 1) */
};

/* What the capture and the endpoint count, set before each rendering
 * (nf_metrics_set): written as they are. */
struct nf_metrics_counts {
	uint64_t packets;         /* packets the capture's filter passed (the kernel's count) */
	uint64_t drops;           /* of them, lost: the ring was full */
	uint64_t conns_total;     /* connections seen */
	uint64_t conns_live;      /* connections tracked now */
	uint64_t namespaces;      /* network namespaces watched */
	uint64_t http_codes[6];   /* responses by code: 200 400 404 405 408 431 (NF_METRICS_CODES) */
	uint64_t http_dropped[2]; /* clients dropped: [0] timed out, [1] past the limit of clients */
};

/* The codes of nf_metrics_counts' http_codes, in its order. */
#define NF_METRICS_CODES { 200, 400, 404, 405, 408, 431 }

struct nf_metrics;

/* Empty metrics with options o. NULL if out of memory. */
struct nf_metrics *nf_metrics_new(const struct nf_metrics_opts *o);

/* Counts one stall of seconds under the series of key k (made if it is
 * new and the bound allows: its fix info says fix; else the overflow
 * series), at now_s (a monotonic clock's seconds). Never fails: with no
 * memory for a new series, the stall goes to the overflow series. */
void nf_metrics_stall(struct nf_metrics *m, const struct nf_metrics_key *k, const char *fix,
		      double seconds, uint64_t now_s);

/* Drops the series with no stall since now_s - expire_s. */
void nf_metrics_expire(struct nf_metrics *m, uint64_t now_s);

/* The holder series kept now. */
size_t nf_metrics_series(const struct nf_metrics *m);

/* Sets the counts the next rendering writes. */
void nf_metrics_set(struct nf_metrics *m, const struct nf_metrics_counts *c);

/* The exposition text of every metric, in a buffer of *len bytes that
 * the caller frees (NUL-terminated). NULL if out of memory. */
char *nf_metrics_render(const struct nf_metrics *m, size_t *len);

/* Frees m. NULL is allowed. */
void nf_metrics_free(struct nf_metrics *m);

/*
 * Writes text (len bytes) to path whole, for node_exporter's textfile
 * collector: into a new file beside it (path.XXXXXX, created with
 * O_EXCL: no link followed), mode 0644 whatever the umask, then
 * renamed over path, so a reader sees the old text or the new one, never
 * a part. Returns 0, or -errno (the new file removed).
 */
int nf_metrics_write_file(const char *path, const char *text, size_t len);

#endif
