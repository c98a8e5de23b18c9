/*
 * nf_endpoint.h - the HTTP endpoint of `naglefix watch --metrics`
 * (src/metrics/endpoint.c, the listening socket's address listen.c):
 * GET /metrics answered with the exposition text, inside the caller's
 * own loop (it polls the endpoint's descriptors beside its own, then
 * hands the ready ones back): no thread, nothing blocks.
 *
 * A root service's weak point it must not be: a request head larger than
 * NF_ENDPOINT_REQ_MAX is answered 431, one that is not HTTP/1.x 400 (as
 * soon as its first bytes show it), another path 404, another method
 * 405; a client that has not sent its whole head within
 * NF_ENDPOINT_READ_MS gets 408 and is closed, one that has not taken its
 * whole answer within NF_ENDPOINT_WRITE_MS is closed; at most
 * NF_ENDPOINT_CLIENTS at once: a new one past it closes the oldest still
 * sending its request (or is itself closed, if all are being answered).
 * Memory is the clients' fixed buffers and the answers being sent.
 */
#ifndef NF_ENDPOINT_H
#define NF_ENDPOINT_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define NF_ENDPOINT_CLIENTS 16       /* clients at once */
#define NF_ENDPOINT_REQ_MAX 8192     /* bytes of a request head */
#define NF_ENDPOINT_READ_MS 5000     /* from its connection to its head's end */
#define NF_ENDPOINT_WRITE_MS 10000   /* from the head's end to the answer's */
#define NF_ENDPOINT_FRESH_MS 100     /* an exposition text this young is sent again, not remade */
#define NF_ENDPOINT_POLLFDS (1 + NF_ENDPOINT_CLIENTS)
#define NF_ENDPOINT_ERR_MAX 256

/* What the endpoint did, since it opened. */
struct nf_endpoint_stats {
	uint64_t codes[6];   /* answers by code, in NF_METRICS_CODES' order: 200 400 404 405 408 431 */
	uint64_t timed_out;  /* clients closed for their time */
	uint64_t evicted;    /* clients closed for the limit of clients */
	unsigned clients;    /* connected now */
};

/*
 * The exposition text, made when a request asks for it: a buffer of
 * *len bytes from malloc that the endpoint frees once sent, or NULL
 * (then the client gets 500 and is counted under no code).
 */
typedef char *nf_endpoint_render_fn(void *arg, size_t *len);

/*
 * "[ADDR:]PORT" into *ss and *sslen: PORT 0-65535 (0: one the kernel
 * chooses, nf_endpoint_addr says which); ADDR a numeric IPv4 address, or
 * an IPv6 one in brackets ("[::1]:9477"); no ADDR: 127.0.0.1 (loopback:
 * exposing the endpoint is a choice written out). 0, or -EINVAL.
 */
int nf_endpoint_parse(const char *spec, struct sockaddr_storage *ss, socklen_t *sslen);

struct nf_endpoint;

/* Listens on sa (non-blocking, close-on-exec). NULL with err holding one
 * line (the address in use, no right to bind it) and errno set. */
struct nf_endpoint *nf_endpoint_open(const struct sockaddr *sa, socklen_t len,
				     char err[NF_ENDPOINT_ERR_MAX]);

/* The descriptors to poll now, with their events, into p (room for
 * NF_ENDPOINT_POLLFDS). Returns their number. */
size_t nf_endpoint_pollfds(const struct nf_endpoint *e, struct pollfd *p);

/*
 * Serves what p[0..n-1] (as nf_endpoint_pollfds filled them, revents set
 * by poll) says is ready, then closes the clients past their time, at
 * now_ms (a monotonic clock's ms). render makes the text for a GET (arg
 * its argument). Call it at least every 100 ms or so: the timeouts are
 * only as exact as that.
 */
void nf_endpoint_serve(struct nf_endpoint *e, const struct pollfd *p, size_t n, uint64_t now_ms,
		       nf_endpoint_render_fn *render, void *arg);

/* What e did so far. */
void nf_endpoint_stats(const struct nf_endpoint *e, struct nf_endpoint_stats *s);

/* The address e listens on (its port, if 0 was asked), into *ss. 0, or -errno. */
int nf_endpoint_addr(const struct nf_endpoint *e, struct sockaddr_storage *ss);

/* Closes e and its clients. NULL is allowed. */
void nf_endpoint_close(struct nf_endpoint *e);

#endif
