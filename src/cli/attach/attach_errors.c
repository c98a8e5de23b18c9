/*
 * attach_errors.c - the failures of attach and detach: one line on stderr
 * each, "naglefix CMD: TARGET: STEP: WHAT HAPPENED: WHAT TO DO", and the
 * exit status it means (attach_int.h, naglefix(1)). Each errno bpf(2) or
 * the cgroup tree can answer is turned into a sentence here.
 */
#include "attach_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/common/nf_cli.h"

/* One errno's meaning and the status it gives. */
struct meaning {
	int err;
	int status;
	const char *say;
};

static const struct meaning meanings[] = {
	{ ENOMEDIUM, NF_ATTACH_EXIT_TARGET,
	  "no cgroup v2 hierarchy is mounted (a host of cgroup v1 only): mount one (mount -t cgroup2 "
	  "none /sys/fs/cgroup/unified, or boot systemd with systemd.unified_cgroup_hierarchy=1) and "
	  "run it again" },
	{ ESRCH, NF_ATTACH_EXIT_TARGET,
	  "no such unit running (a unit's cgroup exists only while it runs: conf/naglefix-attach.conf "
	  "attaches at each start)" },
	{ ENOENT, NF_ATTACH_EXIT_TARGET, "no such cgroup (naglefix attach --list shows them)" },
	{ ENOTDIR, NF_ATTACH_EXIT_TARGET, "not a cgroup (a cgroup v2 directory has cgroup.procs)" },
	{ EXDEV, NF_ATTACH_EXIT_TARGET, "outside the cgroup v2 hierarchy" },
	{ EPERM, NF_ATTACH_EXIT_PERM,
	  "not allowed: bpf(2) on cgroups needs CAP_BPF and CAP_NET_ADMIN (run it as root; a kernel "
	  "lockdown or a security module may refuse it to root too)" },
	{ EACCES, NF_ATTACH_EXIT_PERM,
	  "not allowed: bpf(2) on cgroups needs CAP_BPF and CAP_NET_ADMIN (run it as root; a kernel "
	  "lockdown or a security module may refuse it to root too)" },
	{ ENOSYS, NF_ATTACH_EXIT_KERNEL,
	  "this kernel has no bpf(2) (built without CONFIG_BPF_SYSCALL), or a seccomp filter refuses "
	  "it: use naglefix fix or the library instead" },
	{ EINVAL, NF_ATTACH_EXIT_KERNEL,
	  "this kernel does not take it (cgroup sock_ops programs replaced in place need Linux 5.6; "
	  "setting TCP_NODELAY from them, 6.0): use naglefix fix or the library instead" },
	{ E2BIG, NF_EXIT_USAGE,
	  "the policy is too large for one program (2,700 rules of the longest kind fit, 4,600 of "
	  "IPv4, and 60 KiB of text): split it between the cgroups it is for" },
	{ ENOMEM, NF_ATTACH_EXIT_KERNEL,
	  "out of memory (kernels before 5.11 count it against RLIMIT_MEMLOCK: ulimit -l unlimited)" },
	{ EBADF, NF_ATTACH_EXIT_TARGET, "not a cgroup v2 directory" },
	{ ECONNREFUSED, NF_ATTACH_EXIT_KERNEL,
	  "the check connects over loopback, which is down in this network namespace: bring it up "
	  "(ip link set lo up) or run attach in the host's" },
};

int nf_attach_say(const char *cmd, const char *step, int rc, const char *target)
{
	const struct meaning *m = NULL;
	char q[NF_CLI_QUOTE_MAX];

	for (size_t i = 0; i < sizeof(meanings) / sizeof(meanings[0]) && !m; i++)
		if (meanings[i].err == -rc)
			m = &meanings[i];
	nf_cli_warnx_as(cmd, 0, "%s%s%s: %s%s%s", target ? nf_cli_quote(target, q) : "",
			target ? ": " : "", step, strerror(-rc), m ? ": " : "", m ? m->say : "");
	return m ? m->status : NF_ATTACH_EXIT_PARTIAL;
}

int nf_attach_say_blocked(const char *cmd, const char *target, const char *where,
			  enum nf_bpf_kind kind, const struct nf_bpf_attached *prog, uint32_t mode,
			  const char *why)
{
	char q[NF_CLI_QUOTE_MAX], qn[NF_CLI_QUOTE_MAX];

	nf_cli_warnx_as(cmd, 0,
		"%s: %s program %u '%s' on %s is attached in %s mode: %s; nothing "
		"changed (bpftool cgroup tree shows it; its own tool can take it off or attach it "
		"with BPF_F_ALLOW_MULTI)",
		nf_cli_quote(target, q), nf_bpf_kind_name(kind), (unsigned)prog->id,
		nf_cli_quote(prog->name, qn), where, nf_bpf_mode_name(mode), why);
	return NF_ATTACH_EXIT_BLOCKED;
}
