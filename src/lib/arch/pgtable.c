// SPDX-License-Identifier: MIT
/*
 * Mapped kernel virtual ranges from the kernel's own page tables (x86_64,
 * 4- and 5-level; arm64 with 4 KiB pages, 3 to 5 levels: arm64.h).
 * /proc/vmallocinfo prints hashed addresses unless kernel.kptr_restrict is 1
 * (and the reader has CAP_SYSLOG), so the page tables, read through kcore
 * itself, are how a dump finds the mapped vmalloc pages on a default system.
 * Empty upper-level entries skip 512 GiB (or 256 TiB), 1 GiB and 2 MiB at a
 * time; only RAM-backed mappings are reported (kcore reads ioremap space as
 * zeros).
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "arm64.h"
#include "internal.h"
#include "kcoredump/pgtable.h"

#define PTE_PRESENT 0x1ull
#define PTE_PSE	    0x80ull
#define PTE_ADDR    0x000ffffffffff000ull
#define ENTRIES	    512
#define TABLE	    4096

struct walk {
	struct kcore_source *src;
	uint64_t addr_mask;
	unsigned levels;
	uint64_t start, end; /* [start, end) wanted */
	struct kcore_vrange *runs;
	size_t nruns, cap;
	size_t tables;	    /* tables read */
	uint64_t *table_pa; /* NULL, or: their addresses */
	size_t table_cap;
	const struct kcore_arm64_mmu *arm64; /* NULL: x86_64 */
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

static struct kcore_error *add_run(struct walk *w, uint64_t lo, uint64_t hi)
{
	if (lo < w->start)
		lo = w->start;
	if (hi > w->end)
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

static uint64_t canonical(const struct walk *w, uint64_t va)
{
	unsigned bits = w->levels == 5 ? 57 : 48;

	if (w->arm64)
		return kcore_arm64_canonical(w->arm64, va);

	if (va & (1ull << (bits - 1)))
		va |= ~0ull << bits;
	return va;
}

/* Walk table (already read) at level, covering addresses from base. */
static struct kcore_error *walk_table(struct walk *w, const uint64_t *table,
				      unsigned level, uint64_t base)
{
	unsigned shift = 12 + 9 * (level - 1);
	uint64_t span = 1ull << shift;
	uint64_t *child = NULL;
	struct kcore_error *err = NULL;

	unsigned n = w->arm64 ? kcore_arm64_entries(w->arm64, level) : ENTRIES;

	for (unsigned i = 0; i < n && !err; i++) {
		uint64_t va = canonical(w, base + (uint64_t)i * span);
		uint64_t e = kcore_load((const unsigned char *)&table[i], 8,
					false),
			 pa;
		bool leaf;

		/* Entirely outside [start, end)? (va + span may wrap to 0.) */
		if (va + span - 1 < w->start || va >= w->end)
			continue;
		if (w->arm64) {
			enum kcore_arm64_desc d =
				kcore_arm64_desc(w->arm64, e, level);

			if (d == ARM64_INVALID)
				continue;
			leaf = d == ARM64_LEAF;
			pa = kcore_arm64_oa(w->arm64, e);
		} else {
			if (!(e & PTE_PRESENT))
				continue;
			leaf = level == 1 || (level <= 3 && (e & PTE_PSE));
			pa = e & w->addr_mask;
		}
		if (leaf) {
			pa &= ~(span - 1);
			if (is_ram(w->src, pa, span))
				err = add_run(w, va, va + span);
			continue;
		}
		if (!child) {
			child = malloc(TABLE);
			if (!child)
				return &kcore_error_nomem;
		}
		if (!is_ram(w->src, pa, TABLE))
			continue;
		err = kcore_source_read_paddr(w->src, pa, child, TABLE);
		if (err) { /* a table we cannot read: treat as unmapped */
			kcore_error_destroy(err);
			err = NULL;
			continue;
		}
		if (w->table_pa && w->tables == w->table_cap) {
			size_t cap = w->table_cap ? 2 * w->table_cap : 64;
			uint64_t *t = realloc(w->table_pa, cap * sizeof(*t));

			if (!t) {
				free(child);
				return &kcore_error_nomem;
			}
			w->table_pa = t;
			w->table_cap = cap;
		}
		if (w->table_pa)
			w->table_pa[w->tables] = pa;
		w->tables++;
		err = walk_table(w, child, level - 1, va);
	}
	free(child);
	return err;
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
	struct walk w = { .src = src, .start = start, .end = end };
	uint64_t root, l5 = 0, sme = 0;
	uint64_t *table;
	struct kcore_error *err;
	struct kcore_arm64_mmu arm64;

	if (src->info.machine == EM_AARCH64) {
		err = kcore_arm64_mmu(src, &arm64);
		if (err)
			return err;
		w.arm64 = &arm64;
		w.levels = arm64.levels;
		table = malloc(TABLE);
		w.table_pa =
			ret_table_pa ? malloc(64 * sizeof(uint64_t)) : NULL;
		w.table_cap = w.table_pa ? 64 : 0;
		if (!table || (ret_table_pa && !w.table_pa)) {
			free(table);
			free(w.table_pa);
			return &kcore_error_nomem;
		}
		err = kcore_source_read_paddr(
			src, arm64.root - arm64.kimage_voffset, table,
			kcore_arm64_entries(&arm64, arm64.levels) * 8);
		if (!err)
			err = walk_table(&w, table, w.levels, 0);
		free(table);
		goto out;
	}
	if (src->info.machine != EM_X86_64)
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
					  "page table walks are implemented "
					  "for x86_64 and arm64 only");
	if (!src->vmcoreinfo ||
	    (!kcore_vmcoreinfo_get_u64(src->vmcoreinfo, "SYMBOL(init_top_pgt)",
				       &root) &&
	     !kcore_vmcoreinfo_get_u64(src->vmcoreinfo,
				       "SYMBOL(swapper_pg_dir)", &root)))
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
					  "VMCOREINFO has no page table root "
					  "(SYMBOL(init_top_pgt))");
	kcore_vmcoreinfo_get_u64(src->vmcoreinfo, "NUMBER(pgtable_l5_enabled)",
				 &l5);
	kcore_vmcoreinfo_get_u64(src->vmcoreinfo, "NUMBER(sme_mask)", &sme);
	w.levels = l5 ? 5 : 4;
	w.addr_mask = PTE_ADDR & ~sme;
	table = malloc(TABLE);
	w.table_pa = ret_table_pa ? malloc(64 * sizeof(uint64_t)) : NULL;
	w.table_cap = w.table_pa ? 64 : 0;
	if (!table || (ret_table_pa && !w.table_pa)) {
		free(table);
		free(w.table_pa);
		return &kcore_error_nomem;
	}
	err = kcore_source_read_vaddr(src, root, table, TABLE);
	if (!err)
		err = walk_table(&w, table, w.levels, 0);
	free(table);
out:
	if (err) {
		free(w.runs);
		free(w.table_pa);
		return err;
	}
	if (ret_table_pa)
		*ret_table_pa = w.table_pa;
	*ret = w.runs;
	*ret_n = w.nruns;
	if (ret_tables)
		*ret_tables = w.tables;
	return NULL;
}
