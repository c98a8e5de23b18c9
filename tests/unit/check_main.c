/*
 * check_main.c - runs every unit suite. Run from tests/unit: the fixtures
 * are read by relative path. Fork mode stays on (the Check default) so no
 * state leaks from one test into the next.
 */
#include <stdlib.h>

#include "suites.h"

int main(void)
{
	SRunner *sr = srunner_create(policy_suite());
	int failed;

	srunner_add_suite(sr, conn_suite());
	srunner_add_suite(sr, config_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
