// SPDX-License-Identifier: MIT
/*
 * Reading a kdump's pages: descriptors read in chunks, pages decoded
 * (kdump-codec.c) and a few of them cached, the shared zero page learnt
 * and shown as a hole, and next_data over runs and bitmap 2.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kdump.h"
#include "read-kdump.h"

#define DESC_CHUNK 4096 /* descriptors read at once */
#define DUMP_COMPRESS_FLAGS                                           \
	(KDUMP_STATUS_ZLIB | KDUMP_STATUS_LZO | KDUMP_STATUS_SNAPPY | \
	 KDUMP_STATUS_ZSTD)

static struct kcore_error *get_desc(struct kcore_source *src, struct kdump *k,
				    uint64_t index, unsigned char *ret)
{
	uint64_t first = index / DESC_CHUNK * DESC_CHUNK;
	struct desc_chunk *c = NULL;
	struct kcore_error *err;

	for (unsigned i = 0; i < DESC_CHUNKS; i++)
		if (k->chunks[i].index == first)
			c = &k->chunks[i];
	if (!c) {
		c = &k->chunks[k->next_chunk];
		k->next_chunk = (k->next_chunk + 1) % DESC_CHUNKS;
		if (!c->data) {
			c->data = malloc((size_t)DESC_CHUNK * KDUMP_DESC_SIZE);
			if (!c->data)
				return &kcore_error_nomem;
		}
		c->index = UINT64_MAX;
		c->count = k->ndesc - first < DESC_CHUNK
				   ? (size_t)(k->ndesc - first)
				   : DESC_CHUNK;
		err = raw_read(src, k, c->data, c->count * KDUMP_DESC_SIZE,
			       k->desc_off + first * KDUMP_DESC_SIZE);
		if (err)
			return err;
		c->index = first;
	}
	memcpy(ret, c->data + (index - first) * KDUMP_DESC_SIZE,
	       KDUMP_DESC_SIZE);
	return NULL;
}

/* Whether descriptor d (off, size, flags) is the shared zero page. */
static bool zero_desc(const struct kdump *k, const unsigned char *d)
{
	return k->zero_state == 1 && le(d, 8) == k->zero_off &&
	       (uint32_t)le(d + 8, 4) == k->zero_size &&
	       (uint32_t)le(d + 12, 4) == k->zero_flags;
}

static struct kcore_error *read_page(struct kcore_source *src, struct kdump *k,
				     uint64_t pfn, unsigned char *out);

/*
 * Learns the shared zero page from descriptor d of pfn when d points at
 * the first page-data byte (right after the descriptors, as makedumpfile
 * writes it, or at the next block, as ours does): decoded once.
 */
static struct kcore_error *learn_zero(struct kcore_source *src, struct kdump *k,
				      uint64_t pfn, const unsigned char *d)
{
	uint64_t end = k->desc_off + k->ndesc * KDUMP_DESC_SIZE;
	uint64_t off = le(d, 8);
	struct kcore_error *err;
	unsigned char *page;

	if (k->zero_state ||
	    (off != end &&
	     off != (end + k->block_size - 1) / k->block_size * k->block_size))
		return NULL;
	page = malloc(k->block_size);
	if (!page)
		return &kcore_error_nomem;
	err = read_page(src, k, pfn, page);
	if (!err) {
		k->zero_state = kcore_is_zero(page, k->block_size) ? 1 : 2;
		k->zero_off = off;
		k->zero_size = (uint32_t)le(d + 8, 4);
		k->zero_flags = (uint32_t)le(d + 12, 4);
	}
	free(page);
	return err;
}

/*
 * The first pfn in [pfn, to) that holds data, all of them set in bitmap 2
 * with consecutive descriptors from index: the zero pages before it are
 * skipped.  With want_zero, the first zero page instead.
 */
static struct kcore_error *scan_descs(struct kcore_source *src, struct kdump *k,
				      uint64_t pfn, uint64_t to, uint64_t index,
				      bool want_zero, uint64_t *ret)
{
	unsigned char d[KDUMP_DESC_SIZE];
	struct kcore_error *err;

	for (; pfn < to; pfn++, index++) {
		err = get_desc(src, k, index, d);
		if (!err && !k->zero_state)
			err = learn_zero(src, k, pfn, d);
		if (err)
			return err;
		if (zero_desc(k, d) == want_zero)
			break;
	}
	*ret = pfn;
	return NULL;
}

/* Read page pfn (set in bitmap 2) into out. */
static struct kcore_error *read_page(struct kcore_source *src, struct kdump *k,
				     uint64_t pfn, unsigned char *out)
{
	unsigned char d[KDUMP_DESC_SIZE];
	uint64_t index, at, off, end;
	uint32_t size, flags;
	struct kcore_error *err;

	index = kdump_index2(k, pfn);
	at = k->desc_off + index * KDUMP_DESC_SIZE;
	err = get_desc(src, k, index, d);
	if (err)
		return err;
	off = le(d, 8);
	size = (uint32_t)le(d + 8, 4);
	flags = (uint32_t)le(d + 12, 4);
	if (off == 0 || off > INT64_MAX)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, at,
			"kdump: page descriptor of pfn 0x%" PRIx64
			" has offset 0x%" PRIx64 "%s",
			pfn, off, off ? "" : " (page never written)");
	if (size == 0 || size > k->block_size)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, at,
			"kdump: page descriptor of pfn 0x%" PRIx64
			" has size %" PRIu32 " (block size %" PRIu32 ")",
			pfn, size, k->block_size);
	if (__builtin_add_overflow(off, size, &end) || end > k->raw.size)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, at,
			"kdump: page data of pfn 0x%" PRIx64 " at 0x%" PRIx64
			"+0x%" PRIx32 " is past the end of the dump (0x%" PRIx64
			")",
			pfn, off, size, k->raw.size);
	if (zero_desc(k, d)) {
		memset(out, 0, k->block_size);
		return NULL;
	}
	if (k->last && k->last_off == off && k->last_size == size &&
	    k->last_flags == flags) {
		memcpy(out, k->last, k->block_size);
		return NULL;
	}
	if (!(flags & DUMP_COMPRESS_FLAGS)) {
		if (size != k->block_size)
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path, at,
				"kdump: uncompressed page of pfn 0x%" PRIx64
				" has size %" PRIu32
				", not the block size %" PRIu32,
				pfn, size, k->block_size);
		err = raw_read(src, k, out, size, off);
		goto done;
	}
	if (!k->cbuf) {
		k->cbuf = malloc(k->block_size);
		if (!k->cbuf)
			return &kcore_error_nomem;
	}
	err = raw_read(src, k, k->cbuf, size, off);
	if (!err)
		err = kcore_page_decompress(&k->zstd, src->path, flags, k->cbuf,
					    size, out, k->block_size, off);
done:
	if (err)
		return err;
	if (!k->last) {
		k->last = malloc(k->block_size);
		if (!k->last)
			return NULL; /* only a cache */
	}
	memcpy(k->last, out, k->block_size);
	k->last_off = off;
	k->last_size = size;
	k->last_flags = flags;
	return NULL;
}

static const struct run *find_run(const struct kdump *k, uint64_t offset)
{
	size_t lo = 0, hi = k->nruns;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct run *r = &k->runs[mid];

		if (offset < r->offset)
			hi = mid;
		else if (offset - r->offset >= r->npages * k->block_size)
			lo = mid + 1;
		else
			return r;
	}
	return NULL;
}

/* Copy page pfn's bytes [in, in + n) to out, through the page cache. */
static struct kcore_error *copy_page(struct kcore_source *src, struct kdump *k,
				     uint64_t pfn, size_t in, size_t n,
				     unsigned char *out)
{
	struct cached_page *c;
	struct kcore_error *err;

	if (pfn >= k->max_mapnr || !kdump_bit2(k, pfn)) {
		memset(out, 0, n);
		return NULL;
	}
	if (n == k->block_size) /* a whole page: no need to cache it */
		return read_page(src, k, pfn, out);
	c = &k->pages[pfn % PAGE_CACHE];
	if (c->pfn != pfn) {
		if (!c->data) {
			c->data = malloc(k->block_size);
			if (!c->data)
				return &kcore_error_nomem;
		}
		c->pfn = UINT64_MAX;
		err = read_page(src, k, pfn, c->data);
		if (err)
			return err;
		c->pfn = pfn;
	}
	memcpy(out, c->data + in, n);
	return NULL;
}

static struct kcore_error *kdump_pread_locked(struct kcore_source *src,
					      struct kdump *k,
					      unsigned char *buf, size_t len,
					      uint64_t offset, size_t *done)
{
	uint64_t bs = k->block_size;
	size_t pos = 0;

	while (pos < len) {
		uint64_t at = offset + pos;
		const struct run *r;
		size_t n;

		if (at < k->data_start) { /* padding after the headers */
			n = k->data_start - at < len - pos
				    ? (size_t)(k->data_start - at)
				    : len - pos;
			memset(buf + pos, 0, n);
			pos += n;
			continue;
		}
		r = find_run(k, at);
		if (!r) {
			*done = pos;
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path, at,
				"read past the end of the dump's image "
				"(0x%" PRIx64 ")",
				src->info.file_size);
		}
		uint64_t rel = at - r->offset;
		uint64_t pfn = r->pfn + rel / bs;
		size_t in = (size_t)(rel % bs);

		n = bs - in < len - pos ? (size_t)(bs - in) : len - pos;
		struct kcore_error *err =
			copy_page(src, k, pfn, in, n, buf + pos);
		if (err) {
			*done = pos;
			return err;
		}
		pos += n;
	}
	*done = pos;
	return NULL;
}

struct kcore_error *kcore_kdump_pread(struct kcore_source *src, void *buf,
				      size_t len, uint64_t offset, size_t *done)
{
	struct kdump *k = src->reader_data;
	struct kcore_error *err;
	size_t got = 0;

	pthread_mutex_lock(&k->lock);
	err = kdump_pread_locked(src, k, buf, len, offset, &got);
	pthread_mutex_unlock(&k->lock);
	if (done)
		*done = got;
	return err;
}

/*
 * The data of pfns [from, to) of run r, all set in bitmap 2, without the
 * shared zero page's: [*d, *e), or *d == to when they are all zeros.
 */
static struct kcore_error *skip_zero_pages(struct kcore_source *src,
					   struct kdump *k, uint64_t from,
					   uint64_t to, uint64_t *d,
					   uint64_t *e)
{
	struct kcore_error *err;
	uint64_t first = from, index;

	*d = from;
	*e = to;
	if (k->zero_state == 2)
		return NULL;
	if (from >= k->zero_from && from < k->zero_to)
		first = k->zero_to < to ? k->zero_to : to;
	if (first == to) {
		*d = to;
		return NULL;
	}
	index = kdump_index2(k, first);
	err = scan_descs(src, k, first, to, index, false, d);
	if (err)
		return err;
	if (*d > first) { /* remembered: a later call starts inside */
		if (first != k->zero_to)
			k->zero_from = first;
		k->zero_to = *d;
	}
	if (*d == to || k->zero_state == 2)
		return NULL;
	return scan_descs(src, k, *d + 1, to, index + (*d + 1 - first), true,
			  e);
}

static struct kcore_error *next_data_locked(struct kcore_source *src,
					    struct kdump *k, uint64_t offset,
					    uint64_t end, uint64_t *data,
					    uint64_t *data_end)
{
	uint64_t bs = k->block_size;
	struct kcore_error *err;

	*data = *data_end = end;
	while (offset < end) {
		const struct run *r;

		if (offset < k->data_start) {
			if (offset < src->image_size) {
				*data = offset;
				*data_end = src->image_size < end
						    ? src->image_size
						    : end;
				return NULL;
			}
			offset = k->data_start;
			continue;
		}
		r = find_run(k, offset);
		if (!r)
			return NULL;
		uint64_t run_end = r->offset + r->npages * bs;
		uint64_t stop = end < run_end ? end : run_end;
		uint64_t first = r->pfn + (offset - r->offset) / bs;
		uint64_t last = r->pfn + (stop - r->offset + bs - 1) / bs;
		uint64_t d = kdump_find2(k, first, last, true), e;

		if (d == last) {
			offset = stop;
			continue;
		}
		e = kdump_find2(k, d, last, false);
		err = skip_zero_pages(src, k, d, e, &d, &e);
		if (err)
			return err;
		if (d == e) {
			offset = r->offset + (e - r->pfn) * bs;
			continue;
		}
		*data = r->offset + (d - r->pfn) * bs;
		if (*data < offset)
			*data = offset;
		*data_end = r->offset + (e - r->pfn) * bs;
		if (*data_end > end)
			*data_end = end;
		return NULL;
	}
	return NULL;
}

struct kcore_error *kcore_kdump_next_data(struct kcore_source *src,
					  uint64_t offset, uint64_t end,
					  uint64_t *data, uint64_t *data_end)
{
	struct kdump *k = src->reader_data;
	struct kcore_error *err;

	pthread_mutex_lock(&k->lock);
	err = next_data_locked(src, k, offset, end, data, data_end);
	pthread_mutex_unlock(&k->lock);
	return err;
}
