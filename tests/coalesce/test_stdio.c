/*
 * test_stdio.c - stdio on a coalesce socket. stdio writes through libc's
 * internal write, which no hook sees, so a socket stdio can write must
 * never hold bytes that stdio's would overtake.
 *
 * Under a flush=1s rule:
 *   stdout          a child's socket connects as descriptor 1 (stdin
 *                   open, stdout closed): write(1,"A"), printf("B"),
 *                   fflush, write(1,"C\n"): the peer reads "ABC\n"
 *   stdout-inherited
 *                   the same in a program that finds the socket as its
 *                   descriptor 1 (inetd, systemd Accept=yes): this test
 *                   re-executed with the library, as --stdout-writer
 *   fdopen          write "A", fdopen, fprintf "B", fflush, write "C",
 *                   fprintf "D\n", fflush: the peer reads "ABCD\n"
 *   fdopen-early    fdopen before connect, then as fdopen: "ABCD\n"
 *   _IO_fdopen      as fdopen, with glibc 2.0's name (still exported)
 *   fclose          write "AB", fdopen, fclose: the peer gets "AB"
 *   dprintf         "A" held, dprintf "B", "C\n": the peer reads "ABC\n"
 *   vdprintf        the same with vdprintf
 */
#include "../common/peer.h"

#ifdef __GLIBC__
FILE *_IO_fdopen(int fd, const char *mode); /* exported, not declared */
#endif

/* write "A", printf "B", fflush, write "C\n" on descriptor 1. */
static void stdout_abc(void)
{
	CHECK(write(1, "A", 1) == 1, "write A");
	CHECK(printf("B") == 1, "printf B");
	CHECK(fflush(stdout) == 0, "fflush");
	CHECK(write(1, "C\n", 2) == 2, "write C");
}

/* A child's stdout is a socket connected to p (made by socket() as 1, or
 * inherited through exec): it writes ABC there and exits. */
static void run_stdout(int inherited)
{
	char port[16];
	struct ct_peer p;
	pid_t pid;
	int st;

	ct_peer_start(&p, "lines");
	snprintf(port, sizeof(port), "%d", p.port);
	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		char *args[] = { (char *)ct_prog, "--stdout-writer", NULL };
		int fd;

		close(1);
		fd = ct_connect(p.port);
		if (fd != 1)
			_exit(3);
		if (inherited) {
			execv("/proc/self/exe", args); /* the library still preloaded */
			_exit(127);
		}
		stdout_abc();
		exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child ended with status 0x%x", st);
	ct_expect_line(p.rep, "ABC\n", CT_WAIT_MS);
	ct_expect_end(p.rep, 4, CT_WAIT_MS);
	ct_peer_stop(&p);
}

/* fdopen, or glibc's _IO_fdopen (how 2). */
static FILE *open_stream(int fd, int how)
{
#ifdef __GLIBC__
	if (how == 2)
		return _IO_fdopen(fd, "w");
#else
	if (how == 2)
		ct_skip("no _IO_fdopen in this libc");
#endif
	return fdopen(fd, "w");
}

/* write "A", fdopen, fprintf "B", fflush, write "C", fprintf "D\n". With
 * early (1), the FILE comes before the socket connects; 2: _IO_fdopen. */
static void run_fdopen(int early)
{
	struct sockaddr_in a;
	struct ct_peer p;
	FILE *f = NULL;
	int fd;

	ct_peer_start(&p, "lines");
	a = ct_loopback(p.port);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0, "socket");
	if (early == 1)
		CHECK((f = fdopen(fd, "w")) != NULL, "fdopen");
	CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "connect");
	ct_send_str(fd, "A");
	if (early != 1)
		CHECK((f = open_stream(fd, early)) != NULL, "fdopen");
	CHECK(fprintf(f, "B") == 1 && fflush(f) == 0, "fprintf B");
	ct_send_str(fd, "C");
	CHECK(fprintf(f, "D\n") == 2 && fflush(f) == 0, "fprintf D");
	CHECK(fclose(f) == 0, "fclose");
	ct_expect_line(p.rep, "ABCD\n", CT_WAIT_MS);
	ct_expect_end(p.rep, 5, CT_WAIT_MS);
	ct_peer_stop(&p);
}

/* "AB" held, fdopen, fclose: libc closes the socket; "AB" arrives. */
static void run_fclose(int unused)
{
	struct ct_peer p;
	FILE *f;
	int fd;

	(void)unused;
	ct_peer_start(&p, "lines");
	fd = ct_connect(p.port);
	ct_send_str(fd, "AB");
	ct_expect_held(fd, 0);
	f = fdopen(fd, "r+");
	CHECK(f != NULL, "fdopen");
	CHECK(fclose(f) == 0, "fclose");
	ct_expect_end(p.rep, 2, CT_WAIT_MS);
	ct_peer_stop(&p);
}

static int call_vdprintf(int fd, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vdprintf(fd, fmt, ap);
	va_end(ap);
	return rc;
}

/* "A" held, dprintf (or vdprintf) "B", "C\n": in that order. */
static void run_dprintf(int use_v)
{
	struct ct_peer p;
	int fd;

	ct_peer_start(&p, "lines");
	fd = ct_connect(p.port);
	ct_send_str(fd, "A");
	ct_expect_held(fd, 0);
	CHECK((use_v ? call_vdprintf(fd, "%c", 'B') : dprintf(fd, "%c", 'B')) == 1, "dprintf");
	ct_send_str(fd, "C\n");
	close(fd);
	ct_expect_line(p.rep, "ABC\n", CT_WAIT_MS);
	ct_expect_end(p.rep, 4, CT_WAIT_MS);
	ct_peer_stop(&p);
}

static const struct ct_case cases[] = {
	{ "stdout", run_stdout, 0 },
	{ "stdout-inherited", run_stdout, 1 },
	{ "fdopen", run_fdopen, 0 },
	{ "fdopen-early", run_fdopen, 1 },
	{ "_IO_fdopen", run_fdopen, 2 },
	{ "fclose", run_fclose, 0 },
	{ "dprintf", run_dprintf, 0 },
	{ "vdprintf", run_dprintf, 1 },
};

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--stdout-writer") == 0) {
		stdout_abc();
		return 0;
	}
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
