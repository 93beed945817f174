// SPDX-License-Identifier: MIT
/*
 * x86_64: 4- and 5-level page tables (NUMBER(pgtable_l5_enabled)), the
 * kernel image at __START_KERNEL_map + phys_base (__pa_symbol), the
 * direct map first in the KASLR region, the 27 registers of
 * user_regs_struct.
 */
#include <elf.h>
#include <stdio.h>

#include "arch.h"
#include "kcoredump/vmcoreinfo.h"
#include "source-impl.h"

/* __START_KERNEL_map (arch/x86/include/asm/page_64_types.h). */
#define START_KERNEL_MAP 0xffffffff80000000ull
/* KERNEL_IMAGE_SIZE without KASLR; VMCOREINFO has the real value since
 * Linux v4.15 (commit 1303a27c9c32). */
#define KERNEL_IMAGE_MIN (512ull << 20)
#define PTE_PRESENT	 0x1ull
#define PTE_PSE		 0x80ull
#define PTE_ADDR	 0x000ffffffffff000ull

static const char *const regs[] = {
	"r15",	   "r14",      "r13", "r12", "rbp",    "rbx", "r11",
	"r10",	   "r9",       "r8",  "rax", "rcx",    "rdx", "rsi",
	"rdi",	   "orig_rax", "rip", "cs",  "eflags", "rsp", "ss",
	"fs_base", "gs_base",  "ds",  "es",  "fs",     "gs",
};

_Static_assert(sizeof(regs) / sizeof(regs[0]) == 27,
	       "x86_64 user_regs_struct has 27 registers");

static bool vi_u64(const struct kcore_source *src, const char *key,
		   uint64_t *ret)
{
	return src->vmcoreinfo &&
	       kcore_vmcoreinfo_get_u64(src->vmcoreinfo, key, ret);
}

static bool pa_symbol(const struct kcore_source *src, uint64_t vaddr,
		      uint64_t *ret)
{
	uint64_t size = KERNEL_IMAGE_MIN;

	vi_u64(src, "NUMBER(KERNEL_IMAGE_SIZE)", &size);
	if (!src->info.has_phys_base || vaddr < START_KERNEL_MAP ||
	    vaddr - START_KERNEL_MAP >= size)
		return false;
	*ret = vaddr - START_KERNEL_MAP + src->info.phys_base;
	return true;
}

static struct kcore_error *pgtable_init(struct kcore_source *src,
					struct kcore_pgtable *ret)
{
	struct kcore_pgtable pt = { .top_entries = 512 };
	uint64_t l5 = 0, sme = 0;
	unsigned bits;

	if (!vi_u64(src, "SYMBOL(init_top_pgt)", &pt.root_va) &&
	    !vi_u64(src, "SYMBOL(swapper_pg_dir)", &pt.root_va))
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
					  "VMCOREINFO names no page table "
					  "root (SYMBOL(init_top_pgt))");
	if (!pa_symbol(src, pt.root_va, &pt.root_pa))
		pt.root_pa = UINT64_MAX; /* the segments may tell */
	vi_u64(src, "NUMBER(pgtable_l5_enabled)", &l5);
	vi_u64(src, "NUMBER(sme_mask)", &sme);
	pt.levels = l5 ? 5 : 4;
	pt.addr_mask = PTE_ADDR & ~sme;
	bits = l5 ? 57 : 48;
	pt.va_bits = bits;
	/* Canonical addresses: the top bits copy bit bits - 1. */
	pt.hole_lo = 1ull << (bits - 1);
	pt.hole_hi = ~0ull << (bits - 1);
	snprintf(pt.hole_why, sizeof(pt.hole_why), "is not canonical");
	*ret = pt;
	return NULL;
}

static enum kcore_pte pte(const struct kcore_pgtable *pt, uint64_t e,
			  unsigned level, uint64_t *ret_pa)
{
	if (!(e & PTE_PRESENT))
		return KCORE_PTE_NONE;
	*ret_pa = e & pt->addr_mask;
	return level == 1 || (level <= 3 && (e & PTE_PSE)) ? KCORE_PTE_LEAF
							   : KCORE_PTE_TABLE;
}

static struct kcore_error *kernel_places(struct kcore_source *src,
					 const struct kcore_pgtable *pt,
					 struct kcore_kernel_places *ret)
{
	uint64_t isize = KERNEL_IMAGE_MIN;

	vi_u64(src, "NUMBER(KERNEL_IMAGE_SIZE)", &isize);
	*ret = (struct kcore_kernel_places){
		.text_lo = START_KERNEL_MAP,
		.text_hi = START_KERNEL_MAP + isize,
		.text_pa = src->info.phys_base,
		/* page_offset_base: the direct map comes first in the
		 * randomised region (arch/x86/mm/kaslr.c), which starts at
		 * __PAGE_OFFSET_BASE_L4/L5 and ends below the CPU entry
		 * area. */
		.dm_lo = pt->levels == 5 ? 0xff11000000000000ull
					 : 0xffff888000000000ull,
		.dm_hi = 0xfffffe0000000000ull,
	};
	if (ret->text_hi < ret->text_lo)
		ret->text_hi = UINT64_MAX;
	return NULL;
}

const struct kcore_arch kcore_arch_x86_64 = {
	.machine = EM_X86_64,
	.name = "x86_64",
	.aliases = (const char *const[]){ "amd64", NULL },
	.vmcoreinfo_marks =
		(const char *const[]){ "SYMBOL(init_top_pgt)=",
				       "NUMBER(pgtable_l5_enabled)=", NULL },
	.banner_marks = (const char *const[]){ "x86_64-", "-amd64 ", NULL },
	.regs = regs,
	.nregs = 27,
	.sp_reg = 19, /* rsp */
	.compat_machine = EM_386,
	.vsyscall_page = 0xffffffffff600000ull,
	.pa_symbol = pa_symbol,
	.kdump = true,
	.pgtable_init = pgtable_init,
	.pte = pte,
	.kernel_places = kernel_places,
};
