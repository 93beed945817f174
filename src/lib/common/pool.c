// SPDX-License-Identifier: MIT
/*
 * The ordered worker pool (pool.h).  One lock guards the counters and
 * the slots' states; the workers take jobs in submission order (a job
 * submitted as done is passed over, and may even be retired before any
 * worker reaches it), run them without the lock, and wake the owner only
 * when it waits for one.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "pool.h"

struct pool_slot {
	struct kcore_error *err;
	bool done;
};

struct pool_thread {
	struct kcore_pool *p;
	pthread_t thread;
	unsigned index;
};

struct kcore_pool {
	pthread_mutex_t lock;
	pthread_cond_t work_cv; /* a job was submitted, or stop */
	pthread_cond_t done_cv; /* a job the owner waits for is done */
	kcore_pool_run_fn run;
	void *arg;
	struct pool_slot *slots;
	size_t nslots;
	/* Job numbers: submitted by the owner, taken by a worker, retired
	 * by the owner (taken may fall behind retired: see worker()). */
	uint64_t submitted, taken, retired;
	bool stop;
	bool owner_waits;
	struct pool_thread *threads;
	unsigned nthreads; /* started */
};

static void *worker(void *arg)
{
	struct pool_thread *t = arg;
	struct kcore_pool *p = t->p;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct pool_slot *s;
		struct kcore_error *err;
		size_t slot;

		while (!p->stop && p->taken == p->submitted)
			pthread_cond_wait(&p->work_cv, &p->lock);
		if (p->stop)
			break;
		/* Jobs submitted as done may be retired before a worker
		 * passes them: never look behind retired, those slots are
		 * being refilled. */
		if (p->taken < p->retired)
			p->taken = p->retired;
		if (p->taken == p->submitted)
			continue;
		slot = (size_t)(p->taken++ % p->nslots);
		s = &p->slots[slot];
		if (s->done)
			continue;
		pthread_mutex_unlock(&p->lock);
		err = p->run(p->arg, t->index, slot);
		pthread_mutex_lock(&p->lock);
		s->err = err;
		s->done = true;
		if (p->owner_waits)
			pthread_cond_signal(&p->done_cv);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct kcore_error *kcore_pool_create(unsigned threads, size_t slots,
				      kcore_pool_run_fn run, void *arg,
				      struct kcore_pool **ret)
{
	struct kcore_pool *p;
	int r;

	if (!threads || !slots || !run)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "a worker pool needs threads, "
					  "slots and a job function");
	p = calloc(1, sizeof(*p));
	if (!p)
		return &kcore_error_nomem;
	p->slots = calloc(slots, sizeof(*p->slots));
	p->threads = calloc(threads, sizeof(*p->threads));
	if (!p->slots || !p->threads) {
		free(p->slots);
		free(p->threads);
		free(p);
		return &kcore_error_nomem;
	}
	p->nslots = slots;
	p->run = run;
	p->arg = arg;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work_cv, NULL);
	pthread_cond_init(&p->done_cv, NULL);
	for (unsigned i = 0; i < threads; i++) {
		p->threads[i].p = p;
		p->threads[i].index = i;
		r = pthread_create(&p->threads[i].thread, NULL, worker,
				   &p->threads[i]);
		if (r) {
			kcore_pool_destroy(p);
			return kcore_error_create(KCORE_ERR_OS, r, NULL,
						  "cannot start worker "
						  "threads");
		}
		p->nthreads++;
	}
	*ret = p;
	return NULL;
}

size_t kcore_pool_pending(const struct kcore_pool *p)
{
	return (size_t)(p->submitted - p->retired);
}

bool kcore_pool_full(const struct kcore_pool *p)
{
	return p->submitted - p->retired == p->nslots;
}

size_t kcore_pool_next(const struct kcore_pool *p)
{
	return (size_t)(p->submitted % p->nslots);
}

size_t kcore_pool_newest(const struct kcore_pool *p)
{
	return (size_t)((p->submitted - 1) % p->nslots);
}

void kcore_pool_submit(struct kcore_pool *p, bool run)
{
	struct pool_slot *s = &p->slots[p->submitted % p->nslots];

	pthread_mutex_lock(&p->lock);
	s->err = NULL;
	s->done = !run;
	p->submitted++;
	/* A job already done needs no worker: one woken for a later job
	 * passes it. */
	if (run)
		pthread_cond_signal(&p->work_cv);
	pthread_mutex_unlock(&p->lock);
}

bool kcore_pool_retire(struct kcore_pool *p, bool wait, size_t *ret_slot,
		       struct kcore_error **ret_err)
{
	size_t slot = (size_t)(p->retired % p->nslots);
	struct pool_slot *s = &p->slots[slot];
	bool done;

	if (p->retired == p->submitted)
		return false;
	pthread_mutex_lock(&p->lock);
	while (!s->done && wait) {
		p->owner_waits = true;
		pthread_cond_wait(&p->done_cv, &p->lock);
	}
	p->owner_waits = false;
	done = s->done;
	if (done)
		p->retired++; /* the workers read it */
	pthread_mutex_unlock(&p->lock);
	if (!done)
		return false;
	*ret_slot = slot;
	*ret_err = s->err;
	s->err = NULL;
	return true;
}

void kcore_pool_cancel(struct kcore_pool *p)
{
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work_cv);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i].thread, NULL);
	p->nthreads = 0;
	/* Alone now: what no worker ran is done, as cancelled. */
	for (uint64_t k = p->retired; k < p->submitted; k++) {
		struct pool_slot *s = &p->slots[k % p->nslots];

		if (s->done)
			continue;
		s->done = true;
		s->err = kcore_error_create(KCORE_ERR_INTERRUPTED, 0, NULL,
					    "cancelled before it ran");
	}
}

void kcore_pool_destroy(struct kcore_pool *p)
{
	if (!p)
		return;
	kcore_pool_cancel(p);
	for (uint64_t k = p->retired; k < p->submitted; k++)
		kcore_error_destroy(p->slots[k % p->nslots].err);
	pthread_cond_destroy(&p->done_cv);
	pthread_cond_destroy(&p->work_cv);
	pthread_mutex_destroy(&p->lock);
	free(p->slots);
	free(p->threads);
	free(p);
}
