/*
 * check_main.c - runs every unit suite. Run from tests/unit: the fixtures
 * are read by relative path. Fork mode stays on (the Check default) so no
 * state leaks from one test into the next.
 *
 * T=pattern (the environment) runs only the tests whose name it matches;
 * Check's CK_RUN_SUITE and CK_RUN_CASE pick a suite or a case. A test this
 * machine cannot run is not added: "SKIP name: why" says so before Check's
 * "N%: Checks: ..." line, which counts only the tests that ran.
 */

#include "suites.h"

int main(void)
{
	SRunner *sr = srunner_create(policy_suite());

	srunner_add_suite(sr, conn_suite());
	srunner_add_suite(sr, config_suite());
	srunner_add_suite(sr, exe_suite());
	srunner_add_suite(sr, addr_suite());
	srunner_add_suite(sr, coalesce_suite());
	srunner_add_suite(sr, audit_suite());
	srunner_add_suite(sr, audit_log_suite());
	return unit_run(sr, "check_naglefix");
}
