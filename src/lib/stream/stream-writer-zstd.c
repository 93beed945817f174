// SPDX-License-Identifier: MIT
/*
 * The stream writer's zstd container (stream-writer.h): the compression
 * contexts' settings, the frames of zero runs built here (see HOLE_FRAME),
 * the hole map and the seek table.
 */
#include <stdlib.h>
#include <string.h>

#include <zlib.h>
#include <zstd.h>

#include "pool.h"
#include "stream-writer.h"

/*
 * A zstd frame of len (1..HOLE_FRAME) zero bytes in out, which has room
 * for RLE_FRAME_LEN(len) bytes (see HOLE_FRAME); its length.
 */
size_t sw_build_rle_frame(unsigned char *out, uint64_t len)
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

struct kcore_error *sw_zstd_cctx_setup(const struct kcore_ostream *s,
				       ZSTD_CCtx *cctx)
{
	size_t r;

	r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, s->level);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
	if (ZSTD_isError(r))
		return sw_zstd_error(s, "setup", r);
	return NULL;
}

/* Note len zero bytes from the current position in the hole map. */
struct kcore_error *sw_record_hole(struct kcore_ostream *s, uint64_t len)
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
struct kcore_error *sw_zstd_zero_run(struct kcore_ostream *s, uint64_t len)
{
	uint64_t rem = len % HOLE_FRAME;
	struct kcore_error *err;

	if (s->filling && s->fill) {
		err = sw_submit(s, false);
		if (err)
			return err;
	}
	while (len) {
		uint64_t n = rem ? rem : HOLE_FRAME;

		if (!s->filling) {
			err = sw_reserve(s);
			if (err)
				return err;
		}
		if (rem) {
			struct job *j = &s->jobs[kcore_pool_next(s->pool)];

			err = sw_submit_frame(s, j->out,
					      sw_build_rle_frame(j->out, rem),
					      0, (size_t)rem);
			rem = 0;
		} else {
			err = sw_submit_frame(s, s->hole_frame,
					      s->hole_frame_len, 0,
					      (size_t)HOLE_FRAME);
		}
		if (err)
			return err;
		s->bytes_in += n;
		len -= n;
	}
	return NULL;
}

struct kcore_error *sw_write_seek_table(struct kcore_ostream *s)
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
	err = sw_emit(s, buf, sizeof(buf));
	for (i = 0; !err && i < s->nframes; i++) {
		unsigned char e[8];

		stream_put_le32(e, s->entries[2 * i]);
		stream_put_le32(e + 4, s->entries[2 * i + 1]);
		err = sw_emit(s, e, sizeof(e));
	}
	if (err)
		return err;
	stream_put_le32(footer, (uint32_t)s->nframes);
	footer[4] = 0; /* no checksums: each frame carries its own */
	stream_put_le32(footer + 5, SEEKABLE_MAGIC);
	return sw_emit(s, footer, sizeof(footer));
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
struct kcore_error *sw_write_hole_map(struct kcore_ostream *s)
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
		return sw_zstd_error(s, "hole map compression", r);
	}
	body = HOLE_MAP2_HEAD + r + 4;
	stream_put_le32(buf, HOLE_MAP_SKIPPABLE_MAGIC);
	stream_put_le32(buf + 4, (uint32_t)body);
	memcpy(p, HOLE_MAP2_MAGIC, 8);
	stream_put_le64(p + 8, s->bytes_in);
	stream_put_le64(p + 16, s->nholes);
	stream_put_le64(p + 24, enc_len);
	stream_put_le32(p + body - 4, (uint32_t)crc32(0, p, (uInt)(body - 4)));
	err = sw_record_frame(s, 8 + body, 0, 0);
	if (!err)
		err = sw_emit(s, buf, 8 + body);
	free(buf);
	return err;
}
