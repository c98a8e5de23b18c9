/*
 * watch_capwork.c - the rings of namespaces' captures opened and closed
 * off watch's loop, by a thread of their own (watch_int.h). Opening a
 * packet ring (PACKET_RX_RING) and closing one each wait in the kernel
 * for an RCU grace period (synchronize_net): 20 ms and more apiece on a
 * busy host. With namespaces made and removed by the dozen a second, a
 * loop doing that itself read no ring for half a second at a time, and
 * judged a connection's first stall after its program had ended: its
 * holder could not be named any more.
 *
 * The thread does only this: it enters the namespace through a
 * descriptor of the job's own (setns moves the calling thread only; it
 * need not come back, as each job enters its own), opens the ring and
 * hands it back; it closes the rings it is given. It shares nothing
 * with the loop but the two lists below, under their lock; the loop
 * adopts the rings opened (watch_cap.c) at its next tick.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "watch_int.h"

/* A ring to open in a namespace (nsfd >= 0), or one to close. */
struct job {
	struct job *next;
	const void *owner;       /* who asked; NULL once it no longer wants it */
	int nsfd;                /* the namespace, the job's own descriptor; -1: a close */
	unsigned kib, retire_ms;
	unsigned queue_kib;      /* an open of a queue of this size, not a ring */
	struct nf_ring *ring;    /* the ring to close; an open's result (NULL: it failed) */
	int rc;                  /* an open's: 0, or -errno */
	char err[NF_RING_ERR_MAX];
};

struct nf_watch_capwork {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *todo, **todo_end; /* the opens, in the order asked */
	struct job *closes;           /* the closes: done when no open waits */
	struct job *done;             /* the opens done, not yet taken */
	int stop;
	const char *ifname;
};

static void job_free(struct job *j)
{
	if (j->nsfd >= 0)
		close(j->nsfd);
	nf_ring_close(j->ring);
	free(j);
}

/* An open, made: inside its namespace, the ring (or the queue). */
static void open_in(const struct nf_watch_capwork *cw, struct job *j)
{
	if (setns(j->nsfd, CLONE_NEWNET)) {
		j->rc = -errno;
		snprintf(j->err, sizeof(j->err), "setns: %s", strerror(errno));
	} else if (!(j->ring = j->queue_kib ? nf_ring_open_queue(cw->ifname, j->queue_kib, j->err)
					    : nf_ring_open(cw->ifname, j->kib, j->retire_ms, j->err))) {
		j->rc = -errno;
	}
	close(j->nsfd);
	j->nsfd = -1;
}

/* The next job to do (the lock held), NULL at the stop. An open no one
 * wants any more is dropped here. */
static struct job *next_job(struct nf_watch_capwork *cw)
{
	struct job *j;

	for (;;) {
		while (!cw->todo && !cw->closes && !cw->stop)
			pthread_cond_wait(&cw->cond, &cw->lock);
		if (cw->stop)
			return NULL;
		if (!cw->todo) { /* a new namespace's capture first: a close can wait */
			j = cw->closes;
			cw->closes = j->next;
			return j;
		}
		j = cw->todo;
		if (!(cw->todo = j->next))
			cw->todo_end = &cw->todo;
		if (j->owner)
			return j;
		job_free(j);
	}
}

static void *work(void *arg)
{
	struct nf_watch_capwork *cw = arg;
	struct job *j;

	pthread_mutex_lock(&cw->lock);
	while ((j = next_job(cw)) != NULL) {
		pthread_mutex_unlock(&cw->lock);
		if (j->nsfd < 0) {
			job_free(j); /* a close: the grace periods waited here */
			pthread_mutex_lock(&cw->lock);
			continue;
		}
		open_in(cw, j);
		pthread_mutex_lock(&cw->lock);
		if (!j->owner) { /* its namespace went while it opened */
			pthread_mutex_unlock(&cw->lock);
			job_free(j);
			pthread_mutex_lock(&cw->lock);
			continue;
		}
		j->next = cw->done;
		cw->done = j;
	}
	pthread_mutex_unlock(&cw->lock);
	return NULL;
}

int nf_watch_capwork_start(struct nf_watch *w)
{
	struct nf_watch_capwork *cw = calloc(1, sizeof(*cw));
	sigset_t all, was;
	int rc;

	if (!cw)
		return -ENOMEM;
	pthread_mutex_init(&cw->lock, NULL);
	pthread_cond_init(&cw->cond, NULL);
	cw->todo_end = &cw->todo;
	cw->ifname = w->ifname;
	sigfillset(&all); /* SIGINT and SIGTERM are the loop's: the thread blocks them all */
	pthread_sigmask(SIG_SETMASK, &all, &was);
	rc = pthread_create(&cw->thread, NULL, work, cw);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	if (rc) {
		free(cw);
		return -rc;
	}
	w->capwork = cw;
	return 0;
}

/* Queues j (its owner set); 0, or -1 with no thread (j freed). */
static int put(struct nf_watch *w, struct job *j)
{
	struct nf_watch_capwork *cw = w->capwork;

	if (!cw) {
		job_free(j);
		return -1;
	}
	pthread_mutex_lock(&cw->lock);
	if (j->nsfd < 0) {
		j->next = cw->closes;
		cw->closes = j;
	} else {
		j->next = NULL;
		*cw->todo_end = j;
		cw->todo_end = &j->next;
	}
	pthread_cond_signal(&cw->cond);
	pthread_mutex_unlock(&cw->lock);
	return 0;
}

int nf_watch_capwork_open(struct nf_watch *w, const void *owner, int nsfd, unsigned kib,
			  unsigned retire_ms, unsigned queue_kib)
{
	struct job *j;
	int fd;

	if (!w->capwork)
		return -ENOSYS;
	if (!(j = calloc(1, sizeof(*j))))
		return -ENOMEM;
	if ((fd = dup(nsfd)) < 0) {
		free(j);
		return -errno;
	}
	j->owner = owner;
	j->nsfd = fd;
	j->kib = kib;
	j->retire_ms = retire_ms;
	j->queue_kib = queue_kib;
	return put(w, j) ? -ENOSYS : 0;
}

void nf_watch_capwork_cancel(struct nf_watch *w, const void *owner)
{
	struct nf_watch_capwork *cw = w->capwork;

	if (!cw)
		return;
	pthread_mutex_lock(&cw->lock);
	for (struct job *j = cw->todo; j; j = j->next)
		if (j->owner == owner)
			j->owner = NULL;
	for (struct job *j = cw->done; j; j = j->next)
		if (j->owner == owner)
			j->owner = NULL;
	pthread_mutex_unlock(&cw->lock);
}

int nf_watch_capwork_done(struct nf_watch *w, const void **owner, struct nf_ring **ring,
			  unsigned *kib, char err[NF_RING_ERR_MAX])
{
	struct nf_watch_capwork *cw = w->capwork;
	struct job *j;
	int rc;

	for (;;) {
		if (!cw)
			return 0;
		pthread_mutex_lock(&cw->lock);
		if ((j = cw->done) != NULL)
			cw->done = j->next;
		pthread_mutex_unlock(&cw->lock);
		if (!j)
			return 0;
		if (j->owner)
			break;
		nf_watch_capwork_close(w, j->ring); /* a namespace gone since */
		j->ring = NULL;
		job_free(j);
	}
	*owner = j->owner;
	*ring = j->ring;
	*kib = j->kib;
	snprintf(err, NF_RING_ERR_MAX, "%s", j->err);
	rc = j->ring ? 1 : j->rc < 0 ? j->rc : -EIO;
	j->ring = NULL;
	job_free(j);
	return rc;
}

void nf_watch_capwork_close(struct nf_watch *w, struct nf_ring *r)
{
	struct job *j;

	if (!r)
		return;
	if (!w->capwork || !(j = calloc(1, sizeof(*j)))) {
		nf_ring_close(r);
		return;
	}
	j->nsfd = -1;
	j->ring = r;
	j->owner = w;
	put(w, j);
}

void nf_watch_capwork_stop(struct nf_watch *w)
{
	struct nf_watch_capwork *cw = w->capwork;
	struct job *j;

	if (!cw)
		return;
	pthread_mutex_lock(&cw->lock);
	cw->stop = 1;
	pthread_cond_signal(&cw->cond);
	pthread_mutex_unlock(&cw->lock);
	pthread_join(cw->thread, NULL);
	while ((j = cw->todo) != NULL) { /* the opens dropped */
		cw->todo = j->next;
		job_free(j);
	}
	while ((j = cw->closes) != NULL) { /* the closes left done here */
		cw->closes = j->next;
		job_free(j);
	}
	while ((j = cw->done) != NULL) {
		cw->done = j->next;
		job_free(j);
	}
	pthread_cond_destroy(&cw->cond);
	pthread_mutex_destroy(&cw->lock);
	free(cw);
	w->capwork = NULL;
}
