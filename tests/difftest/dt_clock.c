/* dt_clock.c: a run's clock (dt_clock.h). A task's time runnable but off a
 * CPU is the second field of /proc/PID/task/TID/schedstat (ns). The run's
 * tasks are those of its process groups (the program's threads and the
 * children its FORK ops made; the peer's), found by a walk of /proc at each
 * tick once the run has lasted DT_CLOCK_WALK_AFTER_MS (most runs end
 * sooner; before, the caller's own delay stands in): some 70 processes
 * here, well under a millisecond. A task that ended between two ticks takes
 * its delay with it: the caller's own delay in the same slice stands in. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dt_clock.h"

static long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Reads up to N-1 bytes of PATH into B; its length, or -1. */
static ssize_t read_small(const char *path, char *b, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r = fd < 0 ? -1 : read(fd, b, n - 1);
	if (fd >= 0)
		close(fd);
	if (r >= 0)
		b[r] = 0;
	return r;
}

/* A schedstat file's time on a CPU and time runnable but off one (ns);
 * -1 if unreadable. */
static int sched_of(const char *path, unsigned long long *on, unsigned long long *waited)
{
	char b[96];
	if (read_small(path, b, sizeof b) <= 0 || sscanf(b, "%llu %llu", on, waited) != 2)
		return -1;
	return 0;
}

char dt_task_state(const char *path)
{
	char b[512];
	const char *p;
	if (read_small(path, b, sizeof b) > 0 && (p = strrchr(b, ')')) && p[1] == ' ')
		return p[2];
	return 0;
}

/* PID's process group (stat's fifth field, after the name in parentheses
 * that may hold anything); -1 if gone. */
static pid_t pgrp_of(const char *pid)
{
	char path[288], b[512];
	const char *p;
	int g;
	snprintf(path, sizeof path, "/proc/%s/stat", pid);
	if (read_small(path, b, sizeof b) <= 0 || !(p = strrchr(b, ')')))
		return -1;
	return sscanf(p + 1, " %*c %*d %d", &g) == 1 ? g : -1;
}

/* The time task TID of PID (seen at the last tick, in OLD) was kept off a
 * CPU in the slice since, of SLICE ns; its numbers now go in C's table. A
 * task's run delay grows only when it next gets a CPU, so a task runnable
 * now that has had no CPU since the last tick was kept off the whole slice. */
static long long kept_off(const struct dt_clock *old, struct dt_clock *c, const char *pid, pid_t tid,
			  long long slice)
{
	char path[320];
	unsigned long long on, delay;
	long long k = 0;
	int i = 0;
	snprintf(path, sizeof path, "/proc/%s/task/%d/schedstat", pid, tid);
	if (sched_of(path, &on, &delay) < 0 || c->n == DT_CLOCK_TASKS)
		return 0;
	while (i < old->n && old->t[i].tid != tid)
		i++;
	if (i == old->n) /* new since the last tick: all its delay is in this slice */
		k = (long long)delay;
	else if (delay >= old->t[i].delay)
		k = (long long)(delay - old->t[i].delay);
	snprintf(path, sizeof path, "/proc/%s/task/%d/stat", pid, tid);
	if (i < old->n && on == old->t[i].on && dt_task_state(path) == 'R')
		k = slice;
	c->t[c->n].tid = tid;
	c->t[c->n].on = on;
	c->t[c->n++].delay = delay;
	return k;
}

/* The longest time any thread of PID was kept off a CPU in the slice. */
static long long threads_kept_off(const struct dt_clock *old, struct dt_clock *c, const char *pid,
				  long long slice)
{
	char path[288];
	struct dirent *e;
	long long max = 0;
	DIR *d;
	snprintf(path, sizeof path, "/proc/%s/task", pid);
	d = opendir(path);
	while (d && (e = readdir(d))) {
		pid_t tid = atoi(e->d_name);
		long long k = tid > 0 ? kept_off(old, c, pid, tid, slice) : 0;
		if (k > max)
			max = k;
	}
	if (d)
		closedir(d);
	return max;
}

void dt_clock_start(struct dt_clock *c, const pid_t *pgrp, int n)
{
	unsigned long long on;
	memset(c, 0, sizeof *c);
	for (int i = 0; i < n && i < DT_CLOCK_GROUPS; i++)
		c->pgrp[c->ngrp++] = pgrp[i];
	c->last = now_ns();
	c->walk_from = c->last + DT_CLOCK_WALK_AFTER_MS * 1000000LL;
	sched_of("/proc/thread-self/schedstat", &on, &c->own);
}

/* Whether process PID (a /proc name) is in one of C's groups. */
static int in_run(const struct dt_clock *c, const char *pid)
{
	pid_t g;
	if (pid[0] < '1' || pid[0] > '9' || (g = pgrp_of(pid)) <= 0)
		return 0;
	for (int i = 0; i < c->ngrp; i++)
		if (c->pgrp[i] == g)
			return 1;
	return 0;
}

long long dt_clock_tick(struct dt_clock *c)
{
	struct dt_clock old = *c;
	unsigned long long on, own = c->own;
	long long t = now_ns(), slice = t - c->last, max;
	struct dirent *e;
	DIR *d = c->ngrp && t >= c->walk_from ? opendir("/proc") : NULL;
	sched_of("/proc/thread-self/schedstat", &on, &own);
	max = (long long)(own - c->own);
	c->n = 0;
	while (d && (e = readdir(d)))
		if (in_run(c, e->d_name)) {
			long long k = threads_kept_off(&old, c, e->d_name, slice);
			if (k > max)
				max = k;
		}
	if (d)
		closedir(d);
	if (c->n == DT_CLOCK_TASKS)
		max = slice;
	c->used += slice - (max < slice ? max : slice);
	c->last = t;
	c->own = own;
	return c->used;
}
