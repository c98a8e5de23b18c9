/*
 * exe.c - what a program file is to the dynamic loader (nf_exe.h).
 *
 * The loader preloads nothing into an ELF without PT_INTERP (a static or
 * static-pie program: no loader runs), and glibc's and musl's ignore a
 * preload path in a secure exec (AT_SECURE: the kernel's secureexec, set
 * when the exec changes the user or group ids or grants capabilities),
 * which is why the library cannot enter a setuid program. A script runs
 * its interpreter, so it is the interpreter's case; the kernel ignores a
 * script's own set-user-ID bit. Read with raw system calls: inside the
 * library, read() and close() are hooks.
 */
#include "nf_exe.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "nf_policy.h"

#define HEAD_SIZE 256 /* what the kernel reads of a file to choose its format */
#define DEPTH_MAX 4   /* interpreters of interpreters, as the kernel allows */
#define PHNUM_MAX 4096
#define PH_CHUNK 32

#if defined(__x86_64__)
#define MACHINE EM_X86_64
#elif defined(__aarch64__)
#define MACHINE EM_AARCH64
#elif defined(__i386__)
#define MACHINE EM_386
#elif defined(__arm__)
#define MACHINE EM_ARM
#elif defined(__riscv)
#define MACHINE EM_RISCV
#elif defined(__powerpc64__)
#define MACHINE EM_PPC64
#elif defined(__s390x__)
#define MACHINE EM_S390
#else
#define MACHINE EM_NONE /* not told apart */
#endif

#if __SIZEOF_POINTER__ == 8
#define CLASS ELFCLASS64
#else
#define CLASS ELFCLASS32
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define DATA ELFDATA2LSB
#else
#define DATA ELFDATA2MSB
#endif

static ssize_t sys_pread(int fd, void *buf, size_t len, off_t off)
{
	ssize_t n;

	do
		n = syscall(SYS_pread64, fd, buf, len, off);
	while (n < 0 && errno == EINTR);
	return n;
}

static void sys_close(int fd)
{
	syscall(SYS_close, fd);
}

const char *nf_exe_why_text(enum nf_exe_why w)
{
	switch (w) {
	case NF_EXE_STATIC:
		return "statically linked";
	case NF_EXE_SETUID:
		return "set-user-ID";
	case NF_EXE_SETGID:
		return "set-group-ID";
	case NF_EXE_CAPS:
		return "file capabilities";
	case NF_EXE_FOREIGN:
		return "built for another machine or word size";
	default:
		return "preloaded";
	}
}

const char *nf_exe_say(char *buf, size_t len, const char *path, const char *who,
		       enum nf_exe_why why, long pid)
{
	char p[NF_EXE_PATH_MAX], w[NF_EXE_PATH_MAX];
	char id[32] = "PID";
	int own = strcmp(path, who) == 0;

	nf_policy_escape(path, p, sizeof(p));
	nf_policy_escape(who, w, sizeof(w));
	if (pid > 0)
		snprintf(id, sizeof(id), "%ld", pid);
	snprintf(buf, len,
		 "%s%s runs %s, which the library cannot enter (%s%s%s): its sockets are left as they"
		 " are; `naglefix fix %s` sets TCP_NODELAY on them from outside, `naglefix watch`"
		 " sees every connection of this host",
		 pid > 0 ? "pid " : "a child", pid > 0 ? id : "", p, own ? "" : w, own ? "" : ": ",
		 nf_exe_why_text(why), id);
	return buf;
}

/* Is there a PT_INTERP among the n program headers at off? -1: unreadable. */
static int has_interp(int fd, off_t off, unsigned n)
{
	ElfW(Phdr) ph[PH_CHUNK];

	for (unsigned i = 0; i < n; i += PH_CHUNK) {
		unsigned k = n - i < PH_CHUNK ? n - i : PH_CHUNK;
		size_t len = k * sizeof(ph[0]);

		if (sys_pread(fd, ph, len, off + (off_t)(i * sizeof(ph[0]))) != (ssize_t)len)
			return -1;
		for (unsigned j = 0; j < k; j++)
			if (ph[j].p_type == PT_INTERP)
				return 1;
	}
	return 0;
}

/* An ELF's answer, from its first n bytes head and its program headers. */
static enum nf_exe_why elf_why(int fd, const unsigned char *head, size_t n)
{
	ElfW(Ehdr) eh;

	if (n < EI_NIDENT)
		return NF_EXE_OK;
	if (head[EI_CLASS] != CLASS || head[EI_DATA] != DATA)
		return NF_EXE_FOREIGN;
	if (n < sizeof(eh))
		return NF_EXE_OK; /* cut short: the exec fails and says so */
	memcpy(&eh, head, sizeof(eh));
	if (MACHINE != EM_NONE && eh.e_machine != MACHINE)
		return NF_EXE_FOREIGN;
	if ((eh.e_type != ET_EXEC && eh.e_type != ET_DYN) || eh.e_phentsize != sizeof(ElfW(Phdr)) ||
	    eh.e_phnum > PHNUM_MAX)
		return NF_EXE_OK;
	return has_interp(fd, (off_t)eh.e_phoff, eh.e_phnum) == 0 ? NF_EXE_STATIC : NF_EXE_OK;
}

/* Will the exec of path (st) be a secure one, and why? The set-ID bits
 * count for nothing under no_new_privs or on a nosuid mount. */
static enum nf_exe_why privileged(const char *path, const struct stat *st)
{
	struct statvfs vfs;

	if (syscall(SYS_prctl, PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1)
		return NF_EXE_OK;
	if (statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_NOSUID))
		return NF_EXE_OK;
	if ((st->st_mode & S_ISUID) && st->st_uid != getuid())
		return NF_EXE_SETUID;
	if ((st->st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) && st->st_gid != getgid())
		return NF_EXE_SETGID;
	/* root's own exec gains no capability it lacks: no secure exec */
	if (getuid() != 0 && getxattr(path, "security.capability", NULL, 0) > 0)
		return NF_EXE_CAPS;
	return NF_EXE_OK;
}

/* The interpreter of a "#!" line in head[0..n), into out. -1: none. */
static int interpreter(const unsigned char *head, size_t n, char out[NF_EXE_PATH_MAX])
{
	size_t i = 2, j;

	while (i < n && (head[i] == ' ' || head[i] == '\t'))
		i++;
	for (j = i; j < n && head[j] != ' ' && head[j] != '\t' && head[j] != '\n' && head[j]; j++)
		;
	if (j == i || j == n)
		return -1; /* none, or longer than the kernel reads */
	memcpy(out, head + i, j - i);
	out[j - i] = '\0';
	return 0;
}

/* A binary's answer: its ELF headers', then its mode's (a file that
 * cannot be read, being execute-only, by its mode alone). */
static enum nf_exe_why binary_why(int fd, const char *path, const struct stat *st,
				  const unsigned char *head, ssize_t n)
{
	int elf = n >= SELFMAG && memcmp(head, ELFMAG, SELFMAG) == 0;
	enum nf_exe_why w = elf ? elf_why(fd, head, (size_t)n) : NF_EXE_OK;

	if (w == NF_EXE_OK && (elf || n < 0))
		w = privileged(path, st);
	return w; /* another format (binfmt_misc, or sh for execvp): no telling */
}

/*
 * One level: sets *w for path; returns 1 with the interpreter in next if
 * path is a script, else 0.
 */
static int check_one(const char *path, enum nf_exe_why *w, char next[NF_EXE_PATH_MAX])
{
	unsigned char head[HEAD_SIZE];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	ssize_t n = fd < 0 ? -1 : sys_pread(fd, head, sizeof(head), 0);
	struct stat st;
	int rc = 0;

	*w = NF_EXE_OK;
	if ((fd >= 0 ? fstat(fd, &st) : stat(path, &st)) < 0 || !S_ISREG(st.st_mode))
		rc = 0; /* the exec says what is wrong */
	else if (n >= 2 && head[0] == '#' && head[1] == '!')
		rc = interpreter(head, (size_t)n, next) == 0;
	else
		*w = binary_why(fd, path, &st, head, n);
	if (fd >= 0)
		sys_close(fd);
	return rc;
}

enum nf_exe_why nf_exe_check(const char *path, char who[NF_EXE_PATH_MAX])
{
	char cur[NF_EXE_PATH_MAX], next[NF_EXE_PATH_MAX];
	enum nf_exe_why w = NF_EXE_OK;
	int saved = errno;

	snprintf(cur, sizeof(cur), "%s", path);
	for (int depth = 0; depth <= DEPTH_MAX && check_one(cur, &w, next); depth++)
		memcpy(cur, next, sizeof(cur));
	if (w != NF_EXE_OK)
		memcpy(who, cur, NF_EXE_PATH_MAX);
	errno = saved;
	return w;
}

/* Is path a regular file this process may execute? */
static int runnable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int nf_exe_find(const char *name, char out[NF_EXE_PATH_MAX])
{
	const char *dirs = getenv("PATH"), *p, *e;
	int saved = errno;

	snprintf(out, NF_EXE_PATH_MAX, "%s", name);
	if (strchr(name, '/'))
		return 0;
	for (p = dirs ? dirs : "/bin:/usr/bin"; *name; p = e + 1) {
		e = strchrnul(p, ':');
		/* an empty entry is the current directory */
		snprintf(out, NF_EXE_PATH_MAX, "%.*s/%s", e == p ? 1 : (int)(e - p), e == p ? "." : p,
			 name);
		if (runnable(out)) {
			errno = saved;
			return 0;
		}
		if (!*e)
			break;
	}
	snprintf(out, NF_EXE_PATH_MAX, "%s", name);
	errno = saved;
	return -1;
}
