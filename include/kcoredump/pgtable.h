/* SPDX-License-Identifier: MIT */
/* Mapped kernel virtual ranges, from the kernel's page tables. */
#ifndef KCOREDUMP_PGTABLE_H
#define KCOREDUMP_PGTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "source.h"

struct kcore_vrange {
	uint64_t start;
	uint64_t end; /* exclusive */
};

/*
 * The RAM-backed mapped runs within [start, end) of a kernel source
 * (x86_64: needs SYMBOL(init_top_pgt) or SYMBOL(swapper_pg_dir) and
 * NUMBER(pgtable_l5_enabled) in VMCOREINFO).  *ret is malloc()ed, sorted
 * and merged; *ret_tables (optional) counts the tables read.
 */
struct kcore_error *kcore_kernel_mapped_ranges(struct kcore_source *src,
					       uint64_t start, uint64_t end,
					       struct kcore_vrange **ret,
					       size_t *ret_n,
					       size_t *ret_tables);
/*
 * The same, and *ret_table_pa (malloc()ed, *ret_tables entries, in walk
 * order, not deduplicated) the physical addresses of the tables below the
 * root that the walk read: what a reader walking the page tables of these
 * addresses reads besides the root (which is in the kernel image).
 */
struct kcore_error *kcore_kernel_mapped_tables(struct kcore_source *src,
					       uint64_t start, uint64_t end,
					       struct kcore_vrange **ret,
					       size_t *ret_n,
					       size_t *ret_tables,
					       uint64_t **ret_table_pa);

#endif
