/*
 * check_endpoint.c - the metrics endpoint (src/metrics/endpoint.c,
 * listen.c) on this host's real loopback, driven as watch drives it (its
 * descriptors polled, the ready ones handed back) with a clock the test
 * sets: GET and HEAD answered with the text render makes, each bad
 * request with its code and closed, a client too slow to ask (408) or to
 * read closed at its time and not before, the oldest waiting client
 * closed for a new one past the limit, one text for the requests of
 * NF_ENDPOINT_FRESH_MS; and the addresses "[ADDR:]PORT" read.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "metrics/nf_endpoint.h"
#include "../unit/unit.h"

static int renders;
static size_t render_size = 100;

/* The text: render_size bytes of "x", then a newline. */
static char *render(void *arg, size_t *len)
{
	char *t = malloc(render_size + 1);

	(void)arg;
	renders++;
	memset(t, 'x', render_size);
	t[render_size - 1] = '\n';
	t[render_size] = '\0';
	*len = render_size;
	return t;
}

static struct nf_endpoint *open_ep(void)
{
	struct sockaddr_storage ss;
	char err[NF_ENDPOINT_ERR_MAX];
	socklen_t len;
	struct nf_endpoint *e;

	ck_assert_int_eq(nf_endpoint_parse("127.0.0.1:0", &ss, &len), 0);
	e = nf_endpoint_open((struct sockaddr *)&ss, len, err);
	ck_assert_msg(e != NULL, "%s", err);
	renders = 0;
	render_size = 100;
	return e;
}

/* Polls e once (up to wait_ms) and serves it at now_ms. */
static void pump(struct nf_endpoint *e, int wait_ms, uint64_t now_ms)
{
	struct pollfd p[NF_ENDPOINT_POLLFDS];
	size_t n = nf_endpoint_pollfds(e, p);

	ck_assert_int_ge(poll(p, n, wait_ms), 0);
	nf_endpoint_serve(e, p, n, now_ms, render, NULL);
}

/* A client connected to e, its reads timing out after a second. */
static int client(struct nf_endpoint *e)
{
	struct timeval tv = { 1, 0 };
	struct sockaddr_storage ss;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_eq(nf_endpoint_addr(e, &ss), 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&ss, sizeof(struct sockaddr_in)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Sends s, pumps e at now_ms until the client's socket has the whole
 * answer (the server closed), into buf; returns its length (-1: none
 * came within 20 pumps). */
static ssize_t ask(struct nf_endpoint *e, int fd, const char *s, size_t slen, uint64_t now_ms,
		   char *buf, size_t cap)
{
	size_t got = 0;

	ck_assert_int_eq(send(fd, s, slen, MSG_NOSIGNAL), (ssize_t)slen);
	for (int i = 0; i < 20; i++) {
		ssize_t n;

		pump(e, 20, now_ms);
		while ((n = recv(fd, buf + got, cap - 1 - got, MSG_DONTWAIT)) > 0)
			got += (size_t)n;
		if (n == 0) {
			buf[got] = '\0';
			return (ssize_t)got;
		}
	}
	return -1;
}

/* Is fd closed by its peer (EOF or a reset), within a second? */
static int closed(int fd)
{
	char b[64];
	ssize_t n;

	while ((n = recv(fd, b, sizeof(b), 0)) > 0)
		;
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

START_TEST(test_endpoint_get)
{
	struct nf_endpoint *e = open_ep();
	int fd = client(e);
	char buf[4096];
	struct nf_endpoint_stats st;
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	ssize_t n = ask(e, fd, req, sizeof(req) - 1, 1000, buf, sizeof(buf));

	ck_assert_int_gt(n, 100);
	ck_assert_msg(strncmp(buf, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s", buf);
	ck_assert_ptr_nonnull(strstr(buf, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
	ck_assert_ptr_nonnull(strstr(buf, "Content-Length: 100\r\n"));
	ck_assert_uint_eq(strlen(strstr(buf, "\r\n\r\n") + 4), 100);
	nf_endpoint_stats(e, &st);
	ck_assert_uint_eq(st.codes[0], 1);
	ck_assert_uint_eq(st.clients, 0);
	close(fd);
	nf_endpoint_close(e);
}
END_TEST

START_TEST(test_endpoint_head)
{
	struct nf_endpoint *e = open_ep();
	int fd = client(e);
	char buf[4096];
	static const char req[] = "HEAD /metrics HTTP/1.0\r\n\r\n";
	ssize_t n = ask(e, fd, req, sizeof(req) - 1, 1000, buf, sizeof(buf));

	ck_assert_int_gt(n, 0);
	ck_assert_ptr_nonnull(strstr(buf, "Content-Length: 100\r\n"));
	ck_assert_str_eq(strstr(buf, "\r\n\r\n"), "\r\n\r\n");
	close(fd);
	nf_endpoint_close(e);
}
END_TEST

/* Each bad request: its code, a body saying it, the connection closed. */
static const struct {
	const char *req;
	size_t len;
	const char *status;
	int idx; /* in nf_endpoint_stats' codes */
} bad[] = {
	{ "\x16\x03\x01\x02\x00\x01\x00", 7, "HTTP/1.1 400 Bad Request\r\n", 1 },
	{ "GET /metrics HTTP/1.1 junk\r\n", 28, "HTTP/1.1 400 Bad Request\r\n", 1 },
	{ "GET /admin HTTP/1.1\r\n\r\n", 23, "HTTP/1.1 404 Not Found\r\n", 2 },
	{ "DELETE /metrics HTTP/1.1\r\n\r\n", 28, "HTTP/1.1 405 Method Not Allowed\r\n", 3 },
};

START_TEST(test_endpoint_bad_requests)
{
	struct nf_endpoint *e = open_ep();
	int fd = client(e);
	char buf[4096];
	struct nf_endpoint_stats st;
	ssize_t n = ask(e, fd, bad[_i].req, bad[_i].len, 1000, buf, sizeof(buf));

	ck_assert_int_gt(n, 0);
	ck_assert_msg(strncmp(buf, bad[_i].status, strlen(bad[_i].status)) == 0, "%s", buf);
	ck_assert_ptr_nonnull(strstr(buf, "Connection: close\r\n"));
	if (_i == 3)
		ck_assert_ptr_nonnull(strstr(buf, "Allow: GET, HEAD\r\n"));
	nf_endpoint_stats(e, &st);
	ck_assert_uint_eq(st.codes[bad[_i].idx], 1);
	ck_assert_int_eq(renders, 0);
	close(fd);
	nf_endpoint_close(e);
}
END_TEST

/* A head that does not end within NF_ENDPOINT_REQ_MAX: 431. */
START_TEST(test_endpoint_too_large)
{
	struct nf_endpoint *e = open_ep();
	int fd = client(e);
	static char req[NF_ENDPOINT_REQ_MAX + 100], buf[4096];
	ssize_t n;

	memcpy(req, "GET /metrics HTTP/1.1\r\n", 23);
	for (size_t i = 23; i < sizeof(req); i++)
		req[i] = i % 80 == 79 ? '\n' : 'h';
	n = ask(e, fd, req, sizeof(req), 1000, buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	ck_assert_msg(strncmp(buf, "HTTP/1.1 431 ", 13) == 0, "%s", buf);
	close(fd);
	nf_endpoint_close(e);
}
END_TEST

/* A client that never finishes its head: open until NF_ENDPOINT_READ_MS,
 * then 408 and closed. */
START_TEST(test_endpoint_read_timeout)
{
	struct nf_endpoint *e = open_ep();
	int fd = client(e);
	struct nf_endpoint_stats st;
	char buf[256];
	ssize_t n;

	pump(e, 200, 1000); /* accepted at 1000 */
	send(fd, "GET /met", 8, 0);
	pump(e, 200, 1000 + NF_ENDPOINT_READ_MS - 1);
	nf_endpoint_stats(e, &st);
	ck_assert_uint_eq(st.clients, 1);
	ck_assert_int_lt(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), 0);
	pump(e, 0, 1000 + NF_ENDPOINT_READ_MS);
	nf_endpoint_stats(e, &st);
	ck_assert_uint_eq(st.clients, 0);
	ck_assert_uint_eq(st.timed_out, 1);
	ck_assert_uint_eq(st.codes[4], 1);
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	ck_assert_msg(strncmp(buf, "HTTP/1.1 408 ", 13) == 0, "%s", buf);
	ck_assert(closed(fd));
	close(fd);
	nf_endpoint_close(e);
}
END_TEST

/* A client that asks for a large text and never reads it: closed at
 * NF_ENDPOINT_WRITE_MS after its answer began, not before. */
START_TEST(test_endpoint_write_timeout)
{
	struct nf_endpoint *e = open_ep();
	int fd = client(e), small = 4096;
	struct nf_endpoint_stats st;
	static const char req[] = "GET /metrics HTTP/1.1\r\n\r\n";

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	render_size = 8 << 20; /* more than the sockets hold */
	send(fd, req, sizeof(req) - 1, 0);
	pump(e, 200, 1000);
	pump(e, 200, 1000);
	nf_endpoint_stats(e, &st);
	ck_assert_uint_eq(st.clients, 1);
	pump(e, 50, 1000 + NF_ENDPOINT_WRITE_MS - 1);
	nf_endpoint_stats(e, &st);
	ck_assert_uint_eq(st.clients, 1);
	pump(e, 0, 1000 + NF_ENDPOINT_WRITE_MS);
	nf_endpoint_stats(e, &st);
	ck_assert_uint_eq(st.clients, 0);
	ck_assert_uint_eq(st.timed_out, 1);
	close(fd);
	nf_endpoint_close(e);
}
END_TEST

/* Past NF_ENDPOINT_CLIENTS waiting clients, each new one closes the
 * oldest; the newest are served. */
START_TEST(test_endpoint_limit_drops_oldest)
{
	struct nf_endpoint *e = open_ep();
	int fds[NF_ENDPOINT_CLIENTS + 3];
	struct nf_endpoint_stats st;
	static const char req[] = "GET /metrics HTTP/1.1\r\n\r\n";
	char buf[4096];

	for (int i = 0; i < NF_ENDPOINT_CLIENTS + 3; i++) {
		fds[i] = client(e);
		pump(e, 100, 1000 + (uint64_t)i);
	}
	nf_endpoint_stats(e, &st);
	ck_assert_uint_eq(st.clients, NF_ENDPOINT_CLIENTS);
	ck_assert_uint_eq(st.evicted, 3);
	for (int i = 0; i < 3; i++)
		ck_assert_msg(closed(fds[i]), "client %d not closed", i);
	ck_assert_int_gt(ask(e, fds[NF_ENDPOINT_CLIENTS + 2], req, sizeof(req) - 1, 1100, buf,
			     sizeof(buf)), 0);
	ck_assert_msg(strncmp(buf, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s", buf);
	for (int i = 0; i < NF_ENDPOINT_CLIENTS + 3; i++)
		close(fds[i]);
	nf_endpoint_close(e);
}
END_TEST

/* Requests within NF_ENDPOINT_FRESH_MS share one text; a later one
 * gets a new one. */
START_TEST(test_endpoint_fresh_text_shared)
{
	struct nf_endpoint *e = open_ep();
	static const char req[] = "GET /metrics HTTP/1.1\r\n\r\n";
	char buf[4096];
	int fd;

	for (int i = 0; i < 3; i++) {
		fd = client(e);
		ck_assert_int_gt(ask(e, fd, req, sizeof(req) - 1, 1000 + (uint64_t)i * 10, buf,
				     sizeof(buf)), 0);
		close(fd);
	}
	ck_assert_int_eq(renders, 1);
	fd = client(e);
	ck_assert_int_gt(ask(e, fd, req, sizeof(req) - 1, 1000 + NF_ENDPOINT_FRESH_MS, buf,
			     sizeof(buf)), 0);
	close(fd);
	ck_assert_int_eq(renders, 2);
	nf_endpoint_close(e);
}
END_TEST

static const struct {
	const char *spec;
	int ok, family;
	const char *addr;
	int port;
} specs[] = {
	{ "9477", 1, AF_INET, "127.0.0.1", 9477 },
	{ "0", 1, AF_INET, "127.0.0.1", 0 },
	{ "0.0.0.0:80", 1, AF_INET, "0.0.0.0", 80 },
	{ "10.1.2.3:65535", 1, AF_INET, "10.1.2.3", 65535 },
	{ "[::1]:9477", 1, AF_INET6, "::1", 9477 },
	{ "[::]:1", 1, AF_INET6, "::", 1 },
	{ "", 0, 0, NULL, 0 },
	{ "abc", 0, 0, NULL, 0 },
	{ "65536", 0, 0, NULL, 0 },
	{ "-1", 0, 0, NULL, 0 },
	{ "1.2.3.4", 0, 0, NULL, 0 },
	{ "1.2.3.4:", 0, 0, NULL, 0 },
	{ ":80", 0, 0, NULL, 0 },
	{ "::1:80", 0, 0, NULL, 0 },
	{ "[::1]", 0, 0, NULL, 0 },
	{ "[::1]80", 0, 0, NULL, 0 },
	{ "localhost:80", 0, 0, NULL, 0 },
	{ "1.2.3.4:80x", 0, 0, NULL, 0 },
};

START_TEST(test_endpoint_parse)
{
	struct sockaddr_storage ss;
	char a[INET6_ADDRSTRLEN];
	socklen_t len;
	int rc = nf_endpoint_parse(specs[_i].spec, &ss, &len);

	ck_assert_msg(rc == (specs[_i].ok ? 0 : -EINVAL), "'%s': %d", specs[_i].spec, rc);
	if (!specs[_i].ok)
		return;
	ck_assert_int_eq(ss.ss_family, specs[_i].family);
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		ck_assert_uint_eq(len, sizeof(*in));
		ck_assert_int_eq(ntohs(in->sin_port), specs[_i].port);
		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		ck_assert_uint_eq(len, sizeof(*in6));
		ck_assert_int_eq(ntohs(in6->sin6_port), specs[_i].port);
		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
	}
	ck_assert_str_eq(a, specs[_i].addr);
}
END_TEST

/* An address in use: NULL and a line saying so. */
START_TEST(test_endpoint_address_in_use)
{
	struct nf_endpoint *e = open_ep(), *f;
	struct sockaddr_storage ss;
	char err[NF_ENDPOINT_ERR_MAX];

	ck_assert_int_eq(nf_endpoint_addr(e, &ss), 0);
	f = nf_endpoint_open((struct sockaddr *)&ss, sizeof(struct sockaddr_in), err);
	ck_assert_ptr_null(f);
	ck_assert_int_eq(errno, EADDRINUSE);
	ck_assert_msg(strstr(err, "another program listens there") != NULL, "%s", err);
	nf_endpoint_close(e);
}
END_TEST

static Suite *endpoint_suite(void)
{
	Suite *s = suite_create("endpoint");
	TCase *tc = tcase_create("clients");
	TCase *ta = tcase_create("address");

	unit_add(tc, test_endpoint_get);
	unit_add(tc, test_endpoint_head);
	unit_add_loop(tc, test_endpoint_bad_requests, 0, sizeof(bad) / sizeof(bad[0]));
	unit_add(tc, test_endpoint_too_large);
	unit_add(tc, test_endpoint_read_timeout);
	unit_add(tc, test_endpoint_write_timeout);
	unit_add(tc, test_endpoint_limit_drops_oldest);
	unit_add(tc, test_endpoint_fresh_text_shared);
	unit_add_loop(ta, test_endpoint_parse, 0, sizeof(specs) / sizeof(specs[0]));
	unit_add(ta, test_endpoint_address_in_use);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, ta);
	return s;
}

int main(void)
{
	return unit_run(srunner_create(endpoint_suite()), "check_endpoint");
}
