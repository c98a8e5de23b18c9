/*
 * quickack.c - the quickack action (see nf_quickack.h).
 *
 * Why both before and after: set before a blocking receive, the option
 * leaves the kernel's "ping-pong" mode, so the small segment the peer
 * sends next is acknowledged when it is read instead of 40 ms later; set
 * after the receive returned data, it sends at once an ACK the kernel had
 * scheduled as delayed (the program may not read again for a while).
 */
#include "nf_quickack.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "core/nf_real.h"

/* Set once a socket is decided quickack: the read hooks' one load. */
static atomic_int used;

static void set_quickack(int fd)
{
	int on = 1, saved = errno;

	nf_real.setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &on, sizeof(on));
	errno = saved;
}

/* Is fd a TCP socket whose rule is quickack? One load when none is. */
static int quickacking(int fd)
{
	struct nf_conn *c;

	if (!atomic_load_explicit(&used, memory_order_relaxed))
		return 0;
	c = nf_conn_get(fd);
	return c && nf_conn_kind(c) == NF_KIND_TCP &&
	       atomic_load_explicit(&c->action, memory_order_acquire) == NF_ACT_QUICKACK;
}

void nf_quickack_adopt(struct nf_conn *c, int fd)
{
	(void)c;
	atomic_store_explicit(&used, 1, memory_order_relaxed);
	set_quickack(fd);
}

void nf_quickack_before_read(int fd)
{
	set_quickack(fd);
}

void nf_quickack_after_read(int fd, ssize_t rc)
{
	if (rc > 0 && quickacking(fd))
		set_quickack(fd);
}
