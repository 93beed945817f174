// SPDX-License-Identifier: MIT
/*
 * Segment classes.  Kernel segments are placed by the layout the kernel
 * itself reports (VMCOREINFO) and by p_paddr, never by hard-coded
 * addresses: KASLR moves RAM, vmalloc, vmemmap and text every boot.
 * Process segments are named after NT_FILE mappings, thread stacks, the
 * vDSO and the brk heap.
 */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "source-impl.h"

/* Segments larger than this cannot be a vsyscall-like single page. */
#define SMALL_SEGMENT (2 * 4096)
/* How far above the executable the brk heap may start: 32 MiB of
 * randomisation on older kernels, up to 1 GiB on newer x86_64 and arm64
 * (observed ~800 MiB on 6.18).  Only the first anonymous segment in that
 * window is called the heap. */
#define BRK_RANDOM_MAX (1ull << 30)

const char *kcore_source_add_label(struct kcore_source *src, const char *label)
{
	char **labels =
		realloc(src->labels, (src->nlabels + 1) * sizeof(*labels));
	char *copy;

	if (!labels)
		return NULL;
	src->labels = labels;
	copy = strdup(label);
	if (!copy)
		return NULL;
	src->labels[src->nlabels++] = copy;
	return copy;
}

static bool vmcoreinfo_u64(const struct kcore_source *src, const char *key,
			   uint64_t *ret)
{
	return src->vmcoreinfo &&
	       kcore_vmcoreinfo_get_u64(src->vmcoreinfo, key, ret);
}

static bool contains(const struct kcore_segment *seg, uint64_t addr)
{
	return addr >= seg->vaddr && addr - seg->vaddr < seg->memsz;
}

static void kernel_layout(struct kcore_source *src)
{
	struct kcore_source_info *info = &src->info;
	uint64_t v;

	if (vmcoreinfo_u64(src, "PAGESIZE", &v) && v >= 512 &&
	    (v & (v - 1)) == 0)
		info->page_size = v;
	info->has_kernel_offset =
		vmcoreinfo_u64(src, "KERNELOFFSET", &info->kernel_offset);
	info->has_phys_base =
		vmcoreinfo_u64(src, "NUMBER(phys_base)", &info->phys_base);
	/* arm64's counterpart, where RAM starts (memstart_addr). */
	if (!info->has_phys_base && src->arch && src->arch->phys_base_key)
		info->has_phys_base = vmcoreinfo_u64(
			src, src->arch->phys_base_key, &info->phys_base);
	if (!vmcoreinfo_u64(src, "SYMBOL(_stext)", &src->stext))
		src->stext = 0;
	info->has_page_offset =
		vmcoreinfo_u64(src, "NUMBER(PAGE_OFFSET)",
			       &info->page_offset) ||
		vmcoreinfo_u64(src, "PAGE_OFFSET", &info->page_offset);
	info->has_vmalloc_start =
		vmcoreinfo_u64(src, "NUMBER(VMALLOC_START)",
			       &info->vmalloc_start) ||
		vmcoreinfo_u64(src, "VMALLOC_START", &info->vmalloc_start);
	info->has_vmemmap_start =
		vmcoreinfo_u64(src, "NUMBER(VMEMMAP_START)",
			       &info->vmemmap_start) ||
		vmcoreinfo_u64(src, "VMEMMAP_START", &info->vmemmap_start) ||
		/* x86_64: the vmemmap array itself, i.e. vmemmap_base */
		vmcoreinfo_u64(src, "SYMBOL(vmemmap)", &info->vmemmap_start);
}

/* p_paddr is real for RAM and text; (u64)-1 marks the others.  Older
 * kernels and some VMs write 0 everywhere: then nothing is physical. */
static void mark_physical(struct kcore_source *src)
{
	size_t loads = 0, zero = 0;

	for (size_t i = 0; i < src->nsegments; i++) {
		const struct kcore_segment *seg = &src->segments[i];

		if (seg->type != PT_LOAD)
			continue;
		loads++;
		if (seg->paddr == 0)
			zero++;
	}
	for (size_t i = 0; i < src->nsegments; i++) {
		struct kcore_segment *seg = &src->segments[i];

		seg->has_paddr = seg->type == PT_LOAD &&
				 seg->paddr != UINT64_MAX &&
				 !(zero > 1 && zero == loads);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The direct-map offset: the value of vaddr - paddr that most physical
 * segments share.  The kernel image (the segment holding _stext) has its
 * own and does not vote: with one RAM segment it would tie.  Of values
 * shared by as many segments, the one of the first segment that votes.
 * The offsets are sorted once: a file with a million segments costs
 * n log n, not n^2 (issue 15).
 */
static bool derive_page_offset(const struct kcore_source *src, uint64_t *ret)
{
	uint64_t best = 0, *d;
	size_t best_n = 0, n = 0;

	d = malloc((src->nsegments ? src->nsegments : 1) * sizeof(*d));
	if (!d)
		return false;
	for (size_t i = 0; i < src->nsegments; i++)
		if (src->segments[i].has_paddr)
			d[n++] =
				src->segments[i].vaddr - src->segments[i].paddr;
	qsort(d, n, sizeof(*d), cmp_u64);
	for (size_t i = 0; i < src->nsegments; i++) {
		const struct kcore_segment *a = &src->segments[i];
		uint64_t v = a->vaddr - a->paddr;
		size_t lo = 0, hi = n, first, count;

		if (!a->has_paddr || (src->stext && contains(a, src->stext)))
			continue;
		/* [first, first + count): the segments sharing v. */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (d[mid] < v)
				lo = mid + 1;
			else
				hi = mid;
		}
		first = lo;
		hi = n;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (d[mid] <= v)
				lo = mid + 1;
			else
				hi = mid;
		}
		count = lo - first;
		if (count > best_n) {
			best_n = count;
			best = v;
		}
	}
	free(d);
	*ret = best;
	return best_n > 0;
}

static void classify_kernel(struct kcore_source *src)
{
	struct kcore_source_info *info = &src->info;
	const struct kcore_segment *text = NULL, *biggest = NULL;
	uint64_t modules_start = 0, modules_end = 0;
	bool stext_physical = false;
	uint64_t vmemmap_end = 0;
	bool has_vmemmap_end =
		vmcoreinfo_u64(src, "NUMBER(VMEMMAP_END)", &vmemmap_end);
	bool has_modules =
		vmcoreinfo_u64(src, "NUMBER(MODULES_VADDR)", &modules_start) &&
		vmcoreinfo_u64(src, "NUMBER(MODULES_END)", &modules_end);

	kernel_layout(src);
	if (!info->has_page_offset && !info->physical_only)
		info->has_page_offset =
			derive_page_offset(src, &info->page_offset);
	/* arm64 maps the kernel image inside the vmalloc area: the image's
	 * own (physical) segment holds _stext, and so does the vmalloc
	 * segment; only the first is text. */
	for (size_t i = 0; i < src->nsegments; i++)
		if (src->segments[i].type == PT_LOAD &&
		    src->segments[i].has_paddr && src->stext &&
		    contains(&src->segments[i], src->stext))
			stext_physical = true;
	for (size_t i = 0; i < src->nsegments; i++) {
		struct kcore_segment *seg = &src->segments[i];

		if (seg->type != PT_LOAD)
			continue;
		if (seg->has_paddr && info->has_page_offset &&
		    seg->vaddr - seg->paddr == info->page_offset) {
			seg->cls = KCORE_CLASS_RAM;
			seg->label = "direct map";
		} else if (seg->has_paddr || (src->stext && !stext_physical &&
					      contains(seg, src->stext))) {
			seg->cls = KCORE_CLASS_TEXT;
			seg->label = "kernel image";
			if (!text)
				text = seg;
		} else {
			seg->cls = KCORE_CLASS_OTHER;
			if (!biggest || seg->memsz > biggest->memsz)
				biggest = seg;
		}
	}
	/* kcore's vmalloc segment spans the whole area: the largest. */
	if (!info->has_vmalloc_start && biggest &&
	    info->kind == KCORE_SOURCE_LIVE_KCORE) {
		info->has_vmalloc_start = true;
		info->vmalloc_start = biggest->vaddr;
	}
	for (size_t i = 0; i < src->nsegments; i++) {
		struct kcore_segment *seg = &src->segments[i];

		if (seg->type != PT_LOAD || seg->cls != KCORE_CLASS_OTHER)
			continue;
		if (info->has_vmalloc_start &&
		    seg->vaddr == info->vmalloc_start) {
			seg->cls = KCORE_CLASS_VMALLOC;
			seg->label = "vmalloc area";
		} else if (info->has_vmemmap_start &&
			   (contains(seg, info->vmemmap_start) ||
			    (has_vmemmap_end &&
			     seg->vaddr >= info->vmemmap_start &&
			     seg->vaddr < vmemmap_end))) {
			/* arm64 configured for 52-bit VAs but running with
			 * 48 (arm64.nolva, no LPA2): the struct pages of its
			 * linear map lie inside [VMEMMAP_START, VMEMMAP_END),
			 * not at its start. */
			seg->cls = KCORE_CLASS_VMEMMAP;
			seg->label = "struct page array";
		} else if (has_modules && seg->vaddr >= modules_start &&
			   seg->vaddr < modules_end) {
			seg->cls = KCORE_CLASS_MODULES;
			seg->label = "module area";
		} else if (!has_modules && text && seg->vaddr > text->vaddr &&
			   seg->memsz > SMALL_SEGMENT) {
			/* x86_64: modules sit right above the kernel image */
			seg->cls = KCORE_CLASS_MODULES;
			seg->label = "module area";
		} else if (!info->has_vmemmap_start && text &&
			   info->has_vmalloc_start &&
			   seg->vaddr > info->vmalloc_start &&
			   seg->vaddr < text->vaddr) {
			/* x86_64 orders the KASLR regions direct map <
			 * vmalloc < vmemmap, all below the kernel image. */
			seg->cls = KCORE_CLASS_VMEMMAP;
			seg->label = "struct page array";
		}
	}
}

static const char *stack_label(struct kcore_source *src, int32_t tid)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "[stack:%d]", tid);
	return kcore_source_add_label(src, buf);
}

static void classify_process(struct kcore_source *src)
{
	struct kcore_file_table files = { 0 };
	uint64_t vdso = 0, phdr = 0, exe_end = 0;
	const char *exe = NULL;

	for (size_t i = 0; i < src->nnotes; i++) {
		const struct kcore_note *note = &src->notes[i];
		struct kcore_error *err = NULL;

		if (strcmp(note->name, "CORE") != 0)
			continue;
		if (note->type == NT_FILE && !files.entries) {
			err = kcore_note_file(src, note, &files);
		} else if (note->type == NT_AUXV) {
			struct kcore_auxv_entry *av;
			size_t n;

			err = kcore_note_auxv(src, note, &av, &n);
			for (size_t j = 0; !err && j < n; j++) {
				if (av[j].type == AT_SYSINFO_EHDR)
					vdso = av[j].value;
				else if (av[j].type == AT_PHDR)
					phdr = av[j].value;
				else if (av[j].type == AT_PAGESZ &&
					 av[j].value >= 512 &&
					 !(av[j].value & (av[j].value - 1)))
					src->info.page_size = av[j].value;
			}
			if (!err)
				free(av);
		}
		kcore_error_destroy(err);
	}
	/* The main executable is the file mapped at AT_PHDR. */
	for (size_t i = 0; i < files.count; i++)
		if (phdr >= files.entries[i].start &&
		    phdr < files.entries[i].end)
			exe = files.entries[i].name;
	for (size_t i = 0; exe && i < files.count; i++)
		if (strcmp(files.entries[i].name, exe) == 0 &&
		    files.entries[i].end > exe_end)
			exe_end = files.entries[i].end;

	for (size_t i = 0; i < src->nsegments; i++) {
		struct kcore_segment *seg = &src->segments[i];

		if (seg->type != PT_LOAD)
			continue;
		seg->cls = KCORE_CLASS_ANON;
		seg->label = "[anon]";
		for (size_t j = 0; j < files.count; j++) {
			const struct kcore_file_entry *f = &files.entries[j];

			if (seg->vaddr < f->end &&
			    f->start < seg->vaddr + seg->memsz) {
				seg->cls = KCORE_CLASS_FILE;
				seg->label =
					kcore_source_add_label(src, f->name);
				break;
			}
		}
		if (seg->cls == KCORE_CLASS_FILE)
			continue;
		if (vdso && contains(seg, vdso)) {
			seg->cls = KCORE_CLASS_VDSO;
			seg->label = "[vdso]";
			continue;
		}
		/* The x86_64 vsyscall page is at a fixed ABI address. */
		if (src->arch && src->arch->vsyscall_page &&
		    seg->vaddr == src->arch->vsyscall_page) {
			seg->cls = KCORE_CLASS_OTHER;
			seg->label = "[vsyscall]";
			continue;
		}
		if (exe_end && seg->vaddr >= exe_end &&
		    seg->vaddr - exe_end <= BRK_RANDOM_MAX) {
			/* the first anonymous segment above the executable */
			bool first = true;

			for (size_t j = 0; j < i; j++) {
				const struct kcore_segment *o =
					&src->segments[j];

				if (o->type == PT_LOAD &&
				    o->cls == KCORE_CLASS_HEAP)
					first = false;
			}
			if (first) {
				seg->cls = KCORE_CLASS_HEAP;
				seg->label = "[heap]";
				continue;
			}
		}
	}
	/* Stacks: the segment holding each thread's stack pointer. */
	for (size_t i = 0; i < src->nnotes; i++) {
		const struct kcore_note *note = &src->notes[i];
		struct kcore_prstatus st;
		struct kcore_error *err;
		uint64_t sp;

		if (strcmp(note->name, "CORE") != 0 ||
		    note->type != NT_PRSTATUS)
			continue;
		err = kcore_note_prstatus(src, note, &st);
		if (err) {
			kcore_error_destroy(err);
			continue;
		}
		if (!src->arch || st.nregs <= src->arch->sp_reg)
			continue;
		sp = st.regs[src->arch->sp_reg];
		for (size_t j = 0; j < src->nsegments; j++) {
			struct kcore_segment *seg = &src->segments[j];

			if (seg->type != PT_LOAD || !contains(seg, sp))
				continue;
			seg->cls = KCORE_CLASS_STACK;
			seg->label = st.pid == src->info.pid
					     ? "[stack]"
					     : stack_label(src, st.pid);
		}
	}
	free(files.entries);
}

/*
 * An ELF core of kernel memory whose PT_LOADs all have p_vaddr 0 but real
 * physical addresses holds physical memory only: what QEMU's
 * dump-guest-memory writes without paging, and what an ELF made from a
 * kdump or LiME file carries.  Kernel virtual addresses are never 0.
 */
static bool elf_is_physical_only(const struct kcore_source *src)
{
	size_t loads = 0, physical = 0;

	if (src->info.kind != KCORE_SOURCE_VMCORE &&
	    src->info.kind != KCORE_SOURCE_ELF_CORE)
		return false;
	for (size_t i = 0; i < src->nsegments; i++) {
		const struct kcore_segment *seg = &src->segments[i];

		if (seg->type != PT_LOAD)
			continue;
		if (seg->vaddr != 0)
			return false;
		loads++;
		physical += seg->has_paddr;
	}
	return loads && physical == loads;
}

struct kcore_error *kcore_classify_segments(struct kcore_source *src)
{
	if (!src->info.page_size)
		src->info.page_size = 4096;
	mark_physical(src);
	/* Also for synthetic images: a .zst/.xz's is the ELF it holds. */
	if (elf_is_physical_only(src))
		src->info.physical_only = true;
	switch (src->info.kind) {
	case KCORE_SOURCE_LIVE_KCORE:
	case KCORE_SOURCE_VMCORE:
		classify_kernel(src);
		break;
	case KCORE_SOURCE_PROCESS_CORE:
		for (size_t i = 0; i < src->nsegments; i++)
			src->segments[i].has_paddr = false;
		classify_process(src);
		break;
	default:
		break;
	}
	/* kdump and LiME hold physical memory only: every physical
	 * PT_LOAD is RAM, whatever its (meaningless) p_vaddr says. */
	for (size_t i = 0; src->info.physical_only && i < src->nsegments; i++) {
		struct kcore_segment *seg = &src->segments[i];

		if (seg->type == PT_LOAD && seg->has_paddr) {
			seg->cls = KCORE_CLASS_RAM;
			seg->label = "physical memory";
		}
	}
	if (src->vmcoreinfo)
		src->info.kernel_release =
			kcore_vmcoreinfo_get(src->vmcoreinfo, "OSRELEASE");
	return NULL;
}
