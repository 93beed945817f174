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
 *
 * This file opens a dump and is the plain file's reader;
 * read-kdump-pages.c reads its pages and read-kdump-bitmap.c searches
 * bitmap 2 (read-kdump.h: what they share).
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

#include "kdump.h"
#include "read-kdump.h"
#include "bytes.h"
#include "kcoredump/vmcoreinfo.h"
#include "kdump.h"
#include "read.h"

#define MAX_BLOCK_SIZE	   (1u << 20)
#define MAX_NOTE_SIZE	   (64u << 20)
#define MAX_HEADER_VERSION 6
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

static struct kcore_error *fmt_error(struct kcore_source *src, uint64_t offset,
				     const char *what)
{
	return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path, offset,
				     "kdump: %s", what);
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
			sub += kdump_count_bits(c->bits, b * RANK_BITS,
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
			uint64_t next = kdump_find_bit(chunk, pos, bits, !open);

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
