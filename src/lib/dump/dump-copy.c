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

/*
 * Taken with --hash none, and with the default XXH3-128 block digests:
 * they cost a fraction of the copy, so this thread computes them itself
 * while the file's SHA-256 runs on its own thread beside it (two threads
 * for two CPUs, and blocks small enough to stay in the caches until the
 * hashing thread takes them).  SHA-256 block digests (--hash sha256) cost
 * as much as the file's: the pipeline's workers spread them over the
 * CPUs.  KCOREDUMP_COPY_PATH=1 takes it then too, =0 never.
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
	for (size_t i = 0; i < d->ncopy; i++)
		if (!kcore_dump_job_alloc(&d->copy[i], 0,
					  kcore_round_up(len, KCORE_HASH_BLOCK),
					  pages, 1))
			return &kcore_error_nomem;
	return NULL;
}

/* Its blocks back from the hashing thread, then freed. */
static void copy_teardown(struct dump *d)
{
	for (size_t i = 0; d->copy && i < d->ncopy; i++)
		kcore_dump_job_unhashed(d, &d->copy[i]);
	for (size_t i = 0; d->copy && i < d->ncopy; i++)
		kcore_dump_job_free(&d->copy[i]);
	free(d->copy);
	d->copy = NULL;
}

/* Segment bytes [off, off + len) read, their zero pages found (and the
 * hash block hashed), written: in the next of the blocks. */
static struct kcore_error *copy_block(struct dump *d, size_t si, uint64_t off,
				      uint64_t len)
{
	struct job *j = &d->copy[d->copy_next++ % d->ncopy];
	struct kcore_block *b = &j->b;
	struct kcore_error *err;

	kcore_dump_job_unhashed(d, j);
	b->seg = si;
	b->off = off;
	b->len = len;
	b->pages = (len + d->page - 1) / d->page;
	kcore_dump_fill_job(d, j);
	d->res->stats.bytes_done += len;
	if (!d->opts->no_hash) {
		kcore_dump_process_job(d, j); /* pads to whole hash blocks */
	} else {
		for (uint64_t p = 0; p < b->pages; p++) {
			uint64_t at = p * d->page;
			uint64_t n =
				b->len - at < d->page ? b->len - at : d->page;

			b->zero[p] = kcore_is_zero(b->buf + at, n);
		}
	}
	d->cur = j;
	err = d->ops->block(d->w, b);
	d->cur = NULL;
	if (!err)
		err = kcore_dump_add_hashes(d, j);
	if (err)
		return err;
	kcore_dump_hash_written_upto(d, si, off + len);
	kcore_dump_progress(d, false);
	return kcore_dump_cancelled(d);
}

/* What the writer is not given: counted as the pipeline counts them. */
static struct kcore_error *copy_hole(struct dump *d, size_t si, uint64_t off,
				     uint64_t len)
{
	d->res->stats.bytes_hole += len;
	d->res->stats.bytes_done += len;
	if (!len)
		return NULL;
	struct kcore_error *err = kcore_dump_cancelled(d);

	if (!err)
		err = d->ops->hole(d->w, si, off, len);
	if (!err)
		kcore_dump_hash_written_upto(d, si, off + len);
	return err;
}

/* kcore_dump_segment()'s walk, block by block on this thread. */
static struct kcore_error *copy_segment(struct dump *d, size_t si)
{
	const struct kcore_plan_segment *seg = &d->plan->segs[si];
	uint64_t chunk = d->copy_chunk, off = 0;

	kcore_extents_rewind(&d->ext);
	while (off < seg->size) {
		uint64_t start, end;
		bool data = kcore_dump_next_block(d, si, off, chunk, chunk,
						  &start, &end);
		struct kcore_error *err = copy_hole(d, si, off, start - off);

		if (err || !data)
			return err;
		err = copy_block(d, si, start, end - start);
		if (err)
			return err;
		off = end;
	}
	return NULL;
}

struct kcore_error *kcore_dump_copy(struct dump *d)
{
	struct kcore_error *err = copy_setup(d);

	for (size_t i = 0; !err && i < d->plan->nsegs; i++)
		err = copy_segment(d, i);
	copy_teardown(d);
	return err;
}
