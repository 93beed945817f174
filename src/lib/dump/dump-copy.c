// SPDX-License-Identifier: MIT
/*
 * The copy path (dump.c says when it is taken): the planned segments
 * copied on the calling thread in small blocks, with the pipeline's reads,
 * zero pages, digests, holes and accounting, so the same bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "dump-internal.h"
#include "source-impl.h"

/* The copy path's block: cp's buffer, well inside a core's L2 cache. */
#define COPY_CHUNK (128u << 10)
/* The copy path's blocks when hashed: the file's SHA-256 may lag this
 * many behind the copy. */
#define COPY_SLOTS 16
/* A block's XXH3-128 digests go to the hashing thread while it has at
 * most this many runs to hash (it would soon wait for bytes); behind
 * that, this thread computes them itself. */
#define DIGESTS_AHEAD 2

/*
 * Taken with --hash none, and with the default XXH3-128 block digests:
 * they cost a fraction of the copy, so they need no workers: the file's
 * SHA-256 runs on its own thread beside this one (two threads for two
 * CPUs, and blocks small enough to stay in the caches until the hashing
 * thread takes them), and a block's digests are computed by whichever of
 * the two would otherwise wait (DIGESTS_AHEAD).  SHA-256 block digests (--hash
 * sha256) cost as much as the file's: the pipeline's workers spread them over
 * the CPUs.  KCOREDUMP_COPY_PATH=1 takes it then too, =0 never.
 */
bool kcore_dump_use_copy_path(const struct dump *d)
{
	const char *env = getenv("KCOREDUMP_COPY_PATH");

	if (env && !strcmp(env, "0"))
		return false;
	if (!d->opts->no_hash && d->opts->block_hash != KCORE_BLOCK_HASH_XXH3 &&
	    !(env && !strcmp(env, "1")))
		return false;
	return d->w->in_place && !d->ops->encode &&
	       (d->src->info.is_regular || d->src->reads_like_file) &&
	       !d->share_buf && !d->smear;
}

/* Its blocks, allocated only when it is taken: one of COPY_CHUNK; or,
 * hashed, COPY_SLOTS of one hash block (the unit of the digests), used in
 * turn so that the file's SHA-256 can lag behind the copy. */
static struct kcore_error *copy_setup(struct dump *d)
{
	uint64_t len = kcore_round_up(
		d->opts->no_hash ? COPY_CHUNK : KCORE_HASH_BLOCK, d->page);
	uint64_t pages = len / d->page;

	d->copy_chunk = len;
	d->ncopy = d->fh ? COPY_SLOTS : 1;
	d->copy = calloc(d->ncopy, sizeof(*d->copy));
	if (!d->copy)
		return &kcore_error_nomem;
	for (size_t i = 0; i < d->ncopy; i++) {
		if (!kcore_dump_job_alloc(&d->copy[i], 0,
					  kcore_round_up(len, KCORE_HASH_BLOCK),
					  pages, 1))
			return &kcore_error_nomem;
		d->copy[i].dump = d; /* for digest_task() */
	}
	return NULL;
}

/* The hashing thread's part of a block: its digests. */
static void digest_task(void *arg)
{
	struct job *j = arg;

	kcore_dump_digest_job(j->dump, j);
}

/* Job j back from the hashing thread, its digests (wherever computed) to
 * the segment hashers: in the order of the blocks, as jobs are reused. */
static struct kcore_error *copy_retire(struct dump *d, struct job *j)
{
	kcore_dump_job_unhashed(d, j);
	if (!j->digests_due)
		return NULL;
	j->digests_due = false;
	return kcore_dump_add_hashes(d, j);
}

/* Its blocks back from the hashing thread, oldest first, then freed. */
static struct kcore_error *copy_teardown(struct dump *d,
					 struct kcore_error *err)
{
	for (size_t i = 0; d->copy && i < d->ncopy; i++) {
		struct job *j = &d->copy[(d->copy_next + i) % d->ncopy];

		if (!err) {
			err = copy_retire(d, j);
		} else {
			j->digests_due = false; /* nothing more is added */
			kcore_dump_job_unhashed(d, j);
		}
	}
	for (size_t i = 0; d->copy && i < d->ncopy; i++)
		kcore_dump_job_free(&d->copy[i]);
	free(d->copy);
	d->copy = NULL;
	return err;
}

/*
 * Job j's bytes [at, at + n) read, their zero pages found, written.  A
 * piece of COPY_CHUNK is still in the caches when it is written; a whole
 * hash block read first was not (a live process's 2 GiB to ext4: the
 * write's copy took twice the system time).
 */
static struct kcore_error *copy_piece(struct dump *d, struct job *j,
				      uint64_t at, uint64_t n)
{
	struct job piece = *j;
	uint64_t pg = at / d->page;
	struct kcore_error *err;

	piece.b.off = j->b.off + at;
	piece.b.len = n;
	piece.b.buf = j->b.buf + at;
	piece.b.pages = (n + d->page - 1) / d->page;
	piece.b.zero = j->b.zero + pg;
	piece.b.hole = j->b.hole + pg;
	if (j->b.bad)
		piece.b.bad = j->b.bad + pg;
	kcore_dump_fill_job(d, &piece);
	d->res->stats.bytes_done += n;
	kcore_dump_scan_pages(d, &piece.b);
	d->cur = j; /* the bytes handed to the hashing thread are j's */
	err = d->ops->block(d->w, &piece.b);
	d->cur = NULL;
	return err;
}

/* Segment bytes [off, off + len) read, their zero pages found (and the
 * hash block hashed), written: in the next of the blocks. */
static struct kcore_error *copy_block(struct dump *d, size_t si, uint64_t off,
				      uint64_t len)
{
	struct job *j = &d->copy[d->copy_next++ % d->ncopy];
	struct kcore_block *b = &j->b;
	struct kcore_error *err = copy_retire(d, j);
	uint64_t step = kcore_round_up(COPY_CHUNK, d->page);
	bool hand_over;

	if (err)
		return err;
	b->seg = si;
	b->off = off;
	b->len = len;
	b->pages = (len + d->page - 1) / d->page;
	for (uint64_t at = 0; !err && at < len; at += step)
		err = copy_piece(d, j, at, len - at < step ? len - at : step);
	if (err)
		return err;
	/* The digests on the hashing thread when it has little else to
	 * do (the block's bytes are its until copy_retire() anyway). */
	hand_over = !d->opts->no_hash && d->fh &&
		    kcore_file_hash_backlog(d->fh) <= DIGESTS_AHEAD;
	if (!d->opts->no_hash) {
		kcore_dump_scan_blocks(d, j); /* pads to whole hash blocks */
		if (hand_over) {
			j->fh_ticket =
				kcore_file_hash_add_task(d->fh, digest_task, j);
		} else {
			kcore_dump_digest_job(d, j);
		}
		j->digests_due = true;
	}
	kcore_dump_hash_written_upto(d, si, off + len);
	kcore_dump_progress(d, false);
	return kcore_dump_cancelled(d);
}

/* What the writer is not given (counted by the walk). */
static struct kcore_error *copy_hole(struct dump *d, size_t si, uint64_t off,
				     uint64_t len)
{
	struct kcore_error *err = d->ops->hole(d->w, si, off, len);

	if (!err)
		kcore_dump_hash_written_upto(d, si, off + len);
	return err;
}

/* kcore_dump_segment()'s walk, block by block on this thread. */
static struct kcore_error *copy_segment(struct dump *d, size_t si)
{
	return kcore_dump_walk_segment(d, si, d->copy_chunk, d->copy_chunk,
				       copy_block, copy_hole);
}

struct kcore_error *kcore_dump_copy(struct dump *d)
{
	struct kcore_error *err = copy_setup(d);

	for (size_t i = 0; !err && i < d->plan->nsegs; i++)
		err = copy_segment(d, i);
	return copy_teardown(d, err);
}
