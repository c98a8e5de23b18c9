/*
 * nf_copyin.h - copying a program's bytes without ever faulting on them.
 *
 * A buffered write copies the program's bytes where the kernel would have
 * read them. A bad pointer must get what the kernel gives it (EFAULT, or
 * a partial count), never a SIGSEGV in the library. So the first copy
 * from a range of pages goes through the kernel (process_vm_readv on the
 * process itself), which checks every byte; the pages it read are
 * remembered (1,024 of them, process-wide, direct-mapped), and later
 * copies from them are a memcpy.
 *
 * What is not caught: a page the program unmapped (or made unreadable)
 * after writing from it, then writes from again. Where the kernel refuses
 * process_vm_readv (a seccomp filter), every copy is a memcpy.
 */
#ifndef NF_COPYIN_H
#define NF_COPYIN_H

#include <stddef.h>
#include <sys/uio.h>

/*
 * Copies the bytes of iov[0..iovcnt) (n in all) to dst. Returns 0, or -1
 * when some byte may not be readable: then nothing of dst is meaningful
 * and the caller lets the kernel answer the program's own call. Safe in a
 * signal handler. Keeps errno.
 */
int nf_copyin(char *dst, const struct iovec *iov, int iovcnt, size_t n);

/* nf_copyin of the n bytes at src (a structure the program passed). */
int nf_copy_from(void *dst, const void *src, size_t n);

#endif
