// SPDX-License-Identifier: MIT
/*
 * The extent walker (extent.h): what a dump reads of each planned
 * segment.  Holes of the source are found with kcore_source_next_data()
 * when the source knows them (one extent is cached, as the pipeline asks
 * for the same one block by block); pages --exclude left out are holes
 * too.
 */
#include "extent.h"
#include "plan.h"

void kcore_extents_init(struct kcore_extents *x, struct kcore_source *src,
			const struct kcore_plan *plan)
{
	*x = (struct kcore_extents){ .src = src, .plan = plan };
	x->use_seek = kcore_source_knows_holes(src);
	x->stable = kcore_source_info(src)->is_regular;
}

void kcore_extents_rewind(struct kcore_extents *x)
{
	if (!x->stable)
		x->valid = false;
}

/* Where segment byte pos comes from: its source offset, and (when asked)
 * where the source range it belongs to ends and holds data up to, both
 * segment-relative. */
uint64_t kcore_extent_source(const struct kcore_plan_segment *seg, uint64_t pos,
			     uint64_t *ret_end, uint64_t *ret_avail)
{
	uint64_t end;

	if (seg->alt_len && pos >= seg->alt_pos &&
	    pos - seg->alt_pos < seg->alt_len) {
		if (ret_end) {
			*ret_end = seg->alt_pos + seg->alt_len;
			*ret_avail = seg->alt_pos + seg->alt_avail;
		}
		return seg->alt_offset + (pos - seg->alt_pos);
	}
	end = seg->alt_len && pos < seg->alt_pos ? seg->alt_pos : seg->size;
	if (ret_end) {
		*ret_end = end;
		*ret_avail = seg->src_avail < end ? seg->src_avail : end;
	}
	return seg->src_offset + pos;
}

/* The source's data extent at or after seg-relative pos: [*ds, *de), or
 * *ds == seg->size when only holes remain.  An extent never crosses the
 * bounds of the segment's alternative source range (alt_pos, alt_len). */
static void source_extent(struct kcore_extents *x, size_t si, uint64_t pos,
			  uint64_t *ds, uint64_t *de)
{
	const struct kcore_plan_segment *seg = &x->plan->segs[si];
	struct kcore_error *err;
	uint64_t data, data_end, end, avail, at;

	for (;;) {
		at = kcore_extent_source(seg, pos, &end, &avail);
		if (pos < avail)
			break;
		/* Zeros to the end of this source range: go on after it. */
		if (end >= seg->size) {
			*ds = *de = seg->size;
			return;
		}
		pos = end;
	}
	if (!x->use_seek) {
		*ds = pos;
		*de = avail;
		return;
	}
	if (x->valid && x->seg == si && pos >= x->start && pos < x->end) {
		*ds = pos;
		*de = x->end;
		return;
	}
	err = kcore_source_next_data(x->src, at, at + (avail - pos), &data,
				     &data_end);
	if (err) { /* cannot tell: read it */
		kcore_error_destroy(err);
		*ds = pos;
		*de = avail;
		return;
	}
	if (data >= at + (avail - pos)) {
		/* Only holes in this range: look after it. */
		if (end >= seg->size) {
			*ds = *de = seg->size;
			return;
		}
		source_extent(x, si, end, ds, de);
		return;
	}
	*ds = pos + (data - at);
	*de = pos + (data_end - at);
	if (*de > avail)
		*de = avail;
	x->valid = true;
	x->seg = si;
	x->start = *ds;
	x->end = *de;
}

/* Bytes of the plan's RAM segments that kcore_plan_exclude() left out. */
uint64_t kcore_plan_excluded_bytes(const struct kcore_plan *plan)
{
	uint64_t n = 0;

	for (size_t i = 0; i < plan->nsegs; i++) {
		const struct kcore_plan_segment *seg = &plan->segs[i];
		uint64_t a = seg->paddr, b = seg->paddr + seg->size;

		if (seg->cls != KCORE_CLASS_RAM || !seg->has_paddr)
			continue;
		for (const struct kcore_range *r =
			     kcore_excluded_after(plan, a);
		     r && r < plan->excluded + plan->nexcluded && r->start < b;
		     r++)
			n += (r->end < b ? r->end : b) -
			     (r->start > a ? r->start : a);
	}
	return n;
}

/* What the dump reads: the source's data extents of a segment, less the
 * pages kcore_plan_exclude() left out of RAM segments. */
void kcore_extent_next(struct kcore_extents *x, size_t si, uint64_t pos,
		       uint64_t *ds, uint64_t *de)
{
	const struct kcore_plan_segment *seg = &x->plan->segs[si];

	for (;;) {
		source_extent(x, si, pos, ds, de);
		if (!x->plan->nexcluded || seg->cls != KCORE_CLASS_RAM ||
		    !seg->has_paddr || *ds >= seg->size)
			return;
		const struct kcore_range *r =
			kcore_excluded_after(x->plan, seg->paddr + *ds);

		if (!r || r->start >= seg->paddr + *de)
			return;
		if (r->start > seg->paddr + *ds) {
			*de = r->start - seg->paddr;
			return;
		}
		if (r->end - seg->paddr >= seg->size) {
			*ds = *de = seg->size;
			return;
		}
		pos = r->end - seg->paddr;
	}
}
