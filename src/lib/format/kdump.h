/* SPDX-License-Identifier: MIT */
/*
 * Internal to libkcore: the kdump-compressed (diskdump) layout both
 * directions share, the reader (read-kdump.c, read-flat.c) and the writer
 * (write-kdump.c), and the per-page codecs (kdump-codec.c).  Layout facts
 * are in kcoredump(8) and makedumpfile's IMPLEMENTATION.
 */
#ifndef KCOREDUMP_KDUMP_H
#define KCOREDUMP_KDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcoredump/dump.h"
#include "kcoredump/error.h"

/* disk_dump_header.status bits (makedumpfile diskdump_mod.h). */
#define KDUMP_STATUS_ZLIB	0x1
#define KDUMP_STATUS_LZO	0x2
#define KDUMP_STATUS_SNAPPY	0x4
#define KDUMP_STATUS_INCOMPLETE 0x8 /* the writer stopped early */
#define KDUMP_STATUS_ZSTD	0x20
/* page_desc.flags: the same bits. */
#define KDUMP_PAGE_ZLIB	  0x1
#define KDUMP_PAGE_LZO	  0x2
#define KDUMP_PAGE_SNAPPY 0x4
#define KDUMP_PAGE_ZSTD	  0x20

/* The header's status bit of a codec (0 for none). */
uint32_t kdump_codec_status(enum kcore_codec codec);

#define KDUMP_HEADER_SIZE    464
#define KDUMP_SUBHEADER_SIZE 104
#define KDUMP_DESC_SIZE	     24
#define FLAT_HEADER_SIZE     4096

/* One codec context per block slot (thread-safe apart). */
struct kcore_page_codec;
struct kcore_error *kcore_page_codec_create(enum kcore_codec codec, int level,
					    size_t page,
					    struct kcore_page_codec **ret);
/* Compress one page into dst, which has room bytes (at least a page;
 * lzo and snappy write there directly with room for their worst case,
 * else through their scratch).  Returns the stored size, at most a page;
 * *ret_flags is the page_desc flag, 0 for a raw copy. */
size_t kcore_page_codec_compress(struct kcore_page_codec *c, const void *src,
				 void *dst, size_t room, uint32_t *ret_flags);
void kcore_page_codec_destroy(struct kcore_page_codec *c);

/*
 * Decompress one page of bs bytes stored with page_desc flags (a
 * compressed page: zstd, zlib, lzo or snappy) from in into out; *zstd is
 * the caller's decompression context, created on first use.  Errors name
 * path and the file offset at.
 */
struct ZSTD_DCtx_s;
struct kcore_error *kcore_page_decompress(struct ZSTD_DCtx_s **zstd,
					  const char *path, uint32_t flags,
					  const unsigned char *in,
					  size_t in_len, unsigned char *out,
					  size_t bs, uint64_t at);

#endif
