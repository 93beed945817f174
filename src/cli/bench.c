// SPDX-License-Identifier: MIT
/*
 * Benchmarks: read throughput of a source per segment class, block size
 * and thread count, in three modes (raw preads; preads plus the dump's
 * per-block work; the whole dump pipeline to /dev/null), and what the hole
 * map of the source lets a dump skip.
 *
 * A class is a list of file ranges.  A measurement reads blocks at evenly
 * spaced offsets across all of them, in an order whose every prefix is
 * spread over the class too (a stride near the golden ratio), so the time
 * bound cuts the run short without biasing it towards the start: the
 * classes and their blocks are bench-classes.c's, the measurements
 * here.
 */
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench-classes.h"
#include "kcoredump/bench.h"
#include "kcoredump/dump.h"
#include "kcoredump/kcore.h"
#include "source-impl.h"

#define DEFAULT_LIMIT	(64ull << 20)
#define DEFAULT_SECONDS 2.0
/* An ELF core's e_phnum without extended numbering, less a margin. */
#define MAX_DUMP_SEGS 60000

/* ---- raw and zero modes: reader threads ---- */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct readers {
	struct kcore_source *src;
	const struct sample *samples;
	size_t nsamples;
	bool zero;
	uint64_t bs, page, limit;
	double deadline;
	volatile sig_atomic_t *cancel;
	double *lat; /* per sample; < 0 if not read */
	_Atomic size_t next;
	_Atomic uint64_t bytes, reads, zero_bytes, errors;
	_Atomic bool timed_out, nomem;
	pthread_mutex_t lock;
	double process; /* summed over threads */
};

static void process_block(struct readers *rd, const unsigned char *buf,
			  uint64_t len)
{
	unsigned char digest[KCORE_DIGEST_LEN];
	uint64_t zero = 0;

	for (uint64_t off = 0; off < len; off += KCORE_HASH_BLOCK) {
		uint64_t n = len - off < KCORE_HASH_BLOCK ? len - off
							  : KCORE_HASH_BLOCK;
		bool nonzero = false;

		for (uint64_t p = 0; p < n; p += rd->page) {
			uint64_t m = n - p < rd->page ? n - p : rd->page;

			if (kcore_is_zero(buf + off + p, m))
				zero += m;
			else
				nonzero = true;
		}
		if (nonzero)
			kcore_sha256(buf + off, n, digest);
	}
	rd->zero_bytes += zero;
}

static void *reader(void *arg)
{
	struct readers *rd = arg;
	unsigned char *buf = aligned_alloc(4096, (rd->bs + 4095) / 4096 * 4096);
	double process = 0;

	if (!buf) {
		rd->nomem = true;
		return NULL;
	}
	for (;;) {
		size_t i = rd->next++;
		const struct sample *s;
		struct kcore_error *err;
		double t0, t1;

		if (i >= rd->nsamples || rd->bytes >= rd->limit ||
		    (rd->cancel && *rd->cancel))
			break;
		t0 = now();
		if (t0 >= rd->deadline) {
			rd->timed_out = true;
			break;
		}
		s = &rd->samples[i];
		err = kcore_source_pread(rd->src, buf, s->len, s->off);
		t1 = now();
		rd->lat[i] = t1 - t0;
		rd->reads++;
		if (err) {
			kcore_error_destroy(err);
			rd->errors++;
			continue;
		}
		rd->bytes += s->len;
		if (rd->zero) {
			process_block(rd, buf, s->len);
			process += now() - t1;
		}
	}
	free(buf);
	pthread_mutex_lock(&rd->lock);
	rd->process += process;
	pthread_mutex_unlock(&rd->lock);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct kcore_error *run_readers(struct kcore_source *src,
				       const struct kcore_bench_opts *opts,
				       const struct sample *samples, size_t n,
				       struct kcore_bench_run *run,
				       uint64_t limit, double seconds)
{
	struct readers rd = {
		.src = src,
		.samples = samples,
		.nsamples = n,
		.zero = run->mode == KCORE_BENCH_ZERO,
		.bs = run->block_size,
		.page = src->info.page_size ? src->info.page_size : 4096,
		.limit = limit,
		.cancel = opts->cancel,
	};
	pthread_t *th = calloc(run->threads, sizeof(*th));
	unsigned started = 0;
	size_t nlat = 0;
	double t0;
	int e = 0;

	rd.lat = malloc(n * sizeof(*rd.lat));
	if (!th || !rd.lat) {
		free(th);
		free(rd.lat);
		return &kcore_error_nomem;
	}
	for (size_t i = 0; i < n; i++)
		rd.lat[i] = -1;
	pthread_mutex_init(&rd.lock, NULL);
	t0 = now();
	rd.deadline = t0 + seconds;
	for (; started < run->threads; started++) {
		e = pthread_create(&th[started], NULL, reader, &rd);
		if (e)
			break;
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	run->seconds = now() - t0;
	pthread_mutex_destroy(&rd.lock);
	free(th);
	if (e || rd.nomem) {
		free(rd.lat);
		return e ? kcore_error_create(KCORE_ERR_OS, e, NULL,
					      "cannot start reader threads")
			 : &kcore_error_nomem;
	}
	run->bytes = rd.bytes;
	run->reads = rd.reads;
	run->zero_bytes = rd.zero_bytes;
	run->read_errors = rd.errors;
	run->process_seconds = rd.process;
	run->stopped_by_time = rd.timed_out;
	for (size_t i = 0; i < n; i++)
		if (rd.lat[i] >= 0)
			rd.lat[nlat++] = rd.lat[i];
	if (nlat) {
		qsort(rd.lat, nlat, sizeof(*rd.lat), cmp_double);
		run->has_latency = true;
		run->latency_median = rd.lat[nlat / 2];
		run->latency_p99 =
			rd.lat[(nlat * 99) / 100 < nlat - 1 ? (nlat * 99) / 100
							    : nlat - 1];
	}
	free(rd.lat);
	return NULL;
}

/* ---- dump mode ---- */

struct dump_watch {
	volatile sig_atomic_t stop;
	volatile sig_atomic_t *user_cancel;
	double seconds;
	bool timed_out;
};

/* The dump's progress callback doubles as its time bound. */
static void dump_watch(void *arg, const struct kcore_dump_stats *st)
{
	struct dump_watch *w = arg;

	if (w->user_cancel && *w->user_cancel)
		w->stop = 1;
	if (st->elapsed >= w->seconds && !w->stop) {
		w->timed_out = true;
		w->stop = 1;
	}
}

static int cmp_plan_seg(const void *a, const void *b)
{
	const struct kcore_plan_segment *x = a, *y = b;

	return x->src_offset < y->src_offset ? -1
					     : x->src_offset > y->src_offset;
}

static struct kcore_error *run_dump(struct kcore_source *src,
				    const struct kcore_bench_opts *opts,
				    const struct sample *samples, size_t n,
				    struct kcore_bench_run *run, double seconds)
{
	struct dump_watch w = { .user_cancel = opts->cancel,
				.seconds = seconds };
	struct kcore_dump_opts dopts = {
		.output = "/dev/null",
		.special_output = true,
		.compress = opts->compress,
		.level = opts->level,
		.threads = run->threads,
		.block_size = (run->block_size + KCORE_HASH_BLOCK - 1) /
			      KCORE_HASH_BLOCK * KCORE_HASH_BLOCK,
		.cancel = &w.stop,
		.progress = dump_watch,
		.progress_arg = &w,
		.command_line = "kcoredump bench",
	};
	struct kcore_dump_result res;
	struct kcore_plan *plan;
	struct kcore_error *err;
	double t0;

	if (n > MAX_DUMP_SEGS)
		n = MAX_DUMP_SEGS;
	plan = calloc(1, sizeof(*plan));
	if (plan)
		plan->segs = calloc(n, sizeof(*plan->segs));
	if (!plan || !plan->segs) {
		kcore_plan_destroy(plan);
		return &kcore_error_nomem;
	}
	/* One output segment per sampled block, read in file order. */
	for (size_t i = 0; i < n; i++) {
		const struct sample *s = &samples[i];
		const struct kcore_segment *seg = bench_seg_of(src, s->seg);
		struct kcore_plan_segment *p = &plan->segs[i];

		p->vaddr = s->vaddr;
		p->has_paddr = seg->has_paddr;
		p->paddr = seg->has_paddr ? seg->paddr + (s->vaddr - seg->vaddr)
					  : UINT64_MAX;
		p->size = s->len;
		p->src_offset = s->off;
		p->src_avail = s->len;
		p->flags = seg->flags;
		p->cls = seg->cls;
		p->src_segment = seg->index;
	}
	plan->nsegs = n;
	qsort(plan->segs, n, sizeof(*plan->segs), cmp_plan_seg);
	t0 = now();
	err = kcore_dump(src, plan, &dopts, &res);
	run->seconds = now() - t0;
	if (err && err->code == KCORE_ERR_INTERRUPTED && w.timed_out &&
	    !(opts->cancel && *opts->cancel)) {
		/* Stopped by the time bound: what was done counts. */
		kcore_error_destroy(err);
		err = NULL;
		run->stopped_by_time = true;
	}
	if (!err) {
		uint64_t acc = 0;
		size_t k = 0;

		/* Blocks processed: the dump reads each in one read unless
		 * the hole map says it is a hole. */
		while (k < n &&
		       acc + plan->segs[k].size <= res.stats.bytes_done)
			acc += plan->segs[k++].size;
		run->bytes = res.stats.bytes_read;
		run->bytes_hole = res.stats.bytes_hole;
		run->reads = k;
		run->zero_bytes = res.stats.bytes_zero;
		run->read_errors = res.nerrors;
		run->bytes_written = res.stats.bytes_written;
	}
	kcore_dump_result_deinit(&res);
	kcore_plan_destroy(plan);
	return err;
}

/* How many sampled blocks the dump mode takes: what the raw mode read
 * in the time bound, with a margin (the time bound stops it anyway). */
static size_t dump_samples(const struct kcore_bench_run *raw,
			   const struct sample *s, size_t n, double seconds)
{
	uint64_t bytes = 0, want;
	size_t k;

	if (!raw || raw->seconds <= 0 || !raw->stopped_by_time)
		return n;
	want = (uint64_t)((double)raw->bytes / raw->seconds * seconds * 1.5);
	for (k = 0; k < n && bytes <= want; k++)
		bytes += s[k].len;
	return k;
}

struct bench_config {
	enum kcore_bench_class cls;
	uint64_t block_size;
	unsigned threads;
	unsigned modes;
	uint64_t limit;
	double seconds;
	const struct sample *samples;
	size_t nsamples;
};

/* Every selected mode of one class, block size and thread count. */
static struct kcore_error *run_config(struct kcore_source *src,
				      const struct kcore_bench_opts *opts,
				      const struct bench_config *cfg,
				      struct kcore_bench_result *res,
				      size_t *done, size_t total)
{
	const struct kcore_bench_run *raw = NULL;

	for (int m = 0; m < KCORE_BENCH_MODE_NUM; m++) {
		struct kcore_bench_run *r = &res->runs[res->nruns];
		struct kcore_error *err;

		if (!(cfg->modes >> m & 1))
			continue;
		r->cls = cfg->cls;
		r->mode = (enum kcore_bench_mode)m;
		r->block_size = cfg->block_size;
		r->threads = cfg->threads;
		if (m == KCORE_BENCH_DUMP)
			err = run_dump(src, opts, cfg->samples,
				       dump_samples(raw, cfg->samples,
						    cfg->nsamples,
						    cfg->seconds),
				       r, cfg->seconds);
		else
			err = run_readers(src, opts, cfg->samples,
					  cfg->nsamples, r, cfg->limit,
					  cfg->seconds);
		if (err)
			return err;
		if (m == KCORE_BENCH_RAW)
			raw = r;
		res->nruns++;
		if (opts->progress)
			opts->progress(opts->progress_arg, ++*done, total);
		if (opts->cancel && *opts->cancel)
			return kcore_error_create(KCORE_ERR_INTERRUPTED, 0,
						  src->path,
						  "benchmark interrupted");
	}
	return NULL;
}

struct kcore_error *kcore_bench(struct kcore_source *src,
				const struct kcore_bench_opts *opts,
				struct kcore_bench_result *ret)
{
	static const uint64_t default_bs = 1u << 20;
	static const unsigned default_threads = 1;
	const uint64_t *bss =
		opts->nblock_sizes ? opts->block_sizes : &default_bs;
	const unsigned *ths = opts->nthreads ? opts->threads : &default_threads;
	size_t nbs = opts->nblock_sizes ? opts->nblock_sizes : 1;
	size_t nth = opts->nthreads ? opts->nthreads : 1;
	uint64_t limit = opts->limit ? opts->limit : DEFAULT_LIMIT;
	double seconds = opts->seconds > 0 ? opts->seconds : DEFAULT_SECONDS;
	unsigned modes =
		opts->modes ? opts->modes : (1u << KCORE_BENCH_MODE_NUM) - 1;
	uint64_t page = src->info.page_size ? src->info.page_size : 4096;
	struct bclass cls[KCORE_BENCH_CLASS_NUM] = { 0 };
	struct kcore_bench_result res = { 0 };
	struct kcore_error *err = NULL;
	size_t total = 0, done = 0;
	double t0 = now();

	if (nbs > KCORE_BENCH_MAX_CONFIGS || nth > KCORE_BENCH_MAX_CONFIGS)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "too many block sizes or thread "
					  "counts (at most %d)",
					  KCORE_BENCH_MAX_CONFIGS);
	for (size_t i = 0; i < nbs; i++)
		if (!bss[i] || bss[i] > (1ull << 30))
			return kcore_error_create(
				KCORE_ERR_INVALID, 0, NULL,
				"block size %llu out of range",
				(unsigned long long)bss[i]);
	for (size_t i = 0; i < nth; i++)
		if (!ths[i] || ths[i] > 256)
			return kcore_error_create(
				KCORE_ERR_INVALID, 0, NULL,
				"thread count %u out of range", ths[i]);
	if (modes & (1u << KCORE_BENCH_DUMP) &&
	    (src->info.elf_class != 64 || src->info.big_endian))
		modes &= ~(1u << KCORE_BENCH_DUMP); /* kcore_dump cannot */
	res.live = !src->info.is_regular;
	err = bench_collect(src, opts, cls, &res);
	if (err)
		goto out;
	for (int c = 0; c < KCORE_BENCH_CLASS_NUM; c++)
		if (res.classes[c].present &&
		    (!opts->classes || opts->classes & (1u << c)))
			for (int m = 0; m < KCORE_BENCH_MODE_NUM; m++)
				total += (modes >> m & 1) * nbs * nth;
	res.runs = calloc(total ? total : 1, sizeof(*res.runs));
	if (!res.runs) {
		err = &kcore_error_nomem;
		goto out;
	}
	for (int c = 0; c < KCORE_BENCH_CLASS_NUM && !err; c++) {
		if (!res.classes[c].present ||
		    (opts->classes && !(opts->classes & (1u << c))))
			continue;
		for (size_t b = 0; b < nbs && !err; b++) {
			struct sample *s = NULL;
			size_t n = 0;

			err = bench_make_samples(&cls[c], bss[b], limit, page,
						 &s, &n);
			for (size_t t = 0; t < nth && !err; t++) {
				struct bench_config cfg = {
					.cls = (enum kcore_bench_class)c,
					.block_size = bss[b],
					.threads = ths[t],
					.modes = modes,
					.limit = limit,
					.seconds = seconds,
					.samples = s,
					.nsamples = n,
				};

				err = run_config(src, opts, &cfg, &res, &done,
						 total);
			}
			free(s);
		}
	}
out:
	for (int c = 0; c < KCORE_BENCH_CLASS_NUM; c++) {
		bench_class_free(&cls[c]);
	}
	if (err) {
		kcore_bench_result_deinit(&res);
		return err;
	}
	res.seconds = now() - t0;
	*ret = res;
	return NULL;
}

void kcore_bench_result_deinit(struct kcore_bench_result *res)
{
	free(res->runs);
	free(res->warning);
	memset(res, 0, sizeof(*res));
}
