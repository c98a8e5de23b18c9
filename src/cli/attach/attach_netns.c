/*
 * attach_netns.c - the network namespace whose routes attach's quickack
 * rules change (attach_int.h): named by --netns (a name under /run/netns
 * or a path), by --pid (that process's own: its container's, its pod's),
 * or this command's own (the host's); held by a descriptor, so that a
 * PID reused meanwhile changes nothing; and the rtnetlink socket made
 * inside it (setns there, the socket, setns back: a socket keeps the
 * namespace it was made in).
 */
#include "attach_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/common/nf_cli.h"
#include "route/nf_route.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71 /* Linux 5.14's asm-generic/socket.h; musl's headers lack it */
#endif

/* The path of --netns ARG: a name under /run/netns, or a path. */
static void netns_path(const char *arg, char *buf, size_t len)
{
	if (strchr(arg, '/'))
		snprintf(buf, len, "%s", arg);
	else
		snprintf(buf, len, "/run/netns/%s", arg);
}

/* Opens ns->path as ns->fd, its inode in ns->ino. */
static int open_path(struct nf_attach_netns *ns)
{
	struct stat st;
	int fd = open(ns->path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	ns->fd = fd;
	ns->ino = (uint64_t)st.st_ino;
	return 0;
}

int nf_attach_netns_open(const char *cmd, const char *netns, const char *pid,
			 struct nf_attach_netns *ns)
{
	char q[NF_CLI_QUOTE_MAX];
	int rc;

	memset(ns, 0, sizeof(*ns));
	ns->fd = -1;
	if (netns) {
		netns_path(netns, ns->path, sizeof(ns->path));
		snprintf(ns->name, sizeof(ns->name), "%s", netns);
	} else if (pid) {
		snprintf(ns->path, sizeof(ns->path), "/proc/%s/ns/net", pid);
		snprintf(ns->name, sizeof(ns->name), "pid %s's", pid);
	} else {
		snprintf(ns->path, sizeof(ns->path), "/proc/self/ns/net");
		snprintf(ns->name, sizeof(ns->name), "host");
	}
	rc = open_path(ns);
	if (rc == 0 && nf_attach_netns_check(ns) == 0)
		return 0;
	nf_cli_warnx_as(cmd, 0, "network namespace %s (%s): %s", nf_cli_quote(ns->name, q),
		ns->path, rc == -ENOENT ? "no such namespace (ip netns list names them)"
		: rc < 0 ? strerror(-rc) : "not a network namespace");
	nf_attach_netns_close(ns);
	return rc == -EACCES || rc == -EPERM ? NF_ATTACH_EXIT_PERM : NF_ATTACH_EXIT_TARGET;
}

int nf_attach_netns_open_quiet(const char *path, struct nf_attach_netns *ns)
{
	int rc;

	memset(ns, 0, sizeof(*ns));
	snprintf(ns->path, sizeof(ns->path), "%s", path);
	rc = open_path(ns);
	if (rc == 0 && (rc = nf_attach_netns_check(ns)) < 0)
		nf_attach_netns_close(ns);
	return rc;
}

int nf_attach_netns_check(const struct nf_attach_netns *ns)
{
	int t = ioctl(ns->fd, NS_GET_NSTYPE);

	if (t < 0)
		return errno == ENOTTY ? -EINVAL : -errno; /* ENOTTY: no nsfs file at all */
	return t == CLONE_NEWNET ? 0 : -EINVAL;
}

void nf_attach_netns_close(struct nf_attach_netns *ns)
{
	if (ns->fd >= 0)
		close(ns->fd);
	ns->fd = -1;
}

/* The sockets made in ns: rtnetlink's into *nl, one for interface names into *ioc. */
static int sockets_in(int *nl, int *ioc)
{
	*nl = nf_route_open();
	if (*nl < 0)
		return *nl;
	*ioc = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (*ioc < 0)
		*ioc = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	return 0;
}

int nf_attach_netns_sockets(const struct nf_attach_netns *ns, int *nl, int *ioc)
{
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), rc;

	*nl = *ioc = -1;
	if (self < 0)
		return -errno;
	if (setns(ns->fd, CLONE_NEWNET) < 0) {
		rc = -errno;
		close(self);
		return rc;
	}
	rc = sockets_in(nl, ioc);
	if (setns(self, CLONE_NEWNET) < 0) {
		/* nothing more may be done from the wrong namespace */
		nf_cli_errx(1, "coming back from network namespace %s: %s", ns->name,
			    strerror(errno));
	}
	close(self);
	return rc;
}

uint64_t nf_attach_netns_cookie(int fd)
{
	uint64_t c = 0;
	socklen_t len = sizeof(c);

	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &c, &len) < 0 || len != sizeof(c))
		return 0;
	return c;
}

const char *nf_attach_netns_ifname(int ioc, const struct nf_route *r)
{
	static struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_ifindex = (int)nf_route_oif(r);
	if (!ifr.ifr_ifindex || ioc < 0 || ioctl(ioc, SIOCGIFNAME, &ifr) < 0)
		return NULL;
	return ifr.ifr_name;
}
