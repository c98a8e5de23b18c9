/* dt_clock.h: a run's clock (dt_clock.c): the wall time of a run less the
 * time its tasks were kept off a CPU, so that a run in a SCHED_IDLE lane
 * beside busy tasks is not taken for a hang. */
#ifndef DT_CLOCK_H
#define DT_CLOCK_H
#include <sys/types.h>

#define DT_CLOCK_TASKS 64 /* past them, a tick counts its whole slice kept off */
#define DT_CLOCK_GROUPS 2
#define DT_CLOCK_WALK_AFTER_MS 200 /* the groups' tasks read from then on */

struct dt_clock {
	pid_t pgrp[DT_CLOCK_GROUPS];
	int ngrp;
	long long last, used; /* ns: the last tick, the run's time so far */
	long long walk_from; /* ns: the first tick that reads the groups' tasks */
	unsigned long long own; /* the caller's thread's run delay at the last tick */
	int n;
	struct {
		pid_t tid;
		unsigned long long on, delay; /* ns on a CPU, and runnable off one */
	} t[DT_CLOCK_TASKS]; /* the groups' tasks at the last tick */
};

/* Starts C for a run made of the N (at most DT_CLOCK_GROUPS) process
 * groups PGRP (N 0: the caller's delay alone: a group that waits on
 * another, as a program on its peer, is kept off when the other is); the
 * caller waits beside the run, of the same scheduling class. */
void dt_clock_start(struct dt_clock *c, const pid_t *pgrp, int n);

/* Advances C to now: adds the wall time since the last tick less the
 * longest time any one of the run's tasks (read from DT_CLOCK_WALK_AFTER_MS
 * of wall on: a task first seen counts its delay so far, up to the
 * slice), or the caller, spent runnable
 * but off a CPU in it (tasks wait side by side: the longest, not the sum;
 * a task runnable at the tick that had no CPU since the last one: the
 * whole slice).
 * Returns the run's time so far in ns. */
long long dt_clock_tick(struct dt_clock *c);
/* The state letter of the task whose /proc stat file is PATH ('R', 'S',
 * ...: the field after the name, which may hold anything); 0 if unread. */
char dt_task_state(const char *path);
#endif
