// SPDX-License-Identifier: MIT
/*
 * The stream writer's stored frame (kcore_ostream_write_stored()): the
 * headers written first, compressed alone, with room after them so that
 * they can be rewritten once known, and the room grown when they no
 * longer fit; for xz, the room's empty blocks and the index written
 * again after it.
 */
#include <lzma.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "stream-writer.h"

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
			return sw_zstd_error(s, "header compression", r);
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
		return sw_lzma_error(s, "header compression", lret);
	}
	*ret = out;
	*ret_len = pos;
	*ret_unpadded = lzma_block_unpadded_size(&block);
	return NULL;
}

/* Where the stored frame starts: after the xz stream header. */
static uint64_t stored_at(const struct kcore_ostream *s)
{
	return s->method == KCORE_COMPRESS_XZ ? LZMA_STREAM_HEADER_SIZE : 0;
}

static struct kcore_error *emit_zeros(struct kcore_ostream *s, uint64_t len)
{
	static const unsigned char z[4096];

	while (len) {
		size_t n = len < sizeof(z) ? (size_t)len : sizeof(z);
		struct kcore_error *err = sw_emit(s, z, n);

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
	struct kcore_error *err = sw_check_alive(s);
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
		return sw_fail(s, err);
	pad = room_padding(s, spare);
	if (s->method == KCORE_COMPRESS_XZ) {
		unsigned char *room = NULL;

		err = sw_record_frame(s, flen, unpadded, len);
		if (!err)
			err = sw_emit(s, frame, flen);
		if (!err)
			err = sw_xz_build_room(s, pad, s->index, &room,
					       &s->room_blocks);
		if (!err && room)
			err = sw_emit(s, room, pad);
		free(room);
	} else {
		unsigned char head[8];

		stream_put_le32(head, ROOM_SKIPPABLE_MAGIC);
		stream_put_le32(head + 4, (uint32_t)(pad - 8));
		s->stored_entry = s->nframes;
		err = sw_record_frame(s, flen, 0, len);
		if (!err)
			err = sw_emit(s, frame, flen);
		if (!err)
			err = sw_record_frame(s, pad, 0, 0);
		if (!err)
			err = sw_emit(s, head, sizeof(head));
		if (!err)
			err = emit_zeros(s, pad - 8);
	}
	free(frame);
	if (err)
		return sw_fail(s, err);
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
		err = sw_lzma_error(s, "index", ret);
	if (!err)
		err = sw_xz_build_room(s, room, index, &buf, &blocks);
	lzma_index_iter_init(&iter, s->index);
	while (!err && !lzma_index_iter_next(&iter, LZMA_INDEX_ITER_BLOCK)) {
		if (skip) {
			skip--;
			continue;
		}
		ret = lzma_index_append(index, NULL, iter.block.unpadded_size,
					iter.block.uncompressed_size);
		if (ret != LZMA_OK)
			err = sw_lzma_error(s, "index", ret);
	}
	if (!err && buf)
		err = kcore_pwrite_all(s->io, s->fd, s->path, buf, room,
				       stored_at(s) + flen);
	if (!err)
		err = sw_xz_trailer(s, index, &trailer, &tlen);
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
