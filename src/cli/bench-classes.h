/* SPDX-License-Identifier: MIT */
/*
 * The benchmark's classes (bench-classes.c), for its measurements
 * (bench.c): a class is a list of file ranges of the source; a
 * measurement reads blocks sampled across it.
 */
#ifndef KCOREDUMP_BENCH_CLASSES_H
#define KCOREDUMP_BENCH_CLASSES_H

#include <stddef.h>
#include <stdint.h>

#include "kcoredump/bench.h"
#include "kcoredump/kcore.h"
#include "source-impl.h"

struct brange {
	uint64_t off, len; /* file range */
	uint64_t vaddr;	   /* address of its first byte */
	size_t seg;	   /* source segment */
};

struct bclass {
	struct brange *r;
	size_t n, cap;
	uint64_t total;
	uint64_t *cum; /* cum[i]: bytes of the ranges before i */
};

/* One block a measurement reads. */
struct sample {
	uint64_t off, len, vaddr;
	size_t seg;
};

static inline const struct kcore_segment *bench_seg_of(struct kcore_source *src,
						       size_t i)
{
	return &src->segments[i];
}

/* The source's classes into cls[KCORE_BENCH_CLASS_NUM], and what res
 * says of them and of the source's holes. */
struct kcore_error *bench_collect(struct kcore_source *src,
				  const struct kcore_bench_opts *opts,
				  struct bclass *cls,
				  struct kcore_bench_result *res);
void bench_class_free(struct bclass *c);
/*
 * The blocks one measurement may read, in reading order.  A class within
 * the limit is read whole; a bigger one at n evenly spaced offsets, where
 * n reaches the limit even when the ranges are shorter than a block.
 */
struct kcore_error *bench_make_samples(const struct bclass *c, uint64_t bs,
				       uint64_t limit, uint64_t page,
				       struct sample **ret, size_t *ret_n);

#endif
