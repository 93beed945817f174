/* SPDX-License-Identifier: MIT */
/*
 * Internal to libkcore: the time map of a dump (read-times.c), when each
 * part of each planned segment was read.  The plan's segments are cut in
 * cells of one grain (a power of two of at least 4 MiB, doubled until the
 * plan has at most KCORE_READ_TIME_CELLS of them more than segments); a
 * cell holds the first and last moments its bytes were read
 * (CLOCK_BOOTTIME, from the start of the read).  The cells depend on the plan
 * only, not on the reads' block size: the pipeline and the copy path record the
 * same map.
 */
#ifndef KCOREDUMP_READ_TIMES_H
#define KCOREDUMP_READ_TIMES_H

#include <stdint.h>

#include "extent.h"
#include "kcoredump/dump.h"

struct kcore_read_times {
	struct kcore_dump_result *res; /* holds the cells */
	size_t *base;		       /* per plan segment: its first cell */
	size_t nsegs;
	uint64_t grain;
	uint64_t t0; /* CLOCK_BOOTTIME at the read's start */
};

/* The cells of the plan's segments, in res; t0 is now. */
struct kcore_error *kcore_read_times_init(struct kcore_read_times *tm,
					  const struct kcore_plan *plan,
					  struct kcore_dump_result *res);
/* The cells the note makes room for (res->read_time_cells): those that
 * hold data, as the extent walker finds them (a shared segment's cells
 * all), at most KCORE_READ_TIME_NOTE_CELLS. */
void kcore_read_times_reserve(struct kcore_read_times *tm,
			      const struct kcore_plan *plan,
			      struct kcore_extents *ext);
/* The clock of the map. */
uint64_t kcore_read_times_now(void);
/* Bytes [off, off + len) of segment seg were read from t (a
 * kcore_read_times_now()) until now. */
void kcore_read_times_add(struct kcore_read_times *tm, size_t seg, uint64_t off,
			  uint64_t len, uint64_t t);
/* After the reads: a shared segment's cells take the times of the bytes
 * they were copied from, and res keeps only the cells that were read. */
void kcore_read_times_finish(struct kcore_read_times *tm,
			     const struct kcore_plan *plan);
void kcore_read_times_deinit(struct kcore_read_times *tm);

#endif
