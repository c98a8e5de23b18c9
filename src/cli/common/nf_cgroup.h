/*
 * nf_cgroup.h - the cgroups of this host as the command meets them
 * (cgroup.c: where the cgroup2 hierarchy is, a process's cgroup, the
 * directory an argument or a systemd unit names, the processes in one;
 * cgroup_name.c: the name people give a cgroup), for fix, attach and
 * watch.
 *
 * Paths relative to the hierarchy ("rel") start with '/', as
 * /proc/PID/cgroup prints them ("/system.slice/nginx.service"); absolute
 * directories start with the mount point ("/sys/fs/cgroup/system.slice/...").
 * Functions that may fail return 0 or a negative errno.
 */
#ifndef NF_CGROUP_H
#define NF_CGROUP_H

#include <stddef.h>
#include <sys/types.h>

/* Room for a cgroup's path or directory. */
#define NF_CGROUP_PATH_MAX 4096
/* Room for a cgroup's name as nf_cgroup_name gives it (one cut to fit
 * ends in "..."). */
#define NF_CGROUP_NAME_MAX 128

/* The cgroup2 hierarchy's mount point (e.g. "/sys/fs/cgroup" or
 * "/sys/fs/cgroup/unified"), from /proc/self/mountinfo (the first cgroup2
 * mount of the whole hierarchy). 0, or -ENOENT when no cgroup2 is mounted
 * (a host of cgroup v1 only), -ENAMETOOLONG, or -errno. */
int nf_cgroup_root(char *out, size_t len);

/* PID's cgroup relative to the hierarchy ("/system.slice/nginx.service"),
 * from /proc/PID/cgroup's "0::" line; where that line is missing or "/"
 * and a "name=systemd" line (systemd on cgroup v1 or hybrid) says more,
 * that line's path (for naming only: it is no cgroup2 directory). 0,
 * -ENOENT (no such process, or no line to read), or -errno. */
int nf_cgroup_of_pid(pid_t pid, char *out, size_t len);

/* The absolute directory of the cgroup a --cgroup argument names: an
 * absolute path inside the cgroup2 mount, a path relative to its root
 * ("system.slice/x.service"), or one as /proc/PID/cgroup prints it
 * ("/system.slice/x.service", when no such path is outside the mount).
 * Symbolic links resolved; the result stays inside the mount. 0, -ENOENT
 * (no such cgroup, or no cgroup2), -ENOTDIR (not a cgroup: no
 * cgroup.procs), -EXDEV (outside the mount), or -errno. */
int nf_cgroup_resolve(const char *arg, char *out, size_t len);

/* Why a --cgroup argument names no cgroup (rc, nf_cgroup_resolve's
 * -ENOENT, -ENOTDIR or -EXDEV; else strerror), into out, as fix and
 * attach both say it: "no such cgroup under ROOT", "not a cgroup of the
 * cgroup2 hierarchy (ROOT): give a path inside it, or one relative to it". */
void nf_cgroup_unresolved(int rc, char *out, size_t len);

/* The absolute cgroup2 directory of the running systemd unit UNIT
 * (".service" appended when UNIT has no unit suffix), found under the
 * root: the shallowest directory of that name (slices nest; a user's
 * manager nests units of the same name deeper), searched to a bounded
 * depth, no symbolic link followed, one holding a process (cgroup.events
 * "populated 1"). 0, -ENOENT (no such unit running, or no cgroup2),
 * -EINVAL (an empty name or one with '/'), or -errno. */
int nf_cgroup_of_unit(const char *unit, char *out, size_t len);

/* The name people give the cgroup at rel (relative to the hierarchy): a
 * container shortened as its tool prints it ("docker-<12 hex>",
 * "libpod-<12>", "cri-containerd-<13>", "crio-<13>"; from
 * docker-<64>.scope, /docker/<64>, libpod-<64>.scope, ...), a Kubernetes
 * pod ("pod <uid>", then "/" and the container when there is one, from the
 * kubepods paths of the systemd and cgroupfs drivers, the uid's '_' made
 * '-' again), a systemd unit ("nginx.service", "session-3.scope": the
 * innermost), or rel itself where it is none of these. Never fails (an
 * empty rel: "/"); cut to fit len. */
void nf_cgroup_name(const char *rel, char *out, size_t len);

/* The unit's whole name into out: unit, with ".service" appended when it
 * has no unit type's suffix (as nf_cgroup_of_unit looks for it). 0, or
 * -ENAMETOOLONG. */
int nf_cgroup_unit_name(const char *unit, char *out, size_t len);

/* The name (nf_cgroup_name) of PID's cgroup (nf_cgroup_of_pid) into out:
 * 0, or -errno with out "" (the process is gone, or no /proc). */
int nf_cgroup_name_of(pid_t pid, char *out, size_t len);

/* Every pid in the cgroup directory dir and its descendants (their
 * cgroup.procs; no symbolic link followed), malloc'ed into *pids (NULL
 * when *n is 0; the caller frees it). 0 or -errno. */
int nf_cgroup_pids(const char *dir, pid_t **pids, size_t *n);

#endif
