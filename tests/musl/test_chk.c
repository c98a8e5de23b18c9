/*
 * test_chk.c - the library's fortified entry points where libc has none
 * (musl): __read_chk, __recv_chk and __recvfrom_chk, found with dlsym as a
 * program could find them, must flush what coalesce holds and read as the
 * plain call does, and abort on a length larger than the buffer, as
 * glibc's do. (With glibc they go to glibc's own: the test passes too.)
 *
 * Under a flush=1s rule, like tests/coalesce/test_read:
 *   test_chk read|recv|recvfrom    held request, the reply through the _chk
 *                                  call: median under 5 ms
 *   test_chk read-overflow|recv-overflow|recvfrom-overflow
 *                                  n > buflen: the process dies of SIGABRT
 */
#include <dlfcn.h>

#include "../common/peer.h"

typedef ssize_t (*read_chk_fn)(int, void *, size_t, size_t);
typedef ssize_t (*recv_chk_fn)(int, void *, size_t, size_t, int);
typedef ssize_t (*recvfrom_chk_fn)(int, void *, size_t, size_t, int, struct sockaddr *,
				   socklen_t *);

/* The library's function of that name: musl has none of its own. */
static void *chk(const char *name)
{
	void *fn = dlsym(RTLD_DEFAULT, name);

	CHECK(fn != NULL, "%s not found: is the library preloaded?", name);
	return fn;
}

static void reply_read(int fd, char *buf, size_t cap)
{
	read_chk_fn f = (read_chk_fn)chk("__read_chk");
	size_t have = 0;

	while (!ct_line_done(buf, have))
		have = ct_got(f(fd, buf + have, cap - 1 - have, cap - have), buf, have, cap,
			      "__read_chk");
}

static void reply_recv(int fd, char *buf, size_t cap)
{
	recv_chk_fn f = (recv_chk_fn)chk("__recv_chk");
	size_t have = 0;

	while (!ct_line_done(buf, have))
		have = ct_got(f(fd, buf + have, cap - 1 - have, cap - have, 0), buf, have, cap,
			      "__recv_chk");
}

static void reply_recvfrom(int fd, char *buf, size_t cap)
{
	recvfrom_chk_fn f = (recvfrom_chk_fn)chk("__recvfrom_chk");
	size_t have = 0;

	while (!ct_line_done(buf, have)) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);

		have = ct_got(f(fd, buf + have, cap - 1 - have, cap - have, 0,
				(struct sockaddr *)&ss, &len),
			      buf, have, cap, "__recvfrom_chk");
	}
}

static const ct_reply_fn replies[] = { reply_read, reply_recv, reply_recvfrom };

static void run(int which)
{
	ct_echo_check(replies[which], 0);
}

/* A child asks for 8 bytes into a buffer of 4: it must die of SIGABRT
 * before reading anything. */
static void run_overflow(int which)
{
	char buf[4];
	int sv[2], st;
	pid_t pid;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
	CHECK(write(sv[1], "12345678", 8) == 8, "write");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		if (which == 0)
			((read_chk_fn)chk("__read_chk"))(sv[0], buf, 8, sizeof(buf));
		else if (which == 1)
			((recv_chk_fn)chk("__recv_chk"))(sv[0], buf, 8, sizeof(buf), 0);
		else
			((recvfrom_chk_fn)chk("__recvfrom_chk"))(sv[0], buf, 8, sizeof(buf), 0,
								 NULL, NULL);
		syscall(SYS_exit_group, 0); /* it returned: not caught */
	}
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
	      "a length of 8 into a buffer of 4 was not stopped (status 0x%x)", st);
	CHECK(recv(sv[0], buf, sizeof(buf), MSG_DONTWAIT) == 4, "the child read the bytes");
	close(sv[0]);
	close(sv[1]);
}

static const struct ct_case cases[] = {
	{ "read", run, 0 },
	{ "recv", run, 1 },
	{ "recvfrom", run, 2 },
	{ "read-overflow", run_overflow, 0 },
	{ "recv-overflow", run_overflow, 1 },
	{ "recvfrom-overflow", run_overflow, 2 },
};

int main(int argc, char **argv)
{
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
