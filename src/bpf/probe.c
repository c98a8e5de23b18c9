/*
 * probe.c - whether this kernel lets a sock_ops program set TCP_NODELAY,
 * found out at attach rather than at a service's first connection: Linux
 * before 6.0 loads and attaches naglefix's program without a word (the
 * option is a number the verifier does not judge), and only
 * bpf_setsockopt's answer, at each connection, says EINVAL.
 *
 * So the probe makes one connection under the program: a cgroup of its
 * own under the cgroup v2 root (the root takes a child whatever its
 * controllers), the program for "default nodelay" on it, a child process
 * moved into it that connects over loopback to a listener of this process
 * and reads the option; the program's counters say what bpf_setsockopt
 * answered. Everything is taken down after, whatever happened.
 */
#include "nf_bpf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LOG_SIZE (64 * 1024)

struct probe {
	char dir[4096];
	int cg, map, prog, lsn, attached;
	struct sockaddr_in to;
	char *why;
	size_t len;
};

/* Names the step that failed with rc in p->why; returns rc. */
static int say(struct probe *p, int rc, const char *step)
{
	snprintf(p->why, p->len, "%s", step);
	return rc;
}

/* The probe's cgroup, made afresh (one of an earlier run of this pid removed). */
static int make_cgroup(struct probe *p, const char *root)
{
	int rc;

	snprintf(p->dir, sizeof(p->dir), "%s/naglefix-probe.%d", root, (int)getpid());
	rmdir(p->dir);
	if (mkdir(p->dir, 0755) < 0)
		return say(p, -errno, p->dir);
	p->cg = open(p->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->cg >= 0)
		return 0;
	rc = -errno;
	rmdir(p->dir);
	return say(p, rc, p->dir);
}

/* The program for "default nodelay" with optname, on the probe's cgroup. */
static int put_program(struct probe *p, int optname)
{
	struct nf_policy pol = { .dflt = nf_policy_opts_default(NF_ACT_NODELAY) };
	struct bpf_insn *insn = NULL;
	char *log = malloc(LOG_SIZE);
	size_t n;
	int rc;

	p->map = nf_bpf_state_create("probe", "default nodelay\n", 16);
	if (p->map < 0 || !log) {
		free(log);
		return say(p, p->map < 0 ? p->map : -ENOMEM, "its state map");
	}
	rc = nf_bpf_prog_build(&pol, p->map, -1, optname, &insn, &n);
	if (rc == 0 && (p->prog = nf_bpf_prog_load(NF_BPF_SOCK_OPS, insn, n, log, LOG_SIZE)) < 0)
		rc = p->prog;
	free(insn);
	if (rc < 0)
		snprintf(p->why, p->len, "loading its program%s%s%s", log[0] ? " (the verifier: " : "",
			 nf_bpf_log_tail(log), log[0] ? ")" : "");
	free(log);
	if (rc < 0)
		return rc;
	rc = nf_bpf_prog_attach(NF_BPF_SOCK_OPS, p->cg, p->prog, -1);
	p->attached = rc == 0;
	return rc < 0 ? say(p, rc, "attaching its program") : 0;
}

/* A listener on 127.0.0.1, any port, into p->lsn and p->to. */
static int listen_loopback(struct probe *p)
{
	socklen_t len = sizeof(p->to);

	p->to = (struct sockaddr_in){ .sin_family = AF_INET,
				      .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	p->lsn = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (p->lsn < 0 || bind(p->lsn, (struct sockaddr *)&p->to, sizeof(p->to)) < 0 ||
	    listen(p->lsn, 4) < 0 || getsockname(p->lsn, (struct sockaddr *)&p->to, &len) < 0)
		return say(p, -errno, "a listener on 127.0.0.1");
	return 0;
}

/* The child: into the cgroup, connected, the option read: its exit
 * status 0 (set), 1 (not set), 2 (not moved), 3 (not connected). */
static void child(const struct probe *p, int optname)
{
	char procs[4200];
	int fd, v = 0;
	socklen_t len = sizeof(v);

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", p->dir);
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0\n", 2) != 2)
		_exit(2);
	close(fd);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (const struct sockaddr *)&p->to, sizeof(p->to)) < 0)
		_exit(3);
	if (getsockopt(fd, IPPROTO_TCP, optname, &v, &len) < 0)
		v = 0;
	_exit(v == 1 ? 0 : 1);
}

/* One connection from the cgroup; the verdict from the counters. */
static int connect_once(struct probe *p, int optname, int *err)
{
	struct nf_bpf_state *st;
	pid_t pid = fork();
	int status = 0, rc;

	if (pid < 0)
		return say(p, -errno, "fork");
	if (pid == 0)
		child(p, optname);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) >= 2)
		return say(p, WIFEXITED(status) && WEXITSTATUS(status) == 2 ? -EACCES : -ECONNREFUSED,
			   WIFEXITED(status) && WEXITSTATUS(status) == 2 ? "moving a process into its cgroup"
									: "a connection over loopback");
	st = malloc(sizeof(*st));
	if (!st || (rc = nf_bpf_map_read(p->map, st)) < 0) {
		free(st);
		return say(p, st ? rc : -ENOMEM, "reading its counters");
	}
	*err = st->counts.failed ? st->counts.last_err : 0;
	rc = st->counts.set > 0 && WEXITSTATUS(status) == 0;
	free(st);
	return rc;
}

/* Removes the cgroup: its one process is reaped, but the kernel may take
 * a moment to see it empty. */
static void remove_cgroup(const char *dir)
{
	struct timespec ms = { 0, 1000000 };

	for (int i = 0; i < 200 && rmdir(dir) < 0 && errno == EBUSY; i++)
		nanosleep(&ms, NULL);
}

static void take_down(struct probe *p)
{
	if (p->attached)
		nf_bpf_prog_detach(NF_BPF_SOCK_OPS, p->cg, p->prog);
	if (p->lsn >= 0)
		close(p->lsn);
	if (p->prog >= 0)
		close(p->prog);
	if (p->map >= 0)
		close(p->map);
	if (p->cg >= 0) {
		close(p->cg);
		remove_cgroup(p->dir);
	}
}

int nf_bpf_probe(const char *root, int optname, int *err, char *why, size_t len)
{
	struct probe p = { .cg = -1, .map = -1, .prog = -1, .lsn = -1, .why = why, .len = len };
	int rc;

	*err = 0;
	why[0] = '\0';
	rc = make_cgroup(&p, root);
	if (rc == 0)
		rc = put_program(&p, optname);
	if (rc == 0)
		rc = listen_loopback(&p);
	if (rc == 0)
		rc = connect_once(&p, optname, err);
	take_down(&p);
	return rc;
}
