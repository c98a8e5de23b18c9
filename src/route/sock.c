/*
 * sock.c - the rtnetlink socket of a network namespace (nf_route.h): the
 * socket made in the calling thread's namespace (and keeping it), one
 * request sent and its answer read, each route of it handed on.
 */
#include "route/nf_route.h"

#include <errno.h>
#include <linux/netlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RECV_MAX 32768 /* one datagram of a dump */

int nf_route_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int one = 1, fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	/* the kernel's reason for a refusal comes with its error; not needed, but strict
	 * checking makes a dump refuse what it would otherwise ignore */
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

/* What one datagram said: 1 the answer is whole, 0 more to read, or the
 * kernel's error. */
static int one_datagram(const uint8_t *buf, size_t n, uint32_t seq,
			int (*fn)(const struct nf_route *, void *), void *arg, int *stop,
			int *unread, struct nf_route *r)
{
	while (n >= NLMSG_HDRLEN) {
		struct nlmsghdr h;
		struct nlmsgerr e;

		memcpy(&h, buf, sizeof(h));
		if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > n)
			return -EBADMSG;
		if (h.nlmsg_seq != seq) {
			; /* an answer to another request: not ours */
		} else if (h.nlmsg_type == NLMSG_DONE) {
			return 1;
		} else if (h.nlmsg_type == NLMSG_ERROR) {
			if (h.nlmsg_len < NLMSG_LENGTH(sizeof(e)))
				return -EBADMSG;
			memcpy(&e, buf + NLMSG_HDRLEN, sizeof(e));
			return e.error ? e.error : 1;
		} else if (h.nlmsg_type == RTM_NEWROUTE && !*stop) {
			int p = nf_route_parse(buf, h.nlmsg_len, r);

			if (p == 0) {
				*stop = fn ? fn(r, arg) : 0;
				if (*stop && !(h.nlmsg_flags & NLM_F_MULTI))
					return 1;
			} else if (!*unread) {
				*unread = p; /* said once the answer is read out */
			}
		}
		if (!(h.nlmsg_flags & NLM_F_MULTI) && h.nlmsg_type == RTM_NEWROUTE && h.nlmsg_seq == seq)
			return 1;
		n -= NLMSG_ALIGN(h.nlmsg_len) < n ? NLMSG_ALIGN(h.nlmsg_len) : n;
		buf += NLMSG_ALIGN(h.nlmsg_len);
	}
	return 0;
}

int nf_route_talk(int fd, const void *req, size_t len,
		  int (*fn)(const struct nf_route *r, void *arg), void *arg)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	uint8_t *buf = malloc(RECV_MAX);
	struct nf_route *r = malloc(sizeof(*r));
	uint32_t seq;
	int rc = 0, stop = 0, unread = 0;

	memcpy(&seq, (const uint8_t *)req + offsetof(struct nlmsghdr, nlmsg_seq), sizeof(seq));
	if (!buf || !r)
		rc = -ENOMEM;
	else if (sendto(fd, req, len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		rc = -errno;
	while (rc == 0) {
		ssize_t n = recv(fd, buf, RECV_MAX, MSG_TRUNC); /* n: the datagram's whole length */

		if (n < 0 && errno == EINTR)
			continue;
		if (n > RECV_MAX)
			rc = -EMSGSIZE; /* cut: its routes not all read */
		else
			rc = n < 0 ? -errno : one_datagram(buf, (size_t)n, seq, fn, arg, &stop, &unread, r);
	}
	free(buf);
	free(r);
	if (rc < 0)
		return rc;
	return stop ? stop : unread; /* a route not read (too big, malformed): not silently none */
}
