// SPDX-License-Identifier: MIT
/*
 * The stream reader's sequential decoding: a stream without a usable
 * index (or on a pipe) decoded front to back, with marks to restart a
 * read backwards from the frame that holds it.
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

static struct kcore_error *refill(struct kcore_istream *s)
{
	struct kcore_error *err;
	ssize_t n;

	s->ibuf_pos = 0;
	s->ibuf_len = 0;
	if (s->fd_seekable) {
		uint64_t left = s->file_size - s->in_read;

		if (left > IBUF_SIZE)
			left = IBUF_SIZE;
		if (!left) {
			s->in_eof = true;
			return NULL;
		}
		err = sr_file_read(s, s->ibuf, (size_t)left, s->in_read);
		if (err)
			return err;
		s->ibuf_len = (size_t)left;
		s->in_read += left;
		return NULL;
	}
	do {
		n = read(s->fd, s->ibuf, IBUF_SIZE);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return kcore_error_create_at(KCORE_ERR_OS, errno, s->path,
					     s->in_read, "read failed");
	if (n == 0)
		s->in_eof = true;
	s->ibuf_len = (size_t)n;
	s->in_read += (uint64_t)n;
	return NULL;
}

#define MARK_SPACING (1u << 20)
#define MAX_MARKS    (1u << 20) /* 16 MiB of them */

/* Frame boundary: the next frame starts at s->frame_at, decompressed
 * offset d. */
static void add_mark(struct kcore_istream *s, uint64_t d)
{
	if (!s->fd_seekable || s->nmarks == MAX_MARKS ||
	    (s->nmarks && d < s->marks[2 * s->nmarks - 1] + MARK_SPACING) ||
	    (!s->nmarks && d < MARK_SPACING))
		return;
	if (s->nmarks == s->marks_cap) {
		size_t cap = s->marks_cap ? 2 * s->marks_cap : 64;
		uint64_t *m = realloc(s->marks, cap * 2 * sizeof(*m));

		if (!m)
			return; /* marks only save time */
		s->marks = m;
		s->marks_cap = cap;
	}
	s->marks[2 * s->nmarks] = s->frame_at;
	s->marks[2 * s->nmarks + 1] = d;
	s->nmarks++;
}

/* Go back to the last frame start at or before offset (< s->pos), or
 * false when there is none to go back to. */
bool sr_zstd_seq_rewind(struct kcore_istream *s, uint64_t offset)
{
	size_t lo = 0, hi = s->nmarks;

	if (s->method != KCORE_COMPRESS_ZSTD || !s->ds || !s->fd_seekable)
		return false;
	while (lo < hi) { /* the first mark past offset */
		size_t mid = lo + (hi - lo) / 2;

		if (s->marks[2 * mid + 1] <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	ZSTD_DCtx_reset(s->ds, ZSTD_reset_session_only);
	s->ibuf_pos = s->ibuf_len = 0;
	s->in_eof = s->seq_end = s->frame_open = false;
	if (lo) {
		s->in_read = s->in_used = s->frame_at = s->marks[2 * (lo - 1)];
		s->pos = s->marks[2 * (lo - 1) + 1];
	} else {
		s->in_read = s->in_used = s->frame_at = 0;
		s->pos = 0;
	}
	return true;
}

static struct kcore_error *zstd_seq_read(struct kcore_istream *s, void *buf,
					 size_t len, size_t *ret_done)
{
	ZSTD_outBuffer out = { buf, len, 0 };
	struct kcore_error *err;

	if (!s->ds) {
		s->ds = ZSTD_createDStream();
		if (!s->ds)
			return &kcore_error_nomem;
		ZSTD_DCtx_setParameter(s->ds, ZSTD_d_windowLogMax,
				       KCORE_STREAM_MAX_WINDOW_LOG);
	}
	while (out.pos < out.size) {
		ZSTD_inBuffer in;
		size_t before_out = out.pos, r;
		bool progress;

		if (s->ibuf_pos == s->ibuf_len && !s->in_eof) {
			err = refill(s);
			if (err)
				goto out;
		}
		in = (ZSTD_inBuffer){ s->ibuf, s->ibuf_len, s->ibuf_pos };
		r = ZSTD_decompressStream(s->ds, &out, &in);
		s->in_used += in.pos - s->ibuf_pos;
		if (ZSTD_isError(r)) {
			uint64_t at = s->frame_at;

			if (ZSTD_getErrorCode(r) == ZSTD_error_checksum_wrong)
				err = kcore_error_create_at(
					KCORE_ERR_FORMAT, 0, s->path, at,
					"zstd frame at offset 0x%" PRIx64
					" fails its checksum",
					at);
			else if (ZSTD_getErrorCode(r) ==
				 ZSTD_error_frameParameter_windowTooLarge)
				err = kcore_error_create_at(
					KCORE_ERR_UNSUPPORTED, 0, s->path, at,
					"zstd frame at offset 0x%" PRIx64
					" needs a window larger than the "
					"%u MiB kcoredump decodes with",
					at, KCORE_STREAM_MAX_WINDOW >> 20);
			else
				err = kcore_error_create_at(
					KCORE_ERR_FORMAT, 0, s->path, at,
					"zstd frame at offset 0x%" PRIx64
					" is corrupt: %s",
					at, ZSTD_getErrorName(r));
			goto out;
		}
		if (in.pos == s->ibuf_pos && out.pos == before_out &&
		    s->ibuf_pos < s->ibuf_len) {
			err = sr_format_error(s, s->in_used,
					      "zstd decoder made no progress");
			goto out;
		}
		progress = in.pos != s->ibuf_pos || out.pos != before_out;
		s->ibuf_pos = in.pos;
		/* Without progress, r only hints at the next frame's header. */
		if (progress && r == 0) {
			s->frame_open = false;
			s->frame_at = s->in_used;
			add_mark(s, s->pos + out.pos);
		} else if (progress) {
			s->frame_open = true;
		}
		if (s->in_eof && s->ibuf_pos == s->ibuf_len && !progress) {
			if (s->frame_open) {
				err = kcore_error_create_at(
					KCORE_ERR_FORMAT, 0, s->path,
					s->in_used,
					"zstd stream is truncated at offset "
					"0x%" PRIx64,
					s->in_used);
				goto out;
			}
			s->seq_end = true;
			break;
		}
	}
	err = NULL;
out:
	*ret_done = out.pos;
	return err;
}

static struct kcore_error *xz_seq_read(struct kcore_istream *s, void *buf,
				       size_t len, size_t *ret_done)
{
	struct kcore_error *err = NULL;
	lzma_ret ret;

	if (!s->lz_ready) {
		/* Threads only while they fit in the limit; past it the
		 * decoder stops with LZMA_MEMLIMIT_ERROR. */
		lzma_mt mt = {
			.flags = LZMA_CONCATENATED,
			.threads = lzma_cputhreads(),
			.memlimit_threading = KCORE_STREAM_MAX_WINDOW,
			.memlimit_stop = KCORE_STREAM_MAX_WINDOW,
		};

		if (!mt.threads)
			mt.threads = 1;
		s->lz = (lzma_stream)LZMA_STREAM_INIT;
		ret = lzma_stream_decoder_mt(&s->lz, &mt);
		if (ret != LZMA_OK)
			ret = lzma_stream_decoder(&s->lz,
						  KCORE_STREAM_MAX_WINDOW,
						  LZMA_CONCATENATED);
		if (ret != LZMA_OK)
			return &kcore_error_nomem;
		s->lz_ready = true;
	}
	s->lz.next_out = buf;
	s->lz.avail_out = len;
	while (s->lz.avail_out) {
		if (s->ibuf_pos == s->ibuf_len && !s->in_eof) {
			err = refill(s);
			if (err)
				goto out;
		}
		s->lz.next_in = s->ibuf + s->ibuf_pos;
		s->lz.avail_in = s->ibuf_len - s->ibuf_pos;
		ret = lzma_code(&s->lz, s->in_eof ? LZMA_FINISH : LZMA_RUN);
		s->ibuf_pos = s->ibuf_len - s->lz.avail_in;
		if (ret == LZMA_STREAM_END) {
			s->seq_end = true;
			break;
		}
		if (ret == LZMA_OK)
			continue;
		if (ret == LZMA_MEM_ERROR) {
			err = &kcore_error_nomem;
		} else if (ret == LZMA_MEMLIMIT_ERROR) {
			err = kcore_error_create_at(
				KCORE_ERR_UNSUPPORTED, 0, s->path,
				s->lz.total_in,
				"xz stream at offset 0x%" PRIx64
				" needs more than the %u MiB of memory "
				"kcoredump decodes with",
				(uint64_t)s->lz.total_in,
				KCORE_STREAM_MAX_WINDOW >> 20);
		} else {
			uint64_t at = s->lz.total_in;

			err = kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, s->path, at,
				"xz stream %s at offset 0x%" PRIx64,
				ret == LZMA_BUF_ERROR ? "is truncated"
						      : "is corrupt",
				at);
		}
		goto out;
	}
out:
	*ret_done = len - s->lz.avail_out;
	return err;
}

struct kcore_error *sr_seq_read(struct kcore_istream *s, void *buf, size_t len,
				size_t *ret_done)
{
	struct kcore_error *err;

	*ret_done = 0;
	if (s->seq_end || !len)
		return NULL;
	if (s->method == KCORE_COMPRESS_ZSTD)
		err = zstd_seq_read(s, buf, len, ret_done);
	else
		err = xz_seq_read(s, buf, len, ret_done);
	s->pos += *ret_done;
	return err;
}
