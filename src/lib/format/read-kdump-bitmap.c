// SPDX-License-Identifier: MIT
/*
 * kdump's bitmaps: bit counts and searches over a bitmap, and bitmap 2
 * as the reader keeps it, the chunks that have bits set with a rank
 * table (read-kdump.h), so that a page's descriptor is found without
 * counting from the start.
 */
#include <string.h>

#include "read-kdump.h"

uint64_t kdump_count_bits(const unsigned char *bm, uint64_t from, uint64_t to)
{
	uint64_t n = 0;

	while (from < to && (from & 63)) {
		n += bit(bm, from);
		from++;
	}
	for (; to - from >= 64 && from < to; from += 64) {
		uint64_t w;

		memcpy(&w, bm + (from >> 3), 8);
		n += (uint64_t)__builtin_popcountll(w);
	}
	for (; from < to; from++)
		n += bit(bm, from);
	return n;
}

/* The first pfn in [from, to) whose bit equals want, or to. */
uint64_t kdump_find_bit(const unsigned char *bm, uint64_t from, uint64_t to,
			bool want)
{
	while (from < to && (from & 63)) {
		if (bit(bm, from) == want)
			return from;
		from++;
	}
	while (to - from >= 64 && from < to) {
		uint64_t w;

		memcpy(&w, bm + (from >> 3), 8);
		if (!want)
			w = ~w;
		if (w)
			return from + (uint64_t)__builtin_ctzll(w);
		from += 64;
	}
	for (; from < to; from++)
		if (bit(bm, from) == want)
			return from;
	return to;
}

/* The chunk of bitmap 2 at or after pfn (or NULL). */
static const struct bm_chunk *bm2_at(const struct kdump *k, uint64_t pfn)
{
	size_t lo = 0, hi = k->nbm2;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->bm2[mid].first + BM_CHUNK <= pfn)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < k->nbm2 ? &k->bm2[lo] : NULL;
}

bool kdump_bit2(const struct kdump *k, uint64_t pfn)
{
	const struct bm_chunk *c = bm2_at(k, pfn);

	return c && c->first <= pfn && bit(c->bits, pfn - c->first);
}

/* The descriptor index of pfn (set in bitmap 2). */
uint64_t kdump_index2(const struct kdump *k, uint64_t pfn)
{
	const struct bm_chunk *c = bm2_at(k, pfn);
	uint64_t rel, block;

	if (!c || c->first > pfn)
		return c ? c->rank : k->ndesc;
	rel = pfn - c->first;
	block = rel / RANK_BITS;
	return c->rank + c->sub[block] +
	       kdump_count_bits(c->bits, block * RANK_BITS, rel);
}

/* The first pfn in [from, to) whose bit 2 equals want, or to. */
uint64_t kdump_find2(const struct kdump *k, uint64_t from, uint64_t to,
		     bool want)
{
	while (from < to) {
		const struct bm_chunk *c = bm2_at(k, from);
		uint64_t end, r;

		if (!c || c->first >= to)
			return want ? to : from;
		if (c->first > from) {
			if (!want)
				return from;
			from = c->first;
		}
		end = c->first + BM_CHUNK < to ? c->first + BM_CHUNK : to;
		r = kdump_find_bit(c->bits, from - c->first, end - c->first,
				   want);
		if (r < end - c->first)
			return c->first + r;
		from = end;
	}
	return to;
}
