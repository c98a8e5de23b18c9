/*
 * aside.c - the flag of nf_aside.h, in a module of its own: the modules
 * that read it (conn, track, timer, log) are below the one that sets it
 * (sandbox).
 */
#include "nf_aside.h"

atomic_int nf_aside_flag;
