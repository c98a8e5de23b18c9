/* dt_peer.h: the peer of the differential test (dt_peer.c). */
#ifndef DT_PEER_H
#define DT_PEER_H
#include "dt.h"

struct dt_peer {
	int nconn, lfd[DT_MAXCONN], port[DT_MAXCONN], filler;
	struct dt_conn conn[DT_MAXCONN];
};

/* Opens a listener on 127.0.0.1 per connection of L (and fills the accept
 * queue of a backlog one); 0, or -1 with errno. */
int dt_peer_listen(struct dt_peer *p, const struct dt_list *l);

/* Serves until every connection ended or the deadline; writes DIR/peer.C
 * and DIR/peer.C.end. Call in a child; returns when done. */
void dt_peer_serve(struct dt_peer *p, const char *dir);
#endif
