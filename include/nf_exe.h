/*
 * nf_exe.h - what a program file is to the dynamic loader: whether an
 * execve(2) of it will load what LD_PRELOAD names, and if not, why.
 * Shared by the command (before it starts a program) and the library
 * (before an exec of the program it is in); raw system calls only.
 */
#ifndef NF_EXE_H
#define NF_EXE_H

#include <stddef.h>

/* Why the loader will not preload the library into a program. */
enum nf_exe_why {
	NF_EXE_OK,      /* it will (or it cannot be told: exec says why) */
	NF_EXE_STATIC,  /* an ELF with no PT_INTERP: no loader at all */
	NF_EXE_SETUID,  /* set-user-ID to another user: a secure exec */
	NF_EXE_SETGID,  /* set-group-ID to another group: the same */
	NF_EXE_CAPS,    /* file capabilities, for a user who is not root */
	NF_EXE_FOREIGN, /* an ELF of another class or machine than the library */
};

/* Room for the path of the file at fault (a script's interpreter). */
#define NF_EXE_PATH_MAX 4096

/*
 * Why the loader will not preload the library into path as execve(2)
 * would start it now (this process's ids, its no_new_privs, the mount's
 * nosuid): a script is its interpreter's case (up to 4 levels, as the
 * kernel goes). NF_EXE_OK also for what cannot be read or is not a file:
 * the exec itself says why. On another answer, who holds the file at
 * fault (path, or the interpreter), NUL-terminated. errno is kept.
 */
enum nf_exe_why nf_exe_check(const char *path, char who[NF_EXE_PATH_MAX]);

/* The words for w: "statically linked", "set-user-ID", ... */
const char *nf_exe_why_text(enum nf_exe_why w);

/*
 * Into buf (len bytes), without "naglefix: " or a newline: pid runs path,
 * which the library cannot enter (why; who the file at fault), what that
 * leaves and what reaches it instead. Paths escaped as the policy's
 * messages are (nf_policy_escape). Returns buf.
 */
const char *nf_exe_say(char *buf, size_t len, const char *path, const char *who,
		       enum nf_exe_why why, long pid);

/*
 * The file execvp(3) would start for name, in out: name itself when it
 * holds a '/', else the first executable regular file of that name in
 * $PATH (unset: /bin:/usr/bin, as glibc's). 0, or -1 if there is none
 * (out then holds name). errno is kept.
 */
int nf_exe_find(const char *name, char out[NF_EXE_PATH_MAX]);

#endif
