/*
 * sockopt.c - setsockopt: the program's own TCP_NODELAY choice.
 */
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "hooks_int.h"
#include "actions/auto/nf_auto.h"
#include "actions/coalesce/nf_coalesce.h"
#include "actions/nf_track.h"
#include "core/nf_real.h"
#include "process/nf_init.h"

/* The program takes over its segmentation: buffered bytes go first (what
 * the kernel cannot take now keeps its place ahead of later writes). */
static void drain_coalesced(int fd)
{
	struct nf_conn *c = nf_track_coalescing(fd);

	if (c)
		nf_coalesce_push(c, fd);
}

/*
 * The program's call goes to the kernel as it is, so every check and errno
 * is the kernel's own; only when it succeeded on a socket whose rule
 * forces TCP_NODELAY is the option turned back on.
 */
int nf_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	int rc, begun;

	if (level == IPPROTO_TCP && (name == TCP_NODELAY || name == TCP_CORK))
		drain_coalesced(fd);
	begun = nf_auto_option_begin(fd, level, name, val, len);
	rc = nf_real.setsockopt(fd, level, name, val, len);
	nf_auto_option_end(fd, level, name, val, len, begun, rc);

	if (rc == 0 && level == IPPROTO_TCP && name == TCP_NODELAY)
		nf_track_nodelay_set(fd);
	return rc;
}

NF_EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	nf_init();
	return nf_setsockopt(fd, level, name, val, len);
}
