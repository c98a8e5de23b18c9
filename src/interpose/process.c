/*
 * process.c - exec*, posix_spawn*, system, popen, exit, _exit, _Exit,
 * quick_exit, pthread_exit, thrd_exit, fork, _Fork, vfork (and glibc's
 * exported __vfork and _IO_popen) and the destructor: the moments a
 * process's coalesce buffers would be lost or copied, or overtaken by a
 * child's writes on an inherited socket.
 *
 * exec and exit end coalescing (nf_coalesce_end: every buffer drained, no
 * write buffered from then on, so an atexit handler's bytes go straight
 * out); an exec that fails resumes it. fork, posix_spawn, system and popen
 * first put every held byte into the kernel, and a forked child drops its
 * copies: the parent alone sends what is left, so no byte is ever sent
 * twice. At exit, audit writes its per-peer summaries (once, whichever of
 * these comes first). An exec or spawn of a program the library cannot
 * enter (static, set-user-ID...) is told to the naglefix command
 * (nf_reach.h), when it asked.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <threads.h>
#include <unistd.h>

#include "hooks_int.h"
#include "actions/audit/nf_audit.h"
#include "actions/coalesce/nf_coalesce.h"
#include "core/nf_aside.h"
#include "core/nf_reach.h"
#include "core/nf_real.h"
#include "core/nf_timer.h"
#include "process/nf_atfork.h"
#include "process/nf_init.h"

#define NF_AT_PATH_MAX 4096

/* The process ends: coalescing stops, what is held is sent, audit writes
 * its summaries. */
static void before_end(void)
{
	nf_coalesce_end();
	nf_audit_log_exit();
}

/* Runs at unload, after main returned, and when the last thread ends
 * after main's pthread_exit: exit() from libc itself is not seen by the
 * exit hook. */
__attribute__((destructor)) static void nf_destructor(void)
{
	before_end();
}

/*
 * The image is about to go for path (found as execvp finds it if search):
 * the command hears of a program the library cannot enter; then as at
 * exit (a failed exec writes no audit summary later).
 */
static void before_exec(const char *path, int search)
{
	nf_reach_exec(path, search, (long)getpid());
	before_end();
}

/* The path of what execveat(dirfd, path, flags) runs, in buf; NULL for a
 * NULL path (libc's prototype says it cannot be: the kernel says EFAULT,
 * so the compiler is not told what it may assume). */
static const char *at_path(int dirfd, const char *path, int flags, char *buf, size_t len)
{
	__asm__("" : "+r"(path));
	if (!path)
		return NULL;
	if (path[0] == '/' || (dirfd == AT_FDCWD && path[0]))
		return path;
	if (!path[0] && (flags & AT_EMPTY_PATH))
		snprintf(buf, len, "/proc/self/fd/%d", dirfd);
	else if (dirfd == AT_FDCWD)
		return path;
	else
		snprintf(buf, len, "/proc/self/fd/%d/%s", dirfd, path);
	return buf;
}

/* The exec returned, so it failed: the process goes on, and so does
 * coalescing. Returns rc, errno kept. */
static int after_exec(int rc)
{
	int saved = errno;

	nf_coalesce_resume();
	errno = saved;
	return rc;
}

NF_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	nf_init();
	before_exec(path, 0);
	return after_exec(nf_real.execve(path, argv, envp));
}

NF_EXPORT int execv(const char *path, char *const argv[])
{
	nf_init();
	before_exec(path, 0);
	return after_exec(nf_real.execv(path, argv));
}

NF_EXPORT int execvp(const char *file, char *const argv[])
{
	nf_init();
	before_exec(file, 1);
	return after_exec(nf_real.execvp(file, argv));
}

NF_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	nf_init();
	before_exec(file, 1);
	return after_exec(nf_real.execvpe(file, argv, envp));
}

NF_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	char buf[64];

	nf_init();
	snprintf(buf, sizeof(buf), "/proc/self/fd/%d", fd);
	before_exec(buf, 0);
	return after_exec(nf_real.fexecve(fd, argv, envp));
}

NF_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
		       int flags)
{
	char buf[NF_AT_PATH_MAX];

	nf_init();
	if (!nf_real.execveat) {
		errno = ENOSYS;
		return -1;
	}
	before_exec(at_path(dirfd, path, flags, buf, sizeof(buf)), 0);
	return after_exec(nf_real.execveat(dirfd, path, argv, envp, flags));
}

/*
 * A spawned child may write to a socket it inherits: what the parent
 * buffered before the spawn goes into the kernel first (as before fork).
 * The child itself (glibc and musl run it in the parent's memory) never
 * reaches these hooks: it execs through libc's internal calls.
 */
NF_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			  const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	int rc;

	nf_init();
	nf_coalesce_before_child();
	rc = nf_real.posix_spawn(pid, path, fa, attr, argv, envp);
	if (rc == 0)
		nf_reach_exec(path, 0, pid ? (long)*pid : 0);
	return rc;
}

NF_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			   const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	int rc;

	nf_init();
	nf_coalesce_before_child();
	rc = nf_real.posix_spawnp(pid, file, fa, attr, argv, envp);
	if (rc == 0)
		nf_reach_exec(file, 1, pid ? (long)*pid : 0);
	return rc;
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

/* glibc 2.0's name of popen, still exported. */
NF_EXPORT FILE *_IO_popen(const char *command, const char *type)
{
	nf_init();
	nf_coalesce_before_child();
	return (nf_real._IO_popen ? nf_real._IO_popen : nf_real.popen)(command, type);
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
 *
 * Once the library stands aside (nf_aside.h: a seccomp filter), vfork is
 * libc's own again: a fork would be a clone that the filter may not allow,
 * and the child's exec or _exit then touches nothing of the library's. On
 * x86-64 the exported vfork (and glibc's __vfork) is a few instructions
 * that jump there with the caller's stack untouched, so the child returns
 * straight to the program; elsewhere it stays a fork.
 */
static pid_t vfork_as_fork(void)
{
	nf_init();
	return fork();
}

#if defined(__x86_64__)
void *nf_vfork_next __attribute__((visibility("hidden"))); /* libc's vfork */

pid_t nf_vfork_slow(void) __attribute__((visibility("hidden"), used));

__asm__(".text\n"
	".globl vfork\n"
	".type vfork, @function\n"
	".globl __vfork\n"
	".type __vfork, @function\n"
	"vfork:\n"
	"__vfork:\n" NF_ASM_ENDBR
	"\tcmpl $0, nf_aside_flag(%rip)\n"
	"\tje 1f\n"
	"\tmovq nf_vfork_next(%rip), %r11\n"
	"\ttestq %r11, %r11\n"
	"\tjz 1f\n"
	"\tjmp *%r11\n"
	"1:\tjmp nf_vfork_slow\n"
	".size vfork, .-vfork\n"
	".size __vfork, .-__vfork\n");

pid_t nf_vfork_slow(void)
{
	return vfork_as_fork();
}

void nf_vfork_prepare_aside(void)
{
	__atomic_store_n(&nf_vfork_next, dlsym(RTLD_NEXT, "vfork"), __ATOMIC_RELAXED);
}
#else
NF_EXPORT pid_t vfork(void)
{
	return vfork_as_fork();
}

/* glibc exports vfork's internal name too: the same. */
NF_EXPORT pid_t __vfork(void)
{
	return vfork_as_fork();
}

void nf_vfork_prepare_aside(void)
{
}
#endif

/*
 * _Fork is fork without the atfork handlers: the child would keep copies
 * of the parent's buffers and send them again when it exits (the peer got
 * "req\nreq\n"). The library's own handlers run around it.
 */
NF_EXPORT pid_t _Fork(void)
{
	pid_t pid;
	int saved;

	nf_init();
	if (!nf_real._Fork) {
		errno = ENOSYS;
		return -1;
	}
	nf_atfork_prepare();
	pid = nf_real._Fork();
	saved = errno;
	if (pid == 0)
		nf_atfork_child();
	else
		nf_atfork_parent();
	errno = saved;
	return pid;
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
	before_end();
	nf_real.exit(status);
}

NF_EXPORT void _exit(int status)
{
	nf_init();
	before_end();
	nf_real._exit(status);
}

NF_EXPORT void _Exit(int status)
{
	nf_init();
	before_end();
	nf_real._Exit(status);
}

/* quick_exit runs the at_quick_exit handlers and ends with libc's
 * internal _exit: no other hook sees it. */
NF_EXPORT void quick_exit(int status)
{
	nf_init();
	before_end();
	nf_real.quick_exit(status);
}

/*
 * main's pthread_exit leaves the process to its other threads, and it
 * ends when the last of them does. The library's timer thread must not
 * be one that keeps it alive: from now on it ends whenever nothing is
 * held (a later write starts it again). When it is the last thread, libc
 * ends the process with exit(0) from there, and the destructor drains.
 */
static void thread_exits(void)
{
	nf_init();
	if (!nf_standing_aside() && syscall(SYS_gettid) == getpid()) {
		nf_coalesce_flush_all(NF_FLUSH_NOW); /* main's bytes need not wait for the timer */
		nf_timer_let_go();
	}
}

NF_EXPORT void pthread_exit(void *retval)
{
	thread_exits();
	nf_real.pthread_exit(retval);
}

/* C11's thread exit: libc runs pthread_exit's body internally. */
NF_EXPORT void thrd_exit(int res)
{
	thread_exits();
	nf_real.thrd_exit(res);
}

/*
 * abort and a failed assert end the process by SIGABRT, past every exit
 * hook: what the kernel takes at once goes first, as it would have been
 * in the kernel without the library (no wait: the program wants to end
 * now). A crash by a signal of its own cannot be seen (README).
 */
NF_EXPORT void abort(void)
{
	nf_coalesce_flush_all(NF_FLUSH_NOW); /* nothing held: no lock, no call (also before init) */
	nf_real_abort();
}

NF_EXPORT void __assert_fail(const char *assertion, const char *file, NF_ASSERT_LINE line,
			     const char *function)
{
	nf_init();
	nf_coalesce_flush_all(NF_FLUSH_NOW);
	nf_real.__assert_fail(assertion, file, line, function);
}

/* daemon forks, then the parent ends with libc's internal _exit: what is
 * held goes out first, waiting for room as before any child. */
NF_EXPORT int daemon(int nochdir, int noclose)
{
	nf_init();
	nf_coalesce_before_child();
	return nf_real.daemon(nochdir, noclose);
}
