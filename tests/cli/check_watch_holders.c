/*
 * check_watch_holders.c - watch's naming of a socket's holder
 * (src/cli/watch/watch_holders.c) on sockets this test holds: its own
 * socket named with its pid and descriptor; a holder the table names
 * that has exited since is not named, the socket's live holder is (a
 * walk made again); a socket no process holds is -ESRCH with no pid.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/watch/watch_int.h"
#include "../unit/unit.h"

static uint64_t ino_of(int fd)
{
	struct stat st;

	ck_assert_int_eq(fstat(fd, &st), 0);
	return (uint64_t)st.st_ino;
}

/* A watch with an empty table (only w->fds is used here). */
static struct nf_watch *new_watch(void)
{
	struct nf_watch *w = calloc(1, sizeof(*w));

	ck_assert_ptr_nonnull(w);
	return w;
}

static void free_watch(struct nf_watch *w)
{
	nf_watch_holders_free(w);
	free(w);
}

START_TEST(own_socket_named)
{
	struct nf_watch *w = new_watch();
	struct nf_owner o;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	ck_assert_int_eq(nf_watch_holder(w, ino_of(sv[1]), &o), 0);
	ck_assert_int_eq(o.pid, getpid());
	ck_assert_int_eq(o.fd, sv[1]);
	ck_assert_uint_eq(o.npids, 1);
	/* again, from the table the walk left */
	ck_assert_int_eq(nf_watch_holder(w, ino_of(sv[1]), &o), 0);
	ck_assert_int_eq(o.pid, getpid());
	close(sv[0]);
	close(sv[1]);
	free_watch(w);
}
END_TEST

/* A child holding the socket too is the newest holder, named first; once
 * it has exited, the table's entry for it must not name it: this process
 * is, found by a walk made again. */
START_TEST(exited_holder_not_named)
{
	struct nf_watch *w = new_watch();
	struct nf_owner o;
	int sv[2], ready[2];
	pid_t child;
	char c;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(pipe(ready), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		close(ready[0]);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	ck_assert_int_eq(nf_watch_holder(w, ino_of(sv[0]), &o), 0);
	ck_assert_int_eq(o.pid, child);
	kill(child, SIGKILL);
	ck_assert_int_eq(waitpid(child, NULL, 0), child);
	ck_assert_int_eq(nf_watch_holder(w, ino_of(sv[0]), &o), 0);
	ck_assert_int_eq(o.pid, getpid());
	ck_assert_int_eq(o.fd, sv[0]);
	close(ready[0]);
	close(sv[0]);
	close(sv[1]);
	free_watch(w);
}
END_TEST

START_TEST(unheld_socket_esrch)
{
	struct nf_watch *w = new_watch();
	struct nf_owner o = { .pid = 12345 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	uint64_t ino;

	ck_assert_int_ge(fd, 0);
	ino = ino_of(fd);
	close(fd);
	ck_assert_int_eq(nf_watch_holder(w, ino, &o), -ESRCH);
	ck_assert_int_eq(o.pid, 0);
	free_watch(w);
}
END_TEST

static Suite *holders_suite(void)
{
	Suite *s = suite_create("watch_holders");
	TCase *tc = tcase_create("holders");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, own_socket_named);
	tcase_add_test(tc, exited_holder_not_named);
	tcase_add_test(tc, unheld_socket_esrch);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return unit_run(srunner_create(holders_suite()), "check_watch_holders");
}
