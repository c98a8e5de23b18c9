/*
 * nf_sandbox.h - the program puts itself in a seccomp sandbox.
 *
 * A process that installs a seccomp filter (OpenSSH's pre-authentication
 * child, with prctl(PR_SET_SECCOMP); libseccomp, with the seccomp system
 * call) allows the system calls it makes itself and is killed (SIGSYS) for
 * any other: a setsockopt, ioctl or getsockopt of the library's, its timer
 * thread's clone3, its log's open. So before the filter is in place,
 * everything the library holds is sent, and from then on it stands aside
 * (nf_aside.h): every socket is `pass`, and the library makes no system
 * call of its own.
 */
#ifndef NF_SANDBOX_H
#define NF_SANDBOX_H

/*
 * Called before the program's call that installs a seccomp filter (any
 * mode: strict allows even less). Writes audit's summaries so far and
 * sends what coalesce holds, as at exit (a peer that takes nothing for
 * its rule's drain=: the bytes are dropped, and the log says so); then the
 * library stands aside for good, whether or not the program's call
 * succeeds: its timer thread ended and reaped, every socket `pass`, every
 * descriptor left alone by the hooks' first test. Keeps errno. Once only:
 * later calls do nothing.
 */
void nf_sandbox_enter(void);

#endif
