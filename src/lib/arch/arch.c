// SPDX-License-Identifier: MIT
/*
 * The architecture lookup and the one page-table iterator (arch.h).  The
 * iterator knows no architecture: the table's pgtable_init gives the
 * levels and the root, its pte() what an entry is.
 */
#include <elf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "bytes.h"
#include "source-impl.h"

static const struct kcore_arch *const arches[] = {
	&kcore_arch_x86_64,
	&kcore_arch_arm64,
};

#define NARCHES (sizeof(arches) / sizeof(arches[0]))

const struct kcore_arch *kcore_arch_lookup(uint16_t machine)
{
	for (size_t i = 0; i < NARCHES; i++)
		if (arches[i]->machine == machine)
			return arches[i];
	return NULL;
}

const struct kcore_arch *kcore_arch_by_name(const char *name)
{
	for (size_t i = 0; i < NARCHES; i++) {
		if (strcmp(arches[i]->name, name) == 0)
			return arches[i];
		for (const char *const *a = arches[i]->aliases; a && *a; a++)
			if (strcmp(*a, name) == 0)
				return arches[i];
	}
	return NULL;
}

/* Whether text holds a line starting with key. */
static bool has_line(const char *text, size_t len, const char *key)
{
	size_t klen = strlen(key);

	for (size_t i = 0; i < len;) {
		if (len - i >= klen && memcmp(text + i, key, klen) == 0)
			return true;
		while (i < len && text[i] != '\n')
			i++;
		i++;
	}
	return false;
}

const struct kcore_arch *kcore_arch_by_vmcoreinfo(const char *text, size_t len)
{
	for (size_t i = 0; i < NARCHES; i++)
		for (const char *const *m = arches[i]->vmcoreinfo_marks;
		     m && *m; m++)
			if (has_line(text, len, *m))
				return arches[i];
	return NULL;
}

const struct kcore_arch *kcore_arch_by_banner(const char *line)
{
	for (size_t i = 0; i < NARCHES; i++)
		for (const char *const *m = arches[i]->banner_marks; m && *m;
		     m++)
			if (strstr(line, *m))
				return arches[i];
	return NULL;
}

const struct kcore_arch *kcore_arch_host(void)
{
#if defined(__x86_64__)
	return &kcore_arch_x86_64;
#elif defined(__aarch64__)
	return &kcore_arch_arm64;
#else
	return NULL;
#endif
}

/* One table of a level, read whole and kept until another replaces it. */
struct cached_table {
	uint64_t pa;
	bool valid;
	uint64_t e[512];
};

struct kcore_pgtable_iter {
	struct kcore_source *src;
	const struct kcore_arch *arch;
	struct kcore_pgtable pt;
	kcore_read_paddr_fn read_paddr;
	bool lenient;
	uint64_t budget, visits;
	size_t tables;
	struct cached_table cache[KCORE_PGTABLE_MAX_LEVELS + 1];
	/* Open-addressed set of (table address | level) without leaves. */
	uint64_t *empty;
	size_t nempty, cap;
	/* kcore_pgtable_iter_record_tables(): the tables below the root
	 * read whole, in walk order (a table read again is listed again). */
	bool record;
	uint64_t *table_pa;
	size_t ntable_pa, table_pa_cap;
	bool record_failed; /* out of memory while recording */
};

/* The root's physical address through the source's segments: a live
 * kcore maps the kernel image with p_paddr. */
static bool root_from_segments(const struct kcore_source *src, uint64_t va,
			       uint64_t *ret)
{
	for (size_t i = 0; i < src->nsegments; i++) {
		const struct kcore_segment *s = &src->segments[i];

		if (s->type != PT_LOAD || !s->has_paddr || va < s->vaddr ||
		    va - s->vaddr >= s->memsz)
			continue;
		*ret = s->paddr + (va - s->vaddr);
		return true;
	}
	return false;
}

struct kcore_error *kcore_pgtable_iter_create(struct kcore_source *src,
					      kcore_read_paddr_fn read_paddr,
					      bool lenient, uint64_t budget,
					      struct kcore_pgtable_iter **ret)
{
	const struct kcore_arch *arch = kcore_arch_lookup(src->info.machine);
	struct kcore_pgtable_iter *it;
	struct kcore_error *err;

	if (!arch || !arch->pgtable_init)
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
					  "page table walks are implemented "
					  "for x86_64 and arm64 only");
	it = calloc(1, sizeof(*it));
	if (!it)
		return &kcore_error_nomem;
	it->src = src;
	it->arch = arch;
	it->read_paddr = read_paddr;
	it->lenient = lenient;
	it->budget = budget ? budget : KCORE_PGTABLE_BUDGET;
	err = arch->pgtable_init(src, &it->pt);
	if (!err && it->pt.root_pa == UINT64_MAX &&
	    !root_from_segments(src, it->pt.root_va, &it->pt.root_pa))
		err = kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
					 "VMCOREINFO lacks NUMBER(phys_base), "
					 "so the page tables cannot be found");
	if (err) {
		free(it);
		return err;
	}
	*ret = it;
	return NULL;
}

void kcore_pgtable_iter_destroy(struct kcore_pgtable_iter *it)
{
	if (!it)
		return;
	free(it->empty);
	free(it->table_pa);
	free(it);
}

void kcore_pgtable_iter_record_tables(struct kcore_pgtable_iter *it)
{
	it->record = true;
}

struct kcore_error *
kcore_pgtable_iter_take_tables(struct kcore_pgtable_iter *it, uint64_t **ret,
			       size_t *ret_n)
{
	if (it->record_failed)
		return &kcore_error_nomem;
	*ret = it->table_pa;
	*ret_n = it->ntable_pa;
	it->table_pa = NULL;
	it->ntable_pa = it->table_pa_cap = 0;
	return NULL;
}

static void record_table(struct kcore_pgtable_iter *it, uint64_t pa)
{
	if (it->ntable_pa == it->table_pa_cap) {
		size_t cap = it->table_pa_cap ? 2 * it->table_pa_cap : 64;
		uint64_t *t = realloc(it->table_pa, cap * sizeof(*t));

		if (!t) {
			it->record_failed = true;
			return;
		}
		it->table_pa = t;
		it->table_pa_cap = cap;
	}
	it->table_pa[it->ntable_pa++] = pa;
}

const struct kcore_pgtable *
kcore_pgtable_iter_format(const struct kcore_pgtable_iter *it)
{
	return &it->pt;
}

uint64_t kcore_pgtable_iter_visits(const struct kcore_pgtable_iter *it)
{
	return it->visits;
}

size_t kcore_pgtable_iter_tables(const struct kcore_pgtable_iter *it)
{
	return it->tables;
}

static uint64_t empty_key(uint64_t table, unsigned level)
{
	/* Tables are 4 KiB-aligned: the level fits below the address. */
	return (table & ~0xfffull) | level;
}

static size_t empty_slot(const struct kcore_pgtable_iter *it, uint64_t key)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32) & (it->cap - 1);
}

static bool empty_has(const struct kcore_pgtable_iter *it, uint64_t table,
		      unsigned level)
{
	uint64_t key = empty_key(table, level);

	if (!it->cap)
		return false;
	for (size_t i = empty_slot(it, key);; i = (i + 1) & (it->cap - 1)) {
		if (it->empty[i] == key)
			return true;
		if (!it->empty[i])
			return false;
	}
}

/* Remember an empty table; without memory, only the saving is lost. */
static void empty_add(struct kcore_pgtable_iter *it, uint64_t table,
		      unsigned level)
{
	uint64_t key = empty_key(table, level);

	if (2 * (it->nempty + 1) > it->cap) {
		size_t cap = it->cap ? 2 * it->cap : 64;
		uint64_t *t = calloc(cap, sizeof(*t)), *old = it->empty;
		size_t oldcap = it->cap;

		if (!t)
			return;
		it->empty = t;
		it->cap = cap;
		for (size_t i = 0; i < oldcap; i++) {
			size_t j;

			if (!old[i])
				continue;
			for (j = empty_slot(it, old[i]); t[j];
			     j = (j + 1) & (cap - 1))
				;
			t[j] = old[i];
		}
		free(old);
	}
	for (size_t i = empty_slot(it, key);; i = (i + 1) & (it->cap - 1)) {
		if (it->empty[i] == key)
			return;
		if (!it->empty[i]) {
			it->empty[i] = key;
			it->nempty++;
			return;
		}
	}
}

static unsigned entries(const struct kcore_pgtable *pt, unsigned level)
{
	return level == pt->levels ? pt->top_entries : 512;
}

/*
 * Entry idx of the table at physical address table (level): from the
 * kept copy, read whole when it is another table.  A table that cannot
 * be read whole is read an entry at a time; *ret_missing when not even
 * that.
 */
static struct kcore_error *entry(struct kcore_pgtable_iter *it, uint64_t table,
				 unsigned level, unsigned idx, uint64_t *ret,
				 bool *ret_missing)
{
	struct cached_table *c = &it->cache[level];
	unsigned n = entries(&it->pt, level);
	unsigned char b[8];
	struct kcore_error *err;

	*ret_missing = false;
	if (!c->valid || c->pa != table) {
		c->valid = false;
		err = it->read_paddr(it->src, table, c->e, n * 8ull);
		if (!err) {
			c->valid = true;
			c->pa = table;
			it->tables++;
			if (it->record && level != it->pt.levels)
				record_table(it, table);
		} else {
			kcore_error_destroy(err);
		}
	}
	if (c->valid) {
		*ret = kcore_load((const unsigned char *)&c->e[idx], 8, false);
		return NULL;
	}
	err = it->read_paddr(it->src, table + idx * 8ull, b, 8);
	if (err) {
		/* The root of a live kernel's tables must be readable. */
		if (it->lenient && level == it->pt.levels)
			return err;
		kcore_error_destroy(err);
		*ret_missing = true;
		return NULL;
	}
	*ret = kcore_load(b, 8, false);
	return NULL;
}

/*
 * The first leaf in the table at physical address table (level) that
 * maps an address in [va, last], where the table covers all of them.
 */
static struct kcore_error *scan(struct kcore_pgtable_iter *it, uint64_t table,
				unsigned level, uint64_t va, uint64_t last,
				bool *found, struct kcore_pgtable_leaf *ret)
{
	unsigned shift = 12 + 9 * (level - 1);
	uint64_t size = 1ull << shift;
	unsigned n = entries(&it->pt, level);

	for (;;) {
		uint64_t e = 0, pa = 0, lo = va & ~(size - 1), hi = lo + size;
		struct kcore_error *err;
		enum kcore_pte kind;
		bool missing;

		if (++it->visits > it->budget)
			return kcore_error_create(
				KCORE_ERR_FORMAT, 0, it->src->path,
				"the kernel's page tables: more than %" PRIu64
				" entries read while looking for mapped "
				"addresses (tables that point at each other "
				"over and over)",
				it->budget);
		err = entry(it, table, level,
			    (unsigned)((va >> shift) & (n - 1)), &e, &missing);
		if (err)
			return err;
		if (missing) {
			if (it->lenient)
				return NULL; /* unreadable: nothing mapped */
			return kcore_error_create(
				KCORE_ERR_UNSUPPORTED, 0, it->src->path,
				"cannot translate virtual address 0x%" PRIx64
				" exactly: a page table is not in the dump",
				va);
		}
		kind = it->arch->pte(&it->pt, e, level, &pa);
		if (kind == KCORE_PTE_LEAF) {
			ret->va = lo;
			ret->pa = pa & ~(size - 1);
			ret->size = size;
			*found = true;
			return NULL;
		}
		if (kind == KCORE_PTE_TABLE && level > 1) {
			/* The child's whole table: hi wraps at the top. */
			bool whole = va == lo && last >= hi - 1;

			if (!empty_has(it, pa, level - 1)) {
				err = scan(it, pa, level - 1, va,
					   last < hi - 1 ? last : hi - 1, found,
					   ret);
				if (err || *found)
					return err;
				if (whole)
					empty_add(it, pa, level - 1);
			}
		}
		if (last <= hi - 1)
			break; /* hi - 1: the top of the address space */
		va = hi;
	}
	return NULL;
}

struct kcore_error *kcore_pgtable_iter_next(struct kcore_pgtable_iter *it,
					    uint64_t va, uint64_t end,
					    bool *found,
					    struct kcore_pgtable_leaf *ret)
{
	const struct kcore_pgtable *pt = &it->pt;

	*found = false;
	while (va < end) {
		uint64_t last = end - 1;
		struct kcore_error *err;

		if (va >= pt->hole_lo && va < pt->hole_hi) {
			va = pt->hole_hi; /* no table maps the hole */
			continue;
		}
		if (va < pt->hole_lo && last >= pt->hole_lo)
			last = pt->hole_lo - 1;
		err = scan(it, pt->root_pa, pt->levels, va, last, found, ret);
		if (err || *found || last == end - 1)
			return err;
		va = last + 1;
	}
	return NULL;
}
