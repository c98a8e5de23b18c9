/*
 * process.c - exec*, posix_spawn*, system, popen, exit, _exit, _Exit,
 * fork, vfork and the destructor: the moments a process's coalesce buffers would be lost
 * or copied, or overtaken by a child's writes on an inherited socket.
 *
 * exec and exit drain every buffer first (the memory is about to go).
 * fork flushes first and the child drops its copies: the parent alone
 * sends what is left, so no byte is ever sent twice. At exit, audit
 * writes its per-peer summaries (once, whichever of these comes first).
 */
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../nf_hooks.h"
#include "nf_audit.h"
#include "nf_coalesce.h"
#include "nf_conn.h"
#include "nf_init.h"
#include "nf_real.h"
#include "nf_timer.h"

/* The forking thread's signal mask, from prepare to parent or child: no
 * handler may run in the child while its locks and buffers are made new. */
static __thread sigset_t fork_mask __attribute__((tls_model("initial-exec")));

void nf_process_atfork_prepare(void)
{
	sigset_t all;

	nf_coalesce_before_child();
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &fork_mask);
}

void nf_process_atfork_parent(void)
{
	pthread_sigmask(SIG_SETMASK, &fork_mask, NULL);
}

void nf_process_atfork_child(void)
{
	nf_conn_atfork_child();
	nf_coalesce_atfork_child();
	nf_timer_atfork_child();
	nf_audit_atfork_child();
	pthread_sigmask(SIG_SETMASK, &fork_mask, NULL);
}

/* Runs at unload, after main returned: exit() from libc itself is not
 * seen by the exit hook. */
__attribute__((destructor)) static void nf_destructor(void)
{
	nf_coalesce_flush_all(1);
	nf_audit_log_exit();
}

/*
 * The image is about to go: what coalesce holds is sent, and audit's
 * pending repeats and summaries are written (a failed exec writes none
 * later).
 */
static void before_exec(void)
{
	nf_coalesce_flush_all(1);
	nf_audit_log_exit();
}

NF_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	nf_init();
	before_exec();
	return nf_real.execve(path, argv, envp);
}

NF_EXPORT int execv(const char *path, char *const argv[])
{
	nf_init();
	before_exec();
	return nf_real.execv(path, argv);
}

NF_EXPORT int execvp(const char *file, char *const argv[])
{
	nf_init();
	before_exec();
	return nf_real.execvp(file, argv);
}

NF_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	nf_init();
	before_exec();
	return nf_real.execvpe(file, argv, envp);
}

NF_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	nf_init();
	before_exec();
	return nf_real.fexecve(fd, argv, envp);
}

/*
 * A spawned child may write to a socket it inherits: what the parent
 * buffered before the spawn goes first, without blocking (as before fork).
 * The child itself (glibc and musl run it in the parent's memory) never
 * reaches these hooks: it execs through libc's internal calls.
 */
NF_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			  const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	nf_init();
	nf_coalesce_before_child();
	return nf_real.posix_spawn(pid, path, fa, attr, argv, envp);
}

NF_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			   const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	nf_init();
	nf_coalesce_before_child();
	return nf_real.posix_spawnp(pid, file, fa, attr, argv, envp);
}

/*
 * system and popen: libc starts their shell with its own internal spawn,
 * which the hooks above do not see; what coalesce holds goes out first, so
 * the shell's children cannot overtake it on an inherited socket.
 */
NF_EXPORT int system(const char *command)
{
	nf_init();
	nf_coalesce_before_child();
	return nf_real.system(command);
}

NF_EXPORT FILE *popen(const char *command, const char *type)
{
	nf_init();
	nf_coalesce_before_child();
	return nf_real.popen(command, type);
}

/*
 * vfork is made a fork, as POSIX allows. A vfork child runs in the
 * parent's memory and on its stack: a wrapper that called libc's vfork
 * would return in the child, whose next calls reuse the wrapper's frame,
 * and the parent would then resume in that clobbered frame. And the
 * child's exec or _exit would run these hooks on the parent's own state
 * (draining, forgetting descriptors, writing the audit summary as if the
 * parent exited). fork (libc's: not interposed) gives the child its own
 * memory and runs the atfork handlers: buffers flushed before, the
 * child's copies dropped, so no byte is lost or sent twice.
 * What changes: the page tables are copied, the parent does not wait for
 * the child's exec, and a child that writes to the parent's memory
 * (undefined for vfork) no longer changes it. posix_spawn, which libc runs
 * without copying, stays the fast way to start a program.
 */
NF_EXPORT pid_t vfork(void)
{
	nf_init();
	return fork();
}

/* Counts the arguments of an execl* call after arg0, up to the NULL. */
static int count_args(va_list ap)
{
	int n = 0;

	while (va_arg(ap, char *))
		n++;
	return n;
}

/*
 * execl, execlp and execle gather their arguments into an argv and go
 * through the hooks above. with_env: execle's environment follows the NULL.
 */
#define GATHER_ARGS(arg0, argv, envp, with_env)                        \
	do {                                                           \
		va_list ap_, cp_;                                      \
		va_start(ap_, arg0);                                   \
		va_copy(cp_, ap_);                                     \
		int n_ = count_args(cp_);                              \
		va_end(cp_);                                           \
		argv = alloca(((size_t)n_ + 2) * sizeof(char *));      \
		argv[0] = (char *)(arg0);                              \
		for (int i_ = 1; i_ <= n_ + 1; i_++)                   \
			argv[i_] = va_arg(ap_, char *);                \
		if (with_env)                                          \
			envp = va_arg(ap_, char **);                   \
		va_end(ap_);                                           \
	} while (0)

NF_EXPORT int execl(const char *path, const char *arg, ...)
{
	char **argv, **envp = NULL;

	GATHER_ARGS(arg, argv, envp, 0);
	(void)envp;
	return execv(path, argv);
}

NF_EXPORT int execlp(const char *file, const char *arg, ...)
{
	char **argv, **envp = NULL;

	GATHER_ARGS(arg, argv, envp, 0);
	(void)envp;
	return execvp(file, argv);
}

NF_EXPORT int execle(const char *path, const char *arg, ...)
{
	char **argv, **envp = NULL;

	GATHER_ARGS(arg, argv, envp, 1);
	return execve(path, argv, envp);
}

NF_EXPORT void exit(int status)
{
	nf_init();
	nf_coalesce_flush_all(1);
	nf_audit_log_exit();
	nf_real.exit(status);
}

NF_EXPORT void _exit(int status)
{
	nf_init();
	nf_coalesce_flush_all(1);
	nf_audit_log_exit();
	nf_real._exit(status);
}

NF_EXPORT void _Exit(int status)
{
	nf_init();
	nf_coalesce_flush_all(1);
	nf_audit_log_exit();
	nf_real._Exit(status);
}
