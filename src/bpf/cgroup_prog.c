/*
 * cgroup_prog.c - the programs of one kind (sock_ops, setsockopt) of one
 * cgroup: each named,
 * naglefix's told apart; naglefix's put there in the place of its earlier
 * one (BPF_F_REPLACE: in one step, in the same place of the list) or
 * after the others (BPF_F_ALLOW_MULTI: they stay and run); naglefix's
 * taken off by its own descriptor, so no other program can be.
 *
 * The attachment is the cgroup's (BPF_PROG_ATTACH), not a link pinned in
 * bpffs: it lives exactly as long as the cgroup, which is what a policy
 * for a service or a container wants (a systemd service's cgroup goes
 * when it stops, and the drop-in attaches again at its next start), needs
 * no bpffs mounted, and leaves no pin to go stale when the cgroup goes.
 */
#include "nf_bpf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *nf_bpf_kind_name(enum nf_bpf_kind kind)
{
	return kind == NF_BPF_SETSOCKOPT ? "setsockopt" : "sock_ops";
}

const char *nf_bpf_mode_name(uint32_t flags)
{
	if (flags & BPF_F_ALLOW_MULTI)
		return "multi";
	if (flags & BPF_F_ALLOW_OVERRIDE)
		return "override";
	return "exclusive";
}

/* Names one program of the list; tells whether it is naglefix's. */
static int describe(struct nf_bpf_attached *p, struct nf_bpf_state *st, int *first)
{
	struct bpf_prog_info info;
	uint32_t maps[4];
	int fd = nf_bpf_prog_get(p->id), rc;

	if (fd < 0)
		return fd == -ENOENT ? 0 : fd; /* detached meanwhile: left nameless */
	rc = nf_bpf_prog_info(fd, &info, maps, 4);
	if (rc == 0) {
		memcpy(p->name, info.name, sizeof(p->name));
		p->name[sizeof(p->name) - 1] = '\0';
		rc = nf_bpf_state_of_prog(fd, st);
	}
	close(fd);
	if (rc < 0)
		return rc;
	p->ours = rc;
	if (rc && *first)
		*first = 0; /* st keeps the first one's state */
	return 0;
}

int nf_bpf_cgroup_query(int cg_fd, enum nf_bpf_kind kind, struct nf_bpf_cgroup *out,
			struct nf_bpf_state *st)
{
	uint32_t ids[NF_BPF_CGROUP_MAX], cnt = NF_BPF_CGROUP_MAX;
	struct nf_bpf_state *scratch = malloc(sizeof(*scratch));
	int rc = scratch ? nf_bpf_prog_query(kind, cg_fd, ids, &cnt, &out->flags) : -ENOMEM, first = 1;

	out->kind = kind;
	out->n = cnt;
	out->ours = 0;
	for (size_t i = 0; rc == 0 && i < cnt && i < NF_BPF_CGROUP_MAX; i++) {
		out->v[i] = (struct nf_bpf_attached){ .id = ids[i] };
		rc = describe(&out->v[i], first && st ? st : scratch, &first);
		out->ours += (size_t)out->v[i].ours;
	}
	free(scratch);
	return rc;
}

/* Detaches naglefix's programs of now but keep (an id, 0 none). */
static int detach_ours(int cg_fd, const struct nf_bpf_cgroup *now, uint32_t keep, size_t *n)
{
	for (size_t i = 0; i < now->n && i < NF_BPF_CGROUP_MAX; i++) {
		int fd, rc;

		if (!now->v[i].ours || now->v[i].id == keep)
			continue;
		fd = nf_bpf_prog_get(now->v[i].id);
		if (fd == -ENOENT)
			continue; /* gone meanwhile */
		if (fd < 0)
			return fd;
		rc = nf_bpf_prog_detach(now->kind, cg_fd, fd);
		close(fd);
		if (rc < 0 && rc != -ENOENT)
			return rc;
		*n += rc == 0;
	}
	return 0;
}

int nf_bpf_cgroup_attach(int cg_fd, int prog_fd, const struct nf_bpf_cgroup *now)
{
	uint32_t old = 0;
	size_t gone = 0;
	int old_fd = -1, rc;

	for (size_t i = 0; i < now->n && i < NF_BPF_CGROUP_MAX && !old; i++)
		if (now->v[i].ours)
			old = now->v[i].id;
	if (old && (old_fd = nf_bpf_prog_get(old)) < 0)
		return old_fd;
	rc = nf_bpf_prog_attach(now->kind, cg_fd, prog_fd, old_fd);
	if (old_fd >= 0)
		close(old_fd);
	if (rc < 0)
		return rc;
	return detach_ours(cg_fd, now, old, &gone);
}

int nf_bpf_cgroup_detach(int cg_fd, const struct nf_bpf_cgroup *now, size_t *n)
{
	*n = 0;
	return detach_ours(cg_fd, now, 0, n);
}

int nf_bpf_cgroup_restore(int cg_fd, enum nf_bpf_kind kind, int new_fd, int old_fd)
{
	if (old_fd >= 0)
		return nf_bpf_prog_attach(kind, cg_fd, old_fd, new_fd);
	return nf_bpf_prog_detach(kind, cg_fd, new_fd);
}
