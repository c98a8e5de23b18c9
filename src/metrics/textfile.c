/*
 * textfile.c - the exposition written to a file for node_exporter's
 * textfile collector (nf_metrics_write_file): a new file made beside the
 * target, written whole, then renamed over it, so that the collector
 * reads either text, never a part of one.
 */
#include "nf_metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Writes all len bytes of text to fd. 0, or -errno. */
static int write_all(int fd, const char *text, size_t len)
{
	while (len) {
		ssize_t n = write(fd, text, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		text += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Fills fd (the new file) with text, readable by all (the collector
 * runs as another user). No fsync: the rename is what readers need, and
 * watch's loop must not wait for a disk. 0, or -errno. */
static int fill(int fd, const char *text, size_t len)
{
	int rc = write_all(fd, text, len);

	if (rc == 0 && fchmod(fd, 0644) < 0)
		rc = -errno;
	return rc;
}

int nf_metrics_write_file(const char *path, const char *text, size_t len)
{
	size_t n = strlen(path);
	char *tmp = malloc(n + 8);
	int fd, rc;

	if (!tmp)
		return -ENOMEM;
	memcpy(tmp, path, n);
	memcpy(tmp + n, ".XXXXXX", 8);
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
		rc = -errno;
		free(tmp);
		return rc;
	}
	rc = fill(fd, text, len);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	free(tmp);
	return rc;
}
