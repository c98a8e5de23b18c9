/*
 * sys.c - the bpf(2) calls naglefix makes, one function each (nf_bpf.h):
 * no libbpf, the system call itself, its errno returned negated.
 */
#include "nf_bpf.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* bpf(2) of cmd with attr (size bytes of it): its result or -errno. */
static int sys_bpf(int cmd, union bpf_attr *attr)
{
	long rc = syscall(__NR_bpf, cmd, attr, sizeof(*attr));

	return rc < 0 ? -errno : (int)rc;
}

static uint64_t ptr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* The program type and attach type of each kind naglefix attaches, and
 * the attach type its load names (sock_ops programs name none). */
static const struct {
	enum bpf_prog_type type;
	enum bpf_attach_type attach, expected;
} kinds[] = {
	[NF_BPF_SOCK_OPS] = { BPF_PROG_TYPE_SOCK_OPS, BPF_CGROUP_SOCK_OPS, 0 },
	[NF_BPF_SETSOCKOPT] = { BPF_PROG_TYPE_CGROUP_SOCKOPT, BPF_CGROUP_SETSOCKOPT,
				BPF_CGROUP_SETSOCKOPT },
};

enum bpf_prog_type nf_bpf_kind_type(enum nf_bpf_kind kind)
{
	return kinds[kind].type;
}

int nf_bpf_map_create(const char *name, uint32_t value_size)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = sizeof(uint32_t);
	a.value_size = value_size;
	a.max_entries = 1;
	strncpy(a.map_name, name, sizeof(a.map_name) - 1);
	return sys_bpf(BPF_MAP_CREATE, &a);
}

int nf_bpf_btf_load(const void *blob, uint32_t len)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.btf = ptr(blob);
	a.btf_size = len;
	return sys_bpf(BPF_BTF_LOAD, &a);
}

int nf_bpf_sk_storage_create(const char *name, int btf_fd, uint32_t type_id, uint32_t value_size)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_SK_STORAGE;
	a.map_flags = BPF_F_NO_PREALLOC; /* the kernel takes no other */
	a.key_size = sizeof(int);        /* a socket's descriptor, from user space */
	a.value_size = value_size;
	a.max_entries = 0;               /* one entry a socket, as many as sockets */
	a.btf_fd = (uint32_t)btf_fd;
	a.btf_key_type_id = type_id;
	a.btf_value_type_id = type_id;
	strncpy(a.map_name, name, sizeof(a.map_name) - 1);
	return sys_bpf(BPF_MAP_CREATE, &a);
}

/* BPF_MAP_UPDATE_ELEM or BPF_MAP_LOOKUP_ELEM of key 0. */
static int map_elem(int cmd, int fd, const void *value)
{
	uint32_t key = 0;
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)fd;
	a.key = ptr(&key);
	a.value = ptr(value);
	return sys_bpf(cmd, &a);
}

int nf_bpf_map_write(int fd, const void *value)
{
	return map_elem(BPF_MAP_UPDATE_ELEM, fd, value);
}

int nf_bpf_map_read(int fd, void *value)
{
	return map_elem(BPF_MAP_LOOKUP_ELEM, fd, value);
}

int nf_bpf_map_update(int fd, const void *key, const void *value)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)fd;
	a.key = ptr(key);
	a.value = ptr(value);
	a.flags = BPF_ANY;
	return sys_bpf(BPF_MAP_UPDATE_ELEM, &a);
}

/* One BPF_PROG_LOAD, with the verifier's log into log if loglen > 0. */
static int prog_load(enum nf_bpf_kind kind, const struct bpf_insn *insn, size_t n, char *log,
		     size_t loglen)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_type = kinds[kind].type;
	a.expected_attach_type = kinds[kind].expected;
	a.insns = ptr(insn);
	a.insn_cnt = (uint32_t)n;
	a.license = ptr("MIT"); /* it calls no helper kept for GPL programs */
	strncpy(a.prog_name, NF_BPF_PROG_NAME, sizeof(a.prog_name) - 1);
	if (loglen > 0) {
		a.log_buf = ptr(log);
		a.log_size = (uint32_t)loglen;
		a.log_level = 1;
	}
	return sys_bpf(BPF_PROG_LOAD, &a);
}

int nf_bpf_prog_load(enum nf_bpf_kind kind, const struct bpf_insn *insn, size_t n, char *log,
		     size_t loglen)
{
	int fd = prog_load(kind, insn, n, NULL, 0);

	log[0] = '\0';
	if (fd == -EACCES || fd == -EINVAL) {
		int again = prog_load(kind, insn, n, log, loglen);

		if (again >= 0) /* refused, then taken: not the verifier's doing */
			return again;
		log[loglen - 1] = '\0';
	}
	return fd;
}

const char *nf_bpf_log_tail(char *log)
{
	size_t n = strlen(log);
	char *nl;

	while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == ' '))
		log[--n] = '\0';
	nl = strrchr(log, '\n');
	return nl ? nl + 1 : log;
}

/* BPF_PROG_ATTACH or BPF_PROG_DETACH with these fields. */
static int attach_cmd(int cmd, enum nf_bpf_kind kind, int cg_fd, int prog_fd, uint32_t flags,
		      int replace_fd)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.target_fd = (uint32_t)cg_fd;
	a.attach_bpf_fd = (uint32_t)prog_fd;
	a.attach_type = kinds[kind].attach;
	a.attach_flags = flags;
	a.replace_bpf_fd = replace_fd >= 0 ? (uint32_t)replace_fd : 0;
	return sys_bpf(cmd, &a);
}

int nf_bpf_prog_attach(enum nf_bpf_kind kind, int cg_fd, int prog_fd, int replace_fd)
{
	uint32_t flags = BPF_F_ALLOW_MULTI | (replace_fd >= 0 ? BPF_F_REPLACE : 0);

	return attach_cmd(BPF_PROG_ATTACH, kind, cg_fd, prog_fd, flags, replace_fd);
}

int nf_bpf_prog_detach(enum nf_bpf_kind kind, int cg_fd, int prog_fd)
{
	return attach_cmd(BPF_PROG_DETACH, kind, cg_fd, prog_fd, 0, -1);
}

int nf_bpf_prog_query(enum nf_bpf_kind kind, int cg_fd, uint32_t *ids, uint32_t *cnt,
		      uint32_t *flags)
{
	union bpf_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.query.target_fd = (uint32_t)cg_fd;
	a.query.attach_type = kinds[kind].attach;
	a.query.prog_ids = ptr(ids);
	a.query.prog_cnt = *cnt;
	rc = sys_bpf(BPF_PROG_QUERY, &a);
	if (rc == -ENOSPC) /* more than *cnt: the first *cnt are there */
		rc = 0;
	*cnt = a.query.prog_cnt;
	*flags = a.query.attach_flags;
	return rc;
}

/* BPF_PROG_GET_FD_BY_ID or BPF_MAP_GET_FD_BY_ID. */
static int get_by_id(int cmd, uint32_t id)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_id = id; /* map_id shares its place */
	return sys_bpf(cmd, &a);
}

int nf_bpf_prog_get(uint32_t id)
{
	return get_by_id(BPF_PROG_GET_FD_BY_ID, id);
}

int nf_bpf_map_get(uint32_t id)
{
	return get_by_id(BPF_MAP_GET_FD_BY_ID, id);
}

/* BPF_OBJ_GET_INFO_BY_FD into info of len bytes. */
static int obj_info(int fd, void *info, uint32_t len)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.info.bpf_fd = (uint32_t)fd;
	a.info.info_len = len;
	a.info.info = ptr(info);
	return sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a);
}

int nf_bpf_prog_info(int fd, struct bpf_prog_info *info, uint32_t *maps, uint32_t nmaps)
{
	memset(info, 0, sizeof(*info));
	info->nr_map_ids = nmaps;
	info->map_ids = ptr(maps);
	return obj_info(fd, info, sizeof(*info));
}

int nf_bpf_map_info(int fd, struct bpf_map_info *info)
{
	memset(info, 0, sizeof(*info));
	return obj_info(fd, info, sizeof(*info));
}
