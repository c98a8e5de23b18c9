/*
 * check_lines.c - the command's bounded line reader (src/cli/common/lines.c) on
 * a pipe fed by a child in pieces of every size: each line whole, the
 * last one without its newline, a line of exactly the limit kept, a
 * longer one (in the middle, at the end, as the whole input) read
 * through, never given, and counted.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/common/nf_lines.h"
#include "cli/report/report_int.h"
#include "../unit/unit.h"

#define MAX 16 /* the longest line these tests keep */

/* A pipe whose reading end is returned, text written into it by a child
 * in pieces of chunk bytes (so lines and reads cut each other anywhere). */
static int feed(const char *text, size_t len, size_t chunk)
{
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	if (fork() == 0) {
		close(p[0]);
		for (size_t o = 0; o < len; o += chunk)
			if (write(p[1], text + o, len - o < chunk ? len - o : chunk) < 0)
				_exit(1);
		_exit(0);
	}
	close(p[1]);
	return p[0];
}

/* Every line of text, read in pieces of chunk, joined by '|' into out;
 * returns how many lines were skipped. */
static unsigned long long read_all(const char *text, size_t len, size_t chunk, char *out,
				   size_t outlen)
{
	struct nf_lines l;
	int fd = feed(text, len, chunk), r;
	unsigned long long skipped;
	size_t n;
	char *line;

	ck_assert_int_eq(nf_lines_init(&l, fd, MAX), 0);
	out[0] = '\0';
	while ((r = nf_lines_next(&l, &line, &n)) > 0) {
		ck_assert_uint_le(n, MAX);
		ck_assert_uint_eq(strlen(line), n);
		strncat(out, line, outlen - strlen(out) - 2);
		strcat(out, "|");
	}
	ck_assert_int_eq(r, 0);
	skipped = l.skipped;
	ck_assert_uint_eq(l.bytes, len);
	nf_lines_free(&l);
	close(fd);
	while (wait(NULL) > 0)
		;
	return skipped;
}

/* The same answer for every size of the writer's pieces. */
static void expect(const char *text, const char *want, unsigned long long skipped)
{
	char got[4096];

	for (size_t chunk = 1; chunk <= strlen(text) + 1; chunk++) {
		ck_assert_uint_eq(read_all(text, strlen(text), chunk, got, sizeof(got)), skipped);
		ck_assert_msg(strcmp(got, want) == 0, "chunk %zu: got '%s', want '%s'", chunk, got, want);
	}
}

START_TEST(test_lines_each_line_whole)
{
	expect("a\nbc\n\ndef\n", "a|bc||def|", 0);
}
END_TEST

START_TEST(test_lines_last_without_newline)
{
	expect("a\nlast", "a|last|", 0);
	expect("", "", 0);
}
END_TEST

START_TEST(test_lines_exactly_the_limit_kept)
{
	expect("0123456789abcdef\nx\n", "0123456789abcdef|x|", 0);
	expect("x\n0123456789abcdef", "x|0123456789abcdef|", 0);
}
END_TEST

START_TEST(test_lines_longer_skipped_and_counted)
{
	expect("a\n0123456789abcdefg\nb\n", "a|b|", 1);
	expect("0123456789abcdefghijklmnopqrstuvwxyz0123456789\nb\n"
	       "0123456789abcdefg\n0123456789abcdefgh\nc\n", "b|c|", 3);
}
END_TEST

START_TEST(test_lines_longer_at_the_end_skipped)
{
	expect("a\n0123456789abcdefg", "a|", 1);
	expect("0123456789abcdefghijklmnopqrstuvwxyz", "", 1);
}
END_TEST

/* 64 MiB without a newline through the real limit: nothing given, one
 * line counted, every byte read. */
START_TEST(test_lines_64_mib_without_newline)
{
	static char block[1 << 16];
	int p[2];
	struct nf_lines l;
	size_t n;
	char *line;

	ck_assert_int_eq(pipe(p), 0);
	if (fork() == 0) {
		close(p[0]);
		memset(block, 'x', sizeof(block));
		for (int i = 0; i < 1024; i++)
			if (write(p[1], block, sizeof(block)) != (ssize_t)sizeof(block))
				_exit(1);
		_exit(0);
	}
	close(p[1]);
	ck_assert_int_eq(nf_lines_init(&l, p[0], NF_REPORT_LINE_MAX), 0);
	ck_assert_int_eq(nf_lines_next(&l, &line, &n), 0);
	ck_assert_uint_eq(l.skipped, 1);
	ck_assert_uint_eq(l.bytes, 64ull << 20);
	ck_assert_uint_eq(l.cap, NF_REPORT_LINE_MAX + 1);
	nf_lines_free(&l);
	close(p[0]);
	wait(NULL);
}
END_TEST

static Suite *lines_suite(void)
{
	Suite *s = suite_create("lines");
	TCase *tc = tcase_create("core");

	unit_add(tc, test_lines_each_line_whole);
	unit_add(tc, test_lines_last_without_newline);
	unit_add(tc, test_lines_exactly_the_limit_kept);
	unit_add(tc, test_lines_longer_skipped_and_counted);
	unit_add(tc, test_lines_longer_at_the_end_skipped);
	unit_add(tc, test_lines_64_mib_without_newline);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return unit_run(srunner_create(lines_suite()), "check_lines");
}
