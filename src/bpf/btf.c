/*
 * btf.c - the one type description naglefix loads (nf_bpf.h): the kernel
 * makes a socket-local storage map (marks.c) only with its key and value
 * described in BTF. Written here as the raw bytes BPF_BTF_LOAD takes (the
 * header, one type, its name), as the kernel's own tests write theirs,
 * since nothing here is compiled by clang to carry it.
 */
#include "nf_bpf.h"

#include <linux/btf.h>

/* The header, type id 1 (a signed 32-bit int named "int"), its name. */
struct int_btf {
	struct btf_header hdr;
	struct btf_type type;
	uint32_t encoding;
	char strings[5];
} __attribute__((packed));

int nf_bpf_btf_int(void)
{
	static const struct int_btf b = {
		.hdr = {
			.magic = BTF_MAGIC,
			.version = BTF_VERSION,
			.hdr_len = sizeof(struct btf_header),
			.type_off = 0,
			.type_len = sizeof(struct btf_type) + sizeof(uint32_t),
			.str_off = sizeof(struct btf_type) + sizeof(uint32_t),
			.str_len = sizeof(b.strings),
		},
		.type = { .name_off = 1, .info = BTF_KIND_INT << 24, .size = 4 },
		.encoding = BTF_INT_SIGNED << 24 | 32, /* offset 0, 32 bits */
		.strings = "\0int",
	};

	return nf_bpf_btf_load(&b, sizeof(b));
}
