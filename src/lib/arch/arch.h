/* SPDX-License-Identifier: MIT */
/*
 * The architecture table, in the manner of drgn's platform.h: what
 * libkcore knows of one kernel architecture, one file per architecture
 * (arch-x86_64.c, arch-arm64.c), found by e_machine or by name (arch.c).
 * Callers ask the table; only the lookup tests EM_*.  The one page-table
 * iterator (arch.c) walks every architecture's tables through its
 * entry decoder: the live kernel's vmalloc runs, a dump's translations
 * and the kernel image and direct map of a physical-only vmcore.
 */
#ifndef KCORE_ARCH_H
#define KCORE_ARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "kcoredump/kcore.h"

struct kcore_source;
/* How the page-table iterator (and translate.c) reads physical memory:
 * the source hands in its reader. */
typedef struct kcore_error *(*kcore_read_paddr_fn)(struct kcore_source *src,
						   uint64_t paddr, void *buf,
						   size_t len);

/* The most levels any architecture's tables have (x86_64 5-level, arm64
 * LPA2). */
#define KCORE_PGTABLE_MAX_LEVELS 5

/*
 * The page-table format of one kernel, from its VMCOREINFO
 * (kcore_arch.pgtable_init).  Levels are numbered from the leaf: 1 maps
 * pages, each level above resolves 9 more address bits (4 KiB granule).
 */
struct kcore_pgtable {
	unsigned levels;      /* 3, 4 or 5 */
	unsigned top_entries; /* entries of the root table (arm64: fewer) */
	uint64_t root_va;     /* the root table's kernel virtual address */
	/* Its physical address; UINT64_MAX: found through the source's
	 * segments (a live kcore without NUMBER(phys_base)). */
	uint64_t root_pa;
	/* Addresses in [hole_lo, hole_hi) are in no table: x86_64's
	 * non-canonical hole, arm64's user half (TTBR0).  hole_why says so
	 * of an address there ("is not canonical"). */
	uint64_t hole_lo, hole_hi;
	char hole_why[64];
	/* The architecture's own: x86_64 the address bits of an entry
	 * (less the SME bit); arm64 the VA size, LPA2, kimage_voffset. */
	uint64_t addr_mask;
	unsigned va_bits;
	bool lpa2;
	uint64_t kimage_voffset;
};

/* What a page-table entry is. */
enum kcore_pte { KCORE_PTE_NONE, KCORE_PTE_TABLE, KCORE_PTE_LEAF };

/*
 * Where a physical-only vmcore's kernel image and direct map are looked
 * for in its page tables (kcore_source_kernel_vmap): the image's leaves
 * in [text_lo, text_hi) must follow text_pa (the physical address of
 * text_lo); the direct map's first leaf in [dm_lo, dm_hi) gives its base.
 */
struct kcore_kernel_places {
	uint64_t text_lo, text_hi, text_pa;
	uint64_t dm_lo, dm_hi;
	/* The image sits inside another area (arm64's vmalloc): it ends at
	 * the first leaf off its offset or after a gap over 64 MiB, and
	 * starts at text_lo ([_text, _stext) may be unmapped). */
	bool image_in_area;
};

struct kcore_arch {
	uint16_t machine; /* e_machine */
	const char *name; /* uname -m: "x86_64", "aarch64" */
	/* Other names a user or a header may give (NULL-terminated). */
	const char *const *aliases;
	/* VMCOREINFO lines only this architecture publishes ("KEY="): they
	 * name the machine of an image with no ELF header (NULL-ended). */
	const char *const *vmcoreinfo_marks;
	/* What a "Linux version" banner of its kernels holds (NULL-ended). */
	const char *const *banner_marks;

	/* NT_PRSTATUS of a 64-bit task: pr_reg's names and count, and the
	 * index of the stack pointer. */
	const char *const *regs;
	unsigned nregs;
	unsigned sp_reg;
	/* e_machine of a core of one of its 32-bit (compat) tasks. */
	uint16_t compat_machine;
	/* The vsyscall page of its processes (a fixed ABI address), or 0. */
	uint64_t vsyscall_page;

	/* VMCOREINFO key that gives info.phys_base when NUMBER(phys_base)
	 * does not (arm64: PHYS_OFFSET, what makedumpfile and crash call its
	 * phys_base and a kdump file's sub-header carries), or NULL. */
	const char *phys_base_key;
	/* __pa_symbol(): the physical address of an address in the kernel
	 * image mapping by arithmetic alone, or false (NULL: none used). */
	bool (*pa_symbol)(const struct kcore_source *src, uint64_t vaddr,
			  uint64_t *ret);
	/* A kdump file can be written for it (4 KiB pages): its
	 * disk_dump_header is the LP64 little-endian one. */
	bool kdump;

	/* The page tables' format and root, or UNSUPPORTED saying which
	 * VMCOREINFO line or page size is missing. */
	struct kcore_error *(*pgtable_init)(struct kcore_source *src,
					    struct kcore_pgtable *ret);
	/* What entry e of a table at level is; *ret_pa its output address
	 * (a table's, or a leaf's first byte's, unaligned). */
	enum kcore_pte (*pte)(const struct kcore_pgtable *pt, uint64_t e,
			      unsigned level, uint64_t *ret_pa);
	/* Where the kernel image and direct map are (the layout from
	 * VMCOREINFO), or UNSUPPORTED. */
	struct kcore_error *(*kernel_places)(struct kcore_source *src,
					     const struct kcore_pgtable *pt,
					     struct kcore_kernel_places *ret);
};

extern const struct kcore_arch kcore_arch_x86_64;
extern const struct kcore_arch kcore_arch_arm64;

/* The table of e_machine, or NULL. */
const struct kcore_arch *kcore_arch_lookup(uint16_t machine);
/* The table a name (uname -m, or an alias: amd64, arm64) names, or NULL. */
const struct kcore_arch *kcore_arch_by_name(const char *name);
/* The table whose VMCOREINFO marks or banner marks the text holds. */
const struct kcore_arch *kcore_arch_by_vmcoreinfo(const char *text, size_t len);
const struct kcore_arch *kcore_arch_by_banner(const char *line);
/* The architecture libkcore was built for, or NULL. */
const struct kcore_arch *kcore_arch_host(void);

/*
 * The page-table iterator: the first leaf at or after an address, over
 * and over.  Its cost follows the distinct tables, not the address space:
 * a subtree seen to hold no leaf is remembered by physical address and
 * level and skipped wherever another entry points at it again (aliased
 * tables, as a hostile dump can have every slot point at one empty
 * table), and the entries read over the iterator's life are bounded by
 * its budget (FORMAT past it).  Tables are read whole and kept, one per
 * level.
 */
struct kcore_pgtable_iter;

/* The default budget of entries read. */
#define KCORE_PGTABLE_BUDGET (1ull << 24)

struct kcore_pgtable_leaf {
	uint64_t va;   /* first address, aligned to size */
	uint64_t pa;   /* its physical address */
	uint64_t size; /* 4 KiB, or a block's 2 MiB, 1 GiB, ... */
};

/*
 * An iterator over src's kernel page tables read with read_paddr.
 * lenient: a table that cannot be read is empty (the live kernel, whose
 * kcore reads ioremap space as nothing); otherwise it is UNSUPPORTED
 * ("a page table is not in the dump").  budget 0: the default.
 */
struct kcore_error *kcore_pgtable_iter_create(struct kcore_source *src,
					      kcore_read_paddr_fn read_paddr,
					      bool lenient, uint64_t budget,
					      struct kcore_pgtable_iter **ret);
void kcore_pgtable_iter_destroy(struct kcore_pgtable_iter *it);
/* The format the iterator walks. */
const struct kcore_pgtable *
kcore_pgtable_iter_format(const struct kcore_pgtable_iter *it);
/* The first leaf mapping an address in [va, end): *found and *ret. */
struct kcore_error *kcore_pgtable_iter_next(struct kcore_pgtable_iter *it,
					    uint64_t va, uint64_t end,
					    bool *found,
					    struct kcore_pgtable_leaf *ret);
/* Entries and tables read so far. */
uint64_t kcore_pgtable_iter_visits(const struct kcore_pgtable_iter *it);
size_t kcore_pgtable_iter_tables(const struct kcore_pgtable_iter *it);
/* Remember the physical address of every table below the root read from
 * now on; take them (malloc()ed, in walk order, a table read again listed
 * again) with kcore_pgtable_iter_take_tables(). */
void kcore_pgtable_iter_record_tables(struct kcore_pgtable_iter *it);
struct kcore_error *
kcore_pgtable_iter_take_tables(struct kcore_pgtable_iter *it, uint64_t **ret,
			       size_t *ret_n);

#endif
