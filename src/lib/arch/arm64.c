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
 * Only the 4 KiB granule is decoded: 3, 4 and 5 (LPA2, 52-bit) levels.
 * The 16 KiB and 64 KiB granules index and encode descriptors otherwise;
 * they are refused with an error instead of being walked wrongly.
 */
#include <elf.h>
#include <inttypes.h>

#include "arm64.h"
#include "kcoredump/vmcoreinfo.h"

static bool vi_u64(const struct kcore_source *src, const char *key,
		   uint64_t *ret)
{
	return src->vmcoreinfo &&
	       kcore_vmcoreinfo_get_u64(src->vmcoreinfo, key, ret);
}

struct kcore_error *kcore_arm64_mmu(struct kcore_source *src,
				    struct kcore_arm64_mmu *ret)
{
	struct kcore_arm64_mmu m = { 0 };
	uint64_t page = 0, t1sz = 0, va_bits = 0;

	if (src->info.machine != EM_AARCH64)
		return kcore_error_create(KCORE_ERR_INVALID, 0, src->path,
					  "not an arm64 kernel");
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
	if (!vi_u64(src, "SYMBOL(swapper_pg_dir)", &m.root))
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
					  "arm64 VMCOREINFO lacks "
					  "SYMBOL(swapper_pg_dir)");
	*ret = m;
	return NULL;
}
