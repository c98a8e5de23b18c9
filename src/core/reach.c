/*
 * reach.c - what the naglefix command asks the library to tell it
 * (nf_reach.h): whether it entered the program, saw a TCP socket there,
 * and each exec to a program it cannot enter.
 *
 * What was said is kept in one shared anonymous page mapped at set-up,
 * which the forks of this image share: a shell that starts the same
 * static program ten times (fork, then exec in the child) says it once.
 * The record file is opened for each line and closed again (as log.c
 * does), appended to while it is under a bound, and never created: gone,
 * nothing is written.
 */
#include "nf_reach.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nf_aside.h"
#include "nf_exe.h"
#include "nf_fnv.h"
#include "nf_log.h"
#include "nf_real.h"

#define SAID_MAX 256               /* hashes of what was said, in the shared page */
#define RECORD_MAX (256 * 1024)    /* the record file grows no further */
#define LINE_MAX_LEN (2 * NF_EXE_PATH_MAX + 64)

enum mode { OFF, LOG, RECORD };

static enum mode mode;
static char record_path[NF_EXE_PATH_MAX];
static _Atomic uint64_t *said; /* SAID_MAX slots, 0 free */
static atomic_int tcp_told;

/* 1 the first time h is offered (in this image and its forks), else 0. A
 * full table says yes: a repeat rather than silence. */
static int first_time(uint64_t h)
{
	h |= 1; /* never 0, the free mark */
	for (int i = 0; said && i < SAID_MAX; i++) {
		uint64_t v = atomic_load(&said[i]);

		if (v == h)
			return 0;
		if (v == 0 && atomic_compare_exchange_strong(&said[i], &v, h))
			return 1;
		if (v == h) /* another process took the slot for the same */
			return 0;
	}
	return 1;
}

/* Appends line to the record file if its size is below max (0: empty
 * only). The file must exist: the command made it. */
static void append(const char *line, size_t len, off_t max)
{
	int fd = open(record_path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	struct stat st;

	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && (max == 0 ? st.st_size == 0 : st.st_size < max))
		(void)!nf_real.write(fd, line, len); /* a short write: a record lost, nothing else */
	nf_real.close(fd);
}

void nf_reach_setup(const char *spec)
{
	void *page;
	char line[64];

	if (!spec)
		return;
	if (strcmp(spec, "log") == 0) {
		mode = LOG;
	} else if (spec[0] == '/' && strlen(spec) < sizeof(record_path)) {
		mode = RECORD;
		strcpy(record_path, spec);
		append(line, (size_t)snprintf(line, sizeof(line), "enter\t%ld\n", (long)getpid()), 0);
	} else {
		return;
	}
	page = mmap(NULL, SAID_MAX * sizeof(*said), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	said = page == MAP_FAILED ? NULL : page;
}

void nf_reach_tcp(void)
{
	char line[64];
	int saved = errno;

	if (mode != RECORD || atomic_exchange(&tcp_told, 1) || nf_standing_aside())
		return;
	append(line, (size_t)snprintf(line, sizeof(line), "tcp\t%ld\n", (long)getpid()), RECORD_MAX);
	errno = saved;
}

/* s with tabs and newlines as '?', into out: one field of a line. */
static const char *field(const char *s, char out[NF_EXE_PATH_MAX])
{
	size_t i;

	for (i = 0; s[i] && i < NF_EXE_PATH_MAX - 1; i++)
		out[i] = s[i] == '\t' || s[i] == '\n' ? '?' : s[i];
	out[i] = '\0';
	return out;
}

/* Says, or records, that pid runs path, which is why's case (who). */
static void tell(const char *path, const char *who, enum nf_exe_why why, long pid)
{
	char line[LINE_MAX_LEN], a[NF_EXE_PATH_MAX], b[NF_EXE_PATH_MAX];
	int n;

	if (mode == LOG) {
		nf_exe_say(line, sizeof(line), path, who, why, pid);
		nf_log_msg("%s", line);
		return;
	}
	n = snprintf(line, sizeof(line), "lost\t%ld\t%d\t%s\t%s\n", pid, (int)why, field(path, a),
		     field(who, b));
	if (n > 0 && (size_t)n < sizeof(line))
		append(line, (size_t)n, RECORD_MAX);
}

void nf_reach_exec(const char *path, int search, long pid)
{
	char file[NF_EXE_PATH_MAX], who[NF_EXE_PATH_MAX];
	enum nf_exe_why why;
	int saved = errno;

	if (mode == OFF || !path || nf_standing_aside())
		return;
	if (search)
		nf_exe_find(path, file);
	else
		snprintf(file, sizeof(file), "%s", path);
	why = nf_exe_check(file, who);
	if (why != NF_EXE_OK && first_time(nf_fnv(nf_fnv(NF_FNV_INIT, file, strlen(file)), &why,
						  sizeof(why))))
		tell(file, who, why, pid);
	errno = saved;
}
