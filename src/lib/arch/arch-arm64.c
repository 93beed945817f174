// SPDX-License-Identifier: MIT
/*
 * arm64 kernel address translation from VMCOREINFO
 * (arch/arm64/kernel/vmcore_info.c): the VA size the kernel runs with is
 * 64 - NUMBER(TCR_EL1_T1SZ) (exported since Linux v5.9, commit
 * bbdbc11804ff); NUMBER(VA_BITS) is only the configured maximum, so a
 * CONFIG_ARM64_VA_BITS_52 kernel on a CPU without LVA/LPA2 runs with 48
 * bits.  The kernel image is mapped at kimage_voffset from its physical
 * address, the linear map at PAGE_OFFSET - PHYS_OFFSET.
 *
 * Only the 4 KiB granule is decoded: the stage 1 translation of the
 * kernel's half (TTBR1_EL1) with 3, 4 and 5 (LPA2, 52-bit) levels; level
 * 4 is the architecture's level 0, level 5 its level -1.  The 16 KiB and
 * 64 KiB granules index and encode descriptors otherwise; they are
 * refused with an error instead of being walked wrongly.
 */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>

#include "arch.h"
#include "kcoredump/vmcoreinfo.h"
#include "source-impl.h"

static const char *const regs[] = {
	"x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",	    "x7",  "x8",
	"x9",  "x10", "x11", "x12", "x13", "x14", "x15",    "x16", "x17",
	"x18", "x19", "x20", "x21", "x22", "x23", "x24",    "x25", "x26",
	"x27", "x28", "x29", "x30", "sp",  "pc",  "pstate",
};

_Static_assert(sizeof(regs) / sizeof(regs[0]) == 34,
	       "aarch64 user_pt_regs has 34 registers");

static bool vi_u64(const struct kcore_source *src, const char *key,
		   uint64_t *ret)
{
	return src->vmcoreinfo &&
	       kcore_vmcoreinfo_get_u64(src->vmcoreinfo, key, ret);
}

static struct kcore_error *pgtable_init(struct kcore_source *src,
					struct kcore_pgtable *ret)
{
	struct kcore_pgtable m = { 0 };
	uint64_t page = 0, t1sz = 0, va_bits = 0, root;

	if (!src->vmcoreinfo)
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
					  "arm64 translation needs VMCOREINFO");
	if (!vi_u64(src, "PAGESIZE", &page))
		page = src->info.page_size;
	if (page != 4096)
		return kcore_error_create(
			KCORE_ERR_UNSUPPORTED, 0, src->path,
			"arm64 kernel with %" PRIu64 " KiB pages: only the "
			"4 KiB granule's page tables are decoded (16 and "
			"64 KiB granules index and encode them differently)",
			page / 1024);
	if (vi_u64(src, "NUMBER(TCR_EL1_T1SZ)", &t1sz) && t1sz && t1sz < 64) {
		va_bits = 64 - t1sz;
	} else if (vi_u64(src, "NUMBER(VA_BITS)", &va_bits) && va_bits == 52) {
		/* Before v5.9 only the configured size is known; 52 may run
		 * as 48.  Refuse rather than guess. */
		return kcore_error_create(
			KCORE_ERR_UNSUPPORTED, 0, src->path,
			"arm64 VMCOREINFO has VA_BITS=52 but no "
			"NUMBER(TCR_EL1_T1SZ): the VA size in use is unknown");
	}
	switch (va_bits) {
	case 39:
		m.levels = 3;
		break;
	case 48:
		m.levels = 4;
		break;
	case 52:
		m.levels = 5;
		m.lpa2 = true;
		break;
	default:
		return kcore_error_create(
			KCORE_ERR_UNSUPPORTED, 0, src->path,
			"arm64 kernel with %" PRIu64 "-bit virtual addresses "
			"and 4 KiB pages: only 39, 48 and 52 (LPA2) are "
			"decoded",
			va_bits);
	}
	m.va_bits = (unsigned)va_bits;
	if (!vi_u64(src, "NUMBER(kimage_voffset)", &m.kimage_voffset))
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
					  "arm64 VMCOREINFO lacks "
					  "NUMBER(kimage_voffset)");
	if (!vi_u64(src, "SYMBOL(swapper_pg_dir)", &root))
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
					  "arm64 VMCOREINFO lacks "
					  "SYMBOL(swapper_pg_dir)");
	/* The top table may be shorter than 512 entries. */
	m.top_entries = 1u << (m.va_bits - (12 + 9 * (m.levels - 1)));
	m.root_va = root;
	m.root_pa = root - m.kimage_voffset;
	/* Only the kernel half, the top va_bits..63 ones. */
	m.hole_lo = 0;
	m.hole_hi = ~0ull << m.va_bits;
	snprintf(m.hole_why, sizeof(m.hole_why),
		 "is not a %u-bit arm64 kernel address", m.va_bits);
	*ret = m;
	return NULL;
}

/* The output address of a table, block or page descriptor. */
static uint64_t oa(const struct kcore_pgtable *m, uint64_t desc)
{
	if (m->lpa2)
		return (desc & 0x0003fffffffff000ull) |
		       (((desc >> 8) & 3) << 50);
	return desc & 0x0000fffffffff000ull;
}

static enum kcore_pte pte(const struct kcore_pgtable *m, uint64_t desc,
			  unsigned level, uint64_t *ret_pa)
{
	if (!(desc & 1))
		return KCORE_PTE_NONE;
	*ret_pa = oa(m, desc);
	if (level == 1) /* bits 1:0 = 0b11 is a page, 0b01 reserved */
		return (desc & 2) ? KCORE_PTE_LEAF : KCORE_PTE_NONE;
	if (desc & 2)
		return KCORE_PTE_TABLE;
	/* Blocks: 2 MiB and 1 GiB; 512 GiB at level 0 only with LPA2. */
	if (level <= 3 || (level == 4 && m->lpa2))
		return KCORE_PTE_LEAF;
	return KCORE_PTE_NONE;
}

static struct kcore_error *novmap(struct kcore_source *src, const char *why)
{
	return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
				  "no exact kernel virtual addresses: %s", why);
}

static struct kcore_error *kernel_places(struct kcore_source *src,
					 const struct kcore_pgtable *pt,
					 struct kcore_kernel_places *ret)
{
	uint64_t modules_end, koff, stext, lo;

	/* The image at KIMAGE_VADDR (MODULES_END) + kaslr_offset(), mapped
	 * at kimage_voffset from its physical address. */
	if (!vi_u64(src, "NUMBER(MODULES_END)", &modules_end) ||
	    !vi_u64(src, "KERNELOFFSET", &koff) ||
	    !vi_u64(src, "SYMBOL(_stext)", &stext))
		return novmap(src, "VMCOREINFO lacks "
				   "NUMBER(MODULES_END), KERNELOFFSET "
				   "or SYMBOL(_stext)");
	lo = modules_end + koff;
	if (stext < lo || stext - lo >= (2ull << 20))
		return novmap(src, "SYMBOL(_stext) is not in the first "
				   "2 MiB of KIMAGE_VADDR + KERNELOFFSET");
	*ret = (struct kcore_kernel_places){
		.text_lo = lo,
		.text_hi = lo + (1ull << 30),
		.text_pa = lo - pt->kimage_voffset,
		/* The linear map: the lower half of the kernel's space. */
		.dm_lo = ~0ull << pt->va_bits,
		.dm_hi = ~0ull << (pt->va_bits - 1),
		.image_in_area = true,
	};
	return NULL;
}

const struct kcore_arch kcore_arch_arm64 = {
	.machine = EM_AARCH64,
	.name = "aarch64",
	.aliases = (const char *const[]){ "arm64", NULL },
	.vmcoreinfo_marks =
		(const char *const[]){ "NUMBER(kimage_voffset)=",
				       "NUMBER(TCR_EL1_T1SZ)=", NULL },
	.banner_marks = (const char *const[]){ "aarch64-", "-arm64 ", NULL },
	.regs = regs,
	.nregs = 34,
	.sp_reg = 31,
	.compat_machine = EM_ARM,
	.phys_base_key = "NUMBER(PHYS_OFFSET)",
	.kdump = true,
	.pgtable_init = pgtable_init,
	.pte = pte,
	.kernel_places = kernel_places,
};
