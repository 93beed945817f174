// SPDX-License-Identifier: MIT
/*
 * The compressed stream reader.  On a file with a valid zstd seek table or
 * xz index, reads decode only the frames (blocks) they touch and keep the
 * last one; otherwise the stream is decoded front to back, which is also
 * what a pipe allows.  Nothing in the input is trusted: a seek table that
 * does not describe the file is ignored (and the reason kept), and frame
 * sizes are checked against what actually decodes.
 *
 * Decoded frames are kept in a small cache (KCORE_STREAM_CACHE_DEFAULT
 * bytes, least recently used first out), and the hole map our writer
 * leaves (stream-internal.h) lets reads of zero runs return zeros without
 * decoding anything.  Memory is bounded by the file and by documented
 * limits: a frame is held whole only up to KCORE_STREAM_MAX_FRAME (larger
 * ones make the stream sequential), the sequential decoders take at most
 * KCORE_STREAM_MAX_WINDOW of window or dictionary, and the seek table,
 * index and hole map are no larger than the bytes that describe them.
 *
 * This file opens a stream, reads it and destroys it; the cache, the hole
 * map, each format's index, sequential decoding and prefetch have files
 * of their own (stream-reader.h lists them).
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

enum kcore_compress kcore_istream_method(const struct kcore_istream *s)
{
	return s->method;
}

bool kcore_istream_seekable(const struct kcore_istream *s)
{
	return s->seekable;
}

const char *kcore_istream_index_problem(const struct kcore_istream *s)
{
	return s->index_problem;
}

uint64_t kcore_istream_size(const struct kcore_istream *s)
{
	return s->seekable ? s->total : UINT64_MAX;
}

uint64_t kcore_istream_frames(const struct kcore_istream *s)
{
	return s->seekable ? s->nframes : 0;
}

bool kcore_istream_has_hole_map(const struct kcore_istream *s)
{
	return s->seekable && s->holes;
}

size_t kcore_istream_cache_bytes(const struct kcore_istream *s)
{
	return s->cache_bytes;
}

uint64_t kcore_istream_frames_decoded(const struct kcore_istream *s)
{
	return s->decoded;
}

uint64_t kcore_istream_data_frame_bytes(const struct kcore_istream *s)
{
	uint64_t sum = 0, d, e;

	if (!s->seekable)
		return 0;
	if (s->method == KCORE_COMPRESS_XZ) {
		lzma_index_iter iter;

		lzma_index_iter_init(&iter, s->xz_index);
		while (!lzma_index_iter_next(&iter,
					     LZMA_INDEX_ITER_NONEMPTY_BLOCK)) {
			uint64_t lo = iter.block.uncompressed_file_offset;
			uint64_t hi = lo + iter.block.uncompressed_size;

			kcore_istream_next_data(s, lo, hi, &d, &e);
			if (d < hi)
				sum += hi - lo;
		}
		return sum;
	}
	for (uint64_t i = 0; i < s->nframes; i++) {
		uint64_t lo = s->d_off[i], hi = s->d_off[i + 1];

		if (lo >= hi)
			continue;
		kcore_istream_next_data(s, lo, hi, &d, &e);
		if (d < hi)
			sum += hi - lo;
	}
	return sum;
}

void kcore_istream_set_cache_limit(struct kcore_istream *s, size_t bytes)
{
	s->cache_limit = bytes ? bytes : KCORE_STREAM_CACHE_DEFAULT;
}

/* next_data over the zero runs given. */
static void runs_next_data(const struct kcore_istream *s, const uint64_t *runs,
			   size_t n, uint64_t offset, uint64_t end,
			   uint64_t *data, uint64_t *data_end)
{
	size_t i;

	if (s->seekable && end > s->total)
		end = s->total;
	*data = *data_end = end;
	if (offset >= end)
		return;
	if (!s->seekable || !runs) {
		*data = offset;
		return;
	}
	i = sr_run_after(runs, n, offset);
	if (i < n && runs[2 * i] <= offset) {
		offset = runs[2 * i + 1];
		i++;
	}
	if (offset >= end)
		return;
	*data = offset;
	if (i < n && runs[2 * i] < end)
		*data_end = runs[2 * i];
}

void kcore_istream_next_data(const struct kcore_istream *s, uint64_t offset,
			     uint64_t end, uint64_t *data, uint64_t *data_end)
{
	runs_next_data(s, s->holes, s->nholes, offset, end, data, data_end);
}

static struct kcore_error *seek_pread(struct kcore_istream *s, void *buf,
				      size_t len, uint64_t offset,
				      size_t *ret_done)
{
	unsigned char *p = buf;
	size_t done = 0;

	while (done < len && offset < s->total) {
		struct kcore_error *err;
		struct cache_slot *c;
		uint64_t ds, de;
		size_t n;

		/* Whole zero frames of the hole map cost no decoding. */
		runs_next_data(s, s->zholes, s->nzholes, offset,
			       offset + (len - done), &ds, &de);
		if (ds > offset) {
			n = (size_t)(ds - offset);
			memset(p + done, 0, n);
			done += n;
			offset += n;
			continue;
		}
		c = sr_cache_find(s, offset);
		if (!c) {
			if (s->method == KCORE_COMPRESS_ZSTD)
				err = sr_zstd_decode_frame(
					s, sr_zstd_find_frame(s, offset));
			else
				err = sr_xz_decode_block(s, offset);
			if (err) {
				*ret_done = done;
				return err;
			}
			c = s->cur;
			if (offset < c->start || offset - c->start >= c->len) {
				*ret_done = done;
				return sr_format_error(
					s, offset, "stream index has a gap");
			}
		}
		n = c->len - (size_t)(offset - c->start);
		if (n > de - offset)
			n = (size_t)(de - offset);
		sr_slot_copy(c, (size_t)(offset - c->start), p + done, n);
		done += n;
		offset += n;
	}
	*ret_done = done;
	return NULL;
}

struct kcore_error *kcore_istream_read(struct kcore_istream *s, void *buf,
				       size_t len, size_t *ret_done)
{
	/*
	 * Even a seekable stream is read front to back with the streaming
	 * decoder: it is as fast for zstd and multi-threaded for xz.
	 */
	return sr_seq_read(s, buf, len, ret_done);
}

struct kcore_error *kcore_istream_pread(struct kcore_istream *s, void *buf,
					size_t len, uint64_t offset,
					size_t *ret_done)
{
	struct kcore_error *err;
	size_t done;

	if (s->seekable)
		return seek_pread(s, buf, len, offset, ret_done);
	*ret_done = 0;
	if (offset < s->pos && !sr_zstd_seq_rewind(s, offset))
		return kcore_error_create(
			KCORE_ERR_UNSUPPORTED, 0, s->path,
			"stream is not seekable%s%s%s: cannot go back to "
			"decompressed offset 0x%" PRIx64,
			s->index_problem ? " (" : "",
			s->index_problem ? s->index_problem : "",
			s->index_problem ? ")" : "", offset);
	while (s->pos < offset) {
		uint64_t skip = offset - s->pos;

		if (!s->scratch) {
			s->scratch = malloc(IBUF_SIZE);
			if (!s->scratch)
				return &kcore_error_nomem;
		}
		err = sr_seq_read(s, s->scratch,
				  skip < IBUF_SIZE ? (size_t)skip : IBUF_SIZE,
				  &done);
		if (err)
			return err;
		if (!done)
			return NULL; /* offset is past the end */
	}
	return sr_seq_read(s, buf, len, ret_done);
}

static struct kcore_error *read_magic(struct kcore_istream *s)
{
	struct kcore_error *err;
	size_t want = XZ_MAGIC_LEN;

	if (s->fd_seekable) {
		if (s->file_size < want)
			want = (size_t)s->file_size;
		err = sr_file_read(s, s->ibuf, want, 0);
		if (err)
			return err;
		s->ibuf_len = want;
		return NULL;
	}
	while (s->ibuf_len < want) {
		ssize_t n =
			read(s->fd, s->ibuf + s->ibuf_len, want - s->ibuf_len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return kcore_error_create(KCORE_ERR_OS, errno, s->path,
						  "read failed");
		if (n == 0)
			break;
		s->ibuf_len += (size_t)n;
	}
	s->in_read = s->ibuf_len;
	return NULL;
}

static enum kcore_compress detect(const unsigned char *p, size_t len)
{
	uint32_t m;

	if (len >= XZ_MAGIC_LEN && memcmp(p, XZ_MAGIC, XZ_MAGIC_LEN) == 0)
		return KCORE_COMPRESS_XZ;
	if (len < 4)
		return KCORE_COMPRESS_NONE;
	m = stream_get_le32(p);
	if (m == ZSTD_FRAME_MAGIC ||
	    (m & ZSTD_SKIPPABLE_MAGIC_MASK) == ZSTD_SKIPPABLE_MAGIC_BASE)
		return KCORE_COMPRESS_ZSTD;
	return KCORE_COMPRESS_NONE;
}

struct kcore_error *kcore_istream_open(int fd, const char *path,
				       struct kcore_istream **ret)
{
	struct kcore_istream *s = calloc(1, sizeof(*s));
	struct kcore_error *err;
	struct stat st;

	if (!s)
		return &kcore_error_nomem;
	s->fd = fd;
	s->cache_limit = KCORE_STREAM_CACHE_DEFAULT;
	if (path) {
		s->path = strdup(path);
		if (!s->path) {
			err = &kcore_error_nomem;
			goto fail;
		}
	}
	s->ibuf = malloc(IBUF_SIZE);
	if (!s->ibuf) {
		err = &kcore_error_nomem;
		goto fail;
	}
	if (fstat(fd, &st) < 0) {
		err = kcore_error_create(KCORE_ERR_OS, errno, path,
					 "cannot stat");
		goto fail;
	}
	if (S_ISREG(st.st_mode)) {
		s->fd_seekable = true;
		s->file_size = (uint64_t)st.st_size;
	} else if (S_ISBLK(st.st_mode)) {
		off_t end = lseek(fd, 0, SEEK_END);

		if (end >= 0) {
			s->fd_seekable = true;
			s->file_size = (uint64_t)end;
		}
	}
	err = read_magic(s);
	if (err)
		goto fail;
	s->method = detect(s->ibuf, s->ibuf_len);
	if (s->method == KCORE_COMPRESS_NONE) {
		err = kcore_error_create(KCORE_ERR_FORMAT, 0, path,
					 "not a zstd or xz stream");
		goto fail;
	}
	if (s->fd_seekable) {
		s->ibuf_len = 0; /* sequential reads start over at 0 */
		if (s->method == KCORE_COMPRESS_ZSTD)
			err = sr_zstd_parse_seek_table(s);
		else
			err = sr_xz_parse_index(s);
		if (err)
			goto fail;
	}
	*ret = s;
	return NULL;

fail:
	kcore_istream_destroy(s);
	return err;
}

void kcore_istream_destroy(struct kcore_istream *s)
{
	if (!s)
		return;
	if (s->lz_ready)
		lzma_end(&s->lz);
	if (s->xz_index)
		lzma_index_end(s->xz_index, NULL);
	ZSTD_freeDStream(s->ds);
	sr_dec_deinit(&s->dec);
	free(s->scratch);
	free(s->marks);
	for (unsigned k = 0; k < s->nslots; k++)
		free(s->slots[k].buf);
	free(s->slots);
	free(s->slot_of);
	free(s->holes);
	free(s->zholes);
	free(s->ibuf);
	free(s->c_off);
	free(s->d_off);
	free(s->path);
	free(s);
}
