/* dt_exp.h: the record dt_prog writes to RUNDIR/exp before the bytes of each
 * send the program was told went out (len of them; -1: unknown, a stdio
 * error). blk is the thread block (-1 outside one): inside a block the
 * threads' streams may interleave, outside it the order is the file's. */
#ifndef DT_EXP_H
#define DT_EXP_H
#include <stdint.h>
struct dt_exp {
	int32_t c, w, blk, len, id;
};
#endif
