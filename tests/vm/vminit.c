/*
 * vminit.c - the first program of the test machine (tests/vm): it turns
 * the host's own root directory, shared read-only over 9p, into a
 * writable root (an overlay whose changes live in RAM) and hands over to
 * the host's systemd as PID 1.
 *
 * It runs from the initramfs that tests/vm/run.sh builds:
 *   /modules/order   the kernel modules to load (virtio, 9p, overlay),
 *                    one file name a line, in any order
 *   /modules/NAME.ko the modules themselves
 * The 9p share carries the mount tag "hostroot". Whatever goes wrong is
 * printed on the console with the prefix "NFVM-INIT" and the machine is
 * powered off, so the host sees a reason instead of a hang.
 *
 * Static, libc only: nothing of the host's root is reachable before the
 * mount.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NEWROOT "/newroot"
#define SYSTEMD "/lib/systemd/systemd"
#define GENERATORS "/usr/lib/systemd/system-generators"
#define RUN_GENERATOR "systemd-run-generator"

/* Prints why, with errno, and powers the machine off. */
static void die(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	fputs("NFVM-INIT: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(": %s\n", strerror(err));
	fflush(stdout);
	sync();
	reboot(RB_POWER_OFF);
	_exit(1);
}

/* Loads one module file; 0, or -1 with errno. */
static int load_module(const char *name)
{
	char path[160];
	int fd, rc;

	snprintf(path, sizeof(path), "/modules/%.100s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("open %s", path);
	rc = (int)syscall(SYS_finit_module, fd, "", 0);
	close(fd);
	return (rc == 0 || errno == EEXIST) ? 0 : -1;
}

/*
 * Loads every module named in /modules/order. A module whose dependencies
 * are not in yet fails with ENOENT (unknown symbol), so the list is gone
 * through again while a pass loads something: no depmod is needed.
 */
static void load_modules(void)
{
	char names[64][100], failed[100] = "";
	int n = 0, loaded[64] = { 0 }, left, progress = 1;
	FILE *order = fopen("/modules/order", "r");

	if (!order)
		die("open /modules/order");
	while (n < 64 && fgets(names[n], sizeof(names[n]), order)) {
		names[n][strcspn(names[n], "\n")] = '\0';
		if (names[n][0])
			n++;
	}
	fclose(order);
	for (left = n; left > 0 && progress;) {
		progress = 0;
		for (int i = 0; i < n; i++) {
			if (loaded[i])
				continue;
			if (load_module(names[i]) == 0) {
				loaded[i] = 1;
				left--;
				progress = 1;
			} else {
				memcpy(failed, names[i], sizeof(failed));
			}
		}
	}
	if (left > 0)
		die("load module %s (and %d more)", failed, left - 1);
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) || close(fd) != 0)
		die("write %s", path);
}

/*
 * Disables every systemd generator of the host but systemd-run-generator
 * (which makes inside.sh's kernel-command-line.service): a link to
 * /dev/null of the same name in the overlay's /etc. systemd runs each
 * generator again at every daemon-reload, a dozen times in inside.sh,
 * under emulation; none makes a unit the checks use (fstab=no already
 * empties fstab's; getty's would start a serial getty on ttyS0).
 */
static void disable_generators(void)
{
	char link[320];
	struct dirent *e;
	DIR *dir = opendir("/lower" GENERATORS);

	if (!dir)
		return;
	mkdir("/rw/upper/etc/systemd", 0755);
	mkdir("/rw/upper/etc/systemd/system-generators", 0755);
	while ((e = readdir(dir)) != NULL) {
		if (e->d_name[0] == '.' || strcmp(e->d_name, RUN_GENERATOR) == 0)
			continue;
		snprintf(link, sizeof(link), "/rw/upper/etc/systemd/system-generators/%.255s",
			 e->d_name);
		if (symlink("/dev/null", link) != 0 && errno != EEXIST)
			die("disable generator %s", e->d_name);
	}
	closedir(dir);
}

/*
 * Masks the host's boot units no check uses (a link to /dev/null in the
 * overlay's /etc/systemd/system): the machine boots to inside.sh's
 * service alone, and under emulation each unit started on the way costs
 * time. journald, tmpfiles and sysctl stay.
 */
static const char *const masked[] = {
	"systemd-timesyncd.service",	  "systemd-pstore.service",
	"systemd-sysusers.service",	  "systemd-update-utmp.service",
	"systemd-random-seed.service",	  "systemd-journal-flush.service",
	"systemd-modules-load.service",	  "systemd-binfmt.service",
	"kmod-static-nodes.service",	  "proc-sys-fs-binfmt_misc.automount",
	"systemd-ask-password-console.path", "dev-hugepages.mount",
	"dev-mqueue.mount",		  "sys-fs-fuse-connections.mount",
	"sys-kernel-config.mount",
};

static void mask_units(void)
{
	char link[160];

	mkdir("/rw/upper/etc/systemd/system", 0755);
	for (size_t i = 0; i < sizeof(masked) / sizeof(masked[0]); i++) {
		snprintf(link, sizeof(link), "/rw/upper/etc/systemd/system/%s", masked[i]);
		if (symlink("/dev/null", link) != 0 && errno != EEXIST)
			die("mask %s", masked[i]);
	}
}

static void mount_or_die(const char *src, const char *dst, const char *type,
			 unsigned long flags, const char *opts)
{
	mkdir(dst, 0755);
	if (mount(src, dst, type, flags, opts) != 0)
		die("mount %s on %s (%s)", src, dst, type);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	mount_or_die("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	mount_or_die("proc", "/proc", "proc", 0, NULL);
	load_modules();
	mount_or_die("hostroot", "/lower", "9p", MS_RDONLY,
		     "trans=virtio,version=9p2000.L,msize=512000,cache=loose");
	mount_or_die("rw", "/rw", "tmpfs", 0, "mode=0755");
	mkdir("/rw/upper", 0755);
	mkdir("/rw/work", 0755);
	/* tmpfiles empties /tmp at boot (tmp.conf's "D"): the tests may be
	 * there, so /etc/tmpfiles.d/tmp.conf overrides it with "d" */
	mkdir("/rw/upper/etc", 0755);
	mkdir("/rw/upper/etc/tmpfiles.d", 0755);
	write_file("/rw/upper/etc/tmpfiles.d/tmp.conf", "d /tmp 1777 root root -\n");
	disable_generators();
	mask_units();
	/* systemd takes a root with /.dockerenv for a container, and then
	 * reads its own argv instead of the kernel command line: hide it */
	if (access("/lower/.dockerenv", F_OK) == 0 &&
	    mknod("/rw/upper/.dockerenv", S_IFCHR | 0600, 0) != 0)
		die("hide /.dockerenv");
	mount_or_die("overlay", NEWROOT, "overlay", 0,
		     "lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work");
	/* the lower /proc, /sys and /run are the host's: cover them (not
	 * /tmp, where the tests may be; the overlay keeps it writable) */
	if (mount("/dev", NEWROOT "/dev", NULL, MS_MOVE, NULL) != 0 ||
	    mount("/proc", NEWROOT "/proc", NULL, MS_MOVE, NULL) != 0)
		die("move /dev and /proc");
	mount_or_die("sysfs", NEWROOT "/sys", "sysfs", 0, NULL);
	mount_or_die("run", NEWROOT "/run", "tmpfs", 0, "mode=0755");
	if (chdir(NEWROOT) != 0 || mount(".", "/", NULL, MS_MOVE, NULL) != 0 ||
	    chroot(".") != 0 || chdir("/") != 0)
		die("switch to the new root");
	execl(SYSTEMD, SYSTEMD, (char *)NULL);
	die("exec %s", SYSTEMD);
	return 1;
}
