/*
 * watch_metrics.c - watch's metrics in its loop (watch_int.h): the
 * endpoint of --metrics polled beside the rings (their stream's epoll;
 * no thread: a scrape is answered between two batches of packets), the
 * text made at each scrape from the series (watch_series.c) and what the
 * rings and the detectors count, and --metrics-file written every FILE_EVERY_S seconds
 * and at the end.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nf_addr.h"
#include "watch_int.h"
#include "cli/common/nf_cli.h"
#include "metrics/nf_endpoint.h"
#include "metrics/nf_metrics.h"

#define FILE_EVERY_S 5

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* What the rings, the detectors and the endpoint count, into *c. */
static void counts(struct nf_watch *w, struct nf_metrics_counts *c)
{
	struct nf_endpoint_stats es;
	struct nf_ring_stats rs;
	struct nf_wire_stats ws;

	memset(c, 0, sizeof(*c));
	nf_watch_netns_ring_stats(w, &rs);
	nf_watch_wires_stats(w, &ws);
	c->packets = rs.packets;
	c->drops = rs.drops;
	c->conns_total = ws.conns;
	c->conns_live = ws.live;
	c->namespaces = w->nns;
	if (w->metrics->ep) {
		nf_endpoint_stats(w->metrics->ep, &es);
		memcpy(c->http_codes, es.codes, sizeof(c->http_codes));
		c->http_dropped[0] = es.timed_out;
		c->http_dropped[1] = es.evicted;
	}
}

/* The endpoint's render (arg: w): the text as of now. */
static char *render(void *arg, size_t *len)
{
	struct nf_watch *w = arg;
	struct nf_metrics_counts c;

	counts(w, &c);
	nf_metrics_expire(w->metrics->m, mono_ns() / 1000000000u);
	nf_metrics_set(w->metrics->m, &c);
	return nf_metrics_render(w->metrics->m, len);
}

/* Writes --metrics-file; a failure said once, until one succeeds
 * again. 0, or -errno. */
static int write_file(struct nf_watch *w)
{
	struct nf_watch_metrics *wm = w->metrics;
	size_t len;
	char *text = render(w, &len);
	int rc = text ? nf_metrics_write_file(w->metrics_file, text, len) : -ENOMEM;

	free(text);
	if (rc < 0 && !wm->file_failing)
		nf_cli_warnx(0, "--metrics-file %s: %s (watch goes on, writing it"
				" again every %d s)", w->metrics_file, strerror(-rc), FILE_EVERY_S);
	else if (rc == 0 && wm->file_failing)
		nf_cli_warnx(0, "--metrics-file %s: written again", w->metrics_file);
	wm->file_failing = rc < 0;
	return rc;
}

/* Listens on --metrics' address and says where. 0, or 1 after saying why not. */
static int open_endpoint(struct nf_watch *w)
{
	char err[NF_ENDPOINT_ERR_MAX], a[NF_ADDR_MAX];
	struct sockaddr_storage ss;
	socklen_t len;
	const uint8_t *addr;
	int port;

	if (nf_endpoint_parse(w->metrics_addr, &ss, &len) < 0) {
		nf_cli_warnx(0, "--metrics %s: not [ADDR:]PORT", w->metrics_addr);
		return 1;
	}
	if (!(w->metrics->ep = nf_endpoint_open((struct sockaddr *)&ss, len, err))) {
		nf_cli_warnx(0, "--metrics %s: %s", w->metrics_addr, err);
		return 1;
	}
	nf_endpoint_addr(w->metrics->ep, &ss);
	if (ss.ss_family == AF_INET6) {
		addr = ((struct sockaddr_in6 *)&ss)->sin6_addr.s6_addr;
		port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	} else {
		addr = (const uint8_t *)&((struct sockaddr_in *)&ss)->sin_addr;
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	}
	nf_cli_warnx(0, "metrics at http://%s/metrics",
		nf_addr_format(ss.ss_family, addr, port, a));
	return 0;
}

/* Frees what open made; w->metrics NULL after. */
static void free_all(struct nf_watch *w)
{
	nf_endpoint_close(w->metrics->ep);
	nf_metrics_free(w->metrics->m);
	free(w->metrics);
	w->metrics = NULL;
}

int nf_watch_metrics_open(struct nf_watch *w)
{
	struct nf_metrics_opts o = { .max_series = w->metrics_max, .expire_s = w->metrics_expire };

	if (!w->metrics_addr && !w->metrics_file)
		return 0;
	if (!(w->metrics = calloc(1, sizeof(*w->metrics))) || !(w->metrics->m = nf_metrics_new(&o))) {
		nf_cli_warnx(0, "out of memory");
		free(w->metrics);
		w->metrics = NULL;
		return 1;
	}
	if ((w->metrics_addr && open_endpoint(w) != 0) || (w->metrics_file && write_file(w) < 0)) {
		free_all(w);
		return 1;
	}
	w->metrics->next_file_ns = mono_ns() + FILE_EVERY_S * 1000000000ull;
	return 0;
}

void nf_watch_metrics_wait(struct nf_watch *w, int timeout_ms)
{
	struct pollfd p[1 + NF_ENDPOINT_POLLFDS];
	struct nf_endpoint *ep = w->metrics ? w->metrics->ep : NULL;
	size_t n = 1;

	p[0] = (struct pollfd){ .fd = w->epfd, .events = POLLIN }; /* a ring handed a block over */
	if (ep)
		n += nf_endpoint_pollfds(ep, p + 1);
	if (poll(p, n, timeout_ms) < 0)
		return; /* a signal: the loop looks at it */
	if (ep)
		nf_endpoint_serve(ep, p + 1, n - 1, mono_ns() / 1000000u, render, w);
}

void nf_watch_metrics_tick(struct nf_watch *w, uint64_t mono)
{
	struct nf_watch_metrics *wm = w->metrics;

	if (!wm)
		return;
	nf_metrics_expire(wm->m, mono / 1000000000u);
	if (w->metrics_file && mono >= wm->next_file_ns) {
		write_file(w);
		wm->next_file_ns = mono + FILE_EVERY_S * 1000000000ull;
	}
}

void nf_watch_metrics_close(struct nf_watch *w)
{
	if (!w->metrics)
		return;
	if (w->metrics_file)
		write_file(w);
	free_all(w);
}
