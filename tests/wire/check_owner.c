/*
 * check_owner.c - which process holds a TCP connection (src/wire/owner.c),
 * on real loopback connections made in the test: the test's own pid and
 * descriptor for both ends (IPv4, IPv6, an IPv6 socket on IPv4-mapped
 * addresses found by its IPv4 ends), a child that execs another program
 * holding the socket (its pid, its command line with a control byte made
 * '?'), two processes holding one socket counted, and no owner for ends
 * that are not on this host or a socket in TIME-WAIT; a process's socket
 * descriptors (nf_owner_fds_of), the PIDs newest first (nf_owner_pids)
 * and a holder checked live (nf_owner_name). Needs root (other
 * processes' /proc/PID/fd): without it the program says SKIP.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wire/nf_owner.h"
#include "../unit/unit.h"

static void end_of(int fd, int peer, struct nf_owner_end *e)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	ck_assert_int_eq((peer ? getpeername : getsockname)(fd, (struct sockaddr *)&ss, &len), 0);
	memset(e, 0, sizeof(*e));
	e->family = ss.ss_family;
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		memcpy(e->addr, &a->sin_addr, 4);
		e->port = ntohs(a->sin_port);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		memcpy(e->addr, &a->sin6_addr, 16);
		e->port = ntohs(a->sin6_port);
	}
}

/* A connected pair: the client socket of family cfam to the listener
 * bound to text address addr of family lfam; *srv the accepted end. */
static int pair(int cfam, int lfam, const char *addr, int *srv)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int l = socket(lfam, SOCK_STREAM | SOCK_CLOEXEC, 0), c;

	memset(&ss, 0, sizeof(ss));
	if (lfam == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		inet_pton(AF_INET, addr, &a->sin_addr);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		inet_pton(AF_INET6, addr, &a->sin6_addr);
		len = sizeof(*a);
	}
	ck_assert_int_eq(bind(l, (struct sockaddr *)&ss, len), 0);
	ck_assert_int_eq(listen(l, 1), 0);
	ck_assert_int_eq(getsockname(l, (struct sockaddr *)&ss, &len), 0);
	if (cfam != lfam) { /* an IPv6 socket to the IPv4 listener: ::ffff:a.b.c.d */
		struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
		struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = a4->sin_port };

		a6.sin6_addr.s6_addr[10] = a6.sin6_addr.s6_addr[11] = 0xff;
		memcpy(&a6.sin6_addr.s6_addr[12], &a4->sin_addr, 4);
		memcpy(&ss, &a6, sizeof(a6));
		len = sizeof(a6);
	}
	c = socket(cfam, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(c, (struct sockaddr *)&ss, len), 0);
	*srv = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(*srv, 0);
	close(l);
	return c;
}

/* The owner of fd's connection, seen from fd's end. */
static int owner_of(int fd, struct nf_owner *o)
{
	struct nf_owner_end local, remote;

	end_of(fd, 0, &local);
	end_of(fd, 1, &remote);
	return nf_owner_find(&local, &remote, o);
}

static void assert_self(int fd)
{
	struct nf_owner o;
	int rc = owner_of(fd, &o);

	ck_assert_msg(rc == 0, "nf_owner_find: %s", strerror(-rc));
	ck_assert_int_eq(o.pid, getpid());
	ck_assert_int_eq(o.fd, fd);
	ck_assert_uint_eq(o.npids, 1);
	ck_assert_uint_eq(o.uid, geteuid());
	ck_assert_msg(strstr(o.cmd, "check_owner") != NULL, "cmd \"%s\"", o.cmd);
}

START_TEST(test_owner_self_ipv4)
{
	int srv, c = pair(AF_INET, AF_INET, "127.0.0.1", &srv);

	assert_self(c);
	assert_self(srv);
	close(c);
	close(srv);
}
END_TEST

START_TEST(test_owner_self_ipv6)
{
	int srv, c = pair(AF_INET6, AF_INET6, "::1", &srv);

	assert_self(c);
	assert_self(srv);
	close(c);
	close(srv);
}
END_TEST

/* Java's sockets are IPv6 ones; to 127.0.0.1 their packets are IPv4. */
START_TEST(test_owner_ipv4_mapped_found_by_ipv4_ends)
{
	int srv, c = pair(AF_INET6, AF_INET, "127.0.0.1", &srv);
	struct nf_owner_end local, remote;
	struct nf_owner o;
	int rc;

	end_of(srv, 1, &local); /* the client end, as the wire shows it: IPv4 */
	end_of(srv, 0, &remote);
	ck_assert_int_eq(local.family, AF_INET);
	rc = nf_owner_find(&local, &remote, &o);
	ck_assert_msg(rc == 0, "nf_owner_find: %s", strerror(-rc));
	ck_assert_int_eq(o.pid, getpid());
	ck_assert_int_eq(o.fd, c);
	close(c);
	close(srv);
}
END_TEST

/* A child execs sleep under an argv[0] with a tab, holding the client
 * socket; the parent then closes its own copy. */
START_TEST(test_owner_other_process_and_its_command)
{
	int srv, c = pair(AF_INET, AF_INET, "127.0.0.1", &srv), status, rc;
	struct nf_owner_end local, remote;
	struct nf_owner o;
	pid_t pid;

	end_of(c, 0, &local);
	end_of(c, 1, &remote);
	pid = fork();
	if (pid == 0) {
		execl("/bin/sleep", "nf\towner", "30", (char *)NULL);
		_exit(127);
	}
	close(c);
	for (int i = 0; i < 100; i++) { /* until the exec is done */
		rc = nf_owner_find(&local, &remote, &o);
		if (rc == 0 && strncmp(o.cmd, "nf?owner", 8) == 0)
			break;
		usleep(10000);
	}
	ck_assert_msg(rc == 0, "nf_owner_find: %s", strerror(-rc));
	ck_assert_int_eq(o.pid, pid);
	ck_assert_int_eq(o.fd, c);
	ck_assert_uint_eq(o.npids, 1);
	ck_assert_str_eq(o.cmd, "nf?owner 30");
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(srv);
}
END_TEST

/* A forked child holding what this process holds, until *go (the write
 * end of its pipe, returned through it) is closed; its pid. */
static pid_t waiting_child(int *go)
{
	int p[2];
	pid_t pid;
	char b;

	ck_assert_int_eq(pipe(p), 0);
	if ((pid = fork()) == 0) {
		close(p[1]);
		(void)!read(p[0], &b, 1); /* until the parent closes its end */
		_exit(0);
	}
	ck_assert_int_ge(pid, 0);
	close(p[0]);
	*go = p[1];
	return pid;
}

/* A socket held by this process and a forked child: two holders. */
START_TEST(test_owner_two_processes_counted)
{
	int srv, c = pair(AF_INET, AF_INET, "127.0.0.1", &srv), status, rc, go;
	struct nf_owner o;
	pid_t pid = waiting_child(&go);

	rc = owner_of(c, &o);
	ck_assert_msg(rc == 0, "nf_owner_find: %s", strerror(-rc));
	ck_assert_uint_eq(o.npids, 2);
	ck_assert(o.pid == getpid() || o.pid == pid);
	close(go);
	waitpid(pid, &status, 0);
	close(c);
	close(srv);
}
END_TEST

/* Ends that no socket of this host has: a port nobody uses, a remote address. */
START_TEST(test_owner_not_on_this_host)
{
	struct nf_owner_end local = { .family = AF_INET, .port = 9 }, remote = local;
	struct nf_owner o;

	inet_pton(AF_INET, "192.0.2.1", local.addr);
	inet_pton(AF_INET, "198.51.100.7", remote.addr);
	remote.port = 4242;
	ck_assert_int_eq(nf_owner_find(&local, &remote, &o), -ENOENT);
	ck_assert_int_eq(o.pid, 0);
	local.family = remote.family = AF_INET6;
	memset(local.addr, 0, 16);
	local.addr[15] = 1;
	ck_assert_int_eq(nf_owner_find(&local, &remote, &o), -ENOENT);
	remote.family = AF_INET;
	ck_assert_int_eq(nf_owner_find(&local, &remote, &o), -EAFNOSUPPORT);
}
END_TEST

/* The end that closes first waits in TIME-WAIT: a socket with no file,
 * told from one the host never had (its holder is gone, not elsewhere). */
START_TEST(test_owner_time_wait_has_none)
{
	int srv, c = pair(AF_INET, AF_INET, "127.0.0.1", &srv);
	struct nf_owner_end local, remote;
	struct nf_owner o;
	char b;

	end_of(c, 0, &local);
	end_of(c, 1, &remote);
	close(c);
	ck_assert_int_eq(read(srv, &b, 1), 0);
	close(srv);
	usleep(20000);
	ck_assert_int_eq(nf_owner_find(&local, &remote, &o), -ENOTCONN);
	ck_assert_int_eq(o.pid, 0);
}
END_TEST

/* fd's socket inode, from its link as /proc shows it. */
static uint64_t ino_of(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	ck_assert_int_gt(n, 0);
	link[n] = '\0';
	return strtoull(link + strlen("socket:["), NULL, 10);
}

/* How many entries of t are ino's at pid. */
static unsigned count_in(const struct nf_owner_fds *t, uint64_t ino, pid_t pid)
{
	unsigned k = 0;

	for (size_t i = 0; i < t->n; i++)
		k += t->a[i].ino == ino && t->a[i].pid == pid;
	return k;
}

/* Where pid is in a (n of them), -1 if not there. */
static ssize_t index_of(const pid_t *a, ssize_t n, pid_t pid)
{
	for (ssize_t i = 0; i < n; i++)
		if (a[i] == pid)
			return i;
	return -1;
}

/* A process's socket descriptors: both ends of a connection at this
 * process's descriptors, a child's copy at the child's; a closed
 * descriptor is not there at the next read, an ended process has none. */
START_TEST(test_owner_fds_of_a_process)
{
	int srv, c = pair(AF_INET, AF_INET, "127.0.0.1", &srv), go, status;
	uint64_t ci = ino_of(c), si = ino_of(srv);
	struct nf_owner_fds t = { NULL, 0, 0 };
	pid_t pid = waiting_child(&go);

	ck_assert_int_eq(nf_owner_fds_of(getpid(), &t), 0);
	ck_assert_int_eq(nf_owner_fds_of(pid, &t), 0);
	ck_assert_uint_eq(count_in(&t, ci, getpid()), 1);
	ck_assert_uint_eq(count_in(&t, si, getpid()), 1);
	ck_assert_uint_eq(count_in(&t, ci, pid), 1);
	for (size_t i = 0; i < t.n; i++)
		if (t.a[i].ino == ci && t.a[i].pid == getpid())
			ck_assert_int_eq(t.a[i].fd, c);
	close(go);
	waitpid(pid, &status, 0);
	close(c);
	t.n = 0;
	ck_assert_int_eq(nf_owner_fds_of(getpid(), &t), 0);
	ck_assert_uint_eq(count_in(&t, ci, getpid()), 0);
	ck_assert_uint_eq(count_in(&t, si, getpid()), 1);
	ck_assert_int_eq(nf_owner_fds_of(pid, &t), 0);
	ck_assert_uint_eq(count_in(&t, si, pid), 0);
	free(t.a);
	close(srv);
}
END_TEST

/* The PIDs newest first: a child made after this process comes before
 * it; PID 1 is there; each once. */
START_TEST(test_owner_pids_newest_first)
{
	int go, status;
	pid_t pid = waiting_child(&go), *a;
	ssize_t n, me, child;

	n = nf_owner_pids(&a);
	ck_assert_int_gt(n, 2);
	me = index_of(a, n, getpid());
	child = index_of(a, n, pid);
	ck_assert_int_ge(me, 0);
	ck_assert_int_ge(child, 0);
	ck_assert_int_lt(child, me);
	ck_assert_int_ge(index_of(a, n, 1), 0);
	ck_assert_int_eq(index_of(a + child + 1, n - child - 1, pid), -1);
	free(a);
	close(go);
	waitpid(pid, &status, 0);
}
END_TEST

/* nf_owner_name names a live holder, and says -ESRCH for a descriptor
 * that holds the socket no more (closed, or another file there now) and
 * for a process that has ended. */
START_TEST(test_owner_name_checks_live)
{
	int srv, c = pair(AF_INET, AF_INET, "127.0.0.1", &srv), status;
	uint64_t ci = ino_of(c);
	struct nf_owner o;
	pid_t pid;

	memset(&o, 0, sizeof(o));
	ck_assert_int_eq(nf_owner_name(getpid(), c, ci, &o), 0);
	ck_assert_int_eq(o.pid, getpid());
	ck_assert_int_eq(o.fd, c);
	ck_assert_msg(strstr(o.cmd, "check_owner") != NULL, "cmd \"%s\"", o.cmd);
	ck_assert_int_eq(nf_owner_name(getpid(), srv, ci, &o), -ESRCH);
	if ((pid = fork()) == 0)
		_exit(0);
	waitpid(pid, &status, 0);
	ck_assert_int_eq(nf_owner_name(pid, c, ci, &o), -ESRCH);
	close(c);
	ck_assert_int_eq(nf_owner_name(getpid(), c, ci, &o), -ESRCH);
	close(srv);
}
END_TEST

static Suite *owner_suite(void)
{
	Suite *s = suite_create("owner");
	TCase *tc = tcase_create("live");

	tcase_set_timeout(tc, 30);
	unit_add(tc, test_owner_self_ipv4);
	unit_add(tc, test_owner_self_ipv6);
	unit_add(tc, test_owner_ipv4_mapped_found_by_ipv4_ends);
	unit_add(tc, test_owner_other_process_and_its_command);
	unit_add(tc, test_owner_two_processes_counted);
	unit_add(tc, test_owner_not_on_this_host);
	unit_add(tc, test_owner_time_wait_has_none);
	unit_add(tc, test_owner_fds_of_a_process);
	unit_add(tc, test_owner_pids_newest_first);
	unit_add(tc, test_owner_name_checks_live);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	if (geteuid() != 0) {
		printf("SKIP check_owner: needs root (other processes' /proc/PID/fd)\n"
		       "0 passed, 0 failed\n");
		return 0;
	}
	return unit_run(srunner_create(owner_suite()), "check_owner");
}
