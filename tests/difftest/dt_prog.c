/* dt_prog: runs one op list (dt.h) on TCP connections to the peer and records
 * what every call returned.
 *
 *   dt_prog --gen SEED                    prints the op list of SEED
 *   dt_prog OPSFILE RUNDIR PORT[,PORT...]  runs it
 *   (a fifth argument: the state an EXEC op passes to the new image)
 *
 * RUNDIR/trace gets one line per op: "ID KIND ret errno acc sigpipes nb sig
 * bad" (acc: bytes the call said it took, -1 unknown; nb: the call could not
 * block; sig: an interval timer was armed; bad: a read returned bytes the peer
 * never sent). RUNDIR/exp gets, per send, a record (struct dt_exp) and the
 * bytes the program was told were written, so the driver can check the peer's
 * stream against them. Both are written with one write(2) per record,
 * O_APPEND, from every thread and forked child.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <spawn.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dt.h"
#include "dt_gen.h"
#include "dt_exp.h"

extern char **environ;

static struct dt_list L;
static int conn_fd[DT_MAXCONN];
static long roff[DT_MAXCONN]; /* bytes of the peer's replies read so far */
static int trace_fd = -1, exp_fd = -1;
static int cur_blk = -1;
static volatile sig_atomic_t sig_armed, alarms;
static __thread volatile int tls_sigpipe;
static jmp_buf main_return;

static void on_sigpipe(int s) { (void)s; tls_sigpipe++; }
static void on_alarm(int s) { (void)s; alarms++; }

static void put_all(int fd, const void *p, size_t n)
{
	/* one write: O_APPEND keeps records of threads and children whole */
	if (write(fd, p, n) != (ssize_t)n)
		_exit(90);
}

static void record(const struct dt_op *o, long ret, int err, long acc, int sp, int nb, int bad)
{
	char line[160];
	int len = snprintf(line, sizeof line, "%d %s %ld %d %ld %d %d %d %d\n", o->id,
			   dt_kind_names[o->kind], ret, err, acc, sp, nb, (int)sig_armed, bad);
	put_all(trace_fd, line, (size_t)len);
}

static void expect(const struct dt_op *o, const unsigned char *p, long acc)
{
	struct dt_exp h = { o->c, o->t, cur_blk, (int)acc, o->id };
	size_t n = sizeof h + (acc > 0 ? (size_t)acc : 0);
	unsigned char *b = malloc(n);
	memcpy(b, &h, sizeof h);
	if (acc > 0)
		memcpy(b + sizeof h, p, (size_t)acc);
	put_all(exp_fd, b, n);
	free(b);
}

static int msgflags(int f)
{
	return (f & F_DONTWAIT ? MSG_DONTWAIT : 0) | (f & F_NOSIGNAL ? MSG_NOSIGNAL : 0) |
	       (f & F_MORE ? MSG_MORE : 0);
}

static int is_nb(int fd)
{
	int fl = fd < 0 ? -1 : fcntl(fd, F_GETFL);
	return fl >= 0 && (fl & O_NONBLOCK);
}

/* Splits N bytes at P into CNT iovecs, some empty, shaped by SHAPE. */
static void split(struct iovec *iov, int cnt, unsigned char *p, long n, uint64_t shape)
{
	long left = n;
	for (int i = 0; i < cnt; i++) {
		long len = (i == cnt - 1) ? left : (dt_rand(&shape, 4) == 0 ? 0 : (long)(dt_next(&shape) % (uint64_t)(left + 1)));
		iov[i].iov_base = p;
		iov[i].iov_len = (size_t)len;
		p += len;
		left -= len;
	}
}

/* Checks bytes read from connection C at reply offset OFF; 1 if wrong. */
static int bad_reply(int c, const unsigned char *b, long n, long off)
{
	if (L.conn[c].beh != B_REPLY)
		return n > 0;
	for (long i = 0; i < n; i++)
		if (b[i] != dt_reply_byte(c, off + i))
			return 1;
	return 0;
}

/* Marks connections whose descriptor is gone (after a close of any kind). */
static void revalidate(void)
{
	for (int c = 0; c < L.nconn; c++)
		if (conn_fd[c] >= 0 && fcntl(conn_fd[c], F_GETFD) < 0)
			conn_fd[c] = -1;
}

static void forget_fd(int fd)
{
	for (int c = 0; c < L.nconn; c++)
		if (conn_fd[c] == fd)
			conn_fd[c] = -1;
}

static void nap(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static long do_send(const struct dt_op *o, int fd, unsigned char *p, long *acc)
{
	int fl = msgflags(o->f);
	long ret = -1;
	switch (o->kind) {
	case K_WRITE:
		ret = write(fd, o->f & F_BADPTR ? (void *)16 : p, (size_t)o->n);
		break;
	case K_SEND:
		ret = send(fd, o->f & F_BADPTR ? (void *)16 : p, (size_t)o->n, fl);
		break;
	case K_SENDTO:
		ret = sendto(fd, p, (size_t)o->n, fl, NULL, 0);
		break;
	case K_WRITEV:
	case K_SENDMSG: {
		struct iovec iov[16];
		int cnt = o->b > 16 ? 16 : o->b;
		if (o->kind == K_WRITEV && (o->b < 0 || o->b > 1024)) {
			/* out of range (IOV_MAX is 1024): the kernel says EINVAL and reads none */
			struct iovec *big = calloc(1030, sizeof *big);
			split(big, 16, p, o->n, (uint64_t)o->a);
			ret = writev(fd, big, o->b);
			free(big);
			break;
		}
		split(iov, cnt, p, cnt ? o->n : 0, (uint64_t)o->a);
		if (o->kind == K_WRITEV) {
			ret = writev(fd, iov, cnt);
		} else {
			struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)cnt };
			ret = sendmsg(fd, &m, fl);
		}
		break;
	}
	case K_PWRITEV2: {
		/* offset -1: the file position, on a socket a writev; F_DONTWAIT is
		 * RWF_NOWAIT. a's bit 0 picks glibc's LFS name, pwritev64v2. */
		struct iovec iov[16];
		int cnt = o->b < 1 ? 1 : o->b > 16 ? 16 : o->b;
		int rwf = o->f & F_DONTWAIT ? RWF_NOWAIT : 0;
		split(iov, cnt, p, o->n, (uint64_t)o->a);
		if (o->a & 1)
			ret = pwritev64v2(fd, iov, cnt, -1, rwf);
		else
			ret = pwritev2(fd, iov, cnt, -1, rwf);
		break;
	}
	case K_SENDMMSG: {
		struct mmsghdr mm[4];
		struct iovec iov[4];
		int cnt = o->b < 1 ? 1 : o->b > 4 ? 4 : o->b;
		split(iov, cnt, p, o->n, (uint64_t)o->a);
		memset(mm, 0, sizeof mm);
		for (int i = 0; i < cnt; i++) {
			mm[i].msg_hdr.msg_iov = &iov[i];
			mm[i].msg_hdr.msg_iovlen = 1;
		}
		ret = sendmmsg(fd, mm, (unsigned)cnt, fl);
		int e = errno;
		*acc = 0;
		for (int i = 0; i < ret; i++) {
			*acc += mm[i].msg_len;
			if (mm[i].msg_len != iov[i].iov_len) /* a short message ends the stream */
				break;
		}
		errno = e;
		return ret;
	}
	case K_SENDFILE:
	case K_SENDFILE64: {
		int m = memfd_create("dt", 0);
		if (m < 0 || write(m, p, (size_t)o->n) != o->n)
			_exit(91);
		if (o->kind == K_SENDFILE) {
			off_t off = 0;
			ret = sendfile(fd, m, &off, (size_t)o->n);
		} else {
			off64_t off = 0;
			ret = sendfile64(fd, m, &off, (size_t)o->n);
		}
		int e = errno;
		close(m);
		errno = e;
		break;
	}
	case K_SPLICE: {
		int pp[2];
		long n = o->n > 65536 ? 65536 : o->n;
		if (pipe(pp) < 0 || write(pp[1], p, (size_t)n) != n)
			_exit(92);
		ret = splice(pp[0], NULL, fd, NULL, (size_t)n, 0);
		int e = errno;
		close(pp[0]);
		close(pp[1]);
		errno = e;
		break;
	}
	case K_SPAWN: {
		/* a child shell writes the bytes on the inherited socket: a 0 system,
		 * 1 popen, 2 posix_spawn, 3 vfork+exec; the program waits for it.
		 * popen's pipe is the child's stdin ("w"): with "r" it was its
		 * stdout, so a socket on fd 1 was not the child's fd 1, and the
		 * bytes went into the pipe (the child exited 0 when it wrote before
		 * pclose closed the pipe, else died of SIGPIPE: 36 seeds of 34,000
		 * failed so, bare runs too) */
		char cmd[64];
		pid_t pid;
		int st = -1;
		snprintf(cmd, sizeof cmd, "printf %%s \"$DT_PAYLOAD\" >&%d", fd);
		setenv("DT_PAYLOAD", (char *)p, 1);
		if (o->a == 0) {
			st = system(cmd);
		} else if (o->a == 1) {
			FILE *f = popen(cmd, "w");
			st = f ? pclose(f) : -1;
		} else {
			char *av[] = { "sh", "-c", cmd, NULL };
			if (o->a == 2) {
				if (posix_spawn(&pid, "/bin/sh", NULL, NULL, av, environ) != 0)
					pid = -1;
			} else if ((pid = vfork()) == 0) {
				execve("/bin/sh", av, environ);
				_exit(127);
			}
			if (pid > 0)
				while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
					;
		}
		unsetenv("DT_PAYLOAD");
		ret = st == 0 ? 0 : -1;
		*acc = st == 0 ? o->n : -1; /* a failed shell: what it wrote is unknown */
		errno = 0;
		return ret;
	}
	case K_DPRINTF:
		ret = dprintf(fd, "%.*s", o->n, (char *)p);
		*acc = ret >= 0 ? ret : -1; /* stdio error: what went out is unknown */
		return ret;
	case K_STDIO: {
		/* a: 0 fdopen(dup)+fprintf+fflush+fclose; 1 fdopen+fprintf+fclose (closes the
		 * socket); 2 printf+fflush on stdout when the socket is fd 1, else as 0;
		 * 3 fdopen(dup)+fwrite+fclose */
		FILE *f;
		int e;
		if (o->a == 2 && fd == 1) {
			ret = printf("%.*s", o->n, (char *)p) == o->n && fflush(stdout) == 0 ? 0 : -1;
			*acc = ret == 0 ? o->n : -1;
			return ret;
		}
		f = fdopen(o->a == 1 ? fd : dup(fd), "w");
		if (!f) {
			*acc = 0;
			return -1;
		}
		/* a large fprintf writes directly and fflush then has nothing to say:
		 * the error is in fprintf's count and in ferror */
		if (o->a == 3)
			ret = fwrite(p, 1, (size_t)o->n, f) == (size_t)o->n ? 0 : -1;
		else
			ret = fprintf(f, "%.*s", o->n, (char *)p) == o->n ? 0 : -1;
		e = errno;
		if (ret == 0 && o->a != 1 && o->a != 3 && fflush(f) != 0)
			ret = -1, e = errno;
		if (ret == 0 && ferror(f))
			ret = -1;
		if (fclose(f) != 0 && ret == 0)
			ret = -1, e = errno;
		if (o->a == 1)
			forget_fd(fd);
		*acc = ret == 0 ? o->n : -1;
		errno = e;
		return ret;
	}
	}
	*acc = ret > 0 ? ret : 0;
	return ret;
}

static long do_wait(const struct dt_op *o, int fd)
{
	int ms = o->a;
	struct timespec ts = { 0, ms * 1000000L };
	switch (o->kind) {
	case K_POLL:
	case K_PPOLL: {
		struct pollfd p = { fd, POLLIN | POLLOUT, 0 };
		return o->kind == K_POLL ? poll(&p, 1, ms) : ppoll(&p, 1, &ts, NULL);
	}
	case K_SELECT:
	case K_PSELECT: {
		fd_set r, w;
		FD_ZERO(&r);
		FD_ZERO(&w);
		if (fd >= 0) {
			FD_SET(fd, &r);
			FD_SET(fd, &w);
		}
		if (o->kind == K_SELECT) {
			struct timeval tv = { 0, ms * 1000 };
			return select(fd + 1, &r, &w, NULL, &tv);
		}
		return pselect(fd + 1, &r, &w, NULL, &ts, NULL);
	}
	default: {
		int ep = epoll_create1(0), e;
		struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT }, out[2];
		long r;
		if (fd >= 0)
			epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
		r = o->b & 1 ? epoll_pwait(ep, out, 2, ms, NULL) : epoll_wait(ep, out, 2, ms);
		e = errno;
		close(ep);
		errno = e;
		return r;
	}
	}
}

static void run(int from, int to);

static char *self_ops, *self_dir, *self_ports;

/* Re-executes the program to go on with op NEXT: the state goes in argv, the
 * sockets and files stay open (none is close-on-exec, but a dup3'd one, which
 * is then gone, as for any program). SIGALRM is blocked over the exec, since an
 * armed interval timer survives it and the handler does not. */
static void reexec(int next)
{
	char st[256];
	sigset_t m;
	int n = snprintf(st, sizeof st, "%d:%d", next, (int)sig_armed);
	for (int c = 0; c < L.nconn; c++)
		n += snprintf(st + n, sizeof st - (size_t)n, ":%d,%ld", conn_fd[c], roff[c]);
	sigemptyset(&m);
	sigaddset(&m, SIGALRM);
	sigprocmask(SIG_BLOCK, &m, NULL);
	execl("/proc/self/exe", "dt_prog", self_ops, self_dir, self_ports, st, (char *)NULL);
	sigprocmask(SIG_UNBLOCK, &m, NULL);
}

/* The state reexec() passed; the op to start with. */
static int resume(const char *st)
{
	int next = 0, armed = 0, k;
	if (sscanf(st, "%d:%d%n", &next, &armed, &k) < 2)
		return -1;
	st += k;
	sig_armed = armed;
	for (int c = 0; c < L.nconn; c++) {
		if (sscanf(st, ":%d,%ld%n", &conn_fd[c], &roff[c], &k) < 2)
			return -1;
		st += k;
	}
	revalidate();
	return next;
}

static void end_process(int how)
{
	switch (how) {
	case E_RETURN:
		longjmp(main_return, 1);
	case E_EXIT:
		exit(0);
	case E_UEXIT:
		_exit(0);
	case E_CEXIT:
		_Exit(0);
	case E_QUICK:
		quick_exit(0);
	default:
		pthread_exit(NULL);
	}
}

struct targ {
	int from, to, t;
};

static void *thread_main(void *p)
{
	struct targ *a = p;
	for (int i = a->from; i < a->to; i++)
		if (L.op[i].t == a->t)
			run(i, i + 1);
	return NULL;
}

/* Runs ops [from, to). */
static void run(int from, int to)
{
	for (int i = from; i < to && i < L.nops; i++) {
		const struct dt_op *o = &L.op[i];
		int c = o->c < L.nconn ? o->c : 0, fd = conn_fd[c], sp0 = tls_sigpipe, bad = 0, e;
		int nb = is_nb(fd);
		long ret = 0, acc = 0;
		unsigned char *p = NULL;

		if (dt_is_send(o->kind)) {
			p = malloc((size_t)o->n + 1);
			dt_fill(p, c, o->t, o->id, o->n);
			p[o->n] = 0;
			if (o->f & F_DONTWAIT && o->kind != K_WRITE && o->kind != K_WRITEV)
				nb = 1;
			errno = 0;
			ret = do_send(o, fd, p, &acc);
			e = ret < 0 ? errno : 0;
			if (o->kind == K_STDIO || o->kind == K_DPRINTF || o->kind == K_SPAWN)
				revalidate();
			record(o, ret, e, acc, tls_sigpipe - sp0, nb, 0);
			if (acc != 0)
				expect(o, p, acc);
			free(p);
			continue;
		}
		errno = 0;
		switch (o->kind) {
		case K_READ:
		case K_PEEK: {
			unsigned char *b = malloc((size_t)o->n);
			/* b: 0 read (recv when the socket blocks), 1 readv (likewise),
			 * 2 recvfrom, 3 recvmsg, 4 recvmmsg; all MSG_DONTWAIT */
			struct iovec v = { b, (size_t)o->n };
			struct mmsghdr mm = { .msg_hdr = { .msg_iov = &v, .msg_iovlen = 1 } };
			if (o->kind == K_PEEK)
				ret = recv(fd, b, (size_t)o->n, MSG_PEEK | MSG_DONTWAIT);
			else if (o->b == 1 && nb)
				ret = readv(fd, &v, 1);
			else if (o->b == 2)
				ret = recvfrom(fd, b, (size_t)o->n, MSG_DONTWAIT, NULL, NULL);
			else if (o->b == 3)
				ret = recvmsg(fd, &mm.msg_hdr, MSG_DONTWAIT);
			else if (o->b == 4) {
				ret = recvmmsg(fd, &mm, 1, MSG_DONTWAIT, NULL);
				if (ret == 1)
					ret = mm.msg_len;
			} else if (nb)
				ret = read(fd, b, (size_t)o->n);
			else
				ret = recv(fd, b, (size_t)o->n, MSG_DONTWAIT);
			nb = 1;
			if (ret > 0) {
				bad = bad_reply(c, b, ret, roff[c]);
				if (o->kind == K_READ)
					roff[c] += ret;
			}
			free(b);
			break;
		}
		case K_POLL: case K_PPOLL: case K_SELECT: case K_PSELECT: case K_EPOLL:
			ret = do_wait(o, fd);
			break;
		case K_NODELAY:
		case K_CORK: {
			int v = o->a;
			ret = setsockopt(fd, IPPROTO_TCP, o->kind == K_NODELAY ? TCP_NODELAY : TCP_CORK,
					 &v, sizeof v);
			break;
		}
		case K_SHUT:
			ret = shutdown(fd, o->a == 0 ? SHUT_RD : o->a == 1 ? SHUT_WR : SHUT_RDWR);
			break;
		case K_NONBLOCK: {
			int fl = fcntl(fd, F_GETFL);
			ret = fl < 0 ? fl : fcntl(fd, F_SETFL, o->a ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
			break;
		}
		case K_DUP: {
			int nfd;
			switch (o->a) {
			case 0: nfd = dup(fd); break;
			case 1: nfd = dup2(fd, 100 + c); break;
			case 2: nfd = fd == 110 + c ? -2 : dup3(fd, 110 + c, 0); break;
			case 3: nfd = fcntl(fd, F_DUPFD, 50); break;
			default:
				forget_fd(1);
				nfd = dup2(fd, 1);
				break;
			}
			if (nfd == -2) { /* dup3 onto itself is EINVAL: keep it so */
				nfd = -1;
				errno = EINVAL;
			}
			ret = nfd >= 0 ? 0 : -1; /* the number itself differs by nothing */
			e = errno;
			if (nfd >= 0 && nfd != fd) {
				if (o->b)
					close(fd);
				conn_fd[c] = nfd;
			}
			errno = e;
			break;
		}
		case K_CLOSE:
			ret = close(fd);
			conn_fd[c] = -1;
			break;
		case K_CLOSERANGE:
			/* never below 5: 3 and 4 are the trace and the expectations */
			if (o->a == 0)
				ret = close_range((unsigned)fd, (unsigned)fd, 0);
			else
				ret = close_range(fd < 5 ? 5 : (unsigned)fd, ~0U, 0);
			e = errno;
			revalidate();
			errno = e;
			break;
		case K_CLOSEFROM:
			closefrom(fd < 5 ? 5 : fd);
			revalidate();
			break;
		case K_SLEEP:
			nap(o->n);
			break;
		case K_SIGTIMER: {
			struct itimerval it = { { 0, o->n }, { 0, o->n } };
			ret = setitimer(ITIMER_REAL, &it, NULL);
			sig_armed = o->n > 0;
			break;
		}
		case K_FORK: {
			int n = o->n, st = 0;
			pid_t pid = fork();
			if (pid == 0) {
				run(i + 1, i + 1 + n);
				end_process(o->a);
			}
			if (pid > 0) {
				while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
					;
				ret = WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
			} else {
				ret = -1;
			}
			e = errno;
			record(o, ret, ret < 0 ? e : 0, 0, 0, 0, 0);
			i += n;
			continue;
		}
		case K_THREADS: {
			int n = o->n;
			pthread_t th[3];
			struct targ a[3];
			cur_blk = o->a;
			for (int t = 1; t < 3; t++) {
				a[t] = (struct targ){ i + 1, i + 1 + n, t };
				pthread_create(&th[t], NULL, thread_main, &a[t]);
			}
			a[0] = (struct targ){ i + 1, i + 1 + n, 0 };
			thread_main(&a[0]);
			for (int t = 1; t < 3; t++)
				pthread_join(th[t], NULL);
			cur_blk = -1;
			record(o, 0, 0, 0, 0, 0, 0);
			i += n;
			continue;
		}
		case K_EXEC:
			record(o, 0, 0, 0, 0, 0, 0);
			reexec(i + 1);
			ret = -1; /* the exec failed */
			break;
		case K_END:
			record(o, 0, 0, 0, 0, 0, 0);
			end_process(o->a);
			break;
		default:
			break;
		}
		e = ret < 0 ? errno : 0;
		record(o, ret, e, 0, tls_sigpipe - sp0, nb, bad);
	}
}

static int connect_all(const char *ports)
{
	const char *s = ports;
	for (int c = 0; c < L.nconn; c++) {
		struct sockaddr_in a = { .sin_family = AF_INET };
		int fd, r;
		if (L.conn[c].on_stdout)
			close(1); /* the lowest free descriptor: socket() gets 1 */
		if (*s == 'A') { /* accept from the listener dt_run left on this fd */
			int lfd = atoi(s + 1);
			fd = accept(lfd, NULL, NULL);
			close(lfd);
			if (fd < 0) {
				perror("accept");
				return -1;
			}
			conn_fd[c] = fd;
			goto next;
		}
		fd = socket(AF_INET, SOCK_STREAM, 0);
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a.sin_port = htons((uint16_t)atoi(s));
		if (fd < 0)
			return -1;
		if (L.conn[c].beh == B_BACKLOG)
			fcntl(fd, F_SETFL, O_NONBLOCK);
		r = connect(fd, (struct sockaddr *)&a, sizeof a);
		if (r < 0 && !(L.conn[c].beh == B_BACKLOG && errno == EINPROGRESS)) {
			perror("connect");
			return -1;
		}
		conn_fd[c] = fd;
next:
		s = strchr(s, ',');
		if (!s && c + 1 < L.nconn)
			return -1;
		if (s)
			s++;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char path[4096];
	struct sigaction sa;

	if (argc == 3 && !strcmp(argv[1], "--gen")) {
		dt_generate(strtoull(argv[2], NULL, 0), &L);
		dt_print_list(stdout, &L);
		return 0;
	}
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: dt_prog --gen SEED | dt_prog OPSFILE RUNDIR PORT[,PORT...]\n");
		return 2;
	}
	if (dt_read_list(argv[1], &L) < 0)
		return 2;
	self_ops = argv[1];
	self_dir = argv[2];
	self_ports = argv[3];
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sigpipe;
	sigaction(SIGPIPE, &sa, NULL);
	sa.sa_handler = on_alarm; /* no SA_RESTART: interrupts blocking calls */
	sigaction(SIGALRM, &sa, NULL);
	if (argc == 5) { /* after an EXEC op */
		sigset_t m;
		int next;
		trace_fd = 3;
		exp_fd = 4;
		sigemptyset(&m);
		sigaddset(&m, SIGALRM);
		sigprocmask(SIG_UNBLOCK, &m, NULL);
		next = resume(argv[4]);
		if (next < 0)
			return 2;
		if (setjmp(main_return))
			return 0;
		run(next, L.nops);
		return 0;
	}
	snprintf(path, sizeof path, "%s/trace", argv[2]);
	trace_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0644);
	snprintf(path, sizeof path, "%s/exp", argv[2]);
	exp_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0644);
	if (trace_fd != 3 || exp_fd != 4) {
		fprintf(stderr, "dt_prog: trace/exp not on fds 3/4\n");
		return 2;
	}
	if (connect_all(argv[3]) < 0)
		return 3;
	if (setjmp(main_return))
		return 0;
	run(0, L.nops);
	return 0;
}
