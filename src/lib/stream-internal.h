/* SPDX-License-Identifier: MIT */
/* Container constants shared by the stream writer and reader; not installed. */
#ifndef KCOREDUMP_STREAM_INTERNAL_H
#define KCOREDUMP_STREAM_INTERNAL_H

#include <stdint.h>

#define ZSTD_FRAME_MAGIC 0xFD2FB528u
/* Skippable frames use magics 0x184D2A50..0x184D2A5F. */
#define ZSTD_SKIPPABLE_MAGIC_MASK 0xFFFFFFF0u
#define ZSTD_SKIPPABLE_MAGIC_BASE 0x184D2A50u

/*
 * The zstd seekable format (zstd contrib/seekable_format, v0.1.0): a
 * skippable frame with magic 0x184D2A5E holding one entry per frame,
 * { u32 compressed size, u32 decompressed size [, u32 XXH64 low bits] },
 * then a 9-byte footer { u32 frames, u8 descriptor, u32 0x8F92EAB1 }.
 * All little-endian.
 */
#define SEEK_TABLE_SKIPPABLE_MAGIC 0x184D2A5Eu
#define SEEKABLE_MAGIC		   0x8F92EAB1u
#define SEEK_TABLE_FOOTER_SIZE	   9u
#define SEEK_TABLE_HEADER_SIZE	   8u
#define SEEK_TABLE_CHECKSUM_FLAG   0x80u
#define SEEK_TABLE_RESERVED_BITS   0x7Cu
/* zstd's seekable reader refuses more frames than this. */
#define SEEKABLE_MAX_FRAMES 0x8000000u

/* The .xz stream header magic (6 bytes, the last one NUL). */
#define XZ_MAGIC \
	"\xFD"   \
	"7zXZ"
#define XZ_MAGIC_LEN 6

static inline void stream_put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static inline uint32_t stream_get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

#endif
