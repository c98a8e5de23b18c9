/*
 * check_fix_apply.c - fix's typed door (src/cli/fix/nf_fix.h), what attach
 * --now calls instead of building fix's argv: a request checked as the
 * command line is (no target, --undo with a policy: usage errors, status
 * 125), and a request for -m nodelay on a child's PID that sets
 * TCP_NODELAY on the child's connected socket, as the child itself reads
 * it back; the record of it kept in a state directory of the test's own,
 * removed at the end.
 */
#include <check.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/common/nf_cli.h"
#include "cli/fix/nf_fix.h"
#include "../unit/unit.h"

START_TEST(test_fix_apply_no_target_is_usage)
{
	struct nf_fix_req req = { .mode = "nodelay" };

	ck_assert_int_eq(nf_fix_apply(&req), NF_EXIT_USAGE);
}
END_TEST

START_TEST(test_fix_apply_undo_with_policy_is_usage)
{
	char *pids[] = { "1" };
	struct nf_fix_req req = { .undo = 1, .mode = "nodelay", .pids = pids, .npids = 1 };

	ck_assert_int_eq(nf_fix_apply(&req), NF_EXIT_USAGE);
}
END_TEST

START_TEST(test_fix_apply_not_a_pid_is_usage)
{
	char *pids[] = { "12x" };
	struct nf_fix_req req = { .mode = "nodelay", .pids = pids, .npids = 1 };

	ck_assert_int_eq(nf_fix_apply(&req), NF_EXIT_USAGE);
}
END_TEST

/*
 * A child with a loopback connection (its client end with TCP_NODELAY 0)
 * that waits for a byte on go, then writes the client end's TCP_NODELAY
 * as read to back (one byte: '0' or '1') and exits.
 */
static pid_t child_with_connection(int *go_w, int *back_r)
{
	int go[2], back[2], ready[2];
	pid_t pid;

	ck_assert_int_eq(pipe(go), 0);
	ck_assert_int_eq(pipe(back), 0);
	ck_assert_int_eq(pipe(ready), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t len = sizeof(a);
		int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0), s, on = -1;
		char b;

		if (l < 0 || c < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1) < 0 ||
		    getsockname(l, (struct sockaddr *)&a, &len) < 0 ||
		    connect(c, (struct sockaddr *)&a, sizeof(a)) < 0 || (s = accept(l, NULL, NULL)) < 0)
			_exit(2);
		close(l); /* no listener: fix sets the two connected ends */
		if (write(ready[1], "r", 1) != 1 || read(go[0], &b, 1) != 1)
			_exit(3);
		len = sizeof(on);
		getsockopt(c, IPPROTO_TCP, TCP_NODELAY, &on, &len);
		b = on == 1 ? '1' : '0';
		_exit(write(back[1], &b, 1) == 1 ? 0 : 4);
	}
	close(go[0]);
	close(back[1]);
	close(ready[1]);
	{
		char b;

		ck_assert_int_eq(read(ready[0], &b, 1), 1);
	}
	close(ready[0]);
	*go_w = go[1];
	*back_r = back[0];
	return pid;
}

START_TEST(test_fix_apply_sets_nodelay_on_a_pid)
{
	char dir[] = "/tmp/check_fix_apply.XXXXXX", pid_text[16], b = '?', cmd[64];
	int go, back, status;
	pid_t pid;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	setenv("NAGLEFIX_STATE_DIR", dir, 1);
	pid = child_with_connection(&go, &back);
	snprintf(pid_text, sizeof(pid_text), "%d", (int)pid);
	{
		char *pids[] = { pid_text };
		struct nf_fix_req req = { .mode = "nodelay", .pids = pids, .npids = 1 };

		ck_assert_int_eq(nf_fix_apply(&req), 0);
	}
	ck_assert_int_eq(write(go, "g", 1), 1);
	ck_assert_int_eq(read(back, &b, 1), 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(b, '1');
}
END_TEST

/* Why a parent may not take its child's descriptors here, or NULL: Yama's
 * ptrace_scope 2 or 3 (admin only, or none) without root. */
static const char *no_getfd(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	int scope = 0;

	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 0;
		fclose(f);
	}
	if (scope >= 3 || (scope == 2 && geteuid() != 0))
		return "Yama's ptrace_scope forbids pidfd_getfd of a child";
	return NULL;
}

static Suite *fix_apply_suite(void)
{
	Suite *s = suite_create("fix_apply");
	TCase *tc = tcase_create("core");

	unit_add(tc, test_fix_apply_no_target_is_usage);
	unit_add(tc, test_fix_apply_undo_with_policy_is_usage);
	unit_add(tc, test_fix_apply_not_a_pid_is_usage);
	unit_add_unless(tc, test_fix_apply_sets_nodelay_on_a_pid, no_getfd());
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	nf_cli_set_cmd("fix");
	return unit_run(srunner_create(fix_apply_suite()), "check_fix_apply");
}
