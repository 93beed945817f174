// SPDX-License-Identifier: MIT
/* The ordered worker pool (common/pool.c): jobs come back in submission
 * order whatever order they finish in, with their errors; jobs submitted
 * done pass without a worker; a cancel ends the threads and retires what
 * never ran as interrupted; one worker and many. */
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "pool.h"
#include "tap.h"

#define SLOTS 6

struct ctx {
	uint64_t job[SLOTS]; /* the job number in each slot */
	uint64_t result[SLOTS];
	atomic_uint ran;
	atomic_uint max_worker;
	atomic_bool gate; /* the job numbered 0 waits for it */
};

static void nap(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static struct kcore_error *run(void *arg, unsigned worker, size_t slot)
{
	struct ctx *c = arg;
	uint64_t k = c->job[slot];

	if (worker > atomic_load(&c->max_worker))
		atomic_store(&c->max_worker, worker);
	/* Early jobs finish last: out-of-order completion. */
	if (k == 0)
		while (!atomic_load(&c->gate))
			nap(100);
	nap((long)(k % 3 == 0 ? 2000 : 10));
	atomic_fetch_add(&c->ran, 1);
	c->result[slot] = k * k;
	if (k % 7 == 5)
		return kcore_error_create(KCORE_ERR_FORMAT, 0, NULL,
					  "job %llu fails",
					  (unsigned long long)k);
	return NULL;
}

/* n jobs through threads workers; every third submitted done (no run). */
static void ordered(unsigned threads, uint64_t n)
{
	struct ctx c = { 0 };
	struct kcore_pool *p = NULL;
	struct kcore_error *err;
	uint64_t next_submit = 0, next_retire = 0, ran_wanted = 0;
	bool in_order = true, errors_right = true, done_right = true;

	err = kcore_pool_create(threads, SLOTS, run, &c, &p);
	ok(!err && p, "%u worker(s): created", threads);
	if (err)
		return;
	while (next_retire < n) {
		struct kcore_error *jerr = NULL;
		bool wait = true;
		size_t slot;

		if (next_submit < n && !kcore_pool_full(p)) {
			bool pre = next_submit % 3 == 2;

			slot = kcore_pool_next(p);
			c.job[slot] = next_submit;
			c.result[slot] = pre ? 1 : 0;
			kcore_pool_submit(p, !pre);
			ran_wanted += !pre;
			if (++next_submit == SLOTS)
				atomic_store(&c.gate, true);
			wait = false; /* take what is ready, if anything */
		} else {
			atomic_store(&c.gate, true);
		}
		if (!kcore_pool_retire(p, wait, &slot, &jerr)) {
			if (!wait)
				continue;
			in_order = false;
			break;
		}
		in_order &= c.job[slot] == next_retire;
		if (next_retire % 3 == 2) {
			done_right &= !jerr && c.result[slot] == 1;
		} else {
			done_right &=
				c.result[slot] == next_retire * next_retire;
			errors_right &= (next_retire % 7 == 5) == !!jerr;
			if (jerr && jerr->code != KCORE_ERR_FORMAT)
				errors_right = false;
		}
		kcore_error_destroy(jerr);
		next_retire++;
	}
	ok(in_order, "%u worker(s): %llu jobs retired in submission order",
	   threads, (unsigned long long)n);
	ok(errors_right, "%u worker(s): each job's error with its job",
	   threads);
	ok(done_right, "%u worker(s): jobs submitted done are not run",
	   threads);
	is_int(atomic_load(&c.ran), ran_wanted, "every other job ran once");
	ok(kcore_pool_pending(p) == 0 && !kcore_pool_full(p),
	   "%u worker(s): nothing pending at the end", threads);
	ok(!kcore_pool_retire(p, true, &(size_t){ 0 },
			      &(struct kcore_error *){ NULL }),
	   "retire with nothing pending says so, without waiting");
	if (threads > 1)
		ok(atomic_load(&c.max_worker) < threads,
		   "worker numbers below %u", threads);
	kcore_pool_destroy(p);
}

static struct kcore_error *slow(void *arg, unsigned worker, size_t slot)
{
	struct ctx *c = arg;

	(void)worker;
	(void)slot;
	nap(20000);
	atomic_fetch_add(&c->ran, 1);
	return NULL;
}

static void cancel(unsigned threads)
{
	struct ctx c = { 0 };
	struct kcore_pool *p = NULL;
	struct kcore_error *err;
	unsigned interrupted = 0, fine = 0;
	size_t slot;

	err = kcore_pool_create(threads, SLOTS, slow, &c, &p);
	ok(!err, "cancel, %u worker(s): created", threads);
	if (err)
		return;
	for (int i = 0; i < SLOTS; i++)
		kcore_pool_submit(p, true);
	ok(kcore_pool_full(p), "all %d slots in use", SLOTS);
	kcore_pool_cancel(p);
	ok(atomic_load(&c.ran) < SLOTS,
	   "cancel, %u worker(s): not every job ran (%u did)", threads,
	   atomic_load(&c.ran));
	while (kcore_pool_retire(p, true, &slot, &err)) {
		if (err && err->code == KCORE_ERR_INTERRUPTED)
			interrupted++;
		else if (!err)
			fine++;
		kcore_error_destroy(err);
	}
	is_int(fine, atomic_load(&c.ran), "the jobs that ran come back fine");
	is_int(interrupted + fine, SLOTS,
	       "the others come back interrupted, no wait");
	kcore_pool_destroy(p);
}

int main(void)
{
	struct kcore_pool *p = NULL;
	struct ctx c = { 0 };
	struct kcore_error *err;

	ordered(1, 50);
	ordered(4, 200);
	cancel(1);
	cancel(3);
	/* Destroyed with jobs queued and errors not taken: no hang, no
	 * leak (the sanitizer builds see). */
	err = kcore_pool_create(2, SLOTS, run, &c, &p);
	ok(!err, "created for destroy");
	if (!err) {
		atomic_store(&c.gate, true);
		for (int i = 0; i < SLOTS; i++) {
			c.job[kcore_pool_next(p)] = 5;
			kcore_pool_submit(p, true);
		}
		kcore_pool_destroy(p);
		ok(1, "destroyed with jobs pending");
	}
	err = kcore_pool_create(0, SLOTS, run, &c, &p);
	ok(err && err->code == KCORE_ERR_INVALID, "no threads is refused");
	kcore_error_destroy(err);
	kcore_pool_destroy(NULL);
	return tap_done();
}
