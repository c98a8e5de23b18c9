/*
 * check_report_stalls.c - the stalls report keeps for its medians
 * (src/cli/report/report_stalls.c): each distinct (row, stall) once with its
 * count, the median weighted by the counts as if every stall were kept
 * alone, rows apart, and the table's growth within the bytes allowed.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/report/report_int.h"
#include "../unit/unit.h"

static size_t plenty = (size_t)1 << 30;

/* The median of row 0 after adding ms[i] count[i] times each. */
static double median_of(const double *ms, const unsigned long *count, int n)
{
	struct nf_report_stalls *s = nf_report_stalls_new();
	double m = -1;

	ck_assert_ptr_nonnull(s);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(nf_report_stalls_add(s, &plenty, 0, ms[i], count[i]), 0);
	nf_report_stalls_medians(s, &m, 1);
	nf_report_stalls_free(s);
	return m;
}

START_TEST(test_report_stalls_median_odd_even)
{
	ck_assert_double_eq(median_of((double[]){ 3, 1, 2 }, (unsigned long[]){ 1, 1, 1 }, 3), 2);
	ck_assert_double_eq(median_of((double[]){ 4, 1, 3, 2 }, (unsigned long[]){ 1, 1, 1, 1 }, 4),
			    2.5);
}
END_TEST

/* 1 x1000000 and 2 x1: the median is 1, as a million 1s and one 2 give;
 * 40 x1 and 44 x1 repeated: counts add up under one entry. */
START_TEST(test_report_stalls_median_weighted)
{
	ck_assert_double_eq(median_of((double[]){ 2, 1 }, (unsigned long[]){ 1, 1000000 }, 2), 1);
	ck_assert_double_eq(median_of((double[]){ 40, 44, 44, 40, 44 },
				      (unsigned long[]){ 1, 1, 1, 1, 1 }, 5), 44);
	ck_assert_double_eq(median_of((double[]){ 40, 44 }, (unsigned long[]){ 3, 3 }, 2), 42);
	ck_assert_double_eq(median_of((double[]){ 40, 44, 50 }, (unsigned long[]){ 2, 1, 3 }, 3),
			    47);
}
END_TEST

START_TEST(test_report_stalls_rows_apart)
{
	struct nf_report_stalls *s = nf_report_stalls_new();
	double m[3] = { -1, -1, -1 };

	for (int i = 0; i < 1000; i++) {
		ck_assert_int_eq(nf_report_stalls_add(s, &plenty, 0, i, 1), 0);
		ck_assert_int_eq(nf_report_stalls_add(s, &plenty, 2, 5000 + i % 3, 2), 0);
	}
	nf_report_stalls_medians(s, m, 3);
	ck_assert_double_eq(m[0], 499.5);
	ck_assert_double_eq(m[1], -1); /* none: left as it was */
	ck_assert_double_eq(m[2], 5001);
	nf_report_stalls_free(s);
}
END_TEST

/* The table grows only within what is left: a new value past it is
 * refused (-1), one already there still counts, and what it took is
 * at most what it was given. */
START_TEST(test_report_stalls_within_bytes_left)
{
	struct nf_report_stalls *s = nf_report_stalls_new();
	size_t given = 64 << 10, left = given;
	int kept = 0, refused = 0;
	double m;

	for (int i = 0; i < 100000; i++)
		if (nf_report_stalls_add(s, &left, 0, i, 1) == 0)
			kept++;
		else
			refused++;
	ck_assert_int_gt(kept, 1000);
	ck_assert_int_gt(refused, 0);
	ck_assert_uint_le(given - left, given);
	ck_assert_int_eq(nf_report_stalls_add(s, &left, 0, 0, 5), 0);
	nf_report_stalls_medians(s, &m, 1);
	ck_assert_double_lt(m, kept);
	nf_report_stalls_free(s);
}
END_TEST

static Suite *report_stalls_suite(void)
{
	Suite *s = suite_create("report_stalls");
	TCase *tc = tcase_create("core");

	unit_add(tc, test_report_stalls_median_odd_even);
	unit_add(tc, test_report_stalls_median_weighted);
	unit_add(tc, test_report_stalls_rows_apart);
	unit_add(tc, test_report_stalls_within_bytes_left);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return unit_run(srunner_create(report_stalls_suite()), "check_report_stalls");
}
