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

static struct kcore_error *x86_walk(struct kcore_source *src, uint64_t vaddr,
				    kcore_read_paddr_fn read_paddr,
				    uint64_t *ret_paddr, uint64_t *ret_page)
{
	uint64_t root, table, l5 = 0, sme = 0, mask;
	unsigned levels, bits;

	if (!vi_u64(src, "SYMBOL(init_top_pgt)", &root) &&
	    !vi_u64(src, "SYMBOL(swapper_pg_dir)", &root))
		return unsupported(src, vaddr,
				   "VMCOREINFO names no page table root "
				   "(SYMBOL(init_top_pgt))");
	if (!x86_text(src, root, &table))
		return unsupported(src, vaddr,
				   "VMCOREINFO lacks NUMBER(phys_base), so the "
				   "page tables cannot be found");
	vi_u64(src, "NUMBER(pgtable_l5_enabled)", &l5);
	vi_u64(src, "NUMBER(sme_mask)", &sme);
	levels = l5 ? 5 : 4;
	bits = l5 ? 57 : 48;
	mask = PTE_ADDR & ~sme;
	/* Non-canonical addresses are never mapped. */
	if ((uint64_t)((int64_t)(vaddr << (64 - bits)) >> (64 - bits)) != vaddr)
		return kcore_error_create(KCORE_ERR_INVALID, 0, src->path,
					  "virtual address 0x%" PRIx64
					  " is not canonical",
					  vaddr);
	for (unsigned level = levels; level >= 1; level--) {
		unsigned shift = 12 + 9 * (level - 1);
		unsigned char e[8];
		uint64_t entry;
		struct kcore_error *err;

		err = read_paddr(src, table + ((vaddr >> shift) & 511) * 8, e,
				 8);
		if (err) {
			kcore_error_destroy(err);
			return unsupported(src, vaddr,
					   "a page table is not in the dump");
		}
		entry = kcore_load(e, 8, false);
		if (!(entry & PTE_PRESENT))
			return kcore_error_create(
				KCORE_ERR_INVALID, 0, src->path,
				"virtual address 0x%" PRIx64
				" is not mapped in the kernel's page tables",
				vaddr);
		if (level == 1 || (level <= 3 && (entry & PTE_PSE))) {
			uint64_t page = 1ull << shift;

			*ret_paddr = ((entry & mask) & ~(page - 1)) |
				     (vaddr & (page - 1));
			*ret_page = page;
			return NULL;
		}
		table = entry & mask;
	}
	return kcore_error_create(KCORE_ERR_INVALID, 0, src->path,
				  "virtual address 0x%" PRIx64 " is not mapped",
				  vaddr);
}

static struct kcore_error *arm64_walk(struct kcore_source *src, uint64_t vaddr,
				      kcore_read_paddr_fn read_paddr,
				      uint64_t *ret_paddr, uint64_t *ret_page)
{
	struct kcore_arm64_mmu m;
	struct kcore_error *err = kcore_arm64_mmu(src, &m);
	uint64_t table;

	if (err)
		return err;
	/* Only the kernel half (TTBR1): the top va_bits..63 all ones. */
	if ((vaddr | ((1ull << m.va_bits) - 1)) != ~0ull)
		return kcore_error_create(KCORE_ERR_INVALID, 0, src->path,
					  "virtual address 0x%" PRIx64
					  " is not a %u-bit arm64 kernel "
					  "address",
					  vaddr, m.va_bits);
	table = m.root - m.kimage_voffset;
	for (unsigned level = m.levels; level >= 1; level--) {
		unsigned char e[8];
		uint64_t desc;

		err = read_paddr(
			src, table + kcore_arm64_index(&m, vaddr, level) * 8, e,
			8);
		if (err) {
			kcore_error_destroy(err);
			return unsupported(src, vaddr,
					   "a page table is not in the dump");
		}
		desc = kcore_load(e, 8, false);
		switch (kcore_arm64_desc(&m, desc, level)) {
		case ARM64_INVALID:
			return kcore_error_create(
				KCORE_ERR_INVALID, 0, src->path,
				"virtual address 0x%" PRIx64
				" is not mapped in the kernel's page tables",
				vaddr);
		case ARM64_LEAF: {
			uint64_t size = 1ull << kcore_arm64_shift(level);

			*ret_paddr = (kcore_arm64_oa(&m, desc) & ~(size - 1)) |
				     (vaddr & (size - 1));
			*ret_page = size;
			return NULL;
		}
		case ARM64_TABLE:
			table = kcore_arm64_oa(&m, desc);
			break;
		}
	}
	return kcore_error_create(KCORE_ERR_INVALID, 0, src->path,
				  "virtual address 0x%" PRIx64 " is not mapped",
				  vaddr);
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
	if (src->info.machine == EM_AARCH64) {
		uint64_t size = page;

		err = arm64_walk(src, vaddr, read_paddr, &paddr, &size);
		if (err)
			return err;
		len = size - (vaddr & (size - 1));
	} else if (x86_text(src, vaddr, &paddr)) {
		len = page - (vaddr & (page - 1));
	} else {
		uint64_t size = page;

		err = x86_walk(src, vaddr, read_paddr, &paddr, &size);
		if (err)
			return err;
		len = size - (vaddr & (size - 1));
	}
	*ret_paddr = paddr;
	if (ret_len)
		*ret_len = len;
	return NULL;
}
