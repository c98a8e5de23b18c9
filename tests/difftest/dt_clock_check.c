/* dt_clock_check: the run's clock (dt_clock.h) against runs made here, each
 * a child of this process in a process group of its own. Prints "PASS
 * NAME", "FAIL NAME: why" or "SKIP NAME: why" per check, then "N passed, M
 * failed"; exit status 1 if one failed. Every loop runs SCHED_IDLE (no
 * more than the plain lane it runs in takes from others) and dies with
 * this process.
 *  - a run asleep (a hang) is timed at the wall's pace less this
 *    process's own delay, and reaches 300 ms (within 30 s of wall);
 *  - a run spinning alone (a livelock) reaches 300 ms (within 30 s);
 *  - a run kept off its CPU: one loop pinned beside five others of the same
 *    class gets a sixth of that CPU: in 1 s of wall (once the clock reads
 *    the run's tasks: DT_CLOCK_WALK_AFTER_MS) its clock gains under
 *    500 ms (the wall clock alone: 1 s);
 *  - a run kept off every CPU: a loop in a cgroup of its own (cgroup v1's
 *    cpu controller, made here and removed) allowed 10 ms a second is
 *    runnable and off a CPU 99% of the time, and its run delay grows only
 *    when it next runs: in 1 s of wall (likewise) its clock gains under
 *    500 ms. SKIP where that controller cannot be written (not root,
 *    cgroup v2 only). */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dt_clock.h"

#define CPU_V1 "/sys/fs/cgroup/cpu"
#define CG_PREFIX "naglefix-dtclock-"

static int cpu, failed, checks;

/* Writes S to DIR/FILE; 0, or -1. */
static int put(const char *dir, const char *file, const char *s)
{
	char path[512];
	FILE *f;
	int r;
	snprintf(path, sizeof path, "%s/%s", dir, file);
	if (!(f = fopen(path, "w")))
		return -1;
	r = fputs(s, f) < 0;
	return fclose(f) || r ? -1 : 0;
}

/* Removes the empty cgroups an earlier check that died left in CPU_V1. */
static void remove_stale(void)
{
	char path[512];
	struct dirent *e;
	DIR *d = opendir(CPU_V1);
	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, CG_PREFIX, strlen(CG_PREFIX))) {
			snprintf(path, sizeof path, CPU_V1 "/%s", e->d_name);
			rmdir(path);
		}
	if (d)
		closedir(d);
}

/* Makes DIR, a cgroup of cgroup v1's cpu controller allowed 10 ms of CPU a
 * second; 0, or -1 with errno (nothing left made). */
static int make_throttled(char *dir, size_t n)
{
	int e;
	snprintf(dir, n, CPU_V1 "/" CG_PREFIX "%d", (int)getpid());
	if (mkdir(dir, 0755) < 0)
		return -1;
	if (put(dir, "cpu.cfs_period_us", "1000000") < 0 || put(dir, "cpu.cfs_quota_us", "10000") < 0) {
		e = errno;
		rmdir(dir);
		errno = e;
		return -1;
	}
	return 0;
}

/* A SCHED_IDLE child on CPU (OWN: in a process group of its own; CG, if not
 * NULL: in that cgroup, joined last), spinning (SPIN) or asleep. It dies
 * with this process. */
static pid_t child(const char *cg, int own, int spin)
{
	pid_t parent = getpid(), pid = fork();
	if (pid == 0) {
		struct sched_param sp = { 0 };
		cpu_set_t set;
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		sched_setaffinity(0, sizeof set, &set);
		sched_setscheduler(0, SCHED_IDLE, &sp);
		if (own)
			setpgid(0, 0);
		if (cg && put(cg, "cgroup.procs", "0") < 0)
			_exit(1);
		for (;;)
			if (!spin)
				pause();
	}
	if (own && pid > 0)
		setpgid(pid, pid);
	return pid;
}

/* Kills and reaps PID. */
static void end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Ticks C every 50 ms until it reaches RUN_MS or WALL_MS passed; the run
 * time reached, in ms (*WALL: the wall time, ms). */
static long long tick_until(struct dt_clock *c, long long run_ms, long long wall_ms, long long *wall)
{
	long long start = c->last, used = 0;
	while (used < run_ms * 1000000 && c->last - start < wall_ms * 1000000) {
		usleep(50000);
		used = dt_clock_tick(c);
	}
	*wall = (c->last - start) / 1000000;
	return used / 1000000;
}

/* The run time C gains in 1 s of wall once it reads the run's tasks (after
 * DT_CLOCK_WALK_AFTER_MS), in ms (*WALL: that second's wall time). */
static long long second_read(struct dt_clock *c, long long *wall)
{
	long long w0, before = tick_until(c, 1000000, DT_CLOCK_WALK_AFTER_MS + 50, &w0);
	return tick_until(c, 1000000, 1000, wall) - before;
}

/* Prints check NAME's verdict (OK; else FMT with V and W) and counts it. */
static void verdict(const char *name, int ok, const char *fmt, long long v, long long w)
{
	checks++;
	if (ok) {
		printf("PASS %s\n", name);
		return;
	}
	failed++;
	printf("FAIL %s: ", name);
	printf(fmt, v, w);
	putchar('\n');
}

/* Whether PID is asleep (state S); waits for it up to 30 s. */
static int asleep(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 3000; i++, usleep(10000))
		if (dt_task_state(path) == 'S')
			return 1;
	return 0;
}

/* A run asleep: timed at the wall's pace less the caller's own delay (the
 * clock started once it sleeps: before, it was runnable, maybe kept off). */
static void check_asleep(void)
{
	struct dt_clock c;
	pid_t run = child(NULL, 1, 0);
	unsigned long long own0;
	long long ms, wall, own;
	if (!asleep(run)) {
		end(run);
		verdict("clock: a run asleep is timed at the wall's pace", 0, "the run not asleep after %lld s", 30, 0);
		return;
	}
	dt_clock_start(&c, &run, 1);
	own0 = c.own;
	ms = tick_until(&c, 300, 30000, &wall);
	own = (long long)(c.own - own0) / 1000000;
	end(run);
	verdict("clock: a run asleep is timed at the wall's pace", ms >= 300 && ms * 10 >= (wall - own) * 9,
		"%lld ms of run time in %lld ms of wall time (want 300, and 90%% of the wall less our own delay)",
		ms, wall);
}

/* A run spinning alone: timed (a livelock is a hang too). */
static void check_spinning(void)
{
	struct dt_clock c;
	pid_t run = child(NULL, 1, 1);
	long long ms, wall;
	dt_clock_start(&c, &run, 1);
	ms = tick_until(&c, 300, 30000, &wall);
	end(run);
	verdict("clock: a run spinning is timed", ms >= 300, "%lld ms of run time in %lld ms of wall time (want 300)",
		ms, wall);
}

/* A run sharing its CPU with five loops of its class. */
static void check_sharing(void)
{
	struct dt_clock c;
	pid_t busy[5], run;
	long long ms, wall;
	for (int i = 0; i < 5; i++)
		busy[i] = child(NULL, 0, 1);
	run = child(NULL, 1, 1);
	dt_clock_start(&c, &run, 1);
	ms = second_read(&c, &wall);
	end(run);
	for (int i = 0; i < 5; i++)
		end(busy[i]);
	verdict("clock: a run kept off its CPU is not timed", ms < 500,
		"%lld ms of run time in %lld ms of wall time (want < 500)", ms, wall);
}

/* A run throttled by a cgroup: runnable, off every CPU, no delay shown. */
static void check_throttled(void)
{
	struct dt_clock c;
	char cg[512];
	long long ms, wall;
	pid_t run;
	remove_stale();
	if (make_throttled(cg, sizeof cg) < 0) {
		printf("SKIP clock: a run kept off every CPU: no cgroup made in " CPU_V1 ": %s\n", strerror(errno));
		return;
	}
	run = child(cg, 1, 1);
	dt_clock_start(&c, &run, 1);
	ms = second_read(&c, &wall);
	end(run);
	verdict("clock: a run kept off every CPU is not timed", ms < 500,
		"%lld ms of run time in %lld ms of wall time (want < 500)", ms, wall);
	if (rmdir(cg) < 0) {
		checks++;
		failed++;
		printf("FAIL clock: the check's cgroup %s removed: %s\n", cg, strerror(errno));
	}
}

int main(void)
{
	cpu_set_t set;
	sched_getaffinity(0, sizeof set, &set);
	while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &set))
		cpu++;
	setvbuf(stdout, NULL, _IOLBF, 0);
	check_asleep();
	check_spinning();
	check_sharing();
	check_throttled();
	printf("%d passed, %d failed\n", checks - failed, failed);
	return failed ? 1 : 0;
}
