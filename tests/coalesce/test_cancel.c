/*
 * test_cancel.c - a thread cancelled at a cancellation point where the
 * library flushes what it holds leaves no lock of the library held.
 *
 * Under a flush=1s rule, a thread writes "A" (held) on a connection, has a
 * cancel pending (pthread_cancel of itself), then calls
 *   system  system("true"): the library flushes before the shell starts
 *   read    recv(MSG_DONTWAIT): the library flushes before the read
 * and is cancelled there. The main thread then writes "B\n" on the same
 * connection: it must not hang on the socket's lock, and the peer reads
 * "AB\n". (libc's send is a cancellation point; the library's own sends
 * under the lock are raw system calls.)
 */
#include <pthread.h>

#include "../common/peer.h"

static int fd, how;

static void *victim(void *arg)
{
	char b;

	(void)arg;
	ct_send_str(fd, "A");
	pthread_cancel(pthread_self());
	if (how == 0)
		(void)!system("true");
	else
		(void)!recv(fd, &b, 1, MSG_DONTWAIT);
	return NULL; /* not reached: cancelled above */
}

static void run(int variant)
{
	struct ct_peer p;
	pthread_t t;
	void *res;

	how = variant;
	ct_peer_start(&p, "lines");
	fd = ct_connect(p.port);
	CHECK(pthread_create(&t, NULL, victim, NULL) == 0, "pthread_create");
	CHECK(pthread_join(t, &res) == 0, "pthread_join");
	CHECK(res == PTHREAD_CANCELED, "the thread was not cancelled");
	ct_send_str(fd, "B\n"); /* hangs if the cancelled thread kept the lock */
	ct_expect_line(p.rep, "AB\n", CT_WAIT_MS);
	close(fd);
	ct_say("a thread cancelled in the library's flush left its lock free");
	ct_peer_stop(&p);
}

static const struct ct_case cases[] = {
	{ "system", run, 0 },
	{ "read", run, 1 },
};

int main(int argc, char **argv)
{
	return ct_main(argc, argv, cases, CT_NCASES(cases));
}
