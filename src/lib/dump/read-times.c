// SPDX-License-Identifier: MIT
/*
 * The time map of a dump (read-times.h): a few thousand cells at most, so
 * that our note and the record can carry it whole.  CLOCK_BOOTTIME goes
 * on like CLOCK_MONOTONIC while the read runs; the golden outputs' shim
 * fixes it, so that their bytes do not depend on the machine's speed.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kcoredump/kcore.h"
#include "read-times.h"

#define MIN_GRAIN (4ull << 20)

uint64_t kcore_read_times_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t cells_of(const struct kcore_plan *plan, uint64_t grain)
{
	uint64_t n = 0;

	for (size_t i = 0; i < plan->nsegs; i++)
		n += (plan->segs[i].size + grain - 1) / grain;
	return n;
}

struct kcore_error *kcore_read_times_init(struct kcore_read_times *tm,
					  const struct kcore_plan *plan,
					  struct kcore_dump_result *res)
{
	uint64_t grain = MIN_GRAIN, n, largest = 0;
	size_t c = 0;

	memset(tm, 0, sizeof(*tm));
	for (size_t i = 0; i < plan->nsegs; i++)
		if (plan->segs[i].size > largest)
			largest = plan->segs[i].size;
	/* Each segment may take one cell more than its share: a plan of
	 * many small segments (vmalloc areas, a process's mappings) keeps
	 * the grain of its large ones. */
	while ((n = cells_of(plan, grain)) >
		       KCORE_READ_TIME_CELLS + plan->nsegs &&
	       grain < largest)
		grain *= 2;
	tm->res = res;
	tm->grain = grain;
	tm->nsegs = plan->nsegs;
	tm->base = calloc(plan->nsegs + 1, sizeof(*tm->base));
	res->read_times = calloc(n ? n : 1, sizeof(*res->read_times));
	if (!tm->base || !res->read_times)
		return &kcore_error_nomem;
	for (size_t i = 0; i < plan->nsegs; i++) {
		uint64_t size = plan->segs[i].size;

		tm->base[i] = c;
		for (uint64_t off = 0; off < size; off += grain, c++)
			res->read_times[c] = (struct kcore_read_time){
				.segment = i,
				.offset = off,
				.length =
					size - off < grain ? size - off : grain,
			};
	}
	tm->base[plan->nsegs] = c;
	res->nread_times = c;
	res->read_time_cells = c;
	res->read_time_grain = grain;
	tm->t0 = kcore_read_times_now();
	return NULL;
}

void kcore_read_times_reserve(struct kcore_read_times *tm,
			      const struct kcore_plan *plan,
			      struct kcore_extents *ext)
{
	size_t n = 0;

	for (size_t si = 0; si < plan->nsegs; si++) {
		const struct kcore_plan_segment *seg = &plan->segs[si];
		uint64_t off = 0, ds, de;

		if (seg->shared) {
			n += tm->base[si + 1] - tm->base[si];
			continue;
		}
		kcore_extents_rewind(ext);
		while (off < seg->size) {
			kcore_extent_next(ext, si, off, &ds, &de);
			if (ds >= seg->size)
				break;
			/* The cells [ds, de) touches, one counted once. */
			uint64_t first = ds / tm->grain,
				 last = (de - 1) / tm->grain;

			if (off && first == (off - 1) / tm->grain)
				first++;
			if (last >= first)
				n += last - first + 1;
			off = de;
		}
	}
	kcore_extents_rewind(ext);
	tm->res->read_time_cells =
		n < KCORE_READ_TIME_NOTE_CELLS ? n : KCORE_READ_TIME_NOTE_CELLS;
}

static void cell_add(struct kcore_read_time *c, uint64_t start, uint64_t end)
{
	if (!c->read || start < c->start_ns)
		c->start_ns = start;
	if (!c->read || end > c->end_ns)
		c->end_ns = end;
	c->read = true;
}

void kcore_read_times_add(struct kcore_read_times *tm, size_t seg, uint64_t off,
			  uint64_t len, uint64_t t)
{
	uint64_t now = kcore_read_times_now();
	uint64_t start = t > tm->t0 ? t - tm->t0 : 0;
	uint64_t end = now > tm->t0 ? now - tm->t0 : 0;

	if (!len || seg >= tm->nsegs)
		return;
	for (uint64_t k = off / tm->grain; k <= (off + len - 1) / tm->grain;
	     k++) {
		size_t i = tm->base[seg] + k;

		if (i < tm->base[seg + 1])
			cell_add(&tm->res->read_times[i], start, end);
	}
}

void kcore_read_times_finish(struct kcore_read_times *tm,
			     const struct kcore_plan *plan)
{
	struct kcore_read_time *t = tm->res->read_times;
	size_t n = 0;

	for (size_t si = 0; si < plan->nsegs && tm->base; si++) {
		const struct kcore_plan_segment *s = &plan->segs[si];

		if (!s->shared || s->share_seg >= si)
			continue;
		for (size_t i = tm->base[si]; i < tm->base[si + 1]; i++) {
			uint64_t lo = s->share_off + t[i].offset;
			uint64_t hi = lo + t[i].length - 1;

			for (uint64_t k = lo / tm->grain; k <= hi / tm->grain;
			     k++) {
				size_t j = tm->base[s->share_seg] + k;

				if (j < tm->base[s->share_seg + 1] && t[j].read)
					cell_add(&t[i], t[j].start_ns,
						 t[j].end_ns);
			}
		}
	}
	for (size_t i = 0; i < tm->res->nread_times; i++)
		if (t[i].read)
			t[n++] = t[i];
	tm->res->nread_times = n;
}

void kcore_read_times_deinit(struct kcore_read_times *tm)
{
	free(tm->base);
	tm->base = NULL;
}
