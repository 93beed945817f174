// SPDX-License-Identifier: MIT
/*
 * Page filtering by struct page, as makedumpfile's dump levels do it: free
 * pages of the buddy allocator, page cache, anonymous (user) pages.  The
 * kernel describes its struct page and page flags in VMCOREINFO; the
 * struct pages themselves are found through mem_section (SPARSEMEM, with
 * or without SPARSEMEM_EXTREME) and read like any kernel memory of the
 * source: the vmemmap segment of /proc/kcore, or the kernel's page tables
 * of an ELF or kdump vmcore.
 *
 * The classes follow makedumpfile's rules (facts, from its
 * __exclude_unnecessary_pages): a compound tail page is never looked at
 * on its own, the head decides for the whole compound page; a buddy head
 * excludes 2^order pages (order in page.private); a page is page cache
 * when on an LRU list (or in the swap cache and swap-backed) and not
 * anonymous; anonymous means mapping & 1 and not a slab page; hugetlb
 * pages count as user data.  Anything that does not match is kept.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grow.h"
#include "kcoredump/dump.h"
#include "kcoredump/vmcoreinfo.h"
#include "source-impl.h"

#define BATCH		512 /* struct pages read at once */
#define SECTION_FLAGS	0x3full
#define SECTION_PRESENT (1ull << 0)
#define SECTION_HAS_MAP (1ull << 1)
#define MAX_ORDER_GUESS 20 /* without LENGTH(zone.free_area) */

struct layout {
	uint64_t page_size, page_shift;
	uint64_t size_page, off_flags, off_mapcount, off_mapping, off_private,
		off_head;
	int64_t pg_lru, pg_private, pg_swapcache, pg_swapbacked, pg_slab,
		pg_hwpoison, pg_hugetlb;
	uint64_t head_mask;
	bool has_buddy, has_slab_type, has_hugetlb_type, has_offline,
		has_unaccepted;
	uint32_t buddy, slab_type, hugetlb_type, offline, unaccepted;
	bool has_order_off, has_dtor_off, has_hugetlb_dtor;
	uint64_t off_order, off_dtor, hugetlb_dtor;
	uint64_t max_order; /* orders above are not trusted */
	/* mem_section */
	uint64_t ms_sym, ms_length, ms_size, ms_off_map, section_shift;
	uint64_t nr_sections, per_root;
	bool extreme;
	uint64_t *roots; /* extreme: the root pointers */
};

struct scan {
	struct kcore_source *src;
	struct layout l;
	unsigned level;
	struct kcore_exclude_stats *st;
	struct kcore_range *runs;
	size_t nruns, cap;
	unsigned char *buf;
	/* progress */
	kcore_exclude_progress_fn progress;
	void *progress_arg;
	uint64_t pages_total;
	double t0, last;
	bool reported;
};

static double now_s(void);

/* Progress every 200 ms; the first and (force) the last at once. */
static void report(struct scan *s, bool force)
{
	double t = s->progress ? now_s() : 0;

	if (s->progress && (force || !s->reported || t - s->last >= 0.2)) {
		s->reported = true;
		s->last = t;
		s->st->seconds = t - s->t0;
		s->progress(s->progress_arg, s->st, s->pages_total);
	}
}

/* Little-endian loads from a struct page (hot: every pfn of RAM). */
static inline uint64_t le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static inline uint32_t le32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	return v;
}

static struct kcore_error *missing(struct kcore_source *src, const char *key)
{
	return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
				  "cannot exclude pages: VMCOREINFO has no %s",
				  key);
}

static bool vi(struct kcore_source *src, const char *key, uint64_t *v)
{
	return kcore_vmcoreinfo_get_u64(src->vmcoreinfo, key, v);
}

static int64_t vi_bit(struct kcore_source *src, const char *key)
{
	uint64_t v;

	return vi(src, key, &v) && v < 64 ? (int64_t)v : -1;
}

static bool vi_u32(struct kcore_source *src, const char *key, uint32_t *ret)
{
	uint64_t v;

	if (!vi(src, key, &v))
		return false;
	*ret = (uint32_t)v; /* NUMBER()s like -129 are an int's bits */
	return true;
}

static struct kcore_error *read_layout(struct kcore_source *src,
				       struct layout *l)
{
	static const struct {
		const char *key;
		size_t off;
	} need[] = {
		{ "SIZE(page)", offsetof(struct layout, size_page) },
		{ "OFFSET(page.flags)", offsetof(struct layout, off_flags) },
		{ "OFFSET(page._mapcount)",
		  offsetof(struct layout, off_mapcount) },
		{ "OFFSET(page.mapping)",
		  offsetof(struct layout, off_mapping) },
		{ "OFFSET(page.private)",
		  offsetof(struct layout, off_private) },
		{ "NUMBER(PG_head_mask)", offsetof(struct layout, head_mask) },
		{ "SYMBOL(mem_section)", offsetof(struct layout, ms_sym) },
		{ "LENGTH(mem_section)", offsetof(struct layout, ms_length) },
		{ "SIZE(mem_section)", offsetof(struct layout, ms_size) },
		{ "OFFSET(mem_section.section_mem_map)",
		  offsetof(struct layout, ms_off_map) },
		{ "NUMBER(SECTION_SIZE_BITS)",
		  offsetof(struct layout, section_shift) },
	};
	uint64_t max_physmem, v;

	if (!src->vmcoreinfo)
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
					  "cannot exclude pages: the source "
					  "has no VMCOREINFO");
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (!vi(src, need[i].key,
			(uint64_t *)((char *)l + need[i].off)))
			return missing(src, need[i].key);
	/* The word whose bit 0 marks a tail page.  Linux 7.3 calls it
	 * page.compound_info (with HugeTLB vmemmap optimization a tail's
	 * other bits are a mask that turns its address into the head's,
	 * not the head's address; only bit 0 is read here). */
	if (!vi(src, "OFFSET(page.compound_head)", &l->off_head) &&
	    !vi(src, "OFFSET(page.compound_info)", &l->off_head))
		return missing(src, "OFFSET(page.compound_head) or "
				    "OFFSET(page.compound_info)");
	if (!vi(src, "NUMBER(MAX_PHYSMEM_BITS)", &max_physmem))
		return missing(src, "NUMBER(MAX_PHYSMEM_BITS)");
	l->page_size = src->info.page_size ? src->info.page_size : 4096;
	l->page_shift = (uint64_t)__builtin_ctzll(l->page_size);
	if (l->size_page < 8 || l->size_page > 1024 ||
	    l->off_flags + 8 > l->size_page ||
	    l->off_mapcount + 4 > l->size_page ||
	    l->off_mapping + 8 > l->size_page ||
	    l->off_private + 8 > l->size_page ||
	    l->off_head + 8 > l->size_page || l->ms_size < 8 ||
	    l->ms_size > l->page_size || l->ms_off_map + 8 > l->ms_size ||
	    l->section_shift <= l->page_shift || max_physmem > 64 ||
	    max_physmem <= l->section_shift)
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
					  "cannot exclude pages: VMCOREINFO's "
					  "struct page or mem_section layout "
					  "is not plausible");
	l->pg_lru = vi_bit(src, "NUMBER(PG_lru)");
	l->pg_private = vi_bit(src, "NUMBER(PG_private)");
	l->pg_swapcache = vi_bit(src, "NUMBER(PG_swapcache)");
	if (l->pg_lru < 0)
		return missing(src, "NUMBER(PG_lru)");
	if (l->pg_private < 0)
		return missing(src, "NUMBER(PG_private)");
	if (l->pg_swapcache < 0)
		return missing(src, "NUMBER(PG_swapcache)");
	l->pg_swapbacked = vi_bit(src, "NUMBER(PG_swapbacked)");
	l->pg_slab = vi_bit(src, "NUMBER(PG_slab)");
	l->pg_hwpoison = vi_bit(src, "NUMBER(PG_hwpoison)");
	l->pg_hugetlb = vi_bit(src, "NUMBER(PG_hugetlb)");
	l->has_buddy =
		vi_u32(src, "NUMBER(PAGE_BUDDY_MAPCOUNT_VALUE)", &l->buddy);
	l->has_slab_type =
		vi_u32(src, "NUMBER(PAGE_SLAB_MAPCOUNT_VALUE)", &l->slab_type);
	l->has_hugetlb_type = vi_u32(src, "NUMBER(PAGE_HUGETLB_MAPCOUNT_VALUE)",
				     &l->hugetlb_type);
	l->has_offline =
		vi_u32(src, "NUMBER(PAGE_OFFLINE_MAPCOUNT_VALUE)", &l->offline);
	l->has_unaccepted = vi_u32(
		src, "NUMBER(PAGE_UNACCEPTED_MAPCOUNT_VALUE)", &l->unaccepted);
	l->has_order_off =
		vi(src, "OFFSET(page.compound_order)", &l->off_order) &&
		l->off_order < l->size_page;
	l->has_dtor_off = vi(src, "OFFSET(page.compound_dtor)", &l->off_dtor) &&
			  l->off_dtor < l->size_page;
	l->has_hugetlb_dtor =
		vi(src, "NUMBER(HUGETLB_PAGE_DTOR)", &l->hugetlb_dtor);
	l->max_order = MAX_ORDER_GUESS;
	if (vi(src, "LENGTH(zone.free_area)", &v) && v >= 1 && v <= 64)
		l->max_order = v - 1;
	/* SPARSEMEM: NR_SECTION_ROOTS roots of PAGE_SIZE / SIZE(mem_section)
	 * sections (EXTREME), or one flat array (one section per root). */
	l->nr_sections = 1ull << (max_physmem - l->section_shift);
	l->per_root = l->page_size / l->ms_size;
	if (l->ms_length == l->nr_sections) {
		l->extreme = false;
		l->per_root = 1;
	} else if (l->ms_length * l->per_root == l->nr_sections) {
		l->extreme = true;
	} else {
		return kcore_error_create(
			KCORE_ERR_UNSUPPORTED, 0, src->path,
			"cannot exclude pages: LENGTH(mem_section) %" PRIu64
			" fits neither SPARSEMEM nor SPARSEMEM_EXTREME",
			l->ms_length);
	}
	if (l->ms_length > (1u << 20)) /* 2^20 roots: 2^27 sections */
		return kcore_error_create(
			KCORE_ERR_UNSUPPORTED, 0, src->path,
			"cannot exclude pages: LENGTH(mem_section) "
			"%" PRIu64 " is too large",
			l->ms_length);
	if (l->extreme) {
		l->roots = calloc(l->ms_length, 8);
		if (!l->roots)
			return &kcore_error_nomem;
		struct kcore_error *err = kcore_source_read_vaddr(
			src, l->ms_sym, l->roots, l->ms_length * 8);

		if (err) {
			kcore_error_destroy(err);
			return kcore_error_create(
				KCORE_ERR_UNSUPPORTED, 0, src->path,
				"cannot exclude pages: cannot read the "
				"mem_section roots at 0x%" PRIx64,
				l->ms_sym);
		}
		for (uint64_t i = 0; i < l->ms_length; i++)
			l->roots[i] = le64((const unsigned char *)&l->roots[i]);
	}
	return NULL;
}

/* The encoded mem_map of section nr (mem_map - first pfn's struct page
 * offset), or 0 when the section has none. */
static uint64_t section_map(struct scan *s, uint64_t nr)
{
	struct layout *l = &s->l;
	unsigned char ms[8];
	uint64_t addr, map;
	struct kcore_error *err;

	if (nr >= l->nr_sections)
		return 0;
	if (l->extreme) {
		uint64_t root = l->roots[nr / l->per_root];

		if (!root)
			return 0;
		addr = root + nr % l->per_root * l->ms_size;
	} else {
		addr = l->ms_sym + nr * l->ms_size;
	}
	err = kcore_source_read_vaddr(s->src, addr + l->ms_off_map, ms, 8);
	if (err) {
		kcore_error_destroy(err);
		return 0;
	}
	map = le64(ms);
	if ((map & (SECTION_PRESENT | SECTION_HAS_MAP)) !=
	    (SECTION_PRESENT | SECTION_HAS_MAP))
		return 0;
	return map & ~SECTION_FLAGS;
}

static struct kcore_error *add_run(struct scan *s, uint64_t pfn, uint64_t n)
{
	uint64_t start = pfn << s->l.page_shift, end = (pfn + n)
						       << s->l.page_shift;

	if (s->nruns && s->runs[s->nruns - 1].end == start) {
		s->runs[s->nruns - 1].end = end;
		return NULL;
	}
	void *runs = s->runs;
	struct kcore_error *err = kcore_grow2(&runs, sizeof(*s->runs), NULL, 0,
					      s->nruns, &s->cap);

	s->runs = runs;
	if (err)
		return err;
	s->runs[s->nruns].start = start;
	s->runs[s->nruns].end = end;
	s->nruns++;
	return NULL;
}

static bool is_slab(const struct layout *l, uint64_t flags, uint32_t mc)
{
	if (l->has_slab_type && mc == l->slab_type)
		return true;
	return l->pg_slab >= 0 && (flags >> l->pg_slab & 1);
}

static bool is_anon(const struct layout *l, uint64_t mapping, uint64_t flags,
		    uint32_t mc)
{
	return (mapping & 1) && !is_slab(l, flags, mc);
}

static bool is_cache(const struct layout *l, uint64_t flags)
{
	if (flags >> l->pg_lru & 1)
		return true;
	return (l->pg_swapbacked < 0 || (flags >> l->pg_swapbacked & 1)) &&
	       (flags >> l->pg_swapcache & 1);
}

enum pclass {
	KEEP,
	FREE,
	UNACCEPTED,
	CACHE,
	CACHE_PRIVATE,
	USER,
	HWPOISON,
	OFFLINE
};

/*
 * The class of the page whose struct page is p (next: the following
 * struct page, or NULL), and how many pages from it share the class.
 */
static enum pclass classify(const struct scan *s, uint64_t pfn,
			    const unsigned char *p, const unsigned char *next,
			    uint64_t *ret_n)
{
	const struct layout *l = &s->l;
	uint64_t flags = le64(p + l->off_flags);
	uint64_t mapping = le64(p + l->off_mapping);
	uint64_t private = le64(p + l->off_private);
	uint64_t head = le64(p + l->off_head);
	uint32_t mc = le32(p + l->off_mapcount);
	uint64_t order = 0;
	bool hugetlb = false;

	*ret_n = 1;
	if (head & 1) /* a tail: its head decided */
		return KEEP;
	if (next && (flags & l->head_mask)) {
		uint64_t flags1 = le64(next + l->off_flags);

		if (l->has_hugetlb_type) { /* 6.9 and later */
			order = flags1 & 0xff;
			hugetlb = mc == l->hugetlb_type;
		} else if (l->pg_hugetlb >= 0) { /* 6.6 to 6.8 */
			order = flags1 & 0xff;
			hugetlb = flags1 >> l->pg_hugetlb & 1;
		} else {
			if (l->has_order_off)
				order = next[l->off_order];
			if (l->has_dtor_off && l->has_hugetlb_dtor)
				hugetlb = next[l->off_dtor] == l->hugetlb_dtor;
		}
		if (order >= 64 || (pfn & ((1ull << order) - 1)))
			order = 0;
	}
	if ((s->level & KCORE_EXCLUDE_FREE) && l->has_buddy &&
	    !is_slab(l, flags, mc) && mc == l->buddy) {
		if (private > l->max_order || (pfn & ((1ull << private) - 1)))
			return KEEP; /* not a believable free block */
		*ret_n = 1ull << private;
		return FREE;
	}
	if ((s->level & KCORE_EXCLUDE_FREE) && l->has_unaccepted &&
	    mc == l->unaccepted) {
		if (pfn & ((1ull << l->max_order) - 1))
			return KEEP;
		*ret_n = 1ull << l->max_order;
		return UNACCEPTED;
	}
	*ret_n = 1ull << order;
	if ((s->level & (KCORE_EXCLUDE_CACHE | KCORE_EXCLUDE_CACHE_PRIVATE)) &&
	    is_cache(l, flags) && !is_anon(l, mapping, flags, mc)) {
		bool priv = flags >> l->pg_private & 1;

		if (!priv)
			return CACHE;
		if (s->level & KCORE_EXCLUDE_CACHE_PRIVATE)
			return CACHE_PRIVATE;
	}
	if ((s->level & KCORE_EXCLUDE_USER) &&
	    (is_anon(l, mapping, flags, mc) || hugetlb))
		return USER;
	/* As makedumpfile: a poisoned or offline head takes its compound
	 * page with it. */
	if (l->pg_hwpoison >= 0 && (flags >> l->pg_hwpoison & 1))
		return HWPOISON;
	if (l->has_offline && !is_slab(l, flags, mc) && mc == l->offline)
		return OFFLINE;
	*ret_n = 1;
	return KEEP;
}

static void count(struct kcore_exclude_stats *st, enum pclass c, uint64_t n)
{
	switch (c) {
	case FREE:
		st->free += n;
		break;
	case UNACCEPTED:
		st->unaccepted += n;
		break;
	case CACHE:
		st->cache += n;
		break;
	case CACHE_PRIVATE:
		st->cache_private += n;
		break;
	case USER:
		st->user += n;
		break;
	case HWPOISON:
		st->hwpoison += n;
		break;
	case OFFLINE:
		st->offline += n;
		break;
	case KEEP:
		return;
	}
	st->excluded += n;
}

/* Scan pfns [start, end) of one RAM segment. */
static struct kcore_error *scan_range(struct scan *s, uint64_t start,
				      uint64_t end)
{
	const struct layout *l = &s->l;
	uint64_t shift = l->section_shift - l->page_shift;
	uint64_t pfn = start;

	while (pfn < end) {
		uint64_t nr = pfn >> shift;
		uint64_t sec_end = (nr + 1) << shift;
		uint64_t map, stop;

		if (nr >= l->nr_sections) { /* past MAX_PHYSMEM_BITS */
			s->st->unreadable += end - pfn;
			s->st->pages_scanned += end - pfn;
			break;
		}
		if (l->extreme && !l->roots[nr / l->per_root]) {
			/* A whole root without sections: one step. */
			sec_end = (nr / l->per_root + 1) * l->per_root << shift;
		}
		map = section_map(s, nr);
		stop = sec_end < end ? sec_end : end;
		if (!map) { /* no struct pages: keep it all */
			s->st->unreadable += stop - pfn;
			s->st->pages_scanned += stop - pfn;
			pfn = stop;
			continue;
		}
		while (pfn < stop) {
			/* A batch of struct pages, aligned, plus the next
			 * one for a compound head's order. */
			uint64_t bstart = pfn, bend = (pfn / BATCH + 1) * BATCH;
			uint64_t want;
			struct kcore_error *err;

			if (bend > stop)
				bend = stop;
			want = bend - bstart + (bend < sec_end ? 1 : 0);
			report(s, false);
			err = kcore_source_read_vaddr(
				s->src, map + bstart * l->size_page, s->buf,
				want * l->size_page);
			if (err) {
				kcore_error_destroy(err);
				s->st->unreadable += bend - bstart;
				s->st->pages_scanned += bend - bstart;
				pfn = bend;
				continue;
			}
			while (pfn < bend) {
				uint64_t i = pfn - bstart, n;
				const unsigned char *p =
					s->buf + i * l->size_page;
				enum pclass c = classify(
					s, pfn, p,
					i + 1 < want ? p + l->size_page : NULL,
					&n);

				if (n > end - pfn)
					n = end - pfn;
				s->st->pages_scanned += n;
				if (c != KEEP) {
					count(s->st, c, n);
					err = add_run(s, pfn, n);
					if (err)
						return err;
				}
				pfn += n;
			}
			/* A free block can reach past the batch, and past
			 * the section: the loops go on from where it ends. */
		}
	}
	return NULL;
}

static int cmp_range(const void *a, const void *b)
{
	const struct kcore_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct kcore_error *kcore_plan_exclude(struct kcore_source *src,
				       struct kcore_plan *plan, unsigned level)
{
	return kcore_plan_exclude_progress(src, plan, level, NULL, NULL);
}

/* Whole pages of a RAM segment: [*first, *last) pfns. */
static bool ram_pfns(const struct kcore_plan_segment *seg,
		     const struct layout *l, uint64_t *first, uint64_t *last)
{
	if (seg->cls != KCORE_CLASS_RAM || !seg->has_paddr)
		return false;
	*first = (seg->paddr + l->page_size - 1) >> l->page_shift;
	*last = (seg->paddr + seg->size) >> l->page_shift;
	return *first < *last;
}

struct kcore_error *
kcore_plan_exclude_progress(struct kcore_source *src, struct kcore_plan *plan,
			    unsigned level, kcore_exclude_progress_fn progress,
			    void *progress_arg)
{
	struct scan s = { .src = src,
			  .level = level,
			  .st = &plan->exclude,
			  .progress = progress,
			  .progress_arg = progress_arg };
	struct kcore_error *err = NULL;
	double t0 = now_s();
	size_t m = 0;

	memset(&plan->exclude, 0, sizeof(plan->exclude));
	plan->exclude.level = level;
	free(plan->excluded);
	plan->excluded = NULL;
	plan->nexcluded = 0;
	if (!(level & ~KCORE_EXCLUDE_ZERO))
		return NULL; /* nothing needs struct pages */
	if (src->info.kind != KCORE_SOURCE_LIVE_KCORE &&
	    src->info.kind != KCORE_SOURCE_VMCORE)
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
					  "cannot exclude pages: not a kernel "
					  "memory source");
	err = read_layout(src, &s.l);
	if (err)
		goto out;
	plan->exclude.page_size = s.l.page_size;
	s.buf = malloc((BATCH + 1) * s.l.size_page);
	if (!s.buf) {
		err = &kcore_error_nomem;
		goto out;
	}
	for (size_t i = 0; i < plan->nsegs; i++) {
		uint64_t first, last;

		if (ram_pfns(&plan->segs[i], &s.l, &first, &last))
			s.pages_total += last - first;
	}
	s.t0 = t0;
	for (size_t i = 0; !err && i < plan->nsegs; i++) {
		uint64_t first, last;

		if (ram_pfns(&plan->segs[i], &s.l, &first, &last))
			err = scan_range(&s, first, last);
	}
	if (err)
		goto out;
	report(&s, true);
	if (s.nruns)
		qsort(s.runs, s.nruns, sizeof(*s.runs), cmp_range);
	for (size_t i = 0; i < s.nruns; i++) {
		if (m && s.runs[i].start <= s.runs[m - 1].end) {
			if (s.runs[i].end > s.runs[m - 1].end)
				s.runs[m - 1].end = s.runs[i].end;
		} else {
			s.runs[m++] = s.runs[i];
		}
	}
	plan->excluded = s.runs;
	plan->nexcluded = m;
	plan->exclude.ranges = m;
	s.runs = NULL;
out:
	plan->exclude.seconds = now_s() - t0;
	free(s.runs);
	free(s.buf);
	free(s.l.roots);
	return err;
}
