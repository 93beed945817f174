/* SPDX-License-Identifier: MIT */
/* arm64 kernel address translation facts from VMCOREINFO (arm64.c). */
#ifndef KCORE_ARM64_H
#define KCORE_ARM64_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/*
 * The stage 1 translation of the kernel's half (TTBR1_EL1) with a 4 KiB
 * granule.  Levels are numbered from the leaf: 1 = page (4 KiB), 2 =
 * 2 MiB blocks, 3 = 1 GiB blocks, 4 = level 0, 5 = level -1 (LPA2).
 */
struct kcore_arm64_mmu {
	unsigned va_bits; /* 64 - TCR_EL1.T1SZ: 39, 48 or 52 */
	unsigned levels;  /* 3, 4 or 5 */
	bool lpa2;	  /* 52-bit output addresses, OA[51:50] in bits 9:8 */
	uint64_t kimage_voffset; /* kernel image: pa = va - kimage_voffset */
	uint64_t root;		 /* SYMBOL(swapper_pg_dir), virtual */
};

/* The MMU setup of an arm64 kernel source, or an error saying exactly
 * which page size or VA size is not supported and why. */
struct kcore_error *kcore_arm64_mmu(struct kcore_source *src,
				    struct kcore_arm64_mmu *ret);

/* Address bits resolved below a level: 12 + 9 * (level - 1). */
static inline unsigned kcore_arm64_shift(unsigned level)
{
	return 12 + 9 * (level - 1);
}

/* Entries in a table of a level (the top one may be shorter). */
static inline unsigned kcore_arm64_entries(const struct kcore_arm64_mmu *m,
					   unsigned level)
{
	if (level == m->levels)
		return 1u << (m->va_bits - kcore_arm64_shift(level));
	return 512;
}

/* Index of va in a table of a level. */
static inline uint64_t kcore_arm64_index(const struct kcore_arm64_mmu *m,
					 uint64_t va, unsigned level)
{
	return (va >> kcore_arm64_shift(level)) &
	       (kcore_arm64_entries(m, level) - 1);
}

/* The output address of a table, block or page descriptor. */
static inline uint64_t kcore_arm64_oa(const struct kcore_arm64_mmu *m,
				      uint64_t desc)
{
	if (m->lpa2)
		return (desc & 0x0003fffffffff000ull) |
		       (((desc >> 8) & 3) << 50);
	return desc & 0x0000fffffffff000ull;
}

/* Descriptor kinds: invalid, next-level table, block or page (leaf). */
enum kcore_arm64_desc { ARM64_INVALID, ARM64_TABLE, ARM64_LEAF };

static inline enum kcore_arm64_desc
kcore_arm64_desc(const struct kcore_arm64_mmu *m, uint64_t desc, unsigned level)
{
	if (!(desc & 1))
		return ARM64_INVALID;
	if (level == 1) /* bits 1:0 = 0b11 is a page, 0b01 reserved */
		return (desc & 2) ? ARM64_LEAF : ARM64_INVALID;
	if (desc & 2)
		return ARM64_TABLE;
	/* Blocks: 2 MiB and 1 GiB; 512 GiB at level 0 only with LPA2. */
	if (level <= 3 || (level == 4 && m->lpa2))
		return ARM64_LEAF;
	return ARM64_INVALID;
}

/* Sign-extend a kernel (TTBR1) address built from table indexes. */
static inline uint64_t kcore_arm64_canonical(const struct kcore_arm64_mmu *m,
					     uint64_t va)
{
	return va | (~0ull << m->va_bits);
}

#endif
