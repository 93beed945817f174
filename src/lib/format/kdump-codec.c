// SPDX-License-Identifier: MIT
/*
 * The per-page codecs of kdump-compressed dumps, both directions: the
 * writer's compressors (write-kdump.c, one context per block slot) and
 * the reader's decompression of one page (read-kdump.c).  The flag bits
 * of each codec are kdump.h's.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#include <lzo/lzo1x.h>
#include <snappy-c.h>
#ifdef KCOREDUMP_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include "kcoredump/kcore.h"
#include "kdump.h"

/* ---- compression (the writer) ---- */

static const char *const codec_names[KCORE_CODEC_NUM] = { "zstd", "zlib",
							  "none", "lzo",
							  "snappy" };

const char *kcore_codec_name(enum kcore_codec c)
{
	return (unsigned)c < KCORE_CODEC_NUM ? codec_names[c] : "unknown";
}

int kcore_codec_from_name(const char *name)
{
	for (int i = 0; i < KCORE_CODEC_NUM; i++)
		if (strcmp(codec_names[i], name) == 0)
			return i;
	return -1;
}

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
			c->lzo_work = malloc(LZO1X_1_15_MEM_COMPRESS);
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
				 void *dst, size_t room, uint32_t *ret_flags)
{
	/* lzo and snappy straight into dst when their worst case fits. */
	bool direct = room >= c->scratch_len;
	unsigned char *out = direct ? dst : c->scratch;
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

		/*
		 * lzo1x_1_15 writes the LZO1X format lzo1x_1 does (the
		 * readers' lzo1x_decompress_safe), 7 % faster on a kernel's
		 * 4 KiB pages and 0.12 % larger; _11 and _12 are as fast and
		 * 0.86 % and 0.36 % larger.
		 */
		if (lzo1x_1_15_compress(src, c->page, out, &len, c->lzo_work) ==
			    LZO_E_OK &&
		    len < c->page) {
			if (!direct)
				memcpy(dst, out, len);
			*ret_flags = KDUMP_PAGE_LZO;
			return len;
		}
		break;
	}
	case KCORE_CODEC_SNAPPY: {
		size_t len = c->scratch_len;

		if (snappy_compress(src, c->page, (char *)out, &len) ==
			    SNAPPY_OK &&
		    len < c->page) {
			if (!direct)
				memcpy(dst, out, len);
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

/* ---- decompression (the reader) ---- */

struct kcore_error *kcore_page_decompress(ZSTD_DCtx **zstd, const char *path,
					  uint32_t flags,
					  const unsigned char *in,
					  size_t in_len, unsigned char *out,
					  size_t bs, uint64_t at)
{
	if (flags & KDUMP_STATUS_ZSTD) {
		size_t r;

		if (!*zstd) {
			*zstd = ZSTD_createDCtx();
			if (!*zstd)
				return &kcore_error_nomem;
		}
		r = ZSTD_decompressDCtx(*zstd, out, bs, in, in_len);
		if (ZSTD_isError(r))
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, path, at,
				"kdump: zstd page data is corrupt: %s",
				ZSTD_getErrorName(r));
		if (r != bs)
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, path, at,
				"kdump: zstd page decompresses to %zu bytes, "
				"not %zu",
				r, bs);
		return NULL;
	}
	if (flags & KDUMP_STATUS_ZLIB) {
		uLongf out_len = bs;
		int r = uncompress(out, &out_len, in, in_len);

		if (r != Z_OK || out_len != bs)
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, path, at,
				"kdump: zlib page data is corrupt (%s, %lu "
				"bytes)",
				r == Z_OK ? "short" : zError(r),
				(unsigned long)out_len);
		return NULL;
	}
	if (flags & KDUMP_STATUS_LZO) {
		lzo_uint out_len = bs;
		int r = lzo1x_decompress_safe(in, in_len, out, &out_len, NULL);

		if (r != LZO_E_OK || out_len != bs)
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, path, at,
				"kdump: lzo page data is corrupt (%s, %lu "
				"bytes)",
				r == LZO_E_OK ? "short" : "lzo error",
				(unsigned long)out_len);
		return NULL;
	}
	/* The reader passes compressed pages only: snappy is left. */
	size_t out_len = 0;

	if (snappy_uncompressed_length((const char *)in, in_len, &out_len) !=
		    SNAPPY_OK ||
	    out_len != bs)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, path, at,
			"kdump: snappy page data is corrupt (%s)",
			out_len ? "wrong length" : "bad header");
	if (snappy_uncompress((const char *)in, in_len, (char *)out,
			      &out_len) != SNAPPY_OK ||
	    out_len != bs)
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, path, at,
					     "kdump: snappy page data is "
					     "corrupt");
	return NULL;
}
