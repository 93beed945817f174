// SPDX-License-Identifier: MIT
/*
 * The stream reader's zstd side: the seek table, and decoding one frame
 * into the cache.
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

static uint64_t get_le64_pair(const unsigned char *p, unsigned i)
{
	return stream_get_le32(p + 4 * i);
}

struct kcore_error *sr_zstd_parse_seek_table(struct kcore_istream *s)
{
	unsigned char footer[SEEK_TABLE_FOOTER_SIZE];
	unsigned char head[SEEK_TABLE_HEADER_SIZE];
	unsigned char *table;
	uint64_t n, esize, tsize, start, c = 0, d = 0;
	struct kcore_error *err;

	if (s->file_size < SEEK_TABLE_FOOTER_SIZE + SEEK_TABLE_HEADER_SIZE) {
		s->index_problem = "no seek table";
		return NULL;
	}
	err = sr_file_read(s, footer, sizeof(footer),
			   s->file_size - SEEK_TABLE_FOOTER_SIZE);
	if (err)
		return err;
	if (stream_get_le32(footer + 5) != SEEKABLE_MAGIC) {
		s->index_problem = "no seek table";
		return NULL;
	}
	if (footer[4] & SEEK_TABLE_RESERVED_BITS) {
		s->index_problem = "seek table uses reserved descriptor bits";
		return NULL;
	}
	n = stream_get_le32(footer);
	esize = footer[4] & SEEK_TABLE_CHECKSUM_FLAG ? 12 : 8;
	if (n > SEEKABLE_MAX_FRAMES) {
		s->index_problem = "seek table has too many frames";
		return NULL;
	}
	tsize = SEEK_TABLE_HEADER_SIZE + n * esize + SEEK_TABLE_FOOTER_SIZE;
	if (tsize > s->file_size) {
		s->index_problem = "seek table is larger than the file";
		return NULL;
	}
	start = s->file_size - tsize;
	err = sr_file_read(s, head, sizeof(head), start);
	if (err)
		return err;
	if (stream_get_le32(head) != SEEK_TABLE_SKIPPABLE_MAGIC ||
	    stream_get_le32(head + 4) != tsize - SEEK_TABLE_HEADER_SIZE) {
		s->index_problem = "seek table frame header is wrong";
		return NULL;
	}
	table = malloc(n * esize + 1);
	s->c_off = malloc((n + 1) * sizeof(*s->c_off));
	s->d_off = malloc((n + 1) * sizeof(*s->d_off));
	if (!table || !s->c_off || !s->d_off) {
		free(table);
		return &kcore_error_nomem;
	}
	err = sr_file_read(s, table, n * esize, start + SEEK_TABLE_HEADER_SIZE);
	if (err) {
		free(table);
		return err;
	}
	for (uint64_t i = 0; i < n; i++) {
		const unsigned char *e = table + i * esize;
		uint64_t csize = get_le64_pair(e, 0);
		uint64_t dsize = get_le64_pair(e, 1);

		s->c_off[i] = c;
		s->d_off[i] = d;
		if (dsize > MAX_FRAME_SIZE) {
			s->index_problem = "seek table has a frame larger "
					   "than 64 MiB";
			break;
		}
		c += csize;
		d += dsize;
	}
	free(table);
	if (s->index_problem)
		return NULL;
	s->c_off[n] = c;
	s->d_off[n] = d;
	if (c != start) {
		s->index_problem = "seek table sizes do not add up to the "
				   "file size";
		return NULL;
	}
	s->nframes = n;
	s->total = d;
	s->seekable = true;
	return sr_zstd_read_hole_map(s);
}

/* Frame i of s decoded into d->fbuf (d_off[i + 1] - d_off[i] bytes). */
struct kcore_error *sr_zstd_decode(const struct kcore_istream *s,
				   struct frame_dec *d, uint64_t i)
{
	uint64_t at = s->c_off[i];
	uint64_t csize = s->c_off[i + 1] - at;
	size_t dsize = (size_t)(s->d_off[i + 1] - s->d_off[i]);
	struct kcore_error *err;
	size_t r;

	if (csize > ZSTD_compressBound(MAX_FRAME_SIZE))
		return sr_format_error(s, at,
				       "zstd frame is implausibly large");
	err = sr_grow(&d->cbuf, &d->cbuf_cap, (size_t)csize);
	if (!err)
		err = sr_dec_frame_buffer(d, dsize);
	if (!err)
		err = sr_file_read(s, d->cbuf, (size_t)csize, at);
	if (err)
		return err;
	if (!d->dctx) {
		d->dctx = ZSTD_createDCtx();
		if (!d->dctx)
			return &kcore_error_nomem;
	}
	r = ZSTD_decompressDCtx(d->dctx, d->fbuf, dsize, d->cbuf,
				(size_t)csize);
	if (ZSTD_isError(r)) {
		if (ZSTD_getErrorCode(r) == ZSTD_error_checksum_wrong)
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, s->path, at,
				"zstd frame at offset 0x%" PRIx64
				" fails its checksum",
				at);
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, s->path, at,
					     "zstd frame at offset 0x%" PRIx64
					     " is corrupt: %s",
					     at, ZSTD_getErrorName(r));
	}
	if (r != dsize)
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, s->path, at,
					     "zstd frame at offset 0x%" PRIx64
					     " holds 0x%zx bytes, "
					     "its seek table entry says 0x%zx",
					     at, r, dsize);
	return NULL;
}

/*
 * Frame i, just decoded into fbuf: where the map calls part of it a hole,
 * it must hold zeros, or the map is dropped (next_data then answers from
 * the whole frames checked at open, which reads trust too).
 */
static void check_frame_runs(struct kcore_istream *s, uint64_t i,
			     const unsigned char *fbuf)
{
	uint64_t lo = s->d_off[i], hi = s->d_off[i + 1];

	for (size_t r = sr_run_after(s->holes, s->nholes, lo);
	     r < s->nholes && s->holes[2 * r] < hi; r++) {
		uint64_t a = s->holes[2 * r] > lo ? s->holes[2 * r] : lo;
		uint64_t b =
			s->holes[2 * r + 1] < hi ? s->holes[2 * r + 1] : hi;

		if (kcore_is_zero(fbuf + (a - lo), (size_t)(b - a)))
			continue;
		free(s->holes);
		s->holes = NULL;
		s->nholes = 0;
		s->hole_map_problem = "hole map calls data a hole";
		if (!s->nzholes)
			return;
		s->holes = malloc(s->nzholes * 2 * sizeof(*s->holes));
		if (!s->holes) {
			sr_drop_holes(s, s->hole_map_problem);
			return;
		}
		memcpy(s->holes, s->zholes, s->nzholes * 2 * sizeof(*s->holes));
		s->nholes = s->nzholes;
		return;
	}
}

struct kcore_error *sr_zstd_decode_frame(struct kcore_istream *s, uint64_t i)
{
	size_t dsize = (size_t)(s->d_off[i + 1] - s->d_off[i]);
	struct kcore_error *err = sr_zstd_decode(s, &s->dec, i);

	if (!err && s->holes)
		check_frame_runs(s, i, s->dec.fbuf);
	if (!err)
		err = sr_pack_frame(s, dsize);
	if (err)
		return err;
	sr_slot_done(s, i, s->d_off[i], dsize);
	return NULL;
}
