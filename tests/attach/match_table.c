/*
 * match_table.c - one table of cases (tests/attach/match.table) through
 * all three of naglefix's matchers: the library's (nf_policy_match, given
 * the addresses the socket really has, as the library would) and the
 * kernel's two programs, put on the cgroup CGROUP with `NAGLEFIX attach
 * -c POLICY --cgroup CGROUP` for each policy of the table: the sock_ops
 * program, judged by the TCP_NODELAY of a real connection made by a
 * process of that cgroup, and the setsockopt program, judged by what the
 * option reads after that process's own setsockopt(TCP_NODELAY, 0) (1:
 * kept on, 0: the program's choice left). Each case must get the same
 * answer from all three, and the one the table writes.
 *
 * Usage: match_table NAGLEFIX CGROUP TABLE  (in a network namespace with
 * the table's addresses on its loopback; tests/attach/run.sh makes it)
 * Prints one line a case ("ok" or "MISMATCH"), then "N cases, M wrong";
 * exits 0 if none is wrong, 1 if one is, 2 on an error of its own.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nf_policy.h"

struct job {
	const char *naglefix, *cgroup;
	char policy_name[64];
	char text[4096];
	size_t len;
	struct nf_policy pol;
	int cases, wrong;
};

/* What one connection said: the library's action, the kernel's option. */
struct verdict {
	int action;  /* enum nf_action, or -1: no connection */
	int nodelay; /* TCP_NODELAY of the cgroup's socket */
	int kept;    /* TCP_NODELAY after its own setsockopt(TCP_NODELAY, 0) */
};

static void die(const char *what)
{
	fprintf(stderr, "match_table: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* addr and port into ss (an IPv6 socket address when addr has a ':'). */
static socklen_t address(const char *addr, int port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (strchr(addr, ':')) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, addr, &in6->sin6_addr) != 1)
			die(addr);
		return sizeof(*in6);
	}
	in->sin_family = AF_INET;
	in->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, addr, &in->sin_addr) != 1)
		die(addr);
	return sizeof(*in);
}

/* A listener on addr:port (a dual-stack one for "::"). */
static int listener(const char *addr, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = address(addr, port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, zero = 0;

	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 8) < 0)
		die(addr);
	return fd;
}

/* A connection to addr:port, -1 on failure. */
static int dial(const char *addr, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = address(addr, port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd >= 0 && connect(fd, (struct sockaddr *)&ss, len) == 0)
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

/* This process into the cgroup (exits 3 if it cannot be moved). */
static void enter_cgroup(const char *cgroup)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0\n", 2) != 2)
		_exit(3);
	close(fd);
}

/* The verdict on the cgroup's socket fd: the library's action for its
 * matched end (the peer's when connecting, its own when accepting). */
static struct verdict judge(const struct job *j, int fd, enum nf_side side)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct verdict v = { .action = -1 };

	if (fd < 0)
		return v;
	if (side == NF_SIDE_CONNECT ? getpeername(fd, (struct sockaddr *)&ss, &len)
				    : getsockname(fd, (struct sockaddr *)&ss, &len))
		return v;
	v.action = (int)nf_policy_match(&j->pol, side, (struct sockaddr *)&ss, len)->action;
	len = sizeof(v.nodelay);
	getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v.nodelay, &len);
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 0 }, sizeof(int)) < 0)
		v.action = -1;
	len = sizeof(v.kept);
	getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v.kept, &len);
	return v;
}

/* A child of the cgroup connects to addr:port; this process listens. */
static struct verdict case_connect(const struct job *j, const char *addr, int port)
{
	const char *at = strncmp(addr, "::ffff:", 7) == 0 && strchr(addr, '.') ? addr + 7 : addr;
	int lsn = listener(at, port), p[2];
	struct verdict v = { .action = -1 };
	pid_t pid;

	if (pipe(p) < 0 || (pid = fork()) < 0)
		die("fork");
	if (pid == 0) {
		enter_cgroup(j->cgroup);
		v = judge(j, dial(addr, port), NF_SIDE_CONNECT);
		_exit(write(p[1], &v, sizeof(v)) == sizeof(v) ? 0 : 4);
	}
	close(p[1]);
	if (read(p[0], &v, sizeof(v)) != sizeof(v))
		v.action = -1;
	close(p[0]);
	close(lsn);
	waitpid(pid, NULL, 0);
	return v;
}

/* A child of the cgroup listens on via (or addr) and accepts a
 * connection this process makes to addr:port. */
static struct verdict case_accept(const struct job *j, const char *addr, int port, const char *via)
{
	struct verdict v = { .action = -1 };
	int p[2], go[2], fd = -1;
	char ready;
	pid_t pid;

	if (pipe(p) < 0 || pipe(go) < 0 || (pid = fork()) < 0)
		die("fork");
	if (pid == 0) {
		int lsn;

		enter_cgroup(j->cgroup);
		lsn = listener(via ? via : addr, port);
		(void)!write(go[1], "r", 1);
		v = judge(j, accept(lsn, NULL, NULL), NF_SIDE_ACCEPT);
		_exit(write(p[1], &v, sizeof(v)) == sizeof(v) ? 0 : 4);
	}
	close(p[1]);
	close(go[1]);
	if (read(go[0], &ready, 1) == 1)
		fd = dial(addr, port);
	if (fd < 0 || read(p[0], &v, sizeof(v)) != sizeof(v))
		v.action = -1;
	if (fd < 0)
		kill(pid, SIGKILL);
	close(p[0]);
	close(go[0]);
	if (fd >= 0)
		close(fd);
	waitpid(pid, NULL, 0);
	return v;
}

/* One case line: run, judged, said. */
static void run_case(struct job *j, const char *line)
{
	char side[16], addr[64], want[16], via[64] = "";
	int port, n = sscanf(line, "%15s %63s %d %15s via %63s", side, addr, &port, want, via);
	struct verdict v;
	const char *lib;
	int ok;

	if (n < 4) {
		fprintf(stderr, "match_table: bad case line: %s\n", line);
		exit(2);
	}
	v = strcmp(side, "accept") == 0 ? case_accept(j, addr, port, via[0] ? via : NULL)
					 : case_connect(j, addr, port);
	lib = v.action < 0 ? "(no connection)" : nf_policy_action_name((enum nf_action)v.action);
	ok = v.action >= 0 && strcmp(lib, want) == 0 && v.nodelay == (v.action == NF_ACT_NODELAY) &&
	     v.kept == v.nodelay;
	j->cases++;
	j->wrong += !ok;
	printf("%-8s %s %-6s %-18s %5d%s%-8s want %-8s library %-8s sock_ops %-7s setsockopt(0) %s\n",
	       ok ? "ok" : "MISMATCH", j->policy_name, side, addr, port, via[0] ? " via " : " ", via,
	       want, lib, v.nodelay ? "nodelay" : "off", v.kept ? "kept" : "off");
	fflush(stdout);
}

/* Runs the naglefix command with args; its status. */
static int naglefix(const struct job *j, const char *a1, const char *a2, const char *a3,
		    const char *a4, const char *a5)
{
	char *const argv[] = { (char *)j->naglefix, (char *)a1, (char *)a2, (char *)a3, (char *)a4,
			       (char *)a5, NULL };
	int status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		dup2(2, 1); /* its lines go with the errors, apart from the cases' */
		execv(j->naglefix, argv);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* The policy gathered so far: parsed here, attached to the cgroup. */
static void start_policy(struct job *j)
{
	char err[512], path[] = "/tmp/match_table.XXXXXX";
	int fd = mkstemp(path), rc;

	if (fd < 0 || write(fd, j->text, j->len) != (ssize_t)j->len)
		die("policy file");
	close(fd);
	if (nf_policy_parse(&j->pol, j->text, j->policy_name, err, sizeof(err)) < 0) {
		fprintf(stderr, "match_table: %s\n", err);
		exit(2);
	}
	rc = naglefix(j, "attach", "-c", path, "--cgroup", j->cgroup);
	unlink(path);
	if (rc != 0) {
		fprintf(stderr, "match_table: naglefix attach exited %d for policy %s\n", rc, j->policy_name);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct job j = { 0 };
	char line[512];
	int in_policy = 0;
	FILE *f;

	if (argc != 4 || !(f = fopen(argv[3], "re"))) {
		fputs("usage: match_table NAGLEFIX CGROUP TABLE\n", stderr);
		return 2;
	}
	j.naglefix = argv[1];
	j.cgroup = argv[2];
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		if (sscanf(line, "policy %63s", j.policy_name) == 1) {
			nf_policy_free(&j.pol);
			j.len = 0;
			in_policy = 1;
		} else if (line[0] == ' ' && in_policy) {
			j.len += (size_t)snprintf(j.text + j.len, sizeof(j.text) - j.len, "%s\n", line);
		} else {
			if (in_policy)
				start_policy(&j);
			in_policy = 0;
			run_case(&j, line);
		}
	}
	fclose(f);
	nf_policy_free(&j.pol);
	naglefix(&j, "detach", "--cgroup", j.cgroup, NULL, NULL);
	printf("%d cases, %d wrong\n", j.cases, j.wrong);
	return j.wrong ? 1 : 0;
}
