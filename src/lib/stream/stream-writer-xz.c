// SPDX-License-Identifier: MIT
/*
 * The stream writer's xz container (stream-writer.h): one stream of
 * blocks, its index and footer; the headers that mark zero blocks and
 * pad empty ones, and the stored block's room of empty blocks.
 */
#include <inttypes.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>

#include "stream-writer.h"

/* The end of an xz stream: index's encoding and the stream footer. */
struct kcore_error *sw_xz_trailer(const struct kcore_ostream *s,
				  const lzma_index *index, unsigned char **ret,
				  size_t *ret_len)
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
		return sw_lzma_error(s, "index encoding", lret);
	}
	*ret = buf;
	*ret_len = pos + LZMA_STREAM_HEADER_SIZE;
	return NULL;
}

struct kcore_error *sw_write_xz_trailer(struct kcore_ostream *s)
{
	unsigned char *buf;
	size_t len;
	struct kcore_error *err = sw_xz_trailer(s, s->index, &buf, &len);

	if (err)
		return err;
	s->seek_table_off = s->bytes_out + s->olen;
	err = sw_emit(s, buf, len);
	free(buf);
	return err;
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
		return sw_lzma_error(s, "block header", ret);
	if (old > hsize || *len + hsize - old > cap) {
		lzma_filters_free(filters, NULL);
		return NULL;
	}
	memmove(out + hsize, out + old, *len - old);
	block.header_size = hsize;
	ret = lzma_block_header_encode(&block, out);
	lzma_filters_free(filters, NULL);
	if (ret != LZMA_OK)
		return sw_lzma_error(s, "block header", ret);
	*len += hsize - old;
	*unpadded += hsize - old;
	return NULL;
}

/*
 * Give the xz zero block in out (of *len bytes) the 64-byte header that
 * marks a hole (stream-internal.h).
 */
struct kcore_error *sw_xz_mark_hole(struct kcore_ostream *s, unsigned char *out,
				    size_t *len, uint64_t *unpadded)
{
	return xz_pad_header(s, out, len, s->out_cap, unpadded,
			     XZ_HOLE_HEADER_SIZE);
}

/*
 * The xz room of len bytes (0, or XZ_ROOM_MIN or more, a multiple of 4) as
 * empty blocks in *ret (NULL for 0), their records appended to index, their
 * count in *ret_blocks.
 */
struct kcore_error *sw_xz_build_room(const struct kcore_ostream *s,
				     uint64_t len, lzma_index *index,
				     unsigned char **ret, uint64_t *ret_blocks)
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
		return sw_lzma_error(s, "empty block", lret);
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
				err = sw_lzma_error(s, "index", lret);
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
