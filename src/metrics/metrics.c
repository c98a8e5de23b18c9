/*
 * metrics.c - the holder series (nf_metrics.h): found by their labels'
 * text through an open-addressing index, at most max_series of them; the
 * stalls of a holder past the bound go to the overflow series. A series
 * is dropped when it has had no stall for expire_s; the index is then
 * rebuilt (series are few, and expiry runs once a scrape).
 */
#include "metrics_int.h"

#include <stdlib.h>
#include <string.h>

const char *const nf_metrics_label_names[NF_ML_COUNT] = { "holder", "cgroup", "side", "local",
							   "peer",   "netns" };

const double nf_metrics_bounds[NF_METRICS_BUCKETS] = { 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08,
						       0.1,  0.15, 0.2,  0.3,  0.5,  1,    2 };

struct nf_metrics *nf_metrics_new(const struct nf_metrics_opts *o)
{
	struct nf_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->o = *o;
	if (m->o.max_series < 1)
		m->o.max_series = 1;
	if (m->o.expire_s < 1)
		m->o.expire_s = 1;
	return m;
}

/* FNV-1a of s. */
static uint64_t hash_of(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* k's labels as the text writes them, into t; one with no value is
 * left out (Prometheus reads an empty label as none). */
static void labels_of(const struct nf_metrics_key *k, struct nf_text *t)
{
	int n = 0;

	for (int i = 0; i < NF_ML_COUNT; i++) {
		if (!k->v[i] || !k->v[i][0])
			continue;
		nf_text_printf(t, "%s%s=\"", n++ ? "," : "", nf_metrics_label_names[i]);
		nf_text_label_value(t, k->v[i]);
		nf_text_add(t, "\"", 1);
	}
}

/* The slot of the index holding labels (hash h), or the empty one where
 * it would go. */
static uint32_t slot_of(const struct nf_metrics *m, uint64_t h, const char *labels)
{
	uint32_t mask = m->nindex - 1, i = (uint32_t)h & mask;

	for (; m->index[i]; i = (i + 1) & mask) {
		const struct nf_series *s = &m->s[m->index[i] - 1];

		if (s->hash == h && strcmp(s->labels, labels) == 0)
			break;
	}
	return i;
}

/* Rebuilds the index of nindex slots from the series. */
static void reindex(struct nf_metrics *m)
{
	memset(m->index, 0, m->nindex * sizeof(*m->index));
	for (uint32_t k = 0; k < m->n; k++)
		m->index[slot_of(m, m->s[k].hash, m->s[k].labels)] = k + 1;
}

/* Room for one more series (the array and an index over twice as many
 * slots). 0, or -1 on no memory. */
static int grow(struct nf_metrics *m)
{
	uint32_t cap = m->cap ? m->cap * 2 : 16, ni = 64;
	struct nf_series *s;
	uint32_t *ix;

	if (m->n < m->cap)
		return 0;
	if (cap > m->o.max_series)
		cap = m->o.max_series;
	while (ni <= 2 * cap)
		ni *= 2;
	if (!(s = realloc(m->s, cap * sizeof(*s))))
		return -1;
	m->s = s;
	if (!(ix = calloc(ni, sizeof(*ix))))
		return -1;
	free(m->index);
	m->index = ix;
	m->nindex = ni;
	m->cap = cap;
	reindex(m);
	return 0;
}

/* A new series of labels (hash h, its text taken), fix its fix's
 * value; its index + 1, or 0 when the bound or memory allows none. */
static uint32_t add_series(struct nf_metrics *m, char *labels, uint64_t h, const char *fix)
{
	struct nf_text f = { 0 };
	struct nf_series *s;

	if (m->n >= m->o.max_series || grow(m) < 0)
		return 0;
	nf_text_label_value(&f, fix ? fix : "");
	if (f.failed || !f.p) {
		free(f.p);
		return 0;
	}
	s = &m->s[m->n];
	memset(s, 0, sizeof(*s));
	s->labels = labels;
	s->fix = f.p;
	s->hash = h;
	m->index[slot_of(m, h, labels)] = ++m->n;
	return m->n;
}

static void observe(struct nf_metrics *m, double seconds)
{
	int b = 0;

	while (b < NF_METRICS_BUCKETS && seconds > nf_metrics_bounds[b])
		b++;
	m->hist[b]++;
	m->hist_sum += seconds;
}

void nf_metrics_stall(struct nf_metrics *m, const struct nf_metrics_key *k, const char *fix,
		      double seconds, uint64_t now_s)
{
	struct nf_text t = { 0 };
	uint32_t x = 0;
	uint64_t h;

	observe(m, seconds);
	labels_of(k, &t);
	if (!t.failed && t.p) {
		h = hash_of(t.p);
		x = m->nindex ? m->index[slot_of(m, h, t.p)] : 0;
		if (x)
			free(t.p);
		else if (!(x = add_series(m, t.p, h, fix)))
			free(t.p);
	} else {
		free(t.p);
	}
	if (!x) {
		m->over_stalls++;
		m->over_seconds += seconds;
		return;
	}
	m->s[x - 1].stalls++;
	m->s[x - 1].seconds += seconds;
	m->s[x - 1].last_s = now_s;
}

void nf_metrics_expire(struct nf_metrics *m, uint64_t now_s)
{
	uint32_t kept = 0;

	for (uint32_t k = 0; k < m->n; k++) {
		struct nf_series *s = &m->s[k];

		if (now_s >= s->last_s + m->o.expire_s) {
			free(s->labels);
			free(s->fix);
			m->expired++;
			continue;
		}
		m->s[kept++] = *s;
	}
	if (kept == m->n)
		return;
	m->n = kept;
	reindex(m);
}

size_t nf_metrics_series(const struct nf_metrics *m)
{
	return m->n;
}

void nf_metrics_set(struct nf_metrics *m, const struct nf_metrics_counts *c)
{
	m->c = *c;
}

void nf_metrics_free(struct nf_metrics *m)
{
	if (!m)
		return;
	for (uint32_t k = 0; k < m->n; k++) {
		free(m->s[k].labels);
		free(m->s[k].fix);
	}
	free(m->s);
	free(m->index);
	free(m);
}
