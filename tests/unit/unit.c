/*
 * unit.c - how every Check program adds and runs its tests (unit.h):
 * only those the name filter selects, a test that cannot run here as a
 * SKIP line, not a pass, and a filter that selects nothing said so.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>

#include "unit.h"
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif
#ifdef __SANITIZE_THREAD__
#include <pthread.h>
#endif

static int skipped;

/* The environment's value of name, or NULL if unset or empty. */
static const char *env_set(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* 1 if T (the environment's; unset or empty: every test) matches
 * somewhere in name, as tests/lib.sh's selected does. */
static int unit_selected(const char *name)
{
	const char *t = env_set("T");
	char pattern[512];

	if (t == NULL)
		return 1;
	snprintf(pattern, sizeof(pattern), "*%s*", t);
	return fnmatch(pattern, name, 0) == 0;
}

void unit_add(TCase *tc, const TTest *test)
{
	unit_add_loop(tc, test, 0, 1);
}

void unit_add_loop(TCase *tc, const TTest *test, int start, int end)
{
	if (unit_selected(test->name))
		tcase_add_loop_test(tc, test, start, end);
}

void unit_add_unless(TCase *tc, const TTest *test, const char *why)
{
	if (why == NULL) {
		unit_add(tc, test);
	} else if (unit_selected(test->name)) {
		printf("SKIP %s: %s\n", test->name, why);
		skipped++;
	}
}

int unit_skipped(void)
{
	return skipped;
}

/* Says that the filters set (T's pattern, SUITE=, CASE=) name nothing of
 * prog, in the line tests/lib.sh's runners read. */
static void say_nothing_selected(const char *prog)
{
	static const char *const names[][2] = {
		{ "T", "" }, { "CK_RUN_SUITE", "SUITE=" }, { "CK_RUN_CASE", "CASE=" }
	};
	const char *sep = "";

	printf("SKIP T: ");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (env_set(names[i][0])) {
			printf("%s%s'%s'", sep, names[i][1], env_set(names[i][0]));
			sep = " ";
		}
	}
	printf(" names no test of %s\n", prog);
}

/*
 * Under a sanitizer (tests/sanitize), what each forked test would do
 * again for itself is done once here, before Check forks them, and the
 * forks inherit it:
 * - AddressSanitizer: each test's exit runs LeakSanitizer, which reads
 *   every module's globals, the runtimes' megabytes of zeroes never
 *   touched among them: a page fault a page, in every child. One leak
 *   check here maps them. A leak found here is reported as at exit.
 * - ThreadSanitizer: the first mutex locked sets up the deadlock
 *   detector (clearing its 2 MB graph, 512 fresh pages). One lock here;
 *   the children still find lock-order inversions among their own.
 */
static void unit_prepare_forks(void)
{
#ifdef __SANITIZE_ADDRESS__
	__lsan_do_recoverable_leak_check();
#endif
#ifdef __SANITIZE_THREAD__
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
#endif
}

int unit_run(SRunner *sr, const char *prog)
{
	int by_check = env_set("CK_RUN_SUITE") || env_set("CK_RUN_CASE"), failed, picked;

	fflush(stdout); /* the SKIP lines before Check's own */
	unit_prepare_forks();
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	/* a skipped test is one T picked, whatever suite or case it is in */
	picked = srunner_ntests_run(sr) + (by_check ? 0 : unit_skipped());
	if ((by_check || env_set("T")) && picked == 0)
		say_nothing_selected(prog);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
