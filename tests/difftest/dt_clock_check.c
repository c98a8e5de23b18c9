/* dt_clock_check: the run's clock (dt_clock.h) against two runs made here.
 * Prints "PASS NAME" or "FAIL NAME: why" per check; exit status 1 if one
 * failed.
 *  - a run asleep (a hang): its clock keeps the wall's pace, so a hang is
 *    still found (300 ms of run time within 3 s of wall time);
 *  - a run kept off its CPU: a SCHED_IDLE loop pinned beside two nice 19
 *    loops gets at most 3/33 of that CPU (weights 3 and 15 each): in 1 s of
 *    wall its clock gains under 500 ms (the wall clock alone: 1 s);
 *  - a run kept off every CPU: a loop in a cgroup of its own (cgroup v1's
 *    cpu controller, made here and removed) allowed 10 ms a second is
 *    runnable and off a CPU 99% of the time, and its run delay grows only
 *    when it next runs: in 1 s of wall its clock gains under 500 ms. SKIP
 *    where that controller cannot be written (not root, cgroup v2 only). */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dt_clock.h"

#define CPU_V1 "/sys/fs/cgroup/cpu"

/* Writes S to DIR/FILE; 0, or -1. */
static int put(const char *dir, const char *file, const char *s)
{
	char path[256];
	FILE *f;
	int r;
	snprintf(path, sizeof path, "%s/%s", dir, file);
	if (!(f = fopen(path, "w")))
		return -1;
	r = fputs(s, f) < 0;
	return fclose(f) || r ? -1 : 0;
}

/* Makes DIR, a cgroup of cgroup v1's cpu controller allowed 10 ms of CPU a
 * second; 0, or -1 (nothing left made). */
static int make_throttled(char *dir, size_t n)
{
	snprintf(dir, n, CPU_V1 "/naglefix-dtclock-%d", (int)getpid());
	if (mkdir(dir, 0755) < 0)
		return -1;
	if (put(dir, "cpu.cfs_period_us", "1000000") < 0 || put(dir, "cpu.cfs_quota_us", "10000") < 0) {
		rmdir(dir);
		return -1;
	}
	return 0;
}

/* A child in its own process group (and in cgroup CG, if not NULL), on
 * CPU, spinning (SPIN) or asleep, at POLICY (SCHED_OTHER at nice NICE, or
 * SCHED_IDLE). */
static pid_t child(const char *cg, int cpu, int spin, int policy, int nice)
{
	pid_t pid = fork();
	if (pid == 0) {
		struct sched_param sp = { 0 };
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		setpgid(0, 0);
		if (cg && put(cg, "cgroup.procs", "0") < 0)
			_exit(1);
		sched_setaffinity(0, sizeof set, &set);
		sched_setscheduler(0, policy, &sp);
		if (policy == SCHED_OTHER)
			setpriority(PRIO_PROCESS, 0, nice);
		for (;;)
			if (!spin)
				pause();
		_exit(0);
	}
	return pid;
}

static void end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Ticks C every 50 ms until it reaches RUN_MS or WALL_MS passed; the run
 * time reached, in ms. */
static long long tick_until(struct dt_clock *c, long long run_ms, long long wall_ms)
{
	long long start = c->last, used = 0;
	while (used < run_ms * 1000000 && c->last - start < wall_ms * 1000000) {
		usleep(50000);
		used = dt_clock_tick(c);
	}
	return used / 1000000;
}

static int verdict(const char *name, int ok, const char *fmt, long long v)
{
	printf(ok ? "PASS %s\n" : "FAIL %s: ", name);
	if (!ok) {
		printf(fmt, v);
		putchar('\n');
	}
	return !ok;
}

int main(void)
{
	cpu_set_t set;
	struct dt_clock c;
	int cpu = 0, failed = 0, checks = 2;
	char cg[256];
	pid_t run, busy[2];
	long long ms;

	sched_getaffinity(0, sizeof set, &set);
	while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &set))
		cpu++;
	run = child(NULL, cpu, 0, SCHED_OTHER, 0);
	dt_clock_start(&c, run);
	ms = tick_until(&c, 300, 3000);
	end(run);
	failed += verdict("clock: a run asleep is timed at the wall's pace", ms >= 300,
			  "%lld ms of run time in 3 s of wall time", ms);

	busy[0] = child(NULL, cpu, 1, SCHED_OTHER, 19);
	busy[1] = child(NULL, cpu, 1, SCHED_OTHER, 19);
	run = child(NULL, cpu, 1, SCHED_IDLE, 0);
	dt_clock_start(&c, run);
	ms = tick_until(&c, 1000, 1000);
	end(run);
	end(busy[0]);
	end(busy[1]);
	failed += verdict("clock: a run kept off its CPU is not timed", ms < 500,
			  "%lld ms of run time in 1 s of wall time (want < 500)", ms);

	if (make_throttled(cg, sizeof cg) < 0) {
		printf("SKIP clock: a run kept off every CPU: no cgroup of " CPU_V1 " made: %s\n", strerror(errno));
	} else {
		run = child(cg, cpu, 1, SCHED_OTHER, 0);
		dt_clock_start(&c, run);
		ms = tick_until(&c, 1000, 1000);
		end(run);
		rmdir(cg);
		failed += verdict("clock: a run kept off every CPU is not timed", ms < 500,
				  "%lld ms of run time in 1 s of wall time (want < 500)", ms);
		checks++;
	}
	printf("%d passed, %d failed\n", checks - failed, failed);
	return failed ? 1 : 0;
}
