// SPDX-License-Identifier: MIT
/*
 * kdump-compressed ("KDUMP   ", and the older "DISKDUMP") dumps as a
 * source.  Layout (makedumpfile's IMPLEMENTATION, crash's diskdump.h):
 * block 0 the disk_dump_header, then sub_hdr_size blocks of
 * kdump_sub_header and note data, then bitmap 1 (pfn is RAM) and bitmap 2
 * (pfn was dumped), then one 24-byte page_desc per set bit of bitmap 2,
 * then the page data.  Fields follow the dumped machine's C ABI; this
 * reader handles 64-bit little-endian machines.
 *
 * The dump is presented as an ELF core with one PT_LOAD per run of pfns
 * in bitmap 1; pages that bitmap 2 excludes read as zeros and are holes.
 * Memory follows what the dump holds, not what its header declares:
 * bitmap 2 is kept as the chunks that have bits set (all-zero chunks,
 * file holes included, cost nothing), with a rank table (one count per
 * 4096 pfns) that locates a page's descriptor; descriptors are read in
 * chunks, and a few decompressed pages are cached.  makedumpfile (-d 1
 * and up) and our writer store one zero page first in the page data and
 * point every zero page at it: such a page is a hole to next_data, so a
 * sparse source's kdump costs its descriptors, not its pages, to walk.
 * Holes in the bitmaps of a plain file are skipped with SEEK_DATA, not
 * read.  Documented limits (kcoredump(8)): 1 GiB of bitmap 2 with bits
 * set, 4 Mi runs of RAM in bitmap 1.
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "bytes.h"
#include "kcoredump/vmcoreinfo.h"
#include "kdump.h"
#include "read.h"

#define MAX_BLOCK_SIZE	   (1u << 20)
#define MAX_NOTE_SIZE	   (64u << 20)
#define RANK_BITS	   4096 /* pfns per rank entry */
#define DESC_CHUNK	   4096 /* descriptors read at once */
#define DESC_CHUNKS	   4
#define PAGE_CACHE	   16
#define MAX_HEADER_VERSION 6
#define BM_CHUNK	   (1u << 18) /* pfns per chunk of bitmap 2 */
#define MAX_BM2_BYTES	   (1ull << 30)
#define MAX_RUNS	   (1u << 22)
/* Runs of bitmap 1 cost a few hundred bytes each in the readers and the
 * plan (over a KiB in convert): at most one per 16 bytes of bitmap 1 the
 * file holds (counted by 4 KiB page), and 64 Ki whatever it holds, so
 * that memory follows the file (a 2 MB file with 4 Mi runs took 5 GB in
 * convert). */
#define MIN_RUNS_CAP  (1u << 16)
#define RUN_CAP_BYTES 16
#define HELD_PAGE     4096 /* what a file system keeps as data or hole */
#define DUMP_COMPRESS_FLAGS                                           \
	(KDUMP_STATUS_ZLIB | KDUMP_STATUS_LZO | KDUMP_STATUS_SNAPPY | \
	 KDUMP_STATUS_ZSTD)

struct run {
	uint64_t pfn;	 /* first pfn */
	uint64_t npages; /* pfns in the run */
	uint64_t offset; /* image offset of its data */
};

struct desc_chunk {
	uint64_t index; /* first descriptor, or UINT64_MAX */
	unsigned char *data;
	size_t count;
};

/* A chunk of bitmap 2 with bits set. */
struct bm_chunk {
	uint64_t first;			    /* pfn, a multiple of BM_CHUNK */
	uint64_t rank;			    /* set bits before it */
	unsigned char *bits;		    /* BM_CHUNK / 8 bytes, + 8 */
	uint32_t sub[BM_CHUNK / RANK_BITS]; /* set bits before each block */
};

struct cached_page {
	uint64_t pfn; /* or UINT64_MAX */
	unsigned char *data;
};

struct kdump {
	struct kcore_kdump_raw raw;
	pthread_mutex_t lock;
	uint32_t block_size;
	uint64_t max_mapnr;
	uint64_t bitmap_len;  /* bytes per bitmap */
	uint64_t bitmap2_off; /* in the raw dump */
	uint64_t desc_off;
	uint64_t ndesc;
	struct bm_chunk *bm2; /* bitmap 2's chunks with bits set, by pfn */
	size_t nbm2;
	struct run *runs;
	size_t nruns;
	uint64_t data_start; /* image offset of the first run */
	struct desc_chunk chunks[DESC_CHUNKS];
	unsigned next_chunk;
	struct cached_page pages[PAGE_CACHE];
	unsigned char *cbuf; /* compressed page */
	/* The last page decoded, by descriptor: makedumpfile points every
	 * zero page at one shared copy, so most repeats are free. */
	unsigned char *last;
	uint64_t last_off;
	uint32_t last_size, last_flags;
	/* The shared zero page, once a descriptor pointing at the first
	 * page-data byte was decoded: every descriptor equal to it is a
	 * zero page, a hole to next_data (zero_state 1), or not (2). */
	int zero_state;
	uint64_t zero_off;
	uint32_t zero_size, zero_flags;
	/* Pfns [zero_from, zero_to) are known zero pages (next_data). */
	uint64_t zero_from, zero_to;
	ZSTD_DCtx *zstd;
	char detail[160]; /* src->info.format_detail */
	char codecs[40];  /* src->info.page_compression */
};

static uint64_t le(const unsigned char *p, unsigned size)
{
	return kcore_load(p, size, false);
}

static bool bit(const unsigned char *bm, uint64_t n)
{
	return bm[n >> 3] & (1u << (n & 7));
}

static struct kcore_error *raw_read(struct kcore_source *src, struct kdump *k,
				    void *buf, size_t len, uint64_t offset)
{
	return k->raw.read(src, k->raw.ctx, buf, len, offset);
}

static struct kcore_error *fmt_error(struct kcore_source *src, uint64_t offset,
				     const char *what)
{
	return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path, offset,
				     "kdump: %s", what);
}

/* Set bits of bm2 in [0, n). */
static uint64_t count_bits(const unsigned char *bm, uint64_t from, uint64_t to)
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
static uint64_t find_bit(const unsigned char *bm, uint64_t from, uint64_t to,
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

static bool bit2(const struct kdump *k, uint64_t pfn)
{
	const struct bm_chunk *c = bm2_at(k, pfn);

	return c && c->first <= pfn && bit(c->bits, pfn - c->first);
}

/* The descriptor index of pfn (set in bitmap 2). */
static uint64_t index2(const struct kdump *k, uint64_t pfn)
{
	const struct bm_chunk *c = bm2_at(k, pfn);
	uint64_t rel, block;

	if (!c || c->first > pfn)
		return c ? c->rank : k->ndesc;
	rel = pfn - c->first;
	block = rel / RANK_BITS;
	return c->rank + c->sub[block] +
	       count_bits(c->bits, block * RANK_BITS, rel);
}

/* The first pfn in [from, to) whose bit 2 equals want, or to. */
static uint64_t find2(const struct kdump *k, uint64_t from, uint64_t to,
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
		r = find_bit(c->bits, from - c->first, end - c->first, want);
		if (r < end - c->first)
			return c->first + r;
		from = end;
	}
	return to;
}

static void kdump_destroy_data(struct kdump *k)
{
	if (!k)
		return;
	if (k->raw.destroy)
		k->raw.destroy(k->raw.ctx);
	for (unsigned i = 0; i < DESC_CHUNKS; i++)
		free(k->chunks[i].data);
	for (unsigned i = 0; i < PAGE_CACHE; i++)
		free(k->pages[i].data);
	free(k->cbuf);
	free(k->last);
	ZSTD_freeDCtx(k->zstd);
	for (size_t i = 0; i < k->nbm2; i++)
		free(k->bm2[i].bits);
	free(k->bm2);
	free(k->runs);
	pthread_mutex_destroy(&k->lock);
	free(k);
}

void kcore_kdump_destroy(struct kcore_source *src)
{
	kdump_destroy_data(src->reader_data);
	src->reader_data = NULL;
}

/* ---- reading pages ---- */

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

	index = index2(k, pfn);
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

	if (pfn >= k->max_mapnr || !bit2(k, pfn)) {
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
	index = index2(k, first);
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
		uint64_t d = find2(k, first, last, true), e;

		if (d == last) {
			offset = stop;
			continue;
		}
		e = find2(k, d, last, false);
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

/* ---- opening ---- */

struct header {
	bool diskdump;
	uint32_t version;
	char release[66];
	char machine[66];
	uint32_t status;
	uint32_t block_size;
	uint32_t sub_hdr_size;
	uint32_t bitmap_blocks;
	uint64_t max_mapnr;
	bool has_dump_level;
	uint32_t dump_level;
};

static struct kcore_error *read_header(struct kcore_source *src,
				       struct kdump *k, struct header *h)
{
	unsigned char b[KDUMP_HEADER_SIZE];
	struct kcore_error *err;
	int64_t bs;

	if (k->raw.size < KDUMP_HEADER_SIZE)
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path,
					     k->raw.size,
					     "kdump: truncated header: %" PRIu64
					     " bytes, the header needs %u",
					     k->raw.size, KDUMP_HEADER_SIZE);
	err = raw_read(src, k, b, sizeof(b), 0);
	if (err)
		return err;
	h->diskdump = memcmp(b, "DISKDUMP", 8) == 0;
	h->version = (uint32_t)le(b + 8, 4);
	if (h->version == 0 || h->version > MAX_HEADER_VERSION) {
		if (h->version &&
		    __builtin_bswap32(h->version) <= MAX_HEADER_VERSION)
			return kcore_error_create_at(
				KCORE_ERR_UNSUPPORTED, 0, src->path, 8,
				"kdump: big-endian dumps are not supported");
		return kcore_error_create_at(KCORE_ERR_UNSUPPORTED, 0,
					     src->path, 8,
					     "kdump: header_version %" PRIu32
					     " (this reader knows 1 to %d)",
					     h->version, MAX_HEADER_VERSION);
	}
	memcpy(h->release, b + 12 + 2 * 65, 65);
	h->release[65] = '\0';
	memcpy(h->machine, b + 12 + 4 * 65, 65);
	h->machine[65] = '\0';
	h->status = (uint32_t)le(b + 424, 4);
	bs = (int32_t)le(b + 428, 4);
	h->sub_hdr_size = (uint32_t)le(b + 432, 4);
	h->bitmap_blocks = (uint32_t)le(b + 436, 4);
	h->max_mapnr = le(b + 440, 4);
	if (bs < 512 || bs > MAX_BLOCK_SIZE || (bs & (bs - 1)))
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, 428,
			"kdump: block_size %" PRId64
			" is not a power of two from 512 to 1 MiB",
			bs);
	h->block_size = (uint32_t)bs;
	if (h->sub_hdr_size > INT32_MAX)
		return fmt_error(src, 432, "sub_hdr_size is negative");
	if (h->bitmap_blocks == 0 || h->bitmap_blocks % 2)
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path,
					     436,
					     "kdump: bitmap_blocks %" PRIu32
					     " is not a positive even number",
					     h->bitmap_blocks);
	return NULL;
}

/*
 * The kdump_sub_header (block 1): notes, VMCOREINFO and, from version 6,
 * the 64-bit max_mapnr.  *notes gets a copy of the note data.
 */
static struct kcore_error *
read_sub_header(struct kcore_source *src, struct kdump *k, struct header *h,
		unsigned char **notes, size_t *notes_len,
		unsigned char **vmcoreinfo, size_t *vmcoreinfo_len)
{
	uint64_t bs = h->block_size,
		 area_end = (1 + (uint64_t)h->sub_hdr_size) * bs;
	unsigned char s[KDUMP_SUBHEADER_SIZE];
	struct kcore_error *err;
	struct {
		unsigned min_version, at;
		unsigned char **buf;
		size_t *len;
	} parts[] = {
		{ 4, 48, notes, notes_len },
		{ 3, 32, vmcoreinfo, vmcoreinfo_len },
	};

	if (h->diskdump || h->sub_hdr_size == 0)
		return NULL;
	if (area_end > k->raw.size)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, bs,
			"kdump: the sub-header (%" PRIu32
			" blocks) extends past the end of the dump",
			h->sub_hdr_size);
	err = raw_read(src, k, s, sizeof(s), bs);
	if (err)
		return err;
	if (le(s + 12, 4) && h->version >= 3)
		return kcore_error_create_at(
			KCORE_ERR_UNSUPPORTED, 0, src->path, bs + 12,
			"kdump: split dumps (makedumpfile --split) are not "
			"supported");
	if (h->version >= 6 && le(s + 96, 8))
		h->max_mapnr = le(s + 96, 8);
	h->has_dump_level = true;
	h->dump_level = (uint32_t)le(s + 8, 4);
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		uint64_t off = le(s + parts[i].at, 8);
		uint64_t len = le(s + parts[i].at + 8, 8);

		if (h->version < parts[i].min_version || !off || !len)
			continue;
		if (len > MAX_NOTE_SIZE || off < bs || off > area_end ||
		    len > area_end - off)
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path,
				bs + parts[i].at,
				"kdump: %s at 0x%" PRIx64 "+0x%" PRIx64
				" is outside the sub-header area (0x%" PRIx64
				"-0x%" PRIx64 ")",
				i == 0 ? "note data" : "VMCOREINFO", off, len,
				bs, area_end);
		*parts[i].buf = malloc((size_t)len);
		if (!*parts[i].buf)
			return &kcore_error_nomem;
		*parts[i].len = (size_t)len;
		err = raw_read(src, k, *parts[i].buf, (size_t)len, off);
		if (err)
			return err;
	}
	return NULL;
}

/*
 * Where the next data of the raw dump at or after offset may be: for a
 * plain file the file's next data (SEEK_DATA), else offset itself.
 */
static uint64_t next_data(struct kcore_source *src, struct kdump *k,
			  uint64_t offset);
static uint64_t data_end(struct kcore_source *src, struct kdump *k,
			 uint64_t offset);

/* Bitmap 2 as its chunks with bits set, their ranks and the descriptor
 * count. */
static struct kcore_error *read_bitmap2(struct kcore_source *src,
					struct kdump *k)
{
	uint64_t need = (k->max_mapnr + 7) / 8, n = 0, kept = 0;
	size_t cap = 0, bytes = BM_CHUNK / 8;
	unsigned char *buf = malloc(bytes + 8);
	struct kcore_error *err = NULL;

	if (!buf)
		return &kcore_error_nomem;
	for (uint64_t at = 0; at < need && !err; at += bytes) {
		size_t len = need - at < bytes ? (size_t)(need - at) : bytes;
		uint64_t d = next_data(src, k, k->bitmap2_off + at), bits;
		struct bm_chunk *c;

		if (d >= k->bitmap2_off + at + len) {
			/* A hole: skip to the chunk where data starts. */
			if (d - k->bitmap2_off > at + bytes)
				at = (d - k->bitmap2_off) / bytes * bytes -
				     bytes;
			continue;
		}
		memset(buf, 0, bytes + 8);
		err = raw_read(src, k, buf, len, k->bitmap2_off + at);
		if (err)
			break;
		bits = (uint64_t)len * 8;
		if (at * 8 + bits > k->max_mapnr)
			bits = k->max_mapnr - at * 8;
		if (bits % 8)
			buf[len - 1] &= (unsigned char)((1u << (bits % 8)) - 1);
		if (kcore_is_zero(buf, len))
			continue;
		kept += bytes;
		if (kept > MAX_BM2_BYTES) {
			err = kcore_error_create_at(
				KCORE_ERR_UNSUPPORTED, 0, src->path,
				k->bitmap2_off + at,
				"kdump: bitmap 2 has bits set in more than "
				"%llu MiB; refusing to hold it",
				MAX_BM2_BYTES >> 20);
			break;
		}
		if (k->nbm2 == cap) {
			size_t nc = cap ? 2 * cap : 16;
			struct bm_chunk *m = realloc(k->bm2, nc * sizeof(*m));

			if (!m) {
				err = &kcore_error_nomem;
				break;
			}
			k->bm2 = m;
			cap = nc;
		}
		c = &k->bm2[k->nbm2];
		c->bits = malloc(bytes + 8);
		if (!c->bits) {
			err = &kcore_error_nomem;
			break;
		}
		memcpy(c->bits, buf, bytes + 8);
		c->first = at * 8;
		c->rank = n;
		for (uint64_t b = 0, sub = 0; b < BM_CHUNK / RANK_BITS; b++) {
			c->sub[b] = (uint32_t)sub;
			sub += count_bits(c->bits, b * RANK_BITS,
					  (b + 1) * RANK_BITS);
			if (b + 1 == BM_CHUNK / RANK_BITS)
				n += sub;
		}
		k->nbm2++;
	}
	free(buf);
	k->ndesc = n;
	return err;
}

/* Runs of set bits in bitmap 1, read a chunk at a time; holes skipped. */
static struct kcore_error *read_runs(struct kcore_source *src, struct kdump *k,
				     uint64_t bitmap1_off)
{
	size_t chunk_bytes = 1u << 20, cap = 0;
	unsigned char *chunk = malloc(chunk_bytes + 8);
	uint64_t need = (k->max_mapnr + 7) / 8, held = 0, max_runs;
	bool open = false;
	struct kcore_error *err = NULL;

	if (!chunk)
		return &kcore_error_nomem;
	/*
	 * The bytes of bitmap 1 the file holds, by 4 KiB page: each step
	 * goes from the next data to where it ends.  (Whole 1 MiB chunks
	 * were counted before: 4000 bytes at the start of each of 256
	 * chunks, 1.1 MB on disk, were credited 256 MiB.)
	 */
	for (uint64_t at = 0; at < need;) {
		uint64_t d = next_data(src, k, bitmap1_off + at), e;

		if (d == UINT64_MAX || d - bitmap1_off >= need)
			break;
		d = (d - bitmap1_off) / HELD_PAGE * HELD_PAGE;
		if (d < at)
			d = at;
		e = data_end(src, k, bitmap1_off + d);
		if (e == UINT64_MAX || e - bitmap1_off >= need)
			e = need;
		else
			e = (e - bitmap1_off + HELD_PAGE - 1) / HELD_PAGE *
			    HELD_PAGE;
		if (e <= d)
			e = d + HELD_PAGE;
		if (e > need)
			e = need;
		held += e - d;
		at = e;
	}
	max_runs = held / RUN_CAP_BYTES;
	if (max_runs < MIN_RUNS_CAP)
		max_runs = MIN_RUNS_CAP;
	if (max_runs > MAX_RUNS)
		max_runs = MAX_RUNS;
	for (uint64_t at = 0; at < need && !err; at += chunk_bytes) {
		size_t n = need - at < chunk_bytes ? (size_t)(need - at)
						   : chunk_bytes;
		uint64_t base = at * 8, bits = (uint64_t)n * 8, pos = 0;
		uint64_t d = next_data(src, k, bitmap1_off + at);

		if (d >= bitmap1_off + at + n) {
			/* A hole: zeros, which end an open run. */
			if (open)
				k->runs[k->nruns - 1].npages =
					base - k->runs[k->nruns - 1].pfn;
			open = false;
			if (d - bitmap1_off > at + chunk_bytes)
				at = (d - bitmap1_off) / chunk_bytes *
					     chunk_bytes -
				     chunk_bytes;
			continue;
		}
		if (base + bits > k->max_mapnr)
			bits = k->max_mapnr - base;
		memset(chunk, 0, chunk_bytes + 8);
		err = raw_read(src, k, chunk, n, bitmap1_off + at);
		while (!err && pos < bits) {
			uint64_t next = find_bit(chunk, pos, bits, !open);

			if (open) {
				struct run *r = &k->runs[k->nruns - 1];

				r->npages = base + next - r->pfn;
			}
			if (next == bits)
				break;
			if (!open) {
				if (k->nruns == max_runs) {
					err = kcore_error_create_at(
						KCORE_ERR_UNSUPPORTED, 0,
						src->path,
						bitmap1_off + at + next / 8,
						"kdump: bitmap 1 has more than "
						"%" PRIu64 " runs of RAM (one "
						"per %u bytes of it, 64 Ki at "
						"least)",
						max_runs, RUN_CAP_BYTES);
					break;
				}
				if (k->nruns == cap) {
					size_t c = cap ? 2 * cap : 64;
					struct run *r = realloc(k->runs,
								c * sizeof(*r));

					if (!r) {
						err = &kcore_error_nomem;
						break;
					}
					k->runs = r;
					cap = c;
				}
				k->runs[k->nruns++] =
					(struct run){ .pfn = base + next };
			}
			open = !open;
			pos = next;
		}
	}
	free(chunk);
	return err;
}

/* A VMCOREINFO note for dumps that carry none: what the header knows. */
static struct kcore_error *add_vmcoreinfo(unsigned char **notes,
					  size_t *notes_len,
					  const unsigned char *vmcoreinfo,
					  size_t vmcoreinfo_len,
					  const struct header *h)
{
	char text[160];
	size_t len;

	if (kcore_note_find(*notes, *notes_len, "VMCOREINFO", &len))
		return NULL;
	if (vmcoreinfo)
		return kcore_note_append(notes, notes_len, "VMCOREINFO", 0,
					 vmcoreinfo, vmcoreinfo_len);
	if (!h->release[0])
		return NULL;
	len = (size_t)snprintf(text, sizeof(text),
			       "OSRELEASE=%s\nPAGESIZE=%" PRIu32 "\n",
			       h->release, h->block_size);
	return kcore_note_append(notes, notes_len, "VMCOREINFO", 0, text, len);
}

/* What the header says, for kcore_source_info.format_detail. */
static void describe(struct kdump *k, const struct header *h)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} codecs[] = {
		{ KDUMP_STATUS_ZSTD, "zstd" },
		{ KDUMP_STATUS_ZLIB, "zlib" },
		{ KDUMP_STATUS_LZO, "lzo" },
		{ KDUMP_STATUS_SNAPPY, "snappy" },
	};
	char names[40] = "", level[32] = "";
	size_t n = 0;

	for (size_t i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++)
		if (h->status & codecs[i].bit)
			n += (size_t)snprintf(names + n, sizeof(names) - n,
					      "%s%s", n ? "/" : "",
					      codecs[i].name);
	if (h->has_dump_level)
		snprintf(level, sizeof(level), ", dump level %" PRIu32,
			 h->dump_level);
	snprintf(k->codecs, sizeof(k->codecs), "%s", n ? names : "raw");
	snprintf(k->detail, sizeof(k->detail),
		 "%sheader version %" PRIu32 ", %s pages%s%s",
		 h->diskdump ? "DISKDUMP " : "", h->version, n ? names : "raw",
		 level,
		 h->status & KDUMP_STATUS_INCOMPLETE ? ", marked incomplete"
						     : "");
}

struct kcore_error *kcore_kdump_open_raw(struct kcore_source *src,
					 struct kcore_kdump_raw *raw,
					 const char *format)
{
	struct kdump *k = calloc(1, sizeof(*k));
	unsigned char *notes = NULL, *vmcoreinfo = NULL;
	size_t notes_len = 0, vmcoreinfo_len = 0;
	struct kcore_image_load *loads = NULL;
	struct kcore_error *err;
	struct header h = { 0 };
	uint64_t bs, bitmap1_off, end, page_offset = 0;
	bool has_page_offset = false;
	const unsigned char *vi;
	size_t vi_len;

	if (!k) {
		if (raw->destroy)
			raw->destroy(raw->ctx);
		return &kcore_error_nomem;
	}
	k->raw = *raw;
	pthread_mutex_init(&k->lock, NULL);
	for (unsigned i = 0; i < DESC_CHUNKS; i++)
		k->chunks[i].index = UINT64_MAX;
	for (unsigned i = 0; i < PAGE_CACHE; i++)
		k->pages[i].pfn = UINT64_MAX;
	src->reader_data = k;

	err = read_header(src, k, &h);
	if (!err)
		err = read_sub_header(src, k, &h, &notes, &notes_len,
				      &vmcoreinfo, &vmcoreinfo_len);
	if (err)
		goto out;
	bs = h.block_size;
	k->block_size = h.block_size;
	k->max_mapnr = h.max_mapnr;
	k->bitmap_len = (uint64_t)h.bitmap_blocks / 2 * bs;
	bitmap1_off = (1 + (uint64_t)h.sub_hdr_size) * bs;
	k->bitmap2_off = bitmap1_off + k->bitmap_len;
	k->desc_off = k->bitmap2_off + k->bitmap_len;
	if (k->desc_off > k->raw.size) {
		err = kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, bitmap1_off,
			"kdump: the bitmaps (%" PRIu32 " blocks at 0x%" PRIx64
			") extend past the end of the dump (0x%" PRIx64 ")",
			h.bitmap_blocks, bitmap1_off, k->raw.size);
		goto out;
	}
	if (k->max_mapnr == 0 || k->max_mapnr / 8 > k->bitmap_len ||
	    k->max_mapnr > (uint64_t)INT64_MAX / bs) {
		err = kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, 440,
			"kdump: max_mapnr 0x%" PRIx64
			" does not fit the bitmaps (0x%" PRIx64 " bits)",
			k->max_mapnr, k->bitmap_len * 8);
		goto out;
	}
	/* A raw dump without holes of its own (flattened) holds both
	 * bitmaps, a bit per pfn each: a tiny file cannot declare 2^45. */
	if (k->raw.held && (k->max_mapnr + 7) / 8 > k->raw.held / 2) {
		err = kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, 440,
			"kdump: max_mapnr 0x%" PRIx64 " needs two bitmaps of "
			"0x%" PRIx64 " bytes; the %s file holds 0x%" PRIx64
			" bytes of the dump",
			k->max_mapnr, (k->max_mapnr + 7) / 8, format,
			k->raw.held);
		goto out;
	}
	err = read_bitmap2(src, k);
	if (err)
		goto out;
	if (__builtin_mul_overflow(k->ndesc, KDUMP_DESC_SIZE, &end) ||
	    __builtin_add_overflow(end, k->desc_off, &end) ||
	    end > k->raw.size) {
		err = kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, k->desc_off,
			"kdump: %" PRIu64 " page descriptors at 0x%" PRIx64
			" extend past the end of the dump (0x%" PRIx64 ")",
			k->ndesc, k->desc_off, k->raw.size);
		goto out;
	}
	/* The status word's codec bits only say what the writer may have
	 * used: each page descriptor names its own codec. */
	err = read_runs(src, k, bitmap1_off);
	if (err)
		goto out;
	err = add_vmcoreinfo(&notes, &notes_len, vmcoreinfo, vmcoreinfo_len,
			     &h);
	if (err)
		goto out;
	vi = kcore_note_find(notes, notes_len, "VMCOREINFO", &vi_len);
	if (vi)
		has_page_offset = kcore_vmcoreinfo_text_page_offset(
			(const char *)vi, vi_len, &page_offset);
	loads = calloc(k->nruns ? k->nruns : 1, sizeof(*loads));
	if (!loads) {
		err = &kcore_error_nomem;
		goto out;
	}
	for (size_t i = 0; i < k->nruns; i++) {
		loads[i].paddr = k->runs[i].pfn * bs;
		loads[i].vaddr =
			has_page_offset ? page_offset + loads[i].paddr : 0;
		loads[i].size = k->runs[i].npages * bs;
	}
	err = kcore_image_build(kcore_machine_from_uts(h.machine), notes,
				notes_len, loads, k->nruns, bs, &src->image,
				&src->image_size, &src->info.file_size);
	if (err)
		goto out;
	for (size_t i = 0; i < k->nruns; i++)
		k->runs[i].offset = loads[i].offset;
	k->data_start = k->nruns ? loads[0].offset : src->image_size;
	src->info.physical_only = !has_page_offset;
	src->knows_holes = true;
	describe(k, &h);
	src->info.format_detail = k->detail;
	src->info.page_compression = k->codecs;
	if (h.status & KDUMP_STATUS_INCOMPLETE) {
		src->info.incomplete = true;
		src->info.incomplete_origin = "kdump header";
	}
out:
	free(loads);
	free(notes);
	free(vmcoreinfo);
	return err;
}

/* ---- the plain file ---- */

static struct kcore_error *file_read(struct kcore_source *src, void *ctx,
				     void *buf, size_t len, uint64_t offset)
{
	(void)ctx;
	return kcore_fmt_read(src, buf, len, offset);
}

static uint64_t next_data(struct kcore_source *src, struct kdump *k,
			  uint64_t offset)
{
	off_t d;

	if (k->raw.next_data)
		return k->raw.next_data(src, k->raw.ctx, offset);
	if (k->raw.read != file_read)
		return offset;
	d = lseek(src->fd, (off_t)offset, SEEK_DATA);
	if (d < 0)
		return errno == ENXIO ? UINT64_MAX : offset;
	return (uint64_t)d;
}

/* Where the data at offset ends: the next hole of a plain file, the
 * page's end where the records tell data from holes (flattened), and
 * UINT64_MAX where all is data. */
static uint64_t data_end(struct kcore_source *src, struct kdump *k,
			 uint64_t offset)
{
	off_t h;

	if (k->raw.next_data)
		return offset + HELD_PAGE;
	if (k->raw.read != file_read)
		return UINT64_MAX;
	h = lseek(src->fd, (off_t)offset, SEEK_HOLE);
	return h < 0 || (uint64_t)h <= offset ? offset + HELD_PAGE
					      : (uint64_t)h;
}

static bool kdump_probe(const unsigned char *magic, size_t len)
{
	return len >= 8 && (memcmp(magic, "KDUMP   ", 8) == 0 ||
			    memcmp(magic, "DISKDUMP", 8) == 0);
}

static struct kcore_error *kdump_open(struct kcore_source *src)
{
	struct kcore_kdump_raw raw = {
		.read = file_read,
		.size = src->info.file_size,
	};

	return kcore_kdump_open_raw(src, &raw, "kdump");
}

const struct kcore_reader_ops kcore_read_kdump = {
	.name = "kdump",
	.title = "kdump-compressed",
	.probe = kdump_probe,
	.open = kdump_open,
	.pread = kcore_kdump_pread,
	.next_data = kcore_kdump_next_data,
	.destroy = kcore_kdump_destroy,
};
