/*
 * unseen.c - what the command says of where the library could not go: a
 * program it cannot enter (static, set-user-ID...), before naglefix -m ...
 * -- PROGRAM starts it.
 */
#include "nf_cli.h"

#include <stdio.h>
#include <unistd.h>

#include "nf_exe.h"

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
		fprintf(stderr, "naglefix: %s\n", nf_exe_say(line, sizeof(line), file, who, w, getpid()));
}
