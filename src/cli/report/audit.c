/*
 * audit.c - naglefix audit: run a command in audit mode, then print the
 * table of its offending peers.
 *
 * COMMAND and every process it starts write to one log file (O_APPEND,
 * one write per line, so their lines never interleave): LOG, or a fresh
 * $TMPDIR/naglefix-audit.XXXXXX that is removed again when it holds no
 * finding. The table goes to stderr, so COMMAND's stdout stays its own;
 * the --json array, output for a machine, to stdout after COMMAND's.
 * A LOG that cannot be written is reported once, and COMMAND then runs
 * without the library: its output and exit status are unchanged. Where
 * the library saw nothing (unseen.c), or COMMAND could not be started,
 * there is no table: no verdict on nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report_int.h"
#include "cli/common/nf_cli.h"
#include "cli/common/nf_unseen.h"

const char nf_cli_usage_audit[] =
	"usage: naglefix audit [-l LOG] [--json] [--] COMMAND [ARG...]\n"
	"Runs COMMAND with every TCP socket audited (nothing changed), then prints\n"
	"on stderr its split-write stalls per peer, with the config line that\n"
	"fixes each. Where nothing was seen (a program the library cannot enter:\n"
	"static, set-user-ID; no TCP socket through the library), no verdict: it\n"
	"says so, and what to use instead (naglefix watch, naglefix fix).\n"
	"  -l, --log LOG  keep the findings (JSON lines) in LOG, one file (default:\n"
	"                 a temporary file, kept only if it holds a finding)\n"
	"  --json         a JSON array on stdout instead of the table\n"
	"  -h, --help     this text\n"
	"Exit status: COMMAND's (128+N if signal N ended it, 127 not found, 126\n"
	"not runnable); 125 a usage error.\n";

/* An absolute, writable log path into out; -1 after saying why not. */
static int open_log(const char *arg, char *out, size_t outlen)
{
	char cwd[PATH_MAX];
	int fd;

	if (arg[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		snprintf(out, outlen, "%s", arg);
	else
		snprintf(out, outlen, "%s/%s", cwd, arg);
	fd = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (fd < 0) {
		return nf_cli_warnx(-1, "cannot write log %s: %s; running the command without audit",
				    arg, strerror(errno));
	}
	close(fd);
	return 0;
}

static int temp_log(char *out, size_t outlen)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(out, outlen, "%s/naglefix-audit.XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(out);
	if (fd < 0) {
		return nf_cli_warnx(-1, "cannot create a log in %s: %s", dir ? dir : "/tmp",
				    strerror(errno));
	}
	close(fd);
	return 0;
}

/* Is the log at path empty? An audit that found nothing leaves it so. */
static int log_empty(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
}

/* In the child: execs argv; if that fails, says why, sends errno on fd
 * (close-on-exec: an exec that works sends nothing) and exits as env(1). */
static void child_exec(char **argv, int fd)
{
	int err;

	execvp(argv[0], argv);
	err = errno;
	if (fd >= 0)
		(void)!write(fd, &err, sizeof(err));
	nf_cli_warnx(0, "%s: %s", argv[0], strerror(err));
	_exit(err == ENOENT ? 127 : 126);
}

/* Runs argv to its end; returns its exit status the way a shell would,
 * and sets *exec_err to the errno of an exec that failed (else 0). */
static int run_and_wait(char **argv, int *exec_err)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, oint, oquit;
	int status, fds[2] = { -1, -1 }, err = 0;
	pid_t pid, w;

	*exec_err = 0;
	if (pipe2(fds, O_CLOEXEC) < 0)
		fds[0] = fds[1] = -1; /* then a failed exec is told by its status alone */
	sigaction(SIGINT, &ign, &oint); /* ^C is for COMMAND; we still report */
	sigaction(SIGQUIT, &ign, &oquit);
	pid = fork();
	if (pid == 0) {
		sigaction(SIGINT, &oint, NULL);
		sigaction(SIGQUIT, &oquit, NULL);
		child_exec(argv, fds[1]);
	}
	if (fds[1] >= 0)
		close(fds[1]);
	if (pid < 0) {
		nf_cli_warnx(0, "fork: %s", strerror(errno));
		status = NF_EXIT_USAGE << 8;
	} else {
		while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
			;
		if (w < 0)
			status = NF_EXIT_USAGE << 8;
	}
	if (fds[0] >= 0 && read(fds[0], &err, sizeof(err)) == (ssize_t)sizeof(err))
		*exec_err = err;
	if (fds[0] >= 0)
		close(fds[0]);
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGQUIT, &oquit, NULL);
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Says on stderr, in one line, what is wrong; returns -1. */
static int usage_error(const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	nf_cli_usage_error("audit", "%s", what);
	return -1;
}

/* Is arg one file that every process can append to, and we read back? */
static int log_arg_ok(const char *arg)
{
	return *arg && !strstr(arg, "%p") && strcmp(arg, "stderr") != 0 &&
	       strcmp(arg, "syslog") != 0;
}

/* audit's options: the long ones; getopt_long's short ones are "+:l:h". */
static const struct option audit_longopts[] = {
	{ "log", required_argument, NULL, 'l' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Options up to COMMAND (the first word that is not one: "+", no
 * permuting, for COMMAND's own options are its): sets *log, *json;
 * returns COMMAND's index, 0 for --help, or -1 after saying what is
 * wrong. */
static int parse_args(int argc, char **argv, const char **log, int *json)
{
	int opt;

	optind = 0; /* 0, not 1: getopt_long starts afresh */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:l:h", audit_longopts, NULL)) != -1) {
		switch (opt) {
		case 'l': *log = optarg; break;
		case 'j': *json = 1; break;
		case 'h': return 0;
		case ':': return usage_error("option '-l' needs a LOG");
		default:
			nf_cli_bad_option("audit", opt, argc, argv, audit_longopts);
			return -1;
		}
	}
	if (optind == argc)
		return usage_error("no COMMAND");
	if (*log && !log_arg_ok(*log))
		return usage_error("LOG is one file that all processes append to "
				   "(not empty, no %%p, stderr or syslog)");
	return optind;
}

int nf_cli_audit(int argc, char **argv)
{
	const char *arg_log = NULL;
	char log[PATH_MAX + 16], *logs[1] = { log };
	int json = 0, cmd = parse_args(argc, argv, &arg_log, &json), status, found = 0, exec_err, table;
	struct nf_cli_unseen *unseen;

	if (cmd == 0) {
		fputs(nf_cli_usage_audit, stdout);
		return 0;
	}
	if (cmd < 0)
		return NF_EXIT_USAGE;
	if (arg_log ? open_log(arg_log, log, sizeof(log)) < 0 : temp_log(log, sizeof(log)) < 0)
		return run_and_wait(argv + cmd, &exec_err);
	if (nf_cli_preload() < 0)
		return NF_EXIT_USAGE;
	setenv("NAGLEFIX_CONF", "none", 1); /* every socket audited, whatever the file says */
	setenv("NAGLEFIX_MODE", "audit", 1);
	setenv("NAGLEFIX_LOG", log, 1);
	unseen = nf_cli_unseen_open(argv[cmd]);
	status = run_and_wait(argv + cmd, &exec_err);
	/* a COMMAND that never ran, or of which nothing was seen, and nothing in
	 * the log: no verdict. An empty log of a run that was seen makes the table
	 * of nothing found; --json is for a machine: stdout */
	table = !exec_err && (nf_cli_unseen_seen(unseen) || !log_empty(log));
	if (table)
		found = nf_report_print(logs, log_empty(log) ? 0 : 1, json, json ? stdout : stderr);
	nf_cli_unseen_close(unseen, table); /* silent if COMMAND never ran */
	if (!arg_log && found == 0)
		unlink(log);
	else if (!arg_log)
		nf_cli_warnx(0, "log kept in %s (naglefix report %s)", log, log);
	return status;
}
