/*
 * check_exe.c - whether the loader will preload the library into a program
 * file (src/common/exe.c): ELF headers written by the test (a program
 * header table with or without PT_INTERP, another class, another
 * machine), scripts and their interpreters, the set-ID bits against this
 * process's ids, nosuid mounts and no_new_privs, file capabilities, and
 * the PATH search of execvp. Each test works in a fresh directory.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "nf_exe.h"
#include "suites.h"

#define NOBODY 65534
#define OUR_CLASS (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32)

static char dir[64];
static char who[NF_EXE_PATH_MAX];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/check_exe.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(chmod(dir, 0755), 0); /* nobody reads it too */
	who[0] = '\0';
}

static void teardown(void)
{
	char cmd[256];

	setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", 1); /* a test may have set its own */
	snprintf(cmd, sizeof(cmd), "umount -q %s 2>/dev/null; rm -rf %s", dir, dir);
	(void)!system(cmd);
}

/* dir/name, in a static buffer of four. */
static const char *at(const char *name)
{
	static char buf[4][128];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

/* This machine's e_machine, from this program's own header. */
static int our_machine(void)
{
	ElfW(Ehdr) eh;
	int fd = open("/proc/self/exe", O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, &eh, sizeof(eh)), sizeof(eh));
	close(fd);
	return eh.e_machine;
}

/* Writes dir/name: an ELF header of class cls and machine, then two
 * program headers, PT_INTERP first if interp, and a PT_LOAD. Mode 0755. */
static const char *write_elf(const char *name, int cls, int machine, int interp)
{
	ElfW(Ehdr) eh = { .e_type = ET_DYN, .e_version = EV_CURRENT };
	ElfW(Phdr) ph[2] = { { .p_type = interp ? PT_INTERP : PT_NOTE }, { .p_type = PT_LOAD } };
	const char *path = at(name);
	FILE *f = fopen(path, "w");

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = cls;
	eh.e_ident[EI_DATA] = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_machine = machine;
	eh.e_phoff = sizeof(eh);
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(ph[0]);
	eh.e_phnum = 2;
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fwrite(&eh, sizeof(eh), 1, f), 1);
	ck_assert_int_eq(fwrite(ph, sizeof(ph), 1, f), 1);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(path, 0755), 0);
	return path;
}

static const char *write_static(const char *name)
{
	return write_elf(name, OUR_CLASS, our_machine(), 0);
}

static const char *write_dynamic(const char *name)
{
	return write_elf(name, OUR_CLASS, our_machine(), 1);
}

/* Writes dir/name: text, mode 0755. */
static const char *write_text(const char *name, const char *text)
{
	const char *path = at(name);
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(path, 0755), 0);
	return path;
}

/* Makes dir/name a script run by interp. */
static const char *write_script(const char *name, const char *interp)
{
	char text[256];

	snprintf(text, sizeof(text), "#! %s -x\necho hi\n", interp);
	return write_text(name, text);
}

/* ---- the ELF headers ------------------------------------------------------ */

START_TEST(test_exe_no_interp_is_static)
{
	const char *p = write_static("static");

	ck_assert_int_eq(nf_exe_check(p, who), NF_EXE_STATIC);
	ck_assert_str_eq(who, p);
	ck_assert_str_eq(nf_exe_why_text(NF_EXE_STATIC), "statically linked");
}
END_TEST

START_TEST(test_exe_interp_is_entered)
{
	ck_assert_int_eq(nf_exe_check(write_dynamic("dynamic"), who), NF_EXE_OK);
	ck_assert_int_eq(nf_exe_check("/proc/self/exe", who), NF_EXE_OK); /* this program */
}
END_TEST

START_TEST(test_exe_other_class_is_foreign)
{
	int other = OUR_CLASS == ELFCLASS64 ? ELFCLASS32 : ELFCLASS64;

	ck_assert_int_eq(nf_exe_check(write_elf("other-class", other, our_machine(), 1), who),
			 NF_EXE_FOREIGN);
}
END_TEST

START_TEST(test_exe_other_machine_is_foreign)
{
	int other = our_machine() == EM_AARCH64 ? EM_X86_64 : EM_AARCH64;

	const char *p = write_elf("other-machine", OUR_CLASS, other, 1);

	ck_assert_int_eq(nf_exe_check(p, who), NF_EXE_FOREIGN);
}
END_TEST

/* Not a program the loader would refuse: no telling, so no claim. */
START_TEST(test_exe_unknown_is_no_claim)
{
	ck_assert_int_eq(nf_exe_check(write_text("text", "just words\n"), who), NF_EXE_OK);
	ck_assert_int_eq(nf_exe_check(at("missing"), who), NF_EXE_OK);
	ck_assert_int_eq(nf_exe_check(dir, who), NF_EXE_OK);
	ck_assert_int_eq(nf_exe_check(write_text("cut", "\177ELF\2"), who), NF_EXE_OK);
}
END_TEST

/* ---- scripts ---------------------------------------------------------------- */

START_TEST(test_exe_script_is_its_interpreter)
{
	const char *st = write_static("static");
	const char *dyn = write_dynamic("dynamic");

	ck_assert_int_eq(nf_exe_check(write_script("on-static", st), who), NF_EXE_STATIC);
	ck_assert_str_eq(who, st); /* the file at fault */
	ck_assert_int_eq(nf_exe_check(write_script("on-dynamic", dyn), who), NF_EXE_OK);
}
END_TEST

START_TEST(test_exe_script_chain_followed)
{
	const char *st = write_static("static");
	const char *one = write_script("one", st);
	const char *two = write_script("two", one);

	ck_assert_int_eq(nf_exe_check(write_script("three", two), who), NF_EXE_STATIC);
	ck_assert_str_eq(who, st);
}
END_TEST

/* A script that names itself: the depth bound ends it, no claim. */
START_TEST(test_exe_script_loop_ends)
{
	ck_assert_int_eq(nf_exe_check(write_script("self", at("self")), who), NF_EXE_OK);
}
END_TEST

/* The kernel ignores a script's own set-user-ID bit. */
START_TEST(test_exe_setuid_script_is_its_interpreter)
{
	const char *p = write_script("suid-script", write_dynamic("dynamic"));

	ck_assert_int_eq(chown(p, NOBODY, NOBODY), 0);
	ck_assert_int_eq(chmod(p, 04755), 0);
	ck_assert_int_eq(nf_exe_check(p, who), NF_EXE_OK);
}
END_TEST

/* ---- set-ID bits, no_new_privs, nosuid, capabilities ------------------------ */

/* A set-user-ID program of another user: the exec is secure. */
START_TEST(test_exe_setuid_other_user)
{
	const char *p = write_dynamic("suid");

	ck_assert_int_eq(chown(p, NOBODY, getgid()), 0);
	ck_assert_int_eq(chmod(p, 04755), 0);
	ck_assert_int_eq(nf_exe_check(p, who), NF_EXE_SETUID);
	ck_assert_str_eq(who, p);
}
END_TEST

/* Set-user-ID to this process's own user changes no id: not secure. */
START_TEST(test_exe_setuid_own_user)
{
	const char *p = write_dynamic("suid-own");

	ck_assert_int_eq(chmod(p, 04755), 0);
	ck_assert_int_eq(nf_exe_check(p, who), NF_EXE_OK);
}
END_TEST

/* set-group-ID counts only with group execute (without, it is a lock mark). */
START_TEST(test_exe_setgid_other_group)
{
	const char *p = write_dynamic("sgid");

	ck_assert_int_eq(chown(p, getuid(), NOBODY), 0);
	ck_assert_int_eq(chmod(p, 02755), 0);
	ck_assert_int_eq(nf_exe_check(p, who), NF_EXE_SETGID);
	ck_assert_int_eq(chmod(p, 02745), 0);
	ck_assert_int_eq(nf_exe_check(p, who), NF_EXE_OK);
}
END_TEST

/* A static set-user-ID program is said static: no loader at all. */
START_TEST(test_exe_static_before_setuid)
{
	const char *p = write_static("suid-static");

	ck_assert_int_eq(chown(p, NOBODY, getgid()), 0);
	ck_assert_int_eq(chmod(p, 04755), 0);
	ck_assert_int_eq(nf_exe_check(p, who), NF_EXE_STATIC);
}
END_TEST

START_TEST(test_exe_setuid_under_no_new_privs)
{
	const char *p = write_dynamic("suid");

	ck_assert_int_eq(chown(p, NOBODY, getgid()), 0);
	ck_assert_int_eq(chmod(p, 04755), 0);
	ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0); /* this Check fork only */
	ck_assert_int_eq(nf_exe_check(p, who), NF_EXE_OK);
}
END_TEST

START_TEST(test_exe_setuid_on_nosuid_mount)
{
	const char *p;

	ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	ck_assert_int_eq(mount("none", dir, "tmpfs", MS_NOSUID, "size=64k"), 0);
	p = write_dynamic("suid");
	ck_assert_int_eq(chown(p, NOBODY, getgid()), 0);
	ck_assert_int_eq(chmod(p, 04755), 0);
	ck_assert_int_eq(nf_exe_check(p, who), NF_EXE_OK);
}
END_TEST

/* Sets a capability on p (CAP_NET_RAW, permitted and effective). */
static void set_cap(const char *p)
{
	struct vfs_cap_data cap = { .magic_etc = VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE };

	cap.data[0].permitted = 1u << CAP_NET_RAW;
	ck_assert_int_eq(setxattr(p, "security.capability", &cap, XATTR_CAPS_SZ_2, 0), 0);
}

/* A user who is not root gains the capability: a secure exec. (Asked as
 * nobody in a child: the test's own process stays root to clean up.) */
START_TEST(test_exe_caps_for_a_user)
{
	const char *p = write_dynamic("caps");
	int status = -1;
	pid_t pid;

	set_cap(p);
	pid = fork();
	if (pid == 0)
		_exit(setresgid(NOBODY, NOBODY, NOBODY) == 0 && setresuid(NOBODY, NOBODY, NOBODY) == 0
		      ? (int)nf_exe_check(p, who) : 99);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), NF_EXE_CAPS);
}
END_TEST

/* Root's exec gains nothing it lacks: not secure. */
START_TEST(test_exe_caps_for_root)
{
	const char *p = write_dynamic("caps");

	set_cap(p);
	ck_assert_int_eq(nf_exe_check(p, who), NF_EXE_OK);
}
END_TEST

/* ---- the PATH search, and the sentence ------------------------------------- */

START_TEST(test_exe_find_as_execvp)
{
	char out[NF_EXE_PATH_MAX], path[512];

	ck_assert_int_eq(mkdir(at("a"), 0755), 0);
	ck_assert_int_eq(mkdir(at("b"), 0755), 0);
	write_text("a/prog", "not executable\n");
	ck_assert_int_eq(chmod(at("a/prog"), 0644), 0);
	ck_assert_int_eq(mkdir(at("a/sub"), 0755), 0);
	write_text("b/prog", "#!/bin/sh\n");
	write_text("b/sub", "#!/bin/sh\n");
	snprintf(path, sizeof(path), "%s:%s", at("a"), at("b"));
	ck_assert_int_eq(setenv("PATH", path, 1), 0);
	ck_assert_int_eq(nf_exe_find("prog", out), 0); /* a's is not executable */
	ck_assert_str_eq(out, at("b/prog"));
	ck_assert_int_eq(nf_exe_find("sub", out), 0); /* a's is a directory */
	ck_assert_str_eq(out, at("b/sub"));
	ck_assert_int_eq(nf_exe_find("nowhere", out), -1);
	ck_assert_str_eq(out, "nowhere");
	ck_assert_int_eq(nf_exe_find("./x/y", out), 0); /* a '/': as given */
	ck_assert_str_eq(out, "./x/y");
	snprintf(path, sizeof(path), "%s::", at("a")); /* an empty entry: the current directory */
	ck_assert_int_eq(setenv("PATH", path, 1), 0);
	ck_assert_int_eq(chdir(at("b")), 0);
	ck_assert_int_eq(nf_exe_find("prog", out), 0);
	ck_assert_str_eq(out, "./prog");
}
END_TEST

START_TEST(test_exe_say_names_pid_file_and_instead)
{
	const char *want = "a child runs /x/s.sh, which the library cannot enter (/bin/st:"
			   " statically linked): its sockets are left as they are; `naglefix fix PID`";
	char buf[1024];

	nf_exe_say(buf, sizeof(buf), "/x/a\033b", "/x/a\033b", NF_EXE_SETUID, 42);
	ck_assert_str_eq(buf, "pid 42 runs /x/a\\x1bb, which the library cannot enter (set-user-ID):"
			      " its sockets are left as they are; `naglefix fix 42` sets TCP_NODELAY"
			      " on them from outside, `naglefix watch` sees every connection of this"
			      " host");
	nf_exe_say(buf, sizeof(buf), "/x/s.sh", "/bin/st", NF_EXE_STATIC, 0);
	ck_assert_msg(strncmp(buf, want, strlen(want)) == 0, "%s", buf);
}
END_TEST

/* Why this machine cannot make set-ID files for another user here. */
static const char *chown_why(void)
{
	struct statvfs vfs;

	if (getuid() != 0)
		return "not root: cannot give a file to nobody";
	if (statvfs("/tmp", &vfs) == 0 && (vfs.f_flag & ST_NOSUID))
		return "/tmp is mounted nosuid: its set-ID bits count for nothing";
	return NULL;
}

/* Why a private mount namespace cannot be had (tried in a child). */
static const char *mount_why(void)
{
	pid_t pid = fork();
	int status = -1;

	if (pid == 0)
		_exit(unshare(CLONE_NEWNS) == 0 ? 0 : 1);
	if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0)
		return chown_why();
	return "no private mount namespace (needs CAP_SYS_ADMIN)";
}

Suite *exe_suite(void)
{
	Suite *s = suite_create("exe");
	TCase *tc = tcase_create("exe");

	tcase_add_checked_fixture(tc, setup, teardown);
	unit_add(tc, test_exe_no_interp_is_static);
	unit_add(tc, test_exe_interp_is_entered);
	unit_add(tc, test_exe_other_class_is_foreign);
	unit_add(tc, test_exe_other_machine_is_foreign);
	unit_add(tc, test_exe_unknown_is_no_claim);
	unit_add(tc, test_exe_script_is_its_interpreter);
	unit_add(tc, test_exe_script_chain_followed);
	unit_add(tc, test_exe_script_loop_ends);
	unit_add_unless(tc, test_exe_setuid_script_is_its_interpreter, chown_why());
	unit_add_unless(tc, test_exe_setuid_other_user, chown_why());
	unit_add(tc, test_exe_setuid_own_user);
	unit_add_unless(tc, test_exe_setgid_other_group, chown_why());
	unit_add_unless(tc, test_exe_static_before_setuid, chown_why());
	unit_add_unless(tc, test_exe_setuid_under_no_new_privs, chown_why());
	unit_add_unless(tc, test_exe_setuid_on_nosuid_mount, mount_why());
	unit_add_unless(tc, test_exe_caps_for_a_user, chown_why());
	unit_add_unless(tc, test_exe_caps_for_root, chown_why());
	unit_add(tc, test_exe_find_as_execvp);
	unit_add(tc, test_exe_say_names_pid_file_and_instead);
	suite_add_tcase(s, tc);
	return s;
}
