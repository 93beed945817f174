/* SPDX-License-Identifier: MIT */
/* Container constants shared by the stream writer and reader; not installed. */
#ifndef KCOREDUMP_STREAM_INTERNAL_H
#define KCOREDUMP_STREAM_INTERNAL_H

#include <stddef.h>
#include <signal.h>
#include <stdbool.h>
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

/*
 * kcoredump's hole map (kcoredump(8), "HOLE MAP"): which decompressed
 * ranges hold only zeros, so that readers skip them without decoding.
 *
 * zstd: a skippable frame with magic 0x184D2A5B, written after the last
 * data frame and listed in the seek table as a frame of 0 decompressed
 * bytes.  Its content, little-endian:
 *   "KCDHOLE2", u64 decompressed size of the stream, u64 number of runs,
 *   u64 size of the encoded runs, then one zstd frame of the encoded
 *   runs: for each run (ascending, not touching, not empty) its distance
 *   from the end of the one before (from 0 for the first) and its length,
 *   each an unsigned LEB128; then u32 CRC-32 (zlib's) of all the bytes
 *   before it.  A mapping-rich process has tens of thousands of runs,
 *   whose 16 raw bytes each outweighed its compressed core.
 *   "KCDHOLE1" (written before; still read): the same header without the
 *   encoded size, then the runs as { u64 start, u64 length }, then the
 *   CRC.
 * xz: every block that holds only zeros has a 64-byte block header (first
 * byte 0x0F; the rest is header padding, which the format allows);
 * liblzma writes no block header longer than 28 bytes for one LZMA2
 * filter, so no block of ours holding data looks like one.
 */
#define HOLE_MAP_SKIPPABLE_MAGIC 0x184D2A5Bu
/*
 * The room after the compressed headers of a dump (the stored frame) that
 * lets them be rewritten once known: zstd a skippable frame with this
 * magic, listed in the seek table as a frame of 0 decompressed bytes; xz
 * blocks of 0 bytes after the headers' block, in the same stream (older
 * files kept the headers in an .xz stream of their own followed by stream
 * padding; the reader takes both).
 */
#define ROOM_SKIPPABLE_MAGIC 0x184D2A5Au
#define HOLE_MAP_MAGIC	     "KCDHOLE1"
#define HOLE_MAP_HEAD	     24u /* magic, size, runs */
#define HOLE_MAP_RUN	     16u
#define HOLE_MAP2_MAGIC	     "KCDHOLE2"
#define HOLE_MAP2_HEAD	     32u /* magic, size, runs, encoded size */
/* At most two 10-byte LEB128 numbers a run. */
#define HOLE_MAP2_MAX_RUN   20u
#define XZ_HOLE_HEADER_SIZE 64u

/* The .xz stream header magic (6 bytes, the last one NUL). */
#define XZ_MAGIC \
	"\xFD"   \
	"7zXZ"
#define XZ_MAGIC_LEN 6

struct kcore_source;
/* A .zst/.xz source (stream-source.c): its frame cache limit, and the frames
 * decoded so far; other sources: nothing, 0. */
void kcore_stream_source_set_cache(struct kcore_source *src, size_t bytes);
uint64_t kcore_stream_source_decoded(const struct kcore_source *src);
/* Decompressed bytes of its frames that hold data (0: not a seekable
 * stream). */
uint64_t kcore_stream_source_data_frame_bytes(struct kcore_source *src);
/* A run of pages with data just decoded: [offset, offset + len) of the
 * decompressed stream (kcore_view_data_fn). */
typedef void kcore_prefetch_fn(void *arg, uint64_t offset, const void *data,
			       size_t len);
/*
 * Decode the frames with data of a seekable .zst source into its frame
 * cache from another thread when they all fit in it, never pushing out a
 * frame; until *stop (may be NULL) is set.  The decoding is done outside
 * the source's lock, so reads go on meanwhile.  With fn, every frame with
 * data is decoded (those readers decoded first too) and, instead of being
 * cached, gives fn its runs of pages with data, outside every lock (the
 * caller keeps them).  Other sources: nothing.
 */
struct kcore_error *kcore_stream_source_prefetch(struct kcore_source *src,
						 volatile sig_atomic_t *stop,
						 kcore_prefetch_fn *fn,
						 void *arg);

/*
 * The parts of that prefetch (stream-reader.c).  Under the caller's lock:
 * prefetch_next (the next zstd frame from *frame on that has data and is
 * not cached, while the cache has room) and prefetch_insert (the frame
 * decoded into the cache unless a reader decoded it meanwhile: true;
 * false when it does not fit).  Without it: prefetch_decode, which reads
 * only what opening the stream fixed.
 */
struct kcore_prefetch;
struct kcore_istream;
/* Whether s is a seekable .zst whose frames with data all fit its cache
 * (under the caller's lock, once). */
bool kcore_istream_prefetch_fits(const struct kcore_istream *s);
struct kcore_error *kcore_prefetch_create(struct kcore_prefetch **ret);
void kcore_prefetch_destroy(struct kcore_prefetch *p);
/* all: frames already cached too, and while the cache is full. */
bool kcore_istream_prefetch_next(struct kcore_istream *s, uint64_t *frame,
				 bool all);
/* keep: packed for prefetch_insert (else only for prefetch_publish). */
struct kcore_error *kcore_istream_prefetch_decode(struct kcore_istream *s,
						  struct kcore_prefetch *p,
						  uint64_t frame, bool keep);
bool kcore_istream_prefetch_insert(struct kcore_istream *s,
				   struct kcore_prefetch *p, uint64_t frame);
/*
 * The runs of pages with data of the frame prefetch_decode decoded last,
 * to fn (no lock needed): whole pages of the system's page size at
 * multiples of it (the page a frame's end cuts is given with the next
 * frame published, or by prefetch_flush once the last one was).
 */
void kcore_istream_prefetch_publish(const struct kcore_istream *s,
				    struct kcore_prefetch *p, uint64_t frame,
				    kcore_prefetch_fn *fn, void *arg);
void kcore_istream_prefetch_flush(const struct kcore_istream *s,
				  struct kcore_prefetch *p,
				  kcore_prefetch_fn *fn, void *arg);

static inline void stream_put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static inline void stream_put_le64(unsigned char *p, uint64_t v)
{
	stream_put_le32(p, (uint32_t)v);
	stream_put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline uint32_t stream_get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t stream_get_le64(const unsigned char *p)
{
	return stream_get_le32(p) | (uint64_t)stream_get_le32(p + 4) << 32;
}

#endif
