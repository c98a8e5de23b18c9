/*
 * suites.h - the Check suites of the unit tests, one per core module.
 */
#ifndef NF_TEST_SUITES_H
#define NF_TEST_SUITES_H

#include <check.h>

#include "unit.h"

/* Config parsing and rule matching (src/common/policy.c). */
Suite *policy_suite(void);

/* The fd table (src/core/conn.c). */
Suite *conn_suite(void);

/* Environment and file to policy (src/common/config.c). */
Suite *config_suite(void);

/* Whether the loader will preload into a program file (src/common/exe.c). */
Suite *exe_suite(void);

/* An address and port as the messages write them (src/common/addr.c). */
Suite *addr_suite(void);

/* The coalesce buffer (src/actions/coalesce/coalesce.c) against the fakes of fake.h. */
Suite *coalesce_suite(void);

/* Audit's detection (src/actions/audit/audit.c) against the fakes of fake.h. */
Suite *audit_suite(void);

/* Audit's lines and repeat counts (src/actions/audit/audit_log.c). */
Suite *audit_log_suite(void);

#endif
