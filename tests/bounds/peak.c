/*
 * peak.c - peak SECONDS OUT ERR CMD...: runs CMD (stdin inherited, stdout
 * to OUT, stderr to ERR) with its address space limited to 1 GiB, so a
 * command that grows without bound fails here instead of taking the host;
 * SIGKILL after SECONDS. Prints "STATUS PEAK_KB": its exit status (128+N
 * for signal N, 124 when it ran out of time) and its peak resident set
 * in kB from wait4's rusage: the kernel's own count, no sampling, and
 * this launcher's few hundred kB the floor (a Python launcher's 10 MB
 * would be counted: the high-water mark survives exec).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define AS_LIMIT (1ul << 30)

static pid_t child;
static int timed_out;

static void on_alarm(int sig)
{
	(void)sig;
	timed_out = 1;
	kill(child, SIGKILL);
}

/* In the child: OUT and ERR in place, the limit set, CMD run. */
static void start(char **argv)
{
	struct rlimit rl = { AS_LIMIT, AS_LIMIT };
	int out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int err = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 ||
	    setrlimit(RLIMIT_AS, &rl) < 0) {
		perror("peak");
		_exit(126);
	}
	execvp(argv[4], argv + 4);
	perror(argv[4]);
	_exit(127);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct rusage ru;
	int status, rc;

	if (argc < 5) {
		fputs("usage: peak SECONDS OUT ERR CMD...\n", stderr);
		return 2;
	}
	if ((child = fork()) == 0)
		start(argv);
	if (child < 0) {
		perror("peak: fork");
		return 2;
	}
	sigaction(SIGALRM, &sa, NULL);
	alarm((unsigned)atoi(argv[1]));
	while (wait4(child, &status, 0, &ru) < 0)
		;
	rc = timed_out ? 124 : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	printf("%d %ld\n", rc, ru.ru_maxrss);
	return 0;
}
