// SPDX-License-Identifier: MIT
/*
 * The plan builder: growing a plan by pieces of source segments clipped
 * to the selected ranges, the labels it keeps, the page-table addresses
 * found on the way, --vmalloc-range's window.
 */
#include <stdlib.h>
#include <string.h>

#include "select.h"

/* Append n table addresses (taking pa) to the builder's. */
struct kcore_error *kcore_plan_keep_tables(struct plan_builder *b, uint64_t *pa,
					   size_t n)
{
	uint64_t *t;

	b->have_tables = true;
	if (!n) {
		free(pa);
		return NULL;
	}
	t = realloc(b->table_pa, (b->ntable_pa + n) * sizeof(*t));
	if (!t) {
		free(pa);
		return &kcore_error_nomem;
	}
	memcpy(t + b->ntable_pa, pa, n * sizeof(*t));
	free(pa);
	b->table_pa = t;
	b->ntable_pa += n;
	return NULL;
}

static struct kcore_error *plan_add(struct plan_builder *b,
				    const struct kcore_plan_segment *seg)
{
	struct kcore_plan *plan = b->plan;

	if (plan->nsegs == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 16;
		struct kcore_plan_segment *segs =
			realloc(plan->segs, cap * sizeof(*segs));

		if (!segs)
			return &kcore_error_nomem;
		plan->segs = segs;
		b->cap = cap;
	}
	plan->segs[plan->nsegs++] = *seg;
	return NULL;
}

const char *kcore_plan_label(struct kcore_plan *plan, const char *s)
{
	char **labels =
		realloc(plan->labels, (plan->nlabels + 1) * sizeof(*labels));
	char *copy;

	if (!labels)
		return NULL;
	plan->labels = labels;
	copy = strdup(s);
	if (!copy)
		return NULL;
	plan->labels[plan->nlabels++] = copy;
	return copy;
}

/* Add [vaddr, vaddr + size) of source segment seg, clipped to ranges. */
struct kcore_error *kcore_plan_add_piece(struct plan_builder *b,
					 const struct kcore_selection *sel,
					 const struct kcore_segment *seg,
					 uint64_t vaddr, uint64_t size,
					 const char *label)
{
	struct kcore_range whole = { 0, UINT64_MAX };
	const struct kcore_range *ranges = &whole;
	size_t nranges = 1;

	if (sel->nranges) {
		ranges = sel->ranges;
		nranges = sel->nranges;
	}
	for (size_t i = 0; i < nranges; i++) {
		uint64_t base = sel->ranges_physical && sel->nranges
					? seg->paddr + (vaddr - seg->vaddr)
					: vaddr;
		uint64_t lo = base, hi = base + size;
		struct kcore_plan_segment p = { 0 };
		uint64_t rel;

		if (ranges[i].start > lo)
			lo = ranges[i].start;
		if (ranges[i].end < hi)
			hi = ranges[i].end;
		if (lo >= hi)
			continue;
		rel = (vaddr - seg->vaddr) + (lo - base);
		p.vaddr = seg->vaddr + rel;
		p.has_paddr = seg->has_paddr;
		p.paddr = seg->has_paddr ? seg->paddr + rel : UINT64_MAX;
		p.size = hi - lo;
		p.src_offset = seg->offset + rel;
		p.src_avail = rel >= seg->filesz ? 0 : seg->filesz - rel;
		if (p.src_avail > p.size)
			p.src_avail = p.size;
		p.memsz = p.size;
		if (b->keep_memsz)
			p.size = p.src_avail;
		p.flags = seg->flags;
		p.cls = seg->cls;
		p.label = label ? label : seg->label;
		p.src_segment = seg->index;
		struct kcore_error *err = plan_add(b, &p);
		if (err)
			return err;
	}
	return NULL;
}

void kcore_plan_clip_window(const struct kcore_selection *sel, uint64_t *lo,
			    uint64_t *hi)
{
	if (!sel->vmalloc_window.end)
		return;
	if (*lo < sel->vmalloc_window.start)
		*lo = sel->vmalloc_window.start;
	if (*hi > sel->vmalloc_window.end)
		*hi = sel->vmalloc_window.end;
}
