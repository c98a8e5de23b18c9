/*
 * harness.h - what every C test program shares (tests/common/): the
 * checks, the one FAIL and SKIP format, the timeout, time, and a seeded
 * generator with a hash. The suites' programs include one of the headers
 * built on it:
 *
 *   peer.h   a peer that reports what it received over a channel the
 *            library leaves alone (coalesce, auto, musl; stress via sink.h)
 *   sink.h   peer.h plus a sink for thousands of connections (stress)
 *   echo.h   an echo peer on any address, either side of the connection,
 *            and the write-write-read round trip (integration)
 *
 * Every peer is this same executable re-executed without LD_PRELOAD
 * (ct_exec_self), so only the test's own side runs with the library.
 *
 * A program's verdict is its exit status, which tests/lib.sh's judge()
 * reads: 0 passed; 1 failed, after "FAIL prog variant (file:line): why
 * [cond; errno E]" on stderr; 77 skipped, after "SKIP prog variant: why"
 * on stdout (ct_skip: what the check needs does not exist here). "variant"
 * is the case argv[1] named (ct_variant), left out when there is none.
 *
 * Everything is static inline: each test includes it and uses some.
 */
#ifndef NF_TEST_HARNESS_H
#define NF_TEST_HARNESS_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nf_fnv.h"

#define CT_TIMEOUT_S (30 * ct_wait_scale())       /* no test process lives longer */
#define CT_PEER_LIFETIME_S (60 * ct_wait_scale()) /* nor any peer */
#define CT_ROUNDS 11           /* timed rounds per measurement */
#define CT_FAST_MS 5.0         /* a fast round trip: median below this */
/* Rounds timed to show a stall: a stalled round lasts at least the delayed
 * ACK's 40 ms (noise only adds), and at most the first is quick-ACKed, so
 * the median of 5 is a stall iff 3 rounds are; a fast connection would
 * need 3 of 5 rounds slowed 30 ms to pass for one. */
#define CT_STALL_ROUNDS 5

/* What the bounds on waits for an event that must come (CT_TIMEOUT_S,
 * CT_PEER_LIFETIME_S, peer.h's CT_WAIT_MS) are multiplied by:
 * NFTEST_WAIT_SCALE, a whole number from 1 to 100 (else 1), for a run a
 * busy host may keep off the CPU for seconds (tests/sanitize/run.sh's
 * integrity checks). No time a test judges is scaled. */
static inline int ct_wait_scale(void)
{
	const char *s = getenv("NFTEST_WAIT_SCALE");
	int n = s ? atoi(s) : 1;

	return n >= 1 && n <= 100 ? n : 1;
}

static const char *ct_prog = "test";
static const char *ct_variant = "";

static inline const char *ct_errname(int e)
{
#ifdef __GLIBC__
	const char *n = e ? strerrorname_np(e) : "0";
#else
	const char *n = e ? strerror(e) : "0"; /* no strerrorname_np in musl */
#endif

	return n ? n : "?";
}

/* "prog variant", or "prog" when no variant was named. */
static inline void ct_print_name(FILE *f)
{
	fprintf(f, "%s%s%s", ct_prog, *ct_variant ? " " : "", ct_variant);
}

static inline void ct_fail(const char *file, int line, const char *cond,
			   const char *fmt, ...) __attribute__((format(printf, 4, 5), noreturn));
static inline void ct_fail(const char *file, int line, const char *cond,
			   const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	fputs("FAIL ", stderr);
	ct_print_name(stderr);
	fprintf(stderr, " (%s:%d): ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " [%s; errno %s]\n", cond, ct_errname(e));
	fflush(stdout);
	syscall(SYS_exit_group, 1); /* not exit(): the library would drain first, for seconds */
	abort();
}

/* Prints "SKIP prog variant: why" and exits 77 (judge(): skipped): what
 * the variant checks does not exist here (musl: close_range). */
static inline void ct_skip(const char *why) __attribute__((noreturn));
static inline void ct_skip(const char *why)
{
	fputs("SKIP ", stdout);
	ct_print_name(stdout);
	printf(": %s\n", why);
	fflush(stdout);
	syscall(SYS_exit_group, 77);
	abort();
}

/* Prints "FAIL prog variant (file:line): message" on stderr and exits 1. */
#define CHECK(cond, ...) CHECK_AT(__FILE__, __LINE__, cond, __VA_ARGS__)

/* CHECK, blaming the given place (a helper's caller). */
#define CHECK_AT(file, line, cond, ...)                                         \
	do {                                                                    \
		if (!(cond))                                                    \
			ct_fail((file), (line), #cond, __VA_ARGS__);            \
	} while (0)

/* expr must fail with -1 and exactly errno err. */
#define CHECK_ERRNO(expr, err)                                                  \
	do {                                                                    \
		long r_;                                                        \
		errno = 0;                                                      \
		r_ = (long)(expr);                                              \
		CHECK(r_ == -1 && errno == (err), "%s returned %ld, want -1 %s", \
		      #expr, r_, ct_errname(err));                              \
	} while (0)

/* expr must succeed (not -1) and leave errno as it was (EDOM here). */
#define CHECK_OK(expr)                                                          \
	({                                                                      \
		long r_;                                                        \
		errno = EDOM;                                                   \
		r_ = (long)(expr);                                              \
		CHECK(r_ != -1, "%s failed", #expr);                            \
		CHECK(errno == EDOM, "%s succeeded but changed errno", #expr);  \
		r_;                                                             \
	})

/* Prints "prog variant: message" on stdout, at once. */
static inline void ct_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void ct_say(const char *fmt, ...)
{
	va_list ap;

	ct_print_name(stdout);
	fputs(": ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* ---- the timeout and the peers' start ------------------------------------- */

static inline void ct_on_alarm(int sig)
{
	static const char msg[] = "FAIL timeout: the test took too long\n";

	(void)sig;
	(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
	syscall(SYS_exit_group, 1); /* not _exit(): the library could block it */
}

/* Names the program after argv[0]'s last part, for the messages. */
static inline void ct_set_prog(const char *argv0)
{
	const char *slash = strrchr(argv0, '/');

	ct_prog = slash ? slash + 1 : argv0;
}

/* The test itself (not a peer): SIGPIPE ignored, and no longer than
 * CT_TIMEOUT_S. */
static inline void ct_arm_timeout(void)
{
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, ct_on_alarm);
	alarm(CT_TIMEOUT_S);
}

/* In a child: this program again, without the library, with keep_fd (if
 * not -1) left open across the exec (a helper's end of a channel). Never
 * returns. */
static inline void ct_exec_self(char *const *args, int keep_fd) __attribute__((noreturn));
static inline void ct_exec_self(char *const *args, int keep_fd)
{
	if (keep_fd >= 0)
		fcntl(keep_fd, F_SETFD, 0);
	unsetenv("LD_PRELOAD");
	execv("/proc/self/exe", args);
	_exit(127);
}

/* ---- time ----------------------------------------------------------------- */

static inline double ct_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Sleeps without any call the library intercepts. */
static inline void ct_sleep_ms(double ms)
{
	long long ns = (long long)(ms * 1e6);
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000), .tv_nsec = (long)(ns % 1000000000) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The calling thread's id, for ct_wait_blocked. */
static inline pid_t ct_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* Waits until thread *TID of this process (0 until that thread stores its
 * ct_tid(), right before the call to wait on) sleeps (state S or D: the
 * call is blocked, in the kernel or on the library's lock) or has ended;
 * every 1 ms, for CT_TIMEOUT_S at most. A fixed sleep instead is a race a
 * loaded host loses. */
static inline void ct_wait_blocked(const volatile pid_t *tid)
{
	char path[64], b[512];
	const char *p;

	for (long i = 0; i < CT_TIMEOUT_S * 1000L; i++, ct_sleep_ms(1)) {
		int fd;
		ssize_t n;

		if (!*tid)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)*tid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			return; /* ended */
		n = read(fd, b, sizeof(b) - 1);
		close(fd);
		b[n > 0 ? n : 0] = '\0';
		if ((p = strrchr(b, ')')) && p[1] == ' ' && (p[2] == 'S' || p[2] == 'D'))
			return;
	}
}

static inline int ct_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Sorts t[0..n) and returns its median. */
static inline double ct_median(double *t, int n)
{
	qsort(t, (size_t)n, sizeof(t[0]), ct_cmp_double);
	return t[n / 2];
}

/* Reports the median of n rounds and checks it is under limit_ms. */
static inline void ct_expect_median(double *t, int n, double limit_ms, const char *what)
{
	double m = ct_median(t, n);

	ct_say("%s: median %.3f ms over %d rounds (max %.3f; want < %.1f)",
	       what, m, n, t[n - 1], limit_ms);
	CHECK(m < limit_ms, "%s: median %.3f ms, want < %.1f ms", what, m, limit_ms);
}

/* ---- data: a seeded generator and a hash ------------------------------------ */

/* splitmix64: a small, good, seedable generator. */
static inline uint64_t ct_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A size in 1..max, log-uniform: as many 1-8 byte writes as 8-64 KiB ones. */
static inline size_t ct_rand_size(uint64_t *s, size_t max)
{
	unsigned bits = 0;
	size_t v;

	while (((size_t)1 << (bits + 1)) <= max)
		bits++;
	v = 1 + (size_t)(ct_rand(s) % ((size_t)1 << (ct_rand(s) % (bits + 1))));
	return v < max ? v : max;
}

static inline void ct_fill(uint64_t *s, void *buf, size_t n)
{
	unsigned char *p = buf;

	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)ct_rand(s);
}

/* FNV-1a 64 of p[0..n), continued from h: the project's one (nf_fnv.h). */
#define CT_FNV_INIT NF_FNV_INIT
#define ct_fnv nf_fnv

#endif
