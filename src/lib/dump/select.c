// SPDX-License-Identifier: MIT
/*
 * Selection: turn a source and the user's choices (segment classes,
 * address ranges, vmalloc areas, mapping names) into a plan of output
 * segments, each a contiguous piece of one source segment.
 */
#include <elf.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "select.h"

static bool mapping_matches(const struct kcore_selection *sel,
			    const char *label)
{
	const char *base;

	if (!sel->nmappings)
		return true;
	if (!label)
		return false;
	base = strrchr(label, '/');
	base = base ? base + 1 : label;
	for (size_t i = 0; i < sel->nmappings; i++)
		if (fnmatch(sel->mappings[i], label, 0) == 0 ||
		    fnmatch(sel->mappings[i], base, 0) == 0)
			return true;
	return false;
}

/*
 * A dump file may hold physical pages twice: a dump of /proc/kcore has the
 * kernel image both in its image segment and in RAM, read at two times
 * (live memory changes in between).  Readers that go by physical address
 * take the first program header that holds a page (crash, makedumpfile),
 * and the kernel's own virtual addresses of its image reach that one too
 * (jiffies, the page tables).  A RAM segment of the plan takes those pages
 * from the image segment, so that every output shows one copy of them,
 * the one readers of the file see.
 */
struct text_copy {
	uint64_t lo, hi; /* physical range */
	const struct kcore_segment *t;
};

static int cmp_text_lo(const void *a, const void *b)
{
	const struct text_copy *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int cmp_u64_asc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static const struct kcore_plan *sort_plan; /* for cmp_seg_hi */

static int cmp_seg_hi(const void *a, const void *b)
{
	const struct kcore_plan_segment
		*x = &sort_plan->segs[*(const size_t *)a],
		*y = &sort_plan->segs[*(const size_t *)b];
	uint64_t xh = x->paddr + x->size, yh = y->paddr + y->size;

	return xh < yh ? -1 : xh > yh;
}

static uint64_t end_of(uint64_t start, uint64_t size)
{
	uint64_t end;

	return __builtin_add_overflow(start, size, &end) ? UINT64_MAX : end;
}

/*
 * For each RAM segment of the plan: the image segment of lowest index
 * (below its own) whose physical range meets it.  A sweep by end address
 * with a Fenwick tree of the lowest index per image-segment end: n log n
 * in the number of segments, however many of them a file makes "kernel
 * image" (issue 15: one loop inside another took 88 s for 131k).
 */
static void first_copies(struct kcore_plan *plan,
			 const struct kcore_source *src)
{
	struct text_copy *tc = NULL;
	uint64_t *ends = NULL;
	size_t *q = NULL, *tree = NULL, nt = 0, nq = 0, ne = 0, j = 0;

	for (size_t k = 0; k < src->nsegments; k++) {
		const struct kcore_segment *t = &src->segments[k];

		if (t->type == PT_LOAD && t->cls == KCORE_CLASS_TEXT &&
		    t->has_paddr && t->memsz)
			nt++;
	}
	for (size_t i = 0; i < plan->nsegs; i++)
		if (plan->segs[i].cls == KCORE_CLASS_RAM &&
		    plan->segs[i].has_paddr && !plan->segs[i].alt_len)
			nq++;
	if (!nt || !nq)
		return;
	tc = malloc(nt * sizeof(*tc));
	ends = malloc(nt * sizeof(*ends));
	q = malloc(nq * sizeof(*q));
	tree = malloc((nt + 1) * sizeof(*tree));
	if (!tc || !ends || !q || !tree)
		goto out; /* no second copies left out: still a right dump */
	nt = 0;
	for (size_t k = 0; k < src->nsegments; k++) {
		const struct kcore_segment *t = &src->segments[k];

		if (t->type == PT_LOAD && t->cls == KCORE_CLASS_TEXT &&
		    t->has_paddr && t->memsz) {
			tc[nt] = (struct text_copy){ t->paddr,
						     end_of(t->paddr, t->memsz),
						     t };
			ends[nt] = tc[nt].hi;
			nt++;
		}
	}
	nq = 0;
	for (size_t i = 0; i < plan->nsegs; i++)
		if (plan->segs[i].cls == KCORE_CLASS_RAM &&
		    plan->segs[i].has_paddr && !plan->segs[i].alt_len)
			q[nq++] = i;
	qsort(tc, nt, sizeof(*tc), cmp_text_lo);
	qsort(ends, nt, sizeof(*ends), cmp_u64_asc);
	for (size_t i = 0; i < nt; i++)
		if (!ne || ends[ne - 1] != ends[i])
			ends[ne++] = ends[i];
	sort_plan = plan;
	qsort(q, nq, sizeof(*q), cmp_seg_hi);
	/* tree[r] (1-based, by descending end rank): the text_copy with the
	 * lowest index among those inserted, or SIZE_MAX. */
	for (size_t r = 0; r <= ne; r++)
		tree[r] = SIZE_MAX;
	for (size_t n = 0; n < nq; n++) {
		struct kcore_plan_segment *p = &plan->segs[q[n]];
		uint64_t plo = p->paddr, phi = end_of(p->paddr, p->size);
		size_t lo = 0, hi = ne, best = SIZE_MAX;
		const struct kcore_segment *t;
		uint64_t a, b, rel;

		for (; j < nt && tc[j].lo < phi; j++) {
			size_t l = 0, h = ne;

			while (l < h) { /* rank of tc[j].hi */
				size_t m = l + (h - l) / 2;

				if (ends[m] < tc[j].hi)
					l = m + 1;
				else
					h = m;
			}
			for (size_t r = ne - l; r <= ne; r += r & -r)
				if (tree[r] == SIZE_MAX ||
				    tc[j].t->index < tc[tree[r]].t->index)
					tree[r] = j;
		}
		while (lo < hi) { /* the first end above plo */
			size_t m = lo + (hi - lo) / 2;

			if (ends[m] <= plo)
				lo = m + 1;
			else
				hi = m;
		}
		for (size_t r = ne - lo; r > 0; r -= r & -r)
			if (tree[r] != SIZE_MAX &&
			    (best == SIZE_MAX ||
			     tc[tree[r]].t->index < tc[best].t->index))
				best = tree[r];
		if (best == SIZE_MAX || tc[best].t->index >= p->src_segment)
			continue;
		t = tc[best].t;
		a = t->paddr > plo ? t->paddr : plo;
		b = tc[best].hi < phi ? tc[best].hi : phi;
		rel = a - t->paddr;
		p->alt_pos = a - p->paddr;
		p->alt_len = b - a;
		p->alt_offset = t->offset + rel;
		p->alt_avail = rel >= t->filesz ? 0 : t->filesz - rel;
		if (p->alt_avail > p->alt_len)
			p->alt_avail = p->alt_len;
	}
out:
	free(tc);
	free(ends);
	free(q);
	free(tree);
}

static int cmp_plan(const void *a, const void *b)
{
	const struct kcore_plan_segment *x = a, *y = b;

	/* The kernel image first (as in kdump's vmcores), then physical
	 * segments by address (what crash expects), then virtual-only ones
	 * by address. */
	if ((x->cls == KCORE_CLASS_TEXT) != (y->cls == KCORE_CLASS_TEXT))
		return x->cls == KCORE_CLASS_TEXT ? -1 : 1;
	if (x->has_paddr != y->has_paddr)
		return x->has_paddr ? -1 : 1;
	if (x->has_paddr && x->paddr != y->paddr)
		return x->paddr < y->paddr ? -1 : 1;
	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

struct kcore_error *kcore_plan_create(struct kcore_source *src,
				      const struct kcore_selection *sel,
				      struct kcore_plan **ret)
{
	bool live = src->info.kind == KCORE_SOURCE_LIVE_KCORE;
	struct kcore_kernel_vmap vmap;
	bool has_vmap = false;
	struct plan_builder b = { 0 };
	unsigned classes = sel->classes;
	struct kcore_error *err = NULL;

	b.keep_memsz = src->info.kind == KCORE_SOURCE_PROCESS_CORE;

	b.plan = calloc(1, sizeof(*b.plan));
	if (!b.plan)
		return &kcore_error_nomem;
	if (sel->vmalloc) {
		/* --segments text: the kernel image too, for crash and drgn. */
		classes = CLASS_BIT(KCORE_CLASS_VMALLOC) |
			  (sel->classes & CLASS_BIT(KCORE_CLASS_TEXT));
		/* A window reaching into the module area includes it. */
		if (sel->vmalloc_window.end)
			classes |= CLASS_BIT(KCORE_CLASS_MODULES);
	} else if (!classes) {
		/* RAM for crash; the kernel image too, so readers can
		 * reach swapper_pg_dir by its virtual address (drgn). */
		classes = live && !sel->nranges
				  ? CLASS_BIT(KCORE_CLASS_RAM) |
					    CLASS_BIT(KCORE_CLASS_TEXT)
				  : ~0u;
	}
	/* Areas of the live vmalloc space come from vmallocinfo: the
	 * segment itself spans tens of TiB, almost all unmapped. */
	if (live &&
	    (classes & (CLASS_BIT(KCORE_CLASS_VMALLOC) |
			CLASS_BIT(KCORE_CLASS_MODULES))) &&
	    (sel->vmalloc || !sel->nranges)) {
		err = kcore_plan_vmalloc_live(
			&b, src, sel,
			classes & (CLASS_BIT(KCORE_CLASS_VMALLOC) |
				   CLASS_BIT(KCORE_CLASS_MODULES)));
		if (err)
			goto fail;
		classes &= ~(CLASS_BIT(KCORE_CLASS_VMALLOC) |
			     CLASS_BIT(KCORE_CLASS_MODULES));
		if (sel->vmalloc && b.plan->nsegs) {
			err = kcore_plan_page_tables(&b, src, sel);
			if (err)
				goto fail;
		}
	}
	/* A physical-only vmcore whose virtual addresses are exact gets
	 * them, as kexec-tools' /proc/vmcore has: the kernel image first,
	 * then RAM at the direct map. */
	if (src->info.physical_only) {
		err = kcore_source_kernel_vmap(src, kcore_source_read_paddr,
					       &vmap);
		has_vmap = !err;
		kcore_error_destroy(err);
		err = NULL;
	}
	for (size_t i = 0; has_vmap && i < src->nsegments; i++) {
		struct kcore_segment t = src->segments[i];
		uint64_t lo, hi;

		if (t.type != PT_LOAD || !t.has_paddr || !t.memsz ||
		    !(classes & CLASS_BIT(KCORE_CLASS_TEXT)) ||
		    !mapping_matches(sel, "kernel image"))
			continue;
		lo = t.paddr > vmap.text_paddr ? t.paddr : vmap.text_paddr;
		hi = t.paddr + t.memsz < vmap.text_paddr + vmap.text_size
			     ? t.paddr + t.memsz
			     : vmap.text_paddr + vmap.text_size;
		if (lo >= hi)
			continue;
		t.vaddr = vmap.text_vaddr + (t.paddr - vmap.text_paddr);
		t.cls = KCORE_CLASS_TEXT;
		t.label = "kernel image";
		err = kcore_plan_add_piece(
			&b, sel, &t, t.vaddr + (lo - t.paddr), hi - lo, NULL);
		if (err)
			goto fail;
	}
	for (size_t i = 0; i < src->nsegments; i++) {
		struct kcore_segment virt;
		const struct kcore_segment *seg = &src->segments[i];

		if (seg->type != PT_LOAD || !seg->memsz ||
		    !(classes & CLASS_BIT(seg->cls)))
			continue;
		if (has_vmap && seg->has_paddr) {
			virt = *seg;
			virt.vaddr = vmap.direct_map + seg->paddr;
			virt.label = "direct map";
			seg = &virt;
		}
		if (sel->ranges_physical && sel->nranges && !seg->has_paddr)
			continue;
		if (!mapping_matches(sel, seg->label))
			continue;
		if (sel->vmalloc && seg->cls != KCORE_CLASS_TEXT) {
			/* a non-live source: clip the segment */
			uint64_t lo = seg->vaddr, hi = seg->vaddr + seg->memsz;

			b.plan->vmalloc_segment_size += seg->memsz;
			kcore_plan_clip_window(sel, &lo, &hi);
			b.plan->vmalloc_source = "segments";
			if (lo < hi)
				err = kcore_plan_add_piece(&b, sel, seg, lo,
							   hi - lo, NULL);
		} else {
			err = kcore_plan_add_piece(&b, sel, seg, seg->vaddr,
						   seg->memsz, NULL);
		}
		if (err)
			goto fail;
	}
	if (!b.plan->nsegs) {
		err = kcore_error_create(KCORE_ERR_INVALID, 0, src->path,
					 "the selection matches no memory");
		goto fail;
	}
	/* A live kernel has one copy: both views read the same memory. */
	if (!live)
		first_copies(b.plan, src);
	qsort(b.plan->segs, b.plan->nsegs, sizeof(*b.plan->segs), cmp_plan);
	free(b.table_pa);
	*ret = b.plan;
	return NULL;
fail:
	free(b.table_pa);
	kcore_plan_destroy(b.plan);
	return err;
}
