/*
 * unit_probe.c - run by tests/vm/inside.sh as the ExecStart of a copy of
 * conf/naglefix-watch.service (its [Service] section unchanged but its
 * command): tries, from inside the service, what each hardening
 * directive forbids, and what the service's work needs, and prints one
 * line a directive:
 *
 *   PROBE Directive: ok what was seen
 *   PROBE Directive: FAIL what was seen instead
 *
 * inside.sh runs it twice: under the unit, where every line must be ok,
 * and as a plain root service, where every line must be FAIL: so each
 * "ok" is the unit's doing, not this machine's. Directives overlap (an
 * effect that one of them gives may be another's as well: PrivateMounts=
 * is implied by ProtectSystem=, /sys is read-only under
 * ProtectKernelTunables= as under ProtectControlGroups=): a line says the
 * unit holds what its directive promises, not that no other directive
 * does. What the plain run changes (a cgroup, a file, the hostname) it
 * puts back.
 * Arguments: a non-local IPv4 address this machine routes (IPAddressDeny)
 * and a file the test put in the host's /tmp (PrivateTmp); the test also
 * puts an entry in /usr/lib/modules and sets kernel.dmesg_restrict to 0,
 * so that a plain service sees them. Exits 0.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MPOL_DEFAULT 0          /* numaif.h's, without libnuma */
#define SYSLOG_SIZE_BUFFER 10   /* syslog(2): allowed to all where dmesg_restrict is 0 */

static void say(const char *directive, int ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(const char *directive, int ok, const char *fmt, ...)
{
	va_list ap;

	printf("PROBE %s: %s ", directive, ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* The value of "Key:" in /proc/self/status, or "" */
static const char *status(const char *key, char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];

	buf[0] = '\0';
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, strlen(key)) == 0 && line[strlen(key)] == ':') {
			snprintf(buf, len, "%s", line + strlen(key) + 1 + strspn(line + strlen(key) + 1, " \t"));
			buf[strcspn(buf, "\n")] = '\0';
		}
	if (f)
		fclose(f);
	return buf;
}

/* Does /proc/self/mountinfo have a line with both words? */
static int mounted(const char *a, const char *b)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[1024];
	int found = 0;

	while (f && fgets(line, sizeof(line), f))
		found |= strstr(line, a) && strstr(line, b);
	if (f)
		fclose(f);
	return found;
}

/* The mountinfo line of the mount on / that is seen (the last one), into line. */
static void root_mount(char *line, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char l[1024], root[512], point[512];

	snprintf(line, len, "(none)");
	while (f && fgets(l, sizeof(l), f))
		if (sscanf(l, "%*d %*d %*s %511s %511s", root, point) == 2 && strcmp(point, "/") == 0) {
			l[strcspn(l, "\n")] = '\0';
			snprintf(line, len, "%s", l);
		}
	if (f)
		fclose(f);
}

/* Is this process in pid 1's namespace of type ns ("mnt", "net")? */
static int same_ns(const char *ns)
{
	char a[64], b[64], pa[64], pb[64];
	ssize_t n, m;

	snprintf(pa, sizeof(pa), "/proc/self/ns/%s", ns);
	snprintf(pb, sizeof(pb), "/proc/1/ns/%s", ns);
	n = readlink(pa, a, sizeof(a) - 1);
	m = readlink(pb, b, sizeof(b) - 1);
	if (n < 0 || m < 0)
		return -1;
	return n == m && memcmp(a, b, (size_t)n) == 0;
}

/* Entries of dir (-1: cannot be read, errno set). */
static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/* An open for writing of path: its errno, 0 if it opened. */
static int write_errno(const char *path, int flags)
{
	int fd = open(path, O_WRONLY | flags, 0600);

	if (fd < 0)
		return errno;
	close(fd);
	if (flags & O_CREAT)
		unlink(path);
	return 0;
}

static void user_and_caps(void)
{
	/* DAC_READ_SEARCH 2, NET_RAW 13, SYS_PTRACE 19, SYS_ADMIN 21 */
	const char *want = "0000000000282004";
	char bnd[64], amb[64], eff[64], nnp[16];

	status("CapBnd", bnd, sizeof(bnd));
	status("CapAmb", amb, sizeof(amb));
	status("CapEff", eff, sizeof(eff));
	status("NoNewPrivs", nnp, sizeof(nnp));
	say("DynamicUser", getuid() >= 61184 && getuid() <= 65519, "uid %u gid %u", getuid(),
	    getgid());
	say("CapabilityBoundingSet", strcmp(bnd, want) == 0, "CapBnd %s", bnd);
	say("AmbientCapabilities", strcmp(amb, want) == 0 && strcmp(eff, want) == 0,
	    "CapAmb %s, CapEff %s", amb, eff);
	say("NoNewPrivileges", strcmp(nnp, "1") == 0, "NoNewPrivs %s", nnp);
}

static void files(const char *host_tmp_file)
{
	int e1 = write_errno("/usr/nf-probe", O_CREAT), e2 = write_errno("/etc/nf-probe", O_CREAT);
	int e3 = write_errno("/var/nf-probe", O_CREAT);
	int nroot = entries("/root"), nhome = entries("/home");
	int seen, own, slave;
	char line[1024];
	mode_t old, mode;
	struct stat st;

	say("ProtectSystem", e1 == EROFS && e2 == EROFS && e3 == EROFS,
	    "creating in /usr, /etc, /var: %s, %s, %s", strerror(e1), strerror(e2), strerror(e3));
	say("ProtectHome", nroot <= 0 && nhome <= 0, "/root and /home: %d and %d entries", nroot,
	    nhome);
	seen = access(host_tmp_file, F_OK) == 0;
	say("PrivateTmp", !seen && write_errno("/tmp/nf-probe", O_CREAT) == 0,
	    "the host's %s %s, /tmp writable", host_tmp_file, seen ? "seen" : "unseen");
	say("PrivateDevices", stat("/dev/mem", &st) < 0 && stat("/dev/ttyS0", &st) < 0 &&
				      stat("/dev/null", &st) == 0,
	    "/dev/mem and /dev/ttyS0 absent, /dev/null there");
	own = same_ns("mnt") == 0;
	root_mount(line, sizeof(line));
	slave = strstr(line, " master:") != NULL;
	say("PrivateMounts", own && slave, "a mount namespace %s, / a slave of the host's: %s",
	    own ? "of its own" : "the host's", slave ? "yes" : line);
	old = umask(0);
	umask(old);
	say("UMask", old == 077, "umask %03o", (unsigned)old);
	say("RuntimeDirectory", write_errno("/run/naglefix/nf-probe", O_CREAT) == 0 &&
					write_errno("/run/naglefix/metrics/nf-probe", O_CREAT) == 0,
	    "/run/naglefix and /run/naglefix/metrics writable");
	mode = stat("/run/naglefix/metrics", &st) == 0 ? st.st_mode & 0777 : 0;
	say("RuntimeDirectoryMode", mode == 0755, "/run/naglefix/metrics mode %03o", (unsigned)mode);
}

static void kernel(void)
{
	int e2 = mkdir("/sys/fs/cgroup/nf-probe", 0700) < 0 ? errno : 0;
	int nmod = entries("/usr/lib/modules"), ro = mounted(" /sys ro,", "sysfs");
	int e1 = write_errno("/sys/kernel/mm/transparent_hugepage/enabled", 0), rc, e, hide, pid1;
	struct timespec ts;
	char b[256];

	if (e2 == 0)
		rmdir("/sys/fs/cgroup/nf-probe");
	say("ProtectKernelTunables", ro && e1 != 0, "/sys read-only (%s), writing a tunable: %s",
	    ro ? "yes" : "no", e1 ? strerror(e1) : "opened");
	say("ProtectKernelModules", nmod <= 0, "/usr/lib/modules: %d entries", nmod);
	e1 = write_errno("/dev/kmsg", 0);
	rc = (int)syscall(SYS_syslog, SYSLOG_SIZE_BUFFER, NULL, 0);
	e = errno;
	say("ProtectKernelLogs", e1 != 0 && rc < 0 && e == EPERM, "/dev/kmsg: %s; syslog(2): %s",
	    e1 ? strerror(e1) : "opened", rc < 0 ? strerror(e) : "answered");
	say("ProtectControlGroups", e2 == EROFS, "mkdir in /sys/fs/cgroup: %s",
	    e2 ? strerror(e2) : "made (and removed)");
	clock_gettime(CLOCK_REALTIME, &ts);
	rc = clock_settime(CLOCK_REALTIME, &ts);
	e = errno;
	say("ProtectClock", rc < 0 && e == EPERM, "clock_settime: %s", rc < 0 ? strerror(e) : "done");
	gethostname(b, sizeof(b));
	if (sethostname("nf-probe", 8) == 0) {
		sethostname(b, strlen(b));
		say("ProtectHostname", 0, "sethostname: done (and undone)");
	} else {
		say("ProtectHostname", 1, "sethostname: %s", strerror(errno));
	}
	hide = mounted(" /proc ", "hidepid=invisible");
	/* open, not access(2): access checks with the real uid and no
	 * capabilities, so pid 1 would be hidden from it */
	rc = open("/proc/1/cmdline", O_RDONLY | O_CLOEXEC);
	e = errno;
	pid1 = rc >= 0;
	if (rc >= 0)
		close(rc);
	say("ProtectProc", hide && pid1, "/proc %s; pid 1 %s", hide ? "hidepid=invisible" : "not hiding",
	    pid1 ? "seen (ptrace rights)" : strerror(e));
	say("ProcSubset", mounted(" /proc ", "subset=pid") && access("/proc/sys", F_OK) < 0 &&
				  access("/proc/self/fd", F_OK) == 0,
	    "/proc/sys absent, /proc/self there");
}

static void sockets(const char *far)
{
	int u = socket(AF_UNIX, SOCK_STREAM, 0), eu = errno;
	int p = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_ALL));
	int n = socket(AF_NETLINK, SOCK_RAW, 4 /* NETLINK_SOCK_DIAG */);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(9) };
	int near, away, eaway;

	say("RestrictAddressFamilies", u < 0 && eu == EAFNOSUPPORT && p >= 0 && n >= 0 && s >= 0,
	    "AF_UNIX: %s; AF_PACKET, AF_NETLINK, AF_INET made", strerror(eu));
	inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
	near = sendto(s, "x", 1, 0, (struct sockaddr *)&to, sizeof(to)) == 1;
	inet_pton(AF_INET, far, &to.sin_addr);
	away = sendto(s, "x", 1, 0, (struct sockaddr *)&to, sizeof(to)) == 1;
	eaway = errno;
	say("IPAddressDeny", near && !away && eaway == EPERM, "to 127.0.0.1 sent; to %s: %s", far,
	    away ? "sent" : strerror(eaway));
	say("IPAddressAllow", near && !away, "to 127.0.0.1 %s, the rest refused",
	    near ? "sent" : "refused");
	close(p);
	close(n);
	close(s);
}

/* A child that makes one i386 system call (getpid through int 0x80):
 * 1 if it was refused (EPERM, or the child killed), 0 if it ran. */
static int i386_refused(void)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		long r;

		__asm__ volatile("int $0x80" : "=a"(r) : "a"(20) : "memory");
		_exit(r == -EPERM ? 2 : r > 0 ? 0 : 3);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return 0;
	return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Runs fn in a child: its errno if it failed (0 if it worked), -1 if
 * the child could not be made. The child's state (a namespace, a
 * scheduler, a personality) dies with it. */
static int in_child(int (*fn)(void))
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(fn() < 0 ? (errno & 0x7f) : 0);
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static int new_userns(void)
{
	return unshare(CLONE_NEWUSER);
}

static int new_netns(void)
{
	return unshare(CLONE_NEWNET);
}

static int realtime(void)
{
	struct sched_param sp = { .sched_priority = 1 };

	return sched_setscheduler(0, SCHED_FIFO, &sp);
}

static int linux32(void)
{
	return personality(PER_LINUX32) < 0 ? -1 : 0;
}

static void process(void)
{
	int e, n, ecode;
	void *m;

	e = in_child(new_userns);
	n = in_child(new_netns);
	say("RestrictNamespaces", e == EPERM && n == 0,
	    "unshare(CLONE_NEWUSER): %s; of a network namespace (the one kind watch enters): %s",
	    e ? strerror(e) : "done", n ? strerror(n) : "done");
	e = in_child(realtime);
	say("RestrictRealtime", e == EPERM, "SCHED_FIFO: %s", e ? strerror(e) : "done");
	e = in_child(linux32);
	say("LockPersonality", e == EPERM, "personality(PER_LINUX32): %s", e ? strerror(e) : "done");
	e = open("/run/naglefix/nf-suid", O_CREAT | O_WRONLY, 0700);
	n = e >= 0 ? fchmod(e, 04755) : -1;
	ecode = errno;
	say("RestrictSUIDSGID", e >= 0 && n < 0 && ecode == EPERM, "chmod u+s of a file of its own: %s",
	    e < 0 ? "no file" : n < 0 ? strerror(ecode) : "done");
	if (e >= 0)
		close(e);
	unlink("/run/naglefix/nf-suid");
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	e = errno;
	say("MemoryDenyWriteExecute", m == MAP_FAILED && e == EPERM, "mmap W+X: %s",
	    m == MAP_FAILED ? strerror(e) : "mapped");
	if (m != MAP_FAILED)
		munmap(m, 4096);
	say("SystemCallArchitectures", i386_refused(), "an i386 getpid refused");
	e = (int)syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0);
	ecode = errno;
	n = (int)syscall(SYS_pidfd_getfd, 0, 0, 0);
	say("SystemCallFilter", e < 0 && ecode == EPERM && n < 0 && errno == EPERM,
	    "set_mempolicy (@resources): %s; pidfd_getfd (@debug): %s", e < 0 ? strerror(ecode) : "done",
	    n < 0 ? strerror(errno) : "done");
	say("SystemCallErrorNumber", e < 0 && ecode == EPERM,
	    "a filtered call returns EPERM (the process lives)");
}

/* MemoryMax: the service's cgroup's memory.max. */
static void memory(void)
{
	char path[600] = "", line[512], max[64] = "";
	FILE *f = fopen("/proc/self/cgroup", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.max", line + 3);
		}
	if (f)
		fclose(f);
	f = fopen(path, "r");
	if (f && fgets(max, sizeof(max), f))
		max[strcspn(max, "\n")] = '\0';
	if (f)
		fclose(f);
	say("MemoryMax", strcmp(max, "536870912") == 0, "memory.max %s", max);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: unit_probe FAR-IPV4 HOST-TMP-FILE\n");
		return 2;
	}
	user_and_caps();
	files(argv[2]);
	kernel();
	sockets(argv[1]);
	process();
	memory();
	printf("PROBE done\n");
	return 0;
}
