/*
 * state.c - naglefix's programs' state map: the policy they were built
 * from (its name and text, for attach --list and watch --fix) and what
 * they counted. Both programs of one attach hold the one map (their
 * instructions name it), so the map lives exactly as long as they do: nothing to clean up, nothing
 * left behind in a file that could say something else than the kernel.
 * A program is told to be naglefix's by its name, its type, its map's
 * name and the magic at the start of the map's value.
 */
#include "nf_bpf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int nf_bpf_state_create(const char *source, const char *text, size_t len)
{
	struct nf_bpf_state *st;
	int fd, rc;

	if (len > NF_BPF_TEXT_MAX - 1)
		return -E2BIG;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	memcpy(st->magic, NF_BPF_MAGIC, sizeof(st->magic));
	strncpy(st->source, source, sizeof(st->source) - 1);
	memcpy(st->text, text, len);
	st->text_len = (uint32_t)len;
	fd = nf_bpf_map_create(NF_BPF_MAP_NAME, sizeof(*st));
	if (fd >= 0 && (rc = nf_bpf_map_write(fd, st)) < 0) {
		close(fd);
		fd = rc;
	}
	free(st);
	return fd;
}

/* Is the map id naglefix's state? Reads it into st if so (1), 0 if not. */
static int read_state(uint32_t id, struct nf_bpf_state *st)
{
	struct bpf_map_info info;
	int fd = nf_bpf_map_get(id), rc;

	if (fd < 0)
		return fd == -ENOENT ? 0 : fd; /* gone meanwhile: not ours to read */
	rc = nf_bpf_map_info(fd, &info);
	if (rc == 0 && (strcmp(info.name, NF_BPF_MAP_NAME) != 0 || info.type != BPF_MAP_TYPE_ARRAY ||
			info.value_size != sizeof(*st) || info.max_entries != 1))
		rc = 1; /* another map: not naglefix's state */
	else if (rc == 0 && (rc = nf_bpf_map_read(fd, st)) == 0)
		rc = memcmp(st->magic, NF_BPF_MAGIC, sizeof(st->magic)) == 0 ? 2 : 1;
	close(fd);
	if (rc < 0)
		return rc;
	st->text[st->text_len < NF_BPF_TEXT_MAX ? st->text_len : NF_BPF_TEXT_MAX - 1] = '\0';
	st->source[NF_BPF_SOURCE_MAX - 1] = '\0';
	return rc == 2;
}

int nf_bpf_state_of_prog(int prog_fd, struct nf_bpf_state *st)
{
	struct bpf_prog_info info;
	uint32_t maps[4];
	int rc = nf_bpf_prog_info(prog_fd, &info, maps, 4);

	if (rc < 0)
		return rc;
	if (strcmp(info.name, NF_BPF_PROG_NAME) != 0 ||
	    (info.type != nf_bpf_kind_type(NF_BPF_SOCK_OPS) &&
	     info.type != nf_bpf_kind_type(NF_BPF_SETSOCKOPT)))
		return 0;
	for (uint32_t i = 0; i < info.nr_map_ids && i < 4; i++)
		if ((rc = read_state(maps[i], st)) != 0)
			return rc;
	return 0;
}
