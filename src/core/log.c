/*
 * log.c - the library's messages, one whole line per write.
 *
 * A file destination is opened for each line (O_APPEND, O_NOFOLLOW, mode
 * 0600) and closed again, so no descriptor of ours stays open for the
 * program to close, reuse or inherit. A destination that cannot be opened
 * is reported once on stderr, and later messages go to stderr (audit
 * records are dropped instead: they are not for the program's stderr).
 *
 * "syslog" sends each line itself, as syslog(3) would ("<14>Mmm dd
 * hh:mm:ss naglefix[pid]: line", facility LOG_USER, priority LOG_INFO), on a
 * socket to /dev/log opened for the line and closed again: no descriptor
 * kept, and the program's own openlog() ident and facility untouched (glibc
 * keeps one syslog state per process).
 */
#include "nf_log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "nf_aside.h"
#include "nf_real.h"

#define LOG_PATH_MAX 4096
#define LINE_MAX_LEN 4096

static char log_path[LOG_PATH_MAX]; /* empty: stderr */
static int log_syslog;              /* "syslog" */
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
	log_syslog = 0;
	atomic_store(&log_broken, 0);
	if (!spec || strcmp(spec, "stderr") == 0)
		return 0;
	if (strcmp(spec, "syslog") == 0) {
		log_syslog = 1;
		return 0;
	}
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

/* Sends line to the log file; 0, or -1 if it is unusable (reported once). */
static int write_file(const char *line, size_t len)
{
	int fd;

	if (atomic_load(&log_broken))
		return -1;
	fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == EINTR || errno == ENOMEM))
		return -1; /* the process is short of descriptors for now: this line only */
	if (fd < 0) {
		report_broken(errno);
		return -1;
	}
	write_all(fd, line, len);
	nf_real.close(fd);
	return 0;
}

/* A socket connected to /dev/log (datagram, else stream), or -1. */
static int syslog_socket(void)
{
	static const int types[] = { SOCK_DGRAM, SOCK_STREAM };
	struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = "/dev/log" };

	for (unsigned i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		int fd = nf_real.socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return -1;
		if (nf_real.connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		nf_real.close(fd);
	}
	return -1;
}

/* One line to syslog, in the format syslog(3) uses, without its state. */
static void write_syslog(const char *line, size_t len)
{
	char msg[LINE_MAX_LEN + 64], stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	int fd, n;

	if (len > 0 && line[len - 1] == '\n')
		len--;
	strftime(stamp, sizeof(stamp), "%b %e %H:%M:%S", localtime_r(&now, &tm));
	n = snprintf(msg, sizeof(msg), "<14>%s naglefix[%ld]: %.*s", stamp, (long)getpid(),
		     (int)(len < LINE_MAX_LEN ? len : LINE_MAX_LEN), line);
	fd = syslog_socket();
	if (fd < 0 || n <= 0)
		return;
	nf_real.send(fd, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1, MSG_NOSIGNAL);
	nf_real.close(fd);
}

/* Writes line where the log goes; stderr_fallback: if the file is unusable. */
static void log_write(const char *line, size_t len, int stderr_fallback)
{
	int saved = errno;

	if (nf_standing_aside()) /* an open, a write, a socket: none of the program's */
		return;
	if (log_syslog)
		write_syslog(line, len);
	else if (log_path[0] == '\0')
		write_all(STDERR_FILENO, line, len);
	else if (write_file(line, len) < 0 && stderr_fallback)
		write_all(STDERR_FILENO, line, len);
	errno = saved;
}

void nf_log_line(const char *line, size_t len)
{
	log_write(line, len, 1);
}

void nf_log_record(const char *line, size_t len)
{
	log_write(line, len, 0);
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
