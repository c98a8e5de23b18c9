/*
 * marks.c - the sockets naglefix's sock_ops program set TCP_NODELAY on,
 * marked for its setsockopt program (nf_bpf.h): a socket-local storage
 * map (BPF_MAP_TYPE_SK_STORAGE), whose entry lives and dies with its
 * socket, so nothing is left to clean up when a connection closes. The
 * setsockopt program cannot tell a connected socket from an accepted one,
 * nor run the rules at the moment of establishment; the mark carries the
 * sock_ops program's decision, made by the policy's rules on the right
 * end, to it. Both programs hold the map; an attach in the place of an
 * earlier one takes the earlier map over (attach_place.c), so the
 * connections established before it keep their mark. A connection set
 * from outside (attach --now) is marked from user space, by its
 * descriptor, with the same value.
 */
#include "nf_bpf.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* The value a mark holds: the sock_ops program stores 1 (prog.c); the
 * setsockopt program asks only that there be one. */
#define MARK 1

int nf_bpf_marks_create(void)
{
	int btf = nf_bpf_btf_int(), fd;

	if (btf < 0)
		return btf;
	fd = nf_bpf_sk_storage_create(NF_BPF_MARKS_NAME, btf, 1, sizeof(int));
	close(btf); /* the map holds it */
	return fd;
}

/* The map id if it is a map of marks: its descriptor, else -ENOENT. */
static int marks_map(uint32_t id)
{
	struct bpf_map_info info;
	int fd = nf_bpf_map_get(id), rc;

	if (fd < 0)
		return fd;
	rc = nf_bpf_map_info(fd, &info);
	if (rc == 0 && info.type == BPF_MAP_TYPE_SK_STORAGE &&
	    strcmp(info.name, NF_BPF_MARKS_NAME) == 0)
		return fd;
	close(fd);
	return rc < 0 ? rc : -ENOENT;
}

int nf_bpf_marks_of_prog(int prog_fd)
{
	struct bpf_prog_info info;
	uint32_t maps[4];
	int rc = nf_bpf_prog_info(prog_fd, &info, maps, 4), fd = -ENOENT;

	for (uint32_t i = 0; rc == 0 && i < info.nr_map_ids && i < 4 && fd == -ENOENT; i++)
		fd = marks_map(maps[i]);
	return rc < 0 ? rc : fd;
}

int nf_bpf_marks_set(int marks_fd, int sock_fd)
{
	int value = MARK;

	return nf_bpf_map_update(marks_fd, &sock_fd, &value);
}
