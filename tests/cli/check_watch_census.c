/*
 * check_watch_census.c - where watch finds the host's network namespaces
 * (src/cli/watch/watch_census.c) and the thread that looks
 * (watch_scanwork.c), on a namespace this test makes: a child's new one
 * is found with a descriptor and named after the child; found without
 * one once the set holds it; not found once the child has gone; with
 * --netns words only, not opened; and the thread hands over a census
 * that has it. Root only (unshare(CLONE_NEWNET)); else SKIP.
 */
#include <check.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/watch/watch_int.h"
#include "../unit/unit.h"

static pid_t child = -1;

/* A child in a network namespace of its own, waiting to be killed; it
 * dies with the test's process too (a failed check or a timeout kills
 * that), so neither it nor its namespace outlives the test. */
static void make_child(void)
{
	pid_t parent = getpid();
	int ready[2];
	char c;

	ck_assert_int_eq(pipe(ready), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		close(ready[0]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(1); /* the parent is gone already */
		if (unshare(CLONE_NEWNET) || write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
}

static void end_child(void)
{
	kill(child, SIGKILL);
	ck_assert_int_eq(waitpid(child, NULL, 0), child);
}

/* A census of every namespace, this process's held (known). */
static void census_init(struct nf_watch_census *c, int all_ns)
{
	struct stat st;

	memset(c, 0, sizeof(*c));
	ck_assert_int_eq(stat("/proc/self/ns/net", &st), 0);
	c->all_ns = all_ns;
	c->nsfs_dev = (uint64_t)st.st_dev;
	c->known = calloc(4, sizeof(*c->known));
	ck_assert_ptr_nonnull(c->known);
	c->capknown = 4;
	c->known[c->nknown++] = (uint64_t)st.st_ino;
}

static const struct nf_watch_census_ent *entry(const struct nf_watch_census *c, uint64_t ino)
{
	for (size_t i = 0; i < c->nent; i++)
		if (c->ent[i].ino == ino)
			return &c->ent[i];
	return NULL;
}

START_TEST(test_census_new_namespace_opened)
{
	struct nf_watch_census c;
	const struct nf_watch_census_ent *e;
	char name[32];
	struct stat st;
	uint64_t ino;

	make_child();
	census_init(&c, 1);
	ck_assert_uint_ne(ino = nf_watch_proc_ns(child), 0);
	nf_watch_census_take(&c);
	ck_assert(!c.failed);
	ck_assert_ptr_nonnull(e = entry(&c, ino));
	ck_assert_int_ge(e->fd, 0);
	ck_assert_int_eq(fstat(e->fd, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_ino, ino);
	snprintf(name, sizeof(name), "pid:%d", (int)child);
	ck_assert_str_eq(e->name, name);
	ck_assert_ptr_nonnull(e = entry(&c, c.known[0])); /* this process's: held, no descriptor */
	ck_assert_int_eq(e->fd, -1);
	/* held now: found again, no descriptor */
	c.known[c.nknown++] = ino;
	nf_watch_census_take(&c);
	ck_assert_ptr_nonnull(e = entry(&c, ino));
	ck_assert_int_eq(e->fd, -1);
	/* the child gone: its namespace with it */
	end_child();
	nf_watch_census_take(&c);
	ck_assert_ptr_null(entry(&c, ino));
	nf_watch_census_free(&c);
}
END_TEST

/* --netns words only (none here): a process's namespace not held is
 * not opened. */
START_TEST(test_census_specs_only_opens_none)
{
	struct nf_watch_census c;

	make_child();
	census_init(&c, 0);
	nf_watch_census_take(&c);
	ck_assert_ptr_null(entry(&c, nf_watch_proc_ns(child)));
	ck_assert_ptr_nonnull(entry(&c, c.known[0]));
	end_child();
	nf_watch_census_free(&c);
}
END_TEST

/* The thread takes a census NF_WATCH_SCAN_MS after it starts and hands
 * it over with the new namespace in it; given back, it takes another. */
START_TEST(test_scanwork_hands_census_over)
{
	struct nf_watch *w = calloc(1, sizeof(*w));
	struct nf_watch_census *got = NULL;
	const struct nf_watch_census_ent *e;
	struct timespec ms10 = { 0, 10000000 };
	uint64_t ino;
	int i;

	ck_assert_ptr_nonnull(w);
	make_child();
	ino = nf_watch_proc_ns(child);
	census_init(&w->census, 1);
	ck_assert_int_eq(nf_watch_scanwork_start(w, &w->census), 0);
	for (i = 0; i < 500 && !(got = nf_watch_scanwork_ready(w)); i++)
		nanosleep(&ms10, NULL);
	ck_assert_ptr_eq(got, &w->census);
	ck_assert_ptr_nonnull(e = entry(got, ino));
	ck_assert_int_ge(e->fd, 0);
	got->known[got->nknown++] = ino;
	nf_watch_scanwork_back(w);
	for (i = 0; i < 500 && !(got = nf_watch_scanwork_ready(w)); i++)
		nanosleep(&ms10, NULL);
	ck_assert_ptr_nonnull(got);
	ck_assert_ptr_nonnull(e = entry(got, ino));
	ck_assert_int_eq(e->fd, -1);
	nf_watch_scanwork_stop(w);
	ck_assert_ptr_null(w->scanwork);
	end_child();
	nf_watch_census_free(&w->census);
	free(w);
}
END_TEST

static Suite *census_suite(void)
{
	Suite *s = suite_create("watch_census");
	TCase *tc = tcase_create("census");
	const char *why = geteuid() ? "needs root (unshare CLONE_NEWNET)" : NULL;

	tcase_set_timeout(tc, 30);
	unit_add_unless(tc, test_census_new_namespace_opened, why);
	unit_add_unless(tc, test_census_specs_only_opens_none, why);
	unit_add_unless(tc, test_scanwork_hands_census_over, why);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return unit_run(srunner_create(census_suite()), "check_watch_census");
}
