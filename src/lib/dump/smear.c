// SPDX-License-Identifier: MIT
/*
 * The smear check (smear.h).  Memory follows the data: 8 bytes per page
 * read (of the blocks sampled), one block's buffer for the second read.
 * The second read is the only extra pass over the data, on the calling
 * thread, after the dump's own read: its time is the check's phase.
 *
 * verify --live (kcore_smear_live()) counts the same way for a dump made
 * earlier in this boot: the cells its note's time map says were read,
 * compared byte for byte with the live kernel's pages now.
 */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kcoredump/kcore.h"
#include "kcoredump/notes.h"
#include "metanote.h"
#include "read-times.h"
#include "source-impl.h"
#include "smear.h"

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
	/* The last changed page: a run goes on from it. */
	size_t last_seg;
	uint64_t last_end;
	bool any_change;
	size_t changes_cap;
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

static unsigned gap_bucket(double gap)
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

static void count(struct kcore_smear *ret, enum kcore_segment_class cls,
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

/* A changed page of segment si (at vaddr): joined to the run before it
 * when it follows it. */
static void note_change(struct kcore_smear_state *s, struct kcore_smear *ret,
			size_t si, uint64_t vaddr, uint64_t off, uint64_t len,
			double gap)
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
	if (ret->changes_listed == s->changes_cap) {
		size_t cap = s->changes_cap ? 2 * s->changes_cap : 64;
		struct kcore_smear_change *nc =
			realloc(ret->changes, cap * sizeof(*nc));

		if (!nc)
			return;
		ret->changes = nc;
		s->changes_cap = cap;
	}
	ret->changes[ret->changes_listed++] = (struct kcore_smear_change){
		.segment = si,
		.vaddr = vaddr,
		.offset = off,
		.length = len,
		.gap_seconds = gap,
	};
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct kcore_error *kcore_smear_check(struct kcore_smear_state *s,
				      volatile sig_atomic_t *cancel,
				      struct kcore_smear *ret)
{
	uint64_t t0 = mono_ns(), block = 0;
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
		unsigned g = gap_bucket(gap);

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
			count(ret, page_class(s, b->seg, b->off + at), g,
			      changed);
			if (changed)
				note_change(s, ret, b->seg,
					    s->plan->segs[b->seg].vaddr +
						    b->off + at,
					    b->off + at, n, gap);
		}
	}
	free(buf);
	free(now);
	ret->checked = true;
	ret->seconds = (double)(mono_ns() - t0) / 1e9;
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

/* ---- verify --live: a dump of this boot against the live kernel ---- */

/* A segment of the dump, from its note (the time map's segment numbers)
 * and its program headers. */
struct live_seg {
	uint64_t vaddr, size;
	enum kcore_segment_class cls;
	bool known;  /* in the note */
	bool shared; /* its bytes are another segment's (the image) */
	uint64_t paddr;
	bool has_paddr;
	bool in_file; /* its bytes at offset in the dump's file, filesz */
	uint64_t offset, filesz;
};

/* "2026-12-06T12:00:00.123456Z" in ns of CLOCK_REALTIME, or 0. */
static uint64_t parse_utc(const char *s)
{
	struct tm tm = { 0 };
	unsigned us = 0;
	time_t t;

	if (!s ||
	    sscanf(s, "%d-%d-%dT%d:%d:%d.%6uZ", &tm.tm_year, &tm.tm_mon,
		   &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &us) != 7)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	t = timegm(&tm);
	return t < 0 ? 0 : (uint64_t)t * 1000000000ull + us * 1000ull;
}

/* The note's segments: their place, class and whether another's file
 * bytes hold them (the dump copied them from there). */
static struct kcore_error *live_segments(struct kcore_source *d,
					 const struct kcore_metadata *md,
					 struct live_seg **ret, size_t *ret_n)
{
	size_t n = 0;
	struct live_seg *segs;

	for (size_t i = 0; i < md->nfields; i++)
		if (!strcmp(md->fields[i].key, "segment"))
			n++;
	segs = calloc(n ? n : 1, sizeof(*segs));
	if (!segs)
		return &kcore_error_nomem;
	for (size_t i = 0; i < md->nfields; i++) {
		const char *v = md->fields[i].value, *c;
		uint64_t va, size;
		size_t idx;
		char cls[16] = "";

		if (strcmp(md->fields[i].key, "segment") != 0 ||
		    sscanf(v, "%zu vaddr=0x%" SCNx64 " size=0x%" SCNx64, &idx,
			   &va, &size) != 3 ||
		    idx >= n)
			continue;
		c = strstr(v, " class=");
		if (c)
			sscanf(c, " class=%15[a-z]", cls);
		segs[idx] = (struct live_seg){
			.vaddr = va,
			.size = size,
			.known = true,
			.cls = kcore_segment_class_from_name(cls) >= 0
				       ? kcore_segment_class_from_name(cls)
				       : KCORE_CLASS_OTHER,
		};
		for (size_t k = 0; k < kcore_source_nsegments(d); k++) {
			const struct kcore_segment *p =
				kcore_source_segment(d, k);

			if (p->type != PT_LOAD || p->vaddr != va)
				continue;
			segs[idx].paddr = p->paddr;
			segs[idx].has_paddr = p->has_paddr;
			segs[idx].in_file = true;
			segs[idx].offset = p->offset;
			segs[idx].filesz = p->filesz;
			for (size_t o = 0; o < kcore_source_nsegments(d); o++) {
				const struct kcore_segment *q =
					kcore_source_segment(d, o);

				if (o != k && q->type == PT_LOAD && p->filesz &&
				    q->filesz > p->filesz &&
				    q->offset <= p->offset &&
				    p->offset + p->filesz <=
					    q->offset + q->filesz)
					segs[idx].shared = true;
			}
			break;
		}
	}
	*ret = segs;
	*ret_n = n;
	return NULL;
}

/* The class a page counts in: a shared segment's that holds its
 * physical address, else its own (as page_class()). */
static enum kcore_segment_class live_class(const struct live_seg *segs,
					   size_t n, const struct live_seg *s,
					   uint64_t off)
{
	for (size_t i = 0; s->has_paddr && i < n; i++)
		if (segs[i].shared && segs[i].has_paddr &&
		    s->paddr + off >= segs[i].paddr &&
		    s->paddr + off - segs[i].paddr < segs[i].size)
			return segs[i].cls;
	return s->cls;
}

#define LIVE_CHUNK (1u << 20)

/* Bytes [va, va + len) of src into buf; per page, whether it was read
 * (ok[]), page by page past a failure. */
static void live_read(struct kcore_source *src, uint64_t va, unsigned char *buf,
		      uint64_t len, uint64_t page, bool *ok)
{
	struct kcore_error *err = kcore_source_read_vaddr(src, va, buf, len);
	uint64_t pages = (len + page - 1) / page;

	for (uint64_t p = 0; p < pages; p++)
		ok[p] = !err;
	if (!err)
		return;
	kcore_error_destroy(err);
	for (uint64_t p = 0; p < pages; p++) {
		uint64_t n = len - p * page < page ? len - p * page : page;

		err = kcore_source_read_vaddr(src, va + p * page,
					      buf + p * page, n);
		ok[p] = !err;
		kcore_error_destroy(err);
	}
}

/* The dump's bytes [va, va + len) of seg: its file's holes (zeros) are
 * not read, only its data runs, page by page past a failure. */
static void dump_read(struct kcore_source *d, const struct live_seg *seg,
		      uint64_t va, unsigned char *buf, uint64_t len,
		      uint64_t page, bool *ok)
{
	uint64_t at = 0, rel = va - seg->vaddr;

	if (!seg->in_file || !kcore_source_knows_holes(d)) {
		live_read(d, va, buf, len, page, ok);
		return;
	}
	memset(buf, 0, len);
	for (uint64_t p = 0; p * page < len; p++)
		ok[p] = true;
	while (at < len && rel + at < seg->filesz) {
		uint64_t end =
			rel + len < seg->filesz ? rel + len : seg->filesz;
		uint64_t data, data_end;
		struct kcore_error *err = kcore_source_next_data(
			d, seg->offset + rel + at, seg->offset + end, &data,
			&data_end);

		if (err) { /* cannot tell: read the rest */
			kcore_error_destroy(err);
			data = seg->offset + rel + at;
			data_end = seg->offset + end;
		}
		if (data >= seg->offset + end)
			break;
		/* Whole pages of the chunk (holes and data are pages). */
		uint64_t a = (data - seg->offset - rel) / page * page;
		uint64_t b = data_end - seg->offset - rel;

		b = b > len ? len : (b + page - 1) / page * page;
		if (b > len)
			b = len;
		live_read(d, va + a, buf + a, b - a, page, ok + a / page);
		at = b;
	}
}

/* One cell of the time map, read from both and compared page by page. */
static void live_cell(struct kcore_smear_state *s, struct kcore_source *d,
		      struct kcore_source *live, const struct live_seg *segs,
		      size_t nsegs, size_t si, uint64_t off, uint64_t len,
		      double gap, bool skip_zero, unsigned char *a,
		      unsigned char *b, bool *aok, bool *bok,
		      struct kcore_smear *ret)
{
	const struct live_seg *seg = &segs[si];
	unsigned g = gap_bucket(gap);

	if (off >= seg->size)
		return;
	if (len > seg->size - off)
		len = seg->size - off;
	for (uint64_t at = 0; at < len; at += LIVE_CHUNK) {
		uint64_t n = len - at < LIVE_CHUNK ? len - at : LIVE_CHUNK;
		uint64_t va = seg->vaddr + off + at;

		dump_read(d, seg, va, a, n, s->page, aok);
		live_read(live, va, b, n, s->page, bok);
		ret->bytes_read += n;
		for (uint64_t p = 0; p * s->page < n; p++) {
			uint64_t o = p * s->page;
			uint64_t m = n - o < s->page ? n - o : s->page;
			bool changed;

			if (!aok[p] || (skip_zero && kcore_is_zero(a + o, m)))
				continue;
			if (!bok[p]) {
				ret->pages_unreadable++;
				continue;
			}
			changed = memcmp(a + o, b + o, m) != 0;
			count(ret, live_class(segs, nsegs, seg, off + at + o),
			      g, changed);
			if (changed)
				note_change(s, ret, si, va + o, off + at + o, m,
					    gap);
		}
	}
}

/* The dump's metadata note, decoded: *ret (its caller deinits it). */
static struct kcore_error *dump_metadata(struct kcore_source *d,
					 const char *path,
					 struct kcore_metadata *ret)
{
	for (size_t i = 0; i < kcore_source_nnotes(d); i++) {
		const struct kcore_note *n = kcore_source_note(d, i);

		if (!strcmp(n->name, KCORE_META_NOTE_NAME))
			return kcore_note_metadata(d, n, ret);
	}
	return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, path,
				  "has no kcoredump metadata note: not a "
				  "kcoredump dump of the live kernel");
}

/* The dump is of this boot: its note's boot_id is this one's. */
static struct kcore_error *same_boot(const struct kcore_metadata *md,
				     const char *path, char boot[64])
{
	const char *was = kcore_metadata_get(md, "boot_id");

	if (!was)
		return kcore_error_create(
			KCORE_ERR_UNSUPPORTED, 0, path,
			"its note has no boot ID: not a dump of the live "
			"kernel, or made before kcoredump recorded one");
	if (!kcore_boot_id(boot))
		return kcore_error_create(KCORE_ERR_OS, 0,
					  "/proc/sys/kernel/random/boot_id",
					  "cannot read this boot's ID");
	if (strcmp(was, boot) != 0)
		return kcore_error_create(
			KCORE_ERR_UNSUPPORTED, 0, path,
			"is a dump of another boot (boot ID %.40s; this boot "
			"is %s): verify --live compares a dump of this boot "
			"only",
			was, boot);
	if (!kcore_metadata_get(md, "read_time_grain"))
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, path,
					  "has no time map in its note");
	return NULL;
}

struct kcore_error *kcore_smear_live(const char *dump_path,
				     const char *live_path,
				     volatile sig_atomic_t *cancel,
				     struct kcore_smear *ret, char boot[64])
{
	struct kcore_smear_state s = { .page = 4096 };
	struct kcore_source *d = NULL, *live = NULL;
	struct kcore_metadata md = { 0 };
	struct live_seg *segs = NULL;
	unsigned char *a = NULL, *b = NULL;
	bool *aok = NULL, *bok = NULL, skip_zero;
	uint64_t t0 = mono_ns(), read_start;
	size_t nsegs = 0;
	struct kcore_error *err;

	memset(ret, 0, sizeof(*ret));
	boot[0] = '\0';
	err = kcore_source_open(dump_path, NULL, &d);
	if (!err)
		err = dump_metadata(d, dump_path, &md);
	if (!err)
		err = same_boot(&md, dump_path, boot);
	if (!err)
		err = kcore_source_open(live_path ? live_path : "/proc/kcore",
					NULL, &live);
	if (!err)
		err = live_segments(d, &md, &segs, &nsegs);
	if (err)
		goto out;
	if (kcore_source_info(d)->page_size)
		s.page = kcore_source_info(d)->page_size;
	a = malloc(LIVE_CHUNK);
	b = malloc(LIVE_CHUNK);
	aok = malloc(LIVE_CHUNK / 512 * sizeof(*aok));
	bok = malloc(LIVE_CHUNK / 512 * sizeof(*bok));
	if (!a || !b || !aok || !bok) {
		err = &kcore_error_nomem;
		goto out;
	}
	ret->fraction = 1;
	ret->live = kcore_source_info(live)->kind == KCORE_SOURCE_LIVE_KCORE;
	read_start = parse_utc(kcore_metadata_get(&md, "read_start"));
	/* Zero pages of a dump that left pages out may be the ones it
	 * excluded: not compared. */
	skip_zero = kcore_metadata_get(&md, "exclude") != NULL;
	for (size_t i = 0; i < md.nfields; i++) {
		uint64_t off, len, start_us, end_us, now;
		size_t si;
		double gap;

		if (cancel && *cancel)
			break;
		if (strcmp(md.fields[i].key, "read_time") != 0 ||
		    sscanf(md.fields[i].value,
			   "segment=%zu offset=0x%" SCNx64 " length=0x%" SCNx64
			   " start_us=%" SCNu64 " end_us=%" SCNu64,
			   &si, &off, &len, &start_us, &end_us) != 5 ||
		    si >= nsegs || !segs[si].known || segs[si].shared)
			continue;
		now = (uint64_t)time(NULL) * 1000000000ull;
		gap = read_start && now > read_start
			      ? (double)(now - read_start) / 1e9 -
					(double)start_us / 1e6
			      : 0;
		live_cell(&s, d, live, segs, nsegs, si, off, len,
			  gap > 0 ? gap : 0, skip_zero, a, b, aok, bok, ret);
	}
	ret->checked = true;
	ret->seconds = (double)(mono_ns() - t0) / 1e9;
	if (cancel && *cancel)
		err = kcore_error_create(KCORE_ERR_INTERRUPTED, 0, NULL,
					 "interrupted while comparing with "
					 "the live kernel");
out:
	free(a);
	free(b);
	free(aok);
	free(bok);
	free(segs);
	kcore_metadata_deinit(&md);
	kcore_source_destroy(live);
	kcore_source_destroy(d);
	if (err) {
		free(ret->changes);
		ret->changes = NULL;
	}
	return err;
}
