/*
 * nf_log.h - where the library's messages go (NAGLEFIX_LOG).
 *
 * Each message is one write of one whole line. A log file is opened for
 * each message and closed again, so the library never holds a descriptor
 * the program could close, reuse or trip over; syslog's connection is
 * closed after each line too.
 */
#ifndef NF_LOG_H
#define NF_LOG_H

#include <stddef.h>

/*
 * Sets the destination: NULL or "stderr" for standard error, "syslog" for
 * syslog(3), else a path in which "%p" becomes the pid. Returns 0, or
 * -EINVAL for an empty path.
 */
int nf_log_setup(const char *spec);

/* Writes "naglefix: MESSAGE\n" to the log. Keeps errno. */
void nf_log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writes one whole line (which must end in '\n') to the log. Keeps errno. */
void nf_log_line(const char *line, size_t len);

/* As nf_log_line, for a data record (an audit JSON line): dropped, not
 * sent to stderr, when the log file is unusable. Keeps errno. */
void nf_log_record(const char *line, size_t len);

#endif
