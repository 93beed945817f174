// SPDX-License-Identifier: GPL-2.0
/*
 * kcore_test: known vmalloc-space contents for /proc/kcore tests.
 *
 * On load it allocates pages and maps them into vmalloc space in several
 * ways, each page filled with a distinct pattern:
 *
 *   ram_addr     vm_map_ram() of 4 pages (a vmap_block area, VMAP_BLOCK)
 *   ram2_addr    vm_map_ram() of 2 more pages (usually the same vmap_block,
 *                right after ram_addr: no guard page in between)
 *   vmalloc_addr vmalloc() of 4 pages (a normal VM_ALLOC area)
 *   vmap_addr    vmap() of 4 pages (VM_MAP: no vm->pages, page tables only)
 *   big_addr     vmalloc() of 16 MiB (4096 pages: spans of many pages)
 *   io_addr      ioremap() of the HPET page (VM_IOREMAP: reads as zeros),
 *                0 if it could not be mapped
 *   gapa_addr    vm_map_ram() of 4 pages, then 2 pages that are unmapped
 *   gapc_addr    again (a dirty region) and 4 more pages: two used regions
 *                of a vmap block with a dirty gap (gapb_addr: where the
 *                2 unmapped pages were, reads as zeros)
 *   tail_addr    vm_map_ram() of 64 pages ending at the end of a vmap
 *                block (bit VMAP_BBMAP_BITS), 0 if none could be placed
 *                there; the areas mapped to get there are unmapped again
 *   huge_addr    vmalloc_huge() of 4 MiB (PMD mappings where possible)
 *   npte_addr    vmalloc() of 4 pages, page 1 made not present with
 *                set_memory_np() on its vmalloc address (the direct map
 *                alias goes too): reads as zeros, as vmalloc_to_page()
 *                finds no page
 *   ndm_addr     vmalloc() of 4 pages, the direct map of page 1 made not
 *                present (set_memory_np() on its direct map address): the
 *                vmalloc mapping stays, but kcore copies through the
 *                direct map and cannot read the page
 *
 * npte_addr and ndm_addr need the addresses of set_memory_np() and
 * set_memory_p() (not exported) as the parameters set_memory_np and
 * set_memory_p, from /proc/kallsyms; they are 0 without them.
 *
 * The addresses are module parameters, read back through
 * /sys/module/kcore_test/parameters/ (read-only, root only).
 *
 * Pattern: every 8-byte word of page k of an area is
 *   KCORE_TEST_MAGIC | ((k >> 8) << 24) | (area << 16) | ((k & 0xff) << 8) |
 *   (word index & 0xff)
 * with area 1 = ram, 2 = ram2, 3 = vmalloc, 4 = vmap, 5 = big, 6 = gapa,
 * 7 = gapc, 8 = tail, 9 = huge, 10 = npte, 11 = ndm, stored little-endian.
 * Userspace recomputes it (tests/vm/cases/kernel-*.sh).
 */
#include <linux/module.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <linux/gfp.h>
#include <linux/io.h>

#define KCORE_TEST_MAGIC	0x6b63746500000000ULL	/* "kcte" */
#define RAM_PAGES	4
#define RAM2_PAGES	2
#define VM_PAGES	4
#define VMAP_PAGES	4
#define BIG_PAGES	4096
#define GAPA_PAGES	4
#define GAPB_PAGES	2
#define GAPC_PAGES	4
#define TAIL_PAGES	64
#define TAIL_TRIES	48
#define HUGE_SIZE	(4UL << 20)
#define NP_PAGES	4
#define HPET_PHYS	0xfed00000UL
/* vmap blocks are VMAP_BBMAP_BITS pages, 4 MiB on x86_64 (mm/vmalloc.c) */
#define VMAP_BLOCK_BYTES	(1024UL * PAGE_SIZE)

#define AREA_PARAM(name, desc)					\
	static unsigned long name##_addr;				\
	module_param(name##_addr, ulong, 0400);			\
	MODULE_PARM_DESC(name##_addr, desc)

AREA_PARAM(ram, "vm_map_ram() area of 4 pages (pattern area 1)");
AREA_PARAM(ram2, "vm_map_ram() area of 2 pages (pattern area 2)");
AREA_PARAM(vmalloc, "vmalloc() area of 4 pages (pattern area 3)");
AREA_PARAM(vmap, "vmap() area of 4 pages (pattern area 4)");
AREA_PARAM(big, "vmalloc() area of 4096 pages (pattern area 5)");
AREA_PARAM(io, "ioremap() of one page (reads as zeros), or 0");
AREA_PARAM(gapa, "vm_map_ram() area of 4 pages before a dirty gap (area 6)");
AREA_PARAM(gapb, "where 2 pages were vm_map_ram()ed and unmapped (zeros)");
AREA_PARAM(gapc, "vm_map_ram() area of 4 pages after a dirty gap (area 7)");
AREA_PARAM(tail, "vm_map_ram() area of 64 pages ending a vmap block (area 8)");
AREA_PARAM(huge, "vmalloc_huge() area of 4 MiB (area 9)");
AREA_PARAM(npte, "vmalloc() area of 4 pages, page 1 not present (area 10)");
AREA_PARAM(ndm, "vmalloc() area of 4 pages, page 1's direct map gone (area 11)");

static unsigned long set_memory_np;
module_param(set_memory_np, ulong, 0400);
MODULE_PARM_DESC(set_memory_np, "address of set_memory_np() (/proc/kallsyms)");
static unsigned long set_memory_p;
module_param(set_memory_p, ulong, 0400);
MODULE_PARM_DESC(set_memory_p, "address of set_memory_p() (/proc/kallsyms)");

typedef int (*set_memory_fn)(unsigned long addr, int numpages);

static struct page *vmap_pages[VMAP_PAGES];
static struct page *ram_pages[RAM_PAGES];
static struct page *ram2_pages[RAM2_PAGES];
static struct page *gapa_pages[GAPA_PAGES];
static struct page *gapb_pages[GAPB_PAGES];
static struct page *gapc_pages[GAPC_PAGES];
static struct page *tail_pages[TAIL_PAGES];
static void *ram_map, *ram2_map, *vm_map, *vmap_map, *big_map, *io_map;
static void *gapa_map, *gapc_map, *tail_map, *huge_map, *npte_map, *ndm_map;
static unsigned long ndm_direct;

static void fill(void *base, unsigned int area, unsigned int npages)
{
	unsigned int k, i;

	for (k = 0; k < npages; k++) {
		u64 *w = base + k * PAGE_SIZE;

		for (i = 0; i < PAGE_SIZE / sizeof(u64); i++)
			w[i] = KCORE_TEST_MAGIC | ((u64)(k >> 8) << 24) |
			       ((u64)area << 16) | ((u64)(k & 0xff) << 8) |
			       (i & 0xff);
	}
}

static void free_pages_array(struct page **pages, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (pages[i])
			__free_page(pages[i]);
}

static int alloc_pages_array(struct page **pages, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(GFP_KERNEL);
		if (!pages[i])
			return -ENOMEM;
	}
	return 0;
}

/*
 * Map the same 64 pages with vm_map_ram() again and again until an area
 * ends at the end of a vmap block; keep that one, unmap the others.
 */
static void *map_block_tail(void)
{
	void *maps[TAIL_TRIES], *found = NULL;
	int i, n;

	for (n = 0; n < TAIL_TRIES; n++) {
		maps[n] = vm_map_ram(tail_pages, TAIL_PAGES, NUMA_NO_NODE);
		if (!maps[n])
			break;
		if (!(((unsigned long)maps[n] + TAIL_PAGES * PAGE_SIZE) %
		      VMAP_BLOCK_BYTES)) {
			found = maps[n];
			break;
		}
	}
	for (i = 0; i < n; i++)
		vm_unmap_ram(maps[i], TAIL_PAGES);
	return found;
}

static int __init kcore_test_init(void)
{
	void *gapb_map;
	int ret;

	ret = alloc_pages_array(ram_pages, RAM_PAGES);
	if (!ret)
		ret = alloc_pages_array(ram2_pages, RAM2_PAGES);
	if (!ret)
		ret = alloc_pages_array(vmap_pages, VMAP_PAGES);
	if (!ret)
		ret = alloc_pages_array(gapa_pages, GAPA_PAGES);
	if (!ret)
		ret = alloc_pages_array(gapb_pages, GAPB_PAGES);
	if (!ret)
		ret = alloc_pages_array(gapc_pages, GAPC_PAGES);
	if (!ret)
		ret = alloc_pages_array(tail_pages, TAIL_PAGES);
	if (ret)
		goto err;

	ret = -ENOMEM;
	ram_map = vm_map_ram(ram_pages, RAM_PAGES, NUMA_NO_NODE);
	ram2_map = vm_map_ram(ram2_pages, RAM2_PAGES, NUMA_NO_NODE);
	vm_map = vmalloc(VM_PAGES * PAGE_SIZE);
	vmap_map = vmap(vmap_pages, VMAP_PAGES, VM_MAP, PAGE_KERNEL);
	big_map = vmalloc(BIG_PAGES * PAGE_SIZE);
	gapa_map = vm_map_ram(gapa_pages, GAPA_PAGES, NUMA_NO_NODE);
	gapb_map = vm_map_ram(gapb_pages, GAPB_PAGES, NUMA_NO_NODE);
	gapc_map = vm_map_ram(gapc_pages, GAPC_PAGES, NUMA_NO_NODE);
	huge_map = vmalloc_huge(HUGE_SIZE, GFP_KERNEL);
	npte_map = vmalloc(NP_PAGES * PAGE_SIZE);
	ndm_map = vmalloc(NP_PAGES * PAGE_SIZE);
	if (!ram_map || !ram2_map || !vm_map || !vmap_map || !big_map ||
	    !gapa_map || !gapb_map || !gapc_map || !huge_map || !npte_map ||
	    !ndm_map)
		goto err;
	io_map = ioremap(HPET_PHYS, PAGE_SIZE);

	fill(ram_map, 1, RAM_PAGES);
	fill(ram2_map, 2, RAM2_PAGES);
	fill(vm_map, 3, VM_PAGES);
	fill(vmap_map, 4, VMAP_PAGES);
	fill(big_map, 5, BIG_PAGES);
	fill(gapa_map, 6, GAPA_PAGES);
	fill(gapb_map, 6, GAPB_PAGES);
	fill(gapc_map, 7, GAPC_PAGES);
	fill(huge_map, 9, HUGE_SIZE / PAGE_SIZE);
	fill(npte_map, 10, NP_PAGES);
	fill(ndm_map, 11, NP_PAGES);

	/* the gap: its pages keep a pattern, but are no longer mapped */
	vm_unmap_ram(gapb_map, GAPB_PAGES);

	tail_map = map_block_tail();
	if (tail_map)
		fill(tail_map, 8, TAIL_PAGES);

	if (set_memory_np && set_memory_p) {
		set_memory_fn np = (set_memory_fn)set_memory_np;
		set_memory_fn p = (set_memory_fn)set_memory_p;

		ndm_direct = (unsigned long)page_address(
			vmalloc_to_page(ndm_map + PAGE_SIZE));
		if (np((unsigned long)npte_map + PAGE_SIZE, 1)) {
			pr_err("kcore_test: set_memory_np() failed\n");
			goto err;
		}
		if (np(ndm_direct, 1)) {
			p((unsigned long)npte_map + PAGE_SIZE, 1);
			pr_err("kcore_test: set_memory_np() failed\n");
			goto err;
		}
		npte_addr = (unsigned long)npte_map;
		ndm_addr = (unsigned long)ndm_map;
	}

	ram_addr = (unsigned long)ram_map;
	ram2_addr = (unsigned long)ram2_map;
	vmalloc_addr = (unsigned long)vm_map;
	vmap_addr = (unsigned long)vmap_map;
	big_addr = (unsigned long)big_map;
	io_addr = (unsigned long)io_map;
	gapa_addr = (unsigned long)gapa_map;
	gapb_addr = (unsigned long)gapb_map;
	gapc_addr = (unsigned long)gapc_map;
	tail_addr = (unsigned long)tail_map;
	huge_addr = (unsigned long)huge_map;
	pr_info("kcore_test: vm_map_ram %px (+%d pages), %px (+%d), vmalloc %px (+%d)\n",
		ram_map, RAM_PAGES, ram2_map, RAM2_PAGES, vm_map, VM_PAGES);
	return 0;

err:
	/* nothing was made not present when we get here */
	if (tail_map)
		vm_unmap_ram(tail_map, TAIL_PAGES);
	vfree(ndm_map);
	vfree(npte_map);
	vfree(huge_map);
	if (gapc_map)
		vm_unmap_ram(gapc_map, GAPC_PAGES);
	if (gapa_map)
		vm_unmap_ram(gapa_map, GAPA_PAGES);
	if (io_map)
		iounmap(io_map);
	vfree(big_map);
	vunmap(vmap_map);
	vfree(vm_map);
	if (ram2_map)
		vm_unmap_ram(ram2_map, RAM2_PAGES);
	if (ram_map)
		vm_unmap_ram(ram_map, RAM_PAGES);
	free_pages_array(ram_pages, RAM_PAGES);
	free_pages_array(ram2_pages, RAM2_PAGES);
	free_pages_array(vmap_pages, VMAP_PAGES);
	free_pages_array(gapa_pages, GAPA_PAGES);
	free_pages_array(gapb_pages, GAPB_PAGES);
	free_pages_array(gapc_pages, GAPC_PAGES);
	free_pages_array(tail_pages, TAIL_PAGES);
	return ret;
}

static void __exit kcore_test_exit(void)
{
	if (npte_addr) {
		set_memory_fn p = (set_memory_fn)set_memory_p;

		p((unsigned long)npte_map + PAGE_SIZE, 1);
		p(ndm_direct, 1);
	}
	vfree(ndm_map);
	vfree(npte_map);
	vfree(huge_map);
	if (tail_map)
		vm_unmap_ram(tail_map, TAIL_PAGES);
	vm_unmap_ram(gapc_map, GAPC_PAGES);
	vm_unmap_ram(gapa_map, GAPA_PAGES);
	if (io_map)
		iounmap(io_map);
	vfree(big_map);
	vunmap(vmap_map);
	vfree(vm_map);
	vm_unmap_ram(ram2_map, RAM2_PAGES);
	vm_unmap_ram(ram_map, RAM_PAGES);
	free_pages_array(ram_pages, RAM_PAGES);
	free_pages_array(ram2_pages, RAM2_PAGES);
	free_pages_array(vmap_pages, VMAP_PAGES);
	free_pages_array(gapa_pages, GAPA_PAGES);
	free_pages_array(gapb_pages, GAPB_PAGES);
	free_pages_array(gapc_pages, GAPC_PAGES);
	free_pages_array(tail_pages, TAIL_PAGES);
}

module_init(kcore_test_init);
module_exit(kcore_test_exit);
MODULE_DESCRIPTION("Known vmalloc-space contents for /proc/kcore tests");
MODULE_LICENSE("GPL");
