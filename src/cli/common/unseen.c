/*
 * unseen.c - what the command says of where the library could not go: a
 * program it cannot enter (static, set-user-ID...), before it starts
 * (naglefix -m ... -- PROGRAM), and, for audit, what the library told it
 * while PROGRAM ran (the record file of nf_reach.h): no verdict where
 * nothing was seen, and each program it saw started but could not enter.
 */
#include "nf_cli.h"
#include "nf_unseen.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nf_exe.h"

#define LOST_MAX 16 /* distinct programs named at the end; the rest counted */
#define RECORD_LINE (2 * NF_EXE_PATH_MAX + 64)

/* A program started that the library could not enter. */
struct lost {
	long pid;
	enum nf_exe_why why;
	char path[NF_EXE_PATH_MAX], who[NF_EXE_PATH_MAX];
};

struct nf_cli_unseen {
	char path[PATH_MAX];                              /* the record file */
	const char *cmd;                                  /* COMMAND as given */
	char file[NF_EXE_PATH_MAX], who[NF_EXE_PATH_MAX]; /* its file, the one at fault */
	enum nf_exe_why why;                              /* its case, told before it ran */
	int entered, tcp, nlost;                          /* what the records said */
	int read;                                         /* the records were read */
	struct lost lost[LOST_MAX];
};

static const char instead[] =
	"`naglefix watch` sees every connection of this host, `naglefix fix PID` sets"
	" TCP_NODELAY on a running program's sockets";

/* Why the library cannot enter cmd as execvp starts it, its file in
 * file, the one at fault in who. */
static enum nf_exe_why check_cmd(const char *cmd, char file[NF_EXE_PATH_MAX],
				 char who[NF_EXE_PATH_MAX])
{
	if (nf_exe_find(cmd, file) < 0)
		return NF_EXE_OK; /* not found: the exec says so */
	return nf_exe_check(file, who);
}

void nf_cli_unseen_say(const char *cmd)
{
	char file[NF_EXE_PATH_MAX], who[NF_EXE_PATH_MAX], line[2 * NF_EXE_PATH_MAX + 512];
	enum nf_exe_why w = check_cmd(cmd, file, who);

	if (w != NF_EXE_OK)
		nf_cli_warnx(0, "%s", nf_exe_say(line, sizeof(line), file, who, w, getpid()));
}

/* "statically linked", or "WHO: statically linked" for an interpreter. */
static const char *why_words(const char *file, const char *who, enum nf_exe_why w, char *buf,
			     size_t len)
{
	char q[NF_CLI_QUOTE_MAX];

	if (strcmp(file, who) == 0)
		snprintf(buf, len, "%s", nf_exe_why_text(w));
	else
		snprintf(buf, len, "its interpreter %s: %s", nf_cli_quote(who, q), nf_exe_why_text(w));
	return buf;
}

struct nf_cli_unseen *nf_cli_unseen_open(const char *cmd)
{
	const char *dir = getenv("TMPDIR");
	char q[NF_CLI_QUOTE_MAX], words[NF_EXE_PATH_MAX + 64];
	struct nf_cli_unseen *r = calloc(1, sizeof(*r));
	int fd;

	if (!r)
		return NULL;
	r->cmd = cmd;
	r->why = check_cmd(cmd, r->file, r->who);
	if (r->why != NF_EXE_OK)
		nf_cli_warnx(0, "the library cannot enter %s (%s): none of its sockets will be seen",
			     nf_cli_quote(r->file, q),
			     why_words(r->file, r->who, r->why, words, sizeof(words)));
	snprintf(r->path, sizeof(r->path), "%s/naglefix-reach.XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(r->path);
	if (fd < 0) { /* then the table as before: no telling what was not seen */
		free(r);
		return NULL;
	}
	close(fd);
	setenv("NAGLEFIX_REACH", r->path, 1);
	return r;
}

/* Adds a lost line's program to r (once a program, LOST_MAX at most). */
static void add_lost(struct nf_cli_unseen *r, long pid, enum nf_exe_why why, const char *path,
		     const char *who)
{
	for (int i = 0; i < r->nlost && i < LOST_MAX; i++)
		if (strcmp(r->lost[i].path, path) == 0)
			return;
	if (r->nlost++ >= LOST_MAX)
		return;
	r->lost[r->nlost - 1].pid = pid;
	r->lost[r->nlost - 1].why = why;
	snprintf(r->lost[r->nlost - 1].path, NF_EXE_PATH_MAX, "%s", path);
	snprintf(r->lost[r->nlost - 1].who, NF_EXE_PATH_MAX, "%s", who);
}

/* One line of the record file (its newline cut off) into r. */
static void read_line(struct nf_cli_unseen *r, char *line)
{
	char *kind = strsep(&line, "\t"), *pid = strsep(&line, "\t");
	char *why = strsep(&line, "\t"), *path = strsep(&line, "\t"), *who = line;

	if (!kind || !pid)
		return;
	if (strcmp(kind, "enter") == 0)
		r->entered = 1;
	else if (strcmp(kind, "tcp") == 0)
		r->tcp = 1;
	else if (strcmp(kind, "lost") == 0 && why && path && who)
		add_lost(r, strtol(pid, NULL, 10), (enum nf_exe_why)atoi(why), path, who);
}

/* Reads the record file into r; -1 if it cannot be read. */
static int read_records(struct nf_cli_unseen *r)
{
	char line[RECORD_LINE];
	FILE *f = fopen(r->path, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);

		if (n == 0 || line[n - 1] != '\n') /* longer than a record: not ours */
			continue;
		line[n - 1] = '\0';
		read_line(r, line);
	}
	fclose(f);
	return 0;
}

/* The programs started that the library could not enter, one line each. */
static void say_lost(const struct nf_cli_unseen *r)
{
	char q[NF_CLI_QUOTE_MAX], words[NF_EXE_PATH_MAX + 64];

	char pid[32] = "";

	for (int i = 0; i < r->nlost && i < LOST_MAX; i++) {
		if (r->lost[i].pid > 0) /* COMMAND's own has none here: it is COMMAND */
			snprintf(pid, sizeof(pid), "pid %ld ran ", r->lost[i].pid);
		nf_cli_warnx(0, "not seen: %s%s, which the library cannot enter (%s)",
			     r->lost[i].pid > 0 ? pid : "", nf_cli_quote(r->lost[i].path, q),
			     why_words(r->lost[i].path, r->lost[i].who, r->lost[i].why, words,
				       sizeof(words)));
	}
	if (r->nlost > LOST_MAX)
		nf_cli_warnx(0, "not seen: %d programs more", r->nlost - LOST_MAX);
}

int nf_cli_unseen_seen(struct nf_cli_unseen *r)
{
	if (!r || read_records(r) < 0)
		return 1; /* no telling: the table as before */
	r->read = 1;
	if (r->why != NF_EXE_OK && r->entered) /* its children were entered: it was not */
		add_lost(r, 0, r->why, r->file, r->who);
	return r->entered && r->tcp;
}

/* Says that nothing of the run was seen, and why; "no verdict" first
 * when no table was printed either. */
static void say_nothing(const struct nf_cli_unseen *r, int table)
{
	char q[NF_CLI_QUOTE_MAX], words[NF_EXE_PATH_MAX + 64];
	const char *head = table ? "" : "no verdict: ";

	if (!r->entered)
		nf_cli_warnx(0, "%snothing was seen, the library entered no process of %s (%s); %s",
			     head, nf_cli_quote(r->cmd, q),
			     r->why != NF_EXE_OK ? why_words(r->file, r->who, r->why, words, sizeof(words))
						 : "its loader preloaded nothing",
			     instead);
	else if (!r->tcp)
		nf_cli_warnx(0, "%sno TCP socket of %s went through the library, so nothing was seen"
			     " (it made none, or makes its own system calls, as Go programs do)", head,
			     nf_cli_quote(r->cmd, q));
}

void nf_cli_unseen_close(struct nf_cli_unseen *r, int table)
{
	if (!r)
		return;
	if (r->read) {
		say_nothing(r, table);
		say_lost(r);
		if (r->entered && (r->nlost || !r->tcp))
			nf_cli_warnx(0, "%s", instead);
	}
	unlink(r->path);
	free(r);
}
