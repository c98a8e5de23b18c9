/*
 * nf_real.h - the one table of the real libc functions behind the hooks.
 *
 * Everything the library does to the kernel goes through nf_real, never
 * through the interposed names, so its own work is never intercepted again.
 */
#ifndef NF_REAL_H
#define NF_REAL_H

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

struct nf_real {
	int (*socket)(int, int, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*accept)(int, struct sockaddr *, socklen_t *);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	int (*close)(int);
	int (*close_range)(unsigned, unsigned, int);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
};

extern struct nf_real nf_real;

/*
 * Resolves every entry with dlsym(RTLD_NEXT). Aborts with a message if a
 * required symbol is missing or resolves back to this library; optional
 * ones (close_range) are left NULL. Called once, from nf_init().
 */
void nf_real_init(void);

#endif
