// SPDX-License-Identifier: MIT
/*
 * The volatile-first read order (read-order.h).  The kernel image is the
 * source's TEXT segment (kcore's, "_text" to "_end": its data and bss
 * too); the page tables are the tables below the root that a walk of the
 * kernel's own tables reads over the source's kernel segments (the root
 * is in the image).  Both are physical ranges, found in the plan's
 * segments that have physical addresses.  The task list's slabs are not
 * among them: nothing here can tell their pages apart.
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "source-impl.h"
#include "kcoredump/pgtable.h"
#include "read-order.h"

struct phases {
	struct kcore_read_phase *p;
	size_t n, cap;
	uint64_t left; /* of the budget */
};

static struct kcore_error *add(struct phases *ph, const char *what, size_t seg,
			       uint64_t off, uint64_t len)
{
	struct kcore_read_phase *last = ph->n ? &ph->p[ph->n - 1] : NULL;

	if (len > ph->left)
		len = ph->left;
	if (!len)
		return NULL;
	ph->left -= len;
	if (last && last->segment == seg && !strcmp(last->what, what) &&
	    last->offset + last->length == off) {
		last->length += len;
		return NULL;
	}
	struct kcore_error *err = kcore_grow2((void **)&ph->p, sizeof(*ph->p),
					      NULL, 0, ph->n, &ph->cap);

	if (err)
		return err;
	ph->p[ph->n++] = (struct kcore_read_phase){
		.what = what, .segment = seg, .offset = off, .length = len
	};
	return NULL;
}

/* Physical bytes [pa, pa + len), page-aligned, in the plan's segments
 * that hold them (not a shared one: its bytes are another's). */
static struct kcore_error *add_physical(struct phases *ph,
					const struct kcore_plan *plan,
					uint64_t page, const char *what,
					uint64_t pa, uint64_t len)
{
	uint64_t lo = pa - pa % page, hi = (pa + len + page - 1) / page * page;

	for (size_t i = 0; i < plan->nsegs; i++) {
		const struct kcore_plan_segment *s = &plan->segs[i];
		uint64_t a, b;
		struct kcore_error *err;

		if (s->shared || !s->has_paddr || s->size == 0)
			continue;
		a = lo > s->paddr ? lo : s->paddr;
		b = hi < s->paddr + s->size ? hi : s->paddr + s->size;
		if (a >= b)
			continue;
		err = add(ph, what, i, a - s->paddr, b - a);
		if (err)
			return err;
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool kernel_area(enum kcore_segment_class c)
{
	return c == KCORE_CLASS_RAM || c == KCORE_CLASS_TEXT ||
	       c == KCORE_CLASS_MODULES || c == KCORE_CLASS_VMALLOC ||
	       c == KCORE_CLASS_VMEMMAP;
}

/* The physical addresses of the kernel's page-table pages below the root
 * (sorted, distinct), over every kernel segment of the source; none
 * where the tables cannot be walked. */
static struct kcore_error *table_pages(struct kcore_source *src, uint64_t **ret,
				       size_t *ret_n)
{
	uint64_t *all = NULL;
	size_t n = 0;

	*ret = NULL;
	*ret_n = 0;
	for (size_t i = 0; i < src->nsegments; i++) {
		const struct kcore_segment *s = &src->segments[i];
		struct kcore_vrange *runs = NULL;
		uint64_t *pa = NULL, *grown;
		size_t nruns, ntables = 0;
		struct kcore_error *err;

		if (s->type != PT_LOAD || !kernel_area(s->cls) || !s->memsz)
			continue;
		err = kcore_kernel_mapped_tables(src, s->vaddr,
						 s->vaddr + s->memsz, &runs,
						 &nruns, &ntables, &pa);
		free(runs);
		if (err) {
			bool nomem = err->code == KCORE_ERR_NOMEM;

			kcore_error_destroy(err);
			if (nomem) {
				free(all);
				return &kcore_error_nomem;
			}
			break; /* no walk here: the tables are not known */
		}
		grown = ntables ? realloc(all, (n + ntables) * sizeof(*all))
				: all;
		if (ntables && !grown) {
			free(pa);
			free(all);
			return &kcore_error_nomem;
		}
		all = grown;
		if (ntables)
			memcpy(all + n, pa, ntables * sizeof(*all));
		n += ntables;
		free(pa);
	}
	if (n)
		qsort(all, n, sizeof(*all), cmp_u64);
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (!k || all[i] != all[k - 1])
			all[k++] = all[i];
	*ret = all;
	*ret_n = k;
	return NULL;
}

/* The tables as at most KCORE_READ_TABLE_PHASES runs: pages less than
 * gap apart are read as one, gap doubling from one page until they fit.
 * Those inside the image (the root's neighbours) are its phase's: pa
 * loses them. */
static struct kcore_error *
add_tables(struct phases *ph, const struct kcore_plan *plan, uint64_t page,
	   const struct kcore_segment *text, uint64_t *pa, size_t n)
{
	uint64_t gap = page;
	size_t runs, k = 0;

	for (size_t i = 0; i < n; i++)
		if (pa[i] < text->paddr || pa[i] - text->paddr >= text->memsz)
			pa[k++] = pa[i];
	n = k;

	do {
		runs = n ? 1 : 0;
		for (size_t i = 1; i < n; i++)
			if (pa[i] - pa[i - 1] > gap)
				runs++;
		if (runs > KCORE_READ_TABLE_PHASES)
			gap *= 2;
	} while (runs > KCORE_READ_TABLE_PHASES);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		struct kcore_error *err;

		while (j < n && pa[j] - pa[j - 1] <= gap)
			j++;
		err = add_physical(ph, plan, page, "page-tables", pa[i],
				   pa[j - 1] + page - pa[i]);
		if (err)
			return err;
		i = j;
	}
	return NULL;
}

struct kcore_error *kcore_read_phases(struct kcore_source *src,
				      const struct kcore_plan *plan,
				      uint64_t page, uint64_t budget,
				      struct kcore_read_phase **ret,
				      size_t *ret_n)
{
	struct phases ph = { .left = budget };
	const struct kcore_segment *text = NULL;
	struct kcore_error *err = NULL;
	uint64_t *pa = NULL;
	size_t npa = 0;

	*ret = NULL;
	*ret_n = 0;
	for (size_t i = 0; i < src->nsegments && !text; i++)
		if (src->segments[i].type == PT_LOAD &&
		    src->segments[i].cls == KCORE_CLASS_TEXT &&
		    src->segments[i].has_paddr)
			text = &src->segments[i];
	if (!text)
		return NULL; /* not a kernel's memory */
	err = add_physical(&ph, plan, page, "image", text->paddr, text->memsz);
	if (!err && src->vmcoreinfo)
		err = table_pages(src, &pa, &npa);
	if (!err)
		err = add_tables(&ph, plan, page, text, pa, npa);
	free(pa);
	if (err) {
		free(ph.p);
		return err;
	}
	*ret = ph.p;
	*ret_n = ph.n;
	return NULL;
}
