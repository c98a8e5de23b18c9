/*
 * log.c - the library's messages, one whole line per write.
 *
 * A file destination is opened for each line (O_APPEND, O_NOFOLLOW, mode
 * 0600) and closed again, so no descriptor of ours stays open for the
 * program to close, reuse or inherit. A destination that cannot be opened
 * is reported once on stderr, and later lines go to stderr.
 */
#include "nf_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nf_real.h"

#define LOG_PATH_MAX 4096
#define LINE_MAX_LEN 4096

static char log_path[LOG_PATH_MAX]; /* empty: stderr */
static atomic_int log_broken;

/* Copies spec into log_path with each "%p" replaced by the pid. */
static int expand_path(const char *spec)
{
	size_t o = 0;

	for (const char *s = spec; *s; s++) {
		int n;

		if (s[0] == '%' && s[1] == 'p') {
			n = snprintf(log_path + o, sizeof(log_path) - o, "%ld", (long)getpid());
			s++;
		} else {
			n = snprintf(log_path + o, sizeof(log_path) - o, "%c", *s);
		}
		if (n < 0 || (size_t)n >= sizeof(log_path) - o)
			return -ENAMETOOLONG;
		o += (size_t)n;
	}
	return 0;
}

int nf_log_setup(const char *spec)
{
	log_path[0] = '\0';
	atomic_store(&log_broken, 0);
	if (!spec || strcmp(spec, "stderr") == 0)
		return 0;
	if (*spec == '\0')
		return -EINVAL;
	if (expand_path(spec) < 0) {
		log_path[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

/* Writes all of buf to fd; gives up quietly on error (a log can't log). */
static void write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = nf_real.write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

/* Says once, on stderr, that the log file is unusable and why. */
static void report_broken(int err)
{
	char msg[LOG_PATH_MAX + 128];
	int n;

	if (atomic_exchange(&log_broken, 1))
		return;
	n = snprintf(msg, sizeof(msg), "naglefix: cannot write log %s: %s; using stderr\n",
		     log_path, strerror(err));
	if (n > 0)
		write_all(STDERR_FILENO, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

void nf_log_line(const char *line, size_t len)
{
	int saved = errno;
	int fd;

	if (log_path[0] == '\0' || atomic_load(&log_broken)) {
		write_all(STDERR_FILENO, line, len);
		errno = saved;
		return;
	}
	fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (fd < 0) {
		report_broken(errno);
		write_all(STDERR_FILENO, line, len);
	} else {
		write_all(fd, line, len);
		nf_real.close(fd);
	}
	errno = saved;
}

void nf_log_msg(const char *fmt, ...)
{
	char line[LINE_MAX_LEN];
	int saved = errno;
	va_list ap;
	int n = snprintf(line, sizeof(line), "naglefix: ");

	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	nf_log_line(line, (size_t)n);
	errno = saved;
}
