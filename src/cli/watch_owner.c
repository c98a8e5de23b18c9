/*
 * watch_owner.c - the process of this host holding a connection the
 * detector names (watch_int.h): watch.c names each holder with it and
 * watch_fix.c finds the receiving end, neither calling the other for it.
 */
#include "watch_int.h"

#include <string.h>

static void end_of(const struct nf_end *e, struct nf_owner_end *o)
{
	o->family = e->family;
	o->port = e->port;
	memcpy(o->addr, e->addr, sizeof(o->addr));
}

int nf_watch_owner(const struct nf_end *local, const struct nf_end *remote, struct nf_owner *o)
{
	struct nf_owner_end l, r;

	end_of(local, &l);
	end_of(remote, &r);
	return nf_owner_find(&l, &r, o);
}
