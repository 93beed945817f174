// SPDX-License-Identifier: MIT
/*
 * The smear check (smear.h).  Memory follows the data: 8 bytes per page
 * read (of the blocks sampled), one block's buffer for the second read.
 * The second read is the only extra pass over the data, on the calling
 * thread, after the dump's own read: its time is the check's phase.
 *
 * verify --live (smear-live.c) counts the same way, through the tally
 * here (smear-tally.h).
 */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kcoredump/kcore.h"
#include "kcoredump/notes.h"
#include "grow.h"
#include "metanote.h"
#include "read-times.h"
#include "source-impl.h"
#include "smear.h"
#include "smear-tally.h"

const double kcore_smear_gap_limits[KCORE_SMEAR_GAPS - 1] = { 1, 10, 60, 600 };

struct smear_block {
	size_t seg;
	uint64_t off, len;
	uint64_t t;	/* kcore_read_times_now() before its read */
	uint64_t *hash; /* per page; 0: not read (hole, unreadable) */
};

struct kcore_smear_state {
	struct kcore_source *src;
	const struct kcore_plan *plan;
	double fraction;
	uint64_t page;
	struct smear_block *blocks;
	size_t nblocks, cap;
	uint64_t seen; /* blocks offered, sampled or not */
	uint64_t **slot_hash;
	size_t slots;
	size_t *shared, nshared; /* the plan's shared segments */
	struct smear_tally tally;
	bool nomem;
};

/* 64 bits of a page: four lanes of multiply-xorshift over 8-byte words
 * (each step a bijection, so one changed word always changes its lane),
 * never 0. */
static uint64_t page_hash(const unsigned char *p, size_t n)
{
	uint64_t l[4] = { 0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
			  0x165667b19e3779f9ull, 0x27d4eb2f165667c5ull };
	const uint64_t m = 0xff51afd7ed558ccdull;
	size_t i = 0;
	uint64_t h;

	for (; i + 32 <= n; i += 32)
		for (int k = 0; k < 4; k++) {
			uint64_t w;

			memcpy(&w, p + i + 8 * k, 8);
			l[k] = (l[k] ^ w) * m;
			l[k] ^= l[k] >> 29;
		}
	for (; i < n; i++) {
		l[i & 3] = (l[i & 3] ^ p[i]) * m;
		l[i & 3] ^= l[i & 3] >> 29;
	}
	h = (uint64_t)n;
	for (int k = 0; k < 4; k++) {
		h ^= l[k];
		h *= 0xc4ceb9fe1a85ec53ull;
		h ^= h >> 33;
	}
	return h ? h : 1;
}

struct kcore_error *kcore_smear_start(struct kcore_source *src,
				      const struct kcore_plan *plan,
				      double fraction, uint64_t page,
				      size_t slots,
				      struct kcore_smear_state **ret)
{
	struct kcore_smear_state *s = calloc(1, sizeof(*s));

	if (!s)
		return &kcore_error_nomem;
	s->src = src;
	s->plan = plan;
	s->fraction = fraction > 1 ? 1 : fraction;
	s->page = page;
	s->slots = slots;
	s->slot_hash = calloc(slots ? slots : 1, sizeof(*s->slot_hash));
	s->shared = calloc(plan->nsegs ? plan->nsegs : 1, sizeof(*s->shared));
	if (!s->slot_hash || !s->shared) {
		kcore_smear_destroy(s);
		return &kcore_error_nomem;
	}
	for (size_t i = 0; i < plan->nsegs; i++)
		if (plan->segs[i].shared)
			s->shared[s->nshared++] = i;
	*ret = s;
	return NULL;
}

/* Whether block k of the dump is sampled: about fraction of them, spread
 * evenly. */
static bool sampled(const struct kcore_smear_state *s, uint64_t k)
{
	return s->fraction >= 1 || (uint64_t)((double)(k + 1) * s->fraction) >
					   (uint64_t)((double)k * s->fraction);
}

void kcore_smear_block(struct kcore_smear_state *s, size_t slot, size_t seg,
		       uint64_t off, uint64_t len, bool shared, uint64_t t)
{
	struct smear_block *b;

	if (slot >= s->slots)
		return;
	s->slot_hash[slot] = NULL;
	if (shared || s->nomem || !sampled(s, s->seen++))
		return;
	if (s->nblocks == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct smear_block *nb = realloc(s->blocks, cap * sizeof(*nb));

		if (!nb) {
			s->nomem = true;
			return;
		}
		s->blocks = nb;
		s->cap = cap;
	}
	b = &s->blocks[s->nblocks];
	*b = (struct smear_block){ .seg = seg, .off = off, .len = len };
	b->hash = calloc((len + s->page - 1) / s->page, sizeof(*b->hash));
	if (!b->hash) {
		s->nomem = true;
		return;
	}
	b->t = t;
	s->nblocks++;
	s->slot_hash[slot] = b->hash;
}

void kcore_smear_hash(struct kcore_smear_state *s, const struct kcore_block *b)
{
	uint64_t *h = b->slot < s->slots ? s->slot_hash[b->slot] : NULL;

	for (uint64_t p = 0; h && p < b->pages; p++) {
		uint64_t at = p * s->page;
		uint64_t n = b->len - at < s->page ? b->len - at : s->page;

		h[p] = b->hole[p] || (b->bad && b->bad[p])
			       ? 0
			       : page_hash(b->buf + at, n);
	}
}

/* The class a page of segment seg at offset off counts in: a shared
 * segment's that describes it, else its segment's. */
static enum kcore_segment_class page_class(const struct kcore_smear_state *s,
					   size_t seg, uint64_t off)
{
	for (size_t i = 0; i < s->nshared; i++) {
		const struct kcore_plan_segment *t =
			&s->plan->segs[s->shared[i]];

		if (t->share_seg == seg && off >= t->share_off &&
		    off - t->share_off < t->size)
			return t->cls;
	}
	return s->plan->segs[seg].cls;
}

unsigned kcore_smear_gap_bucket(double gap)
{
	unsigned g = 0;

	while (g < KCORE_SMEAR_GAPS - 1 && gap >= kcore_smear_gap_limits[g])
		g++;
	return g;
}

/* Pages [p0, p1) of block b read again into buf; a page that cannot be
 * read is marked 0 in now[]. */
static void reread(struct kcore_smear_state *s, const struct smear_block *b,
		   unsigned char *buf, uint64_t p0, uint64_t p1, uint64_t *now,
		   struct kcore_smear *ret)
{
	const struct kcore_plan_segment *seg = &s->plan->segs[b->seg];
	uint64_t a = b->off + p0 * s->page;
	uint64_t e = b->off + (p1 * s->page < b->len ? p1 * s->page : b->len);

	while (a < e) {
		uint64_t end, avail, n, done = 0;
		uint64_t at = kcore_extent_source(seg, a, &end, &avail);
		struct kcore_error *err;
		size_t got;

		n = (end < e ? end : e) - a;
		err = kcore_source_pread_partial(s->src, buf + (a - b->off), n,
						 at, &got);
		ret->bytes_read += n;
		if (err) {
			kcore_error_destroy(err);
			done = got - got % s->page;
			/* Page by page past the failure. */
			for (uint64_t q = a + done; q < a + n; q += s->page) {
				uint64_t m = a + n - q < s->page ? a + n - q
								 : s->page;

				err = kcore_source_pread_partial(
					s->src, buf + (q - b->off), m,
					at + (q - a), &got);
				if (err) {
					kcore_error_destroy(err);
					now[(q - b->off) / s->page] = 0;
				}
			}
		}
		a += n;
	}
}

void kcore_smear_count(struct kcore_smear *ret, enum kcore_segment_class cls,
		       unsigned gap, bool changed)
{
	ret->all.pages++;
	ret->by_class[cls].pages++;
	ret->by_gap[gap].pages++;
	if (!changed)
		return;
	ret->all.changed++;
	ret->by_class[cls].changed++;
	ret->by_gap[gap].changed++;
}

void kcore_smear_note_change(struct smear_tally *s, struct kcore_smear *ret,
			     size_t si, uint64_t vaddr, uint64_t off,
			     uint64_t len, double gap)
{
	struct kcore_smear_change *c =
		ret->changes_listed ? &ret->changes[ret->changes_listed - 1]
				    : NULL;
	bool follows = s->any_change && s->last_seg == si && s->last_end == off;

	s->any_change = true;
	s->last_seg = si;
	s->last_end = off + len;
	if (follows) {
		if (c && ret->changes_listed == ret->nchanges)
			c->length += len;
		return;
	}
	ret->nchanges++;
	if (ret->changes_listed + 1 != ret->nchanges)
		return; /* out of memory once: counted only */
	if (kcore_grow2((void **)&ret->changes, sizeof(*ret->changes), NULL, 0,
			ret->changes_listed, &s->changes_cap))
		return;
	ret->changes[ret->changes_listed++] = (struct kcore_smear_change){
		.segment = si,
		.vaddr = vaddr,
		.offset = off,
		.length = len,
		.gap_seconds = gap,
	};
}

uint64_t kcore_smear_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct kcore_error *kcore_smear_check(struct kcore_smear_state *s,
				      volatile sig_atomic_t *cancel,
				      struct kcore_smear *ret)
{
	uint64_t t0 = kcore_smear_mono_ns(), block = 0;
	unsigned char *buf = NULL;
	uint64_t *now = NULL;

	memset(ret, 0, sizeof(*ret));
	if (s->nomem)
		return &kcore_error_nomem;
	ret->fraction = s->fraction;
	ret->live = kcore_source_info(s->src)->kind == KCORE_SOURCE_LIVE_KCORE;
	for (size_t i = 0; i < s->nblocks; i++)
		if (s->blocks[i].len > block)
			block = s->blocks[i].len;
	if (block) {
		buf = malloc(block);
		now = malloc((block + s->page - 1) / s->page * sizeof(*now));
		if (!buf || !now) {
			free(buf);
			free(now);
			return &kcore_error_nomem;
		}
	}
	for (size_t i = 0; i < s->nblocks; i++) {
		const struct smear_block *b = &s->blocks[i];
		uint64_t pages = (b->len + s->page - 1) / s->page, p = 0;
		double gap = (double)(kcore_read_times_now() - b->t) / 1e9;
		unsigned g = kcore_smear_gap_bucket(gap);

		if (cancel && *cancel)
			break;
		memcpy(now, b->hash, pages * sizeof(*now));
		/* Runs of pages read the first time, read again. */
		while (p < pages) {
			uint64_t q;

			if (!b->hash[p]) {
				p++;
				continue;
			}
			for (q = p; q < pages && b->hash[q]; q++)
				;
			reread(s, b, buf, p, q, now, ret);
			p = q;
		}
		for (p = 0; p < pages; p++) {
			uint64_t at = p * s->page;
			uint64_t n =
				b->len - at < s->page ? b->len - at : s->page;
			bool changed;

			if (!b->hash[p])
				continue;
			if (!now[p]) {
				ret->pages_unreadable++;
				continue;
			}
			changed = page_hash(buf + at, n) != b->hash[p];
			kcore_smear_count(ret,
					  page_class(s, b->seg, b->off + at), g,
					  changed);
			if (changed)
				kcore_smear_note_change(
					&s->tally, ret, b->seg,
					s->plan->segs[b->seg].vaddr + b->off +
						at,
					b->off + at, n, gap);
		}
	}
	free(buf);
	free(now);
	ret->checked = true;
	ret->seconds = (double)(kcore_smear_mono_ns() - t0) / 1e9;
	if (cancel && *cancel)
		return kcore_error_create(KCORE_ERR_INTERRUPTED, 0, NULL,
					  "interrupted while checking the "
					  "smear");
	return NULL;
}

void kcore_smear_destroy(struct kcore_smear_state *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nblocks; i++)
		free(s->blocks[i].hash);
	free(s->blocks);
	free(s->slot_hash);
	free(s->shared);
	free(s);
}
