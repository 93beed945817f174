// SPDX-License-Identifier: MIT
/*
 * The plan (include/kcoredump/dump.h) as the writers use it: freeing it,
 * its segments by virtual address (ELF) or its RAM by physical address
 * (kdump, LiME, AVML), its excluded ranges looked up, and the names of
 * the exclusion levels.  Below the writers and the dump pipeline, so
 * that the formats do not depend on dump/ (select.c makes plans,
 * exclude.c fills in their excluded ranges).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcoredump/dump.h"
#include "plan.h"

void kcore_plan_destroy(struct kcore_plan *plan)
{
	if (!plan)
		return;
	for (size_t i = 0; i < plan->nlabels; i++)
		free(plan->labels[i]);
	free(plan->labels);
	free(plan->segs);
	free(plan->warning);
	free(plan->excluded);
	free(plan);
}

static int cmp_paddr(const void *a, const void *b)
{
	const struct kcore_plan_segment *x = a, *y = b;

	return x->paddr < y->paddr ? -1 : x->paddr > y->paddr;
}

/* By virtual address; the source's order between equal ones. */
static int cmp_vaddr(const void *a, const void *b)
{
	const struct kcore_plan_segment *x = a, *y = b;

	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	return x->src_segment < y->src_segment	 ? -1
	       : x->src_segment > y->src_segment ? 1
						 : 0;
}

void kcore_plan_sort_virtual(struct kcore_plan *plan)
{
	qsort(plan->segs, plan->nsegs, sizeof(*plan->segs), cmp_vaddr);
}

struct kcore_error *kcore_plan_restrict_physical(struct kcore_plan *plan,
						 uint64_t page_size,
						 size_t *ret_dropped)
{
	size_t n = 0, dropped = 0;

	for (size_t i = 0; i < plan->nsegs; i++) {
		const struct kcore_plan_segment *s = &plan->segs[i];

		/* Kernel text has a physical address too, but its pages are
		 * already in the RAM segments. */
		if (s->cls != KCORE_CLASS_RAM || !s->has_paddr) {
			dropped++;
			continue;
		}
		if (s->paddr % page_size || s->size % page_size)
			return kcore_error_create(
				KCORE_ERR_UNSUPPORTED, 0, NULL,
				"RAM segment at physical 0x%" PRIx64
				"+0x%" PRIx64 " is not page-aligned",
				s->paddr, s->size);
		plan->segs[n++] = *s;
	}
	if (!n)
		return kcore_error_create(
			KCORE_ERR_INVALID, 0, NULL,
			"the selection has no physical RAM segments (%zu "
			"virtual-only segment%s); kdump and LiME hold physical "
			"memory only: use --format elf",
			dropped, dropped == 1 ? "" : "s");
	plan->nsegs = n;
	qsort(plan->segs, n, sizeof(*plan->segs), cmp_paddr);
	for (size_t i = 1; i < n; i++)
		if (plan->segs[i].paddr <
		    plan->segs[i - 1].paddr + plan->segs[i - 1].size)
			return kcore_error_create(
				KCORE_ERR_UNSUPPORTED, 0, NULL,
				"RAM segments overlap at physical 0x%" PRIx64,
				plan->segs[i].paddr);
	*ret_dropped += dropped;
	return NULL;
}

const struct kcore_range *kcore_excluded_after(const struct kcore_plan *plan,
					       uint64_t paddr)
{
	size_t lo = 0, hi = plan->nexcluded;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (plan->excluded[mid].end <= paddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < plan->nexcluded ? &plan->excluded[lo] : NULL;
}

static const struct {
	const char *name;
	unsigned bit;
} names[] = {
	{ "zero", KCORE_EXCLUDE_ZERO },
	{ "cache", KCORE_EXCLUDE_CACHE },
	{ "cache-private", KCORE_EXCLUDE_CACHE_PRIVATE },
	{ "user", KCORE_EXCLUDE_USER },
	{ "free", KCORE_EXCLUDE_FREE },
};

const char *kcore_exclude_names(unsigned level, char *buf, size_t len)
{
	size_t pos = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i].name) + (pos ? 1 : 0);

		if (!(level & names[i].bit))
			continue;
		if (pos + n >= len) /* whole names only */
			break;
		snprintf(buf + pos, len - pos, "%s%s", pos ? "," : "",
			 names[i].name);
		pos += n;
	}
	if (!pos)
		snprintf(buf, len, "none");
	return buf;
}

int kcore_exclude_parse(const char *s)
{
	unsigned level = 0;
	char *end;

	if (!s || !*s)
		return -1;
	if (*s >= '0' && *s <= '9') {
		unsigned long v = strtoul(s, &end, 10);

		return *end || v > KCORE_EXCLUDE_ALL ? -1 : (int)v;
	}
	while (*s) {
		size_t n = strcspn(s, ",");
		bool found = false;

		if (n == 3 && strncmp(s, "all", 3) == 0) {
			level |= KCORE_EXCLUDE_ALL;
			found = true;
		}
		for (size_t i = 0;
		     !found && i < sizeof(names) / sizeof(names[0]); i++) {
			if (strlen(names[i].name) == n &&
			    strncmp(s, names[i].name, n) == 0) {
				level |= names[i].bit;
				found = true;
			}
		}
		if (!found)
			return -1;
		s += n;
		if (*s == ',') {
			s++;
			if (!*s)
				return -1;
		}
	}
	return (int)level;
}

/* The names of the read orders (dump --read-order, the note's read_order=). */
static const char *const order_names[] = {
	[KCORE_READ_ORDER_ADDRESS] = "address",
	[KCORE_READ_ORDER_VOLATILE_FIRST] = "volatile-first",
};

const char *kcore_read_order_name(enum kcore_read_order o)
{
	return o == KCORE_READ_ORDER_ADDRESS ||
			       o == KCORE_READ_ORDER_VOLATILE_FIRST
		       ? order_names[o]
		       : "default";
}

int kcore_read_order_from_name(const char *name)
{
	for (int i = KCORE_READ_ORDER_ADDRESS;
	     name && i <= KCORE_READ_ORDER_VOLATILE_FIRST; i++)
		if (!strcmp(order_names[i], name))
			return i;
	return -1;
}
