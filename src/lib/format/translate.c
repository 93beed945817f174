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

#include "arch.h"
#include "source-impl.h"

static struct kcore_error *unsupported(struct kcore_source *src, uint64_t vaddr,
				       const char *why)
{
	return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
				  "cannot translate virtual address 0x%" PRIx64
				  " exactly: %s",
				  vaddr, why);
}

static struct kcore_error *novmap(struct kcore_source *src, const char *why)
{
	return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
				  "no exact kernel virtual addresses: %s", why);
}

/* An UNSUPPORTED err said again as wrapped says it (which takes its
 * message); others as they are. */
static struct kcore_error *why(struct kcore_error *err,
			       struct kcore_error *wrapped)
{
	if (err->code != KCORE_ERR_UNSUPPORTED) {
		kcore_error_destroy(wrapped);
		return err;
	}
	kcore_error_destroy(err);
	return wrapped;
}

/* One address through the page tables: its leaf. */
static struct kcore_error *walk_one(struct kcore_source *src, uint64_t vaddr,
				    kcore_read_paddr_fn read_paddr,
				    uint64_t *ret_paddr, uint64_t *ret_page)
{
	const struct kcore_pgtable *pt;
	struct kcore_pgtable_iter *it;
	struct kcore_pgtable_leaf leaf;
	struct kcore_error *err;
	bool found = false;

	err = kcore_pgtable_iter_create(src, read_paddr, false, 0, &it);
	if (err)
		return why(err, unsupported(src, vaddr, err->message));
	pt = kcore_pgtable_iter_format(it);
	if (vaddr >= pt->hole_lo && vaddr < pt->hole_hi)
		err = kcore_error_create(KCORE_ERR_INVALID, 0, src->path,
					 "virtual address 0x%" PRIx64 " %s",
					 vaddr, pt->hole_why);
	else
		err = kcore_pgtable_iter_next(it, vaddr, vaddr + 1, &found,
					      &leaf);
	if (!err && !found)
		err = kcore_error_create(
			KCORE_ERR_INVALID, 0, src->path,
			"virtual address 0x%" PRIx64
			" is not mapped in the kernel's page tables",
			vaddr);
	kcore_pgtable_iter_destroy(it);
	if (err)
		return err;
	*ret_paddr = leaf.pa + (vaddr - leaf.va);
	*ret_page = leaf.size;
	return NULL;
}

struct kcore_error *kcore_translate(struct kcore_source *src, uint64_t vaddr,
				    kcore_read_paddr_fn read_paddr,
				    uint64_t *ret_paddr, uint64_t *ret_len)
{
	uint64_t page = src->info.page_size ? src->info.page_size : 4096;
	uint64_t paddr = 0, len;
	const struct kcore_arch *arch;
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
	arch = kcore_arch_lookup(src->info.machine);
	if (!arch || !arch->pgtable_init)
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
	if (arch->pa_symbol && arch->pa_symbol(src, vaddr, &paddr)) {
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
static struct kcore_error *walk_vmap(struct kcore_source *src,
				     struct kcore_pgtable_iter *it,
				     const struct kcore_kernel_places *p,
				     struct kcore_kernel_vmap *v)
{
	uint64_t first = 0, last = 0, va, cached_va = 0, cached_pa = 0,
		 cached_size = 0;
	struct kcore_pgtable_leaf l;
	bool found, any = false;
	struct kcore_error *err;

	/* The kernel image: every leaf of its mapping follows the
	 * __pa_symbol() offset; the PT_LOAD spans the first to the last, as
	 * /proc/kcore's [_text, _end) does (the gaps the kernel unmapped
	 * after boot included). */
	for (va = p->text_lo; va < p->text_hi;) {
		err = kcore_pgtable_iter_next(it, va, p->text_hi, &found, &l);
		if (err)
			return err;
		if (!found || l.va >= p->text_hi)
			break;
		if (l.pa != l.va - p->text_lo + p->text_pa) {
			if (p->image_in_area && any)
				break; /* past the image: another area */
			return novmap(src, "the kernel image mapping does not "
					   "follow its physical offset");
		}
		/* In another area, the image ends at the first big gap. */
		if (p->image_in_area && any && l.va - last > (64ull << 20))
			break;
		if (!any || l.va < first)
			first = l.va;
		any = true;
		last = l.va + l.size;
		if (last < l.va)
			break;
		va = last;
	}
	if (!any)
		return novmap(src, "the kernel image is not mapped in the "
				   "dump's page tables");
	if (p->image_in_area && first > p->text_lo)
		first = p->text_lo; /* [_text, _stext) may be unmapped */
	v->text_vaddr = first;
	v->text_paddr = first - p->text_lo + p->text_pa;
	v->text_size = last - first;
	/* The direct map: its first leaf gives the base; every physical
	 * segment's first and last byte must translate by it. */
	err = kcore_pgtable_iter_next(it, p->dm_lo, p->dm_hi, &found, &l);
	if (err)
		return err;
	if (!found)
		return novmap(src, "no direct map in the page "
				   "tables");
	v->direct_map = l.va - l.pa;
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
			err = kcore_pgtable_iter_next(it, want, want + 1,
						      &found, &l);
			if (err)
				return err;
			if (!found || l.pa + (want - l.va) != ends[k])
				goto mismatch;
			cached_va = l.va;
			cached_pa = l.pa;
			cached_size = l.size;
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
	const struct kcore_arch *arch = kcore_arch_lookup(src->info.machine);
	struct kcore_kernel_places places;
	struct kcore_pgtable_iter *it;
	struct kcore_error *err;

	if (src->info.kind != KCORE_SOURCE_VMCORE || !src->vmcoreinfo ||
	    !arch || !arch->kernel_places)
		return novmap(
			src, "not a vmcore with VMCOREINFO of x86_64 or arm64");
	err = kcore_pgtable_iter_create(src, read_paddr, false, 0, &it);
	if (err)
		return why(err, novmap(src, err->message));
	err = arch->kernel_places(src, kcore_pgtable_iter_format(it), &places);
	if (!err)
		err = walk_vmap(src, it, &places, v);
	kcore_pgtable_iter_destroy(it);
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
