// SPDX-License-Identifier: GPL-2.0
/*
 * kcore_test: known vmalloc-space contents for /proc/kcore tests.
 *
 * On load it allocates pages and maps them into vmalloc space in three
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
 *
 * The addresses are module parameters, read back through
 * /sys/module/kcore_test/parameters/ (read-only, root only).
 *
 * Pattern: every 8-byte word of page k of an area is
 *   KCORE_TEST_MAGIC | ((k >> 8) << 24) | (area << 16) | ((k & 0xff) << 8) |
 *   (word index & 0xff)
 * with area 1 = ram_addr, 2 = ram2_addr, 3 = vmalloc_addr, 4 = vmap_addr,
 * 5 = big_addr, stored little-endian.  Userspace recomputes it (tests/vm/cases/kernel-*.sh).
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
#define HPET_PHYS	0xfed00000UL

static unsigned long ram_addr;
module_param(ram_addr, ulong, 0400);
MODULE_PARM_DESC(ram_addr, "vm_map_ram() area of 4 pages (pattern area 1)");
static unsigned long ram2_addr;
module_param(ram2_addr, ulong, 0400);
MODULE_PARM_DESC(ram2_addr, "vm_map_ram() area of 2 pages (pattern area 2)");
static unsigned long vmalloc_addr;
module_param(vmalloc_addr, ulong, 0400);
MODULE_PARM_DESC(vmalloc_addr, "vmalloc() area of 4 pages (pattern area 3)");

static unsigned long vmap_addr;
module_param(vmap_addr, ulong, 0400);
MODULE_PARM_DESC(vmap_addr, "vmap() area of 4 pages (pattern area 4)");
static unsigned long big_addr;
module_param(big_addr, ulong, 0400);
MODULE_PARM_DESC(big_addr, "vmalloc() area of 4096 pages (pattern area 5)");
static unsigned long io_addr;
module_param(io_addr, ulong, 0400);
MODULE_PARM_DESC(io_addr, "ioremap() of one page (reads as zeros), or 0");

static struct page *vmap_pages[VMAP_PAGES];
static void *vmap_map, *big_map, *io_map;
static struct page *ram_pages[RAM_PAGES];
static struct page *ram2_pages[RAM2_PAGES];
static void *ram_map, *ram2_map, *vm_map;

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

static int __init kcore_test_init(void)
{
	int ret;

	ret = alloc_pages_array(ram_pages, RAM_PAGES);
	if (!ret)
		ret = alloc_pages_array(ram2_pages, RAM2_PAGES);
	if (!ret)
		ret = alloc_pages_array(vmap_pages, VMAP_PAGES);
	if (ret)
		goto err_pages;

	ret = -ENOMEM;
	ram_map = vm_map_ram(ram_pages, RAM_PAGES, NUMA_NO_NODE);
	if (!ram_map)
		goto err_pages;
	ram2_map = vm_map_ram(ram2_pages, RAM2_PAGES, NUMA_NO_NODE);
	if (!ram2_map)
		goto err_ram;
	vm_map = vmalloc(VM_PAGES * PAGE_SIZE);
	if (!vm_map)
		goto err_ram2;
	vmap_map = vmap(vmap_pages, VMAP_PAGES, VM_MAP, PAGE_KERNEL);
	if (!vmap_map)
		goto err_vm;
	big_map = vmalloc(BIG_PAGES * PAGE_SIZE);
	if (!big_map)
		goto err_vmap;
	io_map = ioremap(HPET_PHYS, PAGE_SIZE);

	fill(ram_map, 1, RAM_PAGES);
	fill(ram2_map, 2, RAM2_PAGES);
	fill(vm_map, 3, VM_PAGES);
	fill(vmap_map, 4, VMAP_PAGES);
	fill(big_map, 5, BIG_PAGES);

	ram_addr = (unsigned long)ram_map;
	ram2_addr = (unsigned long)ram2_map;
	vmalloc_addr = (unsigned long)vm_map;
	vmap_addr = (unsigned long)vmap_map;
	big_addr = (unsigned long)big_map;
	io_addr = (unsigned long)io_map;
	pr_info("kcore_test: vm_map_ram %px (+%d pages), %px (+%d), vmalloc %px (+%d)\n",
		ram_map, RAM_PAGES, ram2_map, RAM2_PAGES, vm_map, VM_PAGES);
	return 0;

err_vmap:
	vunmap(vmap_map);
err_vm:
	vfree(vm_map);
err_ram2:
	vm_unmap_ram(ram2_map, RAM2_PAGES);
err_ram:
	vm_unmap_ram(ram_map, RAM_PAGES);
err_pages:
	free_pages_array(ram_pages, RAM_PAGES);
	free_pages_array(ram2_pages, RAM2_PAGES);
	free_pages_array(vmap_pages, VMAP_PAGES);
	return ret;
}

static void __exit kcore_test_exit(void)
{
	if (io_map)
		iounmap(io_map);
	vfree(big_map);
	vunmap(vmap_map);
	free_pages_array(vmap_pages, VMAP_PAGES);
	vfree(vm_map);
	vm_unmap_ram(ram2_map, RAM2_PAGES);
	vm_unmap_ram(ram_map, RAM_PAGES);
	free_pages_array(ram_pages, RAM_PAGES);
	free_pages_array(ram2_pages, RAM2_PAGES);
}

module_init(kcore_test_init);
module_exit(kcore_test_exit);
MODULE_DESCRIPTION("Known vmalloc-space contents for /proc/kcore tests");
MODULE_LICENSE("GPL");
