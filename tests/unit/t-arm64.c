// SPDX-License-Identifier: MIT
/*
 * arm64 kernel page tables (arch-arm64.c and the page-table iterator) on
 * synthetic physical-only vmcores: 4 levels with 48-bit VAs, 5 levels
 * with LPA2 (52-bit VAs, OA[51:50] in descriptor bits 9:8), 2 MiB and
 * 1 GiB blocks, the mapped runs of a range, reads through the tables;
 * 16 KiB pages, an unknown VA size and VA_BITS=52 without TCR_EL1_T1SZ
 * refused with an error naming them.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfcore.h"
#include "tap.h"
#include "kcoredump/kcore.h"
#include "kcoredump/pgtable.h"

#define PHYS	 0x40000000ull /* the dump's one RAM segment */
#define PAGES	 10
#define KVOFF	 0xffff7fffc0000000ull /* kimage_voffset */
#define DATA_OFF 0x1000

static unsigned char img[DATA_OFF + PAGES * 4096];

static uint64_t *page(unsigned n)
{
	return (uint64_t *)(img + DATA_OFF + n * 4096);
}

static unsigned idx(uint64_t va, unsigned level, unsigned top_entries,
		    unsigned levels)
{
	unsigned n = level == levels ? top_entries : 512;

	return (unsigned)((va >> (12 + 9 * (level - 1))) & (n - 1));
}

/* Table descriptor (bits 1:0 = 0b11) to a page of the dump. */
static uint64_t table(unsigned n)
{
	return (PHYS + n * 4096ull) | 3;
}

static uint64_t lpa2_block(uint64_t pa)
{
	return (pa & 0x0003fffffffff000ull) | (((pa >> 50) & 3) << 8) | 1;
}

static char *write_image(const char *dir, const char *name, const char *vi)
{
	Elf64_Phdr *ph = kc_elfcore_header(img, 2);
	unsigned char *note = img + 0x200;
	static char path[256];
	int fd;

	((Elf64_Ehdr *)img)->e_machine = EM_AARCH64;
	memset(note, 0, DATA_OFF - 0x200);
	ph[0].p_filesz = kc_elfcore_vmcoreinfo(note, vi, strlen(vi));
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_flags = PF_R | PF_W | PF_X,
			      .p_offset = DATA_OFF,
			      .p_vaddr = 0,
			      .p_paddr = PHYS,
			      .p_filesz = PAGES * 4096,
			      .p_memsz = PAGES * 4096 };
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, img, sizeof(img)) != (ssize_t)sizeof(img))
		return NULL;
	close(fd);
	return path;
}

static struct kcore_source *open_image(const char *path)
{
	struct kcore_source *src = NULL;
	struct kcore_error *err = kcore_source_open(path, NULL, &src);

	if (err) {
		printf("# open: %s\n", err->message);
		kcore_error_destroy(err);
		return NULL;
	}
	return src;
}

static void vmcoreinfo(char *buf, size_t len, unsigned page_size,
		       const char *t1sz, const char *va_bits)
{
	snprintf(buf, len,
		 "OSRELEASE=6.12.0-test\nPAGESIZE=%u\n"
		 "SYMBOL(swapper_pg_dir)=%llx\n"
		 "NUMBER(VA_BITS)=%s\n%s"
		 "NUMBER(kimage_voffset)=0x%llx\n"
		 "NUMBER(PHYS_OFFSET)=0x%llx\n",
		 page_size, (unsigned long long)(PHYS + KVOFF), va_bits, t1sz,
		 (unsigned long long)KVOFF, (unsigned long long)PHYS);
}

static void expect_pa(struct kcore_source *src, uint64_t va, uint64_t want,
		      uint64_t want_len, const char *what)
{
	uint64_t pa = 0, len = 0;
	struct kcore_error *err =
		kcore_source_vaddr_to_paddr(src, va, &pa, &len);

	if (err)
		printf("# %s\n", err->message);
	ok(!err && pa == want && len == want_len, "%s", what);
	if (!err && (pa != want || len != want_len))
		printf("#   got 0x%llx (+0x%llx), expected 0x%llx (+0x%llx)\n",
		       (unsigned long long)pa, (unsigned long long)len,
		       (unsigned long long)want, (unsigned long long)want_len);
	kcore_error_destroy(err);
}

static void expect_refusal(const char *dir, const char *name, const char *vi,
			   const char *needle)
{
	char *path = write_image(dir, name, vi);
	struct kcore_source *src = path ? open_image(path) : NULL;
	uint64_t pa, len;
	struct kcore_error *err;

	if (!src) {
		ok(0, "open %s", name);
		return;
	}
	err = kcore_source_vaddr_to_paddr(src, 0xffff800000001000ull, &pa,
					  &len);
	ok(err && strstr(err->message, needle), "%s: refused, naming '%s'",
	   name, needle);
	if (err)
		printf("# %s\n", err->message);
	kcore_error_destroy(err);
	kcore_source_destroy(src);
}

/* 48-bit VAs, 4 levels: root, L1 (1 GiB), L2 (2 MiB), L3 (4 KiB). */
static void four_levels(const char *dir)
{
	const uint64_t va = 0xffff800012345000ull,
		       block2m = 0xffff800012600000ull,
		       block1g = 0xffffa00000000000ull;
	char vi[512];
	struct kcore_source *src;
	struct kcore_vrange *runs = NULL;
	size_t nruns = 0;
	unsigned char buf[16];
	struct kcore_error *err;
	char *path;

	memset(img + DATA_OFF, 0, PAGES * 4096);
	page(0)[idx(va, 4, 512, 4)] = table(1);
	page(1)[idx(va, 3, 512, 4)] = table(2);
	page(2)[idx(va, 2, 512, 4)] = table(3);
	page(3)[idx(va, 1, 512, 4)] = (PHYS + 5 * 4096) | 3; /* page */
	page(2)[idx(block2m, 2, 512, 4)] = 0x80200000ull | 1;
	page(0)[idx(block1g, 4, 512, 4)] = table(4);
	page(4)[idx(block1g, 3, 512, 4)] = 0xc0000000ull | 1;
	for (unsigned i = 0; i < 4096; i++)
		img[DATA_OFF + 5 * 4096 + i] = (unsigned char)(i * 7 + 1);
	vmcoreinfo(vi, sizeof(vi), 4096, "NUMBER(TCR_EL1_T1SZ)=0x10\n", "48");
	path = write_image(dir, "arm64-48", vi);
	src = path ? open_image(path) : NULL;
	if (!ok(src != NULL, "48-bit: open the arm64 vmcore"))
		return;
	expect_pa(src, va + 0x123, PHYS + 5 * 4096 + 0x123, 4096 - 0x123,
		  "48-bit: a 4 KiB page through 4 levels");
	expect_pa(src, block2m + 0x1234, 0x80201234ull, 0x200000 - 0x1234,
		  "48-bit: a 2 MiB block at level 2");
	expect_pa(src, block1g + 0x12345678, 0xd2345678ull,
		  0x40000000 - 0x12345678, "48-bit: a 1 GiB block at level 1");
	err = kcore_source_read_vaddr(src, va + 16, buf, sizeof(buf));
	ok(!err && buf[0] == (unsigned char)(16 * 7 + 1) &&
		   buf[15] == (unsigned char)(31 * 7 + 1),
	   "48-bit: reads through the page tables");
	kcore_error_destroy(err);
	err = kcore_source_vaddr_to_paddr(src, va + 4096, &(uint64_t){ 0 },
					  NULL);
	ok(err && strstr(err->message, "not mapped"),
	   "48-bit: an empty entry is 'not mapped'");
	kcore_error_destroy(err);
	err = kcore_source_vaddr_to_paddr(src, 0xfff0000000001000ull,
					  &(uint64_t){ 0 }, NULL);
	ok(err != NULL, "48-bit: a 52-bit address is refused");
	kcore_error_destroy(err);
	err = kcore_kernel_mapped_ranges(src, 0xffff800000000000ull, ~0ull,
					 &runs, &nruns, NULL);
	ok(!err && nruns == 1 && runs[0].start == va &&
		   runs[0].end == va + 4096,
	   "48-bit: the mapped RAM of the range is the one page (blocks "
	   "outside the dump's RAM are not listed)");
	kcore_error_destroy(err);
	free(runs);
	/* The tables below the root that the walk read (what a
	 * --vmalloc-range dump adds): pages 1, 2 and 3 on the way to va,
	 * page 4 to the 1 GiB block; the 2 MiB block lies outside RAM. */
	{
		uint64_t *pa = NULL, seen = 0;
		size_t ntables = 0;

		runs = NULL;
		err = kcore_kernel_mapped_tables(src, 0xffff800000000000ull,
						 ~0ull, &runs, &nruns, &ntables,
						 &pa);
		for (size_t i = 0; !err && i < ntables; i++)
			if (pa[i] >= PHYS && pa[i] < PHYS + PAGES * 4096ull &&
			    pa[i] % 4096 == 0)
				seen |= 1ull << ((pa[i] - PHYS) / 4096);
		ok(!err && ntables == 4 && seen == 0x1e && nruns == 1,
		   "48-bit: the walk's tables are pages 1-4 of the dump");
		kcore_error_destroy(err);
		free(runs);
		free(pa);
	}
	kcore_source_destroy(src);
}

/* 52-bit VAs with LPA2: a 16-entry level -1 table, then 4 levels. */
static void lpa2(const char *dir)
{
	const uint64_t va = 0xfff0000000203000ull,
		       block = 0xfff8000000400000ull,
		       high = 0x000c000000200000ull; /* PA bits 51 and 50 */
	char vi[512];
	struct kcore_source *src;
	struct kcore_vrange *runs = NULL;
	size_t nruns = 0;
	struct kcore_error *err;
	char *path;

	memset(img + DATA_OFF, 0, PAGES * 4096);
	page(0)[idx(va, 5, 16, 5)] = table(1);
	page(1)[idx(va, 4, 16, 5)] = table(2);
	page(2)[idx(va, 3, 16, 5)] = table(3);
	page(3)[idx(va, 2, 16, 5)] = table(4);
	page(4)[idx(va, 1, 16, 5)] = (PHYS + 6 * 4096) | 3;
	page(0)[idx(block, 5, 16, 5)] = table(7);
	page(7)[idx(block, 4, 16, 5)] = table(8);
	page(8)[idx(block, 3, 16, 5)] = table(9);
	page(9)[idx(block, 2, 16, 5)] = lpa2_block(high);
	vmcoreinfo(vi, sizeof(vi), 4096, "NUMBER(TCR_EL1_T1SZ)=0xc\n", "52");
	path = write_image(dir, "arm64-52", vi);
	src = path ? open_image(path) : NULL;
	if (!ok(src != NULL, "52-bit: open the arm64 vmcore"))
		return;
	expect_pa(src, va + 8, PHYS + 6 * 4096 + 8, 4096 - 8,
		  "52-bit LPA2: a 4 KiB page through 5 levels");
	expect_pa(src, block + 0x10, high + 0x10, 0x200000 - 0x10,
		  "52-bit LPA2: a 2 MiB block above 2^50 (OA[51:50] in bits "
		  "9:8)");
	err = kcore_kernel_mapped_ranges(src, 0xfff0000000000000ull, ~0ull,
					 &runs, &nruns, NULL);
	ok(!err && nruns == 1 && runs[0].start == va &&
		   runs[0].end == va + 4096,
	   "52-bit LPA2: the mapped RAM of the range");
	kcore_error_destroy(err);
	free(runs);
	kcore_source_destroy(src);
}

/*
 * arm64's /proc/kcore layout (6.12): the kernel image lies inside the
 * vmalloc area, so _stext is in two segments; the one with a physical
 * address is the text, the other vmalloc.  The struct pages lie inside
 * [VMEMMAP_START, VMEMMAP_END), not at its start, when a kernel built for
 * 52-bit VAs runs with 48 (as here: linear map and vmemmap of a 48-bit
 * boot).
 */
static void classes(const char *dir)
{
	static const struct {
		uint64_t vaddr, paddr, size;
		enum kcore_segment_class cls;
	} segs[] = {
		{ 0xffff800080200000ull, 0x40200000ull, 0x100000,
		  KCORE_CLASS_TEXT },
		{ 0xffff800080000000ull, ~0ull, 1ull << 31,
		  KCORE_CLASS_VMALLOC },
		{ 0xffff800000000000ull, ~0ull, 4096, KCORE_CLASS_MODULES },
		{ 0xffff000000000000ull, 0x40000000ull, 4096, KCORE_CLASS_RAM },
		{ 0xfffffdffc0000000ull, ~0ull, 4096, KCORE_CLASS_VMEMMAP },
	};
	static const char vi[] = "OSRELEASE=6.12.0-test\nPAGESIZE=4096\n"
				 "SYMBOL(_stext)=ffff800080210000\n"
				 "NUMBER(VMALLOC_START)=0xffff800080000000\n"
				 "NUMBER(MODULES_VADDR)=0xffff800000000000\n"
				 "NUMBER(MODULES_END)=0xffff800080000000\n"
				 "NUMBER(VMEMMAP_START)=0xffffc1ffc0000000\n"
				 "NUMBER(VMEMMAP_END)=0xffffffffc0000000\n"
				 "NUMBER(PHYS_OFFSET)=0x40000000\n";
	unsigned char *im = calloc(1, 0x2000);
	Elf64_Phdr *ph;
	struct kcore_source *src;
	uint64_t off = 0x2000;
	char path[256];
	int fd;
	bool all = true;

	if (!im)
		return;
	ph = kc_elfcore_header(im, 6);
	((Elf64_Ehdr *)im)->e_machine = EM_AARCH64;
	ph[0].p_filesz = kc_elfcore_vmcoreinfo(im + 0x200, vi, sizeof(vi) - 1);
	for (unsigned i = 0; i < 5; i++) {
		ph[i + 1] = (Elf64_Phdr){ .p_type = PT_LOAD,
					  .p_flags = PF_R | PF_W | PF_X,
					  .p_offset = off,
					  .p_vaddr = segs[i].vaddr,
					  .p_paddr = segs[i].paddr,
					  .p_filesz = segs[i].size,
					  .p_memsz = segs[i].size };
		off += segs[i].size;
	}
	snprintf(path, sizeof(path), "%s/arm64-kcore", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ok(fd >= 0 && write(fd, im, 0x2000) == 0x2000 &&
		   ftruncate(fd, (off_t)off) == 0,
	   "write a sparse arm64 kcore-like core");
	close(fd);
	free(im);
	src = open_image(path);
	if (!ok(src != NULL, "open the arm64 kcore-like core"))
		return;
	for (unsigned i = 0; i < 5; i++) {
		const struct kcore_segment *seg =
			kcore_source_segment(src, i + 1);

		if (!seg || seg->cls != segs[i].cls) {
			all = false;
			printf("# segment %u: class %s, expected %s\n", i + 1,
			       seg ? kcore_segment_class_name(seg->cls) : "-",
			       kcore_segment_class_name(segs[i].cls));
		}
	}
	ok(all, "classes: kernel image text, vmalloc (holding _stext too), "
		"modules, linear map RAM, vmemmap");
	ok(kcore_source_info(src)->has_phys_base &&
		   kcore_source_info(src)->phys_base == 0x40000000ull,
	   "PHYS_OFFSET is arm64's phys_base");
	kcore_source_destroy(src);
	if (!getenv("KEEP"))
		unlink(path);
}

int main(void)
{
	char dir[] = "/tmp/t-arm64-XXXXXX", vi[512];

	if (!mkdtemp(dir))
		tap_skip_all("no temp dir");
	four_levels(dir);
	lpa2(dir);
	classes(dir);
	vmcoreinfo(vi, sizeof(vi), 16384, "NUMBER(TCR_EL1_T1SZ)=0x11\n", "47");
	expect_refusal(dir, "arm64-16k", vi, "16 KiB pages");
	vmcoreinfo(vi, sizeof(vi), 4096, "", "52");
	expect_refusal(dir, "arm64-52-no-t1sz", vi, "TCR_EL1_T1SZ");
	vmcoreinfo(vi, sizeof(vi), 4096, "NUMBER(TCR_EL1_T1SZ)=0x16\n", "42");
	expect_refusal(dir, "arm64-42", vi, "42-bit");
	/* KEEP=1 leaves the images (the fuzz corpus seeds arm64-*). */
	if (getenv("KEEP")) {
		printf("# images in %s\n", dir);
		return tap_done();
	}
	for (const char *n = "arm64-48\0arm64-52\0arm64-16k\0arm64-52-no-t1sz\0"
			     "arm64-42\0";
	     *n; n += strlen(n) + 1) {
		char p[300];

		snprintf(p, sizeof(p), "%s/%s", dir, n);
		unlink(p);
	}
	rmdir(dir);
	return tap_done();
}
