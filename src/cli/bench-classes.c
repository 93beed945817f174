// SPDX-License-Identifier: MIT
/*
 * The benchmark's classes (bench-classes.h): the names of the classes and
 * modes, a source's classes as file ranges, and the blocks a measurement
 * reads from one, in an order whose every prefix is spread over it.
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "bench-classes.h"
#include "kcoredump/dump.h"
#include "source-impl.h"

#define MAX_SAMPLES (1u << 20)

static const char *const class_names[KCORE_BENCH_CLASS_NUM] = {
	[KCORE_BENCH_RAM] = "ram",
	[KCORE_BENCH_TEXT] = "text",
	[KCORE_BENCH_MODULES] = "modules",
	[KCORE_BENCH_VMALLOC] = "vmalloc",
	[KCORE_BENCH_VMALLOC_HOLE] = "vmalloc-hole",
	[KCORE_BENCH_VMEMMAP] = "vmemmap",
	[KCORE_BENCH_DATA] = "data",
	[KCORE_BENCH_HOLE] = "hole",
};

static const char *const mode_names[KCORE_BENCH_MODE_NUM] = {
	[KCORE_BENCH_RAW] = "raw",
	[KCORE_BENCH_ZERO] = "zero",
	[KCORE_BENCH_DUMP] = "dump",
};

const char *kcore_bench_class_name(enum kcore_bench_class cls)
{
	return (unsigned)cls < KCORE_BENCH_CLASS_NUM ? class_names[cls] : "?";
}

int kcore_bench_class_from_name(const char *name)
{
	for (int i = 0; i < KCORE_BENCH_CLASS_NUM; i++)
		if (strcmp(name, class_names[i]) == 0)
			return i;
	return -1;
}

const char *kcore_bench_mode_name(enum kcore_bench_mode mode)
{
	return (unsigned)mode < KCORE_BENCH_MODE_NUM ? mode_names[mode] : "?";
}

int kcore_bench_mode_from_name(const char *name)
{
	for (int i = 0; i < KCORE_BENCH_MODE_NUM; i++)
		if (strcmp(name, mode_names[i]) == 0)
			return i;
	return -1;
}

/* ---- classes as file ranges ---- */

static struct kcore_error *class_add(struct bclass *c, size_t seg,
				     const struct kcore_segment *s,
				     uint64_t off, uint64_t len)
{
	if (!len)
		return NULL;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct brange *r = realloc(c->r, cap * sizeof(*r));

		if (!r)
			return &kcore_error_nomem;
		c->r = r;
		c->cap = cap;
	}
	c->r[c->n++] =
		(struct brange){ off, len, s->vaddr + (off - s->offset), seg };
	c->total += len;
	return NULL;
}

static struct kcore_error *class_finish(struct bclass *c)
{
	uint64_t sum = 0;

	if (!c->n)
		return NULL;
	c->cum = malloc(c->n * sizeof(*c->cum));
	if (!c->cum)
		return &kcore_error_nomem;
	for (size_t i = 0; i < c->n; i++) {
		c->cum[i] = sum;
		sum += c->r[i].len;
	}
	return NULL;
}

/* Index of the source segment whose ELF index is idx. */
static size_t seg_by_index(struct kcore_source *src, unsigned idx)
{
	for (size_t i = 0; i < src->nsegments; i++)
		if (src->segments[i].index == idx)
			return i;
	return 0;
}

/* The mapped areas of the vmalloc or module segments, from the plan the
 * dump would make (vmallocinfo, else the page tables). */
static struct kcore_error *mapped_areas(struct kcore_source *src,
					const struct kcore_bench_opts *opts,
					enum kcore_segment_class cls,
					struct bclass *c,
					struct kcore_bench_result *res)
{
	struct kcore_selection sel = { .classes = 1u << cls,
				       .sysroot = opts->sysroot };
	struct kcore_plan *plan;
	struct kcore_error *err;

	err = kcore_plan_create(src, &sel, &plan);
	if (err && err->code == KCORE_ERR_INVALID) {
		/* "the selection matches no memory": nothing mapped */
		kcore_error_destroy(err);
		return NULL;
	}
	if (err)
		return err;
	if (plan->vmalloc_source)
		res->holes.vmalloc_source = plan->vmalloc_source;
	if (plan->warning && !res->warning)
		res->warning = strdup(plan->warning);
	for (size_t i = 0; i < plan->nsegs && !err; i++) {
		const struct kcore_plan_segment *p = &plan->segs[i];
		size_t si = seg_by_index(src, (unsigned)p->src_segment);

		err = class_add(c, si, bench_seg_of(src, si), p->src_offset,
				p->src_avail);
	}
	kcore_plan_destroy(plan);
	return err;
}

static int cmp_brange(const void *a, const void *b)
{
	const struct brange *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* The vmalloc space that no mapped area covers: kcore zero-fills it. */
static struct kcore_error *
vmalloc_holes(struct kcore_source *src, struct bclass *mapped, struct bclass *c)
{
	struct brange *m = NULL;
	struct kcore_error *err = NULL;

	if (mapped->n) {
		m = malloc(mapped->n * sizeof(*m));
		if (!m)
			return &kcore_error_nomem;
		memcpy(m, mapped->r, mapped->n * sizeof(*m));
		qsort(m, mapped->n, sizeof(*m), cmp_brange);
	}
	for (size_t i = 0; i < src->nsegments && !err; i++) {
		const struct kcore_segment *s = bench_seg_of(src, i);
		uint64_t pos = s->offset, end = s->offset + s->filesz;

		if (s->type != PT_LOAD || s->cls != KCORE_CLASS_VMALLOC)
			continue;
		for (size_t k = 0; k < mapped->n && !err; k++) {
			if (m[k].off + m[k].len <= pos || m[k].off >= end)
				continue;
			if (m[k].off > pos)
				err = class_add(c, i, s, pos, m[k].off - pos);
			pos = m[k].off + m[k].len;
		}
		if (!err && pos < end)
			err = class_add(c, i, s, pos, end - pos);
	}
	free(m);
	return err;
}

/* Data and hole extents of the PT_LOADs of a regular file. */
static struct kcore_error *
file_extents(struct kcore_source *src, struct bclass *data, struct bclass *hole)
{
	for (size_t i = 0; i < src->nsegments; i++) {
		const struct kcore_segment *s = bench_seg_of(src, i);
		uint64_t pos = s->offset, end = s->offset + s->filesz;
		struct kcore_error *err = NULL;

		if (s->type != PT_LOAD)
			continue;
		while (pos < end && !err) {
			uint64_t d, e;

			err = kcore_source_next_data(src, pos, end, &d, &e);
			if (err)
				return err;
			if (d >= end) {
				err = class_add(hole, i, s, pos, end - pos);
				break;
			}
			if (d > pos)
				err = class_add(hole, i, s, pos, d - pos);
			if (!err)
				err = class_add(data, i, s, d, e - d);
			pos = e;
		}
		if (err)
			return err;
	}
	return NULL;
}

/* ---- sampling ---- */

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/*
 * The blocks one measurement may read, in reading order.  A class within
 * the limit is read whole; a bigger one at n evenly spaced offsets, where
 * n reaches the limit even when the ranges are shorter than a block.
 */
struct kcore_error *bench_make_samples(const struct bclass *c, uint64_t bs,
				       uint64_t limit, uint64_t page,
				       struct sample **ret, size_t *ret_n)
{
	uint64_t n, stride, eff = bs, avg = c->total / c->n, whole = 0;
	bool all;
	struct sample *s, *out;

	for (size_t i = 0; i < c->n; i++)
		whole += (c->r[i].len + bs - 1) / bs;
	all = c->total <= limit && whole <= MAX_SAMPLES;
	if (all) {
		n = whole;
	} else {
		if (avg < eff)
			eff = avg > page ? avg : page;
		n = ((c->total < limit ? c->total : limit) + eff - 1) / eff;
		if (n > MAX_SAMPLES)
			n = MAX_SAMPLES;
	}
	s = calloc(n, sizeof(*s));
	out = calloc(n, sizeof(*out));
	if (!s || !out) {
		free(s);
		free(out);
		return &kcore_error_nomem;
	}
	if (all) { /* every block of every range */
		uint64_t k = 0;

		for (size_t i = 0; i < c->n; i++) {
			const struct brange *r = &c->r[i];

			for (uint64_t o = 0; o < r->len; o += bs)
				s[k++] = (struct sample){
					r->off + o,
					r->len - o < bs ? r->len - o : bs,
					r->vaddr + o, r->seg
				};
		}
	} else {
		for (uint64_t k = 0; k < n; k++) {
			uint64_t pos =
				(uint64_t)((unsigned __int128)k * c->total / n);
			size_t lo = 0, hi = c->n;
			const struct brange *r;
			uint64_t rel;

			while (hi - lo > 1) {
				size_t mid = lo + (hi - lo) / 2;

				if (c->cum[mid] <= pos)
					lo = mid;
				else
					hi = mid;
			}
			r = &c->r[lo];
			rel = pos - c->cum[lo];
			rel -= rel % page;
			s[k] = (struct sample){ r->off + rel,
						r->len - rel < bs ? r->len - rel
								  : bs,
						r->vaddr + rel, r->seg };
		}
	}
	/* Reading order: k * stride mod n, stride coprime to n. */
	stride = (uint64_t)((double)n * 0.6180339887) | 1;
	while (n > 1 && gcd(stride, n) != 1)
		stride++;
	for (uint64_t i = 0; i < n; i++)
		out[i] = s[(uint64_t)((unsigned __int128)i * stride % n)];
	free(s);
	*ret = out;
	*ret_n = n;
	return NULL;
}

/* ---- the classes of a source ---- */

static struct kcore_error *count_holes(struct kcore_source *src,
				       struct kcore_bench_holes *h)
{
	for (size_t i = 0; i < src->nsegments; i++) {
		uint64_t data, hole;
		struct kcore_error *err;

		if (src->segments[i].type != PT_LOAD)
			continue;
		err = kcore_source_count_holes(src, i, &data, &hole);
		if (err)
			return err;
		h->data_bytes += data;
		h->hole_bytes += hole;
	}
	return NULL;
}

struct kcore_error *bench_collect(struct kcore_source *src,
				  const struct kcore_bench_opts *opts,
				  struct bclass *cls,
				  struct kcore_bench_result *res)
{
	struct kcore_bench_holes *h = &res->holes;
	struct kcore_error *err = NULL;

	h->seek_data = kcore_source_knows_holes(src);
	h->file_size = src->info.file_size;
	for (size_t i = 0; i < src->nsegments; i++) {
		const struct kcore_segment *s = bench_seg_of(src, i);

		if (s->type != PT_LOAD)
			continue;
		h->load_bytes += s->filesz;
		if (s->cls == KCORE_CLASS_RAM)
			h->ram_bytes += s->filesz;
		else if (s->cls == KCORE_CLASS_VMALLOC)
			h->vmalloc_segment_bytes += s->memsz;
		else if (s->cls == KCORE_CLASS_MODULES)
			h->modules_segment_bytes += s->memsz;
	}
	if (h->seek_data) {
		err = count_holes(src, h);
		if (err)
			return err;
	}
	if (res->live) {
		static const struct {
			enum kcore_segment_class from;
			enum kcore_bench_class to;
		} direct[] = {
			{ KCORE_CLASS_RAM, KCORE_BENCH_RAM },
			{ KCORE_CLASS_TEXT, KCORE_BENCH_TEXT },
			{ KCORE_CLASS_VMEMMAP, KCORE_BENCH_VMEMMAP },
		};

		for (size_t i = 0; i < src->nsegments && !err; i++) {
			const struct kcore_segment *s = bench_seg_of(src, i);

			for (size_t k = 0; k < 3 && !err; k++)
				if (s->type == PT_LOAD &&
				    s->cls == direct[k].from)
					err = class_add(&cls[direct[k].to], i,
							s, s->offset,
							s->filesz);
		}
		if (!err)
			err = mapped_areas(src, opts, KCORE_CLASS_VMALLOC,
					   &cls[KCORE_BENCH_VMALLOC], res);
		if (!err)
			err = mapped_areas(src, opts, KCORE_CLASS_MODULES,
					   &cls[KCORE_BENCH_MODULES], res);
		if (!err)
			err = vmalloc_holes(src, &cls[KCORE_BENCH_VMALLOC],
					    &cls[KCORE_BENCH_VMALLOC_HOLE]);
		h->vmalloc_mapped_bytes = cls[KCORE_BENCH_VMALLOC].total;
		h->modules_mapped_bytes = cls[KCORE_BENCH_MODULES].total;
		if (h->seek_data)
			h->skippable_bytes = h->hole_bytes;
		else
			h->skippable_bytes = h->vmalloc_segment_bytes -
					     h->vmalloc_mapped_bytes +
					     h->modules_segment_bytes -
					     h->modules_mapped_bytes;
	} else {
		err = file_extents(src, &cls[KCORE_BENCH_DATA],
				   &cls[KCORE_BENCH_HOLE]);
		h->skippable_bytes = h->hole_bytes;
	}
	for (int c = 0; c < KCORE_BENCH_CLASS_NUM && !err; c++) {
		res->classes[c].present = cls[c].n > 0;
		res->classes[c].bytes = cls[c].total;
		res->classes[c].nranges = cls[c].n;
		err = class_finish(&cls[c]);
	}
	return err;
}

void bench_class_free(struct bclass *c)
{
	free(c->r);
	free(c->cum);
}
