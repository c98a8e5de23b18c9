/*
 * check_metrics.c - the holder series and their text (src/metrics/
 * metrics.c, expo.c, textfile.c): a series only for a holder that
 * stalled, its counts, its fix as an info series, the histogram, the
 * bound (the rest in one overflow series), expiry, the escaping of label
 * values (the text stays valid), the cgroup and namespace labels, a
 * label with no value left out, and the
 * file written whole for
 * node_exporter. No network, no clock: the tests give the time.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metrics/nf_metrics.h"
#include "../unit/unit.h"

static struct nf_metrics_key key(const char *holder, const char *side, const char *local,
				 const char *peer)
{
	struct nf_metrics_key k = { { [NF_ML_HOLDER] = holder, [NF_ML_SIDE] = side,
				      [NF_ML_LOCAL] = local, [NF_ML_PEER] = peer } };

	return k;
}

static struct nf_metrics *fresh(uint32_t max, uint64_t expire)
{
	struct nf_metrics_opts o = { .max_series = max, .expire_s = expire };
	struct nf_metrics *m = nf_metrics_new(&o);

	ck_assert_ptr_nonnull(m);
	return m;
}

/* The text of m (the caller frees it). */
static char *text_of(struct nf_metrics *m)
{
	size_t len = 0;
	char *t = nf_metrics_render(m, &len);

	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(strlen(t), len);
	return t;
}

/* How many lines of text begin with prefix. */
static int lines_with(const char *text, const char *prefix)
{
	int n = 0;

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		n += strncmp(l, prefix, strlen(prefix)) == 0;
	return n;
}

#define JAVA "holder=\"java\",side=\"connect\",local=\"10.0.0.1\",peer=\"10.0.0.2:7000\""

/* Nothing stalled: the metrics are there (HELP, TYPE), no holder series. */
START_TEST(test_metrics_no_stall_no_series)
{
	struct nf_metrics *m = fresh(10, 60);
	char *t = text_of(m);

	ck_assert_uint_eq(nf_metrics_series(m), 0);
	ck_assert_int_eq(lines_with(t, "# TYPE naglefix_stalls_total counter"), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_stalls_total"), 0);
	ck_assert_int_eq(lines_with(t, "naglefix_holder_fix_info"), 0);
	ck_assert_int_eq(lines_with(t, "naglefix_stall_duration_seconds_count 0"), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_holder_series 0"), 1);
	free(t);
	nf_metrics_free(m);
}
END_TEST

/* Stalls of two holders: each its own counts, its fix, the histogram
 * of them all (cumulative buckets, sum, count). */
START_TEST(test_metrics_stalls_counted_per_holder)
{
	struct nf_metrics *m = fresh(10, 60);
	struct nf_metrics_key a = key("java", "connect", "10.0.0.1", "10.0.0.2:7000");
	struct nf_metrics_key b = key("nginx", "accept", "10.0.0.2:80", "10.0.0.9");
	char *t;

	for (int i = 0; i < 3; i++)
		nf_metrics_stall(m, &a, "connect 10.0.0.2:7000 coalesce", 0.045, 100);
	nf_metrics_stall(m, &b, "accept 10.0.0.2:80 nodelay", 0.2, 100);
	t = text_of(m);
	ck_assert_uint_eq(nf_metrics_series(m), 2);
	ck_assert_int_eq(lines_with(t, "naglefix_stalls_total{" JAVA "} 3\n"), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_stall_seconds_total{" JAVA "} 0.135000\n"), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_stalls_total{holder=\"nginx\",side=\"accept\","
				       "local=\"10.0.0.2:80\",peer=\"10.0.0.9\"} 1\n"), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_holder_fix_info{" JAVA
				       ",fix=\"connect 10.0.0.2:7000 coalesce\"} 1\n"), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_stall_duration_seconds_bucket{le=\"0.04\"} 0\n"), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_stall_duration_seconds_bucket{le=\"0.05\"} 3\n"), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_stall_duration_seconds_bucket{le=\"0.15\"} 3\n"), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_stall_duration_seconds_bucket{le=\"0.2\"} 4\n"), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_stall_duration_seconds_bucket{le=\"+Inf\"} 4\n"), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_stall_duration_seconds_sum 0.335000\n"), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_stall_duration_seconds_count 4\n"), 1);
	free(t);
	nf_metrics_free(m);
}
END_TEST

/* Past the bound, a new holder's stalls go to the one overflow series;
 * the holders already kept go on counting. */
START_TEST(test_metrics_bound_overflow)
{
	struct nf_metrics *m = fresh(2, 60);
	char peer[32], *t;

	for (int i = 0; i < 5; i++) {
		struct nf_metrics_key k;

		snprintf(peer, sizeof(peer), "10.0.0.2:%d", 7000 + i);
		k = key("java", "connect", "10.0.0.1", peer);
		nf_metrics_stall(m, &k, "fix", 0.04, 100);
		nf_metrics_stall(m, &k, "fix", 0.04, 100);
	}
	t = text_of(m);
	ck_assert_uint_eq(nf_metrics_series(m), 2);
	ck_assert_int_eq(lines_with(t, "naglefix_stalls_total{holder="), 2);
	ck_assert_int_eq(lines_with(t, "naglefix_stalls_total{overflow=\"true\"} 6\n"), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_stall_seconds_total{overflow=\"true\"} 0.240000\n"), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_holder_fix_info{"), 2);
	ck_assert_int_eq(lines_with(t, "naglefix_holder_series_limit 2\n"), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_stall_duration_seconds_count 10\n"), 1);
	free(t);
	nf_metrics_free(m);
}
END_TEST

/* A series with no stall for expire_s goes; one that stalled since
 * stays; a holder that stalls again after it went starts anew. */
START_TEST(test_metrics_expire)
{
	struct nf_metrics *m = fresh(10, 10);
	struct nf_metrics_key a = key("java", "connect", "10.0.0.1", "10.0.0.2:7000");
	struct nf_metrics_key b = key("perl", "connect", "10.0.0.1", "10.0.0.2:7001");
	char *t;

	nf_metrics_stall(m, &a, "fix", 0.04, 100);
	nf_metrics_stall(m, &a, "fix", 0.04, 100);
	nf_metrics_stall(m, &b, "fix", 0.04, 105);
	nf_metrics_expire(m, 109);
	ck_assert_uint_eq(nf_metrics_series(m), 2);
	nf_metrics_expire(m, 110);
	ck_assert_uint_eq(nf_metrics_series(m), 1);
	t = text_of(m);
	ck_assert_int_eq(lines_with(t, "naglefix_stalls_total{" JAVA), 0);
	ck_assert_int_eq(lines_with(t, "naglefix_stalls_total{holder=\"perl\""), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_holder_series_expired_total 1\n"), 1);
	free(t);
	nf_metrics_stall(m, &a, "fix", 0.04, 111);
	t = text_of(m);
	ck_assert_int_eq(lines_with(t, "naglefix_stalls_total{" JAVA "} 1\n"), 1);
	free(t);
	nf_metrics_expire(m, 115);
	ck_assert_uint_eq(nf_metrics_series(m), 1); /* perl's went, java's stays */
	nf_metrics_free(m);
}
END_TEST

/* A room freed by expiry takes a new holder (the bound is of series
 * kept now, not ever made). */
START_TEST(test_metrics_expiry_frees_room)
{
	struct nf_metrics *m = fresh(1, 10);
	struct nf_metrics_key a = key("a", "connect", "10.0.0.1", "10.0.0.2:1");
	struct nf_metrics_key b = key("b", "connect", "10.0.0.1", "10.0.0.2:2");
	char *t;

	nf_metrics_stall(m, &a, "fix", 0.04, 100);
	nf_metrics_stall(m, &b, "fix", 0.04, 100); /* overflow */
	nf_metrics_expire(m, 110);
	nf_metrics_stall(m, &b, "fix", 0.04, 111);
	t = text_of(m);
	ck_assert_int_eq(lines_with(t, "naglefix_stalls_total{holder=\"b\""), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_stalls_total{overflow=\"true\"} 1\n"), 1);
	free(t);
	nf_metrics_free(m);
}
END_TEST

/* Label values are escaped as the format asks (\\, \", \n), any byte
 * outside printable ASCII is '?' (the text stays UTF-8), and a value is
 * cut at NF_METRICS_VALUE_MAX bytes; two holders that differ only past
 * it are one series. */
START_TEST(test_metrics_label_values_escaped)
{
	struct nf_metrics *m = fresh(10, 60);
	struct nf_metrics_key k = key("a\"b\\c\nd\xc3\xa9\x01", "connect", "10.0.0.1", "x");
	char longer[NF_METRICS_VALUE_MAX + 11], *t;

	nf_metrics_stall(m, &k, "say \"hi\"", 0.04, 100);
	t = text_of(m);
	ck_assert_int_eq(lines_with(t, "naglefix_stalls_total{holder=\"a\\\"b\\\\c\\nd???\",side="), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_holder_fix_info{holder=\"a\\\"b\\\\c\\nd???\",side="
				       "\"connect\",local=\"10.0.0.1\",peer=\"x\",fix=\"say \\\"hi\\\"\"} 1"), 1);
	free(t);
	memset(longer, 'p', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	k = key(longer, "connect", "10.0.0.1", "x");
	nf_metrics_stall(m, &k, "fix", 0.04, 100);
	longer[sizeof(longer) - 2] = 'q';
	nf_metrics_stall(m, &k, "fix", 0.04, 100);
	ck_assert_uint_eq(nf_metrics_series(m), 2);
	t = text_of(m);
	ck_assert_ptr_nonnull(strstr(t, "holder=\"ppp"));
	ck_assert_ptr_null(strstr(t, "pq"));
	ck_assert_int_eq((int)(strchr(strstr(t, "holder=\"ppp") + 8, '"') - (strstr(t, "holder=\"ppp") + 8)),
			 NF_METRICS_VALUE_MAX);
	free(t);
	nf_metrics_free(m);
}
END_TEST

/* The cgroup and the namespace are labels (the cgroup after the
 * holder); a label with no value (a holder not named) is left out, not
 * written empty; two namespaces are two series. */
START_TEST(test_metrics_cgroup_netns_and_empty_labels)
{
	struct nf_metrics *m = fresh(10, 60);
	struct nf_metrics_key k = key("", "connect", "127.0.0.1", "127.0.0.1:80");
	struct nf_metrics_key h = key("nginx", "connect", "127.0.0.1", "127.0.0.1:80");
	char *t;

	k.v[NF_ML_NETNS] = "pid:42";
	h.v[NF_ML_NETNS] = "host";
	h.v[NF_ML_CGROUP] = "nginx.service";
	nf_metrics_stall(m, &k, "fix", 0.04, 100);
	nf_metrics_stall(m, &h, "fix", 0.04, 100);
	t = text_of(m);
	ck_assert_uint_eq(nf_metrics_series(m), 2);
	ck_assert_int_eq(lines_with(t, "naglefix_stalls_total{side=\"connect\",local=\"127.0.0.1\","
				       "peer=\"127.0.0.1:80\",netns=\"pid:42\"} 1\n"), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_stalls_total{holder=\"nginx\",cgroup=\"nginx.service\","
				       "side=\"connect\",local=\"127.0.0.1\",peer=\"127.0.0.1:80\","
				       "netns=\"host\"} 1\n"), 1);
	free(t);
	nf_metrics_free(m);
}
END_TEST

/* Every sample line follows its metric's TYPE line, every TYPE its HELP;
 * counters end in _total; no empty line. */
START_TEST(test_metrics_text_shape)
{
	struct nf_metrics *m = fresh(10, 60);
	struct nf_metrics_key a = key("java", "connect", "10.0.0.1", "10.0.0.2:7000");
	struct nf_metrics_counts c = { .packets = 7, .drops = 1, .namespaces = 1 };
	char *t, *save = NULL, family[128] = "", type[32] = "";

	nf_metrics_stall(m, &a, "fix", 0.04, 100);
	nf_metrics_set(m, &c);
	t = text_of(m);
	ck_assert_int_eq(lines_with(t, "naglefix_packets_total 7\n"), 1);
	ck_assert_int_eq(lines_with(t, "naglefix_packets_dropped_total 1\n"), 1);
	for (char *l = strtok_r(t, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char name[128];

		if (sscanf(l, "# HELP %127s", family) == 1) {
			type[0] = '\0';
			continue;
		}
		if (sscanf(l, "# TYPE %127s %31s", name, type) == 2) {
			ck_assert_str_eq(name, family);
			if (strcmp(type, "counter") == 0)
				ck_assert_int_eq(strcmp(name + strlen(name) - 6, "_total"), 0);
			continue;
		}
		ck_assert_msg(type[0] && strncmp(l, family, strlen(family)) == 0,
			      "line '%s' outside its family '%s'", l, family);
	}
	free(t);
	nf_metrics_free(m);
}
END_TEST

/* The file: the text whole, mode 0644 under any umask, no file left
 * beside it, and a link at the path replaced, not followed. */
START_TEST(test_metrics_write_file)
{
	char dir[] = "/tmp/check_metrics.XXXXXX", path[128], other[128], buf[64];
	struct stat st;
	mode_t old;
	FILE *f;
	DIR *d;
	int n = 0;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/naglefix.prom", dir);
	snprintf(other, sizeof(other), "%s/other", dir);
	f = fopen(other, "w");
	fputs("untouched\n", f);
	fclose(f);
	ck_assert_int_eq(symlink(other, path), 0);
	old = umask(077);
	ck_assert_int_eq(nf_metrics_write_file(path, "a 1\n", 4), 0);
	umask(old);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(st.st_mode & 0777, 0644);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	ck_assert_str_eq(buf, "a 1\n");
	f = fopen(other, "r");
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	ck_assert_str_eq(buf, "untouched\n");
	d = opendir(dir);
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	ck_assert_int_eq(n, 2); /* naglefix.prom and other */
	ck_assert_int_eq(nf_metrics_write_file("/nonexistent/dir/x.prom", "a 1\n", 4), -ENOENT);
	unlink(path);
	unlink(other);
	rmdir(dir);
}
END_TEST

static Suite *metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("series");

	unit_add(tc, test_metrics_no_stall_no_series);
	unit_add(tc, test_metrics_stalls_counted_per_holder);
	unit_add(tc, test_metrics_bound_overflow);
	unit_add(tc, test_metrics_expire);
	unit_add(tc, test_metrics_expiry_frees_room);
	unit_add(tc, test_metrics_label_values_escaped);
	unit_add(tc, test_metrics_cgroup_netns_and_empty_labels);
	unit_add(tc, test_metrics_text_shape);
	unit_add(tc, test_metrics_write_file);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return unit_run(srunner_create(metrics_suite()), "check_metrics");
}
