// SPDX-License-Identifier: MIT
/*
 * The compressed stream writer.  Input is cut into frames of frame_size
 * bytes; worker threads compress whole frames independently (one zstd
 * frame or one xz block each) and the caller's thread writes the results
 * in order, so the output is sequential and every frame can later be
 * decoded alone.  Whole-frame zero runs reuse one precompressed frame;
 * zstd builds the frames of long zero runs itself (see HOLE_FRAME).
 *
 * zstd's own multi-threading (ZSTD_c_nbWorkers) cuts a frame into jobs
 * that depend on each other, so it cannot give independent frames; and
 * liblzma's lzma_stream_encoder_mt() hides its blocks, so zero blocks
 * could not be reused.  Both containers are therefore assembled here.
 *
 * Both carry a hole map (stream-internal.h): zstd the zero runs handed to
 * kcore_ostream_write_zeros() in a skippable frame, xz its zero blocks
 * marked by their header size.
 */
#include <errno.h>
#include <inttypes.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>
#include <zstd.h>

#include "kcoredump/stream.h"
#include "pool.h"
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
#define OBUF_SIZE   (256u << 10)
#define ZERO_CHUNK  (1u << 20)
#define MAX_THREADS 256u

static const char *const compress_names[KCORE_COMPRESS_NUM] = {
	[KCORE_COMPRESS_NONE] = "none",
	[KCORE_COMPRESS_ZSTD] = "zstd",
	[KCORE_COMPRESS_XZ] = "xz",
};

const char *kcore_compress_name(enum kcore_compress c)
{
	return (unsigned)c < KCORE_COMPRESS_NUM ? compress_names[c] : "unknown";
}

int kcore_compress_from_name(const char *name)
{
	for (int i = 0; i < KCORE_COMPRESS_NUM; i++)
		if (strcmp(compress_names[i], name) == 0)
			return i;
	return -1;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

enum kcore_compress kcore_compress_from_suffix(const char *path)
{
	if (!path)
		return KCORE_COMPRESS_NONE;
	if (has_suffix(path, ".zst") || has_suffix(path, ".zstd"))
		return KCORE_COMPRESS_ZSTD;
	if (has_suffix(path, ".xz"))
		return KCORE_COMPRESS_XZ;
	return KCORE_COMPRESS_NONE;
}

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
	bool dead; /* an error happened: refuse everything after it */

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

static struct kcore_error *zstd_error(const struct kcore_ostream *s,
				      const char *what, size_t code)
{
	return kcore_error_create(KCORE_ERR_OS, 0, s->path, "zstd %s: %s", what,
				  ZSTD_getErrorName(code));
}

static struct kcore_error *lzma_error(const struct kcore_ostream *s,
				      const char *what, lzma_ret ret)
{
	if (ret == LZMA_MEM_ERROR)
		return &kcore_error_nomem;
	return kcore_error_create(KCORE_ERR_OS, 0, s->path,
				  "xz %s failed (liblzma error %d)", what,
				  (int)ret);
}

static bool all_zero(const unsigned char *p, size_t len)
{
	static const unsigned char z[256];

	while (len >= sizeof(z)) {
		if (memcmp(p, z, sizeof(z)) != 0)
			return false;
		p += sizeof(z);
		len -= sizeof(z);
	}
	return memcmp(p, z, len) == 0;
}

/*
 * A zstd frame of len (1..HOLE_FRAME) zero bytes in out, which has room
 * for RLE_FRAME_LEN(len) bytes (see HOLE_FRAME); its length.
 */
static size_t build_rle_frame(unsigned char *out, uint64_t len)
{
	size_t n = RLE_FRAME_HEAD;

	stream_put_le32(out, ZSTD_FRAME_MAGIC);
	out[4] = 0x80; /* 4-byte content size, a window, no checksum */
	out[5] = RLE_FRAME_WINDOW_DESC;
	stream_put_le32(out + 6, (uint32_t)len);
	while (len) {
		uint64_t b = len < RLE_BLOCK ? len : RLE_BLOCK;
		/* Last_Block, Block_Type 1 (RLE), Block_Size. */
		uint32_t h = (len == b ? 1u : 0u) | 1u << 1 | (uint32_t)b << 3;

		out[n] = (unsigned char)h;
		out[n + 1] = (unsigned char)(h >> 8);
		out[n + 2] = (unsigned char)(h >> 16);
		out[n + 3] = 0; /* the byte repeated */
		n += 4;
		len -= b;
	}
	return n;
}

static struct kcore_error *zstd_cctx_setup(const struct kcore_ostream *s,
					   ZSTD_CCtx *cctx)
{
	size_t r;

	r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, s->level);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
	if (ZSTD_isError(r))
		return zstd_error(s, "setup", r);
	return NULL;
}

/* Compress one frame into out; thread-safe given its own cctx. */
static struct kcore_error *compress_frame(struct kcore_ostream *s,
					  ZSTD_CCtx *cctx,
					  const unsigned char *in, size_t len,
					  unsigned char *out, size_t *ret_len,
					  uint64_t *ret_unpadded)
{
	if (s->method == KCORE_COMPRESS_ZSTD) {
		size_t r = ZSTD_compress2(cctx, out, s->out_cap, in, len);

		if (ZSTD_isError(r))
			return zstd_error(s, "compression", r);
		*ret_len = r;
		*ret_unpadded = 0;
	} else {
		lzma_block block = {
			.version = 0,
			.check = LZMA_CHECK_CRC64,
			.filters = s->filters,
		};
		size_t pos = 0;
		lzma_ret ret = lzma_block_buffer_encode(&block, NULL, in, len,
							out, &pos, s->out_cap);

		if (ret != LZMA_OK)
			return lzma_error(s, "block compression", ret);
		*ret_len = pos;
		*ret_unpadded = lzma_block_unpadded_size(&block);
	}
	return NULL;
}

/* The pool's job function: compress one frame. */
static struct kcore_error *run_job(void *arg, unsigned worker, size_t slot)
{
	struct kcore_ostream *s = arg;
	struct job *j = &s->jobs[slot];

	if (j->in_len == s->frame_size && s->zero_frame &&
	    all_zero(j->in, j->in_len)) {
		j->result = s->zero_frame;
		j->result_len = s->zero_frame_len;
		j->unpadded = s->zero_unpadded;
		return NULL;
	}
	j->result = j->out;
	return compress_frame(s, s->cctx ? s->cctx[worker] : NULL, j->in,
			      j->in_len, j->out, &j->result_len, &j->unpadded);
}

static struct kcore_error *flush_obuf(struct kcore_ostream *s)
{
	struct kcore_error *err;

	if (!s->olen)
		return NULL;
	err = kcore_write_all(s->io, s->fd, s->path, s->obuf, s->olen);
	if (err)
		return err;
	s->bytes_out += s->olen;
	s->olen = 0;
	return NULL;
}

static struct kcore_error *emit(struct kcore_ostream *s, const void *buf,
				size_t len)
{
	struct kcore_error *err;

	if (s->olen + len <= OBUF_SIZE) {
		memcpy(s->obuf + s->olen, buf, len);
		s->olen += len;
		return NULL;
	}
	err = flush_obuf(s);
	if (err)
		return err;
	if (len < OBUF_SIZE / 2) {
		memcpy(s->obuf, buf, len);
		s->olen = len;
		return NULL;
	}
	err = kcore_write_all(s->io, s->fd, s->path, buf, len);
	if (err)
		return err;
	s->bytes_out += len;
	return NULL;
}

static struct kcore_error *record_frame(struct kcore_ostream *s,
					size_t comp_len, uint64_t unpadded,
					size_t in_len)
{
	if (s->method == KCORE_COMPRESS_XZ) {
		lzma_ret ret =
			lzma_index_append(s->index, NULL, unpadded, in_len);

		return ret == LZMA_OK ? NULL : lzma_error(s, "index", ret);
	}
	if (s->nframes >= SEEKABLE_MAX_FRAMES)
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, s->path,
					  "more than %u zstd frames; use a "
					  "larger frame size",
					  SEEKABLE_MAX_FRAMES);
	if (s->nframes == s->entries_cap) {
		uint64_t cap = s->entries_cap ? 2 * s->entries_cap : 1024;
		uint32_t *e = realloc(s->entries, cap * 2 * sizeof(*e));

		if (!e)
			return &kcore_error_nomem;
		s->entries = e;
		s->entries_cap = cap;
	}
	/* compressBound(1 GiB) < 4 GiB, so both fit. */
	s->entries[2 * s->nframes] = (uint32_t)comp_len;
	s->entries[2 * s->nframes + 1] = (uint32_t)in_len;
	s->nframes++;
	return NULL;
}

/* Write out the oldest job, waiting for it if wait is set. */
static struct kcore_error *write_oldest(struct kcore_ostream *s, bool wait,
					bool *ret_wrote)
{
	struct kcore_error *err = NULL;
	struct job *j;
	size_t slot;

	*ret_wrote = kcore_pool_retire(s->pool, wait, &slot, &err);
	if (!*ret_wrote || err)
		return err;
	j = &s->jobs[slot];
	err = record_frame(s, j->result_len, j->unpadded, j->in_len);
	if (!err)
		err = emit(s, j->result, j->result_len);
	return err;
}

static struct kcore_error *drain(struct kcore_ostream *s, bool wait)
{
	bool wrote = true;

	while (wrote) {
		struct kcore_error *err = write_oldest(s, wait, &wrote);

		if (err)
			return err;
	}
	return NULL;
}

/* Reserve the slot of the next job, writing out old jobs to free it. */
static struct kcore_error *reserve(struct kcore_ostream *s)
{
	while (kcore_pool_full(s->pool)) {
		bool wrote;
		struct kcore_error *err = write_oldest(s, true, &wrote);

		if (err)
			return err;
	}
	s->filling = true;
	return NULL;
}

/*
 * Hand over the job being filled: to the workers, or (result set) as a
 * frame already made of in_len bytes, result_len bytes at result.
 */
static struct kcore_error *submit_frame(struct kcore_ostream *s,
					const unsigned char *result,
					size_t result_len, uint64_t unpadded,
					size_t in_len)
{
	struct job *j = &s->jobs[kcore_pool_next(s->pool)];

	j->in_len = result ? in_len : s->fill;
	if (result) {
		j->result = result;
		j->result_len = result_len;
		j->unpadded = unpadded;
	}
	/* A frame already made needs no worker. */
	kcore_pool_submit(s->pool, !result);
	s->submitted++;
	s->fill = 0;
	s->filling = false;
	return drain(s, false);
}

static struct kcore_error *submit(struct kcore_ostream *s, bool zero_frame)
{
	if (zero_frame)
		return submit_frame(s, s->zero_frame, s->zero_frame_len,
				    s->zero_unpadded, s->frame_size);
	return submit_frame(s, NULL, 0, 0, 0);
}

static struct kcore_error *fail(struct kcore_ostream *s,
				struct kcore_error *err)
{
	if (err)
		s->dead = true;
	return err;
}

static struct kcore_error *check_alive(struct kcore_ostream *s)
{
	if (s->dead)
		return kcore_error_create(KCORE_ERR_INVALID, 0, s->path,
					  "output stream failed earlier");
	if (s->finished)
		return kcore_error_create(KCORE_ERR_INVALID, 0, s->path,
					  "output stream is already finished");
	return NULL;
}

static struct kcore_error *write_none(struct kcore_ostream *s, const void *buf,
				      size_t len)
{
	struct kcore_error *err =
		kcore_write_all(s->io, s->fd, s->path, buf, len);

	if (!err)
		s->bytes_out += len;
	return err;
}

struct kcore_error *kcore_ostream_write(struct kcore_ostream *s,
					const void *buf, size_t len)
{
	const unsigned char *p = buf;
	struct kcore_error *err = check_alive(s);

	if (err)
		return err;
	if (s->method == KCORE_COMPRESS_NONE) {
		err = write_none(s, buf, len);
		if (!err)
			s->bytes_in += len;
		return fail(s, err);
	}
	while (len) {
		size_t n;

		if (!s->filling) {
			err = reserve(s);
			if (err)
				return fail(s, err);
		}
		n = s->frame_size - s->fill;
		if (n > len)
			n = len;
		memcpy(s->jobs[kcore_pool_next(s->pool)].in + s->fill, p, n);
		s->fill += n;
		s->bytes_in += n;
		p += n;
		len -= n;
		if (s->fill == s->frame_size) {
			err = submit(s, false);
			if (err)
				return fail(s, err);
		}
	}
	return NULL;
}

/* Note len zero bytes from the current position in the hole map. */
static struct kcore_error *record_hole(struct kcore_ostream *s, uint64_t len)
{
	uint64_t *h = s->holes;

	if (!len)
		return NULL;
	if (s->nholes &&
	    h[2 * s->nholes - 2] + h[2 * s->nholes - 1] == s->bytes_in) {
		h[2 * s->nholes - 1] += len;
		return NULL;
	}
	if (s->nholes == s->holes_cap) {
		size_t cap = s->holes_cap ? 2 * s->holes_cap : 256;

		h = realloc(s->holes, cap * 2 * sizeof(*h));
		if (!h)
			return &kcore_error_nomem;
		s->holes = h;
		s->holes_cap = cap;
	}
	h[2 * s->nholes] = s->bytes_in;
	h[2 * s->nholes + 1] = len;
	s->nholes++;
	return NULL;
}

/*
 * zstd: a zero run of a frame or more.  It ends the frame being filled;
 * its part short of whole hole frames is a frame of its own, built in its
 * job's output buffer, then the prebuilt hole frame follows for the rest:
 * nothing goes through the workers, and the time is that of the bytes
 * written.
 */
static struct kcore_error *zstd_zero_run(struct kcore_ostream *s, uint64_t len)
{
	uint64_t rem = len % HOLE_FRAME;
	struct kcore_error *err;

	if (s->filling && s->fill) {
		err = submit(s, false);
		if (err)
			return err;
	}
	while (len) {
		uint64_t n = rem ? rem : HOLE_FRAME;

		if (!s->filling) {
			err = reserve(s);
			if (err)
				return err;
		}
		if (rem) {
			struct job *j = &s->jobs[kcore_pool_next(s->pool)];

			err = submit_frame(s, j->out,
					   build_rle_frame(j->out, rem), 0,
					   (size_t)rem);
			rem = 0;
		} else {
			err = submit_frame(s, s->hole_frame, s->hole_frame_len,
					   0, (size_t)HOLE_FRAME);
		}
		if (err)
			return err;
		s->bytes_in += n;
		len -= n;
	}
	return NULL;
}

struct kcore_error *kcore_ostream_write_zeros(struct kcore_ostream *s,
					      uint64_t len)
{
	struct kcore_error *err = check_alive(s);

	if (err)
		return err;
	if (s->method == KCORE_COMPRESS_NONE) {
		while (len) {
			size_t n = len < ZERO_CHUNK ? (size_t)len : ZERO_CHUNK;

			err = write_none(s, s->zeros, n);
			if (err)
				return fail(s, err);
			s->bytes_in += n;
			len -= n;
		}
		return NULL;
	}
	if (s->method == KCORE_COMPRESS_ZSTD) {
		err = record_hole(s, len);
		if (!err && len >= s->frame_size)
			err = zstd_zero_run(s, len);
		if (err)
			return fail(s, err);
		if (len >= s->frame_size)
			return NULL;
	}
	/* A run of a frame or more ends the frame being filled, and its
	 * part short of whole frames is a frame of its own: whole zero
	 * frames then end where the data resumes, so a read of the data on
	 * either side decodes its own frame, not megabytes of zeros. */
	if (len >= s->frame_size) {
		size_t rem = (size_t)(len % s->frame_size);

		if (s->filling && s->fill) {
			err = submit(s, false);
			if (err)
				return fail(s, err);
		}
		if (rem) {
			if (!s->filling) {
				err = reserve(s);
				if (err)
					return fail(s, err);
			}
			memset(s->jobs[kcore_pool_next(s->pool)].in, 0, rem);
			s->fill = rem;
			s->bytes_in += rem;
			len -= rem;
			err = submit(s, false);
			if (err)
				return fail(s, err);
		}
	}
	while (len) {
		size_t n;

		if (!s->filling) {
			err = reserve(s);
			if (err)
				return fail(s, err);
		}
		if (s->fill == 0 && len >= s->frame_size) {
			s->bytes_in += s->frame_size;
			len -= s->frame_size;
			err = submit(s, true);
			if (err)
				return fail(s, err);
			continue;
		}
		n = s->frame_size - s->fill;
		if (n > len)
			n = (size_t)len;
		memset(s->jobs[kcore_pool_next(s->pool)].in + s->fill, 0, n);
		s->fill += n;
		s->bytes_in += n;
		len -= n;
		if (s->fill == s->frame_size) {
			err = submit(s, false);
			if (err)
				return fail(s, err);
		}
	}
	return NULL;
}

static struct kcore_error *write_seek_table(struct kcore_ostream *s)
{
	unsigned char buf[SEEK_TABLE_HEADER_SIZE];
	unsigned char footer[SEEK_TABLE_FOOTER_SIZE];
	struct kcore_error *err;
	uint64_t i;

	s->seek_table_off = s->bytes_out + s->olen;
	stream_put_le32(buf, SEEK_TABLE_SKIPPABLE_MAGIC);
	/* nframes <= 2^27, so this fits in 32 bits. */
	stream_put_le32(buf + 4,
			(uint32_t)(8 * s->nframes + SEEK_TABLE_FOOTER_SIZE));
	err = emit(s, buf, sizeof(buf));
	for (i = 0; !err && i < s->nframes; i++) {
		unsigned char e[8];

		stream_put_le32(e, s->entries[2 * i]);
		stream_put_le32(e + 4, s->entries[2 * i + 1]);
		err = emit(s, e, sizeof(e));
	}
	if (err)
		return err;
	stream_put_le32(footer, (uint32_t)s->nframes);
	footer[4] = 0; /* no checksums: each frame carries its own */
	stream_put_le32(footer + 5, SEEKABLE_MAGIC);
	return emit(s, footer, sizeof(footer));
}

/* v as an unsigned LEB128 at p; the bytes written (at most 10). */
static size_t put_leb128(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	do {
		p[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return n;
}

/* The hole map compresses once, small next to the data. */
#define HOLE_MAP_ZSTD_LEVEL 9

/*
 * The zstd hole map: a skippable frame before the seek table, listed in it
 * as a frame of no decompressed bytes (so the table still adds up to the
 * file, and zstd -d skips it).  The runs are encoded as distances and
 * lengths (stream-internal.h), compressed.  None when there are no runs
 * or too many for one frame.
 */
static struct kcore_error *write_hole_map(struct kcore_ostream *s)
{
	unsigned char *enc, *buf = NULL, *p;
	size_t enc_len = 0, cap, r;
	uint64_t prev = 0, body;
	struct kcore_error *err = NULL;

	if (!s->nholes || s->nholes > UINT32_MAX / HOLE_MAP2_MAX_RUN)
		return NULL;
	enc = malloc(s->nholes * HOLE_MAP2_MAX_RUN);
	if (!enc)
		return &kcore_error_nomem;
	for (size_t i = 0; i < s->nholes; i++) {
		enc_len += put_leb128(enc + enc_len, s->holes[2 * i] - prev);
		enc_len += put_leb128(enc + enc_len, s->holes[2 * i + 1]);
		prev = s->holes[2 * i] + s->holes[2 * i + 1];
	}
	cap = ZSTD_compressBound(enc_len);
	if (HOLE_MAP2_HEAD + (uint64_t)cap + 4 > UINT32_MAX) {
		free(enc);
		return NULL;
	}
	buf = malloc(8 + HOLE_MAP2_HEAD + cap + 4);
	if (!buf) {
		free(enc);
		return &kcore_error_nomem;
	}
	p = buf + 8;
	r = ZSTD_compress(p + HOLE_MAP2_HEAD, cap, enc, enc_len,
			  HOLE_MAP_ZSTD_LEVEL);
	free(enc);
	if (ZSTD_isError(r)) {
		free(buf);
		return zstd_error(s, "hole map compression", r);
	}
	body = HOLE_MAP2_HEAD + r + 4;
	stream_put_le32(buf, HOLE_MAP_SKIPPABLE_MAGIC);
	stream_put_le32(buf + 4, (uint32_t)body);
	memcpy(p, HOLE_MAP2_MAGIC, 8);
	stream_put_le64(p + 8, s->bytes_in);
	stream_put_le64(p + 16, s->nholes);
	stream_put_le64(p + 24, enc_len);
	stream_put_le32(p + body - 4, (uint32_t)crc32(0, p, (uInt)(body - 4)));
	err = record_frame(s, 8 + body, 0, 0);
	if (!err)
		err = emit(s, buf, 8 + body);
	free(buf);
	return err;
}

/* The end of an xz stream: index's encoding and the stream footer. */
static struct kcore_error *xz_trailer(const struct kcore_ostream *s,
				      const lzma_index *index,
				      unsigned char **ret, size_t *ret_len)
{
	lzma_stream_flags flags = {
		.version = 0,
		.check = LZMA_CHECK_CRC64,
		.backward_size = lzma_index_size(index),
	};
	size_t size = (size_t)lzma_index_size(index), pos = 0;
	unsigned char *buf = malloc(size + LZMA_STREAM_HEADER_SIZE);
	lzma_ret lret;

	if (!buf)
		return &kcore_error_nomem;
	lret = lzma_index_buffer_encode(index, buf, &pos, size);
	if (lret == LZMA_OK)
		lret = lzma_stream_footer_encode(&flags, buf + pos);
	if (lret != LZMA_OK) {
		free(buf);
		return lzma_error(s, "index encoding", lret);
	}
	*ret = buf;
	*ret_len = pos + LZMA_STREAM_HEADER_SIZE;
	return NULL;
}

static struct kcore_error *write_xz_trailer(struct kcore_ostream *s)
{
	unsigned char *buf;
	size_t len;
	struct kcore_error *err = xz_trailer(s, s->index, &buf, &len);

	if (err)
		return err;
	s->seek_table_off = s->bytes_out + s->olen;
	err = emit(s, buf, len);
	free(buf);
	return err;
}

struct kcore_error *kcore_ostream_finish(struct kcore_ostream *s)
{
	struct kcore_error *err = check_alive(s);

	if (err)
		return err;
	if (s->method == KCORE_COMPRESS_NONE) {
		s->finished = true;
		return NULL;
	}
	/* zstd: an empty input still gets one (empty) frame, so the file
	 * starts with the zstd magic and every tool knows it. */
	if (s->filling && (s->fill || (s->method == KCORE_COMPRESS_ZSTD &&
				       s->submitted == 0))) {
		err = submit(s, false);
	} else if (s->method == KCORE_COMPRESS_ZSTD && s->submitted == 0) {
		err = reserve(s);
		if (!err)
			err = submit(s, false);
	}
	if (!err)
		err = drain(s, true);
	if (!err && s->method == KCORE_COMPRESS_ZSTD)
		err = write_hole_map(s);
	if (!err)
		err = s->method == KCORE_COMPRESS_ZSTD ? write_seek_table(s)
						       : write_xz_trailer(s);
	if (!err)
		err = flush_obuf(s);
	if (err)
		return fail(s, err);
	s->finished = true;
	return NULL;
}

uint64_t kcore_ostream_bytes_in(const struct kcore_ostream *s)
{
	return s->bytes_in;
}

uint64_t kcore_ostream_bytes_out(const struct kcore_ostream *s)
{
	return s->bytes_out;
}

static unsigned online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (unsigned)n : 1;
}

static struct kcore_error *check_opts(const struct kcore_ostream_opts *o,
				      const char *path)
{
	if ((unsigned)o->method >= KCORE_COMPRESS_NUM)
		return kcore_error_create(KCORE_ERR_INVALID, 0, path,
					  "unknown compression method %d",
					  (int)o->method);
	if (o->frame_size && (o->frame_size < KCORE_STREAM_MIN_FRAME ||
			      o->frame_size > KCORE_STREAM_MAX_FRAME))
		return kcore_error_create(KCORE_ERR_INVALID, 0, path,
					  "frame size %" PRIu64
					  " is outside %u..%u bytes",
					  o->frame_size, KCORE_STREAM_MIN_FRAME,
					  KCORE_STREAM_MAX_FRAME);
	if (o->level && o->method == KCORE_COMPRESS_ZSTD &&
	    (o->level < ZSTD_minCLevel() || o->level > ZSTD_maxCLevel()))
		return kcore_error_create(KCORE_ERR_INVALID, 0, path,
					  "zstd level %d is outside %d..%d",
					  o->level, ZSTD_minCLevel(),
					  ZSTD_maxCLevel());
	if (o->level && o->method == KCORE_COMPRESS_XZ &&
	    (o->level < 1 || o->level > 9))
		return kcore_error_create(KCORE_ERR_INVALID, 0, path,
					  "xz level %d is outside 1..9",
					  o->level);
	return NULL;
}

/*
 * Give the xz block in out (of *len bytes, in cap) a header of hsize
 * bytes: the same header with more padding; *unpadded grows with it.  A
 * header already longer, or no room for it, leaves the block as it is
 * (cannot happen with LZMA2 and the sizes used here).
 */
static struct kcore_error *xz_pad_header(const struct kcore_ostream *s,
					 unsigned char *out, size_t *len,
					 size_t cap, uint64_t *unpadded,
					 uint32_t hsize)
{
	lzma_filter filters[LZMA_FILTERS_MAX + 1];
	lzma_block block = {
		.version = 0,
		.check = LZMA_CHECK_CRC64,
		.filters = filters,
	};
	size_t old;
	lzma_ret ret;

	block.header_size = lzma_block_header_size_decode(out[0]);
	old = block.header_size;
	ret = lzma_block_header_decode(&block, NULL, out);
	if (ret != LZMA_OK)
		return lzma_error(s, "block header", ret);
	if (old > hsize || *len + hsize - old > cap) {
		lzma_filters_free(filters, NULL);
		return NULL;
	}
	memmove(out + hsize, out + old, *len - old);
	block.header_size = hsize;
	ret = lzma_block_header_encode(&block, out);
	lzma_filters_free(filters, NULL);
	if (ret != LZMA_OK)
		return lzma_error(s, "block header", ret);
	*len += hsize - old;
	*unpadded += hsize - old;
	return NULL;
}

/*
 * Give the xz zero block in out (of *len bytes) the 64-byte header that
 * marks a hole (stream-internal.h).
 */
static struct kcore_error *xz_mark_hole(struct kcore_ostream *s,
					unsigned char *out, size_t *len,
					uint64_t *unpadded)
{
	return xz_pad_header(s, out, len, s->out_cap, unpadded,
			     XZ_HOLE_HEADER_SIZE);
}

/* Make one frame of zeros once; whole zero frames reuse it (zstd: and
 * one hole frame). */
static struct kcore_error *make_zero_frame(struct kcore_ostream *s)
{
	struct job *j = &s->jobs[0];
	struct kcore_error *err;

	if (s->method == KCORE_COMPRESS_ZSTD) {
		s->zero_frame = malloc(RLE_FRAME_LEN(s->frame_size));
		s->hole_frame = malloc(RLE_FRAME_LEN(HOLE_FRAME));
		if (!s->zero_frame || !s->hole_frame)
			return &kcore_error_nomem;
		s->zero_frame_len =
			build_rle_frame(s->zero_frame, s->frame_size);
		s->hole_frame_len = build_rle_frame(s->hole_frame, HOLE_FRAME);
		return NULL;
	}
	memset(j->in, 0, s->frame_size);
	err = compress_frame(s, s->cctx ? s->cctx[0] : NULL, j->in,
			     s->frame_size, j->out, &s->zero_frame_len,
			     &s->zero_unpadded);
	if (!err && s->method == KCORE_COMPRESS_XZ)
		err = xz_mark_hole(s, j->out, &s->zero_frame_len,
				   &s->zero_unpadded);
	if (err)
		return err;
	s->zero_frame = malloc(s->zero_frame_len);
	if (!s->zero_frame)
		return &kcore_error_nomem;
	memcpy(s->zero_frame, j->out, s->zero_frame_len);
	return NULL;
}

static struct kcore_error *setup_codec(struct kcore_ostream *s)
{
	unsigned char header[LZMA_STREAM_HEADER_SIZE];
	lzma_stream_flags flags = { .version = 0, .check = LZMA_CHECK_CRC64 };
	lzma_ret ret;

	if (s->method == KCORE_COMPRESS_ZSTD) {
		s->out_cap = ZSTD_compressBound(s->frame_size);
		/* A job's output buffer holds a hole frame's remainder. */
		if (s->out_cap < RLE_FRAME_LEN(HOLE_FRAME))
			s->out_cap = RLE_FRAME_LEN(HOLE_FRAME);
		return NULL;
	}
	if (lzma_lzma_preset(&s->lzma_opts, (uint32_t)s->level))
		return kcore_error_create(KCORE_ERR_INVALID, 0, s->path,
					  "xz level %d is not supported",
					  s->level);
	s->filters[0].id = LZMA_FILTER_LZMA2;
	s->filters[0].options = &s->lzma_opts;
	s->filters[1].id = LZMA_VLI_UNKNOWN;
	s->out_cap = lzma_block_buffer_bound(s->frame_size);
	s->index = lzma_index_init(NULL);
	if (!s->index)
		return &kcore_error_nomem;
	ret = lzma_stream_header_encode(&flags, header);
	if (ret != LZMA_OK)
		return lzma_error(s, "stream header encoding", ret);
	return emit(s, header, sizeof(header));
}

static struct kcore_error *start_workers(struct kcore_ostream *s,
					 unsigned threads)
{
	struct kcore_error *err;

	s->nthreads = threads;
	if (s->method == KCORE_COMPRESS_ZSTD) {
		s->cctx = calloc(threads, sizeof(*s->cctx));
		if (!s->cctx)
			return &kcore_error_nomem;
	}
	for (unsigned i = 0; s->cctx && i < threads; i++) {
		s->cctx[i] = ZSTD_createCCtx();
		if (!s->cctx[i])
			return &kcore_error_nomem;
		err = zstd_cctx_setup(s, s->cctx[i]);
		if (err)
			return err;
	}
	/* Built before any thread runs: they read it without the lock. */
	err = make_zero_frame(s);
	if (err)
		return err;
	err = kcore_pool_create(threads, s->nslots, run_job, s, &s->pool);
	if (err && err->code == KCORE_ERR_OS) {
		int errnum = err->errnum;

		kcore_error_destroy(err);
		err = kcore_error_create(KCORE_ERR_OS, errnum, s->path,
					 "cannot start a compression thread");
	}
	return err;
}

struct kcore_error *kcore_ostream_create(int fd, const char *path,
					 const struct kcore_ostream_opts *opts,
					 struct kcore_ostream **ret)
{
	static const struct kcore_ostream_opts defaults = {
		.method = KCORE_COMPRESS_ZSTD,
	};
	struct kcore_ostream *s;
	struct kcore_error *err;
	unsigned threads;

	if (!opts)
		opts = &defaults;
	err = check_opts(opts, path);
	if (err)
		return err;
	s = calloc(1, sizeof(*s));
	if (!s)
		return &kcore_error_nomem;
	s->method = opts->method;
	s->fd = fd;
	s->io = opts->io ? opts->io : &kcore_io_default;
	s->frame_size = opts->frame_size ? (size_t)opts->frame_size
					 : KCORE_STREAM_DEFAULT_FRAME;
	s->level = opts->level;
	if (!s->level)
		s->level = s->method == KCORE_COMPRESS_XZ
				   ? KCORE_XZ_DEFAULT_LEVEL
				   : KCORE_ZSTD_DEFAULT_LEVEL;
	if (path) {
		s->path = strdup(path);
		if (!s->path) {
			err = &kcore_error_nomem;
			goto fail;
		}
	}
	s->obuf = malloc(OBUF_SIZE);
	if (!s->obuf) {
		err = &kcore_error_nomem;
		goto fail;
	}
	if (s->method == KCORE_COMPRESS_NONE) {
		s->zeros = calloc(1, ZERO_CHUNK);
		if (!s->zeros) {
			err = &kcore_error_nomem;
			goto fail;
		}
		*ret = s;
		return NULL;
	}
	err = setup_codec(s);
	if (err)
		goto fail;
	threads = opts->threads ? opts->threads : online_cpus();
	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	/* Two frames per worker: one compressing, one being filled or
	 * waiting to be written. */
	s->nslots = 2 * threads;
	s->jobs = calloc(s->nslots, sizeof(*s->jobs));
	if (!s->jobs) {
		err = &kcore_error_nomem;
		goto fail;
	}
	for (unsigned i = 0; i < s->nslots; i++) {
		s->jobs[i].in = malloc(s->frame_size);
		s->jobs[i].out = malloc(s->out_cap);
		if (!s->jobs[i].in || !s->jobs[i].out) {
			err = &kcore_error_nomem;
			goto fail;
		}
	}
	err = start_workers(s, threads);
	if (err)
		goto fail;
	*ret = s;
	return NULL;

fail:
	kcore_ostream_destroy(s);
	return err;
}

void kcore_ostream_destroy(struct kcore_ostream *s)
{
	if (!s)
		return;
	kcore_pool_destroy(s->pool);
	if (s->cctx) {
		for (unsigned i = 0; i < s->nthreads; i++)
			ZSTD_freeCCtx(s->cctx[i]);
		free(s->cctx);
	}
	if (s->jobs) {
		for (unsigned i = 0; i < s->nslots; i++) {
			free(s->jobs[i].in);
			free(s->jobs[i].out);
		}
		free(s->jobs);
	}
	if (s->index)
		lzma_index_end(s->index, NULL);
	free(s->entries);
	free(s->holes);
	free(s->zero_frame);
	free(s->hole_frame);
	free(s->zeros);
	free(s->obuf);
	free(s->path);
	free(s);
}

/* ---- the stored frame: headers that are rewritten once known ---- */

/*
 * The headers are compressed once, and small next to the data: at least
 * zstd's default level (the data frames' level is chosen for speed).
 */
#define STORED_ZSTD_MIN_LEVEL 3
/* The room is moved through this much memory at a time, if it must grow. */
#define MOVE_CHUNK (1u << 20)

/*
 * zstd: one zstd frame.  xz: one block of the stream (*ret_unpadded: its
 * unpadded size, for the index).
 */
static struct kcore_error *encode_stored(struct kcore_ostream *s,
					 const void *buf, size_t len,
					 unsigned char **ret, size_t *ret_len,
					 uint64_t *ret_unpadded)
{
	unsigned char *out;
	size_t cap;

	*ret_unpadded = 0;
	if (s->method == KCORE_COMPRESS_ZSTD) {
		ZSTD_CCtx *cctx = ZSTD_createCCtx();
		int level = s->level > STORED_ZSTD_MIN_LEVEL
				    ? s->level
				    : STORED_ZSTD_MIN_LEVEL;
		size_t r;

		if (!cctx)
			return &kcore_error_nomem;
		cap = ZSTD_compressBound(len);
		out = malloc(cap);
		r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel,
					   level);
		if (!ZSTD_isError(r))
			r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag,
						   1);
		if (!ZSTD_isError(r))
			r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag,
						   1);
		if (out && !ZSTD_isError(r))
			r = ZSTD_compress2(cctx, out, cap, buf, len);
		ZSTD_freeCCtx(cctx);
		if (!out)
			return &kcore_error_nomem;
		if (ZSTD_isError(r)) {
			free(out);
			return zstd_error(s, "header compression", r);
		}
		*ret = out;
		*ret_len = r;
		return NULL;
	}
	lzma_block block = {
		.version = 0,
		.check = LZMA_CHECK_CRC64,
		.filters = s->filters,
	};
	size_t pos = 0;
	lzma_ret lret;

	cap = lzma_block_buffer_bound(len);
	out = malloc(cap);
	if (!out)
		return &kcore_error_nomem;
	lret = lzma_block_buffer_encode(&block, NULL, buf, len, out, &pos, cap);
	if (lret != LZMA_OK) {
		free(out);
		return lzma_error(s, "header compression", lret);
	}
	*ret = out;
	*ret_len = pos;
	*ret_unpadded = lzma_block_unpadded_size(&block);
	return NULL;
}

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

/* Where the stored frame starts: after the xz stream header. */
static uint64_t stored_at(const struct kcore_ostream *s)
{
	return s->method == KCORE_COMPRESS_XZ ? LZMA_STREAM_HEADER_SIZE : 0;
}

/*
 * The xz room of len bytes (0, or XZ_ROOM_MIN or more, a multiple of 4) as
 * empty blocks in *ret (NULL for 0), their records appended to index, their
 * count in *ret_blocks.
 */
static struct kcore_error *xz_build_room(const struct kcore_ostream *s,
					 uint64_t len, lzma_index *index,
					 unsigned char **ret,
					 uint64_t *ret_blocks)
{
	lzma_block block = {
		.version = 0,
		.check = LZMA_CHECK_CRC64,
		.filters = (lzma_filter *)s->filters,
	};
	unsigned char empty[XZ_ROOM_MIN + 16], *buf;
	uint64_t units = len / 4, n, at = 0, unpadded0;
	struct kcore_error *err = NULL;
	size_t elen = 0;
	lzma_ret lret;

	*ret = NULL;
	*ret_blocks = 0;
	if (!len)
		return NULL;
	lret = lzma_block_buffer_encode(&block, NULL, (const uint8_t *)"", 0,
					empty, &elen, sizeof(empty));
	if (lret != LZMA_OK)
		return lzma_error(s, "empty block", lret);
	if (elen != XZ_ROOM_MIN || block.header_size != XZ_EMPTY_HEADER ||
	    len % 4 || len < XZ_ROOM_MIN)
		return kcore_error_create(
			KCORE_ERR_INVALID, 0, s->path,
			"no xz empty blocks fill %" PRIu64 " bytes", len);
	unpadded0 = lzma_block_unpadded_size(&block);
	buf = malloc(len);
	if (!buf)
		return &kcore_error_nomem;
	/* As few blocks as hold it, of sizes that differ by 4 at most. */
	n = (units + XZ_ROOM_MAX / 4 - 1) / (XZ_ROOM_MAX / 4);
	for (uint64_t i = 0; !err && i < n; i++) {
		size_t size = 4 * (size_t)(units / n + (i < units % n));
		size_t blen = XZ_ROOM_MIN;
		uint64_t unpadded = unpadded0;

		memcpy(buf + at, empty, XZ_ROOM_MIN);
		err = xz_pad_header(
			s, buf + at, &blen, size, &unpadded,
			(uint32_t)(size - XZ_ROOM_MIN + XZ_EMPTY_HEADER));
		if (!err && blen != size)
			err = kcore_error_create(KCORE_ERR_INVALID, 0, s->path,
						 "no xz empty block of %zu "
						 "bytes",
						 size);
		if (!err) {
			lret = lzma_index_append(index, NULL, unpadded, 0);
			if (lret != LZMA_OK)
				err = lzma_error(s, "index", lret);
		}
		at += size;
	}
	if (err) {
		free(buf);
		return err;
	}
	*ret = buf;
	*ret_blocks = n;
	return NULL;
}

static struct kcore_error *emit_zeros(struct kcore_ostream *s, uint64_t len)
{
	static const unsigned char z[4096];

	while (len) {
		size_t n = len < sizeof(z) ? (size_t)len : sizeof(z);
		struct kcore_error *err = emit(s, z, n);

		if (err)
			return err;
		len -= n;
	}
	return NULL;
}

static struct kcore_error *pwrite_zeros(struct kcore_ostream *s, uint64_t off,
					uint64_t len)
{
	static const unsigned char z[4096];

	while (len) {
		size_t n = len < sizeof(z) ? (size_t)len : sizeof(z);
		struct kcore_error *err =
			kcore_pwrite_all(s->io, s->fd, s->path, z, n, off);

		if (err)
			return err;
		off += n;
		len -= n;
	}
	return NULL;
}

/* The room after the stored frame for spare bytes: zstd a skippable
 * frame (at least its 8-byte header), xz empty blocks (a multiple of 4, 0
 * or at least XZ_ROOM_MIN). */
static uint64_t room_padding(const struct kcore_ostream *s, uint64_t spare)
{
	uint64_t pad;

	if (s->method == KCORE_COMPRESS_ZSTD)
		return spare < 8 ? 8 : spare;
	pad = (spare + 3) & ~(uint64_t)3;
	return pad && pad < XZ_ROOM_MIN ? XZ_ROOM_MIN : pad;
}

struct kcore_error *kcore_ostream_write_stored(struct kcore_ostream *s,
					       const void *buf, size_t len,
					       uint64_t spare,
					       uint64_t *ret_offset)
{
	struct kcore_error *err = check_alive(s);
	unsigned char *frame;
	uint64_t pad, unpadded;
	size_t flen;

	if (err)
		return err;
	if (s->method == KCORE_COMPRESS_NONE) {
		*ret_offset = s->bytes_in;
		return kcore_ostream_write(s, buf, len);
	}
	/* First: the stream's header (xz) is all there is so far. */
	if (s->filling || s->submitted || s->nframes || s->bytes_out ||
	    s->has_stored ||
	    s->olen != (s->method == KCORE_COMPRESS_XZ ? LZMA_STREAM_HEADER_SIZE
						       : 0))
		return kcore_error_create(KCORE_ERR_INVALID, 0, s->path,
					  "a stored frame must come first");
	err = encode_stored(s, buf, len, &frame, &flen, &unpadded);
	if (err)
		return fail(s, err);
	pad = room_padding(s, spare);
	if (s->method == KCORE_COMPRESS_XZ) {
		unsigned char *room = NULL;

		err = record_frame(s, flen, unpadded, len);
		if (!err)
			err = emit(s, frame, flen);
		if (!err)
			err = xz_build_room(s, pad, s->index, &room,
					    &s->room_blocks);
		if (!err && room)
			err = emit(s, room, pad);
		free(room);
	} else {
		unsigned char head[8];

		stream_put_le32(head, ROOM_SKIPPABLE_MAGIC);
		stream_put_le32(head + 4, (uint32_t)(pad - 8));
		s->stored_entry = s->nframes;
		err = record_frame(s, flen, 0, len);
		if (!err)
			err = emit(s, frame, flen);
		if (!err)
			err = record_frame(s, pad, 0, 0);
		if (!err)
			err = emit(s, head, sizeof(head));
		if (!err)
			err = emit_zeros(s, pad - 8);
	}
	free(frame);
	if (err)
		return fail(s, err);
	s->has_stored = true;
	s->stored_len = len;
	s->stored_room = flen + pad;
	s->bytes_in += len;
	*ret_offset = 0;
	return NULL;
}

/*
 * Grow the room to need bytes: everything after it moves up, from the
 * end, through the fd (which must be readable: our own files are).
 */
static struct kcore_error *grow_room(struct kcore_ostream *s, uint64_t need)
{
	uint64_t from = stored_at(s) + s->stored_room,
		 delta = need - s->stored_room, end = s->bytes_out;
	unsigned char *buf = malloc(MOVE_CHUNK);
	struct kcore_error *err = NULL;

	if (!buf)
		return &kcore_error_nomem;
	while (!err && end > from) {
		size_t n = end - from < MOVE_CHUNK ? (size_t)(end - from)
						   : MOVE_CHUNK;

		end -= n;
		err = kcore_pread_all(s->io, s->fd, s->path, buf, n, end, NULL);
		if (!err)
			err = kcore_pwrite_all(s->io, s->fd, s->path, buf, n,
					       end + delta);
	}
	free(buf);
	if (err)
		return err;
	s->bytes_out += delta;
	s->seek_table_off += delta;
	s->stored_room = need;
	s->room_grown += delta;
	return NULL;
}

/*
 * xz, after the stored block of flen bytes was rewritten: its room again
 * (the bytes left of stored_room), and the index (its record, the room's,
 * the data's as they were) with the footer in place of the old ones.  An
 * index shorter than before leaves stream padding after the footer.
 */
static struct kcore_error *xz_rewrite_room(struct kcore_ostream *s, size_t flen,
					   uint64_t unpadded, size_t len)
{
	uint64_t room = s->stored_room - flen, blocks = 0,
		 skip = 1 + s->room_blocks, end;
	lzma_index *index = lzma_index_init(NULL);
	unsigned char *buf = NULL, *trailer = NULL;
	struct kcore_error *err = NULL;
	lzma_index_iter iter;
	size_t tlen = 0;
	lzma_ret ret;

	if (!index)
		return &kcore_error_nomem;
	ret = lzma_index_append(index, NULL, unpadded, len);
	if (ret != LZMA_OK)
		err = lzma_error(s, "index", ret);
	if (!err)
		err = xz_build_room(s, room, index, &buf, &blocks);
	lzma_index_iter_init(&iter, s->index);
	while (!err && !lzma_index_iter_next(&iter, LZMA_INDEX_ITER_BLOCK)) {
		if (skip) {
			skip--;
			continue;
		}
		ret = lzma_index_append(index, NULL, iter.block.unpadded_size,
					iter.block.uncompressed_size);
		if (ret != LZMA_OK)
			err = lzma_error(s, "index", ret);
	}
	if (!err && buf)
		err = kcore_pwrite_all(s->io, s->fd, s->path, buf, room,
				       stored_at(s) + flen);
	if (!err)
		err = xz_trailer(s, index, &trailer, &tlen);
	if (!err)
		err = kcore_pwrite_all(s->io, s->fd, s->path, trailer, tlen,
				       s->seek_table_off);
	end = s->seek_table_off + tlen;
	if (!err && end < s->bytes_out)
		err = pwrite_zeros(s, end, s->bytes_out - end);
	else if (!err)
		s->bytes_out = end;
	free(buf);
	free(trailer);
	if (err) {
		lzma_index_end(index, NULL);
		return err;
	}
	lzma_index_end(s->index, NULL);
	s->index = index;
	s->room_blocks = blocks;
	return NULL;
}

struct kcore_error *kcore_ostream_rewrite_stored(struct kcore_ostream *s,
						 uint64_t offset,
						 const void *buf, size_t len)
{
	unsigned char *frame;
	uint64_t pad, need, unpadded;
	size_t flen;
	struct kcore_error *err;

	if (!s->finished)
		return kcore_error_create(KCORE_ERR_INVALID, 0, s->path,
					  "rewrite before the stream is "
					  "finished");
	if (s->method == KCORE_COMPRESS_NONE)
		return kcore_pwrite_all(s->io, s->fd, s->path, buf, len,
					offset);
	if (!s->has_stored || offset != 0 || len != s->stored_len)
		return kcore_error_create(KCORE_ERR_INVALID, 0, s->path,
					  "rewrite of another frame than the "
					  "stored one");
	err = encode_stored(s, buf, len, &frame, &flen, &unpadded);
	if (err)
		return err;
	need = flen + room_padding(s, 0);
	/* An xz room cannot be 1..XZ_ROOM_MIN - 1 bytes. */
	if (s->method == KCORE_COMPRESS_XZ && need < s->stored_room &&
	    s->stored_room - need < XZ_ROOM_MIN)
		need = flen + XZ_ROOM_MIN;
	if (need > s->stored_room)
		err = grow_room(s, need);
	pad = s->stored_room - flen;
	if (!err)
		err = kcore_pwrite_all(s->io, s->fd, s->path, frame, flen,
				       stored_at(s));
	free(frame);
	if (!err && s->method == KCORE_COMPRESS_XZ) {
		err = xz_rewrite_room(s, flen, unpadded, len);
	} else if (!err) {
		unsigned char e[16];

		stream_put_le32(e, ROOM_SKIPPABLE_MAGIC);
		stream_put_le32(e + 4, (uint32_t)(pad - 8));
		err = kcore_pwrite_all(s->io, s->fd, s->path, e, 8, flen);
		if (!err)
			err = pwrite_zeros(s, flen + 8, pad - 8);
		/* The seek table's entries for the frame and the room. */
		stream_put_le32(e, (uint32_t)flen);
		stream_put_le32(e + 4, (uint32_t)len);
		stream_put_le32(e + 8, (uint32_t)pad);
		stream_put_le32(e + 12, 0);
		if (!err)
			err = kcore_pwrite_all(
				s->io, s->fd, s->path, e, sizeof(e),
				s->seek_table_off + SEEK_TABLE_HEADER_SIZE +
					8 * s->stored_entry);
	}
	return err;
}

uint64_t kcore_ostream_room_grown(const struct kcore_ostream *s)
{
	return s->room_grown;
}
