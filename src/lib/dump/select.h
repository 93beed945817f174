/* SPDX-License-Identifier: MIT */
/*
 * Internal to selection (dump/): the plan builder that select.c (the
 * plan of a source and a selection), select-builder.c (the builder's
 * pieces, labels and table addresses) and select-vmalloc.c (the live
 * kernel's vmalloc areas and the page tables that map them) share.
 */
#ifndef KCOREDUMP_SELECT_H
#define KCOREDUMP_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcoredump/dump.h"
#include "source-impl.h"

#define CLASS_BIT(c) (1u << (c))

struct plan_builder {
	struct kcore_plan *plan;
	size_t cap;
	/* Process cores: what the file lacks stays p_memsz-only (gdb reads
	 * it from the mapped files), never zeros in the dump. */
	bool keep_memsz;
	/* --vmalloc-range on a live kernel: the physical addresses of the
	 * page tables that map the chosen areas (may repeat), once known. */
	uint64_t *table_pa;
	size_t ntable_pa;
	bool have_tables;
};

/* Append n table addresses (taking pa) to the builder's. */
struct kcore_error *kcore_plan_keep_tables(struct plan_builder *b, uint64_t *pa,
					   size_t n);
/* A copy of s that the plan keeps (freed with it); NULL when out of
 * memory. */
const char *kcore_plan_label(struct kcore_plan *plan, const char *s);
/* Add [vaddr, vaddr + size) of source segment seg, clipped to ranges. */
struct kcore_error *kcore_plan_add_piece(struct plan_builder *b,
					 const struct kcore_selection *sel,
					 const struct kcore_segment *seg,
					 uint64_t vaddr, uint64_t size,
					 const char *label);
/* Clip [*lo, *hi) to --vmalloc-range's window, when there is one. */
void kcore_plan_clip_window(const struct kcore_selection *sel, uint64_t *lo,
			    uint64_t *hi);
/* Live kernel: one output segment per mapped vmalloc area. */
struct kcore_error *kcore_plan_vmalloc_live(struct plan_builder *b,
					    struct kcore_source *src,
					    const struct kcore_selection *sel,
					    unsigned classes);
/* --vmalloc-range on a live kernel: the page-table pages that map the
 * areas (see select-vmalloc.c). */
struct kcore_error *kcore_plan_page_tables(struct plan_builder *b,
					   struct kcore_source *src,
					   const struct kcore_selection *sel);

#endif
