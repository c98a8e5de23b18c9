/*
 * aio.c - aio_write, aio_write64, lio_listio, lio_listio64: POSIX AIO
 * writes to a socket.
 *
 * libc's aio thread writes the socket with its internal write (glibc: a
 * pwrite, then write on ESPIPE; musl: write on a descriptor it cannot
 * seek), which no hook sees. So before a write request is queued, what
 * its socket holds goes out (or the call fails as a send would: EAGAIN on
 * a full non-blocking socket); a write the program makes after queueing
 * it is as unordered against the request as it is without the library.
 *
 * On an auto socket a write request is noted as a send once it is queued
 * (lio_listio's LIO_WAIT: once written), for auto's check at the next
 * read or wait and the timer's visit flush= later: the aio thread's own
 * write is not seen. A request the aio thread writes after both (more
 * than flush= after it was queued, and after the program's next read or
 * wait) is not pushed by auto: Nagle and the peer's delayed ACK decide.
 */
#include <aio.h>
#include <errno.h>
#include <limits.h>

#include "hooks_int.h"
#include "actions/coalesce/nf_coalesce.h"
#include "actions/nf_track.h"
#include "core/nf_real.h"
#include "process/nf_init.h"

/* What fd holds goes first: 0, or -1 with errno. */
static int push_before(int fd)
{
	struct nf_conn *c = nf_track_coalescing(fd);

	return c ? nf_coalesce_before_send(c, fd, 0) : 0;
}

/* A request of n bytes on fd was queued (rc 0): auto notes it as a send.
 * Returns rc; keeps errno. */
static int queued(int fd, size_t n, int rc)
{
	if (rc == 0 && n > 0)
		nf_hook_sent(fd, n > SSIZE_MAX ? SSIZE_MAX : (ssize_t)n);
	return rc;
}

int nf_aio_write(struct aiocb *cb)
{
	if (cb && push_before(cb->aio_fildes) < 0)
		return -1;
	if (!cb)
		return nf_real.aio_write(cb);
	return queued(cb->aio_fildes, cb->aio_nbytes, nf_real.aio_write(cb));
}

int nf_aio_write64(struct aiocb64 *cb)
{
	if (cb && push_before(cb->aio_fildes) < 0)
		return -1;
	if (!cb)
		return nf_real.aio_write64(cb);
	return queued(cb->aio_fildes, cb->aio_nbytes, nf_real.aio_write64(cb));
}

/* A request of a list: if it writes, what its socket holds goes first. */
static int push_request(const void *entry, int op, int fd)
{
	return entry && op == LIO_WRITE ? push_before(fd) : 0;
}

static int push_list(nf_lio_list list, int nent)
{
	for (int i = 0; list && i < nent; i++)
		if (push_request(list[i], list[i] ? list[i]->aio_lio_opcode : LIO_NOP,
				 list[i] ? list[i]->aio_fildes : -1) < 0)
			return -1;
	return 0;
}

static int push_list64(struct aiocb64 *const list[], int nent)
{
	for (int i = 0; list && i < nent; i++)
		if (push_request(list[i], list[i] ? list[i]->aio_lio_opcode : LIO_NOP,
				 list[i] ? list[i]->aio_fildes : -1) < 0)
			return -1;
	return 0;
}

/* The list was queued (rc 0): each write request noted for auto. */
static int queued_list(nf_lio_list list, int nent, int rc)
{
	for (int i = 0; rc == 0 && list && i < nent; i++)
		if (list[i] && list[i]->aio_lio_opcode == LIO_WRITE)
			queued(list[i]->aio_fildes, list[i]->aio_nbytes, 0);
	return rc;
}

static int queued_list64(struct aiocb64 *const list[], int nent, int rc)
{
	for (int i = 0; rc == 0 && list && i < nent; i++)
		if (list[i] && list[i]->aio_lio_opcode == LIO_WRITE)
			queued(list[i]->aio_fildes, list[i]->aio_nbytes, 0);
	return rc;
}

int nf_lio_listio(int mode, nf_lio_list list, int nent, struct sigevent *sev)
{
	if (push_list(list, nent) < 0)
		return -1;
	return queued_list(list, nent, nf_real.lio_listio(mode, list, nent, sev));
}

int nf_lio_listio64(int mode, struct aiocb64 *const list[], int nent, struct sigevent *sev)
{
	if (push_list64(list, nent) < 0)
		return -1;
	return queued_list64(list, nent, nf_real.lio_listio64(mode, list, nent, sev));
}

NF_EXPORT int aio_write(struct aiocb *cb)
{
	nf_init();
	return nf_aio_write(cb);
}

NF_EXPORT int aio_write64(struct aiocb64 *cb)
{
	nf_init();
	return nf_aio_write64(cb);
}

NF_EXPORT int lio_listio(int mode, nf_lio_list list, int nent, struct sigevent *sev)
{
	nf_init();
	return nf_lio_listio(mode, list, nent, sev);
}

NF_EXPORT int lio_listio64(int mode, struct aiocb64 *const list[], int nent,
			   struct sigevent *sev)
{
	nf_init();
	return nf_lio_listio64(mode, list, nent, sev);
}
