/*
 * check_cgroup.c - the command's cgroups (src/cli/common/cgroup.c,
 * cgroup_name.c): the names people give cgroups, over a table of paths
 * as systemd, Docker, Podman, containerd, CRI-O and Kubernetes (both
 * cgroup drivers, each QoS class) make them; then, on cgroups this test
 * makes under the cgroup2 mount (a slice, units in it and nested deeper, a
 * Docker-shaped scope, a delegated subgroup, processes moved in by writing
 * cgroup.procs, all removed at the end), the directory a --cgroup argument
 * or a unit names, a process's cgroup and the processes of a subtree; the
 * hierarchy found where the VM's systemd mounts it (cgroup2 alone at
 * /sys/fs/cgroup) and a host with no cgroup2, each in a mount namespace of
 * the test's own. The live tests need root and a writable cgroup2 mount:
 * without them they are SKIP lines.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/common/nf_cgroup.h"
#include "../unit/unit.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

#define ID "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899"
#define UID "0f3a5e2c-1b2d-4c6e-8f90-a1b2c3d4e5f6"
#define UID_ "0f3a5e2c_1b2d_4c6e_8f90_a1b2c3d4e5f6"

/* A path and the name people give it. */
static const struct {
	const char *rel, *name;
} names[] = {
	/* systemd: services, sessions, a user's manager, PID 1 */
	{ "/system.slice/nginx.service", "nginx.service" },
	{ "/system.slice/system-getty.slice/getty@tty1.service", "getty@tty1.service" },
	{ "/system.slice/nginx.service/worker", "nginx.service" },
	{ "/user.slice/user-1000.slice/session-3.scope", "session-3.scope" },
	{ "/user.slice/user-1000.slice/user@1000.service/init.scope", "init.scope" },
	{ "/user.slice/user-1000.slice/user@1000.service/app.slice/"
	  "app-org.gnome.Terminal.slice/vte-spawn-5a3e.scope",
	  "vte-spawn-5a3e.scope" },
	{ "/init.scope", "init.scope" },
	{ "/system.slice/docker.socket", "docker.socket" },
	/* Docker: systemd and cgroupfs drivers, rootless, systemd inside */
	{ "/system.slice/docker-" ID ".scope", "docker-3f4e5d6c7b8a" },
	{ "/docker/" ID, "docker-3f4e5d6c7b8a" },
	{ "/docker/" ID "/nested", "docker-3f4e5d6c7b8a" },
	{ "/user.slice/user-1000.slice/user@1000.service/user.slice/docker-" ID ".scope",
	  "docker-3f4e5d6c7b8a" },
	{ "/system.slice/docker-" ID ".scope/init.scope", "docker-3f4e5d6c7b8a" },
	/* Podman: rootful, its container subgroup, conmon, a pod, cgroupfs, rootless */
	{ "/machine.slice/libpod-" ID ".scope", "libpod-3f4e5d6c7b8a" },
	{ "/machine.slice/libpod-" ID ".scope/container", "libpod-3f4e5d6c7b8a" },
	{ "/machine.slice/libpod-conmon-" ID ".scope", "libpod-conmon-3f4e5d6c7b8a" },
	{ "/machine.slice/machine-libpod_pod_0123456789abcdef0123456789abcdef.slice/libpod-" ID
	  ".scope",
	  "libpod-3f4e5d6c7b8a" },
	{ "/libpod_parent/libpod-" ID, "libpod-3f4e5d6c7b8a" },
	{ "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope",
	  "libpod-3f4e5d6c7b8a" },
	/* containerd and CRI-O outside a pod */
	{ "/system.slice/cri-containerd-" ID ".scope", "cri-containerd-3f4e5d6c7b8a9" },
	{ "/system.slice/crio-" ID ".scope", "crio-3f4e5d6c7b8a9" },
	{ "/system.slice/crio-conmon-" ID ".scope", "crio-conmon-3f4e5d6c7b8a9" },
	/* Kubernetes, systemd driver: burstable, besteffort, guaranteed, the pod alone */
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	  ".slice/cri-containerd-" ID ".scope",
	  "pod " UID "/cri-containerd-3f4e5d6c7b8a9" },
	{ "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
	  ".slice/crio-" ID ".scope",
	  "pod " UID "/crio-3f4e5d6c7b8a9" },
	{ "/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID ".scope",
	  "pod " UID "/cri-containerd-3f4e5d6c7b8a9" },
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice",
	  "pod " UID },
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	  ".slice/docker-" ID ".scope",
	  "pod " UID "/docker-3f4e5d6c7b8a" },
	/* kind's nodes: the kubelet's tree one slice down */
	{ "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
	  "kubelet-kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" ID ".scope",
	  "pod " UID "/cri-containerd-3f4e5d6c7b8a9" },
	/* Kubernetes, cgroupfs driver: each class */
	{ "/kubepods/burstable/pod" UID "/" ID, "pod " UID "/3f4e5d6c7b8a9" },
	{ "/kubepods/besteffort/pod" UID "/" ID, "pod " UID "/3f4e5d6c7b8a9" },
	{ "/kubepods/pod" UID "/" ID, "pod " UID "/3f4e5d6c7b8a9" },
	{ "/kubepods/burstable/pod" UID, "pod " UID },
	/* none of these: the path itself */
	{ "/", "/" },
	{ "", "/" },
	{ "/mygroup/sub", "/mygroup/sub" },
	{ "mygroup", "/mygroup" },
	{ "/system.slice", "/system.slice" },
	{ "/lxc.payload.c1", "/lxc.payload.c1" },
	{ "/default/" ID, "/default/" ID },
	{ "/kubepods.slice/kubepods-burstable.slice", "/kubepods.slice/kubepods-burstable.slice" },
	{ "/kubepods/burstable/podnotauid", "/kubepods/burstable/podnotauid" },
	/* a short id is no container's: a unit of that name */
	{ "/system.slice/docker-3f4e5d.scope", "docker-3f4e5d.scope" },
	{ "/docker/3f4e5d", "/docker/3f4e5d" },
};

START_TEST(test_cgroup_name_table)
{
	char out[NF_CGROUP_NAME_MAX];

	nf_cgroup_name(names[_i].rel, out, sizeof(out));
	ck_assert_msg(strcmp(out, names[_i].name) == 0, "%s: \"%s\", not \"%s\"", names[_i].rel,
		      out, names[_i].name);
}
END_TEST

START_TEST(test_cgroup_name_cut_to_fit)
{
	char out[8];

	memset(out, 'x', sizeof(out));
	nf_cgroup_name("/system.slice/nginx.service", out, sizeof(out));
	ck_assert_str_eq(out, "ngin...");
	nf_cgroup_name(NULL, out, sizeof(out));
	ck_assert_str_eq(out, "/");
}
END_TEST

/* ---- live: cgroups made here ---------------------------------------- */

/* The tree the live tests share, made before they run, removed after. */
static struct {
	char root[512];       /* the cgroup2 mount */
	char slice[1024];     /* root/nfcheck-PID.slice */
	char unit[64];	      /* "nfcheck-PID-a" (a.service, also deeper) */
	char deep_unit[64];   /* "nfcheck-PID-b" (only deeper) */
	char idle_unit[64];   /* "nfcheck-PID-idle" (no process) */
	pid_t a, c, d, e, f;  /* in a.service, its sub, docker-ID.scope, b, deeper a */
	char v1[512];         /* systemd's v1 hierarchy (name=systemd), or "" */
	char v1_unit[PATH_MAX]; /* v1/nfcheck-PID-v1.service */
	pid_t g;	      /* in v1_unit, and in the cgroup2 root */
} fx;

/* The directories of the tree, parents first (fx.slice prefixed). */
static void fx_dirs(char dirs[8][PATH_MAX], int *n)
{
	const char *fmt[] = { "%s", "%s/%s.service", "%s/%s.service/sub", "%s/docker-" ID ".scope",
			      "%s/deep.slice", "%s/deep.slice/%s.service",
			      "%s/deep.slice/%s.service", "%s/%s.service" };
	const char *arg[] = { "", fx.unit, fx.unit, "", "", fx.deep_unit, fx.unit, fx.idle_unit };

	for (int i = 0; i < 8; i++)
		snprintf(dirs[i], PATH_MAX, fmt[i], fx.slice, arg[i]);
	*n = 8;
}

static int move_to(const char *dir, pid_t pid);

/* A child that waits to be killed, moved into the cgroup dir. */
static pid_t child_in(const char *dir)
{
	pid_t pid = fork();

	if (pid == 0) {
		for (;;)
			pause();
	}
	move_to(dir, pid);
	return pid;
}

/* Moves pid into the cgroup dir: 0, or -1 (said on stderr). */
static int move_to(const char *dir, pid_t pid)
{
	char procs[PATH_MAX + 16];
	FILE *f;

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	f = fopen(procs, "we");
	if (f && fprintf(f, "%d\n", (int)pid) > 0 && fclose(f) == 0)
		return 0;
	fprintf(stderr, "check_cgroup: moving %d into %s: %s\n", (int)pid, dir, strerror(errno));
	if (f)
		fclose(f);
	return -1;
}

/* A process the way systemd on cgroup v1 or hybrid leaves one: in
 * fx.v1_unit of the name=systemd hierarchy, at the cgroup2 root. */
static void fx_setup_v1(void)
{
	snprintf(fx.v1_unit, sizeof(fx.v1_unit), "%s/nfcheck-%d-v1.service", fx.v1, (int)getpid());
	if (mkdir(fx.v1_unit, 0755) != 0)
		fprintf(stderr, "check_cgroup: mkdir %s: %s\n", fx.v1_unit, strerror(errno));
	fx.g = child_in(fx.v1_unit);
	move_to(fx.root, fx.g);
}

static void fx_setup(void)
{
	char dirs[8][PATH_MAX];
	int n;

	snprintf(fx.unit, sizeof(fx.unit), "nfcheck-%d-a", (int)getpid());
	snprintf(fx.deep_unit, sizeof(fx.deep_unit), "nfcheck-%d-b", (int)getpid());
	snprintf(fx.idle_unit, sizeof(fx.idle_unit), "nfcheck-%d-idle", (int)getpid());
	snprintf(fx.slice, sizeof(fx.slice), "%s/nfcheck-%d.slice", fx.root, (int)getpid());
	fx_dirs(dirs, &n);
	for (int i = 0; i < n; i++)
		if (mkdir(dirs[i], 0755) != 0 && errno != EEXIST)
			fprintf(stderr, "check_cgroup: mkdir %s: %s\n", dirs[i], strerror(errno));
	fx.a = child_in(dirs[1]);
	fx.c = child_in(dirs[2]);
	fx.d = child_in(dirs[3]);
	fx.e = child_in(dirs[5]);
	fx.f = child_in(dirs[6]);
	if (fx.v1[0])
		fx_setup_v1();
}

static void fx_teardown(void)
{
	pid_t kids[] = { fx.a, fx.c, fx.d, fx.e, fx.f, fx.g };
	char dirs[8][PATH_MAX];
	int n;

	for (size_t i = 0; i < sizeof(kids) / sizeof(kids[0]); i++)
		if (kids[i] > 0) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], NULL, 0);
		}
	fx_dirs(dirs, &n);
	while (n-- > 0)
		if (rmdir(dirs[n]) != 0 && errno != ENOENT)
			fprintf(stderr, "check_cgroup: rmdir %s: %s\n", dirs[n], strerror(errno));
	if (fx.v1_unit[0] && rmdir(fx.v1_unit) != 0 && errno != ENOENT)
		fprintf(stderr, "check_cgroup: rmdir %s: %s\n", fx.v1_unit, strerror(errno));
}

/* fx.slice's directory rel (printf-style) made absolute, into out. */
static const char *in_slice(char *out, const char *rel)
{
	snprintf(out, PATH_MAX, "%s/%s", fx.slice, rel);
	return out;
}

START_TEST(test_cgroup_root_is_cgroup2)
{
	char root[PATH_MAX];
	struct statfs sf;

	ck_assert_int_eq(nf_cgroup_root(root, sizeof(root)), 0);
	ck_assert_str_eq(root, fx.root);
	ck_assert_int_eq(statfs(root, &sf), 0);
	ck_assert_msg(sf.f_type == CGROUP2_SUPER_MAGIC, "%s is not cgroup2", root);
	ck_assert_int_eq(nf_cgroup_root(root, 5), -ENAMETOOLONG);
}
END_TEST

START_TEST(test_cgroup_resolve_forms)
{
	char want[PATH_MAX], got[PATH_MAX], arg[PATH_MAX], unit[128];
	const char *rel = fx.slice + strlen(fx.root) + 1; /* "nfcheck-PID.slice" */

	snprintf(unit, sizeof(unit), "%s.service", fx.unit);
	in_slice(want, unit);
	snprintf(arg, sizeof(arg), "%s/%s", rel, unit);
	ck_assert_int_eq(nf_cgroup_resolve(arg, got, sizeof(got)), 0);
	ck_assert_str_eq(got, want);
	snprintf(arg, sizeof(arg), "/%s/%s", rel, unit);
	ck_assert_int_eq(nf_cgroup_resolve(arg, got, sizeof(got)), 0);
	ck_assert_str_eq(got, want);
	ck_assert_int_eq(nf_cgroup_resolve(want, got, sizeof(got)), 0);
	ck_assert_str_eq(got, want);
	snprintf(arg, sizeof(arg), "%s/deep.slice/../%s/", rel, unit);
	ck_assert_int_eq(nf_cgroup_resolve(arg, got, sizeof(got)), 0);
	ck_assert_str_eq(got, want);
	ck_assert_int_eq(nf_cgroup_resolve(arg, got, 10), -ENAMETOOLONG);
}
END_TEST

START_TEST(test_cgroup_resolve_refusals)
{
	char got[PATH_MAX], arg[PATH_MAX];
	const char *rel = fx.slice + strlen(fx.root) + 1;

	snprintf(arg, sizeof(arg), "%s/none.service", rel);
	ck_assert_int_eq(nf_cgroup_resolve(arg, got, sizeof(got)), -ENOENT);
	snprintf(arg, sizeof(arg), "%s/cgroup.procs", rel);
	ck_assert_int_eq(nf_cgroup_resolve(arg, got, sizeof(got)), -ENOTDIR);
	ck_assert_int_eq(nf_cgroup_resolve("/tmp", got, sizeof(got)), -EXDEV);
	ck_assert_int_eq(nf_cgroup_resolve("../..", got, sizeof(got)), -EXDEV);
	ck_assert_int_eq(nf_cgroup_resolve("", got, sizeof(got)), -ENOENT);
}
END_TEST

START_TEST(test_cgroup_of_unit_shallowest_running)
{
	char want[PATH_MAX], got[PATH_MAX], unit[128];

	snprintf(unit, sizeof(unit), "%s.service", fx.unit);
	in_slice(want, unit);
	ck_assert_int_eq(nf_cgroup_of_unit(fx.unit, got, sizeof(got)), 0);
	ck_assert_str_eq(got, want);
	ck_assert_int_eq(nf_cgroup_of_unit(unit, got, sizeof(got)), 0);
	ck_assert_str_eq(got, want);
	snprintf(unit, sizeof(unit), "deep.slice/%s.service", fx.deep_unit);
	in_slice(want, unit);
	ck_assert_int_eq(nf_cgroup_of_unit(fx.deep_unit, got, sizeof(got)), 0);
	ck_assert_str_eq(got, want);
}
END_TEST

START_TEST(test_cgroup_of_unit_refusals)
{
	char got[PATH_MAX], unit[128];

	ck_assert_int_eq(nf_cgroup_of_unit(fx.idle_unit, got, sizeof(got)), -ENOENT);
	snprintf(unit, sizeof(unit), "nfcheck-%d-none", (int)getpid());
	ck_assert_int_eq(nf_cgroup_of_unit(unit, got, sizeof(got)), -ENOENT);
	snprintf(unit, sizeof(unit), "%s.scope", fx.unit);
	ck_assert_int_eq(nf_cgroup_of_unit(unit, got, sizeof(got)), -ENOENT);
	ck_assert_int_eq(nf_cgroup_of_unit("system.slice/x.service", got, sizeof(got)), -EINVAL);
	ck_assert_int_eq(nf_cgroup_of_unit("", got, sizeof(got)), -EINVAL);
}
END_TEST

/* Asserts that pid's cgroup is fx.slice/rel and that it is named name. */
static void assert_of_pid(pid_t pid, const char *rel, const char *name)
{
	char want[PATH_MAX], got[PATH_MAX], nm[NF_CGROUP_NAME_MAX];

	snprintf(want, sizeof(want), "%s/%s", fx.slice + strlen(fx.root), rel);
	ck_assert_int_eq(nf_cgroup_of_pid(pid, got, sizeof(got)), 0);
	ck_assert_str_eq(got, want);
	nf_cgroup_name(got, nm, sizeof(nm));
	ck_assert_str_eq(nm, name);
}

START_TEST(test_cgroup_of_pid_and_its_name)
{
	char rel[128], name[128];

	snprintf(rel, sizeof(rel), "%s.service", fx.unit);
	snprintf(name, sizeof(name), "%s.service", fx.unit);
	assert_of_pid(fx.a, rel, name);
	snprintf(rel, sizeof(rel), "%s.service/sub", fx.unit);
	assert_of_pid(fx.c, rel, name);
	assert_of_pid(fx.d, "docker-" ID ".scope", "docker-3f4e5d6c7b8a");
	ck_assert_int_eq(nf_cgroup_of_pid(fx.a, rel, 4), -ENAMETOOLONG);
	ck_assert_int_eq(nf_cgroup_of_pid(INT_MAX, rel, sizeof(rel)), -ENOENT);
}
END_TEST

START_TEST(test_cgroup_pids_of_subtrees)
{
	char dir[PATH_MAX], unit[128];
	pid_t want[] = { fx.a, fx.c, fx.d, fx.e, fx.f }, *pids;
	size_t n;

	ck_assert_int_eq(nf_cgroup_pids(fx.slice, &pids, &n), 0);
	ck_assert_uint_eq(n, 5);
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;

		while (j < 5 && want[j] != pids[i])
			j++;
		ck_assert_msg(j < 5, "pid %d is not the test's", (int)pids[i]);
		ck_assert(i == 0 || pids[i - 1] < pids[i]);
	}
	free(pids);
	snprintf(unit, sizeof(unit), "%s.service", fx.unit);
	ck_assert_int_eq(nf_cgroup_pids(in_slice(dir, unit), &pids, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert(pids[0] == (fx.a < fx.c ? fx.a : fx.c) && pids[1] == (fx.a < fx.c ? fx.c : fx.a));
	free(pids);
	snprintf(unit, sizeof(unit), "%s.service", fx.idle_unit);
	ck_assert_int_eq(nf_cgroup_pids(in_slice(dir, unit), &pids, &n), 0);
	ck_assert(n == 0 && pids == NULL);
	ck_assert_int_eq(nf_cgroup_pids(in_slice(dir, "none"), &pids, &n), -ENOENT);
}
END_TEST

START_TEST(test_cgroup_of_pid_from_v1_systemd_line)
{
	char got[PATH_MAX], nm[NF_CGROUP_NAME_MAX];
	const char *want = strrchr(fx.v1_unit, '/'); /* "/nfcheck-PID-v1.service" */

	ck_assert_int_eq(nf_cgroup_of_pid(fx.g, got, sizeof(got)), 0);
	ck_assert_str_eq(got, want);
	nf_cgroup_name(got, nm, sizeof(nm));
	ck_assert_str_eq(nm, want + 1);
}
END_TEST

/* In a mount namespace of this test process alone, /sys/fs/cgroup
 * emptied of what is mounted there (with cgroup2 alone mounted on it if
 * cgroup2 is set). */
static void private_sys_fs_cgroup(int cgroup2)
{
	ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	while (umount2("/sys/fs/cgroup", MNT_DETACH) == 0)
		;
	if (cgroup2)
		ck_assert_int_eq(mount("cgroup2", "/sys/fs/cgroup", "cgroup2", 0, NULL), 0);
	else
		while (umount2(fx.root, MNT_DETACH) == 0)
			;
}

START_TEST(test_cgroup_only_cgroup2_at_sys_fs_cgroup)
{
	char got[PATH_MAX], want[PATH_MAX], unit[128];

	private_sys_fs_cgroup(1);
	ck_assert_int_eq(nf_cgroup_root(got, sizeof(got)), 0);
	ck_assert_str_eq(got, "/sys/fs/cgroup");
	snprintf(unit, sizeof(unit), "%s.service", fx.unit);
	snprintf(want, sizeof(want), "/sys/fs/cgroup%s/%s", fx.slice + strlen(fx.root), unit);
	ck_assert_int_eq(nf_cgroup_of_unit(fx.unit, got, sizeof(got)), 0);
	ck_assert_str_eq(got, want);
	ck_assert_int_eq(nf_cgroup_resolve(want + strlen("/sys/fs/cgroup"), got, sizeof(got)), 0);
	ck_assert_str_eq(got, want);
}
END_TEST

START_TEST(test_cgroup_none_mounted)
{
	char got[PATH_MAX];

	private_sys_fs_cgroup(0);
	ck_assert_int_eq(nf_cgroup_root(got, sizeof(got)), -ENOENT);
	ck_assert_int_eq(nf_cgroup_resolve("system.slice", got, sizeof(got)), -ENOENT);
	ck_assert_int_eq(nf_cgroup_of_unit(fx.unit, got, sizeof(got)), -ENOENT);
	ck_assert_int_eq(nf_cgroup_of_pid(fx.a, got, sizeof(got)), 0); /* /proc still says */
}
END_TEST

/* The name=systemd v1 hierarchy's mount point into fx.v1; NULL, or why
 * there is none. */
static const char *v1_unavailable(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], mnt[512];

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, " - cgroup ") && strstr(line, "name=systemd") &&
		    sscanf(line, "%*s %*s %*s %*s %511s", mnt) == 1 && !strchr(mnt, '\\'))
			snprintf(fx.v1, sizeof(fx.v1), "%s", mnt);
	if (f)
		fclose(f);
	return fx.v1[0] ? NULL : "no name=systemd hierarchy (systemd on cgroup v1) is mounted";
}

/* Why a mount namespace of the test's own, with cgroup2 mounted in it,
 * cannot be made here (a container that forbids it), or NULL. */
static const char *mountns_unavailable(void)
{
	pid_t pid = fork();
	int status = 0;

	if (pid == 0)
		_exit(unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
		      mount("cgroup2", "/mnt", "cgroup2", 0, NULL) == 0 ? 0 : 1);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return "no mount namespace with cgroup2 mounted in it can be made here";
	return NULL;
}

/* Why the live tests cannot run here, or NULL; fx.root set. */
static const char *live_unavailable(void)
{
	static char why[1024];
	char probe[PATH_MAX + 32];

	if (geteuid() != 0)
		return "needs root (cgroups made under the cgroup2 mount)";
	if (nf_cgroup_root(fx.root, sizeof(fx.root)) != 0)
		return "no cgroup2 hierarchy is mounted";
	snprintf(probe, sizeof(probe), "%s/nfcheck-%d.probe", fx.root, (int)getpid());
	if (mkdir(probe, 0755) != 0) {
		snprintf(why, sizeof(why), "cannot make a cgroup under %s: %s", fx.root,
			 strerror(errno));
		return why;
	}
	rmdir(probe);
	return NULL;
}

static Suite *cgroup_suite(void)
{
	Suite *s = suite_create("cgroup");
	TCase *pure = tcase_create("name"), *live = tcase_create("live");
	const char *why = live_unavailable(), *why_v1 = why ? why : v1_unavailable();
	const char *why_ns = why ? why : mountns_unavailable();

	unit_add_loop(pure, test_cgroup_name_table, 0, sizeof(names) / sizeof(names[0]));
	unit_add(pure, test_cgroup_name_cut_to_fit);
	suite_add_tcase(s, pure);
	if (!why)
		tcase_add_unchecked_fixture(live, fx_setup, fx_teardown);
	tcase_set_timeout(live, 30);
	unit_add_unless(live, test_cgroup_root_is_cgroup2, why);
	unit_add_unless(live, test_cgroup_resolve_forms, why);
	unit_add_unless(live, test_cgroup_resolve_refusals, why);
	unit_add_unless(live, test_cgroup_of_unit_shallowest_running, why);
	unit_add_unless(live, test_cgroup_of_unit_refusals, why);
	unit_add_unless(live, test_cgroup_of_pid_and_its_name, why);
	unit_add_unless(live, test_cgroup_pids_of_subtrees, why);
	unit_add_unless(live, test_cgroup_of_pid_from_v1_systemd_line, why_v1);
	unit_add_unless(live, test_cgroup_only_cgroup2_at_sys_fs_cgroup, why_ns);
	unit_add_unless(live, test_cgroup_none_mounted, why_ns);
	suite_add_tcase(s, live);
	return s;
}

int main(void)
{
	return unit_run(srunner_create(cgroup_suite()), "check_cgroup");
}
