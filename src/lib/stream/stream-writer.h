/* SPDX-License-Identifier: MIT */
/*
 * The compressed stream writer's own declarations (stream-writer.c and
 * the files it is cut into; not installed): the writer's state and what
 * one part calls in another.  From the bottom up: stream-writer-jobs.c
 * (the frames handed to the worker pool and written in order, and the
 * errors of both codecs), stream-writer-zstd.c and stream-writer-xz.c
 * (each container), stream-writer.c (create, write, finish, destroy)
 * and stream-writer-stored.c (the stored frame and its room).
 */
#ifndef KCOREDUMP_STREAM_WRITER_H
#define KCOREDUMP_STREAM_WRITER_H

#include <lzma.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "kcoredump/error.h"
#include "kcoredump/stream.h"
#include "stream-internal.h"

/*
 * zstd: a zero run of a frame or more is written as frames of zeros built
 * here (RFC 8878), not compressed: a frame header with the content size
 * and a 128 KiB window, then RLE blocks of the byte 0, 128 KiB each (the
 * format's largest block; 4 bytes each, so 32 MiB per TiB of zeros, its
 * floor), the last one flagged, no checksum.  The frames are as large as
 * the reader holds whole (KCORE_STREAM_MAX_FRAME): the run's part short of
 * whole ones first, then one prebuilt frame again and again, so their
 * headers and seek table entries (18 bytes a frame) add 0.9% to the
 * blocks.  Larger ones would make the stream sequential to readers.
 */
#define HOLE_FRAME     ((uint64_t)KCORE_STREAM_MAX_FRAME)
#define RLE_BLOCK      ((uint64_t)ZSTD_BLOCKSIZE_MAX)
#define RLE_FRAME_HEAD 10u /* magic, descriptor, window, u32 size */
#define RLE_FRAME_LEN(len) \
	(RLE_FRAME_HEAD + 4 * (((len) + RLE_BLOCK - 1) / RLE_BLOCK))
#define RLE_FRAME_WINDOW_DESC 0x38u /* 2^(10 + 7): 128 KiB */

/* Small outputs (zero frames, the table) are gathered into one write. */
#define OBUF_SIZE  (256u << 10)
#define ZERO_CHUNK (1u << 20)

/*
 * xz: the room after the stored block.  Nothing inside an .xz stream is
 * skipped by its decoders, so the room is blocks of 0 bytes, listed in the
 * index: a block header padded to 12..1024 bytes (the format allows it),
 * LZMA2's end marker, block padding and the CRC64 of nothing.  Such a block
 * takes XZ_ROOM_MIN..XZ_ROOM_MAX bytes (a multiple of 4), so a room is 0 or
 * at least XZ_ROOM_MIN bytes.  The stored block, its room and the data are
 * one stream: decoders that stop after the first (systemd 252's) get the
 * whole core.
 */
#define XZ_EMPTY_HEADER 12u
#define XZ_ROOM_MIN	24u
#define XZ_ROOM_MAX	(XZ_ROOM_MIN - XZ_EMPTY_HEADER + LZMA_BLOCK_HEADER_SIZE_MAX)

struct job {
	unsigned char *in;  /* frame_size bytes */
	unsigned char *out; /* out_cap bytes */
	size_t in_len;
	const unsigned char *result; /* out, or the shared zero frame */
	size_t result_len;
	uint64_t unpadded; /* xz: the block's unpadded size */
};

struct kcore_ostream {
	enum kcore_compress method;
	int fd;
	char *path;
	const struct kcore_io_ops *io;
	int level;
	size_t frame_size;
	size_t out_cap;
	uint64_t bytes_in;
	uint64_t bytes_out;
	bool finished;
	bool dead;	 /* an error happened: refuse everything after it */
	bool pipe_grown; /* kcore_ostream_splice() asked for a larger pipe */

	/* One job per slot of the worker pool (common/pool.c), which
	 * compresses them and gives them back in order. */
	struct job *jobs;
	unsigned nslots;
	struct kcore_pool *pool;
	uint64_t submitted; /* jobs handed to it */
	size_t fill;	    /* bytes in the job being filled */
	bool filling;	    /* the pool's next slot is reserved */
	ZSTD_CCtx **cctx;   /* zstd: one per worker */
	unsigned nthreads;

	unsigned char *zero_frame;
	size_t zero_frame_len;
	unsigned char *hole_frame; /* zstd: HOLE_FRAME zeros */
	size_t hole_frame_len;
	uint64_t zero_unpadded;
	unsigned char *zeros; /* ZERO_CHUNK zero bytes (NONE) */

	unsigned char *obuf;
	size_t olen;

	/* zstd: the zero runs written, start/length pairs (hole map). */
	uint64_t *holes;
	size_t nholes, holes_cap;

	/* zstd: the seek table entries; xz: the index. */
	uint32_t *entries;
	uint64_t nframes;
	uint64_t entries_cap;
	lzma_index *index;
	lzma_options_lzma lzma_opts;
	lzma_filter filters[2];

	/* The stored frame (zstd: at offset 0, xz: after the stream
	 * header) and the room after it (stored_room bytes for both), its
	 * seek table entry (zstd) or the empty blocks of its room (xz),
	 * where the seek table (xz: the index) starts, and what growing the
	 * room moved the rest by. */
	bool has_stored;
	size_t stored_len;
	uint64_t stored_room, stored_entry, room_blocks, seek_table_off,
		room_grown;
};

/* ---- stream-writer-jobs.c ---- */
struct kcore_error *sw_zstd_error(const struct kcore_ostream *s,
				  const char *what, size_t code);
struct kcore_error *sw_lzma_error(const struct kcore_ostream *s,
				  const char *what, lzma_ret ret);
struct kcore_error *sw_compress_frame(struct kcore_ostream *s, ZSTD_CCtx *cctx,
				      const unsigned char *in, size_t len,
				      unsigned char *out, size_t *ret_len,
				      uint64_t *ret_unpadded);
struct kcore_error *sw_run_job(void *arg, unsigned worker, size_t slot);
struct kcore_error *sw_flush_obuf(struct kcore_ostream *s);
struct kcore_error *sw_emit(struct kcore_ostream *s, const void *buf,
			    size_t len);
struct kcore_error *sw_record_frame(struct kcore_ostream *s, size_t comp_len,
				    uint64_t unpadded, size_t in_len);
struct kcore_error *sw_drain(struct kcore_ostream *s, bool wait);
struct kcore_error *sw_reserve(struct kcore_ostream *s);
struct kcore_error *sw_submit_frame(struct kcore_ostream *s,
				    const unsigned char *result,
				    size_t result_len, uint64_t unpadded,
				    size_t in_len);
struct kcore_error *sw_submit(struct kcore_ostream *s, bool zero_frame);

/* ---- stream-writer-zstd.c ---- */
size_t sw_build_rle_frame(unsigned char *out, uint64_t len);
struct kcore_error *sw_zstd_cctx_setup(const struct kcore_ostream *s,
				       ZSTD_CCtx *cctx);
struct kcore_error *sw_record_hole(struct kcore_ostream *s, uint64_t len);
struct kcore_error *sw_zstd_zero_run(struct kcore_ostream *s, uint64_t len);
struct kcore_error *sw_write_seek_table(struct kcore_ostream *s);
struct kcore_error *sw_write_hole_map(struct kcore_ostream *s);

/* ---- stream-writer-xz.c ---- */
struct kcore_error *sw_xz_trailer(const struct kcore_ostream *s,
				  const lzma_index *index, unsigned char **ret,
				  size_t *ret_len);
struct kcore_error *sw_write_xz_trailer(struct kcore_ostream *s);
struct kcore_error *sw_xz_mark_hole(struct kcore_ostream *s, unsigned char *out,
				    size_t *len, uint64_t *unpadded);
struct kcore_error *sw_xz_build_room(const struct kcore_ostream *s,
				     uint64_t len, lzma_index *index,
				     unsigned char **ret, uint64_t *ret_blocks);

/* ---- stream-writer.c ---- */
struct kcore_error *sw_fail(struct kcore_ostream *s, struct kcore_error *err);
struct kcore_error *sw_check_alive(struct kcore_ostream *s);

#endif
