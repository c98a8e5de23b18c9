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
 */
#include <aio.h>
#include <errno.h>

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

int nf_aio_write(struct aiocb *cb)
{
	if (cb && push_before(cb->aio_fildes) < 0)
		return -1;
	return nf_real.aio_write(cb);
}

int nf_aio_write64(struct aiocb64 *cb)
{
	if (cb && push_before(cb->aio_fildes) < 0)
		return -1;
	return nf_real.aio_write64(cb);
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

int nf_lio_listio(int mode, nf_lio_list list, int nent, struct sigevent *sev)
{
	if (push_list(list, nent) < 0)
		return -1;
	return nf_real.lio_listio(mode, list, nent, sev);
}

int nf_lio_listio64(int mode, struct aiocb64 *const list[], int nent, struct sigevent *sev)
{
	if (push_list64(list, nent) < 0)
		return -1;
	return nf_real.lio_listio64(mode, list, nent, sev);
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
