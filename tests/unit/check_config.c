/*
 * check_config.c - from a config file and NAGLEFIX_MODE to a policy
 * (src/common/config.c). Fixtures are read by path relative to tests/unit.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nf_config.h"
#include "suites.h"

#define GOOD_FILE "fixtures/good-every-form.conf"
#define GOOD_FILE_RULES 11

static struct nf_policy pol;
static char err[512];
static char temp_dir[64];
static char temp_path[96];

static void setup(void)
{
	memset(&pol, 0, sizeof(pol));
	err[0] = '\0';
}

static void teardown(void)
{
	nf_policy_free(&pol);
}

static void assert_passes_everything(void)
{
	ck_assert_uint_eq(pol.nrules, 0);
	ck_assert_ptr_null(pol.rules);
	ck_assert_int_eq(pol.has_accept_rules, 0);
	ck_assert_int_eq(pol.dflt.action, NF_ACT_PASS);
	ck_assert_int_eq(pol.dflt.audit, 0);
}

/*
 * Gives this test process (a Check fork) its own empty /etc, so whether
 * the default file exists no longer depends on the machine. Needs
 * CAP_SYS_ADMIN: returns 0 (errno set) without it.
 */
static int private_etc(void)
{
	return unshare(CLONE_NEWNS) == 0 &&
	       mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
	       mount("none", "/etc", "tmpfs", 0, "size=64k") == 0;
}

/* 1 if the default file is absent (made so if we can). */
static int no_default_file(void)
{
	return private_etc() || access(NF_CONF_DEFAULT_PATH, F_OK) != 0;
}

/* Why private_etc() fails here (tried in a child, whose mounts go with
 * it), or NULL if it works. */
static const char *private_etc_why(void)
{
	static char why[128];
	pid_t pid = fork();
	int status = -1;

	if (pid == 0)
		_exit(private_etc() ? 0 : errno);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) == 0)
		return NULL; /* the test itself says */
	snprintf(why, sizeof(why), "no private /etc (unshare or mount: %s; needs CAP_SYS_ADMIN)",
		 strerror(WEXITSTATUS(status)));
	return why;
}

/* Why the default file cannot be made absent here, or NULL. */
static const char *default_file_why(void)
{
	if (private_etc_why() == NULL || access(NF_CONF_DEFAULT_PATH, F_OK) != 0)
		return NULL;
	return NF_CONF_DEFAULT_PATH " exists and no private /etc";
}

/* ---- nf_config_load -------------------------------------------------------- */

START_TEST(test_config_load_file)
{
	ck_assert_int_eq(nf_config_load(&pol, GOOD_FILE, NULL, 0, err, sizeof(err)), 0);
	ck_assert_uint_eq(pol.nrules, GOOD_FILE_RULES);
	ck_assert_int_eq(pol.dflt.action, NF_ACT_NODELAY);
	ck_assert_int_eq(pol.dflt.audit, 1);
	ck_assert_int_eq(pol.has_accept_rules, 1);
}
END_TEST

START_TEST(test_config_mode_overrides_default)
{
	ck_assert_int_eq(nf_config_load(&pol, GOOD_FILE, "coalesce", 0, err, sizeof(err)), 0);
	ck_assert_uint_eq(pol.nrules, GOOD_FILE_RULES);
	ck_assert_int_eq(pol.dflt.action, NF_ACT_COALESCE);
	ck_assert_int_eq(pol.dflt.audit, 0); /* the file's default options go too */
	ck_assert_uint_eq(pol.dflt.buffer, NF_BUFFER_DEFAULT);
	ck_assert_uint_eq(pol.dflt.flush_us, NF_FLUSH_DEFAULT_US);
}
END_TEST

START_TEST(test_config_mode_with_empty_file)
{
	ck_assert_int_eq(nf_config_load(&pol, "fixtures/empty.conf", "nodelay", 0, err,
					sizeof(err)), 0);
	ck_assert_uint_eq(pol.nrules, 0);
	ck_assert_int_eq(pol.dflt.action, NF_ACT_NODELAY);
}
END_TEST

START_TEST(test_config_mode_without_file)
{
	ck_assert_msg(no_default_file(), "%s exists and no private /etc", NF_CONF_DEFAULT_PATH);
	ck_assert_int_eq(nf_config_load(&pol, NULL, "audit", 0, err, sizeof(err)), 0);
	ck_assert_uint_eq(pol.nrules, 0);
	ck_assert_int_eq(pol.dflt.action, NF_ACT_AUDIT);
}
END_TEST

/* NAGLEFIX_MODE (naglefix -m) takes both new actions, with their defaults. */
START_TEST(test_config_mode_auto_and_quickack)
{
	ck_assert_int_eq(nf_config_load(&pol, "fixtures/empty.conf", "auto", 0, err,
					sizeof(err)), 0);
	ck_assert_int_eq(pol.dflt.action, NF_ACT_AUTO);
	ck_assert_uint_eq(pol.dflt.flush_us, NF_AUTO_FLUSH_DEFAULT_US);
	nf_policy_free(&pol);
	ck_assert_int_eq(nf_config_load(&pol, "fixtures/empty.conf", "quickack", 0, err,
					sizeof(err)), 0);
	ck_assert_int_eq(pol.dflt.action, NF_ACT_QUICKACK);
}
END_TEST

START_TEST(test_config_nothing_given_passes_everything)
{
	ck_assert_msg(no_default_file(), "%s exists and no private /etc", NF_CONF_DEFAULT_PATH);
	pol.dflt.action = NF_ACT_NODELAY; /* load must initialise it */
	ck_assert_int_eq(nf_config_load(&pol, NULL, NULL, 0, err, sizeof(err)), 0);
	assert_passes_everything();
}
END_TEST

START_TEST(test_config_bad_mode_passes_everything)
{
	ck_assert_int_eq(nf_config_load(&pol, GOOD_FILE, "fast", 0, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "NAGLEFIX_MODE: unknown action 'fast' "
			 "(expected pass, nodelay, coalesce, audit, auto or quickack)");
	assert_passes_everything();
}
END_TEST

START_TEST(test_config_missing_file_passes_everything)
{
	ck_assert_int_eq(nf_config_load(&pol, "fixtures/no-such.conf", "nodelay", 0, err,
					sizeof(err)), -ENOENT);
	ck_assert_str_eq(err, "fixtures/no-such.conf: No such file or directory");
	assert_passes_everything();
}
END_TEST

START_TEST(test_config_directory_is_an_error)
{
	ck_assert_int_eq(nf_config_load(&pol, "fixtures", NULL, 0, err, sizeof(err)), -EISDIR);
	ck_assert_str_eq(err, "fixtures: Is a directory");
	assert_passes_everything();
}
END_TEST

START_TEST(test_config_device_is_not_a_regular_file)
{
	ck_assert_int_eq(nf_config_load(&pol, "/dev/null", NULL, 0, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "/dev/null: not a regular file");
	assert_passes_everything();
}
END_TEST

START_TEST(test_config_rule_error_passes_everything)
{
	/* the fixture sets 'default nodelay' before its bad line */
	ck_assert_int_eq(nf_config_load(&pol, "fixtures/bad-port-range.conf", NULL, 0, err,
					sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "fixtures/bad-port-range.conf:6: "
			 "bad port '90-80' (expected *, N or N-M within 1-65535)");
	assert_passes_everything();
}
END_TEST

START_TEST(test_config_parse_file_error_leaves_pass_policy)
{
	pol.nrules = 7;
	pol.dflt.action = NF_ACT_NODELAY;
	ck_assert_int_eq(nf_config_parse_file("fixtures/no-such.conf", &pol, err,
					      sizeof(err)), -ENOENT);
	ck_assert_str_eq(err, "fixtures/no-such.conf: No such file or directory");
	assert_passes_everything();
}
END_TEST

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_config_default_file_when_no_path)
{
	ck_assert_msg(private_etc(), "no private /etc: %s", strerror(errno));
	write_file(NF_CONF_DEFAULT_PATH, "default coalesce\naccept *:80 nodelay\n");
	ck_assert_int_eq(nf_config_load(&pol, NULL, NULL, 0, err, sizeof(err)), 0);
	ck_assert_int_eq(pol.dflt.action, NF_ACT_COALESCE);
	ck_assert_uint_eq(pol.nrules, 1);
	nf_policy_free(&pol);
	ck_assert_int_eq(nf_config_load(&pol, "fixtures/empty.conf", NULL, 0, err, sizeof(err)), 0);
	ck_assert_int_eq(pol.dflt.action, NF_ACT_PASS); /* a path given: default file unread */
}
END_TEST

/* Secure mode: the file named by the environment and the mode are ignored;
 * the default file counts only if root owns it and only root may write it. */
START_TEST(test_config_secure_ignores_environment)
{
	ck_assert_msg(private_etc(), "no private /etc: %s", strerror(errno));
	ck_assert_int_eq(nf_config_load(&pol, GOOD_FILE, "coalesce", 1, err, sizeof(err)), 0);
	assert_passes_everything();
	write_file(NF_CONF_DEFAULT_PATH, "default nodelay\n");
	ck_assert_int_eq(chmod(NF_CONF_DEFAULT_PATH, 0644), 0);
	ck_assert_int_eq(nf_config_load(&pol, GOOD_FILE, "coalesce", 1, err, sizeof(err)), 0);
	ck_assert_int_eq(pol.dflt.action, NF_ACT_NODELAY);
}
END_TEST

START_TEST(test_config_secure_rejects_untrusted_file)
{
	ck_assert_msg(private_etc(), "no private /etc: %s", strerror(errno));
	write_file(NF_CONF_DEFAULT_PATH, "default nodelay\n");
	ck_assert_int_eq(chmod(NF_CONF_DEFAULT_PATH, 0666), 0);
	ck_assert_int_eq(nf_config_load(&pol, NULL, NULL, 1, err, sizeof(err)), -EPERM);
	ck_assert_str_eq(err, NF_CONF_DEFAULT_PATH ": not owned by root, or writable by others: "
			      "ignored by a setuid program");
	assert_passes_everything();
	ck_assert_int_eq(chmod(NF_CONF_DEFAULT_PATH, 0644), 0);
	ck_assert_int_eq(chown(NF_CONF_DEFAULT_PATH, 1, 0), 0);
	ck_assert_int_eq(nf_config_load(&pol, NULL, NULL, 1, err, sizeof(err)), -EPERM);
	ck_assert_int_eq(nf_config_load(&pol, NULL, NULL, 0, err, sizeof(err)), 0);
	ck_assert_int_eq(pol.dflt.action, NF_ACT_NODELAY); /* not secure: read as usual */
}
END_TEST

START_TEST(test_config_none_reads_no_file)
{
	ck_assert_msg(private_etc(), "no private /etc: %s", strerror(errno));
	write_file(NF_CONF_DEFAULT_PATH, "default nodelay\n");
	ck_assert_int_eq(nf_config_load(&pol, "none", "audit", 0, err, sizeof(err)), 0);
	ck_assert_uint_eq(pol.nrules, 0);
	ck_assert_int_eq(pol.dflt.action, NF_ACT_AUDIT);
}
END_TEST

/* The file NAGLEFIX_CONF names: "none" is none; unset, the default file if it exists. */
START_TEST(test_config_path_of_none_unset_and_named)
{
	ck_assert_ptr_null(nf_config_path("none"));
	ck_assert_str_eq(nf_config_path("x.conf"), "x.conf");
	if (!private_etc()) {
		fprintf(stderr, "check_config: SKIPPED config path test: no private /etc\n");
		return;
	}
	ck_assert_ptr_null(nf_config_path(NULL));
	ck_assert_ptr_null(nf_config_path(""));
	write_file(NF_CONF_DEFAULT_PATH, "default nodelay\n");
	ck_assert_str_eq(nf_config_path(NULL), NF_CONF_DEFAULT_PATH);
	ck_assert_str_eq(nf_config_path(""), NF_CONF_DEFAULT_PATH);
	ck_assert_ptr_null(nf_config_path("none"));
}
END_TEST

START_TEST(test_config_mode_same_action_keeps_options)
{
	write_file("/tmp/nf-same-action.conf", "default coalesce buffer=4k flush=2ms\n");
	ck_assert_int_eq(nf_config_load(&pol, "/tmp/nf-same-action.conf", "coalesce", 0, err,
				       sizeof(err)), 0);
	ck_assert_uint_eq(pol.dflt.buffer, 4096);
	ck_assert_uint_eq(pol.dflt.flush_us, 2000);
	ck_assert_int_eq(nf_config_load(&pol, "/tmp/nf-same-action.conf", "nodelay", 0, err,
				       sizeof(err)), 0);
	ck_assert_int_eq(pol.dflt.action, NF_ACT_NODELAY);
	unlink("/tmp/nf-same-action.conf");
}
END_TEST

/* The file's bytes reach the parser whole: a NUL byte is found, not the end. */
START_TEST(test_config_parse_file_rejects_nul_byte)
{
	static const char text[] = "default nodelay\n*:80 coal\0esce\n";
	char path[] = "/tmp/nf-nul.XXXXXX";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	ck_assert_int_eq(nf_config_parse_file(path, &pol, err, sizeof(err)), -EINVAL);
	unlink(path);
	ck_assert_str_eq(strchr(err, ':'), ":2: NUL byte at column 10");
	assert_passes_everything();
}
END_TEST

/* ---- nf_config_read_file --------------------------------------------------- */

/* Writes len bytes of text lines into a new temporary file. */
static const char *temp_file_of(size_t len, char **content)
{
	char *buf = malloc(len + 1);
	int fd;

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < len; i++)
		buf[i] = i % 64 == 63 ? '\n' : (char)('a' + i % 26);
	buf[len] = '\0';
	snprintf(temp_path, sizeof(temp_path), "/tmp/check_config.XXXXXX");
	fd = mkstemp(temp_path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
	*content = buf;
	return temp_path;
}

START_TEST(test_config_read_empty_file)
{
	char *text = NULL;

	ck_assert_int_eq(nf_config_read_file("fixtures/empty.conf", &text), 0);
	ck_assert_ptr_nonnull(text);
	ck_assert_str_eq(text, "");
	free(text);
}
END_TEST

START_TEST(test_config_read_file_whole_content)
{
	char *want, *text = NULL;
	const char *path = temp_file_of(100000, &want);
	int rc = nf_config_read_file(path, &text);

	unlink(path);
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(strlen(text), 100000);
	ck_assert_msg(strcmp(text, want) == 0, "content differs");
	free(text);
	free(want);
}
END_TEST

START_TEST(test_config_read_too_large_file)
{
	char *want, *text = NULL;
	const char *path = temp_file_of(2u << 20, &want);
	int rc = nf_config_read_file(path, &text);

	unlink(path);
	free(want);
	ck_assert_int_eq(rc, -EFBIG);
}
END_TEST

/* 1 MiB is the limit: a file of exactly that is read, one byte more is
 * not (the limit was 2 MiB less a byte, the buffer's doubling past 1 MiB). */
START_TEST(test_config_read_limit_is_1_mib)
{
	char *want, *text = NULL;
	const char *path = temp_file_of(NF_CONF_SIZE_MAX, &want);
	int rc = nf_config_read_file(path, &text);

	unlink(path);
	free(want);
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(strlen(text), NF_CONF_SIZE_MAX);
	free(text);
	path = temp_file_of(NF_CONF_SIZE_MAX + 1, &want);
	rc = nf_config_read_file(path, &text);
	unlink(path);
	free(want);
	ck_assert_int_eq(rc, -EFBIG);
}
END_TEST

/* The message names the limit. */
START_TEST(test_config_too_large_says_1_mib)
{
	char *want;
	const char *path = temp_file_of(NF_CONF_SIZE_MAX + 1, &want);
	int rc = nf_config_parse_file(path, &pol, err, sizeof(err));

	unlink(path);
	free(want);
	ck_assert_int_eq(rc, -EFBIG);
	ck_assert_str_eq(strchr(err, ':'), ": larger than 1 MiB, the most a policy file may hold");
	assert_passes_everything();
}
END_TEST

START_TEST(test_config_read_missing_file)
{
	char *text = NULL;

	ck_assert_int_eq(nf_config_read_file("fixtures/no-such.conf", &text), -ENOENT);
	ck_assert_ptr_null(text);
}
END_TEST

struct fifo_read {
	const char *path;
	int rc;
};

static void *read_in_thread(void *arg)
{
	struct fifo_read *r = arg;
	char *text;

	r->rc = nf_config_read_file(r->path, &text);
	if (r->rc == 0)
		free(text);
	return NULL;
}

/* Opens the FIFO's other end so a reader stuck in open() can go on. */
static void release_fifo_reader(const char *path, pthread_t t)
{
	int w = open(path, O_WRONLY | O_NONBLOCK);

	pthread_join(t, NULL);
	if (w >= 0)
		close(w);
}

START_TEST(test_config_read_fifo_does_not_block)
{
	struct fifo_read r = { .path = temp_path, .rc = 1 };
	struct timespec deadline;
	pthread_t t;
	int rc;

	snprintf(temp_dir, sizeof(temp_dir), "/tmp/check_config.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(temp_dir));
	snprintf(temp_path, sizeof(temp_path), "%s/fifo.conf", temp_dir);
	ck_assert_int_eq(mkfifo(temp_path, 0600), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, read_in_thread, &r), 0);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 20; /* below the test's 30 s: a FIFO blocks for good, a busy host only slows */
	rc = pthread_timedjoin_np(t, NULL, &deadline);
	if (rc == ETIMEDOUT)
		release_fifo_reader(temp_path, t);
	unlink(temp_path);
	rmdir(temp_dir);
	ck_assert_msg(rc == 0, "nf_config_read_file blocked in open() on a FIFO with no "
		      "writer (a NAGLEFIX_CONF naming a FIFO hangs the program)");
	ck_assert_int_eq(r.rc, -EINVAL);
}
END_TEST

/* ---- nf_config_check_file, nf_config_mode ------------------------------------ */

struct said {
	char line[8][512];
	int n;
};

static void collect(const char *e, void *arg)
{
	struct said *s = arg;

	if (s->n < 8)
		snprintf(s->line[s->n], sizeof(s->line[0]), "%s", e);
	s->n++;
}

#define FOUR "fixtures/bad-four-errors.conf"

/* Every error, in order, each with its line; the good rules kept. */
START_TEST(test_config_check_file_says_every_error)
{
	struct said s = { .n = 0 };

	ck_assert_int_eq(nf_config_check_file(FOUR, &pol, collect, &s), 4);
	ck_assert_int_eq(s.n, 4);
	ck_assert_str_eq(s.line[0], FOUR ":3: 'bogus' is neither a keyword (default, connect, "
				    "accept) nor an IP address");
	ck_assert_str_eq(s.line[1], FOUR ":4: bad prefix length '/33' (expected 0 to 32)");
	ck_assert_str_eq(s.line[2], FOUR ":6: second 'default' line (the first is line 5)");
	ck_assert_str_eq(s.line[3], FOUR ":7: bad port '99999' (expected *, N or N-M within 1-65535)");
	ck_assert_uint_eq(pol.nrules, 2);
}
END_TEST

/* Its first error is the library's message for the file, word for word. */
START_TEST(test_config_check_file_first_is_the_librarys)
{
	struct said s = { .n = 0 };
	struct nf_policy lib;

	ck_assert_int_eq(nf_config_load(&lib, FOUR, NULL, 0, err, sizeof(err)), -EINVAL);
	nf_policy_free(&lib);
	nf_config_check_file(FOUR, &pol, collect, &s);
	ck_assert_str_eq(s.line[0], err);
}
END_TEST

/* A file the library takes: no error, its rules. */
START_TEST(test_config_check_file_good)
{
	struct said s = { .n = 0 };

	ck_assert_int_eq(nf_config_check_file(GOOD_FILE, &pol, collect, &s), 0);
	ck_assert_int_eq(s.n, 0);
	ck_assert_uint_eq(pol.nrules, GOOD_FILE_RULES);
}
END_TEST

/* A file that cannot be read is one error, the library's. */
START_TEST(test_config_check_file_unreadable)
{
	struct said s = { .n = 0 };

	ck_assert_int_eq(nf_config_check_file("fixtures/no-such.conf", &pol, collect, &s), 1);
	ck_assert_str_eq(s.line[0], "fixtures/no-such.conf: No such file or directory");
	ck_assert_int_eq(nf_config_check_file("fixtures", &pol, collect, &s), 1);
	ck_assert_str_eq(s.line[1], "fixtures: Is a directory");
}
END_TEST

/* NAGLEFIX_MODE: the action, or the library's message. */
START_TEST(test_config_mode_names_and_refuses)
{
	enum nf_action a;
	struct nf_policy lib;
	char lib_err[512];

	ck_assert_int_eq(nf_config_mode("coalesce", &a, err, sizeof(err)), 0);
	ck_assert_int_eq(a, NF_ACT_COALESCE);
	ck_assert_int_eq(nf_config_mode("fastest", &a, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(nf_config_load(&lib, "none", "fastest", 0, lib_err, sizeof(lib_err)),
			 -EINVAL);
	nf_policy_free(&lib);
	ck_assert_str_eq(err, lib_err);
}
END_TEST

/* ---- suite ----------------------------------------------------------------- */

static TCase *load_tcase(void)
{
	TCase *tc = tcase_create("load");

	tcase_add_checked_fixture(tc, setup, teardown);
	unit_add(tc, test_config_load_file);
	unit_add(tc, test_config_mode_overrides_default);
	unit_add(tc, test_config_mode_with_empty_file);
	unit_add_unless(tc, test_config_mode_without_file, default_file_why());
	unit_add_unless(tc, test_config_default_file_when_no_path, private_etc_why());
	unit_add(tc, test_config_mode_auto_and_quickack);
	unit_add_unless(tc, test_config_nothing_given_passes_everything, default_file_why());
	unit_add(tc, test_config_bad_mode_passes_everything);
	unit_add(tc, test_config_missing_file_passes_everything);
	unit_add(tc, test_config_directory_is_an_error);
	unit_add(tc, test_config_device_is_not_a_regular_file);
	unit_add(tc, test_config_rule_error_passes_everything);
	unit_add(tc, test_config_parse_file_error_leaves_pass_policy);
	unit_add(tc, test_config_parse_file_rejects_nul_byte);
	return tc;
}

static TCase *read_tcase(void)
{
	TCase *tc = tcase_create("read");

	unit_add(tc, test_config_read_empty_file);
	unit_add(tc, test_config_read_file_whole_content);
	unit_add(tc, test_config_read_too_large_file);
	unit_add(tc, test_config_read_limit_is_1_mib);
	unit_add(tc, test_config_too_large_says_1_mib);
	unit_add(tc, test_config_check_file_says_every_error);
	unit_add(tc, test_config_check_file_first_is_the_librarys);
	unit_add(tc, test_config_check_file_good);
	unit_add(tc, test_config_check_file_unreadable);
	unit_add(tc, test_config_mode_names_and_refuses);
	unit_add(tc, test_config_read_missing_file);
	unit_add(tc, test_config_read_fifo_does_not_block);
	unit_add_unless(tc, test_config_secure_ignores_environment, private_etc_why());
	unit_add_unless(tc, test_config_none_reads_no_file, private_etc_why());
	unit_add(tc, test_config_mode_same_action_keeps_options);
	unit_add_unless(tc, test_config_secure_rejects_untrusted_file, private_etc_why());
	unit_add(tc, test_config_path_of_none_unset_and_named);
	return tc;
}

Suite *config_suite(void)
{
	Suite *s = suite_create("config");

	suite_add_tcase(s, load_tcase());
	suite_add_tcase(s, read_tcase());
	return s;
}
