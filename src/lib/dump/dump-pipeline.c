// SPDX-License-Identifier: MIT
/*
 * The pipeline's blocks (dump-internal.h): the ring of jobs, one per slot
 * of the worker pool (common/pool.c); the calling thread reads each block
 * into a free job, worker threads find its zero pages, digest it and run
 * the writer's encode step, and the calling thread hands the jobs to the
 * writer in order, holes joined between them.
 */
#include <stdlib.h>
#include <string.h>

#include "dump-internal.h"
#include "pool.h"

/* ---- jobs ---- */

/* Job j's buffers: buflen bytes (aligned to pages, which may be read
 * into directly), flags for pages and hash blocks; false: out of memory
 * (kcore_dump_job_free() frees what was allocated). */
bool kcore_dump_job_alloc(struct job *j, size_t slot, uint64_t buflen,
			  uint64_t pages, uint64_t blocks)
{
	j->b.slot = slot;
	j->b.buf = aligned_alloc(4096, kcore_round_up(buflen, 4096));
	j->b.zero = calloc(pages, 1);
	j->b.hole = calloc(pages, 1);
	j->b.bad = calloc(pages, 1);
	j->digest = calloc(blocks, sizeof(*j->digest));
	j->nonzero = calloc(blocks, 1);
	return j->b.buf && j->b.zero && j->b.hole && j->b.bad && j->digest &&
	       j->nonzero;
}

void kcore_dump_job_free(struct job *j)
{
	free(j->b.buf);
	free(j->b.zero);
	free(j->b.hole);
	free(j->b.bad);
	free(j->digest);
	free(j->nonzero);
}

/* ---- workers ---- */

/* Block b's zero pages. */
void kcore_dump_scan_pages(const struct dump *d, struct kcore_block *b)
{
	for (uint64_t p = 0; p < b->pages; p++) {
		uint64_t off = p * d->page;
		uint64_t n = b->len - off < d->page ? b->len - off : d->page;

		/* A page not read is zeros already: not scanned again. */
		b->zero[p] = b->hole[p] || kcore_is_zero(b->buf + off, n);
	}
}

/* Which of the job's hash blocks hold data (its zero pages known), the
 * last one padded with the zeros its digest covers. */
void kcore_dump_scan_blocks(struct dump *d, struct job *j)
{
	struct kcore_block *b = &j->b;
	uint64_t blocks = (b->len + KCORE_HASH_BLOCK - 1) / KCORE_HASH_BLOCK;
	const struct kcore_plan_segment *seg = &d->plan->segs[b->seg];
	/* The hashed content of a segment with p_memsz > p_filesz goes on
	 * in zeros up to p_memsz: pad the last block (the buffer holds
	 * whole blocks). */
	uint64_t logical = seg->memsz > seg->size ? seg->memsz : seg->size;
	uint64_t hlen = logical - b->off;

	if (hlen > kcore_round_up(b->len, KCORE_HASH_BLOCK))
		hlen = kcore_round_up(b->len, KCORE_HASH_BLOCK);
	if (hlen > b->len)
		memset(b->buf + b->len, 0, hlen - b->len);
	j->hlen = hlen;
	for (uint64_t h = 0; h < blocks; h++) {
		uint64_t off = h * KCORE_HASH_BLOCK;
		uint64_t n = b->len - off < KCORE_HASH_BLOCK ? b->len - off
							     : KCORE_HASH_BLOCK;
		uint64_t p0 = off / d->page,
			 p1 = (off + n + d->page - 1) / d->page;
		bool nz = false;

		for (uint64_t p = p0; p < p1 && !nz; p++)
			nz = !b->zero[p];
		j->nonzero[h] = nz;
	}
}

/* The digests of the job's hash blocks that hold data (after
 * kcore_dump_scan_blocks(); the buffer unchanged since). */
void kcore_dump_digest_job(const struct dump *d, struct job *j)
{
	uint64_t blocks = (j->b.len + KCORE_HASH_BLOCK - 1) / KCORE_HASH_BLOCK;

	for (uint64_t h = 0; h < blocks && !d->opts->no_hash; h++) {
		uint64_t off = h * KCORE_HASH_BLOCK;
		uint64_t hn = j->hlen - off < KCORE_HASH_BLOCK
				      ? j->hlen - off
				      : KCORE_HASH_BLOCK;

		if (j->nonzero[h])
			kcore_block_digest(d->opts->block_hash, j->b.buf + off,
					   hn, j->digest[h]);
	}
}

/* Zero pages and the digests of the job's hash blocks. */
void kcore_dump_process_job(struct dump *d, struct job *j)
{
	kcore_dump_scan_pages(d, &j->b);
	kcore_dump_scan_blocks(d, j);
	kcore_dump_digest_job(d, j);
	if (d->smear)
		kcore_smear_hash(d->smear, &j->b);
}

/* The pool's job function: a block (holes are submitted done). */
static struct kcore_error *run_job(void *arg, unsigned worker, size_t slot)
{
	struct dump *d = arg;
	struct job *j = &d->ring[slot];

	(void)worker;
	kcore_dump_process_job(d, j);
	if (d->ops->encode)
		d->ops->encode(d->w, &j->b);
	return NULL;
}

struct kcore_error *kcore_dump_start_workers(struct dump *d, unsigned n)
{
	return kcore_pool_create(n, d->nring, run_job, d, &d->pool);
}

void kcore_dump_stop_workers(struct dump *d)
{
	kcore_pool_destroy(d->pool);
	d->pool = NULL;
}

/* ---- in order, to the writer ---- */

struct kcore_error *kcore_dump_add_hashes(struct dump *d, struct job *j)
{
	uint64_t blocks = (j->b.len + KCORE_HASH_BLOCK - 1) / KCORE_HASH_BLOCK;

	for (uint64_t h = 0; h < blocks && !d->opts->no_hash; h++) {
		if (!j->nonzero[h])
			continue;
		struct kcore_error *err = kcore_seg_hasher_add(
			d->hashers[j->b.seg], j->b.off / KCORE_HASH_BLOCK + h,
			j->digest[h]);
		if (err)
			return err;
	}
	return NULL;
}

struct kcore_error *kcore_dump_retire_oldest(struct dump *d)
{
	struct kcore_error *err = NULL;
	struct job *j;
	size_t slot;

	if (!kcore_pool_retire(d->pool, true, &slot, &err))
		return NULL;
	if (err)
		return err;
	j = &d->ring[slot];
	d->cur = j;
	if (j->gap)
		err = d->ops->hole(d->w, j->b.seg, j->b.off, j->b.len);
	else
		err = d->ops->block(d->w, &j->b);
	d->cur = NULL;
	if (!err && !j->gap)
		err = kcore_dump_add_hashes(d, j);
	return err;
}

/*
 * A free job in the ring, retiring the oldest when all but FH_SLOTS are in
 * use: the slot taken is then the one retired FH_SLOTS blocks ago, which
 * the file's SHA-256 is likely past.  Were every slot in use, the slot
 * taken would be the one just retired and written, and this thread would
 * wait for SHA-256 to hash it while the hashing thread then waits for the
 * next block: the two would take turns on one CPU and never overlap.
 */
static struct kcore_error *next_job(struct dump *d, struct job **ret)
{
	size_t room = d->nring - (d->fh ? FH_SLOTS : 0);

	if (kcore_pool_pending(d->pool) >= room) {
		struct kcore_error *err = kcore_dump_retire_oldest(d);

		if (err)
			return err;
	}
	*ret = &d->ring[kcore_pool_next(d->pool)];
	kcore_dump_job_unhashed(d, *ret);
	return NULL;
}

/* A hole has nothing to run: it is done as it is submitted, and may
 * still grow (submit_hole()) until it is retired. */
static void queue(struct dump *d, struct job *j)
{
	kcore_pool_submit(d->pool, !j->gap);
}

static struct kcore_error *submit(struct dump *d, size_t si, uint64_t off,
				  uint64_t len)
{
	struct kcore_error *err;
	struct job *j;

	err = next_job(d, &j);
	if (err)
		return err;
	j->gap = false;
	j->b.seg = si;
	j->b.off = off;
	j->b.len = len;
	j->b.pages = (len + d->page - 1) / d->page;
	kcore_dump_fill_job(d, j);
	d->res->stats.bytes_done += len;
	queue(d, j);
	kcore_dump_progress(d, false);
	return kcore_dump_cancelled(d);
}

/* Segment bytes [off, off + len) that are not read, in order with the
 * blocks (counted by the walk): one hole for the writer, joined to the
 * one before it. */
static struct kcore_error *submit_hole(struct dump *d, size_t si, uint64_t off,
				       uint64_t len)
{
	struct job *j = kcore_pool_pending(d->pool)
				? &d->ring[kcore_pool_newest(d->pool)]
				: NULL;
	struct kcore_error *err;

	if (j && j->gap && j->b.seg == si && j->b.off + j->b.len == off) {
		j->b.len += len;
		return NULL;
	}
	err = next_job(d, &j);
	if (err)
		return err;
	j->gap = true;
	j->b.seg = si;
	j->b.off = off;
	j->b.len = len;
	queue(d, j);
	return NULL;
}

struct kcore_error *kcore_dump_segment(struct dump *d, size_t si)
{
	return kcore_dump_walk_segment(d, si, KCORE_HASH_BLOCK, d->block,
				       submit, submit_hole);
}
