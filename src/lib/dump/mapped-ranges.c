// SPDX-License-Identifier: MIT
/*
 * Mapped kernel virtual ranges from the kernel's own page tables, through
 * the page-table iterator (arch.h).  /proc/vmallocinfo prints hashed
 * addresses unless kernel.kptr_restrict is 1 (and the reader has
 * CAP_SYSLOG), so the page tables, read through kcore itself, are how a
 * dump finds the mapped vmalloc pages on a default system.  Only
 * RAM-backed mappings are reported (kcore reads ioremap space as zeros),
 * and only tables in RAM are read.
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "kcoredump/kcore.h"
#include "kcoredump/pgtable.h"
#include "source-impl.h"

struct runs {
	uint64_t start, end; /* [start, end) wanted */
	struct kcore_vrange *runs;
	size_t nruns, cap;
};

static bool is_ram(const struct kcore_source *src, uint64_t pa, uint64_t len)
{
	for (size_t i = 0; i < src->nsegments; i++) {
		const struct kcore_segment *s = &src->segments[i];

		if (s->cls == KCORE_CLASS_RAM && pa >= s->paddr &&
		    pa - s->paddr < s->memsz &&
		    len <= s->memsz - (pa - s->paddr))
			return true;
	}
	return false;
}

/* Tables are read from RAM only. */
static struct kcore_error *read_ram(struct kcore_source *src, uint64_t paddr,
				    void *buf, size_t len)
{
	if (!is_ram(src, paddr, len))
		return kcore_error_create(KCORE_ERR_INVALID, 0, src->path,
					  "a page table outside RAM");
	return kcore_source_read_paddr(src, paddr, buf, len);
}

static struct kcore_error *add_run(struct runs *w, uint64_t lo, uint64_t hi)
{
	if (lo < w->start)
		lo = w->start;
	if (hi > w->end || hi < lo)
		hi = w->end;
	if (lo >= hi)
		return NULL;
	if (w->nruns && w->runs[w->nruns - 1].end == lo) {
		w->runs[w->nruns - 1].end = hi;
		return NULL;
	}
	if (w->nruns == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		struct kcore_vrange *r = realloc(w->runs, cap * sizeof(*r));

		if (!r)
			return &kcore_error_nomem;
		w->runs = r;
		w->cap = cap;
	}
	w->runs[w->nruns++] = (struct kcore_vrange){ lo, hi };
	return NULL;
}

struct kcore_error *kcore_kernel_mapped_ranges(struct kcore_source *src,
					       uint64_t start, uint64_t end,
					       struct kcore_vrange **ret,
					       size_t *ret_n,
					       size_t *ret_tables)
{
	return kcore_kernel_mapped_tables(src, start, end, ret, ret_n,
					  ret_tables, NULL);
}

struct kcore_error *kcore_kernel_mapped_tables(struct kcore_source *src,
					       uint64_t start, uint64_t end,
					       struct kcore_vrange **ret,
					       size_t *ret_n,
					       size_t *ret_tables,
					       uint64_t **ret_table_pa)
{
	uint64_t *table_pa = NULL;
	size_t ntable_pa = 0;
	struct runs w = { .start = start, .end = end };
	struct kcore_pgtable_iter *it;
	struct kcore_pgtable_leaf l;
	struct kcore_error *err;
	uint64_t va = start, ram = 0;
	size_t tables;
	bool found;

	/* The budget grows with RAM: a real table maps each page of it
	 * a few times at most; aliasing tables end at it. */
	for (size_t i = 0; i < src->nsegments; i++)
		if (src->segments[i].cls == KCORE_CLASS_RAM)
			ram += src->segments[i].memsz / 4096;
	err = kcore_pgtable_iter_create(src, read_ram, true,
					KCORE_PGTABLE_BUDGET + 8 * ram, &it);
	if (err)
		return err;
	if (ret_table_pa)
		kcore_pgtable_iter_record_tables(it);
	while (va < end) {
		err = kcore_pgtable_iter_next(it, va, end, &found, &l);
		if (err || !found)
			break;
		if (is_ram(src, l.pa, l.size))
			err = add_run(&w, l.va, l.va + l.size);
		if (err || l.va + l.size <= l.va)
			break; /* the top of the address space */
		va = l.va + l.size;
	}
	tables = kcore_pgtable_iter_tables(it);
	if (!err && ret_table_pa)
		err = kcore_pgtable_iter_take_tables(it, &table_pa, &ntable_pa);
	kcore_pgtable_iter_destroy(it);
	if (err) {
		free(w.runs);
		return err;
	}
	*ret = w.runs;
	*ret_n = w.nruns;
	if (ret_table_pa) {
		/* The tables below the root: *ret_tables of them. */
		*ret_table_pa = table_pa;
		tables = ntable_pa;
	}
	if (ret_tables)
		*ret_tables = tables;
	return NULL;
}
