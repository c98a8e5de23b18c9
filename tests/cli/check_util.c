/*
 * check_util.c - the command's messages (src/cli/common/util.c), in err(3)'s
 * shape: "naglefix CMD: " with the subcommand set by nf_cli_set_cmd
 * ("naglefix: " for the run mode), the message, one newline, on stderr;
 * nf_cli_warnx returns the status with errno kept, nf_cli_errx exits
 * with it after stdout's text, and the usage form adds the --help hint
 * and returns 125; nf_cli_warnx_as says the name it is given instead of
 * the command's, nf_cli_warn_more a line indented under a message. Each
 * runs in a child whose stdout and stderr go to one pipe, read back
 * whole.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/common/nf_cli.h"
#include "../unit/unit.h"

enum { WARNX, ERRX, USAGE, WARNX_AS, MORE };

/* Runs the message of kind form in a child (cmd set, "x" printed on
 * stdout first); out gets what it wrote, the result its exit status. */
static int run(int form, const char *cmd, char *out, size_t len)
{
	int p[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	if ((pid = fork()) == 0) {
		dup2(p[1], STDOUT_FILENO);
		dup2(p[1], STDERR_FILENO);
		close(p[0]);
		nf_cli_set_cmd(cmd);
		fputs("x", stdout); /* buffered: errx must flush it first */
		errno = EBADF;
		if (form == ERRX)
			nf_cli_errx(6, "gone: %s", "why");
		if (form == WARNX)
			status = nf_cli_warnx(3, "%s %d", "no", 7) == 3 && errno == EBADF ? 0 : 99;
		else if (form == WARNX_AS)
			status = nf_cli_warnx_as(cmd ? "attach --list" : NULL, 4, "%s", "as") == 4 &&
					 errno == EBADF
					 ? 0
					 : 99;
		else if (form == MORE) {
			nf_cli_warnx(0, "log:");
			nf_cli_warn_more("%s %d", "line", 1);
			status = errno == EBADF ? 0 : 99;
		} else
			status = nf_cli_usage_error(cmd, "bad '%s'", "w") == NF_EXIT_USAGE ? 0 : 99;
		fflush(stdout);
		_exit(status);
	}
	close(p[1]);
	while ((n = read(p[0], out + got, len - 1 - (size_t)got)) > 0)
		got += n;
	out[got] = '\0';
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

START_TEST(test_util_warnx_says_cmd_returns_status)
{
	char out[256];

	ck_assert_int_eq(run(WARNX, "scan", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "naglefix scan: no 7\nx");
}
END_TEST

START_TEST(test_util_warnx_run_mode_says_naglefix)
{
	char out[256];

	ck_assert_int_eq(run(WARNX, NULL, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "naglefix: no 7\nx");
}
END_TEST

START_TEST(test_util_errx_exits_after_stdout)
{
	char out[256];

	ck_assert_int_eq(run(ERRX, "fix", out, sizeof(out)), 6);
	ck_assert_str_eq(out, "xnaglefix fix: gone: why\n");
}
END_TEST

START_TEST(test_util_usage_error_hints_help)
{
	char out[256];

	ck_assert_int_eq(run(USAGE, "report", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "naglefix report: bad 'w'; try 'naglefix report --help'\nx");
}
END_TEST

START_TEST(test_util_warnx_as_says_the_name_given)
{
	char out[256];

	ck_assert_int_eq(run(WARNX_AS, "watch", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "naglefix attach --list: as\nx");
	ck_assert_int_eq(run(WARNX_AS, NULL, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "naglefix: as\nx");
}
END_TEST

START_TEST(test_util_warn_more_indents_a_line)
{
	char out[256];

	ck_assert_int_eq(run(MORE, "attach", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "naglefix attach: log:\n    line 1\nx");
}
END_TEST

static Suite *util_suite(void)
{
	Suite *s = suite_create("util");
	TCase *tc = tcase_create("core");

	unit_add(tc, test_util_warnx_says_cmd_returns_status);
	unit_add(tc, test_util_warnx_run_mode_says_naglefix);
	unit_add(tc, test_util_errx_exits_after_stdout);
	unit_add(tc, test_util_usage_error_hints_help);
	unit_add(tc, test_util_warnx_as_says_the_name_given);
	unit_add(tc, test_util_warn_more_indents_a_line);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return unit_run(srunner_create(util_suite()), "check_util");
}
