/*
 * endpoint.c - the metrics endpoint's clients (nf_endpoint.h): each in a
 * fixed slot with its request's buffer, read and answered without ever
 * blocking, from the caller's loop. An answer is its head (a few hundred
 * bytes, kept in the slot) and, for GET, the exposition text, shared by
 * the clients that asked for it within NF_ENDPOINT_FRESH_MS (so a flood
 * of requests does not make a text each) and freed by the last of them.
 * Every answer closes its connection.
 */
#include "metrics_int.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define HEAD_MAX 320
#define ACCEPTS 16          /* connections taken at a time: the capture waits meanwhile */
#define PAUSE_MS 100        /* no accepting after EMFILE and the like, this long */

/* An exposition text and the clients sending it. */
struct snap {
	unsigned refs;
	uint64_t made_ms;
	size_t len;
	char *text;
};

enum { C_FREE = 0, C_READ, C_WRITE };

struct client {
	int fd;
	int state;
	uint64_t since_ms;  /* connected (C_READ); its answer begun (C_WRITE) */
	uint64_t seq;       /* order of connection: the oldest is closed first */
	size_t got;         /* bytes of req */
	size_t head_len, body_len, sent;
	struct snap *body;  /* NULL: the head is the whole answer */
	char head[HEAD_MAX];
	char req[NF_ENDPOINT_REQ_MAX];
};

struct nf_endpoint {
	int fd;
	uint64_t seq;
	uint64_t paused_until_ms;
	struct snap *fresh;
	struct nf_endpoint_stats st;
	struct client c[NF_ENDPOINT_CLIENTS];
};

static const int codes[] = NF_METRICS_CODES;

struct nf_endpoint *nf_endpoint_open(const struct sockaddr *sa, socklen_t len,
				     char err[NF_ENDPOINT_ERR_MAX])
{
	struct nf_endpoint *e = calloc(1, sizeof(*e));
	int fd;

	if (!e) {
		snprintf(err, NF_ENDPOINT_ERR_MAX, "the metrics endpoint: out of memory");
		errno = ENOMEM;
		return NULL;
	}
	if ((fd = nf_endpoint_listen(sa, len, err)) < 0) {
		int saved = errno;

		free(e);
		errno = saved;
		return NULL;
	}
	e->fd = fd;
	return e;
}

static void snap_put(struct snap *s)
{
	if (s && --s->refs == 0) {
		free(s->text);
		free(s);
	}
}

static void count_code(struct nf_endpoint *e, int code)
{
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (codes[i] == code)
			e->st.codes[i]++;
}

/* Closes c, reading first what it sent and we did not read (so the
 * kernel does not answer our last bytes with a reset), as far as it
 * is there now. */
static void drop(struct nf_endpoint *e, struct client *c)
{
	char sink[512];

	shutdown(c->fd, SHUT_WR);
	for (int i = 0; i < 16 && recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
		;
	close(c->fd);
	snap_put(c->body);
	c->body = NULL;
	c->state = C_FREE;
	c->fd = -1;
	e->st.clients--;
}

/* Sends what is left of c's answer; closes c once it is all sent, or on
 * an error. */
static void send_more(struct nf_endpoint *e, struct client *c)
{
	while (c->sent < c->head_len + c->body_len) {
		struct iovec v[2];
		struct msghdr msg = { .msg_iov = v };
		ssize_t n;

		if (c->sent < c->head_len) {
			v[msg.msg_iovlen++] = (struct iovec){ c->head + c->sent, c->head_len - c->sent };
			if (c->body_len)
				v[msg.msg_iovlen++] = (struct iovec){ c->body->text, c->body_len };
		} else {
			size_t off = c->sent - c->head_len;

			v[msg.msg_iovlen++] = (struct iovec){ c->body->text + off, c->body_len - off };
		}
		n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0)
			break;
		c->sent += (size_t)n;
	}
	drop(e, c);
}

static const char *reason(int code)
{
	switch (code) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	default: return "Internal Server Error";
	}
}

/* An answer of code with no exposition: its head and a line saying why. */
static void error_head(struct client *c, int code)
{
	char line[64];
	int n = snprintf(line, sizeof(line), "%d %s\n", code, reason(code));

	c->head_len = (size_t)snprintf(c->head, sizeof(c->head),
				       "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
				       "Content-Length: %d\r\n%sConnection: close\r\n\r\n%s",
				       code, reason(code), n, code == 405 ? "Allow: GET, HEAD\r\n" : "",
				       line);
	c->body_len = 0;
}

/* The text to send: the fresh one, or a new one from render. NULL if
 * render made none. The caller holds a reference. */
static struct snap *text(struct nf_endpoint *e, uint64_t now_ms, nf_endpoint_render_fn *render,
			 void *arg)
{
	struct snap *s;

	if (e->fresh && now_ms - e->fresh->made_ms < NF_ENDPOINT_FRESH_MS) {
		e->fresh->refs++;
		return e->fresh;
	}
	if (!(s = calloc(1, sizeof(*s))))
		return NULL;
	if (!(s->text = render(arg, &s->len))) {
		free(s);
		return NULL;
	}
	s->made_ms = now_ms;
	s->refs = 2; /* the caller's and e->fresh's */
	snap_put(e->fresh);
	e->fresh = s;
	return s;
}

/* What a GET or HEAD gets: 200 and the text (HEAD: its head only), or 500. */
static void metrics_head(struct nf_endpoint *e, struct client *c, int head_only, uint64_t now_ms,
			 nf_endpoint_render_fn *render, void *arg)
{
	if (!(c->body = text(e, now_ms, render, arg))) {
		error_head(c, 500);
		return;
	}
	c->head_len = (size_t)snprintf(c->head, sizeof(c->head),
				       "HTTP/1.1 200 OK\r\n"
				       "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
				       "Content-Length: %zu\r\nConnection: close\r\n\r\n",
				       c->body->len);
	c->body_len = head_only ? 0 : c->body->len;
	count_code(e, 200);
}

/* Answers c's request r and starts sending. */
static void answer(struct nf_endpoint *e, struct client *c, enum nf_req r, uint64_t now_ms,
		   nf_endpoint_render_fn *render, void *arg)
{
	static const int code_of[] = {
		[NF_REQ_BAD] = 400, [NF_REQ_NOT_FOUND] = 404, [NF_REQ_METHOD] = 405,
		[NF_REQ_TOO_LARGE] = 431,
	};

	if (r == NF_REQ_GET || r == NF_REQ_HEAD) {
		metrics_head(e, c, r == NF_REQ_HEAD, now_ms, render, arg);
	} else {
		error_head(c, code_of[r]);
		count_code(e, code_of[r]);
	}
	c->state = C_WRITE;
	c->since_ms = now_ms;
	c->sent = 0;
	send_more(e, c);
}

/* Reads what c sent; answers once its head is whole (or bad). */
static void read_more(struct nf_endpoint *e, struct client *c, uint64_t now_ms,
		      nf_endpoint_render_fn *render, void *arg)
{
	ssize_t n = recv(c->fd, c->req + c->got, sizeof(c->req) - c->got, MSG_DONTWAIT);
	enum nf_req r;

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) { /* gone, or an error: no one to answer */
		drop(e, c);
		return;
	}
	c->got += (size_t)n;
	if ((r = nf_req_parse(c->req, c->got, sizeof(c->req))) != NF_REQ_MORE)
		answer(e, c, r, now_ms, render, arg);
}

/* The slot for a new client: a free one, else the oldest one still
 * sending its request, closed (NULL: every one is being answered). */
static struct client *slot(struct nf_endpoint *e)
{
	struct client *old = NULL;

	for (int i = 0; i < NF_ENDPOINT_CLIENTS; i++) {
		struct client *c = &e->c[i];

		if (c->state == C_FREE)
			return c;
		if (c->state == C_READ && (!old || c->seq < old->seq))
			old = c;
	}
	if (old) {
		drop(e, old);
		e->st.evicted++;
	}
	return old;
}

/* Takes the connections waiting, ACCEPTS at most. */
static void accept_some(struct nf_endpoint *e, uint64_t now_ms)
{
	for (int i = 0; i < ACCEPTS; i++) {
		int fd = accept4(e->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct client *c;

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED)
				e->paused_until_ms = now_ms + PAUSE_MS; /* EMFILE...: poll it later */
			return;
		}
		if (!(c = slot(e))) {
			close(fd);
			e->st.evicted++;
			continue;
		}
		memset(c, 0, offsetof(struct client, head));
		c->fd = fd;
		c->state = C_READ;
		c->since_ms = now_ms;
		c->seq = ++e->seq;
		e->st.clients++;
	}
}

size_t nf_endpoint_pollfds(const struct nf_endpoint *e, struct pollfd *p)
{
	size_t n = 0;

	if (!e->paused_until_ms) /* after EMFILE, accept is tried again at the time, not polled */
		p[n++] = (struct pollfd){ .fd = e->fd, .events = POLLIN };
	for (int i = 0; i < NF_ENDPOINT_CLIENTS; i++)
		if (e->c[i].state != C_FREE)
			p[n++] = (struct pollfd){ .fd = e->c[i].fd,
						  .events = e->c[i].state == C_READ ? POLLIN : POLLOUT };
	return n;
}

static struct client *client_of(struct nf_endpoint *e, int fd)
{
	for (int i = 0; i < NF_ENDPOINT_CLIENTS; i++)
		if (e->c[i].state != C_FREE && e->c[i].fd == fd)
			return &e->c[i];
	return NULL;
}

/* Closes the clients past their time: one still sending its request
 * gets 408 first (if its socket takes it now). */
static void expire(struct nf_endpoint *e, uint64_t now_ms)
{
	for (int i = 0; i < NF_ENDPOINT_CLIENTS; i++) {
		struct client *c = &e->c[i];

		if (c->state == C_READ && now_ms - c->since_ms >= NF_ENDPOINT_READ_MS) {
			error_head(c, 408);
			send(c->fd, c->head, c->head_len, MSG_NOSIGNAL | MSG_DONTWAIT);
			count_code(e, 408);
		} else if (!(c->state == C_WRITE && now_ms - c->since_ms >= NF_ENDPOINT_WRITE_MS)) {
			continue;
		}
		drop(e, c);
		e->st.timed_out++;
	}
}

void nf_endpoint_serve(struct nf_endpoint *e, const struct pollfd *p, size_t n, uint64_t now_ms,
		       nf_endpoint_render_fn *render, void *arg)
{
	int listener_ready = 0;

	for (size_t i = 0; i < n; i++) {
		struct client *c;

		if (!p[i].revents)
			continue;
		if (p[i].fd == e->fd) {
			listener_ready = 1;
		} else if ((c = client_of(e, p[i].fd))) {
			if (c->state == C_READ)
				read_more(e, c, now_ms, render, arg);
			else
				send_more(e, c);
		}
	}
	if ((listener_ready || e->paused_until_ms) && now_ms >= e->paused_until_ms) {
		e->paused_until_ms = 0;
		accept_some(e, now_ms);
	}
	expire(e, now_ms);
}

void nf_endpoint_stats(const struct nf_endpoint *e, struct nf_endpoint_stats *s)
{
	*s = e->st;
}

int nf_endpoint_addr(const struct nf_endpoint *e, struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);

	return getsockname(e->fd, (struct sockaddr *)ss, &len) < 0 ? -errno : 0;
}

void nf_endpoint_close(struct nf_endpoint *e)
{
	if (!e)
		return;
	for (int i = 0; i < NF_ENDPOINT_CLIENTS; i++)
		if (e->c[i].state != C_FREE)
			drop(e, &e->c[i]);
	snap_put(e->fresh);
	close(e->fd);
	free(e);
}
