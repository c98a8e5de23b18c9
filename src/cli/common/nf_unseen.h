/*
 * nf_unseen.h - what the library could not see (unseen.c): a program it
 * cannot enter, said before naglefix starts it (the run mode, audit),
 * and for audit what the library wrote of where it went.
 */
#ifndef NF_UNSEEN_H
#define NF_UNSEEN_H

/* Before naglefix -- COMMAND starts: if the library cannot enter COMMAND
 * (as execvp finds it), says so on stderr, with what reaches it instead. */
void nf_cli_unseen_say(const char *cmd);

/* What audit learns of where the library went (unseen.c). */
struct nf_cli_unseen;

/*
 * Before audit starts cmd: says on stderr if the library cannot enter it,
 * makes the record file the library writes to and names it in
 * NAGLEFIX_REACH. NULL if it cannot (out of memory, no temporary file):
 * nothing can then be told of what was not seen.
 */
struct nf_cli_unseen *nf_cli_unseen_open(const char *cmd);

/* After cmd ended, reads what the library wrote: 1 if it saw anything
 * to give a verdict on (a process entered, a TCP socket there), or if
 * that cannot be told (r NULL, the file unreadable); else 0. */
int nf_cli_unseen_seen(struct nf_cli_unseen *r);

/*
 * Says on stderr what was not seen (after nf_cli_unseen_seen; not if
 * COMMAND never ran: call it without): that nothing was, and why ("no
 * verdict" first unless table, a table printed of what the log held),
 * each program started that the library could not enter, and what sees
 * them instead. Removes the record file and frees r (NULL is allowed).
 */
void nf_cli_unseen_close(struct nf_cli_unseen *r, int table);

#endif
