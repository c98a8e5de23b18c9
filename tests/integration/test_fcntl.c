/*
 * test_fcntl - fcntl, __fcntl and fcntl64 (musl has only fcntl) return
 * what libc returns, with libc's errno, for every kind of command: an
 * int argument (F_DUPFD, F_DUPFD_CLOEXEC, F_SETFD, F_SETFL, F_SETOWN,
 * F_SETSIG, F_SETPIPE_SZ, F_ADD_SEALS, F_SETLEASE, F_NOTIFY), a pointer
 * (F_GETLK, F_SETLK, F_SETLKW, F_OFD_*, F_GETOWN_EX, F_SETOWN_EX,
 * F_GET_RW_HINT, F_SET_RW_HINT; NULL and a bad one), none (F_GETFD,
 * F_GETFL, F_GETOWN, F_GETSIG, F_GETPIPE_SZ, F_GET_SEALS, F_GETLEASE), a
 * command that does not exist and a descriptor that does not.
 *
 *   test_fcntl [hooked]
 *
 * Prints one line per call: the entry point, the descriptor's kind (a
 * connected TCP socket, a file, a pipe, a sealable memfd, none), the
 * command, its return value, errno (set to EDOM before each call, so a
 * success that touched errno shows) and what a pointer argument came
 * back holding. run.sh runs it without the library and with it preloaded
 * (NAGLEFIX_MODE=nodelay: the socket is one the library tracks) and
 * compares the two outputs: they must be the same. "hooked" first checks
 * that the three names resolve to libnaglefix.so, so the comparison is
 * not of libc with itself.
 */
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "../common/harness.h"

#ifdef __GLIBC__
int __fcntl(int fd, int cmd, ...);
#endif
#ifndef F_SEAL_WRITE
#define F_SEAL_WRITE 0x0008
#endif
#ifndef F_GET_RW_HINT
#define F_GET_RW_HINT 1035
#define F_SET_RW_HINT 1036
#endif

typedef int (*fcntl_fn)(int, int, ...);

static const char *entry;      /* the name being tried */
static fcntl_fn call;          /* and its function */
static const char *kind;       /* the descriptor's kind */

/* Prints the call's line: rc (as "PID" where it is ours and pid says it
 * may be: F_GETOWN), errno, and the rest (a pointer's contents). */
static void say(const char *cmd, int rc, int err, const char *rest, int pid)
{
	if (pid && rc == getpid())
		printf("%s %s %s = PID", entry, kind, cmd);
	else
		printf("%s %s %s = %d", entry, kind, cmd, rc);
	printf(" errno %s%s%s\n", ct_errname(err), *rest ? " " : "", rest);
}

/* Runs cmd with an int argument, or with none (noarg). */
static int int_cmd(int fd, const char *name, int cmd, int arg, int noarg)
{
	int rc, err;

	errno = EDOM;
	rc = noarg ? call(fd, cmd) : call(fd, cmd, arg);
	err = errno;
	say(name, rc, err, "", cmd == F_GETOWN);
	return rc;
}

#define NOARG(fd, cmd) int_cmd(fd, #cmd, cmd, 0, 1)
#define INT(fd, cmd, arg) int_cmd(fd, #cmd "(" #arg ")", cmd, arg, 0)

/* A copy made by F_DUPFD*: its close-on-exec flag, then closed. */
static void dup_cmd(int fd, const char *name, int cmd, int min)
{
	char rest[32] = "";
	int rc, err;

	errno = EDOM;
	rc = call(fd, cmd, min);
	err = errno;
	if (rc >= 0) {
		snprintf(rest, sizeof(rest), "cloexec %d", (fcntl(rc, F_GETFD) & FD_CLOEXEC) != 0);
		close(rc);
	}
	say(name, rc, err, rest, 0);
}

#define DUP(fd, cmd, min) dup_cmd(fd, #cmd "(" #min ")", cmd, min)

/* A lock command on a struct flock: what it came back holding. */
static void lock_cmd(int fd, const char *name, int cmd, short type, struct flock *given)
{
	struct flock l = { .l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10 };
	char rest[96];
	int rc, err;

	errno = EDOM;
	rc = call(fd, cmd, given ? given : &l);
	err = errno;
	snprintf(rest, sizeof(rest), "type %d start %lld len %lld pid %s", l.l_type,
		 (long long)l.l_start, (long long)l.l_len,
		 l.l_pid == getpid() ? "PID" : l.l_pid ? "other" : "0");
	say(name, rc, err, rest, 0);
}

#define LOCK(fd, cmd, type) lock_cmd(fd, #cmd "(" #type ")", cmd, type, NULL)

/* A command on a pointer p (NULL or bad for the errors). */
static void ptr_cmd(int fd, const char *name, int cmd, void *p, const char *rest)
{
	int rc, err;

	errno = EDOM;
	rc = call(fd, cmd, p);
	err = errno;
	say(name, rc, err, rest, 0);
}

static void owner_cmds(int fd)
{
	struct f_owner_ex ex = { 0 }, bad = { .type = 99, .pid = 1 };
	char rest[64];

	NOARG(fd, F_GETOWN);
	INT(fd, F_SETOWN, getpid());
	NOARG(fd, F_GETOWN);
	ptr_cmd(fd, "F_GETOWN_EX", F_GETOWN_EX, &ex, "");
	snprintf(rest, sizeof(rest), "type %d pid %s", ex.type, ex.pid == getpid() ? "PID" : "other");
	ptr_cmd(fd, "F_GETOWN_EX(again)", F_GETOWN_EX, &ex, rest);
	ptr_cmd(fd, "F_SETOWN_EX(bad type)", F_SETOWN_EX, &bad, "");
	ptr_cmd(fd, "F_GETOWN_EX(NULL)", F_GETOWN_EX, NULL, "");
	INT(fd, F_SETOWN, 0);
	NOARG(fd, F_GETSIG);
	INT(fd, F_SETSIG, SIGUSR1);
	NOARG(fd, F_GETSIG);
	INT(fd, F_SETSIG, 0);
}

static void lock_cmds(int fd)
{
	struct flock odd = { .l_type = 99, .l_whence = SEEK_SET };

	LOCK(fd, F_GETLK, F_WRLCK);
	LOCK(fd, F_SETLK, F_WRLCK);
	LOCK(fd, F_SETLKW, F_UNLCK);
	LOCK(fd, F_OFD_GETLK, F_RDLCK);
	LOCK(fd, F_OFD_SETLK, F_RDLCK);
	LOCK(fd, F_OFD_SETLKW, F_UNLCK);
	lock_cmd(fd, "F_SETLK(type 99)", F_SETLK, F_RDLCK, &odd);
	ptr_cmd(fd, "F_SETLK(NULL)", F_SETLK, NULL, "");
	ptr_cmd(fd, "F_GETLK(bad pointer)", F_GETLK, (void *)16, "");
	ptr_cmd(fd, "F_OFD_SETLK(NULL)", F_OFD_SETLK, NULL, "");
}

static void misc_cmds(int fd)
{
	uint64_t hint = 0, short_life = 2; /* RWH_WRITE_LIFE_SHORT */
	char rest[32];

	NOARG(fd, F_GETPIPE_SZ);
	INT(fd, F_SETPIPE_SZ, 65536);
	NOARG(fd, F_GET_SEALS);
	INT(fd, F_ADD_SEALS, F_SEAL_WRITE);
	NOARG(fd, F_GETLEASE);
	INT(fd, F_SETLEASE, F_UNLCK);
	INT(fd, F_NOTIFY, 1); /* DN_ACCESS: a directory's only */
	ptr_cmd(fd, "F_SET_RW_HINT", F_SET_RW_HINT, &short_life, "");
	ptr_cmd(fd, "F_GET_RW_HINT", F_GET_RW_HINT, &hint, "");
	snprintf(rest, sizeof(rest), "hint %llu", (unsigned long long)hint);
	ptr_cmd(fd, "F_GET_RW_HINT(again)", F_GET_RW_HINT, &hint, rest);
	ptr_cmd(fd, "F_SET_RW_HINT(NULL)", F_SET_RW_HINT, NULL, "");
	NOARG(fd, 0x7fff0000); /* no such command */
}

/* Every command on fd. */
static void every_cmd(int fd)
{
	NOARG(fd, F_GETFD);
	INT(fd, F_SETFD, FD_CLOEXEC);
	NOARG(fd, F_GETFD);
	INT(fd, F_SETFD, 0);
	NOARG(fd, F_GETFL);
	INT(fd, F_SETFL, O_NONBLOCK);
	NOARG(fd, F_GETFL);
	INT(fd, F_SETFL, 0);
	DUP(fd, F_DUPFD, 0);
	DUP(fd, F_DUPFD, 500);
	DUP(fd, F_DUPFD, -1);
	DUP(fd, F_DUPFD, 1 << 30);
	DUP(fd, F_DUPFD_CLOEXEC, 0);
	DUP(fd, F_DUPFD_CLOEXEC, 600);
	owner_cmds(fd);
	lock_cmds(fd);
	misc_cmds(fd);
}

/* A TCP connection on loopback, both ends here: the connecting one. */
static int tcp_socket(int *other)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0)), fd;

	CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof(a)));
	CHECK_OK(listen(l, 1));
	CHECK_OK(getsockname(l, (struct sockaddr *)&a, &len));
	fd = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	CHECK_OK(connect(fd, (struct sockaddr *)&a, len));
	*other = CHECK_OK(accept(l, NULL, NULL));
	close(l);
	return fd;
}

/* Each kind of descriptor, made afresh for each entry point. */
static void every_kind(void)
{
	char path[] = "/tmp/test_fcntl.XXXXXX";
	int p[2], peer, fd;

	kind = "tcp";
	fd = tcp_socket(&peer);
	every_cmd(fd);
	close(fd);
	close(peer);
	kind = "file";
	fd = CHECK_OK(mkstemp(path));
	unlink(path);
	every_cmd(fd);
	close(fd);
	kind = "pipe";
	CHECK_OK(pipe(p));
	every_cmd(p[1]);
	close(p[0]);
	close(p[1]);
	kind = "memfd";
	fd = CHECK_OK(memfd_create("test_fcntl", MFD_ALLOW_SEALING));
	every_cmd(fd);
	close(fd);
	kind = "closed";
	NOARG(900, F_GETFD);
	DUP(900, F_DUPFD, 0);
	LOCK(900, F_SETLK, F_WRLCK);
	NOARG(-1, F_GETFL);
}

/* Does name resolve to a function of libnaglefix.so? */
static void expect_hooked(const char *name)
{
	void *f = dlsym(RTLD_DEFAULT, name);
	Dl_info info;

	CHECK(f != NULL, "%s: no such symbol", name);
	CHECK(dladdr(f, &info) && info.dli_fname && strstr(info.dli_fname, "libnaglefix.so"),
	      "%s is %s's, not the library's", name, f ? info.dli_fname : "nobody");
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		fcntl_fn fn;
	} entries[] = {
		{ "fcntl", fcntl },
#ifdef __GLIBC__ /* musl has neither of the others */
		{ "__fcntl", __fcntl },
		{ "fcntl64", fcntl64 },
#endif
	};

	ct_set_prog(argv[0]);
	ct_arm_timeout();
	CHECK(argc == 1 || (argc == 2 && strcmp(argv[1], "hooked") == 0), "usage: test_fcntl [hooked]");
	if (argc == 2) {
		expect_hooked("fcntl");
#ifdef __GLIBC__
		expect_hooked("fcntl64");
		expect_hooked("__fcntl");
#endif
	}
	for (unsigned i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		entry = entries[i].name;
		call = entries[i].fn;
		every_kind();
	}
	return 0;
}
