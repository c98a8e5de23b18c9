/*
 * attach_route_record.c - the record of the routes attach gave the
 * quickack metric (attach_int.h), so that detach puts back exactly those
 * and --list shows them: one file a network namespace, DIR/route-INO
 * (DIR: fix_dir.c's, /run/naglefix for root; INO the namespace's nsfs
 * inode), its first line "netns INO PATH NAME", its second "cookie C"
 * (the namespace's SO_NETNS_COOKIE: an inode is reused once its
 * namespace is gone, a cookie never), then a line a route,
 * "route BEFORE AFTER WHY": the route as it was and as attach left it
 * (each its RTM_NEWROUTE message in hex, src/route), and the rule that
 * asked for it. Written whole to a new file (0600, made with O_EXCL,
 * never through a link) and renamed over the old, so a reader never sees
 * half of one; made and rewritten under a lock.
 */
#include "attach_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "cli/fix/nf_fix.h"

#define HEX_MAX (2 * NF_ROUTE_MSG_MAX + 1)

static void record_path(uint64_t ino, const char *suffix, char *buf, size_t len)
{
	snprintf(buf, len, "%s/route-%" PRIu64 "%s", nf_fix_state_dir(), ino, suffix);
}

int nf_attach_route_lock(void)
{
	char path[4096];
	int rc = nf_fix_state_dir_make(), fd;

	if (rc < 0)
		return rc;
	snprintf(path, sizeof(path), "%s/route.lock", nf_fix_state_dir());
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

/* One "route BEFORE AFTER WHY" line into *e; 0, or -EBADMSG. */
static int read_line(char *line, struct nf_attach_route_rec *e)
{
	char *before, *after, *why, *save = NULL;

	if (strncmp(line, "route ", 6) != 0)
		return -EBADMSG;
	before = strtok_r(line + 6, " ", &save);
	after = strtok_r(NULL, " ", &save);
	why = strtok_r(NULL, "\n", &save);
	if (!before || !after || nf_route_from_hex(before, &e->before) < 0 ||
	    nf_route_from_hex(after, &e->after) < 0)
		return -EBADMSG;
	snprintf(e->why, sizeof(e->why), "%s", why ? why : "");
	return 0;
}

/* The lines of f into rec (its first line already read). */
static int read_routes(FILE *f, struct nf_attach_route_record *rec)
{
	size_t cap = 2 * HEX_MAX + sizeof(rec->v[0].why) + 16;
	char *line = malloc(cap);
	int rc = line ? 0 : -ENOMEM;

	while (rc == 0 && fgets(line, (int)cap, f)) {
		struct nf_attach_route_rec *v;
		unsigned long long c;

		if (sscanf(line, "cookie %llu", &c) == 1) {
			rec->cookie = c;
			continue;
		}
		v = realloc(rec->v, (rec->n + 1) * sizeof(*v));

		if (!v) {
			rc = -ENOMEM;
			break;
		}
		rec->v = v;
		if (read_line(line, &rec->v[rec->n]) == 0)
			rec->n++; /* a line that does not read is no route of ours */
	}
	free(line);
	return rc;
}

int nf_attach_route_record_read(uint64_t ino, struct nf_attach_route_record *rec)
{
	char path[4096], head[NF_CGROUP_PATH_MAX + NF_CGROUP_NAME_MAX + 64];
	FILE *f;
	int rc;

	memset(rec, 0, sizeof(*rec));
	rec->ino = ino;
	record_path(ino, "", path, sizeof(path));
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	if (fgets(head, sizeof(head), f)) {
		head[strcspn(head, "\n")] = '\0';
		sscanf(head, "netns %*u %4095s", rec->path);
		if (strchr(head + 6, ' ') && strchr(strchr(head + 6, ' ') + 1, ' '))
			snprintf(rec->name, sizeof(rec->name), "%s",
				 strchr(strchr(head + 6, ' ') + 1, ' ') + 1);
	}
	rc = read_routes(f, rec);
	fclose(f);
	return rc;
}

/* rec's lines into f. */
static int write_lines(FILE *f, const struct nf_attach_route_record *rec)
{
	char *a = malloc(HEX_MAX), *b = malloc(HEX_MAX);
	int rc = a && b ? 0 : -ENOMEM;

	if (rc == 0)
		fprintf(f, "netns %" PRIu64 " %s %s\ncookie %" PRIu64 "\n", rec->ino, rec->path,
			rec->name, rec->cookie);
	for (size_t i = 0; rc == 0 && i < rec->n; i++) {
		if (nf_route_to_hex(&rec->v[i].before, b, HEX_MAX) < 0 ||
		    nf_route_to_hex(&rec->v[i].after, a, HEX_MAX) < 0)
			rc = -ENOSPC;
		else
			fprintf(f, "route %s %s %s\n", b, a, rec->v[i].why);
	}
	free(a);
	free(b);
	return rc;
}

/* A new file at path, the caller's alone (0600): what was there (a
 * file left by a crash, or a symbolic link) taken away first, not
 * written through; NULL with errno on a failure. */
static FILE *create_new(const char *path)
{
	int fd;
	FILE *f;

	if (unlink(path) < 0 && errno != ENOENT)
		return NULL;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f) {
		int e = errno;

		close(fd);
		unlink(path);
		errno = e;
	}
	return f;
}

int nf_attach_route_record_write(const struct nf_attach_route_record *rec)
{
	char path[4096], tmp[4100];
	FILE *f;
	int rc;

	record_path(rec->ino, "", path, sizeof(path));
	if (rec->n == 0)
		return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
	record_path(rec->ino, ".new", tmp, sizeof(tmp));
	f = create_new(tmp);
	if (!f)
		return -errno;
	rc = write_lines(f, rec);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		rc = rc ? rc : -errno;
	if (fclose(f) != 0)
		rc = rc ? rc : -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	return rc;
}

void nf_attach_route_record_free(struct nf_attach_route_record *rec)
{
	free(rec->v);
	rec->v = NULL;
	rec->n = 0;
}

int nf_attach_route_record_each(int (*fn)(uint64_t ino, void *arg), void *arg)
{
	DIR *d = opendir(nf_fix_state_dir());
	struct dirent *e;
	int rc = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		char *end;
		unsigned long long ino;

		if (strncmp(e->d_name, "route-", 6) != 0)
			continue;
		ino = strtoull(e->d_name + 6, &end, 10);
		if (*end == '\0' && end != e->d_name + 6)
			rc = fn((uint64_t)ino, arg);
	}
	closedir(d);
	return rc;
}
