/*
 * stdio.c - fdopen, fclose, freopen, freopen64, dprintf, vdprintf, the
 * fortified __dprintf_chk, __vdprintf_chk, and glibc 2.0's _IO_fdopen and
 * _IO_fclose (still exported): stdio on a socket.
 *
 * stdio reads, writes and closes through libc's internal calls, which no
 * hook sees. So a socket stdio can write is never buffered: fdopen drains
 * what its socket holds and turns its rule to nodelay for good, and
 * descriptors 0-2 never get coalesce at all (src/actions/track.c).
 * dprintf, which writes through a FILE of its own, first pushes out what
 * its socket holds, and what it wrote is noted for auto after. fclose and freopen close the descriptor inside libc:
 * its state ends first, as close() ends it, so the number reused later
 * (by a file, say) carries nothing of the socket.
 *
 * glibc's fcloseall flushes and unbuffers every stream but closes no
 * descriptor: nothing to hook (musl has none).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "hooks_int.h"
#include "actions/coalesce/nf_coalesce.h"
#include "actions/nf_track.h"
#include "core/nf_real.h"
#include "process/nf_init.h"

/* A FILE is about to be opened on fd: never coalesce it again. */
static void before_fdopen(int fd)
{
	struct nf_conn *c = nf_track_stdio(fd);

	if (c && atomic_load_explicit(&c->action, memory_order_acquire) == NF_ACT_COALESCE)
		nf_coalesce_retire(c, fd, NF_ACT_NODELAY);
}

FILE *nf_fdopen(int fd, const char *mode)
{
	before_fdopen(fd);
	return nf_real.fdopen(fd, mode);
}

FILE *nf_io_fdopen(int fd, const char *mode)
{
	before_fdopen(fd);
	if (nf_real._IO_fdopen)
		return nf_real._IO_fdopen(fd, mode);
	return nf_real.fdopen(fd, mode);
}

/* The descriptor of f, or -1 (a memory or cookie stream). Keeps errno. */
static int stream_fd(FILE *f)
{
	int saved = errno, fd = f ? fileno(f) : -1;

	errno = saved;
	return fd;
}

/* f's descriptor is about to be closed inside libc: its state ends. */
static void forget_stream_fd(FILE *f)
{
	int fd = stream_fd(f);

	if (fd >= 0)
		nf_fd_forget(fd);
}

int nf_fclose(FILE *f)
{
	forget_stream_fd(f);
	return nf_real.fclose(f);
}

int nf_io_fclose(FILE *f)
{
	forget_stream_fd(f);
	if (nf_real._IO_fclose)
		return nf_real._IO_fclose(f);
	return nf_real.fclose(f);
}

/* freopen closes f's descriptor and opens path on the same number (or,
 * with no path, reopens it): either way the socket's state ends. */
FILE *nf_freopen(const char *path, const char *mode, FILE *f)
{
	forget_stream_fd(f);
	return nf_real.freopen(path, mode, f);
}

FILE *nf_freopen64(const char *path, const char *mode, FILE *f)
{
	forget_stream_fd(f);
	return nf_real.freopen64(path, mode, f);
}

/*
 * dprintf formats into a FILE of libc's own and writes it out with the
 * internal write: what fd holds goes first. 0, or -1 with errno: the call
 * fails as its write would.
 */
static int before_dprintf(int fd)
{
	struct nf_conn *c = nf_track_coalescing(fd);

	return c ? nf_coalesce_before_send(c, fd, 0) : 0;
}

int nf_vdprintf(int fd, const char *fmt, va_list ap)
{
	if (before_dprintf(fd) < 0)
		return -1;
	return (int)nf_hook_sent(fd, nf_real.vdprintf(fd, fmt, ap));
}

/* The fortified call, with its flag (musl has none: the plain one). */
int nf_vdprintf_chk(int fd, int flag, const char *fmt, va_list ap)
{
	if (before_dprintf(fd) < 0)
		return -1;
	if (nf_real.__vdprintf_chk)
		return (int)nf_hook_sent(fd, nf_real.__vdprintf_chk(fd, flag, fmt, ap));
	return (int)nf_hook_sent(fd, nf_real.vdprintf(fd, fmt, ap));
}

NF_EXPORT FILE *fdopen(int fd, const char *mode)
{
	nf_init();
	return nf_fdopen(fd, mode);
}

NF_EXPORT FILE *_IO_fdopen(int fd, const char *mode)
{
	nf_init();
	return nf_io_fdopen(fd, mode);
}

NF_EXPORT int fclose(FILE *f)
{
	nf_init();
	return nf_fclose(f);
}

NF_EXPORT int _IO_fclose(FILE *f)
{
	nf_init();
	return nf_io_fclose(f);
}

NF_EXPORT FILE *freopen(const char *path, const char *mode, FILE *f)
{
	nf_init();
	return nf_freopen(path, mode, f);
}

NF_EXPORT FILE *freopen64(const char *path, const char *mode, FILE *f)
{
	nf_init();
	return nf_freopen64(path, mode, f);
}

NF_EXPORT int vdprintf(int fd, const char *fmt, va_list ap)
{
	nf_init();
	return nf_vdprintf(fd, fmt, ap);
}

NF_EXPORT int dprintf(int fd, const char *fmt, ...)
{
	va_list ap;
	int rc;

	nf_init();
	va_start(ap, fmt);
	rc = nf_vdprintf(fd, fmt, ap);
	va_end(ap);
	return rc;
}

NF_EXPORT int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap)
{
	nf_init();
	return nf_vdprintf_chk(fd, flag, fmt, ap);
}

NF_EXPORT int __dprintf_chk(int fd, int flag, const char *fmt, ...)
{
	va_list ap;
	int rc;

	nf_init();
	va_start(ap, fmt);
	rc = nf_vdprintf_chk(fd, flag, fmt, ap);
	va_end(ap);
	return rc;
}
