// SPDX-License-Identifier: MIT
/*
 * The stream reader's prefetch (stream-internal.h): frames decoded and
 * packed by another thread, then inserted into the reader's cache.
 */
#include <errno.h>
#include <inttypes.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "kcoredump/dump.h"
#include "stream-reader.h"

struct kcore_prefetch {
	struct frame_dec dec;
	unsigned char *packed; /* the frame decoded last, packed */
	size_t packed_len, len;
	/* publish: the system's page size, and the page a frame's end cut,
	 * its bytes up to carry_end (0: none), for the frame after it. */
	size_t page;
	unsigned char *carry;
	uint64_t carry_page, carry_end;
};

struct kcore_error *kcore_prefetch_create(struct kcore_prefetch **ret)
{
	struct kcore_prefetch *p = calloc(1, sizeof(*p));
	long sz = sysconf(_SC_PAGESIZE);

	*ret = NULL;
	if (!p)
		return &kcore_error_nomem;
	p->page = sz >= (long)PACK_PAGE && sz <= (1l << 20) ? (size_t)sz
							    : PACK_PAGE;
	p->carry = malloc(p->page);
	if (!p->carry) {
		free(p);
		return &kcore_error_nomem;
	}
	*ret = p;
	return NULL;
}

void kcore_prefetch_destroy(struct kcore_prefetch *p)
{
	if (!p)
		return;
	sr_dec_deinit(&p->dec);
	free(p->packed);
	free(p->carry);
	free(p);
}

bool kcore_istream_prefetch_fits(const struct kcore_istream *s)
{
	/* Frames are packed in the cache: less than this, never more. */
	return s->seekable && s->method == KCORE_COMPRESS_ZSTD &&
	       kcore_istream_data_frame_bytes(s) <= s->cache_limit;
}

bool kcore_istream_prefetch_next(struct kcore_istream *s, uint64_t *frame,
				 bool all)
{
	if (!all && s->cache_bytes >= s->cache_limit)
		return false;
	for (uint64_t i = *frame; i < s->nframes; i++) {
		uint64_t d, e;

		if (!all && s->slot_of && s->slot_of[i])
			continue;
		kcore_istream_next_data(s, s->d_off[i], s->d_off[i + 1], &d,
					&e);
		if (d < s->d_off[i + 1]) {
			*frame = i;
			return true;
		}
	}
	return false;
}

struct kcore_error *kcore_istream_prefetch_decode(struct kcore_istream *s,
						  struct kcore_prefetch *p,
						  uint64_t i, bool keep)
{
	size_t dsize = (size_t)(s->d_off[i + 1] - s->d_off[i]);
	struct kcore_error *err = sr_zstd_decode(s, &p->dec, i);

	free(p->packed);
	p->packed = NULL;
	p->len = dsize;
	if (err || !keep)
		return err;
	err = sr_pack_plan(&p->dec, dsize, &p->packed_len);
	if (err)
		return err;
	p->packed = malloc(p->packed_len ? p->packed_len : 1);
	if (!p->packed)
		return &kcore_error_nomem;
	sr_pack_copy(&p->dec, dsize, p->packed);
	return NULL;
}

bool kcore_istream_prefetch_insert(struct kcore_istream *s,
				   struct kcore_prefetch *p, uint64_t i)
{
	size_t need = p->packed_len ? p->packed_len : 1;
	struct cache_slot *c;

	if (!sr_slot_index(s))
		return false;
	if (s->slot_of[i]) /* a reader decoded it meanwhile */
		return true;
	if (s->nslots >= MAX_CACHE_SLOTS ||
	    s->cache_bytes + need > s->cache_limit)
		return false; /* never push out what a reader touched */
	c = sr_new_slot(s);
	if (!c)
		return false;
	*c = (struct cache_slot){ .frame = i,
				  .start = s->d_off[i],
				  .len = p->len,
				  .buf = p->packed,
				  .cap = need,
				  .used = ++s->clock };
	p->packed = NULL;
	s->cache_bytes += need;
	s->slot_of[i] = (uint32_t)(c - s->slots) + 1;
	s->decoded++;
	return true;
}

/* The pages of [from, to) (page-aligned offsets) at buf that are not all
 * zeros, in runs, to fn. */
static void publish_pages(const unsigned char *buf, uint64_t from, uint64_t to,
			  size_t page, kcore_prefetch_fn *fn, void *arg)
{
	uint64_t run = to;

	for (uint64_t o = from; o < to; o += page) {
		bool zero = kcore_is_zero(buf + (o - from), page);

		if (!zero && run == to)
			run = o;
		if (zero && run != to) {
			fn(arg, run, buf + (run - from), (size_t)(o - run));
			run = to;
		}
	}
	if (run != to)
		fn(arg, run, buf + (run - from), (size_t)(to - run));
}

/* The carried page to fn unless all zeros (short at the stream's end). */
static void flush_carry(const struct kcore_istream *s, struct kcore_prefetch *p,
			kcore_prefetch_fn *fn, void *arg)
{
	size_t n = s->total - p->carry_page < p->page
			   ? (size_t)(s->total - p->carry_page)
			   : p->page;

	if (p->carry_end && !kcore_is_zero(p->carry, n))
		fn(arg, p->carry_page, p->carry, n);
	p->carry_end = 0;
}

/* len bytes at o, within the page at pg, into the carried page.  Bytes of
 * that page not given are zeros: the prefetch publishes every frame with
 * data in order, so what it skipped before o is a frame without any. */
static void carry_add(struct kcore_prefetch *p, uint64_t pg, uint64_t o,
		      const unsigned char *b, size_t len)
{
	if (!p->carry_end || p->carry_page != pg) {
		memset(p->carry, 0, p->page);
		p->carry_page = pg;
	}
	memcpy(p->carry + (o - pg), b, len);
	p->carry_end = o + len;
}

void kcore_istream_prefetch_publish(const struct kcore_istream *s,
				    struct kcore_prefetch *p, uint64_t frame,
				    kcore_prefetch_fn *fn, void *arg)
{
	const unsigned char *b = p->dec.fbuf;
	uint64_t start = s->d_off[frame], end = start + p->len;
	uint64_t pg = start / p->page * p->page;
	uint64_t first = (start + p->page - 1) / p->page * p->page;
	uint64_t last = end / p->page * p->page;
	uint64_t head_end = end < first ? end : first;

	/* The page cache takes whole pages of the file, and frames need not
	 * start on one (a header frame of any length comes first): the page
	 * a frame's start cuts is finished with the frame before it, the
	 * page its end cuts with the frame after it. */
	if (p->carry_end && p->carry_page != pg)
		flush_carry(s, p, fn, arg); /* the rest of it: zeros */
	if (start < head_end) {
		carry_add(p, pg, start, b, (size_t)(head_end - start));
		if (head_end == first)
			flush_carry(s, p, fn, arg);
	}
	if (end > first) {
		publish_pages(b + (first - start), first, last, p->page, fn,
			      arg);
		if (last < end)
			carry_add(p, last, last, b + (last - start),
				  (size_t)(end - last));
	}
	if (end == s->total) /* the file's last page, short */
		flush_carry(s, p, fn, arg);
}

void kcore_istream_prefetch_flush(const struct kcore_istream *s,
				  struct kcore_prefetch *p,
				  kcore_prefetch_fn *fn, void *arg)
{
	flush_carry(s, p, fn, arg);
}
