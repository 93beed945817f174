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
 *
 * This file holds the entry points (create, write, write_zeros, finish,
 * destroy); stream-writer.h lists the parts it is cut into.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "kcoredump/stream.h"
#include "pool.h"
#include "stream-writer.h"

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

struct kcore_error *sw_fail(struct kcore_ostream *s, struct kcore_error *err)
{
	if (err)
		s->dead = true;
	return err;
}

struct kcore_error *sw_check_alive(struct kcore_ostream *s)
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

/* The pipe kcore_ostream_splice() asks for. */
#define SPLICE_PIPE (1 << 20)

bool kcore_ostream_can_splice(const struct kcore_ostream *s)
{
	struct stat st;

	return s->method == KCORE_COMPRESS_NONE && !s->dead && !s->finished &&
	       s->io == &kcore_io_default && fstat(s->fd, &st) == 0 &&
	       S_ISFIFO(st.st_mode);
}

ssize_t kcore_ostream_splice(struct kcore_ostream *s, int fd, uint64_t offset,
			     size_t len)
{
	loff_t off = (loff_t)offset;
	ssize_t n;

	if (s->method != KCORE_COMPRESS_NONE || s->dead || s->finished ||
	    offset > INT64_MAX) {
		errno = EINVAL;
		return -1;
	}
	/* A pipe of 64 KiB (the default) takes 16 pages a call and wakes
	 * its reader as often: with 1 MiB (what an unprivileged process may
	 * ask by default), 512 MiB from a cached file into cat took
	 * 0.10-0.11 s of CPU against 0.11-0.15 s.  A refusal changes
	 * nothing. */
	if (!s->pipe_grown) {
		int have = fcntl(s->fd, F_GETPIPE_SZ);

		s->pipe_grown = true;
		if (have >= 0 && have < SPLICE_PIPE)
			(void)fcntl(s->fd, F_SETPIPE_SZ, SPLICE_PIPE);
	}
	do
		n = splice(fd, &off, s->fd, NULL, len, SPLICE_F_MOVE);
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		s->bytes_in += (uint64_t)n;
		s->bytes_out += (uint64_t)n;
	}
	return n;
}

struct kcore_error *kcore_ostream_write(struct kcore_ostream *s,
					const void *buf, size_t len)
{
	const unsigned char *p = buf;
	struct kcore_error *err = sw_check_alive(s);

	if (err)
		return err;
	if (s->method == KCORE_COMPRESS_NONE) {
		err = write_none(s, buf, len);
		if (!err)
			s->bytes_in += len;
		return sw_fail(s, err);
	}
	while (len) {
		size_t n;

		if (!s->filling) {
			err = sw_reserve(s);
			if (err)
				return sw_fail(s, err);
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
			err = sw_submit(s, false);
			if (err)
				return sw_fail(s, err);
		}
	}
	return NULL;
}

struct kcore_error *kcore_ostream_write_zeros(struct kcore_ostream *s,
					      uint64_t len)
{
	struct kcore_error *err = sw_check_alive(s);

	if (err)
		return err;
	if (s->method == KCORE_COMPRESS_NONE) {
		while (len) {
			size_t n = len < ZERO_CHUNK ? (size_t)len : ZERO_CHUNK;

			err = write_none(s, s->zeros, n);
			if (err)
				return sw_fail(s, err);
			s->bytes_in += n;
			len -= n;
		}
		return NULL;
	}
	if (s->method == KCORE_COMPRESS_ZSTD) {
		err = sw_record_hole(s, len);
		if (!err && len >= s->frame_size)
			err = sw_zstd_zero_run(s, len);
		if (err)
			return sw_fail(s, err);
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
			err = sw_submit(s, false);
			if (err)
				return sw_fail(s, err);
		}
		if (rem) {
			if (!s->filling) {
				err = sw_reserve(s);
				if (err)
					return sw_fail(s, err);
			}
			memset(s->jobs[kcore_pool_next(s->pool)].in, 0, rem);
			s->fill = rem;
			s->bytes_in += rem;
			len -= rem;
			err = sw_submit(s, false);
			if (err)
				return sw_fail(s, err);
		}
	}
	while (len) {
		size_t n;

		if (!s->filling) {
			err = sw_reserve(s);
			if (err)
				return sw_fail(s, err);
		}
		if (s->fill == 0 && len >= s->frame_size) {
			s->bytes_in += s->frame_size;
			len -= s->frame_size;
			err = sw_submit(s, true);
			if (err)
				return sw_fail(s, err);
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
			err = sw_submit(s, false);
			if (err)
				return sw_fail(s, err);
		}
	}
	return NULL;
}

struct kcore_error *kcore_ostream_finish(struct kcore_ostream *s)
{
	struct kcore_error *err = sw_check_alive(s);

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
		err = sw_submit(s, false);
	} else if (s->method == KCORE_COMPRESS_ZSTD && s->submitted == 0) {
		err = sw_reserve(s);
		if (!err)
			err = sw_submit(s, false);
	}
	if (!err)
		err = sw_drain(s, true);
	if (!err && s->method == KCORE_COMPRESS_ZSTD)
		err = sw_write_hole_map(s);
	if (!err)
		err = s->method == KCORE_COMPRESS_ZSTD ? sw_write_seek_table(s)
						       : sw_write_xz_trailer(s);
	if (!err)
		err = sw_flush_obuf(s);
	if (err)
		return sw_fail(s, err);
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
			sw_build_rle_frame(s->zero_frame, s->frame_size);
		s->hole_frame_len =
			sw_build_rle_frame(s->hole_frame, HOLE_FRAME);
		return NULL;
	}
	memset(j->in, 0, s->frame_size);
	err = sw_compress_frame(s, s->cctx ? s->cctx[0] : NULL, j->in,
				s->frame_size, j->out, &s->zero_frame_len,
				&s->zero_unpadded);
	if (!err && s->method == KCORE_COMPRESS_XZ)
		err = sw_xz_mark_hole(s, j->out, &s->zero_frame_len,
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
		return sw_lzma_error(s, "stream header encoding", ret);
	return sw_emit(s, header, sizeof(header));
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
		err = sw_zstd_cctx_setup(s, s->cctx[i]);
		if (err)
			return err;
	}
	/* Built before any thread runs: they read it without the lock. */
	err = make_zero_frame(s);
	if (err)
		return err;
	err = kcore_pool_create(threads, s->nslots, sw_run_job, s, &s->pool);
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
