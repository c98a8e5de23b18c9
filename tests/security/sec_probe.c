/*
 * sec_probe.c - what the library did to a connection, seen from a program
 * that links it (DT_NEEDED, not LD_PRELOAD: the loader ignores LD_PRELOAD
 * in a setuid program, but loads what the program itself needs).
 *
 * Connects a TCP socket to a listener of its own on 127.0.0.1 and prints
 *   secure=S nodelay=N euid=E uid=U
 *   lib=L
 * S: getauxval(AT_SECURE) (1 in a setuid or setcap program); N: the
 * connected socket's TCP_NODELAY, which nobody but the library sets; L:
 * the file that defines the socket() this program calls (the library's,
 * when it is loaded: so a 0 is the library declining, not missing).
 * run.sh runs copies of it setuid, setcap and plain.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <unistd.h>

static int fail(const char *what)
{
	perror(what);
	return 2;
}

int main(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int l, c, v = -1;
	Dl_info di;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) < 0)
		return fail("listen");
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) < 0)
		return fail("connect");
	len = sizeof(v);
	if (getsockopt(c, IPPROTO_TCP, TCP_NODELAY, &v, &len) < 0)
		return fail("getsockopt");
	printf("secure=%lu nodelay=%d euid=%d uid=%d\n", getauxval(AT_SECURE), v != 0,
	       (int)geteuid(), (int)getuid());
	if (dladdr((void *)socket, &di) && di.dli_fname)
		printf("lib=%s\n", strrchr(di.dli_fname, '/') ? strrchr(di.dli_fname, '/') + 1
							       : di.dli_fname);
	return 0;
}
