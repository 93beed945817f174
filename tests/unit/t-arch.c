// SPDX-License-Identifier: MIT
/*
 * The architecture table and the one page-table iterator (arch/arch.h),
 * each case over both tables (x86_64 4- and 5-level, arm64 48-bit and
 * 52-bit LPA2) on page tables built in memory: pages, 2 MiB and 1 GiB
 * leaves, a range walked leaf by leaf, the hole no table maps, a table
 * missing from the dump (UNSUPPORTED, or nothing for the live kernel), an
 * aliased table of empty subtrees that the memo makes cheap, and a
 * hostile table whose every entry points at itself, which must end at
 * the budget.  Also the lookups by e_machine, name, VMCOREINFO and
 * banner.
 */
#include <elf.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"
#include "kcoredump/kcore.h"
#include "kcoredump/vmcoreinfo.h"
#include "source-impl.h"
#include "tap.h"

#define PHYS   0x1000000ull /* the memory's first physical byte */
#define NPAGES 64
/* arm64 kimage_voffset: the root's virtual address is pa + KVOFF. */
#define KVOFF 0xffff7fffc0000000ull
/* x86_64 __START_KERNEL_map (phys_base 0). */
#define KMAP 0xffffffff80000000ull

static uint64_t mem[NPAGES][512];
static unsigned next_page;
static uint64_t reads;

static struct kcore_error *read_mem(struct kcore_source *src, uint64_t pa,
				    void *buf, size_t len)
{
	reads++;
	if (pa < PHYS || pa - PHYS >= sizeof(mem) ||
	    len > sizeof(mem) - (pa - PHYS))
		return kcore_error_create(KCORE_ERR_INVALID, 0, src->path,
					  "no memory at 0x%" PRIx64, pa);
	memcpy(buf, (unsigned char *)mem + (pa - PHYS), len);
	return NULL;
}

/* A format to test: a table and its VMCOREINFO. */
struct format {
	const struct kcore_arch *arch;
	const char *what;
	unsigned levels, va_bits;
	bool l5; /* x86_64 5-level */
};

static const struct format formats[] = {
	{ &kcore_arch_x86_64, "x86_64 4-level", 4, 48, false },
	{ &kcore_arch_x86_64, "x86_64 5-level", 5, 57, true },
	{ &kcore_arch_arm64, "arm64 48-bit", 4, 48, false },
	{ &kcore_arch_arm64, "arm64 52-bit LPA2", 5, 52, false },
};

static bool is_arm64(const struct format *f)
{
	return f->arch->machine == EM_AARCH64;
}

static uint64_t page_pa(unsigned n)
{
	return PHYS + n * 4096ull;
}

/* A fresh zeroed page of the memory. */
static unsigned new_page(void)
{
	memset(mem[next_page], 0, sizeof(mem[0]));
	return next_page++;
}

static uint64_t table_desc(unsigned page)
{
	return page_pa(page) | 3; /* x86 present|rw; arm64 table */
}

static uint64_t leaf_desc(const struct format *f, uint64_t pa, unsigned level)
{
	if (is_arm64(f))
		return pa | (level == 1 ? 3 : 1); /* page, or block */
	return pa | (level == 1 ? 1 : 0x81);	  /* present, PSE */
}

static unsigned top_entries(const struct format *f)
{
	return 1u << (f->va_bits - (12 + 9 * (f->levels - 1)));
}

static unsigned index_of(const struct format *f, uint64_t va, unsigned level)
{
	unsigned n = level == f->levels ? top_entries(f) : 512;

	return (unsigned)((va >> (12 + 9 * (level - 1))) & (n - 1));
}

/* The lowest kernel address of the format. */
static uint64_t kernel_base(const struct format *f)
{
	if (is_arm64(f))
		return ~0ull << f->va_bits;
	return ~0ull << (f->va_bits - 1);
}

/* A source of the format whose root is page root (VMCOREINFO only). */
static bool source_init(struct kcore_source *src, const struct format *f,
			unsigned root, unsigned page_size)
{
	char text[512];

	memset(src, 0, sizeof(*src));
	src->path = "t-arch";
	src->info.machine = f->arch->machine;
	src->info.page_size = page_size;
	src->arch = f->arch;
	if (is_arm64(f))
		snprintf(text, sizeof(text),
			 "PAGESIZE=%u\nNUMBER(TCR_EL1_T1SZ)=%u\n"
			 "NUMBER(kimage_voffset)=0x%llx\n"
			 "SYMBOL(swapper_pg_dir)=%llx\n",
			 page_size, 64 - f->va_bits, (unsigned long long)KVOFF,
			 (unsigned long long)(page_pa(root) + KVOFF));
	else
		snprintf(text, sizeof(text),
			 "PAGESIZE=%u\nSYMBOL(init_top_pgt)=%llx\n"
			 "NUMBER(phys_base)=0\nNUMBER(pgtable_l5_enabled)=%d\n",
			 page_size, (unsigned long long)(KMAP + page_pa(root)),
			 f->l5);
	src->info.has_phys_base = true;
	return !kcore_vmcoreinfo_parse(text, strlen(text), &src->vmcoreinfo);
}

/* Map va to pa with a leaf at level, building tables from root down. */
static void map(const struct format *f, unsigned root, uint64_t va, uint64_t pa,
		unsigned level)
{
	unsigned t = root;

	for (unsigned l = f->levels; l > level; l--) {
		uint64_t *e = &mem[t][index_of(f, va, l)];

		if (!*e) {
			unsigned child = new_page();

			*e = table_desc(child);
		}
		t = (unsigned)(((*e & 0x0000fffffffff000ull) - PHYS) / 4096);
	}
	mem[t][index_of(f, va, level)] = leaf_desc(f, pa, level);
}

static struct kcore_pgtable_iter *iter(struct kcore_source *src, bool lenient,
				       uint64_t budget, const char *what)
{
	struct kcore_pgtable_iter *it = NULL;
	struct kcore_error *err =
		kcore_pgtable_iter_create(src, read_mem, lenient, budget, &it);

	if (!ok(!err, "%s: an iterator", what))
		printf("# %s\n", err->message);
	kcore_error_destroy(err);
	return it;
}

static void check_leaf(struct kcore_pgtable_iter *it, uint64_t va, uint64_t end,
		       uint64_t want_va, uint64_t want_pa, uint64_t want_size,
		       const char *what)
{
	struct kcore_pgtable_leaf l = { 0 };
	bool found = false;
	struct kcore_error *err =
		kcore_pgtable_iter_next(it, va, end, &found, &l);

	if (err)
		printf("# %s\n", err->message);
	if (!ok(!err && found && l.va == want_va && l.pa == want_pa &&
			l.size == want_size,
		"%s", what))
		printf("#   got %d va 0x%" PRIx64 " pa 0x%" PRIx64
		       " size 0x%" PRIx64 "\n",
		       found, l.va, l.pa, l.size);
	kcore_error_destroy(err);
}

static void check_none(struct kcore_pgtable_iter *it, uint64_t va, uint64_t end,
		       const char *what)
{
	struct kcore_pgtable_leaf l;
	bool found = true;
	struct kcore_error *err =
		kcore_pgtable_iter_next(it, va, end, &found, &l);

	if (err)
		printf("# %s\n", err->message);
	ok(!err && !found, "%s", what);
	kcore_error_destroy(err);
}

/* Pages, blocks, a range leaf by leaf, and the hole. */
static void case_leaves(const struct format *f)
{
	struct kcore_source src;
	struct kcore_pgtable_iter *it;
	uint64_t base = kernel_base(f) + (3ull << 30);
	unsigned root;
	char what[128];

	next_page = 0;
	root = new_page();
	map(f, root, base + 0x5000, page_pa(40), 1);
	map(f, root, base + (4ull << 20), PHYS + (2ull << 20), 2);
	map(f, root, base + (2ull << 30), 1ull << 30, 3);
	if (!source_init(&src, f, root, 4096))
		return;
	snprintf(what, sizeof(what), "%s leaves", f->what);
	it = iter(&src, false, 0, what);
	if (it) {
		snprintf(what, sizeof(what), "%s: a 4 KiB page", f->what);
		check_leaf(it, base + 0x5123, base + 0x5124, base + 0x5000,
			   page_pa(40), 4096, what);
		snprintf(what, sizeof(what), "%s: a 2 MiB block", f->what);
		check_leaf(it, base + (5ull << 20), base + (5ull << 20) + 1,
			   base + (4ull << 20), PHYS + (2ull << 20), 2ull << 20,
			   what);
		snprintf(what, sizeof(what), "%s: a 1 GiB block", f->what);
		check_leaf(it, base + (2ull << 30) + 7, base + (2ull << 30) + 8,
			   base + (2ull << 30), 1ull << 30, 1ull << 30, what);
		snprintf(what, sizeof(what), "%s: the range's first leaf",
			 f->what);
		check_leaf(it, base, ~0ull, base + 0x5000, page_pa(40), 4096,
			   what);
		snprintf(what, sizeof(what), "%s: then the next", f->what);
		check_leaf(it, base + 0x6000, ~0ull, base + (4ull << 20),
			   PHYS + (2ull << 20), 2ull << 20, what);
		snprintf(what, sizeof(what), "%s: and the last", f->what);
		check_leaf(it, base + (6ull << 20), ~0ull, base + (2ull << 30),
			   1ull << 30, 1ull << 30, what);
		snprintf(what, sizeof(what), "%s: nothing after it", f->what);
		check_none(it, base + (3ull << 30), ~0ull, what);
		snprintf(what, sizeof(what), "%s: unmapped between leaves",
			 f->what);
		check_none(it, base + 0x6000, base + (4ull << 20), what);
		/* From address 0: over the hole (x86_64's lower half is
		 * walked and empty; arm64's is TTBR0's, in no table). */
		snprintf(what, sizeof(what), "%s: over the hole", f->what);
		check_leaf(it, 0, ~0ull, base + 0x5000, page_pa(40), 4096,
			   what);
		snprintf(what, sizeof(what), "%s: the hole's own addresses",
			 f->what);
		check_none(it, kernel_base(f) - 0x10000, kernel_base(f), what);
	}
	kcore_pgtable_iter_destroy(it);
	kcore_vmcoreinfo_destroy(src.vmcoreinfo);
}

/* A table the memory does not hold: UNSUPPORTED, or nothing (lenient). */
static void case_missing(const struct format *f)
{
	struct kcore_source src;
	struct kcore_pgtable_iter *it;
	uint64_t base = kernel_base(f) + (3ull << 30);
	struct kcore_pgtable_leaf l;
	struct kcore_error *err;
	unsigned root;
	bool found = false;
	char what[128];

	next_page = 0;
	root = new_page();
	mem[root][index_of(f, base, f->levels)] =
		(PHYS + sizeof(mem) + 0x100000) | 3;
	if (!source_init(&src, f, root, 4096))
		return;
	snprintf(what, sizeof(what), "%s strict", f->what);
	it = iter(&src, false, 0, what);
	if (it) {
		err = kcore_pgtable_iter_next(it, base, base + 1, &found, &l);
		ok(err && err->code == KCORE_ERR_UNSUPPORTED &&
			   strstr(err->message, "not in the dump"),
		   "%s: a missing table is not in the dump", f->what);
		kcore_error_destroy(err);
	}
	kcore_pgtable_iter_destroy(it);
	snprintf(what, sizeof(what), "%s lenient", f->what);
	it = iter(&src, true, 0, what);
	if (it) {
		snprintf(what, sizeof(what),
			 "%s: a missing table maps nothing (live)", f->what);
		check_none(it, base, ~0ull, what);
	}
	kcore_pgtable_iter_destroy(it);
	kcore_vmcoreinfo_destroy(src.vmcoreinfo);
}

/*
 * Every entry of every upper table points at one table of the level
 * below, down to an empty one: 512^(levels-1) paths, a handful of
 * distinct tables.  The memo reads each once.
 */
static void case_aliased_empty(const struct format *f)
{
	struct kcore_source src;
	struct kcore_pgtable_iter *it;
	unsigned t[KCORE_PGTABLE_MAX_LEVELS + 1];
	char what[128];

	next_page = 0;
	for (unsigned l = 1; l <= f->levels; l++)
		t[l] = new_page();
	for (unsigned l = 2; l <= f->levels; l++)
		for (unsigned i = 0; i < 512; i++)
			mem[t[l]][i] = table_desc(t[l - 1]);
	if (!source_init(&src, f, t[f->levels], 4096))
		return;
	snprintf(what, sizeof(what), "%s aliased", f->what);
	it = iter(&src, false, 0, what);
	if (it) {
		uint64_t visits;

		reads = 0;
		snprintf(what, sizeof(what),
			 "%s: aliased empty subtrees hold no leaf", f->what);
		check_none(it, kernel_base(f), ~0ull, what);
		visits = kcore_pgtable_iter_visits(it);
		ok(visits <= 512ull * f->levels,
		   "%s: each aliased table scanned once (%" PRIu64
		   " entries, %" PRIu64 " reads)",
		   f->what, visits, reads);
	}
	kcore_pgtable_iter_destroy(it);
	kcore_vmcoreinfo_destroy(src.vmcoreinfo);
}

/*
 * One table whose every entry points at itself: a table at every upper
 * level, a page at the last, everywhere.  Walking its leaves one by one
 * must end at the budget with FORMAT.
 */
static void case_hostile(const struct format *f, uint64_t budget)
{
	struct kcore_source src;
	struct kcore_pgtable_iter *it;
	unsigned a;
	char what[128];

	next_page = 0;
	a = new_page();
	for (unsigned i = 0; i < 512; i++)
		mem[a][i] = table_desc(a);
	if (!source_init(&src, f, a, 4096))
		return;
	snprintf(what, sizeof(what), "%s hostile", f->what);
	it = iter(&src, false, budget, what);
	if (it) {
		struct kcore_error *err = NULL;
		struct kcore_pgtable_leaf l;
		uint64_t va = kernel_base(f), leaves = 0;
		bool found = true;

		while (!err && found && va) {
			err = kcore_pgtable_iter_next(it, va, ~0ull, &found,
						      &l);
			if (!err && found) {
				leaves++;
				va = l.va + l.size;
			}
		}
		ok(err && err->code == KCORE_ERR_FORMAT &&
			   kcore_pgtable_iter_visits(it) <=
				   (budget ? budget : KCORE_PGTABLE_BUDGET) + 1,
		   "%s: a self-aliased table ends at the budget of %" PRIu64
		   " entries (%" PRIu64 " leaves)",
		   f->what, budget ? budget : KCORE_PGTABLE_BUDGET, leaves);
		if (err)
			printf("# %s\n", err->message);
		kcore_error_destroy(err);
	}
	kcore_pgtable_iter_destroy(it);
	kcore_vmcoreinfo_destroy(src.vmcoreinfo);
}

/* The table's own facts: refusals and entry decoding. */
static void case_format(const struct format *f)
{
	struct kcore_source src;
	struct kcore_pgtable pt = { 0 };
	struct kcore_error *err;
	uint64_t pa = 0;

	next_page = 0;
	if (!source_init(&src, f, new_page(), 4096))
		return;
	err = f->arch->pgtable_init(&src, &pt);
	ok(!err && pt.levels == f->levels && pt.top_entries == top_entries(f) &&
		   pt.root_pa == page_pa(0),
	   "%s: %u levels, %u top entries, the root at its physical address",
	   f->what, f->levels, top_entries(f));
	kcore_error_destroy(err);
	ok(f->arch->pte(&pt, 0, 2, &pa) == KCORE_PTE_NONE &&
		   f->arch->pte(&pt, table_desc(5), 2, &pa) ==
			   KCORE_PTE_TABLE &&
		   pa == page_pa(5) &&
		   f->arch->pte(&pt, leaf_desc(f, 0x200000, 2), 2, &pa) ==
			   KCORE_PTE_LEAF &&
		   f->arch->pte(&pt, leaf_desc(f, 0x3000, 1), 1, &pa) ==
			   KCORE_PTE_LEAF &&
		   pa == 0x3000,
	   "%s: entries decode as none, table and leaf", f->what);
	kcore_vmcoreinfo_destroy(src.vmcoreinfo);
	/* 16 KiB pages: arm64's other granules are refused, x86_64 has
	 * none. */
	if (!source_init(&src, f, 0, 16384))
		return;
	err = f->arch->pgtable_init(&src, &pt);
	if (is_arm64(f))
		ok(err && err->code == KCORE_ERR_UNSUPPORTED &&
			   strstr(err->message, "16 KiB"),
		   "%s: the 16 KiB granule is refused", f->what);
	else
		ok(!err, "%s: PAGESIZE does not change the tables", f->what);
	kcore_error_destroy(err);
	kcore_vmcoreinfo_destroy(src.vmcoreinfo);
}

static void lookups(void)
{
	static const char x86_vi[] = "OSRELEASE=6.1\nSYMBOL(init_top_pgt)=1\n";
	static const char arm_vi[] =
		"OSRELEASE=6.1\nNUMBER(kimage_voffset)=1\n";

	ok(kcore_arch_lookup(EM_X86_64) == &kcore_arch_x86_64 &&
		   kcore_arch_lookup(EM_AARCH64) == &kcore_arch_arm64 &&
		   !kcore_arch_lookup(EM_RISCV),
	   "lookup by e_machine");
	ok(kcore_arch_by_name("x86_64") == &kcore_arch_x86_64 &&
		   kcore_arch_by_name("amd64") == &kcore_arch_x86_64 &&
		   kcore_arch_by_name("aarch64") == &kcore_arch_arm64 &&
		   kcore_arch_by_name("arm64") == &kcore_arch_arm64 &&
		   !kcore_arch_by_name("x86"),
	   "lookup by name and alias, exact");
	ok(kcore_arch_by_vmcoreinfo(x86_vi, strlen(x86_vi)) ==
			   &kcore_arch_x86_64 &&
		   kcore_arch_by_vmcoreinfo(arm_vi, strlen(arm_vi)) ==
			   &kcore_arch_arm64 &&
		   !kcore_arch_by_vmcoreinfo("OSRELEASE=6.1\n", 14),
	   "lookup by VMCOREINFO lines");
	ok(kcore_arch_by_banner("Linux version 6.1.0-13-amd64 (gcc)") ==
			   &kcore_arch_x86_64 &&
		   kcore_arch_by_banner("Linux version 6.1 (aarch64-linux-gnu-"
					"gcc)") == &kcore_arch_arm64,
	   "lookup by banner");
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i += 2) {
		const struct kcore_arch *a = formats[i].arch;

		ok(a->nregs > a->sp_reg && a->regs[a->sp_reg] &&
			   strstr(a->regs[a->sp_reg], "sp") && a->kdump &&
			   a->pgtable_init && a->pte && a->kernel_places,
		   "%s: registers, stack pointer, kdump and page tables",
		   a->name);
	}
}

int main(void)
{
	lookups();
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		case_format(&formats[i]);
		case_leaves(&formats[i]);
		case_missing(&formats[i]);
		case_aliased_empty(&formats[i]);
		case_hostile(&formats[i], 1u << 16);
	}
	/* The real budget too, once per table. */
	case_hostile(&formats[0], 0);
	case_hostile(&formats[2], 0);
	return tap_done();
}
