/* SPDX-License-Identifier: MIT */
/*
 * The ordered worker pool: the one ring of jobs that the dump pipeline
 * (dump/dump.c) and the compressed stream writer
 * (stream/stream-writer-jobs.c) run their blocks and frames through.
 * Jobs are numbered in the order they are submitted and job k lives in
 * slot k % slots; worker threads run them in any order, and the owner
 * takes them back in submission order.  The pool owns the order and the
 * threads, not the jobs: what a slot holds (buffers, results) is the
 * owner's, indexed by slot.  One thread (the owner's) submits and
 * retires.
 */
#ifndef KCOREDUMP_POOL_H
#define KCOREDUMP_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "kcoredump/error.h"

struct kcore_pool;

/* Run the job in slot on worker thread number worker (0 .. threads - 1,
 * for per-thread state); its error comes back when it is retired. */
typedef struct kcore_error *(*kcore_pool_run_fn)(void *arg, unsigned worker,
						 size_t slot);

/* Start threads (at least 1) workers over slots (at least 1) slots. */
struct kcore_error *kcore_pool_create(unsigned threads, size_t slots,
				      kcore_pool_run_fn run, void *arg,
				      struct kcore_pool **ret);
/* Cancel, then free; accepts NULL.  Errors not retired are freed. */
void kcore_pool_destroy(struct kcore_pool *p);

/* Jobs submitted and not yet retired. */
size_t kcore_pool_pending(const struct kcore_pool *p);
/* Whether every slot holds a job not yet retired: retire one first. */
bool kcore_pool_full(const struct kcore_pool *p);
/* The slot the next submitted job goes in (the pool is not full). */
size_t kcore_pool_next(const struct kcore_pool *p);
/* The slot of the newest job not yet retired (there is one). */
size_t kcore_pool_newest(const struct kcore_pool *p);

/*
 * Hand over the job filled in kcore_pool_next()'s slot: to a worker, or
 * (run false) as already done, to be retired in its turn without one.
 */
void kcore_pool_submit(struct kcore_pool *p, bool run);

/*
 * Take back the oldest job once it is done: true, its slot in *ret_slot
 * (free for the next submission from now on) and its run's error in
 * *ret_err (NULL on success; the caller's to free).  false when no job is
 * pending or, without wait, the oldest one is not done yet.
 */
bool kcore_pool_retire(struct kcore_pool *p, bool wait, size_t *ret_slot,
		       struct kcore_error **ret_err);

/*
 * Stop the workers: the jobs they are running finish, the others are
 * never run and are retired with a KCORE_ERR_INTERRUPTED error.  Returns
 * once every thread has ended; nothing may be submitted after it.
 */
void kcore_pool_cancel(struct kcore_pool *p);

#endif
