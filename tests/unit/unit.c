/*
 * unit.c - how the suites add their tests: only those the name filter
 * selects, and a test that cannot run here as a SKIP line, not a pass.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>

#include "suites.h"

static int skipped;

/* 1 if T (the environment's; unset or empty: every test) matches
 * somewhere in name, as tests/lib.sh's selected does. */
static int unit_selected(const char *name)
{
	const char *t = getenv("T");
	char pattern[512];

	if (t == NULL || *t == '\0')
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
