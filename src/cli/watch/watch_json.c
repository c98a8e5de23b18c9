/*
 * watch_json.c - watch's JSON lines (--json on standard output, and -l
 * LOG): a row's line when it first stalls, then, at each flush (every
 * NF_WATCH_FLUSH_S seconds and at the end), a line for the stalls it had
 * since its last line. So each line stands for its own stalls (their
 * count, total and mean ACK delay), as `naglefix report` reads them: it
 * adds up a row's lines, and journald gets findings as they come, not
 * only when the service stops. stall_ms is the row's median so far. A
 * later connection of a row found stalling (another client of the same
 * server end, a new connection) is a "wire_conn" line naming its ends and
 * process; its stalls are in the row's lines.
 * What was sent is kept per row (the detector's rows live as long as it).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/common/nf_cli.h"
#include "cli/common/nf_wire_out.h"
#include "nf_addr.h"
#include "nf_json.h"
#include "watch_int.h"

/* What a row's lines have said so far. */
struct nf_watch_sent {
	const struct nf_holder *h;
	uint64_t stalls;
	double total_ms, ack_total_ms;
	uint32_t conns;
};

static void emit(struct nf_watch *w, const struct nf_holder *h)
{
	if (w->json)
		nf_cli_wire_json(w->out, h, "watch");
	if (w->log)
		nf_cli_wire_json(w->log, h, "watch");
}

static void record(struct nf_watch_sent *e, const struct nf_holder *h)
{
	e->h = h;
	e->stalls = h->stalls;
	e->total_ms = h->total_ms;
	e->ack_total_ms = h->ack_total_ms;
	e->conns = h->conns;
}

void nf_watch_json_first(struct nf_watch *w, const struct nf_holder *h)
{
	if (!w->json && !w->log)
		return;
	if (w->nsent == w->capsent) {
		size_t n = w->capsent ? w->capsent * 2 : 64;
		struct nf_watch_sent *s = realloc(w->sent, n * sizeof(*s));

		if (!s)
			return; /* not recorded: the next flush writes the row whole */
		w->sent = s;
		w->capsent = n;
	}
	record(&w->sent[w->nsent++], h);
	w->sent_sorted = 0;
	emit(w, h);
}

static void conn_line(FILE *out, const struct nf_holder *h)
{
	char a[NF_ADDR_MAX], t[32], esc[NF_JSON_CHAR_MAX];
	time_t sec = (time_t)(h->last_ns / 1000000000u);
	struct tm tm;

	gmtime_r(&sec, &tm);
	strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(out, "{\"event\":\"wire_conn\",\"time\":\"%s.%06uZ\",\"source\":\"watch\"", t,
		(unsigned)(h->last_ns % 1000000000u / 1000));
	if (h->pid) {
		fprintf(out, ",\"pid\":%ld,\"prog\":\"", h->pid);
		for (const char *c = h->cmd; *c; c++)
			fputs(nf_json_char((unsigned char)*c, esc), out);
		fputc('"', out);
	} else if (h->gone) {
		fputs(",\"process\":\"gone\"", out);
	}
	nf_cli_wire_json_netns(out, h);
	if (h->cgroup[0]) {
		fputs(",\"cgroup\":", out);
		nf_cli_json_str(out, h->cgroup);
	}
	fprintf(out, ",\"side\":\"%s\"", h->side == NF_WIRE_ACCEPT ? "accept" : "connect");
	fprintf(out, ",\"local\":\"%s\"", nf_addr_format(h->self.family, h->self.addr, h->self.port, a));
	fprintf(out, ",\"peer\":\"%s\"}\n", nf_addr_format(h->peer.family, h->peer.addr, h->peer.port, a));
}

void nf_watch_json_conn(struct nf_watch *w, const struct nf_holder *h)
{
	if (w->json)
		conn_line(w->out, h);
	if (w->log)
		conn_line(w->log, h);
}

static int by_row(const void *a, const void *b)
{
	const struct nf_holder *x = ((const struct nf_watch_sent *)a)->h;
	const struct nf_holder *y = ((const struct nf_watch_sent *)b)->h;

	return x < y ? -1 : x > y;
}

static struct nf_watch_sent *sent_of(struct nf_watch *w, const struct nf_holder *h)
{
	struct nf_watch_sent key = { .h = h };

	if (!w->sent)
		return NULL;
	if (!w->sent_sorted) {
		qsort(w->sent, w->nsent, sizeof(*w->sent), by_row);
		w->sent_sorted = 1;
	}
	return bsearch(&key, w->sent, w->nsent, sizeof(*w->sent), by_row);
}

/* A copy of h that counts only what its lines have not said (*d is
 * large: the caller's, static). 0 if there is nothing new. */
static int since_sent(const struct nf_holder *h, const struct nf_watch_sent *e, struct nf_holder *d)
{
	if (e && h->stalls <= e->stalls)
		return 0;
	*d = *h;
	if (e) {
		d->stalls -= e->stalls;
		d->total_ms -= e->total_ms;
		d->ack_total_ms -= e->ack_total_ms;
		d->conns -= e->conns;
	}
	return 1;
}

void nf_watch_json_flush(struct nf_watch *w)
{
	static struct nf_holder d;
	struct nf_holder *const *rows;
	size_t n;

	if (!w->json && !w->log)
		return;
	n = nf_watch_wires_rows(w, &rows);
	for (size_t i = 0; i < n; i++) {
		struct nf_watch_sent *e = sent_of(w, rows[i]);

		if (!since_sent(rows[i], e, &d))
			continue;
		emit(w, &d);
		if (e)
			record(e, rows[i]);
	}
	if (w->log)
		fflush(w->log);
	fflush(w->out);
}

void nf_watch_json_free(struct nf_watch *w)
{
	free(w->sent);
	w->sent = NULL;
	w->nsent = w->capsent = 0;
}
