/*
 * suites.h - the Check suites of the unit tests, one per core module.
 */
#ifndef NF_TEST_SUITES_H
#define NF_TEST_SUITES_H

#include <check.h>

/* Config parsing and rule matching (src/policy.c). */
Suite *policy_suite(void);

/* The fd table (src/conn.c). */
Suite *conn_suite(void);

/* Environment and file to policy (src/config.c). */
Suite *config_suite(void);

#endif
