/*
 * expo.c - the exposition text (nf_metrics_render): Prometheus' text
 * format 0.0.4, each metric's HELP and TYPE lines then its samples;
 * counters end in _total, times are seconds. And the growing text it is
 * written into (struct nf_text), with the escaping of label values.
 */
#include "metrics_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_version.h"

/* Room for need more bytes and a NUL; 0, or -1 (failed set). */
static int reserve(struct nf_text *t, size_t need)
{
	size_t cap = t->cap ? t->cap : 4096;
	char *p;

	if (t->failed)
		return -1;
	if (t->len + need + 1 <= t->cap)
		return 0;
	while (cap < t->len + need + 1)
		cap *= 2;
	if (!(p = realloc(t->p, cap))) {
		t->failed = 1;
		return -1;
	}
	t->p = p;
	t->cap = cap;
	return 0;
}

void nf_text_add(struct nf_text *t, const char *s, size_t len)
{
	if (reserve(t, len) < 0)
		return;
	memcpy(t->p + t->len, s, len);
	t->len += len;
	t->p[t->len] = '\0';
}

void nf_text_printf(struct nf_text *t, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		t->failed = 1;
		return;
	}
	if ((size_t)n < sizeof(small)) {
		nf_text_add(t, small, (size_t)n);
		return;
	}
	if (reserve(t, (size_t)n) < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(t->p + t->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

void nf_text_label_value(struct nf_text *t, const char *v)
{
	char out[2 * NF_METRICS_VALUE_MAX];
	size_t n = 0;

	for (size_t i = 0; i < NF_METRICS_VALUE_MAX && v[i]; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c == '\\' || c == '"' || c == '\n') {
			out[n++] = '\\';
			out[n++] = c == '\n' ? 'n' : (char)c;
		} else {
			out[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
		}
	}
	nf_text_add(t, out, n);
}

/* A metric's HELP and TYPE lines (help has no backslash nor newline). */
static void head(struct nf_text *t, const char *name, const char *type, const char *help)
{
	nf_text_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void holder_counts(const struct nf_metrics *m, struct nf_text *t)
{
	head(t, "naglefix_stalls_total", "counter",
	     "Nagle x delayed-ACK stalls found, by holder (its program) and its cgroup (service or"
	     " container), side, the holder's end (local), the end it waited on (peer) and their"
	     " network namespace (netns).");
	for (uint32_t k = 0; k < m->n; k++)
		nf_text_printf(t, "naglefix_stalls_total{%s} %llu\n", m->s[k].labels,
			       (unsigned long long)m->s[k].stalls);
	if (m->over_stalls)
		nf_text_printf(t, "naglefix_stalls_total{overflow=\"true\"} %llu\n",
			       (unsigned long long)m->over_stalls);
	head(t, "naglefix_stall_seconds_total", "counter",
	     "Time lost to those stalls: from the held segment's first piece to its second, seconds.");
	for (uint32_t k = 0; k < m->n; k++)
		nf_text_printf(t, "naglefix_stall_seconds_total{%s} %.6f\n", m->s[k].labels,
			       m->s[k].seconds);
	if (m->over_stalls)
		nf_text_printf(t, "naglefix_stall_seconds_total{overflow=\"true\"} %.6f\n",
			       m->over_seconds);
}

static void holder_fixes(const struct nf_metrics *m, struct nf_text *t)
{
	head(t, "naglefix_holder_fix_info", "gauge",
	     "The naglefix.conf rule that fixes the holder on its host (fix), as watch prints it; 1.");
	for (uint32_t k = 0; k < m->n; k++)
		nf_text_printf(t, "naglefix_holder_fix_info{%s,fix=\"%s\"} 1\n", m->s[k].labels,
			       m->s[k].fix);
}

static void histogram(const struct nf_metrics *m, struct nf_text *t)
{
	uint64_t sum = 0;

	head(t, "naglefix_stall_duration_seconds", "histogram",
	     "Durations of the stalls found, every holder's, seconds.");
	for (int b = 0; b < NF_METRICS_BUCKETS; b++) {
		sum += m->hist[b];
		nf_text_printf(t, "naglefix_stall_duration_seconds_bucket{le=\"%g\"} %llu\n",
			       nf_metrics_bounds[b], (unsigned long long)sum);
	}
	sum += m->hist[NF_METRICS_BUCKETS];
	nf_text_printf(t, "naglefix_stall_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
		       (unsigned long long)sum);
	nf_text_printf(t, "naglefix_stall_duration_seconds_sum %.6f\n", m->hist_sum);
	nf_text_printf(t, "naglefix_stall_duration_seconds_count %llu\n", (unsigned long long)sum);
}

/* One metric of one sample without labels. */
static void one(struct nf_text *t, const char *name, const char *type, const char *help,
		uint64_t v)
{
	head(t, name, type, help);
	nf_text_printf(t, "%s %llu\n", name, (unsigned long long)v);
}

static void capture(const struct nf_metrics *m, struct nf_text *t)
{
	one(t, "naglefix_packets_total", "counter",
	    "TCP packets the capture's filter passed, as the kernel counts them.", m->c.packets);
	one(t, "naglefix_packets_dropped_total", "counter",
	    "Of them, lost because the capture's ring was full: stalls may have been missed.",
	    m->c.drops);
	one(t, "naglefix_connections_total", "counter", "TCP connections seen.", m->c.conns_total);
	one(t, "naglefix_connections_tracked", "gauge", "TCP connections tracked now.",
	    m->c.conns_live);
	one(t, "naglefix_namespaces_watched", "gauge", "Network namespaces watched.",
	    m->c.namespaces);
}

static void bounds(const struct nf_metrics *m, struct nf_text *t)
{
	one(t, "naglefix_holder_series", "gauge",
	    "Holder series kept now (the overflow series apart).", m->n);
	one(t, "naglefix_holder_series_limit", "gauge",
	    "The most holder series kept; past it, stalls count under overflow=\"true\".",
	    m->o.max_series);
	one(t, "naglefix_holder_series_expired_total", "counter",
	    "Holder series dropped after --metrics-expire seconds without a stall.", m->expired);
}

static void endpoint(const struct nf_metrics *m, struct nf_text *t)
{
	static const int codes[] = NF_METRICS_CODES;

	head(t, "naglefix_http_responses_total", "counter",
	     "Responses of the metrics endpoint, by status code.");
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		nf_text_printf(t, "naglefix_http_responses_total{code=\"%d\"} %llu\n", codes[i],
			       (unsigned long long)m->c.http_codes[i]);
	head(t, "naglefix_http_clients_dropped_total", "counter",
	     "Clients of the metrics endpoint dropped: too slow (timeout), or the oldest one"
	     " when too many were connected at once (limit).");
	nf_text_printf(t, "naglefix_http_clients_dropped_total{reason=\"timeout\"} %llu\n",
		       (unsigned long long)m->c.http_dropped[0]);
	nf_text_printf(t, "naglefix_http_clients_dropped_total{reason=\"limit\"} %llu\n",
		       (unsigned long long)m->c.http_dropped[1]);
	head(t, "naglefix_build_info", "gauge", "naglefix's version; 1.");
	nf_text_printf(t, "naglefix_build_info{version=\"%s\"} 1\n", NF_VERSION);
}

char *nf_metrics_render(const struct nf_metrics *m, size_t *len)
{
	struct nf_text t = { 0 };

	holder_counts(m, &t);
	holder_fixes(m, &t);
	histogram(m, &t);
	capture(m, &t);
	bounds(m, &t);
	endpoint(m, &t);
	if (t.failed) {
		free(t.p);
		return NULL;
	}
	*len = t.len;
	return t.p;
}
