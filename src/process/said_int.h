/*
 * said_int.h - a set-up message said once per process tree: the first
 * process to say it marks the environment (NAGLEFIX_SAID), and the
 * programs it starts, which read the same bad file, stay silent on it.
 */
#ifndef NF_SAID_INT_H
#define NF_SAID_INT_H

/*
 * Says msg on the log unless NAGLEFIX_SAID holds its mark (an ancestor
 * said it); then, if mark_env, sets NAGLEFIX_SAID to its mark. mark_env
 * only where no thread of the program can read the environment meanwhile
 * (the library's constructor, before main) and the environment is the
 * program's to trust (not a secure exec). Keeps errno.
 */
void nf_said_once(const char *msg, int mark_env);

#endif
