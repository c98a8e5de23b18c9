/*
 * test_sandbox - a program that puts itself in a seccomp sandbox, as
 * OpenSSH's pre-authentication child does, must live on under the library.
 *
 *   test_sandbox [prctl|seccomp|seccomp-tsync|syscall-prctl [fork|vfork|probe|gap]]
 *
 * It connects to an echo peer and writes "hello " (under coalesce with
 * start=split, held by the library), then installs a filter that allows
 * only the system calls it makes itself from then on (and futex, which a
 * libc with a second thread needs) and kills the process (SIGSYS) for any
 * other: with prctl(PR_SET_SECCOMP) (the default, as OpenSSH does), with
 * syscall(SYS_seccomp) (as libseccomp does; seccomp-tsync: the filter on
 * every thread, the library's timer too), or with syscall(SYS_prctl).
 * Then it finishes the line with write, reads the echo, and makes one
 * round with each call family (write, send, sendto, sendmsg, writev; read,
 * recv, readv, recvmsg; poll), then shutdown and close; connects again
 * and makes a round on the new socket; accepts a connection on a listener
 * made before the filter and makes rounds on the accepted socket, on a
 * dup of it and after fcntl, select and epoll_wait; with fork, forks a
 * child that exits at once, and waits for it (the filter then allows
 * clone, wait4 and what libc's fork makes in the child, but not clone3: no
 * thread may start); with vfork, the same with vfork (the filter allows
 * vfork and wait4, not clone: the library, which makes a vfork a fork,
 * must leave it libc's own); with probe, first makes the calls with which systemd
 * and libseccomp ask whether seccomp works, which install nothing (the
 * kernel refuses each): the library must not stand aside for them, so a
 * new connection under NAGLEFIX_MODE=nodelay still gets TCP_NODELAY. With
 * gap (under coalesce), instead of all this: a connection whose peer reads
 * nothing, written until the library holds bytes the kernel will not take;
 * after the filter (the library gave up on them) the next send must fail
 * with EPIPE, not carry the stream on with a hole in it. It exits through
 * exit(): the library's destructor, its log and its audit summary run
 * under the filter too. Any system call of the library's own after the
 * filter (a setsockopt, an ioctl, a getsockopt, a thread's clone3, a log
 * file's open) kills it. The action comes from the environment
 * (NAGLEFIX_MODE, NAGLEFIX_CONF).
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>

#include "../common/echo.h"

/* The kernel's seccomp and classic BPF ABI (linux/seccomp.h, filter.h,
 * audit.h), written out: musl-gcc has no kernel headers. */
struct bpf_insn_ {
	uint16_t code;
	uint8_t jt, jf;
	uint32_t k;
};
struct bpf_prog_ {
	unsigned short len;
	struct bpf_insn_ *filter;
};
#define LD_ABS_W 0x20 /* BPF_LD | BPF_W | BPF_ABS */
#define JEQ_K 0x15    /* BPF_JMP | BPF_JEQ | BPF_K */
#define RET_K 0x06    /* BPF_RET | BPF_K */
#define DATA_NR 0     /* offsetof(struct seccomp_data, nr) */
#define DATA_ARCH 4   /* offsetof(struct seccomp_data, arch) */
#define MODE_FILTER 2 /* SECCOMP_MODE_FILTER */
#define SET_MODE_FILTER 1 /* SECCOMP_SET_MODE_FILTER, seccomp's operation */
#define FLAG_TSYNC 1 /* SECCOMP_FILTER_FLAG_TSYNC */
#define RET_KILL_PROCESS 0x80000000u
#define RET_ALLOW 0x7fff0000u
#if defined(__x86_64__)
#define ARCH 0xc000003eu /* AUDIT_ARCH_X86_64 */
#elif defined(__aarch64__)
#define ARCH 0xc00000b7u /* AUDIT_ARCH_AARCH64 */
#endif

#define ALLOW(nr) { JEQ_K, 0, 1, (nr) }, { RET_K, 0, 0, RET_ALLOW }

/* Kills the process on any system call but the ones this program makes
 * from here on (and what a failing CHECK or the alarm needs; with fork,
 * fork's and wait's), installed the way how says. */
static void sandbox(const char *how, int fork, int vfork)
{
	struct bpf_insn_ code[] = {
		{ LD_ABS_W, 0, 0, DATA_ARCH },
		{ JEQ_K, 1, 0, ARCH },
		{ RET_K, 0, 0, RET_KILL_PROCESS },
		{ LD_ABS_W, 0, 0, DATA_NR },
		ALLOW(__NR_read), ALLOW(__NR_readv), ALLOW(__NR_recvfrom), ALLOW(__NR_recvmsg),
		ALLOW(__NR_write), ALLOW(__NR_writev), ALLOW(__NR_sendto), ALLOW(__NR_sendmsg),
#ifdef __NR_poll
		ALLOW(__NR_poll),
#endif
		ALLOW(__NR_ppoll), ALLOW(__NR_shutdown), ALLOW(__NR_close),
		ALLOW(__NR_socket), ALLOW(__NR_connect), ALLOW(__NR_accept), ALLOW(__NR_accept4),
		ALLOW(__NR_dup), ALLOW(__NR_fcntl), ALLOW(__NR_pselect6), ALLOW(__NR_epoll_pwait), ALLOW(__NR_epoll_ctl),
#ifdef __NR_select
		ALLOW(__NR_select),
#endif
#ifdef __NR_epoll_wait
		ALLOW(__NR_epoll_wait),
#endif
		ALLOW(__NR_rt_sigreturn), ALLOW(__NR_exit), ALLOW(__NR_exit_group),
		ALLOW(__NR_futex),
		{ JEQ_K, 0, 1, vfork ? __NR_vfork : __NR_exit }, { RET_K, 0, 0, RET_ALLOW },
		{ JEQ_K, 0, 1, vfork ? __NR_wait4 : __NR_exit }, { RET_K, 0, 0, RET_ALLOW },
		{ JEQ_K, 0, 1, fork ? __NR_clone : __NR_exit }, { RET_K, 0, 0, RET_ALLOW },
		{ JEQ_K, 0, 1, fork ? __NR_wait4 : __NR_exit }, { RET_K, 0, 0, RET_ALLOW },
		/* what libc's fork does in the child */
		{ JEQ_K, 0, 1, fork ? __NR_set_robust_list : __NR_exit }, { RET_K, 0, 0, RET_ALLOW },
		{ JEQ_K, 0, 1, fork ? __NR_rseq : __NR_exit }, { RET_K, 0, 0, RET_ALLOW },
#ifndef __GLIBC__
		/* musl's fork: the fork system call, with every signal blocked
		 * around it, and the child's gettid (so under musl the library's own rt_sigprocmask in
		 * its fork handlers goes unseen: the glibc build's test sees it) */
		{ JEQ_K, 0, 1, fork ? __NR_fork : __NR_exit }, { RET_K, 0, 0, RET_ALLOW },
		{ JEQ_K, 0, 1, fork ? __NR_rt_sigprocmask : __NR_exit }, { RET_K, 0, 0, RET_ALLOW },
		{ JEQ_K, 0, 1, fork ? __NR_gettid : __NR_exit }, { RET_K, 0, 0, RET_ALLOW },
#endif
		{ RET_K, 0, 0, RET_KILL_PROCESS },
	};
	struct bpf_prog_ prog = { .len = sizeof(code) / sizeof(code[0]), .filter = code };

	CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "no_new_privs");
	if (strcmp(how, "seccomp") == 0)
		CHECK(syscall(SYS_seccomp, SET_MODE_FILTER, 0, &prog) == 0, "the filter");
	else if (strcmp(how, "seccomp-tsync") == 0)
		CHECK(syscall(SYS_seccomp, SET_MODE_FILTER, FLAG_TSYNC, &prog) == 0, "the filter");
	else if (strcmp(how, "syscall-prctl") == 0)
		CHECK(syscall(SYS_prctl, PR_SET_SECCOMP, MODE_FILTER, &prog, 0, 0) == 0, "the filter");
	else
		CHECK(prctl(PR_SET_SECCOMP, MODE_FILTER, &prog) == 0, "the filter");
}

/* One line in two pieces, sent with how, and its echo read back. */
static void round_trip(int fd, enum nft_how how)
{
	char line[64];

	nft_send_all(fd, "hello ", how);
	nft_send_all(fd, "world\r\n", how);
	nft_read_line(fd, line, sizeof(line));
	CHECK(strcmp(line, "hello world\r\n") == 0, "bad echo '%s'", line);
}

/* Reads the echo of "ping\n" with recv, readv and recvmsg in turn. */
static void read_families(int fd)
{
	char a[2], b[2], c[1];
	struct iovec v = { .iov_base = b, .iov_len = sizeof(b) };
	struct iovec w = { .iov_base = c, .iov_len = sizeof(c) };
	struct msghdr m = { .msg_iov = &w, .msg_iovlen = 1 };
	struct pollfd p = { .fd = fd, .events = POLLIN };

	nft_send_all(fd, "ping\n", NFT_WRITE);
	CHECK(poll(&p, 1, 5000) == 1, "no echo within 5 s");
	CHECK(recv(fd, a, sizeof(a), MSG_WAITALL) == 2, "recv");
	CHECK(readv(fd, &v, 1) == 2, "readv");
	CHECK(recvmsg(fd, &m, 0) == 1, "recvmsg");
	CHECK(memcmp(a, "pi", 2) == 0 && memcmp(b, "ng", 2) == 0 && c[0] == '\n',
	      "bad echo of ping");
}

/* The accepted socket: rounds on it, on a dup of it, and after fcntl,
 * select and epoll_wait. ep watches it for input. */
static void accepted_rounds(int lfd, int ep)
{
	int fd = accept(lfd, NULL, NULL), d;
	struct epoll_event ev;
	fd_set r;

	CHECK(fd >= 0, "accept");
	round_trip(fd, NFT_WRITE);
	d = dup(fd);
	CHECK(d >= 0, "dup");
	round_trip(d, NFT_SEND);
	CHECK(close(d) == 0, "close the dup");
	CHECK(fcntl(fd, F_GETFL) >= 0, "fcntl");
	nft_send_all(fd, "sel\n", NFT_WRITE);
	FD_ZERO(&r);
	FD_SET(fd, &r);
	CHECK(select(fd + 1, &r, NULL, NULL, NULL) == 1, "select");
	CHECK(read(fd, (char[4]){ 0 }, 4) == 4, "the echo of sel");
	ev.events = EPOLLIN;
	ev.data.fd = fd;
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll_ctl");
	nft_send_all(fd, "ep\n", NFT_WRITEV);
	CHECK(epoll_wait(ep, &ev, 1, 5000) == 1, "epoll_wait");
	CHECK(read(fd, (char[3]){ 0 }, 3) == 3, "the echo of ep");
	CHECK(close(fd) == 0, "close the accepted socket");
}

/* The calls that ask whether seccomp works, each refused by the kernel
 * without installing a thing; then a new connection's TCP_NODELAY, on if
 * NAGLEFIX_MODE says nodelay. */
static void probes(int port)
{
	const char *mode = getenv("NAGLEFIX_MODE");
	int fd;

	CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "no_new_privs");
	CHECK_ERRNO(prctl(PR_SET_SECCOMP, MODE_FILTER, NULL), EFAULT); /* systemd's */
	CHECK_ERRNO(syscall(SYS_seccomp, 0 /* strict */, 1, NULL), EINVAL); /* libseccomp's */
	CHECK_ERRNO(syscall(SYS_seccomp, SET_MODE_FILTER, FLAG_TSYNC, NULL), EFAULT);
	fd = nft_connect("127.0.0.1", port);
	if (mode && strcmp(mode, "nodelay") == 0)
		CHECK(nft_nodelay(fd) == 1, "no TCP_NODELAY after the probes: the library stood aside");
	CHECK(close(fd) == 0, "close");
}

/* A connection nobody reads, filled until the library holds bytes; after
 * the filter, a send fails with EPIPE. Exits. */
static void gap(const char *how)
{
	int lport, lfd, fd, n = 0, small = 4096;
	char buf[1000];
	struct sockaddr_storage ss;
	socklen_t len;

	memset(buf, 'g', sizeof(buf));
	lfd = nft_listen("127.0.0.1", 23800, 23899, &lport); /* never accepted */
	/* small buffers on both ends, so the kernel's never grow: full stays full */
	CHECK(setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)) == 0, "SO_RCVBUF");
	len = nft_addr("127.0.0.1", lport, &ss);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) == 0,
	      "SO_SNDBUF");
	CHECK(connect(fd, (struct sockaddr *)&ss, len) == 0, "connect");
	while (n++ < 100000 && send(fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
		;
	CHECK(errno == EAGAIN, "filling the socket");
	sandbox(how, 0, 0);
	CHECK_ERRNO(send(fd, "x", 1, MSG_DONTWAIT | MSG_NOSIGNAL), EPIPE);
	exit(0);
}

int main(int argc, char **argv)
{
	int port, fd, lfd, lport, ep;
	const char *extra = argc > 2 ? argv[2] : "";
	char line[64];

	nft_init(argc, argv);
#ifndef ARCH
	printf("SKIP test_sandbox: no seccomp filter for this architecture here\n");
	return 77;
#endif
	if (strcmp(extra, "gap") == 0)
		gap(argv[1]);
	nft_peer_listen("127.0.0.1", 23700, 23799, &port);
	if (strcmp(extra, "probe") == 0)
		probes(port);
	lfd = nft_listen("127.0.0.1", 23700, 23799, &lport);
	nft_peer_connect("127.0.0.1", lport); /* accepted after the filter */
	ep = epoll_create1(0);
	CHECK(ep >= 0, "epoll_create1");
	fd = nft_connect("127.0.0.1", port);
	nft_send_all(fd, "hello ", NFT_WRITE); /* held under coalesce start=split */
	sandbox(argc > 1 ? argv[1] : "prctl", strcmp(extra, "fork") == 0,
		strcmp(extra, "vfork") == 0);
	nft_send_all(fd, "world\r\n", NFT_WRITE);
	nft_read_line(fd, line, sizeof(line));
	CHECK(strcmp(line, "hello world\r\n") == 0, "the held piece: bad echo '%s'", line);
	for (int how = NFT_WRITE; how <= NFT_WRITEV; how++)
		round_trip(fd, (enum nft_how)how);
	read_families(fd);
	CHECK(shutdown(fd, SHUT_WR) == 0, "shutdown");
	CHECK(read(fd, line, sizeof(line)) == 0, "EOF after shutdown");
	CHECK(close(fd) == 0, "close");
	fd = nft_connect("127.0.0.1", port); /* a socket the library never decided */
	round_trip(fd, NFT_WRITE);
	round_trip(fd, NFT_SENDMSG);
	accepted_rounds(lfd, ep);
	if (strcmp(extra, "fork") == 0 || strcmp(extra, "vfork") == 0) {
		pid_t child = strcmp(extra, "fork") == 0 ? fork() : vfork();
		int status;

		CHECK(child >= 0, "fork");
		if (child == 0)
			_exit(7);
		CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) &&
			      WEXITSTATUS(status) == 7,
		      "the child's exit");
	}
	exit(0);
}
