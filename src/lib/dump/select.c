// SPDX-License-Identifier: MIT
/*
 * Selection: turn a source and the user's choices (segment classes,
 * address ranges, vmalloc areas, mapping names) into a plan of output
 * segments, each a contiguous piece of one source segment.
 */
#include <elf.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcoredump/dump.h"
#include "kcoredump/pgtable.h"
#include "source-impl.h"

#define CLASS_BIT(c) (1u << (c))

struct plan_builder {
	struct kcore_plan *plan;
	size_t cap;
	/* Process cores: what the file lacks stays p_memsz-only (gdb reads
	 * it from the mapped files), never zeros in the dump. */
	bool keep_memsz;
	/* --vmalloc-range on a live kernel: the physical addresses of the
	 * page tables that map the chosen areas (may repeat), once known. */
	uint64_t *table_pa;
	size_t ntable_pa;
	bool have_tables;
};

/* Append n table addresses (taking pa) to the builder's. */
static struct kcore_error *keep_tables(struct plan_builder *b, uint64_t *pa,
				       size_t n)
{
	uint64_t *t;

	b->have_tables = true;
	if (!n) {
		free(pa);
		return NULL;
	}
	t = realloc(b->table_pa, (b->ntable_pa + n) * sizeof(*t));
	if (!t) {
		free(pa);
		return &kcore_error_nomem;
	}
	memcpy(t + b->ntable_pa, pa, n * sizeof(*t));
	free(pa);
	b->table_pa = t;
	b->ntable_pa += n;
	return NULL;
}

static struct kcore_error *plan_add(struct plan_builder *b,
				    const struct kcore_plan_segment *seg)
{
	struct kcore_plan *plan = b->plan;

	if (plan->nsegs == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 16;
		struct kcore_plan_segment *segs =
			realloc(plan->segs, cap * sizeof(*segs));

		if (!segs)
			return &kcore_error_nomem;
		plan->segs = segs;
		b->cap = cap;
	}
	plan->segs[plan->nsegs++] = *seg;
	return NULL;
}

static const char *plan_label(struct kcore_plan *plan, const char *s)
{
	char **labels =
		realloc(plan->labels, (plan->nlabels + 1) * sizeof(*labels));
	char *copy;

	if (!labels)
		return NULL;
	plan->labels = labels;
	copy = strdup(s);
	if (!copy)
		return NULL;
	plan->labels[plan->nlabels++] = copy;
	return copy;
}

/* Add [vaddr, vaddr + size) of source segment seg, clipped to ranges. */
static struct kcore_error *add_piece(struct plan_builder *b,
				     const struct kcore_selection *sel,
				     const struct kcore_segment *seg,
				     uint64_t vaddr, uint64_t size,
				     const char *label)
{
	struct kcore_range whole = { 0, UINT64_MAX };
	const struct kcore_range *ranges = &whole;
	size_t nranges = 1;

	if (sel->nranges) {
		ranges = sel->ranges;
		nranges = sel->nranges;
	}
	for (size_t i = 0; i < nranges; i++) {
		uint64_t base = sel->ranges_physical && sel->nranges
					? seg->paddr + (vaddr - seg->vaddr)
					: vaddr;
		uint64_t lo = base, hi = base + size;
		struct kcore_plan_segment p = { 0 };
		uint64_t rel;

		if (ranges[i].start > lo)
			lo = ranges[i].start;
		if (ranges[i].end < hi)
			hi = ranges[i].end;
		if (lo >= hi)
			continue;
		rel = (vaddr - seg->vaddr) + (lo - base);
		p.vaddr = seg->vaddr + rel;
		p.has_paddr = seg->has_paddr;
		p.paddr = seg->has_paddr ? seg->paddr + rel : UINT64_MAX;
		p.size = hi - lo;
		p.src_offset = seg->offset + rel;
		p.src_avail = rel >= seg->filesz ? 0 : seg->filesz - rel;
		if (p.src_avail > p.size)
			p.src_avail = p.size;
		p.memsz = p.size;
		if (b->keep_memsz)
			p.size = p.src_avail;
		p.flags = seg->flags;
		p.cls = seg->cls;
		p.label = label ? label : seg->label;
		p.src_segment = seg->index;
		struct kcore_error *err = plan_add(b, &p);
		if (err)
			return err;
	}
	return NULL;
}

struct vmalloc_area {
	uint64_t start, end;
	uint64_t area_end; /* vmallocinfo's end, before the guard and pages= */
	char caller[128];
};

/* A loaded module's text address from /proc/modules. */
struct module_text {
	uint64_t addr;
	char name[64];
};

/*
 * /proc/modules: "NAME SIZE REFS DEPS STATE 0xADDR [TAINT]", ADDR the
 * module's text (zero under kernel.kptr_restrict).  No file (modules
 * built in, CONFIG_MODULES off) is no modules, not an error.
 */
static struct kcore_error *
read_module_text(const char *sysroot, struct module_text **ret, size_t *ret_n)
{
	char path[PATH_MAX], line[1024];
	struct module_text *m = NULL;
	size_t n = 0, cap = 0;
	FILE *f;

	*ret = NULL;
	*ret_n = 0;
	snprintf(path, sizeof(path), "%s/proc/modules", sysroot ? sysroot : "");
	f = fopen(path, "re");
	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		char name[64];
		unsigned long long addr;

		if (sscanf(line, "%63s %*s %*s %*s %*s 0x%llx", name, &addr) !=
			    2 ||
		    !addr)
			continue;
		if (n == cap) {
			struct module_text *nm;

			cap = cap ? 2 * cap : 64;
			nm = realloc(m, cap * sizeof(*m));
			if (!nm) {
				free(m);
				fclose(f);
				return &kcore_error_nomem;
			}
			m = nm;
		}
		m[n].addr = addr;
		snprintf(m[n].name, sizeof(m[n].name), "%s", name);
		n++;
	}
	fclose(f);
	*ret = m;
	*ret_n = n;
	return NULL;
}

/*
 * An area's label: its caller, and the modules whose text starts in it.
 * Since execmem's ROX cache (Linux 7.3 on x86_64) the text of several
 * modules shares one 2 MiB area (caller execmem_alloc, int3 where no module
 * sits), so the caller alone does not say whose code it is:
 * "execmem_alloc+0xdd/0x1c0 [module text: 9p 9pnet netfs]".  NULL when
 * out of memory.
 */
static char *area_label(const struct vmalloc_area *a,
			const struct module_text *mods, size_t nmods)
{
	size_t len = strlen(a->caller) + 1, used;
	char *label;
	int count = 0;

	for (size_t i = 0; i < nmods; i++)
		if (mods[i].addr >= a->start && mods[i].addr < a->area_end)
			len += strlen(mods[i].name) + 1;
	label = malloc(len + sizeof(" [module text:]"));
	if (!label)
		return NULL;
	used = (size_t)snprintf(label, len, "%s", a->caller);
	for (size_t i = 0; i < nmods; i++) {
		if (mods[i].addr < a->start || mods[i].addr >= a->area_end)
			continue;
		used += (size_t)sprintf(
			label + used, "%s%s",
			count++ ? " " : " [module text: ", mods[i].name);
	}
	if (count)
		strcpy(label + used, "]");
	return label;
}

static bool is_flag_word(const char *w)
{
	static const char *const flags[] = {
		"vmalloc",    "vmap",	      "ioremap",  "user",   "vpages",
		"vm_map_ram", "dma-coherent", "unpurged", "vm_area"
	};

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (strcmp(w, flags[i]) == 0)
			return true;
	return !strncmp(w, "pages=", 6) || !strncmp(w, "phys=", 5) ||
	       (w[0] == 'N' && w[1] >= '0' && w[1] <= '9');
}

/*
 * Parse /proc/vmallocinfo: "0xSTART-0xEND SIZE [CALLER] [pages=N] ...
 * FLAGS".  The range includes the guard page of guarded areas; only pages
 * that can hold data are kept: pages=N for vmalloc areas, size minus the
 * guard for vmap.  ioremap areas read as zeros through kcore and lazily
 * freed ("unpurged") areas are unmapped: both are left out.
 */
static struct kcore_error *read_vmallocinfo(const char *sysroot,
					    uint64_t page_size,
					    struct vmalloc_area **ret,
					    size_t *ret_n, bool *ret_hidden)
{
	char path[PATH_MAX], line[1024];
	struct vmalloc_area *v = NULL;
	size_t n = 0, cap = 0, zero = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/proc/vmallocinfo",
		 sysroot ? sysroot : "");
	f = fopen(path, "re");
	if (!f)
		return kcore_error_create(
			errno == ENOENT ? KCORE_ERR_NOT_FOUND
					: KCORE_ERR_ACCESS,
			errno, path, "cannot list the mapped vmalloc areas");
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, size, pages = 0, area_end;
		char *save = NULL, *tok, caller[128] = "";
		bool ioremap = false, unpurged = false, guard = true;
		int used = 0;

		if (sscanf(line, "0x%llx-0x%llx %llu%n", &start, &end, &size,
			   &used) != 3)
			continue;
		for (tok = strtok_r(line + used, " \t\n", &save); tok;
		     tok = strtok_r(NULL, " \t\n", &save)) {
			if (!strncmp(tok, "pages=", 6))
				pages = strtoull(tok + 6, NULL, 10);
			else if (!strcmp(tok, "ioremap"))
				ioremap = true;
			else if (!strcmp(tok, "unpurged"))
				unpurged = true;
			else if (!strcmp(tok, "vm_map_ram"))
				guard = false;
			else if (!caller[0] && !is_flag_word(tok))
				snprintf(caller, sizeof(caller), "%s", tok);
		}
		if (start == 0)
			zero++;
		if (ioremap || unpurged || end <= start)
			continue;
		area_end = end;
		if (pages)
			end = start + pages * page_size < end
				      ? start + pages * page_size
				      : end;
		else if (guard && end - start > page_size)
			end -= page_size;
		if (n == cap) {
			struct vmalloc_area *nv;

			cap = cap ? 2 * cap : 256;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				fclose(f);
				return &kcore_error_nomem;
			}
			v = nv;
		}
		v[n].start = start;
		v[n].area_end = area_end;
		v[n].end = end;
		snprintf(v[n].caller, sizeof(v[n].caller), "%s",
			 caller[0] ? caller : "-");
		n++;
	}
	fclose(f);
	/* With kptr_restrict the kernel prints every address as zero. */
	*ret_hidden = zero > 0 && zero >= n;
	*ret = v;
	*ret_n = n;
	return NULL;
}

static int cmp_area(const void *a, const void *b)
{
	const struct vmalloc_area *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static void clip_window(const struct kcore_selection *sel, uint64_t *lo,
			uint64_t *hi)
{
	if (!sel->vmalloc_window.end)
		return;
	if (*lo < sel->vmalloc_window.start)
		*lo = sel->vmalloc_window.start;
	if (*hi > sel->vmalloc_window.end)
		*hi = sel->vmalloc_window.end;
}

/* Whether an area lies in one of the selected kernel segments. */
static bool area_in_segments(const struct kcore_source *src, unsigned classes,
			     const struct vmalloc_area *a)
{
	for (size_t i = 0; i < src->nsegments; i++) {
		const struct kcore_segment *seg = &src->segments[i];

		if (seg->type == PT_LOAD && (classes & CLASS_BIT(seg->cls)) &&
		    a->start >= seg->vaddr &&
		    a->start - seg->vaddr < seg->memsz)
			return true;
	}
	return false;
}

/*
 * Without real addresses in vmallocinfo (kernel.kptr_restrict 0 prints
 * hashed pointers, 2 prints zeros), the kernel's page tables say what is
 * mapped.
 */
static struct kcore_error *
plan_from_page_tables(struct plan_builder *b, struct kcore_source *src,
		      const struct kcore_selection *sel, unsigned classes)
{
	struct kcore_plan *plan = b->plan;

	plan->vmalloc_source = "page tables";
	for (size_t i = 0; i < src->nsegments; i++) {
		const struct kcore_segment *seg = &src->segments[i];
		uint64_t lo = seg->vaddr, hi = seg->vaddr + seg->memsz;
		struct kcore_vrange *runs;
		struct kcore_error *err;
		uint64_t *pa = NULL;
		size_t n, ntables = 0;

		if (seg->type != PT_LOAD || !(classes & CLASS_BIT(seg->cls)))
			continue;
		if (seg->cls == KCORE_CLASS_VMALLOC)
			plan->vmalloc_segment_size += seg->memsz;
		clip_window(sel, &lo, &hi);
		if (lo >= hi)
			continue;
		err = kcore_kernel_mapped_tables(src, lo, hi, &runs, &n,
						 &ntables, &pa);
		if (err)
			return err;
		err = keep_tables(b, pa, ntables);
		if (err) {
			free(runs);
			return err;
		}
		for (size_t k = 0; k < n && !err; k++) {
			err = add_piece(b, sel, seg, runs[k].start,
					runs[k].end - runs[k].start,
					"[mapped]");
			plan->vmalloc_areas++;
		}
		free(runs);
		if (err)
			return err;
	}
	return NULL;
}

/* A caller without its offset: "bpf_prog_alloc+0x40/0x120" is
 * "bpf_prog_alloc". */
static size_t caller_name_len(const char *caller)
{
	return strcspn(caller, "+");
}

struct caller_count {
	const char *name; /* in an area's caller */
	size_t len, count;
};

static int cmp_caller_count(const void *a, const void *b)
{
	const struct caller_count *x = a, *y = b;
	int c;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	c = strncmp(x->name, y->name, x->len < y->len ? x->len : y->len);
	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* snprintf() at buf + *used, which stays within size. */
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*used + 1 >= size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *used, size - *used, fmt, ap);
	va_end(ap);
	if (n > 0)
		*used = *used + (size_t)n < size ? *used + (size_t)n : size - 1;
}

/*
 * --caller SUBSTR that no area's caller (nor a module's text in it)
 * matches, as with a module that is not loaded: an error that says so and
 * names the callers there are, the most frequent first, and the modules,
 * rather than "the selection matches no memory".  NULL when some area
 * matches (then only the window or the classes left it out).
 */
#define CALLERS_SHOWN 6
#define MODULES_SHOWN 6
static struct kcore_error *
caller_matches_none(const struct kcore_selection *sel,
		    const struct vmalloc_area *areas, size_t n,
		    const struct module_text *mods, size_t nmods)
{
	struct caller_count *cc = calloc(n ? n : 1, sizeof(*cc));
	char list[1024], path[PATH_MAX];
	size_t ncc = 0, used = 0;
	struct kcore_error *err;

	if (!cc)
		return &kcore_error_nomem;
	for (size_t i = 0; i < n; i++) {
		char *full = area_label(&areas[i], mods, nmods);
		const char *name = areas[i].caller;
		size_t len = caller_name_len(name), k;
		bool match;

		if (!full) {
			free(cc);
			return &kcore_error_nomem;
		}
		match = strstr(full, sel->caller) != NULL;
		free(full);
		if (match) {
			free(cc);
			return NULL;
		}
		if (!strcmp(name, "-"))
			continue;
		for (k = 0; k < ncc; k++)
			if (cc[k].len == len && !memcmp(cc[k].name, name, len))
				break;
		if (k == ncc)
			cc[ncc++] = (struct caller_count){ name, len, 0 };
		cc[k].count++;
	}
	qsort(cc, ncc, sizeof(*cc), cmp_caller_count);
	append(list, sizeof(list), &used, "the %zu areas' callers %s", n,
	       ncc ? "include " : "are unnamed");
	for (size_t k = 0; k < ncc && k < CALLERS_SHOWN; k++)
		append(list, sizeof(list), &used, "%s%.*s", k ? ", " : "",
		       (int)cc[k].len, cc[k].name);
	if (ncc > CALLERS_SHOWN)
		append(list, sizeof(list), &used, " and %zu more",
		       ncc - CALLERS_SHOWN);
	for (size_t k = 0; k < nmods && k < MODULES_SHOWN; k++)
		append(list, sizeof(list), &used, "%s%s",
		       k ? ", " : "; module text: ", mods[k].name);
	if (nmods > MODULES_SHOWN)
		append(list, sizeof(list), &used, " and %zu more",
		       nmods - MODULES_SHOWN);
	snprintf(path, sizeof(path), "%s/proc/vmallocinfo",
		 sel->sysroot ? sel->sysroot : "");
	err = kcore_error_create(KCORE_ERR_INVALID, 0, path,
				 "no vmalloc area's caller or module text "
				 "matches '%s' (is it loaded?): %s",
				 sel->caller, list);
	free(cc);
	return err;
}

/* Live kernel: one output segment per mapped vmalloc area. */
static struct kcore_error *plan_vmalloc_live(struct plan_builder *b,
					     struct kcore_source *src,
					     const struct kcore_selection *sel,
					     unsigned classes)
{
	struct kcore_plan *plan = b->plan;
	struct vmalloc_area *areas;
	struct module_text *mods = NULL;
	struct kcore_error *err;
	size_t n, inside = 0, nmods = 0;
	bool hidden;

	err = read_vmallocinfo(sel->sysroot, src->info.page_size, &areas, &n,
			       &hidden);
	if (err && sel->caller)
		return err;
	if (err) { /* no vmallocinfo: the page tables still know */
		kcore_error_destroy(err);
		return plan_from_page_tables(b, src, sel, classes);
	}
	for (size_t k = 0; k < n; k++)
		inside += area_in_segments(src, classes, &areas[k]);
	if (hidden || (n && !inside)) {
		free(areas);
		if (sel->caller)
			return kcore_error_create(
				KCORE_ERR_ACCESS, 0, "/proc/vmallocinfo",
				"addresses are hidden or hashed "
				"(kernel.kptr_restrict), so callers cannot be "
				"matched; as root, 'sysctl "
				"kernel.kptr_restrict=1' "
				"shows the real addresses");
		plan->warning = strdup("/proc/vmallocinfo addresses are hidden "
				       "or hashed (kernel.kptr_restrict); the "
				       "mapped pages were found in the "
				       "kernel's page tables instead");
		return plan_from_page_tables(b, src, sel, classes);
	}
	err = read_module_text(sel->sysroot, &mods, &nmods);
	if (err) {
		free(areas);
		return err;
	}
	qsort(areas, n, sizeof(*areas), cmp_area);
	plan->vmalloc_source = "vmallocinfo";
	for (size_t i = 0; i < src->nsegments; i++) {
		const struct kcore_segment *seg = &src->segments[i];

		if (seg->type != PT_LOAD || !(classes & CLASS_BIT(seg->cls)))
			continue;
		if (seg->cls == KCORE_CLASS_VMALLOC)
			plan->vmalloc_segment_size += seg->memsz;
		for (size_t k = 0; k < n; k++) {
			uint64_t lo = areas[k].start, hi = areas[k].end;
			const char *label;
			char *full;

			if (hi <= seg->vaddr || lo >= seg->vaddr + seg->memsz)
				continue;
			if (lo < seg->vaddr)
				lo = seg->vaddr;
			if (hi > seg->vaddr + seg->memsz)
				hi = seg->vaddr + seg->memsz;
			clip_window(sel, &lo, &hi);
			if (lo >= hi)
				continue;
			full = area_label(&areas[k], mods, nmods);
			if (!full) {
				err = &kcore_error_nomem;
				break;
			}
			/* --caller: the caller or a module whose text is in
			 * the area. */
			if (sel->caller && !strstr(full, sel->caller)) {
				free(full);
				continue;
			}
			label = plan_label(plan, full);
			free(full);
			if (!label) {
				err = &kcore_error_nomem;
				break;
			}
			err = add_piece(b, sel, seg, lo, hi - lo, label);
			if (err)
				break;
			plan->vmalloc_areas++;
		}
		if (err)
			break;
	}
	if (!err && sel->caller && !plan->vmalloc_areas)
		err = caller_matches_none(sel, areas, n, mods, nmods);
	free(areas);
	free(mods);
	return err;
}

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

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The page tables mapping the plan's vmalloc segments, when the plan came
 * from vmallocinfo: one walk per run of areas less than 2 MiB apart (they
 * share their last-level tables). */
static struct kcore_error *find_tables(struct plan_builder *b,
				       struct kcore_source *src)
{
	struct kcore_plan *plan = b->plan;
	struct kcore_range *r =
		calloc(plan->nsegs ? plan->nsegs : 1, sizeof(*r));
	struct kcore_error *err = NULL;
	size_t n = 0;

	if (!r)
		return &kcore_error_nomem;
	for (size_t i = 0; i < plan->nsegs; i++)
		if (plan->segs[i].cls == KCORE_CLASS_VMALLOC ||
		    plan->segs[i].cls == KCORE_CLASS_MODULES)
			r[n++] = (struct kcore_range){
				plan->segs[i].vaddr,
				plan->segs[i].vaddr + plan->segs[i].memsz
			};
	qsort(r, n, sizeof(*r), cmp_u64); /* by start */
	for (size_t i = 0; i < n && !err;) {
		uint64_t lo = r[i].start, hi = r[i].end, *pa = NULL;
		struct kcore_vrange *runs = NULL;
		size_t nruns, ntables = 0;

		for (i++; i < n && r[i].start < hi + (2u << 20); i++)
			if (r[i].end > hi)
				hi = r[i].end;
		err = kcore_kernel_mapped_tables(src, lo, hi, &runs, &nruns,
						 &ntables, &pa);
		free(runs);
		if (!err)
			err = keep_tables(b, pa, ntables);
	}
	free(r);
	return err;
}

/*
 * --vmalloc-range on a live kernel: the page-table pages that map the
 * areas, at their physical addresses (and the direct map), so that a
 * reader's own walk from swapper_pg_dir finds them (a few pages; with
 * --segments text the kernel image, where swapper_pg_dir is, comes too and
 * crash and drgn open the dump).  The areas' data stay virtual-only
 * (p_paddr -1, as in kcore).  Architectures without a page-table walk
 * get none.
 */
static struct kcore_error *add_page_tables(struct plan_builder *b,
					   struct kcore_source *src,
					   const struct kcore_selection *sel)
{
	const struct kcore_segment *text = NULL;
	struct kcore_error *err = NULL;
	uint64_t page = src->info.page_size ? src->info.page_size : 4096;

	for (size_t i = 0; i < src->nsegments && !text; i++)
		if (src->segments[i].type == PT_LOAD &&
		    src->segments[i].cls == KCORE_CLASS_TEXT &&
		    src->segments[i].has_paddr)
			text = &src->segments[i];
	if (!b->have_tables) {
		err = find_tables(b, src);
		if (err && err->code == KCORE_ERR_UNSUPPORTED) {
			kcore_error_destroy(err);
			return NULL;
		}
		if (err)
			return err;
	}
	/* Tables inside the image (the root's neighbours) are its pages,
	 * which --segments text adds. */
	size_t keep = 0;

	for (size_t i = 0; i < b->ntable_pa; i++)
		if (!text || b->table_pa[i] < text->paddr ||
		    b->table_pa[i] - text->paddr >= text->memsz)
			b->table_pa[keep++] = b->table_pa[i];
	b->ntable_pa = keep;
	qsort(b->table_pa, b->ntable_pa, sizeof(uint64_t), cmp_u64);
	for (size_t i = 0; i < b->ntable_pa && !err;) {
		uint64_t lo = b->table_pa[i] & ~(page - 1), hi = lo + page;
		const struct kcore_segment *ram = NULL;

		for (i++; i < b->ntable_pa && b->table_pa[i] < hi + page; i++)
			if ((b->table_pa[i] & ~(page - 1)) + page > hi)
				hi = (b->table_pa[i] & ~(page - 1)) + page;
		for (size_t k = 0; k < src->nsegments && !ram; k++) {
			const struct kcore_segment *seg = &src->segments[k];

			if (seg->type == PT_LOAD &&
			    seg->cls == KCORE_CLASS_RAM && seg->has_paddr &&
			    lo >= seg->paddr && hi <= seg->paddr + seg->memsz)
				ram = seg;
		}
		if (ram)
			err = add_piece(b, sel, ram,
					ram->vaddr + (lo - ram->paddr), hi - lo,
					"page tables");
	}
	return err;
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
		err = plan_vmalloc_live(
			&b, src, sel,
			classes & (CLASS_BIT(KCORE_CLASS_VMALLOC) |
				   CLASS_BIT(KCORE_CLASS_MODULES)));
		if (err)
			goto fail;
		classes &= ~(CLASS_BIT(KCORE_CLASS_VMALLOC) |
			     CLASS_BIT(KCORE_CLASS_MODULES));
		if (sel->vmalloc && b.plan->nsegs) {
			err = add_page_tables(&b, src, sel);
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
		err = add_piece(&b, sel, &t, t.vaddr + (lo - t.paddr), hi - lo,
				NULL);
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
			clip_window(sel, &lo, &hi);
			b.plan->vmalloc_source = "segments";
			if (lo < hi)
				err = add_piece(&b, sel, seg, lo, hi - lo,
						NULL);
		} else {
			err = add_piece(&b, sel, seg, seg->vaddr, seg->memsz,
					NULL);
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
