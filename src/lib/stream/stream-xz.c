// SPDX-License-Identifier: MIT
/*
 * The stream reader's xz side: the index (and the zero blocks our writer
 * marks in it), and decoding one block into the cache.
 */
#include <errno.h>
#include <inttypes.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "kcoredump/dump.h"
#include "stream-reader.h"

/*
 * The xz hole map: blocks whose header is XZ_HOLE_HEADER_SIZE bytes hold
 * only zeros.  One byte per block is read, in file order.
 */
static struct kcore_error *xz_find_holes(struct kcore_istream *s)
{
	const unsigned char mark = XZ_HOLE_HEADER_SIZE / 4 - 1;
	struct kcore_error *err = NULL;
	lzma_index_iter iter;
	size_t cap = 0;

	lzma_index_iter_init(&iter, s->xz_index);
	while (!err &&
	       !lzma_index_iter_next(&iter, LZMA_INDEX_ITER_NONEMPTY_BLOCK)) {
		unsigned char first;

		if (iter.block.total_size <= XZ_HOLE_HEADER_SIZE)
			continue;
		err = sr_file_read(s, &first, 1,
				   iter.block.compressed_file_offset);
		if (!err && first == mark)
			err = sr_add_hole(s, &cap,
					  iter.block.uncompressed_file_offset,
					  iter.block.uncompressed_file_offset +
						  iter.block.uncompressed_size);
	}
	if (!err)
		err = sr_copy_holes(s); /* whole blocks, by their headers */
	if (err)
		sr_drop_holes(s, NULL);
	return err;
}

struct kcore_error *sr_xz_parse_index(struct kcore_istream *s)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	uint64_t at = 0;
	lzma_ret ret;
	struct kcore_error *err = NULL;
	lzma_index_iter iter;

	if (!s->ibuf) {
		s->ibuf = malloc(IBUF_SIZE);
		if (!s->ibuf)
			return &kcore_error_nomem;
	}
	ret = lzma_file_info_decoder(&strm, &s->xz_index, XZ_INDEX_MEMLIMIT,
				     s->file_size);
	if (ret != LZMA_OK)
		return ret == LZMA_MEM_ERROR
			       ? &kcore_error_nomem
			       : sr_format_error(s, 0,
						 "cannot start xz index "
						 "decoding");
	for (;;) {
		if (strm.avail_in == 0 && at < s->file_size) {
			uint64_t n = s->file_size - at;

			if (n > IBUF_SIZE)
				n = IBUF_SIZE;
			err = sr_file_read(s, s->ibuf, (size_t)n, at);
			if (err)
				break;
			strm.next_in = s->ibuf;
			strm.avail_in = (size_t)n;
			at += n;
		}
		ret = lzma_code(&strm, LZMA_RUN);
		if (ret == LZMA_OK && strm.avail_in == 0 &&
		    at >= s->file_size) {
			/* The decoder wants input the file does not have. */
			ret = LZMA_DATA_ERROR;
		}
		if (ret == LZMA_SEEK_NEEDED) {
			at = strm.seek_pos;
			strm.avail_in = 0;
			continue;
		}
		if (ret != LZMA_OK)
			break;
	}
	lzma_end(&strm);
	if (err)
		return err;
	if (ret == LZMA_MEM_ERROR)
		return &kcore_error_nomem;
	if (ret != LZMA_STREAM_END) {
		s->xz_index = NULL; /* not set on failure */
		s->index_problem = ret == LZMA_MEMLIMIT_ERROR
					   ? "xz index is too large"
					   : "xz index is unreadable";
		return NULL;
	}
	/* Refuse blocks too big to hold in memory one at a time. */
	lzma_index_iter_init(&iter, s->xz_index);
	while (!lzma_index_iter_next(&iter, LZMA_INDEX_ITER_NONEMPTY_BLOCK)) {
		if (iter.block.uncompressed_size > MAX_FRAME_SIZE ||
		    iter.block.total_size >
			    lzma_block_buffer_bound(MAX_FRAME_SIZE) +
				    LZMA_BLOCK_HEADER_SIZE_MAX) {
			s->index_problem = "xz stream has a block larger than "
					   "64 MiB";
			return NULL;
		}
	}
	s->nframes = lzma_index_block_count(s->xz_index);
	s->total = lzma_index_uncompressed_size(s->xz_index);
	s->seekable = true;
	return xz_find_holes(s);
}

static struct kcore_error *xz_block_error(const struct kcore_istream *s,
					  uint64_t at, const char *what)
{
	return kcore_error_create_at(KCORE_ERR_FORMAT, 0, s->path, at,
				     "xz block at offset 0x%" PRIx64 " %s", at,
				     what);
}

struct kcore_error *sr_xz_decode_block(struct kcore_istream *s, uint64_t offset)
{
	lzma_filter filters[LZMA_FILTERS_MAX + 1];
	lzma_index_iter iter;
	lzma_block block;
	uint64_t at, total;
	size_t dsize, in_pos, out_pos = 0;
	struct kcore_error *err;
	lzma_ret ret;

	lzma_index_iter_init(&iter, s->xz_index);
	if (lzma_index_iter_locate(&iter, offset))
		return sr_format_error(s, offset, "xz index lost a block");
	at = iter.block.compressed_file_offset;
	total = iter.block.total_size;
	dsize = (size_t)iter.block.uncompressed_size;
	err = sr_grow(&s->dec.cbuf, &s->dec.cbuf_cap, (size_t)total);
	if (!err)
		err = sr_dec_frame_buffer(&s->dec, dsize);
	if (err)
		return err;
	err = sr_file_read(s, s->dec.cbuf, (size_t)total, at);
	if (err)
		return err;
	memset(&block, 0, sizeof(block));
	block.version = 1;
	block.check = iter.stream.flags->check;
	block.filters = filters;
	block.header_size = lzma_block_header_size_decode(s->dec.cbuf[0]);
	if (s->dec.cbuf[0] == 0 || block.header_size > total)
		return xz_block_error(s, at, "has a bad header");
	ret = lzma_block_header_decode(&block, NULL, s->dec.cbuf);
	if (ret != LZMA_OK)
		return xz_block_error(s, at, "has a bad header");
	if (lzma_raw_decoder_memusage(filters) > KCORE_STREAM_MAX_WINDOW) {
		lzma_filters_free(filters, NULL);
		return xz_block_error(s, at,
				      "needs more decoder memory than "
				      "kcoredump allows");
	}
	ret = lzma_block_compressed_size(&block, iter.block.unpadded_size);
	if (ret != LZMA_OK) {
		lzma_filters_free(filters, NULL);
		return xz_block_error(s, at, "does not match the index");
	}
	in_pos = block.header_size;
	ret = lzma_block_buffer_decode(&block, NULL, s->dec.cbuf, &in_pos,
				       (size_t)total, s->dec.fbuf, &out_pos,
				       dsize);
	lzma_filters_free(filters, NULL);
	if (ret == LZMA_MEM_ERROR)
		return &kcore_error_nomem;
	if (ret != LZMA_OK)
		return xz_block_error(
			s, at,
			ret == LZMA_BUF_ERROR
				? "does not match the index"
				: "is corrupt or fails its check");
	if (out_pos != dsize)
		return xz_block_error(s, at, "does not match the index");
	err = sr_pack_frame(s, dsize);
	if (err)
		return err;
	sr_slot_done(s, iter.block.number_in_file - 1,
		     iter.block.uncompressed_file_offset, dsize);
	return NULL;
}
