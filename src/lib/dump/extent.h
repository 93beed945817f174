/* SPDX-License-Identifier: MIT */
/*
 * Internal to libkcore: the extent walker of the dump pipeline (extent.c).
 * For a planned segment it tells which bytes a dump reads: the source's
 * data extents (SEEK_DATA/SEEK_HOLE, or the segment maps of sources that
 * cannot tell), less the pages kcore_plan_exclude() left out.
 */
#ifndef KCOREDUMP_EXTENT_H
#define KCOREDUMP_EXTENT_H

#include <stdbool.h>
#include <stdint.h>

#include "kcoredump/dump.h"

struct kcore_extents {
	struct kcore_source *src;
	const struct kcore_plan *plan;
	bool use_seek; /* the source knows its holes */
	bool stable;   /* a regular file: its extents stay as found */
	/* The last extent found, of segment seg. */
	size_t seg;
	uint64_t start, end;
	bool valid;
};

void kcore_extents_init(struct kcore_extents *x, struct kcore_source *src,
			const struct kcore_plan *plan);
/* A walk starts over: the cached extent is asked again, unless the source
 * is a regular file (on tmpfs, SEEK_HOLE walks a dense file page by page:
 * 18 ms a GiB, before the copy starts). */
void kcore_extents_rewind(struct kcore_extents *x);
/*
 * Where segment byte pos comes from: its source offset, and (when asked)
 * where the source range it belongs to ends and holds data up to, both
 * segment-relative.
 */
uint64_t kcore_extent_source(const struct kcore_plan_segment *seg, uint64_t pos,
			     uint64_t *ret_end, uint64_t *ret_avail);
/* What the dump reads of segment si at or after pos: [*ds, *de), or
 * *ds >= its size when only holes remain. */
void kcore_extent_next(struct kcore_extents *x, size_t si, uint64_t pos,
		       uint64_t *ds, uint64_t *de);
/* Bytes of the plan's RAM segments that kcore_plan_exclude() left out. */
uint64_t kcore_plan_excluded_bytes(const struct kcore_plan *plan);

#endif
