// SPDX-License-Identifier: MIT
/*
 * Kernel virtual to physical addresses for sources whose program headers
 * cannot say (kdump and LiME hold physical memory only).  Only exact
 * methods are used: the program headers when they carry both addresses,
 * the x86_64 kernel image mapping (__pa_symbol: vaddr - __START_KERNEL_map
 * + phys_base), the arm64 page table root (swapper_pg_dir -
 * kimage_voffset) and the kernel's own page tables, read from the dump.
 * Anything else is refused rather than guessed.  The source that owns the
 * memory hands in its physical reader: translation never calls it back.
 */
#include <elf.h>
#include <inttypes.h>
#include <stdlib.h>

#include "arm64.h"
#include "internal.h"
#include "kcoredump/vmcoreinfo.h"

/* x86_64 __START_KERNEL_map (arch/x86/include/asm/page_64_types.h). */
#define X86_START_KERNEL_MAP 0xffffffff80000000ull
/* KERNEL_IMAGE_SIZE without KASLR; VMCOREINFO has the real value since
 * Linux v4.15 (commit 1303a27c9c32). */
#define X86_KERNEL_IMAGE_MIN (512ull << 20)
#define PTE_PRESENT	     0x1ull
#define PTE_PSE		     0x80ull
#define PTE_ADDR	     0x000ffffffffff000ull

static bool vi_u64(const struct kcore_source *src, const char *key,
		   uint64_t *ret)
{
	return src->vmcoreinfo &&
	       kcore_vmcoreinfo_get_u64(src->vmcoreinfo, key, ret);
}

static struct kcore_error *unsupported(struct kcore_source *src, uint64_t vaddr,
				       const char *why)
{
	return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
				  "cannot translate virtual address 0x%" PRIx64
				  " exactly: %s",
				  vaddr, why);
}

static bool x86_text(const struct kcore_source *src, uint64_t vaddr,
		     uint64_t *ret)
{
	uint64_t size = X86_KERNEL_IMAGE_MIN;

	vi_u64(src, "NUMBER(KERNEL_IMAGE_SIZE)", &size);
	if (!src->info.has_phys_base || vaddr < X86_START_KERNEL_MAP ||
	    vaddr - X86_START_KERNEL_MAP >= size)
		return false;
	*ret = vaddr - X86_START_KERNEL_MAP + src->info.phys_base;
	return true;
}

static struct kcore_error *novmap(struct kcore_source *src, const char *why)
{
	return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
				  "no exact kernel virtual addresses: %s", why);
}

/*
 * The kernel's page tables as a walker over ranges: the first leaf
 * mapping at or after a virtual address.  Its cost follows the distinct
 * tables, not the address space: a table found to hold no leaf is
 * remembered by physical address and level and skipped wherever another
 * entry points at it again (aliased tables, as a hostile dump can have
 * every direct-map slot point at one empty subtree), and the entries
 * read over the walker's life are bounded by WALK_BUDGET.
 */
#define WALK_BUDGET (1ull << 24)

struct walker {
	struct kcore_source *src;
	kcore_read_paddr_fn read_paddr;
	bool arm64;
	struct kcore_arm64_mmu m; /* arm64 */
	uint64_t root;		  /* physical address of the top table */
	uint64_t mask;		  /* x86_64: address bits of an entry */
	unsigned levels;
	uint64_t visits; /* entries read */
	/* Open-addressed set of (table address | level) without leaves. */
	uint64_t *empty;
	size_t nempty, cap;
};

static struct kcore_error *walker_init(struct kcore_source *src,
				       kcore_read_paddr_fn read_paddr,
				       struct walker *w)
{
	uint64_t root, l5 = 0, sme = 0;

	*w = (struct walker){ .src = src, .read_paddr = read_paddr };
	if (src->info.machine == EM_AARCH64) {
		struct kcore_error *err = kcore_arm64_mmu(src, &w->m);

		if (err)
			return err;
		w->arm64 = true;
		w->levels = w->m.levels;
		w->root = w->m.root - w->m.kimage_voffset;
		return NULL;
	}
	if (!vi_u64(src, "SYMBOL(init_top_pgt)", &root) &&
	    !vi_u64(src, "SYMBOL(swapper_pg_dir)", &root))
		return novmap(src, "VMCOREINFO names no page table root");
	if (!x86_text(src, root, &w->root))
		return novmap(src, "VMCOREINFO lacks NUMBER(phys_base)");
	vi_u64(src, "NUMBER(pgtable_l5_enabled)", &l5);
	vi_u64(src, "NUMBER(sme_mask)", &sme);
	w->levels = l5 ? 5 : 4;
	w->mask = PTE_ADDR & ~sme;
	return NULL;
}

static void walker_deinit(struct walker *w)
{
	free(w->empty);
	w->empty = NULL;
}

static uint64_t empty_key(uint64_t table, unsigned level)
{
	/* Tables are 4 KiB-aligned: the level fits below the address. */
	return (table & ~0xfffull) | level;
}

static size_t empty_slot(const struct walker *w, uint64_t key)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32) & (w->cap - 1);
}

static bool empty_has(const struct walker *w, uint64_t table, unsigned level)
{
	uint64_t key = empty_key(table, level);

	if (!w->cap)
		return false;
	for (size_t i = empty_slot(w, key);; i = (i + 1) & (w->cap - 1)) {
		if (w->empty[i] == key)
			return true;
		if (!w->empty[i])
			return false;
	}
}

/* Remember an empty table; without memory, only the saving is lost. */
static void empty_add(struct walker *w, uint64_t table, unsigned level)
{
	uint64_t key = empty_key(table, level);

	if (2 * (w->nempty + 1) > w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		uint64_t *t = calloc(cap, sizeof(*t)), *old = w->empty;
		size_t oldcap = w->cap;

		if (!t)
			return;
		w->empty = t;
		w->cap = cap;
		for (size_t i = 0; i < oldcap; i++) {
			size_t j;

			if (!old[i])
				continue;
			for (j = empty_slot(w, old[i]); t[j];
			     j = (j + 1) & (cap - 1))
				;
			t[j] = old[i];
		}
		free(old);
	}
	for (size_t i = empty_slot(w, key);; i = (i + 1) & (w->cap - 1)) {
		if (w->empty[i] == key)
			return;
		if (!w->empty[i]) {
			w->empty[i] = key;
			w->nempty++;
			return;
		}
	}
}

static unsigned level_shift(const struct walker *w, unsigned level)
{
	(void)w;
	return 12 + 9 * (level - 1); /* 4 KiB granule on both */
}

/*
 * The first leaf in the table at physical address table (level) that
 * maps an address in [va, last], where the table covers all of them:
 * *found, *ret_va (the leaf's first address, aligned to its size), *ret_pa
 * and *ret_size.  A table missing from the dump is UNSUPPORTED; more than
 * WALK_BUDGET entries read is FORMAT.
 */
static struct kcore_error *scan(struct walker *w, uint64_t table,
				unsigned level, uint64_t va, uint64_t last,
				bool *found, uint64_t *ret_va, uint64_t *ret_pa,
				uint64_t *ret_size)
{
	unsigned shift = level_shift(w, level);
	uint64_t size = 1ull << shift;

	for (;;) {
		uint64_t idx, e, lo = va & ~(size - 1), hi = lo + size;
		unsigned char b[8];
		struct kcore_error *err;
		bool leaf, valid;

		if (++w->visits > WALK_BUDGET)
			return kcore_error_create(
				KCORE_ERR_FORMAT, 0, w->src->path,
				"the kernel's page tables: more than %llu "
				"entries read while looking for mapped "
				"addresses (tables that point at each other "
				"over and over)",
				(unsigned long long)WALK_BUDGET);
		idx = w->arm64 ? kcore_arm64_index(&w->m, va, level)
			       : (va >> shift) & 511;
		err = w->read_paddr(w->src, table + idx * 8, b, 8);
		if (err) {
			kcore_error_destroy(err);
			return unsupported(w->src, va,
					   "a page table is not in the dump");
		}
		e = kcore_load(b, 8, false);
		if (w->arm64) {
			enum kcore_arm64_desc d =
				kcore_arm64_desc(&w->m, e, level);

			valid = d != ARM64_INVALID;
			leaf = d == ARM64_LEAF;
		} else {
			valid = e & PTE_PRESENT;
			leaf = level == 1 || (level <= 3 && (e & PTE_PSE));
		}
		if (valid && leaf) {
			uint64_t oa = w->arm64 ? kcore_arm64_oa(&w->m, e)
					       : e & w->mask;

			*ret_va = lo;
			*ret_pa = oa & ~(size - 1);
			*ret_size = size;
			*found = true;
			return NULL;
		}
		if (valid && level > 1) {
			uint64_t child = w->arm64 ? kcore_arm64_oa(&w->m, e)
						  : e & w->mask;
			/* The child's whole table: hi wraps at the top. */
			bool whole = va == lo && last >= hi - 1;

			if (!empty_has(w, child, level - 1)) {
				err = scan(w, child, level - 1, va,
					   last < hi - 1 ? last : hi - 1, found,
					   ret_va, ret_pa, ret_size);
				if (err || *found)
					return err;
				if (whole)
					empty_add(w, child, level - 1);
			}
		}
		if (last <= hi - 1)
			break; /* hi - 1: the top of the address space */
		va = hi;
	}
	return NULL;
}

static struct kcore_error *next_leaf(struct walker *w, uint64_t va,
				     uint64_t end, bool *found,
				     uint64_t *ret_va, uint64_t *ret_pa,
				     uint64_t *ret_size)
{
	*found = false;
	if (end <= va)
		return NULL;
	return scan(w, w->root, w->levels, va, end - 1, found, ret_va, ret_pa,
		    ret_size);
}

/* One address through the page tables, as the page-table iterator sees
 * it: [vaddr, vaddr]. */
static struct kcore_error *walk_one(struct kcore_source *src, uint64_t vaddr,
				    kcore_read_paddr_fn read_paddr,
				    uint64_t *ret_paddr, uint64_t *ret_page)
{
	uint64_t root, va = 0, pa = 0, size = 0;
	struct kcore_error *err;
	struct walker w;
	bool found;

	if (src->info.machine == EM_X86_64) {
		unsigned bits;
		uint64_t l5 = 0;

		if (!vi_u64(src, "SYMBOL(init_top_pgt)", &root) &&
		    !vi_u64(src, "SYMBOL(swapper_pg_dir)", &root))
			return unsupported(src, vaddr,
					   "VMCOREINFO names no page table "
					   "root (SYMBOL(init_top_pgt))");
		if (!x86_text(src, root, &pa))
			return unsupported(
				src, vaddr,
				"VMCOREINFO lacks NUMBER(phys_base), "
				"so the page tables cannot be found");
		vi_u64(src, "NUMBER(pgtable_l5_enabled)", &l5);
		bits = l5 ? 57 : 48;
		/* Non-canonical addresses are never mapped. */
		if ((uint64_t)((int64_t)(vaddr << (64 - bits)) >>
			       (64 - bits)) != vaddr)
			return kcore_error_create(KCORE_ERR_INVALID, 0,
						  src->path,
						  "virtual address 0x%" PRIx64
						  " is not canonical",
						  vaddr);
	}
	err = walker_init(src, read_paddr, &w);
	if (err)
		return err;
	/* arm64: only the kernel half (TTBR1), the top va_bits..63 ones. */
	if (w.arm64 && (vaddr | ((1ull << w.m.va_bits) - 1)) != ~0ull)
		err = kcore_error_create(KCORE_ERR_INVALID, 0, src->path,
					 "virtual address 0x%" PRIx64
					 " is not a %u-bit arm64 kernel "
					 "address",
					 vaddr, w.m.va_bits);
	if (!err) {
		found = false;
		err = scan(&w, w.root, w.levels, vaddr, vaddr, &found, &va, &pa,
			   &size);
	}
	if (!err && !found)
		err = kcore_error_create(
			KCORE_ERR_INVALID, 0, src->path,
			"virtual address 0x%" PRIx64
			" is not mapped in the kernel's page tables",
			vaddr);
	walker_deinit(&w);
	if (err)
		return err;
	*ret_paddr = pa + (vaddr - va);
	*ret_page = size;
	return NULL;
}

struct kcore_error *kcore_translate(struct kcore_source *src, uint64_t vaddr,
				    kcore_read_paddr_fn read_paddr,
				    uint64_t *ret_paddr, uint64_t *ret_len)
{
	uint64_t page = src->info.page_size ? src->info.page_size : 4096;
	uint64_t paddr = 0, len;
	struct kcore_error *err;

	if (!src->info.physical_only) {
		for (size_t i = 0; i < src->nsegments; i++) {
			const struct kcore_segment *s = &src->segments[i];

			if (s->type != PT_LOAD || !s->has_paddr ||
			    vaddr < s->vaddr || vaddr - s->vaddr >= s->memsz)
				continue;
			*ret_paddr = s->paddr + (vaddr - s->vaddr);
			if (ret_len)
				*ret_len = s->memsz - (vaddr - s->vaddr);
			return NULL;
		}
	}
	if (src->info.machine != EM_X86_64 && src->info.machine != EM_AARCH64)
		return unsupported(src, vaddr,
				   src->info.physical_only
					   ? "the dump holds physical memory "
					     "only and gives no direct map base"
					   : "no segment maps it");
	if (!src->vmcoreinfo)
		return unsupported(src, vaddr,
				   src->info.physical_only
					   ? "the dump holds physical memory "
					     "only and has no VMCOREINFO"
					   : "no segment maps it and there is "
					     "no VMCOREINFO");
	if (src->info.machine == EM_X86_64 && x86_text(src, vaddr, &paddr)) {
		len = page - (vaddr & (page - 1));
	} else {
		uint64_t size = page;

		err = walk_one(src, vaddr, read_paddr, &paddr, &size);
		if (err)
			return err;
		len = size - (vaddr & (size - 1));
	}
	*ret_paddr = paddr;
	if (ret_len)
		*ret_len = len;
	return NULL;
}

/* The kernel image's and the direct map's place, from the page tables. */
static struct kcore_error *walk_vmap(struct kcore_source *src, struct walker *w,
				     struct kcore_kernel_vmap *v)
{
	uint64_t text_lo, text_hi, text_pa_of_lo, dm_lo, dm_hi;
	uint64_t first = 0, last = 0, va, pa, size, cached_va = 0,
		 cached_pa = 0, cached_size = 0;
	bool found, any = false;
	struct kcore_error *err;

	if (w->arm64) {
		uint64_t modules_end, koff, stext;

		/* The image at KIMAGE_VADDR (MODULES_END) + kaslr_offset(),
		 * mapped at kimage_voffset from its physical address. */
		if (!vi_u64(src, "NUMBER(MODULES_END)", &modules_end) ||
		    !vi_u64(src, "KERNELOFFSET", &koff) ||
		    !vi_u64(src, "SYMBOL(_stext)", &stext))
			return novmap(src, "VMCOREINFO lacks "
					   "NUMBER(MODULES_END), KERNELOFFSET "
					   "or SYMBOL(_stext)");
		text_lo = modules_end + koff;
		if (stext < text_lo || stext - text_lo >= (2ull << 20))
			return novmap(src,
				      "SYMBOL(_stext) is not in the first "
				      "2 MiB of KIMAGE_VADDR + KERNELOFFSET");
		text_hi = text_lo + (1ull << 30);
		text_pa_of_lo = text_lo - w->m.kimage_voffset;
		/* The linear map: the lower half of the kernel's space. */
		dm_lo = ~0ull << w->m.va_bits;
		dm_hi = ~0ull << (w->m.va_bits - 1);
	} else {
		uint64_t isize = X86_KERNEL_IMAGE_MIN;

		vi_u64(src, "NUMBER(KERNEL_IMAGE_SIZE)", &isize);
		text_lo = X86_START_KERNEL_MAP;
		text_hi = X86_START_KERNEL_MAP + isize;
		if (text_hi < text_lo)
			text_hi = UINT64_MAX;
		text_pa_of_lo = src->info.phys_base;
		/* page_offset_base: the direct map comes first in the
		 * randomised region (arch/x86/mm/kaslr.c), which starts at
		 * __PAGE_OFFSET_BASE_L4/L5 and ends below the CPU entry
		 * area. */
		dm_lo = w->levels == 5 ? 0xff11000000000000ull
				       : 0xffff888000000000ull;
		dm_hi = 0xfffffe0000000000ull;
	}
	/* The kernel image: every leaf of its mapping follows the
	 * __pa_symbol() offset; the PT_LOAD spans the first to the last, as
	 * /proc/kcore's [_text, _end) does (the gaps the kernel unmapped
	 * after boot included). */
	for (va = text_lo; va < text_hi;) {
		err = next_leaf(w, va, text_hi, &found, &va, &pa, &size);
		if (err)
			return err;
		if (!found || va >= text_hi)
			break;
		if (pa != va - text_lo + text_pa_of_lo) {
			if (w->arm64 && any)
				break; /* past the image: another area */
			return novmap(src, "the kernel image mapping does not "
					   "follow its physical offset");
		}
		/* arm64: the image ends at the first big gap. */
		if (w->arm64 && any && va - last > (64ull << 20))
			break;
		if (!any || va < first)
			first = va;
		any = true;
		last = va + size;
		if (last < va)
			break;
		va = last;
	}
	if (!any)
		return novmap(src, "the kernel image is not mapped in the "
				   "dump's page tables");
	if (w->arm64 && first > text_lo)
		first = text_lo; /* [_text, _stext) may be unmapped */
	v->text_vaddr = first;
	v->text_paddr = first - text_lo + text_pa_of_lo;
	v->text_size = last - first;
	/* The direct map: its first leaf gives the base; every physical
	 * segment's first and last byte must translate by it. */
	err = next_leaf(w, dm_lo, dm_hi, &found, &va, &pa, &size);
	if (err)
		return err;
	if (!found)
		return novmap(src, "no direct map in the page "
				   "tables");
	v->direct_map = va - pa;
	for (size_t i = 0; i < src->nsegments; i++) {
		const struct kcore_segment *s = &src->segments[i];
		uint64_t ends[2];

		if (s->type != PT_LOAD || !s->has_paddr || !s->memsz)
			continue;
		ends[0] = s->paddr;
		ends[1] = s->paddr + s->memsz - 1;
		for (int k = 0; k < 2; k++) {
			uint64_t want = v->direct_map + ends[k];

			if (cached_size && want >= cached_va &&
			    want - cached_va < cached_size) {
				if (cached_pa + (want - cached_va) != ends[k])
					goto mismatch;
				continue;
			}
			err = next_leaf(w, want, want + 1, &found, &va, &pa,
					&size);
			if (err)
				return err;
			if (!found || pa + (want - va) != ends[k])
				goto mismatch;
			cached_va = va;
			cached_pa = pa;
			cached_size = size;
		}
	}
	return NULL;
mismatch:
	return novmap(src, "the direct map does not cover every physical "
			   "segment at one offset");
}

/* Memoised in the source: computed once. */
static struct kcore_error *compute_vmap(struct kcore_source *src,
					kcore_read_paddr_fn read_paddr,
					struct kcore_kernel_vmap *v)
{
	struct walker w;
	struct kcore_error *err;

	if (src->info.kind != KCORE_SOURCE_VMCORE || !src->vmcoreinfo ||
	    (src->info.machine != EM_X86_64 && src->info.machine != EM_AARCH64))
		return novmap(
			src, "not a vmcore with VMCOREINFO of x86_64 or arm64");
	err = walker_init(src, read_paddr, &w);
	if (err)
		return err;
	err = walk_vmap(src, &w, v);
	walker_deinit(&w);
	return err;
}

struct kcore_error *kcore_source_kernel_vmap(struct kcore_source *src,
					     kcore_read_paddr_fn read_paddr,
					     struct kcore_kernel_vmap *ret)
{
	if (!src->vmap_done) {
		src->vmap_done = true;
		src->vmap_err = compute_vmap(src, read_paddr, &src->vmap);
	}
	if (src->vmap_err)
		return kcore_error_create(src->vmap_err->code, 0, src->path,
					  "%s", src->vmap_err->message);
	*ret = src->vmap;
	return NULL;
}
