/*
 * check_conn.c - the fd table (src/core/conn.c).
 *
 * The table is process state set up once by nf_conn_init: every test
 * calls it itself and relies on Check's fork mode for a fresh process.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/nf_conn.h"
#include "suites.h"

#define CHUNK 256           /* entries per chunk in src/core/conn.c */
#define HIGH_LIMIT 200000   /* RLIMIT_NOFILE for the high-fd tests */
#define HIGH_FD 150000      /* an fd number above 65536 */

static void init_table(int mark_open)
{
	ck_assert_int_eq(nf_conn_init(mark_open), 0);
}

static enum nf_kind kind_of(int fd)
{
	return nf_conn_kind(nf_conn_get(fd));
}

/* A fd number that is not open in this process, from start upwards. */
static int closed_fd_from(int start)
{
	int fd = start;

	while (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
		fd++;
	return fd;
}

/*
 * Raises RLIMIT_NOFILE (soft and hard) to HIGH_LIMIT; 0, or -1 (errno
 * set). Raising the hard limit needs CAP_SYS_RESOURCE, which even root
 * may lack in a container: high_limit_why() asks before the test is added.
 */
static int raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return -1;
	if (rl.rlim_max < HIGH_LIMIT)
		rl.rlim_max = HIGH_LIMIT;
	rl.rlim_cur = HIGH_LIMIT;
	return setrlimit(RLIMIT_NOFILE, &rl);
}

/* Why RLIMIT_NOFILE cannot be raised to HIGH_LIMIT here (tried in a child,
 * which goes away with the raised limit: EPERM), or NULL: it can, or it
 * failed otherwise (the test runs, and fails). */
static const char *high_limit_why(void)
{
	static char why[128];
	pid_t pid = fork();
	int status = -1;

	if (pid == 0)
		_exit(raise_fd_limit() == 0 ? 0 : errno);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != EPERM)
		return NULL;
	snprintf(why, sizeof(why), "cannot raise the hard RLIMIT_NOFILE to %d (uid %d, no "
		 "CAP_SYS_RESOURCE)", HIGH_LIMIT, (int)geteuid());
	return why;
}

/* ---- lookup and allocation ----------------------------------------------- */

START_TEST(test_conn_get_null_before_ensure)
{
	struct nf_conn *c;

	init_table(0);
	ck_assert_ptr_null(nf_conn_get(5));
	c = nf_conn_ensure(5);
	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_eq(nf_conn_get(5), c);
	ck_assert_ptr_eq(nf_conn_ensure(5), c);
}
END_TEST

START_TEST(test_conn_ensure_allocates_one_chunk)
{
	init_table(0);
	ck_assert_ptr_nonnull(nf_conn_ensure(CHUNK + 3));
	ck_assert_ptr_nonnull(nf_conn_get(CHUNK));
	ck_assert_ptr_nonnull(nf_conn_get(2 * CHUNK - 1));
	ck_assert_ptr_null(nf_conn_get(CHUNK - 1));
	ck_assert_ptr_null(nf_conn_get(2 * CHUNK));
}
END_TEST

START_TEST(test_conn_new_entry_is_fresh_and_undecided)
{
	struct nf_conn *c;

	init_table(0);
	c = nf_conn_ensure(9);
	ck_assert_int_eq(nf_conn_kind(c), NF_KIND_FRESH);
	ck_assert_int_eq(atomic_load(&c->action), NF_ACT_UNDECIDED);
	ck_assert_int_eq(atomic_load(&nf_conn_get(10)->action), NF_ACT_UNDECIDED);
	ck_assert_int_eq(nf_conn_kind(NULL), NF_KIND_FRESH);
}
END_TEST

#define RAISE_MAX (1 << 24) /* src/core/conn.c: how far beyond the hard limit it covers */

/* /proc/sys/fs/nr_open, read the plain way, at most RAISE_MAX (what the
 * table covers for a later raise), or -1 if it cannot be read. */
static int read_nr_open(void)
{
	FILE *f = fopen("/proc/sys/fs/nr_open", "r");
	long v = -1;

	if (f == NULL)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v > RAISE_MAX ? RAISE_MAX : (int)v;
}

/* read_nr_open(); the test fails if it cannot. */
static int nr_open(void)
{
	int v = read_nr_open();

	ck_assert_msg(v >= 0, "cannot read /proc/sys/fs/nr_open");
	return v;
}

/* Why no fd above 65536 can exist here (fs.nr_open), or NULL. */
static const char *nr_open_why(void)
{
	static char why[96];
	int v = read_nr_open();

	if (v >= HIGH_LIMIT)
		return NULL;
	snprintf(why, sizeof(why), "fs.nr_open is %d, below %d", v, HIGH_LIMIT);
	return why;
}

START_TEST(test_conn_limit_covers_hard_rlimit)
{
	struct rlimit rl;
	int top;

	init_table(0);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	ck_assert_msg(rl.rlim_max != RLIM_INFINITY, "test needs a finite hard limit");
	top = (int)rl.rlim_max > nr_open() ? (int)rl.rlim_max : nr_open();
	ck_assert_int_ge(nf_conn_limit(), (int)rl.rlim_max);
	ck_assert_int_lt(nf_conn_limit(), top + CHUNK);
	ck_assert_ptr_nonnull(nf_conn_ensure((int)rl.rlim_max - 1));
}
END_TEST

/* A privileged program may raise its hard limit after the library loaded,
 * up to fs.nr_open: the table covers that too (up to RAISE_MAX). */
START_TEST(test_conn_limit_covers_nr_open)
{
	int ceiling = nr_open();

	init_table(0);
	ck_assert_int_ge(nf_conn_limit(), ceiling);
	ck_assert_ptr_nonnull(nf_conn_ensure(ceiling - 1));
	ck_assert_int_eq(kind_of(ceiling - 1), NF_KIND_FRESH);
}
END_TEST

START_TEST(test_conn_beyond_limit_is_null)
{
	int limit;

	init_table(0);
	limit = nf_conn_limit();
	ck_assert_ptr_nonnull(nf_conn_ensure(limit - 1));
	ck_assert_ptr_null(nf_conn_get(limit));
	ck_assert_ptr_null(nf_conn_ensure(limit));
	ck_assert_ptr_null(nf_conn_ensure(INT_MAX));
	ck_assert_ptr_null(nf_conn_get(-1));
	ck_assert_ptr_null(nf_conn_ensure(-1));
	nf_conn_reset(limit, NF_KIND_TCP); /* must be ignored, not crash */
	ck_assert_ptr_null(nf_conn_get(limit));
}
END_TEST

START_TEST(test_conn_fd_above_65536)
{
	ck_assert_int_ge(nr_open(), HIGH_LIMIT);
	init_table(0);
	ck_assert_int_ge(nf_conn_limit(), HIGH_LIMIT);
	ck_assert_ptr_null(nf_conn_get(HIGH_FD));
	nf_conn_reset(HIGH_FD, NF_KIND_TCP);
	ck_assert_int_eq(kind_of(HIGH_FD), NF_KIND_TCP);
	ck_assert_int_eq(kind_of(HIGH_FD - 65536), NF_KIND_FRESH);
	ck_assert_ptr_nonnull(nf_conn_ensure(HIGH_LIMIT - 1));
}
END_TEST

/* ---- concurrent allocation ------------------------------------------------ */

#define NTHREADS 8
#define ROUNDS 60 /* chunks raced on, at most */

static pthread_barrier_t start_line;
static int round_base;
static struct nf_conn *seen[NTHREADS][2];

/* Every thread ensures the shared fd and its own fd of the same new chunk. */
static void *ensure_racer(void *arg)
{
	long i = (long)arg;

	pthread_barrier_wait(&start_line);
	seen[i][0] = nf_conn_ensure(round_base);
	seen[i][1] = nf_conn_ensure(round_base + 1 + (int)i);
	nf_conn_reset(round_base + 1 + (int)i, NF_KIND_TCP);
	return NULL;
}

static void race_one_chunk(int base)
{
	pthread_t t[NTHREADS];

	round_base = base;
	for (long i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, ensure_racer, (void *)i), 0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
}

static void check_one_chunk(int base)
{
	struct nf_conn *shared = nf_conn_get(base);

	for (int i = 0; i < NTHREADS; i++) {
		ck_assert_msg(seen[i][0] == shared, "chunk at %d: thread %d got another entry", base, i);
		ck_assert_msg(seen[i][1] == shared + 1 + i, "chunk at %d: thread %d's entry lost", base, i);
		ck_assert_msg(kind_of(base + 1 + i) == NF_KIND_TCP, "chunk at %d: fd %d reset lost",
			      base, base + 1 + i);
	}
}

START_TEST(test_conn_concurrent_ensure_shares_one_chunk)
{
	int rounds;

	init_table(0);
	rounds = nf_conn_limit() / CHUNK - 1; /* each round takes a new chunk */
	if (rounds > ROUNDS)
		rounds = ROUNDS;
	ck_assert_int_ge(rounds, 1);
	pthread_barrier_init(&start_line, NULL, NTHREADS);
	for (int r = 1; r <= rounds; r++) {
		ck_assert_ptr_null(nf_conn_get(r * CHUNK));
		race_one_chunk(r * CHUNK);
		check_one_chunk(r * CHUNK);
	}
	pthread_barrier_destroy(&start_line);
}
END_TEST

/* ---- reset, forget, copy -------------------------------------------------- */

/* Puts fd in a decided state, as the hooks would. */
static struct nf_conn *decided_tcp(int fd, enum nf_side side, enum nf_action action)
{
	struct nf_conn *c;

	nf_conn_reset(fd, NF_KIND_TCP);
	c = nf_conn_get(fd);
	c->side = side;
	c->opts = nf_policy_opts_default(action);
	c->opts.buffer = 4096;
	atomic_store(&c->prog_nodelay, 1);
	atomic_store(&c->action, action);
	return c;
}

START_TEST(test_conn_reset_marks_kind_undecided)
{
	struct nf_conn *c;

	init_table(0);
	c = decided_tcp(12, NF_SIDE_CONNECT, NF_ACT_NODELAY);
	nf_conn_reset(12, NF_KIND_OTHER);
	ck_assert_int_eq(nf_conn_kind(c), NF_KIND_OTHER);
	ck_assert_int_eq(atomic_load(&c->action), NF_ACT_UNDECIDED);
	ck_assert_int_eq(atomic_load(&c->prog_nodelay), 0);
}
END_TEST

START_TEST(test_conn_reset_allocates)
{
	init_table(0);
	ck_assert_ptr_null(nf_conn_get(3 * CHUNK));
	nf_conn_reset(3 * CHUNK, NF_KIND_UNKNOWN);
	ck_assert_int_eq(kind_of(3 * CHUNK), NF_KIND_UNKNOWN);
}
END_TEST

START_TEST(test_conn_forget_returns_to_fresh)
{
	struct nf_conn *c;

	init_table(0);
	c = decided_tcp(12, NF_SIDE_CONNECT, NF_ACT_COALESCE);
	nf_conn_forget(12);
	ck_assert_ptr_eq(nf_conn_get(12), c);
	ck_assert_int_eq(nf_conn_kind(c), NF_KIND_FRESH);
	ck_assert_int_eq(atomic_load(&c->action), NF_ACT_UNDECIDED);
	ck_assert_int_eq(atomic_load(&c->prog_nodelay), 0);
}
END_TEST

START_TEST(test_conn_forget_does_not_allocate)
{
	init_table(0);
	nf_conn_forget(7);
	nf_conn_forget(-1);
	nf_conn_forget(nf_conn_limit());
	ck_assert_ptr_null(nf_conn_get(7));
}
END_TEST

START_TEST(test_conn_copy_copies_state)
{
	struct nf_conn *to;

	init_table(0);
	decided_tcp(3, NF_SIDE_ACCEPT, NF_ACT_COALESCE);
	nf_conn_copy(3, 2 * CHUNK + 1);
	to = nf_conn_get(2 * CHUNK + 1);
	ck_assert_ptr_nonnull(to);
	ck_assert_int_eq(nf_conn_kind(to), NF_KIND_TCP);
	ck_assert_int_eq(to->side, NF_SIDE_ACCEPT);
	ck_assert_int_eq(atomic_load(&to->action), NF_ACT_COALESCE);
	ck_assert_int_eq(to->opts.action, NF_ACT_COALESCE);
	ck_assert_uint_eq(to->opts.buffer, 4096);
	ck_assert_int_eq(atomic_load(&to->prog_nodelay), 1);
	ck_assert_int_eq(kind_of(3), NF_KIND_TCP); /* the source is untouched */
}
END_TEST

START_TEST(test_conn_copy_from_fresh_makes_target_fresh)
{
	init_table(0);
	decided_tcp(20, NF_SIDE_CONNECT, NF_ACT_NODELAY);
	decided_tcp(21, NF_SIDE_CONNECT, NF_ACT_NODELAY);
	nf_conn_ensure(22);
	nf_conn_copy(22, 20);        /* allocated, FRESH */
	nf_conn_copy(5 * CHUNK, 21); /* never allocated */
	ck_assert_int_eq(kind_of(20), NF_KIND_FRESH);
	ck_assert_int_eq(kind_of(21), NF_KIND_FRESH);
	ck_assert_int_eq(atomic_load(&nf_conn_get(20)->action), NF_ACT_UNDECIDED);
}
END_TEST

START_TEST(test_conn_copy_from_fresh_does_not_allocate)
{
	init_table(0);
	nf_conn_copy(4, 6 * CHUNK);
	ck_assert_ptr_null(nf_conn_get(6 * CHUNK));
}
END_TEST

START_TEST(test_conn_forget_range_forgets_only_the_range)
{
	init_table(0);
	for (int fd = 10; fd <= 20; fd++)
		nf_conn_reset(fd, NF_KIND_TCP);
	nf_conn_forget_range(12, 18);
	ck_assert_int_eq(kind_of(11), NF_KIND_TCP);
	ck_assert_int_eq(kind_of(12), NF_KIND_FRESH);
	ck_assert_int_eq(kind_of(18), NF_KIND_FRESH);
	ck_assert_int_eq(kind_of(19), NF_KIND_TCP);
}
END_TEST

START_TEST(test_conn_forget_range_over_unallocated_chunk)
{
	init_table(0);
	nf_conn_reset(10, NF_KIND_TCP);
	nf_conn_reset(3 * CHUNK + 5, NF_KIND_TCP);
	nf_conn_reset(3 * CHUNK + 6, NF_KIND_TCP);
	nf_conn_forget_range(CHUNK + 7, 3 * CHUNK + 5);
	ck_assert_int_eq(kind_of(10), NF_KIND_TCP);
	ck_assert_int_eq(kind_of(3 * CHUNK + 5), NF_KIND_FRESH);
	ck_assert_int_eq(kind_of(3 * CHUNK + 6), NF_KIND_TCP);
	ck_assert_ptr_null(nf_conn_get(CHUNK + 7));
	ck_assert_ptr_null(nf_conn_get(2 * CHUNK));
}
END_TEST

START_TEST(test_conn_forget_range_clamps_to_limit)
{
	int last;

	init_table(0);
	last = nf_conn_limit() - 1;
	nf_conn_reset(last, NF_KIND_TCP);
	nf_conn_reset(4, NF_KIND_TCP);
	nf_conn_forget_range(3, UINT_MAX);
	ck_assert_int_eq(kind_of(last), NF_KIND_FRESH);
	ck_assert_int_eq(kind_of(4), NF_KIND_FRESH);
}
END_TEST

/* The child's reset reaches every chunk in use, the highest one included. */
START_TEST(test_conn_atfork_child_unlocks_every_chunk)
{
	struct nf_conn *low, *high;

	init_table(0);
	low = nf_conn_ensure(4);
	high = nf_conn_ensure(nf_conn_limit() - 1);
	ck_assert_ptr_nonnull(low);
	ck_assert_ptr_nonnull(high);
	pthread_mutex_lock(&low->lock);
	pthread_mutex_lock(&high->lock);
	nf_conn_atfork_child();
	ck_assert_int_eq(pthread_mutex_trylock(&low->lock), 0);
	ck_assert_int_eq(pthread_mutex_trylock(&high->lock), 0);
}
END_TEST

/* ---- marking the fds open at start-up ------------------------------------- */

START_TEST(test_conn_init_marks_open_fds_unknown)
{
	int p[2];
	int never;

	ck_assert_int_eq(pipe(p), 0);
	never = closed_fd_from(3 * CHUNK);
	init_table(1);
	ck_assert_int_eq(kind_of(p[0]), NF_KIND_UNKNOWN);
	ck_assert_int_eq(kind_of(p[1]), NF_KIND_UNKNOWN);
	ck_assert_int_eq(kind_of(0), NF_KIND_UNKNOWN);
	ck_assert_int_eq(kind_of(closed_fd_from(p[1])), NF_KIND_FRESH);
	ck_assert_int_eq(kind_of(never), NF_KIND_FRESH);
}
END_TEST

START_TEST(test_conn_init_skips_its_listing_fd)
{
	int fd;

	init_table(1);
	fd = open("/dev/null", O_RDONLY); /* reuses the lowest free number */
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(kind_of(fd), NF_KIND_FRESH);
}
END_TEST

START_TEST(test_conn_init_without_marking_leaves_fds_fresh)
{
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	init_table(0);
	ck_assert_int_eq(kind_of(p[0]), NF_KIND_FRESH);
	ck_assert_int_eq(kind_of(p[1]), NF_KIND_FRESH);
}
END_TEST

START_TEST(test_conn_init_marks_high_open_fd)
{
	int p[2];

	ck_assert_msg(raise_fd_limit() == 0, "setrlimit(%d): %s", HIGH_LIMIT, strerror(errno));
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(dup2(p[0], HIGH_FD), HIGH_FD);
	init_table(1);
	ck_assert_int_eq(kind_of(HIGH_FD), NF_KIND_UNKNOWN);
	ck_assert_int_eq(kind_of(HIGH_FD + 1), NF_KIND_FRESH);
}
END_TEST

/* ---- suite ---------------------------------------------------------------- */

static TCase *table_tcase(void)
{
	TCase *tc = tcase_create("table");

	unit_add(tc, test_conn_get_null_before_ensure);
	unit_add(tc, test_conn_ensure_allocates_one_chunk);
	unit_add(tc, test_conn_new_entry_is_fresh_and_undecided);
	unit_add(tc, test_conn_limit_covers_hard_rlimit);
	unit_add(tc, test_conn_limit_covers_nr_open);
	unit_add(tc, test_conn_beyond_limit_is_null);
	unit_add_unless(tc, test_conn_fd_above_65536, nr_open_why());
	unit_add(tc, test_conn_concurrent_ensure_shares_one_chunk);
	return tc;
}

static TCase *state_tcase(void)
{
	TCase *tc = tcase_create("state");

	unit_add(tc, test_conn_reset_marks_kind_undecided);
	unit_add(tc, test_conn_reset_allocates);
	unit_add(tc, test_conn_forget_returns_to_fresh);
	unit_add(tc, test_conn_forget_does_not_allocate);
	unit_add(tc, test_conn_copy_copies_state);
	unit_add(tc, test_conn_copy_from_fresh_makes_target_fresh);
	unit_add(tc, test_conn_copy_from_fresh_does_not_allocate);
	unit_add(tc, test_conn_forget_range_forgets_only_the_range);
	unit_add(tc, test_conn_forget_range_over_unallocated_chunk);
	unit_add(tc, test_conn_forget_range_clamps_to_limit);
	unit_add(tc, test_conn_atfork_child_unlocks_every_chunk);
	return tc;
}

/* ---- the hooks' first test: the leave-alone byte ------------------------ */

/* fd 5 as a TCP socket decided action (with audit=1 if audit); returns the
 * byte nf_conn_publish stores for it. The table is made. */
static unsigned char leave_byte(enum nf_action action, int audit)
{
	struct nf_conn *c;

	nf_conn_reset(5, NF_KIND_TCP);
	c = nf_conn_get(5);
	c->opts.action = action;
	c->opts.audit = audit;
	atomic_store(&c->action, action);
	nf_conn_publish(5);
	ck_assert_int_eq(nf_conn_leave[5], nf_conn_leaves_alone(5));
	return nf_conn_leave[5];
}

START_TEST(test_conn_leave_pass_and_nodelay)
{
	init_table(0);
	ck_assert_int_eq(leave_byte(NF_ACT_PASS, 0), 1);
	ck_assert_int_eq(leave_byte(NF_ACT_NODELAY, 0), 1); /* the option does it all */
}
END_TEST

START_TEST(test_conn_leave_not_where_hooks_work)
{
	init_table(0);
	ck_assert_int_eq(leave_byte(NF_ACT_NODELAY, 1), 0); /* audit=1 times its sends */
	ck_assert_int_eq(leave_byte(NF_ACT_COALESCE, 0), 0);
	ck_assert_int_eq(leave_byte(NF_ACT_AUDIT, 0), 0);
	ck_assert_int_eq(leave_byte(NF_ACT_AUTO, 0), 0);
	ck_assert_int_eq(leave_byte(NF_ACT_QUICKACK, 0), 0);
	ck_assert_int_eq(leave_byte(NF_ACT_UNDECIDED, 0), 0);
}
END_TEST

static TCase *leave_tcase(void)
{
	TCase *tc = tcase_create("leave");

	unit_add(tc, test_conn_leave_pass_and_nodelay);
	unit_add(tc, test_conn_leave_not_where_hooks_work);
	return tc;
}

static TCase *startup_tcase(void)
{
	TCase *tc = tcase_create("startup");

	unit_add(tc, test_conn_init_marks_open_fds_unknown);
	unit_add(tc, test_conn_init_skips_its_listing_fd);
	unit_add(tc, test_conn_init_without_marking_leaves_fds_fresh);
	unit_add_unless(tc, test_conn_init_marks_high_open_fd, high_limit_why());
	return tc;
}

Suite *conn_suite(void)
{
	Suite *s = suite_create("conn");

	suite_add_tcase(s, table_tcase());
	suite_add_tcase(s, state_tcase());
	suite_add_tcase(s, startup_tcase());
	suite_add_tcase(s, leave_tcase());
	return s;
}
