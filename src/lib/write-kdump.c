// SPDX-License-Identifier: MIT
/*
 * The kdump-compressed ("diskdump", header version 6) writer: block 0 is
 * disk_dump_header, block 1 kdump_sub_header followed by a copy of the
 * source's ELF notes, then bitmap 1 (pfn is RAM), bitmap 2 (pfn dumped),
 * one 24-byte page_desc per dumped pfn in pfn order, then page data.  The
 * first data page is the shared zero page every zero pfn points to.
 *
 * Page data arrives in pfn order from the dump pipeline; descriptors are
 * buffered and written in whole-descriptor chunks, so every descriptor
 * and every page lies within one write (the flattened format's readers
 * look each read up in a single record).  The header, sub-header, notes
 * and bitmaps are written last, when bitmap 2 and the digests are final.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#include <lzo/lzo1x.h>
#include <snappy-c.h>
#ifdef KCOREDUMP_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include "write-kdump.h"

#define DESC_CHUNK 2730 /* descriptors per write: 65520 bytes */

/* ---- per-page codecs ---- */

struct kcore_page_codec {
	enum kcore_codec codec;
	int level;
	size_t page;
	ZSTD_CCtx *zstd;
	z_stream z;
	bool z_ready;
	/* lzo and snappy may need more than a page for incompressible
	 * input: they write to scratch, copied out when it is smaller. */
	unsigned char *scratch;
	size_t scratch_len;
	void *lzo_work;
#ifdef KCOREDUMP_HAVE_LIBDEFLATE
	struct libdeflate_compressor *deflate;
#endif
};

struct kcore_error *kcore_page_codec_create(enum kcore_codec codec, int level,
					    size_t page,
					    struct kcore_page_codec **ret)
{
	struct kcore_page_codec *c = calloc(1, sizeof(*c));

	if (!c)
		return &kcore_error_nomem;
	c->codec = codec;
	c->page = page;
	switch (codec) {
	case KCORE_CODEC_ZSTD:
		c->level = level ? level : KCORE_KDUMP_ZSTD_DEFAULT_LEVEL;
		c->zstd = ZSTD_createCCtx();
		if (!c->zstd ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(
			    c->zstd, ZSTD_c_compressionLevel, c->level)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(
			    c->zstd, ZSTD_c_checksumFlag, 0))) {
			kcore_page_codec_destroy(c);
			return &kcore_error_nomem;
		}
		break;
	case KCORE_CODEC_ZLIB:
		c->level = level ? level : KCORE_KDUMP_ZLIB_DEFAULT_LEVEL;
		if (c->level > 9) {
			free(c);
			return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
						  "zlib level %d is out of "
						  "range 1-9",
						  level);
		}
#ifdef KCOREDUMP_HAVE_LIBDEFLATE
		/*
		 * libdeflate writes the same zlib streams (crash and
		 * libkdumpfile inflate them) about 3 times as fast as zlib,
		 * and its level 2 is a little smaller than zlib's level 1.
		 */
		c->deflate = libdeflate_alloc_compressor(
			level ? c->level
			      : KCORE_KDUMP_LIBDEFLATE_DEFAULT_LEVEL);
		if (!c->deflate) {
			free(c);
			return &kcore_error_nomem;
		}
#else
		/* A 4 KiB window (windowBits 12) sees the whole page: the
		 * output is the same size as with 32 KiB, and cheaper to
		 * reset per page.  Readers' inflate() takes any window. */
		if (deflateInit2(&c->z, c->level, Z_DEFLATED,
				 page <= 4096 ? 12 : 15, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK) {
			free(c);
			return &kcore_error_nomem;
		}
		c->z_ready = true;
#endif
		break;
	case KCORE_CODEC_LZO:
	case KCORE_CODEC_SNAPPY:
		if (level) {
			free(c);
			return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
						  "%s has no compression "
						  "levels",
						  kcore_codec_name(codec));
		}
		if (codec == KCORE_CODEC_LZO) {
			if (lzo_init() != LZO_E_OK) {
				free(c);
				return kcore_error_create(
					KCORE_ERR_UNSUPPORTED, 0, NULL,
					"liblzo2 failed its self-test");
			}
			/* lzo1x's worst case (lzo's documentation). */
			c->scratch_len = page + page / 16 + 64 + 3;
			c->lzo_work = malloc(LZO1X_1_MEM_COMPRESS);
		} else {
			c->scratch_len = snappy_max_compressed_length(page);
		}
		c->scratch = malloc(c->scratch_len);
		if (!c->scratch || (codec == KCORE_CODEC_LZO && !c->lzo_work)) {
			kcore_page_codec_destroy(c);
			return &kcore_error_nomem;
		}
		break;
	default:
		break;
	}
	*ret = c;
	return NULL;
}

uint32_t kdump_codec_status(enum kcore_codec codec)
{
	switch (codec) {
	case KCORE_CODEC_ZSTD:
		return KDUMP_STATUS_ZSTD;
	case KCORE_CODEC_ZLIB:
		return KDUMP_STATUS_ZLIB;
	case KCORE_CODEC_LZO:
		return KDUMP_STATUS_LZO;
	case KCORE_CODEC_SNAPPY:
		return KDUMP_STATUS_SNAPPY;
	default:
		return 0;
	}
}

size_t kcore_page_codec_compress(struct kcore_page_codec *c, const void *src,
				 void *dst, uint32_t *ret_flags)
{
	size_t n = 0;

	switch (c->codec) {
	case KCORE_CODEC_ZSTD:
		n = ZSTD_compress2(c->zstd, dst, c->page - 1, src, c->page);
		if (!ZSTD_isError(n) && n < c->page) {
			*ret_flags = KDUMP_PAGE_ZSTD;
			return n;
		}
		ZSTD_CCtx_reset(c->zstd, ZSTD_reset_session_only);
		break;
	case KCORE_CODEC_ZLIB:
#ifdef KCOREDUMP_HAVE_LIBDEFLATE
		n = libdeflate_zlib_compress(c->deflate, src, c->page, dst,
					     c->page - 1);
		if (n) {
			*ret_flags = KDUMP_PAGE_ZLIB;
			return n;
		}
		break;
#endif
		deflateReset(&c->z);
		c->z.next_in = (Bytef *)(uintptr_t)src;
		c->z.avail_in = (uInt)c->page;
		c->z.next_out = dst;
		c->z.avail_out = (uInt)(c->page - 1);
		if (deflate(&c->z, Z_FINISH) == Z_STREAM_END) {
			*ret_flags = KDUMP_PAGE_ZLIB;
			return c->page - 1 - c->z.avail_out;
		}
		break;
	case KCORE_CODEC_LZO: {
		lzo_uint len = c->scratch_len;

		if (lzo1x_1_compress(src, c->page, c->scratch, &len,
				     c->lzo_work) == LZO_E_OK &&
		    len < c->page) {
			memcpy(dst, c->scratch, len);
			*ret_flags = KDUMP_PAGE_LZO;
			return len;
		}
		break;
	}
	case KCORE_CODEC_SNAPPY: {
		size_t len = c->scratch_len;

		if (snappy_compress(src, c->page, (char *)c->scratch, &len) ==
			    SNAPPY_OK &&
		    len < c->page) {
			memcpy(dst, c->scratch, len);
			*ret_flags = KDUMP_PAGE_SNAPPY;
			return len;
		}
		break;
	}
	default:
		break;
	}
	/* Incompressible, or no codec: the raw page. */
	memcpy(dst, src, c->page);
	*ret_flags = 0;
	return c->page;
}

void kcore_page_codec_destroy(struct kcore_page_codec *c)
{
	if (!c)
		return;
	ZSTD_freeCCtx(c->zstd);
	if (c->z_ready)
		deflateEnd(&c->z);
#ifdef KCOREDUMP_HAVE_LIBDEFLATE
	libdeflate_free_compressor(c->deflate);
#endif
	free(c->scratch);
	free(c->lzo_work);
	free(c);
}

/* ---- layout ---- */

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4); /* the dumped machine's byte order: x86_64 LE */
}

static void put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static void set_bit(unsigned char *bm, uint64_t n)
{
	bm[n >> 3] |= (unsigned char)(1u << (n & 7));
}

struct kcore_error *kdump_writer_init(struct kdump_writer *w, uint64_t page,
				      const struct kdump_range *ranges,
				      size_t nranges, uint64_t ndesc_max,
				      size_t notes_len, kdump_write_fn write,
				      void *arg)
{
	memset(w, 0, sizeof(*w));
	w->page = page;
	w->write = write;
	w->arg = arg;
	w->max_mapnr = nranges ? ranges[nranges - 1].end_pfn : 0;
	w->bitmap_len = round_up((w->max_mapnr + 7) / 8, page);
	if (!w->bitmap_len)
		w->bitmap_len = page;
	if (w->bitmap_len / page * 2 > UINT32_MAX)
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, NULL,
					  "physical address space too large "
					  "for a kdump bitmap");
	w->bitmap1 = calloc(1, w->bitmap_len);
	w->bitmap2 = calloc(1, w->bitmap_len);
	w->descbuf = malloc(DESC_CHUNK * KDUMP_DESC_SIZE);
	if (!w->bitmap1 || !w->bitmap2 || !w->descbuf) {
		kdump_writer_deinit(w);
		return &kcore_error_nomem;
	}
	for (size_t i = 0; i < nranges; i++)
		for (uint64_t pfn = ranges[i].start_pfn;
		     pfn < ranges[i].end_pfn; pfn++) {
			set_bit(w->bitmap1, pfn);
			set_bit(w->bitmap2, pfn);
		}
	w->notes_off = page + KDUMP_SUBHEADER_SIZE;
	w->sub_blocks = round_up(KDUMP_SUBHEADER_SIZE + notes_len, page) / page;
	w->ndesc_max = ndesc_max;
	w->desc_off = (1 + w->sub_blocks) * page + 2 * w->bitmap_len;
	w->data_off = round_up(w->desc_off + ndesc_max * KDUMP_DESC_SIZE, page);
	w->data_pos = w->data_off;
	return NULL;
}

void kdump_writer_deinit(struct kdump_writer *w)
{
	free(w->bitmap1);
	free(w->bitmap2);
	free(w->descbuf);
	w->bitmap1 = w->bitmap2 = w->descbuf = NULL;
}

struct kcore_error *kdump_writer_zero_page(struct kdump_writer *w,
					   struct kcore_page_codec *codec)
{
	unsigned char *zero = calloc(2, w->page), *out = zero + w->page;
	struct kcore_error *err;

	if (!zero)
		return &kcore_error_nomem;
	w->zero_size =
		kcore_page_codec_compress(codec, zero, out, &w->zero_flags);
	err = w->write(w->arg, w->data_pos, out, w->zero_size);
	w->data_pos += w->zero_size;
	free(zero);
	return err;
}

static struct kcore_error *flush_descs(struct kdump_writer *w)
{
	uint64_t first = w->ndesc - w->desc_fill;
	struct kcore_error *err;

	if (!w->desc_fill)
		return NULL;
	err = w->write(w->arg, w->desc_off + first * KDUMP_DESC_SIZE,
		       w->descbuf, w->desc_fill * KDUMP_DESC_SIZE);
	w->desc_fill = 0;
	return err;
}

struct kcore_error *kdump_writer_page(struct kdump_writer *w, uint64_t offset,
				      uint32_t size, uint32_t flags)
{
	unsigned char *d;

	if (w->ndesc == w->ndesc_max)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "more dumped pages than the %llu "
					  "planned",
					  (unsigned long long)w->ndesc_max);
	d = w->descbuf + w->desc_fill * KDUMP_DESC_SIZE;
	put64(d, offset);
	put32(d + 8, size);
	put32(d + 12, flags);
	put64(d + 16, 0); /* page_flags */
	w->desc_fill++;
	w->ndesc++;
	w->dumped++;
	if (w->desc_fill == DESC_CHUNK)
		return flush_descs(w);
	return NULL;
}

struct kcore_error *kdump_writer_zero(struct kdump_writer *w)
{
	w->zero_pages++;
	return kdump_writer_page(w, w->data_off, (uint32_t)w->zero_size,
				 w->zero_flags);
}

void kdump_writer_exclude(struct kdump_writer *w, uint64_t pfn)
{
	if (pfn < w->max_mapnr)
		w->bitmap2[pfn >> 3] &= (unsigned char)~(1u << (pfn & 7));
}

struct kcore_error *kdump_writer_flush(struct kdump_writer *w)
{
	return flush_descs(w);
}

void kdump_writer_exclude_range(struct kdump_writer *w, uint64_t start,
				uint64_t end)
{
	for (uint64_t pfn = start; pfn < end; pfn++)
		kdump_writer_exclude(w, pfn);
}

struct kcore_error *kdump_writer_headers(struct kdump_writer *w,
					 const struct kdump_header_info *hi,
					 const void *notes, size_t notes_len,
					 uint64_t skip_off, uint64_t skip_len)
{
	unsigned char *blk;
	struct kcore_error *err;
	size_t hdr_len = (1 + w->sub_blocks) * w->page;

	blk = calloc(1, hdr_len);
	if (!blk)
		return &kcore_error_nomem;
	/* disk_dump_header (x86_64 layout). */
	memcpy(blk, "KDUMP   ", 8);
	put32(blk + 8, 6);
	for (int i = 0; i < 6; i++)
		memcpy(blk + 12 + 65 * i, hi->utsname[i], 64);
	put64(blk + 408, hi->timestamp_sec);
	put64(blk + 416, hi->timestamp_usec);
	put32(blk + 424, hi->status);
	put32(blk + 428, (uint32_t)w->page);
	put32(blk + 432, (uint32_t)w->sub_blocks);
	put32(blk + 436, (uint32_t)(2 * w->bitmap_len / w->page));
	put32(blk + 440,
	      w->max_mapnr > UINT32_MAX ? UINT32_MAX : (uint32_t)w->max_mapnr);
	/* total_ram_blocks, device_blocks, written_blocks, current_cpu: 0 */
	put32(blk + 460, (uint32_t)(hi->nr_cpus > 0 ? hi->nr_cpus : 1));
	/* kdump_sub_header. */
	unsigned char *s = blk + w->page;

	put64(s + 0, hi->phys_base);
	/* dump_level: 1 (DL_EXCLUDE_ZERO) at least, since source holes and
	 * zero-filled unreadable pages are left out, and crash reads
	 * excluded pages as zeros when this bit is set; more with the
	 * classes kcore_plan_exclude() left out. */
	put32(s + 8, hi->dump_level | 1);
	put32(s + 12, 0);	     /* split */
	put64(s + 16, 0);	     /* start_pfn */
	put64(s + 24, w->max_mapnr); /* end_pfn */
	if (hi->vmcoreinfo_off != UINT64_MAX) {
		put64(s + 32, w->notes_off + hi->vmcoreinfo_off);
		put64(s + 40, hi->vmcoreinfo_size);
	}
	put64(s + 48, w->notes_off);
	put64(s + 56, notes_len);
	/* offset/size_eraseinfo stay 0. */
	put64(s + 80, 0);
	put64(s + 88, w->max_mapnr);
	put64(s + 96, w->max_mapnr);
	memcpy(s + KDUMP_SUBHEADER_SIZE, notes, notes_len);
	if (skip_len) {
		/* Everything but the slot; the padding after it is zeros. */
		err = w->write(w->arg, 0, blk, skip_off);
	} else {
		err = w->write(w->arg, 0, blk, hdr_len);
	}
	free(blk);
	if (!err)
		err = w->write(w->arg, hdr_len, w->bitmap1, w->bitmap_len);
	if (!err)
		err = w->write(w->arg, hdr_len + w->bitmap_len, w->bitmap2,
			       w->bitmap_len);
	return err;
}

void kdump_flat_header(unsigned char out[FLAT_HEADER_SIZE])
{
	memset(out, 0, FLAT_HEADER_SIZE);
	memcpy(out, "makedumpfile", 12);
	out[16 + 7] = 1; /* type 1, big-endian */
	out[24 + 7] = 1; /* version 1 */
}
