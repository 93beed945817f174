/* SPDX-License-Identifier: MIT */
/*
 * The compressed stream reader's own declarations (stream-reader.c and
 * the files it is cut into; not installed): the reader's state, the
 * frame cache's slots, and what one part calls in another.  From the
 * bottom up: stream-cache.c (the decoded frames kept, and the helpers
 * every decoder uses), stream-holes.c (the hole map), stream-zstd.c and
 * stream-xz.c (their indexes and frames), stream-seq.c (decoding front
 * to back), stream-reader.c (open, reads, destroy) and
 * stream-prefetch.c (decoding on another thread).
 */
#ifndef KCOREDUMP_STREAM_READER_H
#define KCOREDUMP_STREAM_READER_H

#include <lzma.h>
#include <stdbool.h>
#include <stdint.h>
#include <zstd.h>

#include "kcoredump/error.h"
#include "kcoredump/stream.h"
#include "stream-internal.h"

#define IBUF_SIZE (1u << 20)
/* Limits for the index the reader accepts; see KCORE_STREAM_MAX_FRAME. */
#define MAX_FRAME_SIZE	  ((uint64_t)KCORE_STREAM_MAX_FRAME)
#define XZ_INDEX_MEMLIMIT (1ull << 30)
#define MAX_CACHE_SLOTS	  (1u << 20)

/*
 * One decoded frame (zstd) or block (xz) in the cache, packed: buf holds one
 * uint32_t per PACK_PAGE bytes of the frame (0: all zeros, else k + 1 for the
 * k-th stored page), then the pages that are not all zeros.  A frame of a
 * mostly empty dump costs the memory of its data, not of its size.
 */
#define PACK_PAGE 4096u

struct cache_slot {
	uint64_t frame; /* UINT64_MAX: empty */
	uint64_t start; /* decompressed offset of its first byte */
	size_t len;
	unsigned char *buf;
	size_t cap;
	uint64_t used; /* the reader's clock when last read */
};

/*
 * What decoding a frame for the cache takes: a zstd context, the frame's
 * compressed bytes, the decoded frame (a buffer reused from frame to
 * frame) and, while it is packed, its page map (see cache_slot) and the
 * count of pages it stores.  The reader has one; a prefetch thread has
 * its own.
 */
struct frame_dec {
	ZSTD_DCtx *dctx;
	unsigned char *cbuf, *fbuf;
	size_t cbuf_cap, fbuf_cap;
	uint32_t *map;
	size_t map_cap; /* entries */
	size_t stored;
};

struct kcore_istream {
	enum kcore_compress method;
	int fd;
	char *path;
	bool fd_seekable; /* regular file or block device: pread works */
	uint64_t file_size;

	/* Random access. */
	bool seekable;
	const char *index_problem;
	uint64_t nframes;
	uint64_t *c_off; /* zstd: nframes + 1 file offsets */
	uint64_t *d_off; /* zstd: nframes + 1 decompressed offsets */
	lzma_index *xz_index;
	uint64_t total;
	struct cache_slot *slots;
	unsigned nslots, slots_cap;
	uint32_t *slot_of;  /* per frame: its slot + 1, or 0 */
	size_t cache_bytes; /* sum of the slots' buffers */
	size_t cache_limit;
	uint64_t clock;
	struct cache_slot *cur; /* the slot being filled */
	uint64_t decoded;	/* frames decoded (cache misses) */
	/* The hole map: sorted, disjoint zero runs (start, end pairs), what
	 * next_data answers.  zholes: its whole frames (blocks) checked to
	 * hold zeros, which reads return without decoding; the rest of a
	 * run is read from its frame, decoded anyway for its data, and a
	 * frame that holds data where the map says hole drops the map. */
	uint64_t *holes;
	size_t nholes;
	uint64_t *zholes;
	size_t nzholes;
	const char *hole_map_problem;
	struct frame_dec dec;

	/* Sequential decoding. */
	uint64_t pos;	   /* decompressed bytes delivered */
	uint64_t in_read;  /* compressed bytes read from the fd */
	uint64_t in_used;  /* compressed bytes the decoder consumed */
	uint64_t frame_at; /* where the current zstd frame starts */
	unsigned char *ibuf;
	size_t ibuf_len;
	size_t ibuf_pos;
	bool in_eof;
	bool seq_end;
	bool frame_open; /* zstd: inside a frame */
	ZSTD_DStream *ds;
	/* zstd on a file: frame starts the decoder passed, (compressed,
	 * decompressed) offset pairs at least MARK_SPACING apart, so that a
	 * read backwards restarts from the frame that holds it. */
	uint64_t *marks;
	size_t nmarks, marks_cap;
	lzma_stream lz;
	bool lz_ready;
	unsigned char *scratch;
};

/* ---- stream-cache.c ---- */
struct kcore_error *sr_format_error(const struct kcore_istream *s,
				    uint64_t offset, const char *what);
struct kcore_error *sr_file_read(const struct kcore_istream *s, void *buf,
				 size_t len, uint64_t offset);
uint64_t sr_zstd_find_frame(const struct kcore_istream *s, uint64_t offset);
struct kcore_error *sr_grow(unsigned char **buf, size_t *cap, size_t len);
bool sr_slot_index(struct kcore_istream *s);
struct cache_slot *sr_new_slot(struct kcore_istream *s);
struct kcore_error *sr_dec_frame_buffer(struct frame_dec *d, size_t dsize);
void sr_dec_deinit(struct frame_dec *d);
struct kcore_error *sr_pack_plan(struct frame_dec *d, size_t len,
				 size_t *ret_bytes);
void sr_pack_copy(const struct frame_dec *d, size_t len, unsigned char *out);
struct kcore_error *sr_pack_frame(struct kcore_istream *s, size_t len);
void sr_slot_copy(const struct cache_slot *c, size_t rel, unsigned char *out,
		  size_t n);
void sr_slot_done(struct kcore_istream *s, uint64_t frame, uint64_t start,
		  size_t len);
struct cache_slot *sr_cache_find(struct kcore_istream *s, uint64_t offset);
size_t sr_run_after(const uint64_t *runs, size_t n, uint64_t offset);

/* ---- stream-holes.c ---- */
struct kcore_error *sr_add_hole(struct kcore_istream *s, size_t *cap,
				uint64_t start, uint64_t end);
void sr_drop_holes(struct kcore_istream *s, const char *why);
struct kcore_error *sr_copy_holes(struct kcore_istream *s);
struct kcore_error *sr_zstd_read_hole_map(struct kcore_istream *s);

/* ---- stream-zstd.c ---- */
struct kcore_error *sr_zstd_parse_seek_table(struct kcore_istream *s);
struct kcore_error *sr_zstd_decode(const struct kcore_istream *s,
				   struct frame_dec *d, uint64_t i);
struct kcore_error *sr_zstd_decode_frame(struct kcore_istream *s, uint64_t i);

/* ---- stream-xz.c ---- */
struct kcore_error *sr_xz_parse_index(struct kcore_istream *s);
struct kcore_error *sr_xz_decode_block(struct kcore_istream *s,
				       uint64_t offset);

/* ---- stream-seq.c ---- */
bool sr_zstd_seq_rewind(struct kcore_istream *s, uint64_t offset);
struct kcore_error *sr_seq_read(struct kcore_istream *s, void *buf, size_t len,
				size_t *ret_done);

#endif
