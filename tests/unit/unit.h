/*
 * unit.h - how every Check program adds and runs its tests (tests/unit,
 * tests/cli, tests/wire, tests/metrics; unit.c): only the tests the name
 * filter T selects, a test that cannot run here as a SKIP line rather
 * than a pass, and a filter that selects nothing said so.
 */
#ifndef NF_TEST_UNIT_H
#define NF_TEST_UNIT_H

#include <check.h>

/* tcase_add_test, for the tests the name filter T selects (the
 * environment's: a shell pattern matched anywhere in the test's name,
 * `make test-unit T=test_conn_fd`). Check's own CK_RUN_SUITE and
 * CK_RUN_CASE select whole suites and cases (make SUITE= CASE=). */
void unit_add(TCase *tc, const TTest *test);

/* tcase_add_loop_test, for the tests T selects. */
void unit_add_loop(TCase *tc, const TTest *test, int start, int end);

/* unit_add if why is NULL; else, if T selects the test, prints
 * "SKIP test_name: why" instead and counts a skip. For a test whose
 * precondition (a capability, a kernel limit) this machine lacks: the
 * suite asks before it adds the test, so the test itself asserts it. */
void unit_add_unless(TCase *tc, const TTest *test, const char *why);

/* How many tests unit_add_unless skipped. */
int unit_skipped(void);

/* A program's main: runs sr (fork mode, Check's CK_NORMAL output after
 * the SKIP lines), frees it, and returns the exit status, 0 iff no test
 * failed. When T, CK_RUN_SUITE or CK_RUN_CASE is set and no test ran or
 * was skipped, first prints "SKIP T: ... names no test of prog" (the
 * runners of tests/lib.sh read it). */
int unit_run(SRunner *sr, const char *prog);

#endif
