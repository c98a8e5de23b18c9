/*
 * config.c - from NAGLEFIX_CONF / the default file / NAGLEFIX_MODE to a
 * policy. Shared by the library and the command.
 */
#include "nf_config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>


/*
 * Raw read and close: inside the preloaded library read() and close() may
 * be our own hooks, and this runs during initialisation.
 */
static ssize_t sys_read(int fd, void *buf, size_t len)
{
	return syscall(SYS_read, fd, buf, len);
}

static void sys_close(int fd)
{
	int saved = errno;

	syscall(SYS_close, fd);
	errno = saved;
}

/* Doubles *buf's *cap for a file of at most NF_CONF_SIZE_MAX bytes (and
 * one more, to tell a longer one). 0, or -ENOMEM (*buf freed). */
static int grow(char **buf, size_t *cap)
{
	size_t ncap = *cap * 2 > NF_CONF_SIZE_MAX + 2 ? NF_CONF_SIZE_MAX + 2 : *cap * 2;
	char *nb = realloc(*buf, ncap);

	if (!nb) {
		free(*buf);
		return -ENOMEM;
	}
	*buf = nb;
	*cap = ncap;
	return 0;
}

/* Reads fd to its end into a new string of *len bytes (NULs included);
 * -EFBIG past NF_CONF_SIZE_MAX bytes (a file that grew since its size was
 * taken, or one whose size says nothing). */
static int slurp(int fd, char **text, size_t *lenp)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = sys_read(fd, buf + len, cap - len - 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > NF_CONF_SIZE_MAX) {
			free(buf);
			return -EFBIG;
		}
		if (len + 1 == cap && grow(&buf, &cap) < 0)
			return -ENOMEM;
	}
	buf[len] = '\0';
	*text = buf;
	*lenp = len;
	return 0;
}

/*
 * Reads path into *text, *len bytes; with trusted_only, only a file owned by root and writable by
 * nobody else (-EPERM otherwise): what a setuid program may trust.
 */
static int read_file(const char *path, char **text, size_t *len, int trusted_only)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK); /* a FIFO must not hang us */
	int rc;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		st.st_mode = 0;
	if (!S_ISREG(st.st_mode)) {
		rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		sys_close(fd);
		return rc;
	}
	if (trusted_only && (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))) {
		sys_close(fd);
		return -EPERM;
	}
	if (st.st_size > NF_CONF_SIZE_MAX) {
		sys_close(fd);
		return -EFBIG;
	}
	rc = slurp(fd, text, len);
	sys_close(fd);
	return rc;
}

int nf_config_read_file(const char *path, char **text)
{
	size_t len;

	return read_file(path, text, &len, 0);
}

static const char *read_error(int rc)
{
	if (rc == -EINVAL)
		return "not a regular file";
	if (rc == -EPERM)
		return "not owned by root, or writable by others: ignored by a setuid program";
	if (rc == -EFBIG)
		return "larger than 1 MiB, the most a policy file may hold";
	return strerror(-rc);
}

static int parse_file(const char *path, struct nf_policy *p, int trusted_only,
		      char *err, size_t errlen)
{
	char *text;
	size_t len;
	int rc = read_file(path, &text, &len, trusted_only);

	if (rc < 0) {
		memset(p, 0, sizeof(*p));
		p->dflt = nf_policy_opts_default(NF_ACT_PASS);
		snprintf(err, errlen, "%s: %s", path, read_error(rc));
		return rc;
	}
	rc = nf_policy_parse_bytes(p, text, len, path, err, errlen); /* a NUL is an error */
	free(text);
	return rc;
}

int nf_config_parse_file(const char *path, struct nf_policy *p,
			 char *err, size_t errlen)
{
	return parse_file(path, p, 0, err, errlen);
}

int nf_config_check_file(const char *path, struct nf_policy *p,
			 void (*each)(const char *err, void *arg), void *arg)
{
	char *text, err[NF_CONF_ERR_MAX];
	size_t len;
	int rc = read_file(path, &text, &len, 0);

	if (rc < 0) {
		memset(p, 0, sizeof(*p));
		p->dflt = nf_policy_opts_default(NF_ACT_PASS);
		snprintf(err, sizeof(err), "%s: %s", path, read_error(rc));
		each(err, arg);
		return 1;
	}
	rc = nf_policy_check_bytes(p, text, len, path, each, arg);
	free(text);
	return rc;
}

int nf_config_mode(const char *mode, enum nf_action *a, char *err, size_t errlen)
{
	if (nf_policy_parse_action(mode, a) == 0)
		return 0;
	snprintf(err, errlen, "NAGLEFIX_MODE: unknown action '%s' (expected " NF_ACTION_LIST ")",
		 mode);
	return -EINVAL;
}

const char *nf_config_path(const char *conf_path)
{
	if (conf_path && *conf_path)
		return strcmp(conf_path, "none") == 0 ? NULL : conf_path;
	return access(NF_CONF_DEFAULT_PATH, F_OK) == 0 ? NF_CONF_DEFAULT_PATH : NULL;
}

/* A policy that leaves every socket alone. */
static void pass_everything(struct nf_policy *p)
{
	nf_policy_free(p);
	p->dflt = nf_policy_opts_default(NF_ACT_PASS);
}

int nf_config_load(struct nf_policy *p, const char *conf_path,
		   const char *mode, int secure, char *err, size_t errlen)
{
	enum nf_action a;
	int rc;

	memset(p, 0, sizeof(*p));
	p->dflt = nf_policy_opts_default(NF_ACT_PASS);
	if (secure)
		conf_path = mode = NULL; /* the caller's environment is not ours to trust */
	conf_path = nf_config_path(conf_path);
	if (conf_path) {
		rc = parse_file(conf_path, p, secure, err, errlen);
		if (rc < 0) {
			pass_everything(p);
			return rc;
		}
	}
	if (mode) {
		if (nf_config_mode(mode, &a, err, errlen) < 0) {
			pass_everything(p);
			return -EINVAL;
		}
		if (p->dflt.action != a) /* the same action keeps the line's options */
			p->dflt = nf_policy_opts_default(a);
	}
	return 0;
}
