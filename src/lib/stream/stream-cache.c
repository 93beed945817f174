// SPDX-License-Identifier: MIT
/*
 * The stream reader's frame cache: decoded frames (zstd) and blocks (xz)
 * kept packed, least recently used first out, and the helpers every part
 * of the reader uses (reading the file, format errors, finding a frame).
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

struct kcore_error *sr_format_error(const struct kcore_istream *s,
				    uint64_t offset, const char *what)
{
	return kcore_error_create_at(KCORE_ERR_FORMAT, 0, s->path, offset, "%s",
				     what);
}

/* Read a whole range of the file (which is known to hold it). */
struct kcore_error *sr_file_read(const struct kcore_istream *s, void *buf,
				 size_t len, uint64_t offset)
{
	return kcore_pread_all(NULL, s->fd, s->path, buf, len, offset, NULL);
}

/* The first frame i whose data ends after offset (offset < total). */
uint64_t sr_zstd_find_frame(const struct kcore_istream *s, uint64_t offset)
{
	uint64_t lo = 0, hi = s->nframes;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (s->d_off[mid + 1] <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct kcore_error *sr_grow(unsigned char **buf, size_t *cap, size_t len)
{
	unsigned char *p;

	if (len <= *cap)
		return NULL;
	p = realloc(*buf, len);
	if (!p)
		return &kcore_error_nomem;
	*buf = p;
	*cap = len;
	return NULL;
}

/* Forget slot k's frame (the slot stays, empty). */
static void slot_forget(struct kcore_istream *s, struct cache_slot *c)
{
	if (c->frame != UINT64_MAX && s->slot_of)
		s->slot_of[c->frame] = 0;
	c->frame = UINT64_MAX;
}

/*
 * The buffer frames are decoded into, reused: aligned to 2 MiB with
 * transparent huge pages asked for when it is large, so growing it takes
 * a few page faults, not one per 4 KiB.
 */
#define HUGE_BYTES ((size_t)2 << 20)

/* The bytes frame_alloc() takes for size. */
static size_t frame_bytes(size_t size)
{
	return size < HUGE_BYTES
		       ? size
		       : (size + HUGE_BYTES - 1) / HUGE_BYTES * HUGE_BYTES;
}

static unsigned char *frame_alloc(size_t size)
{
	void *p = NULL;

	if (size < HUGE_BYTES)
		return malloc(size);
	if (posix_memalign(&p, HUGE_BYTES, frame_bytes(size)))
		return NULL;
#ifdef MADV_HUGEPAGE
	(void)madvise(p, frame_bytes(size), MADV_HUGEPAGE);
#endif
	return p;
}

/* s->slot_of, made on first use: false when out of memory. */
bool sr_slot_index(struct kcore_istream *s)
{
	if (!s->slot_of && s->nframes)
		s->slot_of = calloc(s->nframes, sizeof(*s->slot_of));
	return s->slot_of || !s->nframes;
}

/* A new empty slot at the end of s->slots, or NULL when out of memory. */
struct cache_slot *sr_new_slot(struct kcore_istream *s)
{
	if (s->nslots == s->slots_cap) {
		unsigned cap = s->slots_cap ? 2 * s->slots_cap : 16;
		struct cache_slot *n = realloc(s->slots, cap * sizeof(*n));

		if (!n)
			return NULL;
		s->slots = n;
		s->slots_cap = cap;
	}
	s->slots[s->nslots] = (struct cache_slot){ .frame = UINT64_MAX };
	return &s->slots[s->nslots++];
}

/*
 * A slot for a packed frame of bytes bytes: a new one while the cache
 * has room, else the least recently used (others are dropped until the
 * frame fits in the limit; one frame always fits).  Marked empty until
 * the decode succeeds.  Eviction scans the slots: it comes with a decode.
 */
static struct kcore_error *take_slot(struct kcore_istream *s, size_t bytes)
{
	struct cache_slot *c = NULL;
	size_t need = bytes ? bytes : 1;

	if (!sr_slot_index(s))
		return &kcore_error_nomem;
	for (;;) {
		struct cache_slot *lru = NULL;

		if (s->nslots < MAX_CACHE_SLOTS &&
		    (!s->nslots || s->cache_bytes + need <= s->cache_limit)) {
			c = sr_new_slot(s);
			if (!c)
				return &kcore_error_nomem;
			break;
		}
		for (unsigned k = 0; k < s->nslots; k++) {
			struct cache_slot *x = &s->slots[k];

			if (!lru || x->used < lru->used)
				lru = x;
		}
		/* Drop the least recently used; reuse it if it is the only
		 * one or the frame fits then. */
		slot_forget(s, lru);
		if (s->nslots == 1 ||
		    s->cache_bytes - lru->cap + need <= s->cache_limit) {
			c = lru;
			break;
		}
		s->cache_bytes -= lru->cap;
		free(lru->buf);
		*lru = s->slots[--s->nslots];
		if (lru->frame != UINT64_MAX && lru < s->slots + s->nslots)
			s->slot_of[lru->frame] = (uint32_t)(lru - s->slots) + 1;
	}
	if (c->cap < need) {
		/* The old contents are not needed: the frame is packed. */
		unsigned char *p = malloc(need);

		if (!p)
			return &kcore_error_nomem;
		free(c->buf);
		s->cache_bytes += need - c->cap;
		c->buf = p;
		c->cap = need;
	}
	c->used = ++s->clock;
	s->cur = c;
	s->decoded++;
	return NULL;
}

/* d->fbuf, for a frame of dsize bytes. */
struct kcore_error *sr_dec_frame_buffer(struct frame_dec *d, size_t dsize)
{
	unsigned char *p;

	if (dsize <= d->fbuf_cap)
		return NULL;
	p = frame_alloc(dsize);
	if (!p)
		return &kcore_error_nomem;
	free(d->fbuf);
	d->fbuf = p;
	d->fbuf_cap = frame_bytes(dsize);
	return NULL;
}

void sr_dec_deinit(struct frame_dec *d)
{
	ZSTD_freeDCtx(d->dctx);
	free(d->cbuf);
	free(d->fbuf);
	free(d->map);
}

static size_t pack_map_bytes(size_t len)
{
	size_t pages = (len + PACK_PAGE - 1) / PACK_PAGE;

	return (pages * sizeof(uint32_t) + 15) & ~(size_t)15;
}

/*
 * The page map of the len bytes decoded in d->fbuf (each page looked at
 * once), and the bytes their packed form takes in *ret_bytes.
 */
struct kcore_error *sr_pack_plan(struct frame_dec *d, size_t len,
				 size_t *ret_bytes)
{
	size_t pages = (len + PACK_PAGE - 1) / PACK_PAGE;

	if (pages > d->map_cap) {
		uint32_t *m = realloc(d->map, pages * sizeof(*m));

		if (!m)
			return &kcore_error_nomem;
		d->map = m;
		d->map_cap = pages;
	}
	d->stored = 0;
	for (size_t i = 0; i < pages; i++) {
		size_t n = len - i * PACK_PAGE < PACK_PAGE ? len - i * PACK_PAGE
							   : PACK_PAGE;

		d->map[i] = kcore_is_zero(d->fbuf + i * PACK_PAGE, n)
				    ? 0
				    : (uint32_t)++d->stored;
	}
	*ret_bytes = pack_map_bytes(len) + d->stored * PACK_PAGE;
	return NULL;
}

/* The packed form of the frame sr_pack_plan() looked at, into out. */
void sr_pack_copy(const struct frame_dec *d, size_t len, unsigned char *out)
{
	size_t pages = (len + PACK_PAGE - 1) / PACK_PAGE;
	size_t map_bytes = pack_map_bytes(len);

	memcpy(out, d->map, pages * sizeof(*d->map));
	memset(out + pages * sizeof(*d->map), 0,
	       map_bytes - pages * sizeof(*d->map));
	for (size_t i = 0; i < pages; i++) {
		size_t n = len - i * PACK_PAGE < PACK_PAGE ? len - i * PACK_PAGE
							   : PACK_PAGE;

		if (d->map[i])
			memcpy(out + map_bytes +
				       (size_t)(d->map[i] - 1) * PACK_PAGE,
			       d->fbuf + i * PACK_PAGE, n);
	}
}

/* Packs the frame of len bytes decoded in s->dec into a slot (s->cur). */
struct kcore_error *sr_pack_frame(struct kcore_istream *s, size_t len)
{
	size_t bytes;
	struct kcore_error *err = sr_pack_plan(&s->dec, len, &bytes);

	if (!err)
		err = take_slot(s, bytes);
	if (!err)
		sr_pack_copy(&s->dec, len, s->cur->buf);
	return err;
}

/* Copies n bytes at offset rel of packed slot c to out. */
void sr_slot_copy(const struct cache_slot *c, size_t rel, unsigned char *out,
		  size_t n)
{
	const uint32_t *map = (const uint32_t *)(const void *)c->buf;
	const unsigned char *pages = c->buf + pack_map_bytes(c->len);

	while (n) {
		size_t in = rel % PACK_PAGE;
		size_t k = in + n > PACK_PAGE ? PACK_PAGE - in : n;
		uint32_t m = map[rel / PACK_PAGE];

		if (m)
			memcpy(out, pages + (size_t)(m - 1) * PACK_PAGE + in,
			       k);
		else
			memset(out, 0, k);
		out += k;
		rel += k;
		n -= k;
	}
}

void sr_slot_done(struct kcore_istream *s, uint64_t frame, uint64_t start,
		  size_t len)
{
	s->cur->frame = frame;
	s->cur->start = start;
	s->cur->len = len;
	if (s->slot_of && frame < s->nframes)
		s->slot_of[frame] = (uint32_t)(s->cur - s->slots) + 1;
}

/* The cached frame holding decompressed byte offset, or NULL. */
struct cache_slot *sr_cache_find(struct kcore_istream *s, uint64_t offset)
{
	struct cache_slot *c;
	uint64_t frame;

	if (!s->slot_of)
		return NULL;
	if (s->method == KCORE_COMPRESS_ZSTD) {
		frame = sr_zstd_find_frame(s, offset);
	} else {
		lzma_index_iter iter;

		lzma_index_iter_init(&iter, s->xz_index);
		if (lzma_index_iter_locate(&iter, offset))
			return NULL;
		frame = iter.block.number_in_file - 1;
	}
	if (frame >= s->nframes || !s->slot_of[frame])
		return NULL;
	c = &s->slots[s->slot_of[frame] - 1];
	if (c->frame != frame || offset < c->start ||
	    offset - c->start >= c->len)
		return NULL;
	c->used = ++s->clock;
	return c;
}

/*
 * The first hole run that ends after offset: its index, or nholes.  Runs
 * are sorted and disjoint, so their ends ascend too.
 */
size_t sr_run_after(const uint64_t *runs, size_t n, uint64_t offset)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (runs[2 * mid + 1] <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
