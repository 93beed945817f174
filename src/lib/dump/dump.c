// SPDX-License-Identifier: MIT
/*
 * The dump pipeline, which knows no output format: plan -> read the data
 * extents of each planned segment in large blocks (holes are never read)
 * -> worker threads find zero pages, hash each block and run the writer's
 * encode step -> the calling thread hands blocks and holes to the writer
 * in order -> publish.  The formats are writers behind one interface
 * (write.h), chosen from a table by the format.
 *
 * Unreadable pages are read as zeros, marked in the block and recorded in
 * the result; the dump goes on.
 *
 * This file sets the dump up, runs its steps in order and publishes it;
 * the steps are cut into parts from the bottom up (dump-internal.h lists
 * them): the output's SHA-256 as it is written (dump-file-sha256.c),
 * reading (dump-read.c), the workers and the ordered ring
 * (dump-pipeline.c), the copy path (dump-copy.c).
 *
 * The copy path: a regular file (or a source read like one: a live
 * process, kcore_source.reads_like_file) copied into a plain sparse file
 * whose writer puts the bytes where the plan says (ELF), with --hash none or
 * the default XXH3-128 block digests, goes without the workers: small
 * blocks (COPY_CHUNK, or one hash block when hashed) read, their zero
 * pages found (and digested) and written one after the other on the
 * calling thread, with the same reads, holes and accounting as the
 * pipeline, so the same bytes; the file's SHA-256 runs beside it on its
 * own thread.  The ring's 4 MiB blocks do not stay in the CPU's caches:
 * every byte goes to memory and back twice more than through small
 * buffers, and they are most of the dump's memory
 * (bench/results/sparse-copy.md, bench/results/hash-cost.md).
 * KCOREDUMP_COPY_PATH in the environment: 0 never takes it (the tests
 * compare both), 1 takes it also with SHA-256 block digests
 * (kcore_dump_use_copy_path()).
 *
 * The splice path (dump-splice.c): with --hash none into a pipe, from an
 * ELF file or /proc/kcore, the bytes go from the source to the pipe by
 * splice(2), never through this process's memory.  KCOREDUMP_SPLICE=0
 * in the environment never takes it (the tests compare).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dump-internal.h"
#include "kcoredump/dump.h"
#include "kcoredump/kcore.h"
#include "kcoredump/output.h"
#include "pool.h"
#include "read-times.h"
#include "smear.h"
#include "source-impl.h"
#include "write.h"

#define DEFAULT_BLOCK (4u << 20)

/* The writer's service (struct kcore_write_setup). */
static struct kcore_error *tick_for_writer(void *arg)
{
	struct kcore_error *err = kcore_dump_cancelled(arg);

	if (!err)
		kcore_dump_progress(arg, false);
	return err;
}

/* ---- setup ---- */

static unsigned thread_count(const struct kcore_dump_opts *opts)
{
	long c;

	if (opts->threads)
		return opts->threads;
	c = sysconf(_SC_NPROCESSORS_ONLN);
	return c > 0 ? (unsigned)c : 1;
}

/* The ring of jobs (two per thread and two more; and FH_SLOTS for the
 * blocks written but not yet hashed into the file's SHA-256) and the
 * hashers. */
static struct kcore_error *setup(struct dump *d, unsigned n)
{
	uint64_t pages = (d->block + d->page - 1) / d->page;
	uint64_t blocks = (d->block + KCORE_HASH_BLOCK - 1) / KCORE_HASH_BLOCK;

	d->nring = 2 * (size_t)n + 2 + (d->fh ? FH_SLOTS : 0);
	d->ring = calloc(d->nring, sizeof(*d->ring));
	d->hashers = calloc(d->plan->nsegs, sizeof(*d->hashers));
	if (!d->ring || !d->hashers)
		return &kcore_error_nomem;
	for (size_t i = 0; i < d->nring; i++)
		if (!kcore_dump_job_alloc(&d->ring[i], i, d->block, pages,
					  blocks))
			return &kcore_error_nomem;
	for (size_t i = 0; i < d->plan->nsegs; i++) {
		const struct kcore_plan_segment *s = &d->plan->segs[i];
		uint64_t np = (s->size + d->page - 1) / d->page;

		if (!s->shared)
			continue;
		if (!d->share_buf) {
			d->share_buf = calloc(d->plan->nsegs, sizeof(void *));
			d->share_hole = calloc(d->plan->nsegs, sizeof(void *));
			if (!d->share_buf || !d->share_hole)
				return &kcore_error_nomem;
		}
		d->share_buf[i] = calloc(1, s->size ? s->size : 1);
		d->share_hole[i] = malloc(np ? np : 1);
		if (!d->share_buf[i] || !d->share_hole[i])
			return &kcore_error_nomem;
		memset(d->share_hole[i], 1, np);
	}
	for (size_t i = 0; i < d->plan->nsegs; i++) {
		const struct kcore_plan_segment *s = &d->plan->segs[i];
		struct kcore_error *err = kcore_seg_hasher_create_with(
			d->opts->block_hash,
			s->memsz > s->size ? s->memsz : s->size,
			&d->hashers[i]);

		if (err)
			return err;
	}
	return NULL;
}

static void teardown(struct dump *d)
{
	kcore_dump_stop_workers(d);
	/* Before the blocks it may still be hashing are freed. */
	kcore_file_hash_destroy(d->fh);
	d->fh = NULL;
	if (d->w)
		d->ops->destroy(d->w);
	d->w = NULL; /* the final progress report runs after teardown */
	for (size_t i = 0; d->ring && i < d->nring; i++)
		kcore_dump_job_free(&d->ring[i]);
	free(d->ring);
	for (size_t i = 0; d->hashers && i < d->plan->nsegs; i++)
		kcore_seg_hasher_destroy(d->hashers[i]);
	free(d->hashers);
	for (size_t i = 0; d->share_buf && i < d->plan->nsegs; i++) {
		free(d->share_buf[i]);
		free(d->share_hole[i]);
	}
	free(d->share_buf);
	free(d->share_hole);
	kcore_read_times_deinit(&d->tm);
	kcore_dump_free_first(d);
	kcore_smear_destroy(d->smear);
	d->smear = NULL;
}

struct kcore_error *kcore_dump_output_check(const struct kcore_source *src,
					    const struct kcore_dump_opts *opts)
{
	if (src->info.kind == KCORE_SOURCE_LIVE_KCORE &&
	    !opts->allow_ram_output) {
		const char *medium = kcore_output_ram_medium(
			opts->output, opts->output_fd, NULL);

		if (medium)
			return kcore_error_create(
				KCORE_ERR_INVALID, 0,
				strcmp(opts->output, "-") ? opts->output
							  : "<stdout>",
				"is on %s, in this machine's RAM: a dump of "
				"live memory written there overwrites the free "
				"memory it is taking an image of (and may run "
				"out of room); write it to a disk or over the "
				"network, or use --allow-ram-output",
				medium);
	}
	return NULL;
}

/* What the format refuses, and the plan it can hold. */
static struct kcore_error *check(struct dump *d, struct kcore_dump_result *ret)
{
	const struct kcore_source *src = d->src;
	const struct kcore_dump_opts *opts = d->opts;
	struct kcore_error *err;

	/* ELF32: the cores of 32-bit processes, in ELF only. */
	if (src->info.big_endian || (src->info.elf_class != 64 &&
				     (src->info.elf_class != 32 || !d->ops ||
				      d->ops->format != KCORE_FORMAT_ELF)))
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
					  "dumping big-endian cores, or 32-bit "
					  "ones to another format than ELF, "
					  "is not supported");
	if (d->block % KCORE_HASH_BLOCK)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "block size must be a multiple of "
					  "1 MiB");
	if (!d->ops || (unsigned)opts->codec >= KCORE_CODEC_NUM)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "unknown output format or codec");
	err = kcore_dump_output_check(src, opts);
	if (err)
		return err;
	err = d->ops->check ? d->ops->check(opts, src, d->page) : NULL;
	if (!err && d->ops->plan)
		err = d->ops->plan(d->plan, d->page, &ret->dropped_segments);
	return err;
}

/* The digest of each segment and of the dump. */
static struct kcore_error *digests(struct dump *d)
{
	unsigned char(*segs)[KCORE_DIGEST_LEN] =
		calloc(d->plan->nsegs, sizeof(*segs));

	if (!segs)
		return &kcore_error_nomem;
	for (size_t i = 0; i < d->plan->nsegs; i++) {
		kcore_seg_hasher_finish(d->hashers[i], d->plan->segs[i].digest);
		memcpy(segs[i], d->plan->segs[i].digest, KCORE_DIGEST_LEN);
	}
	kcore_dump_digest((const unsigned char(*)[KCORE_DIGEST_LEN])segs,
			  d->plan->nsegs, d->res->digest);
	free(segs);
	return NULL;
}

struct kcore_error *kcore_dump(struct kcore_source *src,
			       struct kcore_plan *plan,
			       const struct kcore_dump_opts *opts,
			       struct kcore_dump_result *ret)
{
	struct dump d = { .src = src, .plan = plan, .opts = opts, .res = ret };
	struct kcore_dump_stats *st = &ret->stats;
	struct kcore_error *err;
	unsigned threads = thread_count(opts);
	bool copy = false, splice = false;
	uint64_t t;

	memset(ret, 0, sizeof(*ret));
	d.ops = kcore_writer_find(opts->format);
	d.page = src->info.page_size ? src->info.page_size : 4096;
	d.block = opts->block_size ? opts->block_size : DEFAULT_BLOCK;
	err = check(&d, ret);
	if (err)
		goto out;
	ret->source_incomplete = src->info.incomplete;
	ret->source_unreadable_bytes = src->info.unreadable_bytes;
	ret->source_unreadable_ranges = src->info.unreadable_ranges;
	kcore_extents_init(&d.ext, src, plan);
	st->seek_data = d.ext.use_seek;
	for (size_t i = 0; i < plan->nsegs; i++)
		st->bytes_total += plan->segs[i].size;
	err = kcore_dump_plan_first(&d);
	if (err)
		goto out;
	d.t0 = kcore_dump_now_ns(CLOCK_MONOTONIC);
	st->start_ns = kcore_dump_now_ns(CLOCK_REALTIME);
	err = kcore_read_times_init(&d.tm, plan, ret);
	if (err)
		goto out;
	kcore_read_times_reserve(&d.tm, plan, &d.ext);
	err = kcore_output_open(opts->output,
				&(struct kcore_output_opts){
					.force = opts->force,
					.sync = opts->sync,
					.special = opts->special_output,
				},
				&d.out);
	if (err)
		goto out;
	err = kcore_dump_hash_start(&d);
	if (err)
		goto out;
	err = setup(&d, threads);
	if (!err && opts->smear_check > 0)
		err = kcore_smear_start(src, plan, opts->smear_check, d.page,
					d.nring, &d.smear);
	d.ws = (struct kcore_write_setup){
		.src = src,
		.plan = plan,
		.opts = &d.wopts,
		.out = d.out,
		.page = d.page,
		.block = d.block,
		.slots = d.nring,
		.res = ret,
		.tick = tick_for_writer,
		.arg = &d,
	};
	if (!err)
		err = d.ops->begin(&d.ws, &d.w);
	if (!err) {
		splice = kcore_dump_use_splice_path(&d);
		copy = !splice && kcore_dump_use_copy_path(&d);
		if (!copy && !splice)
			err = kcore_dump_start_workers(&d, threads);
	}
	st->phase = "reading";
	if (!err)
		err = kcore_dump_read_first(&d);
	if (!err && splice) {
		err = kcore_dump_splice(&d);
	} else if (!err && copy) {
		err = kcore_dump_copy(&d);
	} else {
		for (size_t i = 0; !err && i < plan->nsegs; i++)
			err = kcore_dump_segment(&d, i);
	}
	kcore_dump_set_phase(&d, "compressing the last blocks");
	while (!err && d.pool && kcore_pool_pending(d.pool))
		err = kcore_dump_retire_oldest(&d);
	if (err)
		goto out;
	/* Excluded pages were skipped like holes: count them apart. */
	st->bytes_excluded = kcore_plan_excluded_bytes(plan);
	st->bytes_hole -= st->bytes_excluded < st->bytes_hole
				  ? st->bytes_excluded
				  : st->bytes_hole;
	kcore_dump_stop_workers(&d);
	kcore_read_times_finish(&d.tm, plan);
	st->end_ns = kcore_dump_now_ns(CLOCK_REALTIME);
	t = kcore_dump_now_ns(CLOCK_MONOTONIC);
	st->read_seconds = (double)(t - d.t0) / 1e9;
	err = kcore_dump_cancelled(&d);
	if (!err && d.smear) {
		kcore_dump_set_phase(&d, "checking the smear");
		err = kcore_smear_check(d.smear, opts->cancel, &ret->smear);
		t = kcore_dump_now_ns(CLOCK_MONOTONIC);
	}
	if (!err)
		err = digests(&d);
	kcore_dump_set_phase(&d, "writing the notes and headers");
	if (!err)
		err = d.ops->finish(d.w, ret);
	if (err)
		goto out;
	st->bytes_written = kcore_sink_bytes_out(&d.w->sink);
	st->finish_seconds =
		(double)(kcore_dump_now_ns(CLOCK_MONOTONIC) - t) / 1e9;
	t = kcore_dump_now_ns(CLOCK_MONOTONIC);
	kcore_dump_set_phase(&d, "hashing the file");
	err = kcore_dump_file_digest(&d, d.w->sink.os ? st->bytes_written
						      : d.w->sink.size);
	if (d.fh)
		st->file_hash_busy_seconds = kcore_file_hash_busy(d.fh);
	st->file_hash_seconds =
		(double)(kcore_dump_now_ns(CLOCK_MONOTONIC) - t) / 1e9;
	if (err)
		goto out;
	/* Copied before the commit, so that running out of memory here
	 * publishes nothing rather than a result without them. */
	ret->digest_location = d.w->digest_location;
	ret->block_hash = opts->block_hash;
	if (d.out->path)
		ret->output_path = strdup(d.out->path);
	if (d.out->path && !ret->output_path) {
		err = &kcore_error_nomem;
		goto out;
	}
	kcore_dump_set_phase(&d, d.opts->sync ? "syncing and publishing"
					      : "publishing");
	t = kcore_dump_now_ns(CLOCK_MONOTONIC);
	err = kcore_output_commit(d.out, d.w->sink.os ? st->bytes_written
						      : d.w->sink.size);
	st->publish_seconds =
		(double)(kcore_dump_now_ns(CLOCK_MONOTONIC) - t) / 1e9;
	st->phase = "done";
out:
	st->elapsed = (double)(kcore_dump_now_ns(CLOCK_MONOTONIC) - d.t0) / 1e9;
	teardown(&d);
	if (err && d.out)
		kcore_output_abort(d.out);
	kcore_output_destroy(d.out);
	kcore_file_hash_destroy(d.fh);
	if (!err)
		kcore_dump_progress(&d, true);
	return err;
}

void kcore_dump_result_deinit(struct kcore_dump_result *res)
{
	for (size_t i = 0; i < res->nerrors; i++)
		free(res->errors[i].message);
	free(res->errors);
	free(res->output_path);
	free(res->read_times);
	free(res->smear.changes);
	free(res->read_phases);
	memset(res, 0, sizeof(*res));
}
