/*
 * suites.h - the Check suites of the unit tests, one per core module.
 */
#ifndef NF_TEST_SUITES_H
#define NF_TEST_SUITES_H

#include <check.h>

/* Config parsing and rule matching (src/common/policy.c). */
Suite *policy_suite(void);

/* The fd table (src/core/conn.c). */
Suite *conn_suite(void);

/* Environment and file to policy (src/common/config.c). */
Suite *config_suite(void);

/* Whether the loader will preload into a program file (src/common/exe.c). */
Suite *exe_suite(void);

/* The coalesce buffer (src/actions/coalesce/coalesce.c) against the fakes of fake.h. */
Suite *coalesce_suite(void);

/* Audit's detection (src/actions/audit/audit.c) against the fakes of fake.h. */
Suite *audit_suite(void);

/* Audit's lines and repeat counts (src/actions/audit/audit_log.c). */
Suite *audit_log_suite(void);

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

#endif
