/*
 * fix_dir.c - the directory where fix keeps its records, chosen for the
 * user naglefix runs as, without being told: root's /run/naglefix; for
 * another user a directory of its own that no other user can reach
 * (made 0700, checked to be a directory, not a symbolic link, its own,
 * closed to others), so that a user fixing its own processes needs no
 * variable and --undo finds the records in the same place.
 */
#include "fix_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROOT_DIR "/run/naglefix"

static char chosen[4096];
static int implicit; /* chosen here, not named by NAGLEFIX_STATE_DIR */

/* 1 if path is a directory (not a link) owned by the effective user. */
static int own_dir(const char *path)
{
	struct stat st;

	return path && path[0] == '/' && lstat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_uid == geteuid();
}

/* The per-user choice: a runtime directory of the user's, else /tmp. */
static void choose_user_dir(void)
{
	char run_user[64];
	uid_t uid = geteuid();

	snprintf(run_user, sizeof(run_user), "/run/user/%u", (unsigned)uid);
	if (own_dir(getenv("XDG_RUNTIME_DIR")))
		snprintf(chosen, sizeof(chosen), "%s/naglefix", getenv("XDG_RUNTIME_DIR"));
	else if (own_dir(run_user))
		snprintf(chosen, sizeof(chosen), "%s/naglefix", run_user);
	else
		snprintf(chosen, sizeof(chosen), "/tmp/naglefix-%u", (unsigned)uid);
}

const char *nf_fix_state_dir(void)
{
	const char *d = getenv("NAGLEFIX_STATE_DIR");

	if (chosen[0])
		return chosen;
	if (d && *d) {
		snprintf(chosen, sizeof(chosen), "%s", d);
		return chosen;
	}
	implicit = 1;
	if (geteuid() == 0)
		snprintf(chosen, sizeof(chosen), "%s", ROOT_DIR);
	else
		choose_user_dir();
	return chosen;
}

/* 0 if st is a private directory of the effective user, else -EPERM. */
static int private_dir(const struct stat *st)
{
	if (!S_ISDIR(st->st_mode) || st->st_uid != geteuid() || (st->st_mode & 077))
		return -EPERM;
	return 0;
}

int nf_fix_state_dir_safe(void)
{
	const char *dir = nf_fix_state_dir();
	struct stat st;

	if (!implicit)
		return 0; /* named by the user: theirs to choose */
	if (lstat(dir, &st) < 0)
		return -errno;
	return private_dir(&st);
}

int nf_fix_state_dir_make(void)
{
	if (mkdir(nf_fix_state_dir(), 0700) < 0 && errno != EEXIST)
		return -errno;
	return nf_fix_state_dir_safe();
}

const char *nf_fix_state_dir_why(int rc, char *buf, size_t len)
{
	const char *dir = nf_fix_state_dir();
	struct stat st;

	if (rc != -EPERM || lstat(dir, &st) < 0)
		snprintf(buf, len, "%s", strerror(-rc));
	else if (lstat(dir, &st) < 0)
		snprintf(buf, len, "%s", strerror(errno));
	else if (S_ISLNK(st.st_mode))
		snprintf(buf, len, "a symbolic link, not a directory of its own");
	else if (!S_ISDIR(st.st_mode))
		snprintf(buf, len, "not a directory");
	else if (st.st_uid != geteuid())
		snprintf(buf, len, "owned by uid %u, not by uid %u", (unsigned)st.st_uid,
			 (unsigned)geteuid());
	else if (st.st_mode & 077)
		snprintf(buf, len, "mode %04o: open to other users", (unsigned)(st.st_mode & 07777));
	else
		snprintf(buf, len, "%s", strerror(-rc));
	return buf;
}
