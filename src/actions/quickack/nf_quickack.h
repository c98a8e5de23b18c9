/*
 * nf_quickack.h - the quickack action: TCP_QUICKACK kept on around every
 * read, so the peer's Nagle (which waits for our ACK) is released at once.
 *
 * The kernel leaves quick-ACK mode again by itself (after it answers), so
 * the option is set before each receive and again after one returns data.
 * Every function keeps errno as it found it.
 */
#ifndef NF_QUICKACK_H
#define NF_QUICKACK_H

#include <sys/types.h>

#include "core/nf_conn.h"

/* c was just decided quickack: turns the read hooks on, sets the option. */
void nf_quickack_adopt(struct nf_conn *c, int fd);

/* Before a read of fd, a socket the read hook has just seen to be
 * quickack's: TCP_QUICKACK on. */
void nf_quickack_before_read(int fd);

/* After a read of fd returned rc, fd having been quickack's before it: on
 * again if it returned data and fd still is. */
void nf_quickack_after_read(int fd, ssize_t rc);

#endif
