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

#include "../nf_hooks.h"
#include "nf_coalesce.h"
#include "nf_init.h"
#include "nf_real.h"
#include "nf_track.h"

/* What fd holds goes first: 0, or -1 with errno. */
static int push_before(int fd)
{
	struct nf_conn *c = nf_track_coalescing(fd);

	return c ? nf_coalesce_before_send(c, fd, 0) : 0;
}

int nf_aio_write(struct aiocb *cb, struct aiocb64 *cb64)
{
	if (cb64)
		return push_before(cb64->aio_fildes) < 0 ? -1 : nf_real.aio_write64(cb64);
	if (cb && push_before(cb->aio_fildes) < 0)
		return -1;
	return nf_real.aio_write(cb);
}

/* The socket of every LIO_WRITE in the list (one of the two given). */
static int push_list(nf_lio_list list, struct aiocb64 *const list64[], int nent)
{
	for (int i = 0; i < nent; i++) {
		int op = list64 ? (list64[i] ? list64[i]->aio_lio_opcode : LIO_NOP)
				: (list[i] ? list[i]->aio_lio_opcode : LIO_NOP);
		int fd = op != LIO_WRITE ? -1 : list64 ? list64[i]->aio_fildes : list[i]->aio_fildes;

		if (fd >= 0 && push_before(fd) < 0)
			return -1;
	}
	return 0;
}

int nf_lio_listio(int mode, nf_lio_list list, struct aiocb64 *const list64[], int nent,
		  struct sigevent *sev)
{
	if ((list || list64) && push_list(list, list64, nent) < 0)
		return -1;
	if (list64)
		return nf_real.lio_listio64(mode, list64, nent, sev);
	return nf_real.lio_listio(mode, list, nent, sev);
}

NF_EXPORT int aio_write(struct aiocb *cb)
{
	nf_init();
	return nf_aio_write(cb, NULL);
}

NF_EXPORT int aio_write64(struct aiocb64 *cb)
{
	nf_init();
	return nf_aio_write(NULL, cb);
}

NF_EXPORT int lio_listio(int mode, nf_lio_list list, int nent, struct sigevent *sev)
{
	nf_init();
	return nf_lio_listio(mode, list, NULL, nent, sev);
}

NF_EXPORT int lio_listio64(int mode, struct aiocb64 *const list[], int nent,
			   struct sigevent *sev)
{
	nf_init();
	return nf_lio_listio(mode, NULL, list, nent, sev);
}
