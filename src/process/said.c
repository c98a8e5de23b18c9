/*
 * said.c - a set-up message once per process tree (said_int.h).
 *
 * `sh -c 'a; b'` under a bad policy file loads the library three times
 * (sh, a, b), each reading the same file: without a mark the same error
 * was said three times, 35 under pyenv's shims. The mark is the message's
 * FNV-1a hash, so a descendant given another file (another message)
 * still says its own. A program that starts others with an environment of
 * its own making drops the mark: they say it again.
 */
#include "said_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_fnv.h"
#include "core/nf_log.h"

#define SAID_VAR "NAGLEFIX_SAID"

void nf_said_once(const char *msg, int mark_env)
{
	const char *was = secure_getenv(SAID_VAR);
	char mark[24];
	int saved = errno;

	snprintf(mark, sizeof(mark), "%016" PRIx64, nf_fnv(NF_FNV_INIT, msg, strlen(msg)));
	if (!was || strcmp(was, mark) != 0) {
		nf_log_msg("%s", msg);
		if (mark_env)
			setenv(SAID_VAR, mark, 1);
	}
	errno = saved;
}
