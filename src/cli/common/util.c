/*
 * util.c - what several of the command's files share (nf_cli.h): a word
 * quoted for a message, an error or a usage error said in one line (the
 * err(3) shape), a string written as JSON, and the library put first in
 * LD_PRELOAD. Here, in one place
 * below the subcommands, so that no circle runs between the
 * command's files (naglefix.c calls audit.c, which would call back).
 */
#include "nf_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nf_json.h"
#include "nf_policy.h"

const char *nf_cli_quote(const char *arg, char buf[NF_CLI_QUOTE_MAX])
{
	nf_policy_escape(arg, buf, NF_CLI_QUOTE_MAX);
	return buf;
}

/* The subcommand running (nf_cli_set_cmd); NULL: the run mode. */
static const char *cli_cmd;

const char *nf_cli_set_cmd(const char *cmd)
{
	const char *was = cli_cmd;

	cli_cmd = cmd;
	return was;
}

/* "naglefix[ CMD]: " fmt's message, then tail, on stderr, the stream held
 * so that another thread's message (watch's) cannot cut the line; errno
 * kept. */
static void say(const char *cmd, const char *tail, const char *fmt, va_list ap)
{
	int saved = errno;

	flockfile(stderr);
	fprintf(stderr, "naglefix%s%s: ", cmd ? " " : "", cmd ? cmd : "");
	vfprintf(stderr, fmt, ap);
	fputs(tail, stderr);
	funlockfile(stderr);
	errno = saved;
}

int nf_cli_warnx(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(cli_cmd, "\n", fmt, ap);
	va_end(ap);
	return status;
}

int nf_cli_warnx_as(const char *cmd, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(cmd, "\n", fmt, ap);
	va_end(ap);
	return status;
}

void nf_cli_warn_more(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	flockfile(stderr);
	fputs("    ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
	errno = saved;
}

void nf_cli_errx(int status, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	va_start(ap, fmt);
	say(cli_cmd, "\n", fmt, ap);
	va_end(ap);
	exit(status);
}

int nf_cli_usage_error(const char *cmd, const char *fmt, ...)
{
	char tail[64];
	va_list ap;

	snprintf(tail, sizeof(tail), "; try 'naglefix%s%s --help'\n", cmd ? " " : "", cmd ? cmd : "");
	va_start(ap, fmt);
	say(cmd, tail, fmt, ap);
	va_end(ap);
	return NF_EXIT_USAGE;
}

/* The long name of the option whose short one is c, or NULL. */
static const char *long_name(const struct option *longopts, int c)
{
	for (const struct option *o = longopts; o && o->name; o++)
		if (o->val == c)
			return o->name;
	return NULL;
}

/*
 * An option without its argument is optopt (glibc and musl both set it,
 * for a long option too; where optind then points differs). An unknown
 * short option is optopt too (perhaps in a cluster such as -xc); an
 * unknown long one is the word before optind.
 */
int nf_cli_bad_option(const char *cmd, int opt, int argc, char **argv,
		      const struct option *longopts)
{
	char q[NF_CLI_QUOTE_MAX], one[3] = { '-', (char)optopt, '\0' };
	const char *name = long_name(longopts, optopt);

	if (opt == ':' && name)
		return nf_cli_usage_error(cmd, "option '%s' (--%s) needs an argument",
					  nf_cli_quote(one, q), name);
	if (opt == ':')
		return nf_cli_usage_error(cmd, "option '%s' needs an argument", nf_cli_quote(one, q));
	if (optopt || optind < 2 || optind > argc)
		return nf_cli_usage_error(cmd, "unknown option '%s'", nf_cli_quote(one, q));
	return nf_cli_usage_error(cmd, "unknown option '%s'", nf_cli_quote(argv[optind - 1], q));
}

/* What a file of mode is, when it is not a stream to read; NULL if it is
 * (a regular file, a FIFO). */
static const char *not_a_stream(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISSOCK(mode))
		return "a socket";
	return S_ISREG(mode) || S_ISFIFO(mode) ? NULL : "not a regular file";
}

int nf_cli_open_input(const char *path, const char **why)
{
	struct stat st, fst;
	int fd;

	*why = NULL;
	if (strcmp(path, "-") == 0)
		return STDIN_FILENO;
	if (stat(path, &st) < 0) {
		*why = strerror(errno);
		return -1;
	}
	if ((*why = not_a_stream(st.st_mode)))
		return -2;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0) {
		*why = strerror(errno);
		return -1;
	}
	if (fstat(fd, &fst) < 0 || (fst.st_mode & S_IFMT) != (st.st_mode & S_IFMT)) {
		close(fd);
		*why = "changed while it was opened";
		return -1;
	}
	return fd;
}

void nf_cli_json_str(FILE *out, const char *s)
{
	char esc[NF_JSON_CHAR_MAX];

	fputc('"', out);
	for (; *s; s++)
		fputs(nf_json_char((unsigned char)*s, esc), out);
	fputc('"', out);
}

/*
 * The library next to this executable, or in ../lib/naglefix/ (make
 * install's place), or in ../lib/NF_MULTIARCH/ (the Debian package's, in
 * the loader's path: the Makefile defines NF_MULTIARCH as the compiler's
 * triplet).
 */
static int find_library(char *out, size_t outlen)
{
	static const char *const rel[] = {
		"libnaglefix.so", "../lib/naglefix/libnaglefix.so",
#ifdef NF_MULTIARCH
		"../lib/" NF_MULTIARCH "/libnaglefix.so",
#endif
	};
	char exe[PATH_MAX], cand[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(cand, sizeof(cand), "%s/%s", exe, rel[i]);
		if (access(cand, R_OK) == 0 && realpath(cand, out) && strlen(out) < outlen)
			return 0;
	}
	return -1;
}

/* Is lib one of the entries (separated by ':' or ' ') of list? */
static int preload_has(const char *list, const char *lib)
{
	size_t n = strlen(lib);

	for (const char *p = list; (p = strstr(p, lib)) != NULL; p++)
		if ((p == list || p[-1] == ':' || p[-1] == ' ') &&
		    (p[n] == '\0' || p[n] == ':' || p[n] == ' '))
			return 1;
	return 0;
}

/* Puts lib first in LD_PRELOAD, keeping what was there. */
static int prepend_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	char *val;
	int rc;

	if (!old || !*old)
		return setenv("LD_PRELOAD", lib, 1);
	if (preload_has(old, lib))
		return 0;
	if (asprintf(&val, "%s:%s", lib, old) < 0)
		return -1;
	rc = setenv("LD_PRELOAD", val, 1);
	free(val);
	return rc;
}

int nf_cli_preload(void)
{
	char lib[PATH_MAX];

	if (find_library(lib, sizeof(lib)) < 0)
		return nf_cli_warnx(-1, "cannot find libnaglefix.so next to this program");
	if (prepend_preload(lib) < 0)
		return nf_cli_warnx(-1, "LD_PRELOAD: %s", strerror(errno));
	return 0;
}
