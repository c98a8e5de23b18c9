/*
 * nf_reach.h - telling the naglefix command where the library went: that
 * it entered a process, that it saw a TCP socket there, and each program
 * an exec starts that it cannot enter (static, set-user-ID...).
 *
 * NAGLEFIX_REACH, set by the command only: "log" says such an exec on the
 * library's log (naglefix -m ... -- PROGRAM); an absolute path is a file
 * the command made, to which one line is appended for each (naglefix
 * audit, which reads it when PROGRAM ends):
 *
 *   enter PID                      the first process the library entered
 *   tcp PID                        a process whose TCP socket got a rule
 *   lost PID WHY PATH WHO          pid PID is about to run PATH, which the
 *                                  library cannot enter (enum nf_exe_why;
 *                                  WHO the file at fault)
 *
 * fields separated by tabs (a tab or newline of a path written as '?').
 * Unset, nothing is said or written.
 */
#ifndef NF_REACH_H
#define NF_REACH_H

/* Reads spec (NAGLEFIX_REACH; NULL: unset); writes the enter line if the
 * file is still empty. Called once, at the library's set-up. */
void nf_reach_setup(const char *spec);

/* A TCP socket of this process got its rule: the tcp line, once per
 * process. Keeps errno. */
void nf_reach_tcp(void);

/*
 * This process (pid, or the child it has just spawned) runs path (as
 * execvp finds it if search): if the library cannot enter it, says so on
 * the log, or writes the lost line, once for the processes that share
 * this image's set-up (its forks). Keeps errno.
 */
void nf_reach_exec(const char *path, int search, long pid);

#endif
