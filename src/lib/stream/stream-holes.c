// SPDX-License-Identifier: MIT
/*
 * The stream reader's hole map (stream-internal.h): the zero runs our
 * writer lists, checked against the frames they name before reads trust
 * them.
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

/* Append the zero run [start, end) to runs, merging it with the last. */
static struct kcore_error *add_run(uint64_t **runs, size_t *n, size_t *cap,
				   uint64_t start, uint64_t end)
{
	if (*n && (*runs)[2 * *n - 1] == start) {
		(*runs)[2 * *n - 1] = end;
		return NULL;
	}
	if (*n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 64;
		uint64_t *h = realloc(*runs, ncap * 2 * sizeof(*h));

		if (!h)
			return &kcore_error_nomem;
		*runs = h;
		*cap = ncap;
	}
	(*runs)[2 * *n] = start;
	(*runs)[2 * *n + 1] = end;
	(*n)++;
	return NULL;
}

struct kcore_error *sr_add_hole(struct kcore_istream *s, size_t *cap,
				uint64_t start, uint64_t end)
{
	return add_run(&s->holes, &s->nholes, cap, start, end);
}

void sr_drop_holes(struct kcore_istream *s, const char *why)
{
	free(s->holes);
	free(s->zholes);
	s->holes = s->zholes = NULL;
	s->nholes = s->nzholes = 0;
	s->hole_map_problem = why;
}

/* zholes, the map's runs trusted without decoding: a copy of the map. */
struct kcore_error *sr_copy_holes(struct kcore_istream *s)
{
	free(s->zholes);
	s->zholes = NULL;
	s->nzholes = 0;
	if (!s->nholes)
		return NULL;
	s->zholes = malloc(s->nholes * 2 * sizeof(*s->zholes));
	if (!s->zholes)
		return &kcore_error_nomem;
	memcpy(s->zholes, s->holes, s->nholes * 2 * sizeof(*s->zholes));
	s->nzholes = s->nholes;
	return NULL;
}

/* A whole frame the hole map calls zeros compresses to almost nothing
 * (our writer reuses one precompressed zero frame); a few distinct ones
 * are decoded to check them, the others compared with those. */
#define HOLE_FRAME_MAX_CSIZE (64u << 10)
#define HOLE_FRAME_KINDS     4u
#define HOLE_CHECK_BUDGET    (256ull << 20) /* decoded bytes at most */

#define HOLE_READ_SIZE (1u << 20)

struct zero_frames {
	unsigned char *known[HOLE_FRAME_KINDS];
	size_t known_len[HOLE_FRAME_KINDS];
	unsigned nknown;
	uint64_t decoded;
	unsigned char *cbuf, *obuf;
	/* The file's bytes [win_at, win_at + win_len), read ahead: the
	 * frames of a run follow each other. */
	unsigned char *win;
	uint64_t win_at;
	size_t win_len;
	ZSTD_DCtx *dctx;
};

/* The csize (<= HOLE_FRAME_MAX_CSIZE) bytes at file offset at. */
static struct kcore_error *hole_bytes(const struct kcore_istream *s,
				      struct zero_frames *z, uint64_t at,
				      size_t csize, const unsigned char **ret)
{
	struct kcore_error *err;
	uint64_t left;

	if (at < z->win_at || at + csize > z->win_at + z->win_len) {
		left = s->file_size - at;
		z->win_len =
			left < HOLE_READ_SIZE ? (size_t)left : HOLE_READ_SIZE;
		z->win_at = at;
		if (z->win_len < csize) {
			z->win_len = 0;
			return sr_format_error(
				s, at,
				"zstd frame extends past the end "
				"of the file");
		}
		err = sr_file_read(s, z->win, z->win_len, at);
		if (err) {
			z->win_len = 0;
			return err;
		}
	}
	*ret = z->win + (at - z->win_at);
	return NULL;
}

/* Whether the csize bytes in z->cbuf are a zstd frame of dsize zeros. */
static bool decodes_to_zeros(struct zero_frames *z, size_t csize,
			     uint64_t dsize)
{
	ZSTD_inBuffer in = { z->cbuf, csize, 0 };
	uint64_t got = 0;
	size_t r = 1;

	if (!z->dctx) {
		z->dctx = ZSTD_createDCtx();
		if (!z->dctx)
			return false;
		ZSTD_DCtx_setParameter(z->dctx, ZSTD_d_windowLogMax,
				       KCORE_STREAM_MAX_WINDOW_LOG);
	}
	ZSTD_DCtx_reset(z->dctx, ZSTD_reset_session_only);
	while (r) {
		ZSTD_outBuffer out = { z->obuf, ZSTD_BLOCKSIZE_MAX, 0 };

		r = ZSTD_decompressStream(z->dctx, &out, &in);
		if (ZSTD_isError(r) || !kcore_is_zero(z->obuf, out.pos))
			return false;
		got += out.pos;
		z->decoded += out.pos;
		if (got > dsize || z->decoded > HOLE_CHECK_BUDGET ||
		    (r && !out.pos && in.pos == in.size))
			return false;
	}
	return in.pos == in.size && got == dsize;
}

/*
 * Whether the n bytes at p are one zstd frame (RFC 8878) of dsize zeros
 * told by its structure alone: a content size of dsize, no dictionary, no
 * checksum, a window the sequential reader allows, then only RLE blocks of
 * the byte 0 no larger than the frame's block limit, the last one flagged
 * and ending at n.  Our writer builds the frames of zero runs so; zstd
 * decodes such a frame to dsize zeros, so checking it takes no decoding.
 */
static bool rle_zero_frame(const unsigned char *p, size_t n, uint64_t dsize)
{
	static const unsigned char fcs_len[4] = { 0, 2, 4, 8 };
	uint64_t fcs = 0, window, block_max, got = 0;
	unsigned fhd, flen;
	size_t pos = 5;

	if (n < 6 || stream_get_le32(p) != ZSTD_FRAME_MAGIC)
		return false;
	fhd = p[4];
	/* Reserved bit, checksum, dictionary ID. */
	if (fhd & 0x0f)
		return false;
	flen = fcs_len[fhd >> 6];
	if (fhd & 0x20) { /* single segment: the window is the content */
		if (!flen)
			flen = 1;
		window = 0;
	} else {
		unsigned log = 10 + (p[pos] >> 3);

		window = (1ull << log) + ((1ull << log) >> 3) * (p[pos] & 7);
		pos++;
		if (!flen)
			return false; /* no content size */
	}
	if (n - pos < flen)
		return false;
	for (unsigned k = 0; k < flen; k++)
		fcs |= (uint64_t)p[pos + k] << (8 * k);
	if (flen == 2)
		fcs += 256;
	pos += flen;
	if (fhd & 0x20)
		window = fcs;
	if (fcs != dsize || window > KCORE_STREAM_MAX_WINDOW)
		return false;
	block_max = window < ZSTD_BLOCKSIZE_MAX ? window : ZSTD_BLOCKSIZE_MAX;
	for (;;) {
		uint32_t h, size;

		if (n - pos < 4)
			return false;
		h = (uint32_t)p[pos] | (uint32_t)p[pos + 1] << 8 |
		    (uint32_t)p[pos + 2] << 16;
		size = h >> 3;
		/* Block_Type 1 (RLE) of the byte 0, within the limit. */
		if (((h >> 1) & 3) != 1 || p[pos + 3] != 0 ||
		    size > block_max || size > dsize - got)
			return false;
		got += size;
		pos += 4;
		if (h & 1)
			break;
	}
	return pos == n && got == dsize;
}

/* Whether frame i, which the hole map covers whole, holds zeros. */
static struct kcore_error *zero_frame_ok(const struct kcore_istream *s,
					 struct zero_frames *z, uint64_t i,
					 bool *ok)
{
	uint64_t at = s->c_off[i], csize = s->c_off[i + 1] - at;
	uint64_t dsize = s->d_off[i + 1] - s->d_off[i];
	const unsigned char *bytes = NULL;
	struct kcore_error *err;

	*ok = false;
	if (csize > HOLE_FRAME_MAX_CSIZE)
		return NULL;
	err = hole_bytes(s, z, at, (size_t)csize, &bytes);
	if (err)
		return err;
	if (rle_zero_frame(bytes, (size_t)csize, dsize)) {
		*ok = true;
		return NULL;
	}
	for (unsigned k = 0; k < z->nknown; k++)
		if (z->known_len[k] == csize &&
		    !memcmp(z->known[k], bytes, (size_t)csize)) {
			/* The same bytes decode to as many zeros as before,
			 * and the seek table says how many. */
			*ok = true;
			return NULL;
		}
	memcpy(z->cbuf, bytes, (size_t)csize);
	if (!decodes_to_zeros(z, (size_t)csize, dsize))
		return NULL;
	*ok = true;
	if (z->nknown < HOLE_FRAME_KINDS) {
		z->known[z->nknown] = malloc((size_t)csize);
		if (!z->known[z->nknown])
			return &kcore_error_nomem;
		memcpy(z->known[z->nknown], z->cbuf, (size_t)csize);
		z->known_len[z->nknown++] = (size_t)csize;
	}
	return NULL;
}

/*
 * The map is trusted by reads for whole frames only, and only for frames
 * that decode to zeros (zholes): a run's parts in frames that also hold
 * data are read from those frames (decoded anyway), so the map never
 * overrides what a frame holds.  A map that calls data a hole is dropped.
 */
static struct kcore_error *zstd_check_holes(struct kcore_istream *s)
{
	struct zero_frames z = { 0 };
	const uint64_t *runs = s->holes;
	size_t nruns = s->nholes, cap = 0;
	struct kcore_error *err = NULL;
	bool ok = true;

	z.cbuf = malloc(HOLE_FRAME_MAX_CSIZE);
	z.obuf = malloc(ZSTD_BLOCKSIZE_MAX);
	z.win = malloc(HOLE_READ_SIZE);
	if (!z.cbuf || !z.obuf || !z.win)
		err = &kcore_error_nomem;
	for (size_t r = 0; !err && ok && r < nruns; r++) {
		uint64_t a = runs[2 * r], b = runs[2 * r + 1];
		uint64_t i = sr_zstd_find_frame(s, a);

		if (i < s->nframes && s->d_off[i] < a)
			i++; /* a frame with data before the run */
		for (; !err && ok && i < s->nframes && s->d_off[i + 1] <= b;
		     i++) {
			if (s->d_off[i] == s->d_off[i + 1])
				continue;
			err = zero_frame_ok(s, &z, i, &ok);
			if (!err && ok)
				err = add_run(&s->zholes, &s->nzholes, &cap,
					      s->d_off[i], s->d_off[i + 1]);
		}
	}
	for (unsigned k = 0; k < z.nknown; k++)
		free(z.known[k]);
	free(z.cbuf);
	free(z.obuf);
	free(z.win);
	ZSTD_freeDCtx(z.dctx);
	if (err || !ok)
		sr_drop_holes(s, err ? NULL
				     : "hole map calls data a hole (or a frame "
				       "it covers could not be checked)");
	return err;
}

/* An unsigned LEB128 at *p (before end) into *ret; false if malformed. */
static bool get_leb128(const unsigned char **p, const unsigned char *end,
		       uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		unsigned char b = *(*p)++;

		if (shift == 63 && b > 1)
			return false;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return true;
		}
	}
	return false;
}

/*
 * The runs of a KCDHOLE2 map (stream-internal.h): its zstd frame decoded
 * into exactly the encoded size the header gives (bounded by the number
 * of runs, itself bounded by the stream's size), then runs * 2 numbers
 * that use it all.  *ret malloc()ed, runs start/length pairs; NULL with
 * s->hole_map_problem set when it does not check out.
 */
static struct kcore_error *hole_map2_runs(struct kcore_istream *s,
					  const unsigned char *body,
					  size_t size, uint64_t runs,
					  uint64_t **ret)
{
	uint64_t enc_len = stream_get_le64(body + 24), prev = 0, *out;
	const unsigned char *src = body + HOLE_MAP2_HEAD, *p, *end;
	size_t csize = size - HOLE_MAP2_HEAD - 4, r;
	unsigned char *enc;

	*ret = NULL;
	/* Runs neither touch nor are empty: at most one per two bytes. */
	if (!runs || runs > s->total / 2 + 1 ||
	    runs > UINT32_MAX / HOLE_MAP2_MAX_RUN || enc_len < 2 * runs ||
	    enc_len > runs * HOLE_MAP2_MAX_RUN ||
	    ZSTD_getFrameContentSize(src, csize) != enc_len ||
	    ZSTD_findFrameCompressedSize(src, csize) != csize) {
		s->hole_map_problem = "hole map header is wrong";
		return NULL;
	}
	enc = malloc(enc_len);
	out = malloc(runs * 2 * sizeof(*out));
	if (!enc || !out) {
		free(enc);
		free(out);
		return &kcore_error_nomem;
	}
	r = ZSTD_decompress(enc, enc_len, src, csize);
	p = enc;
	end = enc + enc_len;
	for (uint64_t i = 0; !ZSTD_isError(r) && r == enc_len && i < runs;
	     i++) {
		uint64_t gap, len;

		if (!get_leb128(&p, end, &gap) || !get_leb128(&p, end, &len) ||
		    gap > s->total - prev || len > s->total - prev - gap)
			break;
		out[2 * i] = prev + gap;
		out[2 * i + 1] = len;
		prev += gap + len;
		if (i + 1 == runs && p == end) {
			free(enc);
			*ret = out;
			return NULL;
		}
	}
	free(enc);
	free(out);
	s->hole_map_problem = "hole map runs do not decode";
	return NULL;
}

/*
 * The zstd hole map: the last frame of the seek table, when it is our
 * skippable frame with no decompressed bytes (KCDHOLE2, or KCDHOLE1 of
 * earlier versions).  A map that does not check out is ignored (reads
 * then decode everything, as for older dumps).
 */
struct kcore_error *sr_zstd_read_hole_map(struct kcore_istream *s)
{
	uint64_t n = s->nframes, at, size, total, runs, prev = 0;
	uint64_t *pairs = NULL;
	unsigned char head[8], *body;
	struct kcore_error *err = NULL;
	size_t cap = 0;
	bool v2;

	if (!n || s->d_off[n - 1] != s->d_off[n])
		return NULL;
	at = s->c_off[n - 1];
	size = s->c_off[n] - at;
	if (size < 8 + HOLE_MAP_HEAD + 4)
		return NULL;
	err = sr_file_read(s, head, sizeof(head), at);
	if (err)
		return err;
	if (stream_get_le32(head) != HOLE_MAP_SKIPPABLE_MAGIC)
		return NULL;
	if (stream_get_le32(head + 4) != size - 8) {
		s->hole_map_problem = "hole map frame size is wrong";
		return NULL;
	}
	size -= 8;
	body = malloc(size); /* no larger than the file */
	if (!body)
		return &kcore_error_nomem;
	err = sr_file_read(s, body, size, at + 8);
	if (err) {
		free(body);
		return err;
	}
	total = stream_get_le64(body + 8);
	runs = stream_get_le64(body + 16);
	v2 = memcmp(body, HOLE_MAP2_MAGIC, 8) == 0;
	if (v2 ? size < HOLE_MAP2_HEAD + 4
	       : memcmp(body, HOLE_MAP_MAGIC, 8) ||
			    runs != (size - HOLE_MAP_HEAD - 4) / HOLE_MAP_RUN ||
			    (size - HOLE_MAP_HEAD - 4) % HOLE_MAP_RUN) {
		s->hole_map_problem = "hole map header is wrong";
	} else if (stream_get_le32(body + size - 4) !=
		   (uint32_t)crc32(0, body, (uInt)(size - 4))) {
		s->hole_map_problem = "hole map fails its CRC";
	} else if (total != s->total) {
		s->hole_map_problem = "hole map is of another size";
	} else if (v2) {
		err = hole_map2_runs(s, body, size, runs, &pairs);
	}
	for (uint64_t i = 0; !err && !s->hole_map_problem && i < runs; i++) {
		const unsigned char *r =
			body + HOLE_MAP_HEAD + i * HOLE_MAP_RUN;
		uint64_t start = pairs ? pairs[2 * i] : stream_get_le64(r);
		uint64_t len =
			pairs ? pairs[2 * i + 1] : stream_get_le64(r + 8);

		if (!len || start < prev || (i && start == prev) ||
		    start > total || len > total - start) {
			sr_drop_holes(s, "hole map runs are out of order");
			break;
		}
		err = sr_add_hole(s, &cap, start, start + len);
		if (err)
			break;
		prev = start + len;
	}
	free(pairs);
	free(body);
	if (err)
		sr_drop_holes(s, NULL);
	else if (s->nholes)
		err = zstd_check_holes(s);
	return err;
}
