// SPDX-License-Identifier: MIT
/*
 * The stream writer's frames in order (stream-writer.h): the jobs handed
 * to the worker pool (common/pool.c), which compresses them, and the
 * caller's thread writing them out in order through one output buffer,
 * each recorded in the seek table (zstd) or the index (xz).
 */
#include <lzma.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "pool.h"
#include "stream-writer.h"

struct kcore_error *sw_zstd_error(const struct kcore_ostream *s,
				  const char *what, size_t code)
{
	return kcore_error_create(KCORE_ERR_OS, 0, s->path, "zstd %s: %s", what,
				  ZSTD_getErrorName(code));
}

struct kcore_error *sw_lzma_error(const struct kcore_ostream *s,
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

/* Compress one frame into out; thread-safe given its own cctx. */
struct kcore_error *sw_compress_frame(struct kcore_ostream *s, ZSTD_CCtx *cctx,
				      const unsigned char *in, size_t len,
				      unsigned char *out, size_t *ret_len,
				      uint64_t *ret_unpadded)
{
	if (s->method == KCORE_COMPRESS_ZSTD) {
		size_t r = ZSTD_compress2(cctx, out, s->out_cap, in, len);

		if (ZSTD_isError(r))
			return sw_zstd_error(s, "compression", r);
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
			return sw_lzma_error(s, "block compression", ret);
		*ret_len = pos;
		*ret_unpadded = lzma_block_unpadded_size(&block);
	}
	return NULL;
}

/* The pool's job function: compress one frame. */
struct kcore_error *sw_run_job(void *arg, unsigned worker, size_t slot)
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
	return sw_compress_frame(s, s->cctx ? s->cctx[worker] : NULL, j->in,
				 j->in_len, j->out, &j->result_len,
				 &j->unpadded);
}

struct kcore_error *sw_flush_obuf(struct kcore_ostream *s)
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

struct kcore_error *sw_emit(struct kcore_ostream *s, const void *buf,
			    size_t len)
{
	struct kcore_error *err;

	if (s->olen + len <= OBUF_SIZE) {
		memcpy(s->obuf + s->olen, buf, len);
		s->olen += len;
		return NULL;
	}
	err = sw_flush_obuf(s);
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

struct kcore_error *sw_record_frame(struct kcore_ostream *s, size_t comp_len,
				    uint64_t unpadded, size_t in_len)
{
	if (s->method == KCORE_COMPRESS_XZ) {
		lzma_ret ret =
			lzma_index_append(s->index, NULL, unpadded, in_len);

		return ret == LZMA_OK ? NULL : sw_lzma_error(s, "index", ret);
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
	err = sw_record_frame(s, j->result_len, j->unpadded, j->in_len);
	if (!err)
		err = sw_emit(s, j->result, j->result_len);
	return err;
}

struct kcore_error *sw_drain(struct kcore_ostream *s, bool wait)
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
struct kcore_error *sw_reserve(struct kcore_ostream *s)
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
struct kcore_error *sw_submit_frame(struct kcore_ostream *s,
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
	return sw_drain(s, false);
}

struct kcore_error *sw_submit(struct kcore_ostream *s, bool zero_frame)
{
	if (zero_frame)
		return sw_submit_frame(s, s->zero_frame, s->zero_frame_len,
				       s->zero_unpadded, s->frame_size);
	return sw_submit_frame(s, NULL, 0, 0, 0);
}
