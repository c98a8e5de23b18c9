/*
 * hot.c - the page every hook reads first: the real functions' table and
 * the fast-path byte map (see struct nf_hot in nf_real.h). Page-aligned
 * so that the two never straddle a page boundary.
 */
#include "nf_real.h"

struct nf_hot nf_hot __attribute__((aligned(4096)));
