/* SPDX-License-Identifier: MIT */
/*
 * Whole-stream compression: the .zst and .xz containers a dump can be
 * written into, and the reader that gets the bytes back, by random access
 * when the container allows it.
 *
 * Writing is sequential (the output may be a pipe).  The input is cut into
 * independent frames of frame_size uncompressed bytes that worker threads
 * compress in parallel; frames are written in order.
 *   zstd: one zstd frame per piece, each with a content checksum, then a
 *         seek table in the zstd seekable format (contrib/seekable_format):
 *         plain "zstd -d" skips the table and restores the input.
 *   xz:   one .xz stream with one block per piece (sizes in every block
 *         header, CRC64 check) and the usual index: "xz -d" restores the
 *         input, and the index locates each block.
 * Memory stays O(threads * frame_size), plus 8 bytes of seek table or
 * index per frame.
 *
 * Both carry kcoredump's hole map (kcoredump(8) HOLE MAP; zstd: a
 * skippable frame, xz: zero blocks marked by their header), which the
 * reader uses to answer reads of zero runs without decoding and to tell
 * data from holes (kcore_istream_next_data).
 */
#ifndef KCOREDUMP_STREAM_H
#define KCOREDUMP_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "io.h"

#ifdef __cplusplus
extern "C" {
#endif

enum kcore_compress {
	KCORE_COMPRESS_NONE,
	KCORE_COMPRESS_ZSTD,
	KCORE_COMPRESS_XZ,
	KCORE_COMPRESS_NUM
};

/* "none", "zstd", "xz" and back; -1 if unknown. */
const char *kcore_compress_name(enum kcore_compress c);
int kcore_compress_from_name(const char *name);
/* ".zst"/".zstd" -> ZSTD, ".xz" -> XZ, anything else -> NONE. */
enum kcore_compress kcore_compress_from_suffix(const char *path);

/* Defaults chosen for speed: dumping live memory should not wait on us. */
#define KCORE_ZSTD_DEFAULT_LEVEL   1
#define KCORE_XZ_DEFAULT_LEVEL	   1
#define KCORE_STREAM_DEFAULT_FRAME (4u << 20)
#define KCORE_STREAM_MIN_FRAME	   (4u << 10)
/*
 * The largest frame (xz: block) the random-access reader holds whole, and
 * so the largest frame the writer makes.  A stream with larger frames
 * (another writer's) is read front to back instead.
 */
#define KCORE_STREAM_MAX_FRAME (64u << 20)
/* Decoded frames the random-access reader keeps by default (at least one
 * frame). */
#define KCORE_STREAM_CACHE_DEFAULT (64u << 20)
/* The decoder memory (zstd window, xz dictionary and threads) the
 * sequential reader allows; streams that need more are refused. */
#define KCORE_STREAM_MAX_WINDOW_LOG 27
#define KCORE_STREAM_MAX_WINDOW	    (1u << KCORE_STREAM_MAX_WINDOW_LOG)

struct kcore_ostream_opts {
	enum kcore_compress method;
	/*
	 * 0 = default (KCORE_ZSTD_DEFAULT_LEVEL, KCORE_XZ_DEFAULT_LEVEL).
	 * zstd: ZSTD_minCLevel()..ZSTD_maxCLevel() (negative = faster);
	 * xz: 1..9 (the xz preset).  Ignored for NONE.
	 */
	int level;
	unsigned threads;    /* compression threads; 0 = online CPUs */
	uint64_t frame_size; /* uncompressed bytes per frame; 0 = 4 MiB */
	const struct kcore_io_ops *io; /* NULL = the real system calls */
};

struct kcore_ostream;

/*
 * Start a compressed stream written to fd (path names it in errors).  The
 * fd is only ever written sequentially with kcore_write_all().  opts may be
 * NULL for zstd with all defaults.
 */
struct kcore_error *kcore_ostream_create(int fd, const char *path,
					 const struct kcore_ostream_opts *opts,
					 struct kcore_ostream **ret);
struct kcore_error *kcore_ostream_write(struct kcore_ostream *s,
					const void *buf, size_t len);
/* Append len zero bytes; whole zero frames cost no compression. */
struct kcore_error *kcore_ostream_write_zeros(struct kcore_ostream *s,
					      uint64_t len);
/*
 * Whether kcore_ostream_splice() can move bytes into the stream: a plain
 * one (NONE) on a pipe, written with the system calls.
 */
bool kcore_ostream_can_splice(const struct kcore_ostream *s);
/*
 * Up to len bytes of fd from offset moved into the stream by splice(2),
 * never copied through this process: the bytes moved (what a short
 * source or a pipe's room allowed), or -1 with errno set (the source's
 * error or the pipe's).  The caller writes what did not move.
 */
ssize_t kcore_ostream_splice(struct kcore_ostream *s, int fd, uint64_t offset,
			     size_t len);
/*
 * Compress what is pending, write the seek table or index and wait for
 * every byte to be written.  No writes are accepted afterwards.  After any
 * error the stream is dead: every later call fails.
 */
struct kcore_error *kcore_ostream_finish(struct kcore_ostream *s);
/* Stops the workers; an unfinished stream is left incomplete. */
void kcore_ostream_destroy(struct kcore_ostream *s);

/*
 * A stored frame: the dump's headers, written first and rewritten once
 * the stream is finished (on a seekable fd that can be read back), with
 * other bytes of the same length.  Compressed like the rest (zstd: a
 * frame at a level of at least 3; xz: the stream's first block), followed
 * by room for spare more compressed bytes (zstd: a skippable frame; xz:
 * blocks of 0 bytes, so that the file stays one .xz stream) that a
 * rewrite may take.  A rewrite that does not fit there moves everything
 * after it (a copy of the file's rest).  For NONE it is plain data.
 * *ret_offset is where it starts in the decompressed output (0 for zstd
 * and xz).
 */
struct kcore_error *kcore_ostream_write_stored(struct kcore_ostream *s,
					       const void *buf, size_t len,
					       uint64_t spare,
					       uint64_t *ret_offset);
struct kcore_error *kcore_ostream_rewrite_stored(struct kcore_ostream *s,
						 uint64_t offset,
						 const void *buf, size_t len);
/* Bytes a rewrite that did not fit its room moved the rest by. */
uint64_t kcore_ostream_room_grown(const struct kcore_ostream *s);
uint64_t kcore_ostream_bytes_in(const struct kcore_ostream *s);
/* Bytes handed to the fd so far (all of them after finish). */
uint64_t kcore_ostream_bytes_out(const struct kcore_ostream *s);

struct kcore_istream;

/*
 * Open a zstd or xz stream on fd.  A regular file or block device is read
 * with pread() and, when its seek table or index is valid, allows random
 * access; anything else (a pipe) is read sequentially.  Fails with
 * KCORE_ERR_FORMAT "not a zstd or xz stream" for anything else.
 */
struct kcore_error *kcore_istream_open(int fd, const char *path,
				       struct kcore_istream **ret);
enum kcore_compress kcore_istream_method(const struct kcore_istream *s);
/* zstd with a valid seek table, or xz with a readable index, on a file. */
bool kcore_istream_seekable(const struct kcore_istream *s);
/*
 * Why a file stream is not seekable ("no seek table", "seek table sizes do
 * not add up to the file size", ...), or NULL if it is, or is a pipe.
 */
const char *kcore_istream_index_problem(const struct kcore_istream *s);
/* Total decompressed size if seekable, else UINT64_MAX. */
uint64_t kcore_istream_size(const struct kcore_istream *s);
/* Number of frames (zstd) or blocks (xz) if seekable, else 0. */
uint64_t kcore_istream_frames(const struct kcore_istream *s);

/*
 * A hole map (kcoredump's, see above) was found and checked: the stream
 * is seekable and kcore_istream_next_data() tells zero runs apart.
 */
bool kcore_istream_has_hole_map(const struct kcore_istream *s);
/*
 * The first decompressed byte at or after offset, below end, that is not
 * in a zero run of the hole map, and the end of its run: *data = *data_end
 * = end (or the stream's size) when only zeros remain.  Without a map
 * everything is data.
 */
void kcore_istream_next_data(const struct kcore_istream *s, uint64_t offset,
			     uint64_t end, uint64_t *data, uint64_t *data_end);
/*
 * Decompressed bytes of the frames (blocks) that hold data, not only zero
 * runs of the hole map: what a cache holding every frame a reader may
 * decode needs.  0 when the stream is not seekable.
 */
uint64_t kcore_istream_data_frame_bytes(const struct kcore_istream *s);
/* Bytes of decoded frames to keep (0: KCORE_STREAM_CACHE_DEFAULT). */
void kcore_istream_set_cache_limit(struct kcore_istream *s, size_t bytes);
/* Frames (blocks) decoded so far by random access: cache misses. */
uint64_t kcore_istream_frames_decoded(const struct kcore_istream *s);
/*
 * Bytes the cache of decoded frames holds: a frame is kept packed (its
 * 4 KiB pages that are not all zeros, and a map), so this follows the
 * data decoded, not the frames' size.
 */
size_t kcore_istream_cache_bytes(const struct kcore_istream *s);

/*
 * Read decompressed bytes [offset, offset + len).  Seekable streams decode
 * only the frames involved, keep the most recently used ones (up to the
 * cache limit), and answer zero runs of the hole map without decoding.  A
 * stream that is not seekable is decoded sequentially, so offsets must not go
 * backwards (KCORE_ERR_UNSUPPORTED).  *ret_done is short only at the end
 * of the stream.
 */
struct kcore_error *kcore_istream_pread(struct kcore_istream *s, void *buf,
					size_t len, uint64_t offset,
					size_t *ret_done);
/*
 * Read the next bytes in order with the streaming decoder (multi-threaded
 * for xz); *ret_done is len, or less only at the end of the stream (0 =
 * end).  On a seekable stream pread does not move this position; on a
 * sequential one both share the decoder's position.
 */
struct kcore_error *kcore_istream_read(struct kcore_istream *s, void *buf,
				       size_t len, size_t *ret_done);
void kcore_istream_destroy(struct kcore_istream *s);

#ifdef __cplusplus
}
#endif

#endif
