// SPDX-License-Identifier: MIT
/*
 * The live kernel's vmalloc areas as plan segments: the mapped areas of
 * /proc/vmallocinfo labelled by their caller and the modules whose text
 * is in them (or, with hidden addresses, what the page tables map), the
 * error that names the callers when --caller matches none, and for
 * --vmalloc-range the page-table pages that map the areas.
 */
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcoredump/pgtable.h"
#include "select.h"

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
		kcore_plan_clip_window(sel, &lo, &hi);
		if (lo >= hi)
			continue;
		err = kcore_kernel_mapped_tables(src, lo, hi, &runs, &n,
						 &ntables, &pa);
		if (err)
			return err;
		err = kcore_plan_keep_tables(b, pa, ntables);
		if (err) {
			free(runs);
			return err;
		}
		for (size_t k = 0; k < n && !err; k++) {
			err = kcore_plan_add_piece(b, sel, seg, runs[k].start,
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
struct kcore_error *kcore_plan_vmalloc_live(struct plan_builder *b,
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
			kcore_plan_clip_window(sel, &lo, &hi);
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
			label = kcore_plan_label(plan, full);
			free(full);
			if (!label) {
				err = &kcore_error_nomem;
				break;
			}
			err = kcore_plan_add_piece(b, sel, seg, lo, hi - lo,
						   label);
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
			err = kcore_plan_keep_tables(b, pa, ntables);
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
struct kcore_error *kcore_plan_page_tables(struct plan_builder *b,
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
			err = kcore_plan_add_piece(
				b, sel, ram, ram->vaddr + (lo - ram->paddr),
				hi - lo, "page tables");
	}
	return err;
}
