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
#include "kcoredump/stream.h"
#include "stream-internal.h"

#define IBUF_SIZE (1u << 20)
/* Limits for the index the reader accepts; see KCORE_STREAM_MAX_FRAME. */
#define MAX_FRAME_SIZE	  ((uint64_t)KCORE_STREAM_MAX_FRAME)
#define XZ_INDEX_MEMLIMIT (1ull << 30)
#define MAX_CACHE_SLOTS	  (1u << 20)

/*
 * One decoded frame (zstd) or block (xz) in the cache, packed: buf holds one
 * uint32_t per PACK_PAGE bytes of the frame (0: all zeros, else k + 1 for the
 * k-th stored page), then the pages that are not all zeros.  A frame of a
 * mostly empty dump costs the memory of its data, not of its size.
 */
#define PACK_PAGE 4096u

struct cache_slot {
	uint64_t frame; /* UINT64_MAX: empty */
	uint64_t start; /* decompressed offset of its first byte */
	size_t len;
	unsigned char *buf;
	size_t cap;
	uint64_t used; /* the reader's clock when last read */
};

/*
 * What decoding a frame for the cache takes: a zstd context, the frame's
 * compressed bytes, the decoded frame (a buffer reused from frame to
 * frame) and, while it is packed, its page map (see cache_slot) and the
 * count of pages it stores.  The reader has one; a prefetch thread has
 * its own.
 */
struct frame_dec {
	ZSTD_DCtx *dctx;
	unsigned char *cbuf, *fbuf;
	size_t cbuf_cap, fbuf_cap;
	uint32_t *map;
	size_t map_cap; /* entries */
	size_t stored;
};

struct kcore_istream {
	enum kcore_compress method;
	int fd;
	char *path;
	bool fd_seekable; /* regular file or block device: pread works */
	uint64_t file_size;

	/* Random access. */
	bool seekable;
	const char *index_problem;
	uint64_t nframes;
	uint64_t *c_off; /* zstd: nframes + 1 file offsets */
	uint64_t *d_off; /* zstd: nframes + 1 decompressed offsets */
	lzma_index *xz_index;
	uint64_t total;
	struct cache_slot *slots;
	unsigned nslots, slots_cap;
	uint32_t *slot_of;  /* per frame: its slot + 1, or 0 */
	size_t cache_bytes; /* sum of the slots' buffers */
	size_t cache_limit;
	uint64_t clock;
	struct cache_slot *cur; /* the slot being filled */
	uint64_t decoded;	/* frames decoded (cache misses) */
	/* The hole map: sorted, disjoint zero runs (start, end pairs), what
	 * next_data answers.  zholes: its whole frames (blocks) checked to
	 * hold zeros, which reads return without decoding; the rest of a
	 * run is read from its frame, decoded anyway for its data, and a
	 * frame that holds data where the map says hole drops the map. */
	uint64_t *holes;
	size_t nholes;
	uint64_t *zholes;
	size_t nzholes;
	const char *hole_map_problem;
	struct frame_dec dec;

	/* Sequential decoding. */
	uint64_t pos;	   /* decompressed bytes delivered */
	uint64_t in_read;  /* compressed bytes read from the fd */
	uint64_t in_used;  /* compressed bytes the decoder consumed */
	uint64_t frame_at; /* where the current zstd frame starts */
	unsigned char *ibuf;
	size_t ibuf_len;
	size_t ibuf_pos;
	bool in_eof;
	bool seq_end;
	bool frame_open; /* zstd: inside a frame */
	ZSTD_DStream *ds;
	/* zstd on a file: frame starts the decoder passed, (compressed,
	 * decompressed) offset pairs at least MARK_SPACING apart, so that a
	 * read backwards restarts from the frame that holds it. */
	uint64_t *marks;
	size_t nmarks, marks_cap;
	lzma_stream lz;
	bool lz_ready;
	unsigned char *scratch;
};

static uint64_t get_le64_pair(const unsigned char *p, unsigned i)
{
	return stream_get_le32(p + 4 * i);
}

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

static struct kcore_error *format_error(const struct kcore_istream *s,
					uint64_t offset, const char *what)
{
	return kcore_error_create_at(KCORE_ERR_FORMAT, 0, s->path, offset, "%s",
				     what);
}

/* Read a whole range of the file (which is known to hold it). */
static struct kcore_error *file_read(const struct kcore_istream *s, void *buf,
				     size_t len, uint64_t offset)
{
	return kcore_pread_all(NULL, s->fd, s->path, buf, len, offset, NULL);
}

/* ---- the hole map ---- */

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

static struct kcore_error *add_hole(struct kcore_istream *s, size_t *cap,
				    uint64_t start, uint64_t end)
{
	return add_run(&s->holes, &s->nholes, cap, start, end);
}

static void drop_holes(struct kcore_istream *s, const char *why)
{
	free(s->holes);
	free(s->zholes);
	s->holes = s->zholes = NULL;
	s->nholes = s->nzholes = 0;
	s->hole_map_problem = why;
}

/* zholes, the map's runs trusted without decoding: a copy of the map. */
static struct kcore_error *copy_holes(struct kcore_istream *s)
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

static uint64_t zstd_find_frame(const struct kcore_istream *s, uint64_t offset);
static size_t run_after(const uint64_t *runs, size_t n, uint64_t offset);

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
			return format_error(s, at,
					    "zstd frame extends past the end "
					    "of the file");
		}
		err = file_read(s, z->win, z->win_len, at);
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
		uint64_t i = zstd_find_frame(s, a);

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
		drop_holes(s, err ? NULL
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
static struct kcore_error *zstd_read_hole_map(struct kcore_istream *s)
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
	err = file_read(s, head, sizeof(head), at);
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
	err = file_read(s, body, size, at + 8);
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
			drop_holes(s, "hole map runs are out of order");
			break;
		}
		err = add_hole(s, &cap, start, start + len);
		if (err)
			break;
		prev = start + len;
	}
	free(pairs);
	free(body);
	if (err)
		drop_holes(s, NULL);
	else if (s->nholes)
		err = zstd_check_holes(s);
	return err;
}

/* ---- zstd seek table ---- */

static struct kcore_error *zstd_parse_seek_table(struct kcore_istream *s)
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
	err = file_read(s, footer, sizeof(footer),
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
	err = file_read(s, head, sizeof(head), start);
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
	err = file_read(s, table, n * esize, start + SEEK_TABLE_HEADER_SIZE);
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
	return zstd_read_hole_map(s);
}

/* The first frame i whose data ends after offset (offset < total). */
static uint64_t zstd_find_frame(const struct kcore_istream *s, uint64_t offset)
{
	uint64_t lo = 0, hi = s->nframes;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (s->d_off[mid + 1] <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct kcore_error *grow(unsigned char **buf, size_t *cap, size_t len)
{
	unsigned char *p;

	if (len <= *cap)
		return NULL;
	p = realloc(*buf, len);
	if (!p)
		return &kcore_error_nomem;
	*buf = p;
	*cap = len;
	return NULL;
}

/* Forget slot k's frame (the slot stays, empty). */
static void slot_forget(struct kcore_istream *s, struct cache_slot *c)
{
	if (c->frame != UINT64_MAX && s->slot_of)
		s->slot_of[c->frame] = 0;
	c->frame = UINT64_MAX;
}

/*
 * The buffer frames are decoded into, reused: aligned to 2 MiB with
 * transparent huge pages asked for when it is large, so growing it takes
 * a few page faults, not one per 4 KiB.
 */
#define HUGE_BYTES ((size_t)2 << 20)

/* The bytes frame_alloc() takes for size. */
static size_t frame_bytes(size_t size)
{
	return size < HUGE_BYTES
		       ? size
		       : (size + HUGE_BYTES - 1) / HUGE_BYTES * HUGE_BYTES;
}

static unsigned char *frame_alloc(size_t size)
{
	void *p = NULL;

	if (size < HUGE_BYTES)
		return malloc(size);
	if (posix_memalign(&p, HUGE_BYTES, frame_bytes(size)))
		return NULL;
#ifdef MADV_HUGEPAGE
	(void)madvise(p, frame_bytes(size), MADV_HUGEPAGE);
#endif
	return p;
}

/* s->slot_of, made on first use: false when out of memory. */
static bool slot_index(struct kcore_istream *s)
{
	if (!s->slot_of && s->nframes)
		s->slot_of = calloc(s->nframes, sizeof(*s->slot_of));
	return s->slot_of || !s->nframes;
}

/* A new empty slot at the end of s->slots, or NULL when out of memory. */
static struct cache_slot *new_slot(struct kcore_istream *s)
{
	if (s->nslots == s->slots_cap) {
		unsigned cap = s->slots_cap ? 2 * s->slots_cap : 16;
		struct cache_slot *n = realloc(s->slots, cap * sizeof(*n));

		if (!n)
			return NULL;
		s->slots = n;
		s->slots_cap = cap;
	}
	s->slots[s->nslots] = (struct cache_slot){ .frame = UINT64_MAX };
	return &s->slots[s->nslots++];
}

/*
 * A slot for a packed frame of bytes bytes: a new one while the cache
 * has room, else the least recently used (others are dropped until the
 * frame fits in the limit; one frame always fits).  Marked empty until
 * the decode succeeds.  Eviction scans the slots: it comes with a decode.
 */
static struct kcore_error *take_slot(struct kcore_istream *s, size_t bytes)
{
	struct cache_slot *c = NULL;
	size_t need = bytes ? bytes : 1;

	if (!slot_index(s))
		return &kcore_error_nomem;
	for (;;) {
		struct cache_slot *lru = NULL;

		if (s->nslots < MAX_CACHE_SLOTS &&
		    (!s->nslots || s->cache_bytes + need <= s->cache_limit)) {
			c = new_slot(s);
			if (!c)
				return &kcore_error_nomem;
			break;
		}
		for (unsigned k = 0; k < s->nslots; k++) {
			struct cache_slot *x = &s->slots[k];

			if (!lru || x->used < lru->used)
				lru = x;
		}
		/* Drop the least recently used; reuse it if it is the only
		 * one or the frame fits then. */
		slot_forget(s, lru);
		if (s->nslots == 1 ||
		    s->cache_bytes - lru->cap + need <= s->cache_limit) {
			c = lru;
			break;
		}
		s->cache_bytes -= lru->cap;
		free(lru->buf);
		*lru = s->slots[--s->nslots];
		if (lru->frame != UINT64_MAX && lru < s->slots + s->nslots)
			s->slot_of[lru->frame] = (uint32_t)(lru - s->slots) + 1;
	}
	if (c->cap < need) {
		/* The old contents are not needed: the frame is packed. */
		unsigned char *p = malloc(need);

		if (!p)
			return &kcore_error_nomem;
		free(c->buf);
		s->cache_bytes += need - c->cap;
		c->buf = p;
		c->cap = need;
	}
	c->used = ++s->clock;
	s->cur = c;
	s->decoded++;
	return NULL;
}

/* d->fbuf, for a frame of dsize bytes. */
static struct kcore_error *dec_frame_buffer(struct frame_dec *d, size_t dsize)
{
	unsigned char *p;

	if (dsize <= d->fbuf_cap)
		return NULL;
	p = frame_alloc(dsize);
	if (!p)
		return &kcore_error_nomem;
	free(d->fbuf);
	d->fbuf = p;
	d->fbuf_cap = frame_bytes(dsize);
	return NULL;
}

static void dec_deinit(struct frame_dec *d)
{
	ZSTD_freeDCtx(d->dctx);
	free(d->cbuf);
	free(d->fbuf);
	free(d->map);
}

static size_t pack_map_bytes(size_t len)
{
	size_t pages = (len + PACK_PAGE - 1) / PACK_PAGE;

	return (pages * sizeof(uint32_t) + 15) & ~(size_t)15;
}

/*
 * The page map of the len bytes decoded in d->fbuf (each page looked at
 * once), and the bytes their packed form takes in *ret_bytes.
 */
static struct kcore_error *pack_plan(struct frame_dec *d, size_t len,
				     size_t *ret_bytes)
{
	size_t pages = (len + PACK_PAGE - 1) / PACK_PAGE;

	if (pages > d->map_cap) {
		uint32_t *m = realloc(d->map, pages * sizeof(*m));

		if (!m)
			return &kcore_error_nomem;
		d->map = m;
		d->map_cap = pages;
	}
	d->stored = 0;
	for (size_t i = 0; i < pages; i++) {
		size_t n = len - i * PACK_PAGE < PACK_PAGE ? len - i * PACK_PAGE
							   : PACK_PAGE;

		d->map[i] = kcore_is_zero(d->fbuf + i * PACK_PAGE, n)
				    ? 0
				    : (uint32_t)++d->stored;
	}
	*ret_bytes = pack_map_bytes(len) + d->stored * PACK_PAGE;
	return NULL;
}

/* The packed form of the frame pack_plan() looked at, into out. */
static void pack_copy(const struct frame_dec *d, size_t len, unsigned char *out)
{
	size_t pages = (len + PACK_PAGE - 1) / PACK_PAGE;
	size_t map_bytes = pack_map_bytes(len);

	memcpy(out, d->map, pages * sizeof(*d->map));
	memset(out + pages * sizeof(*d->map), 0,
	       map_bytes - pages * sizeof(*d->map));
	for (size_t i = 0; i < pages; i++) {
		size_t n = len - i * PACK_PAGE < PACK_PAGE ? len - i * PACK_PAGE
							   : PACK_PAGE;

		if (d->map[i])
			memcpy(out + map_bytes +
				       (size_t)(d->map[i] - 1) * PACK_PAGE,
			       d->fbuf + i * PACK_PAGE, n);
	}
}

/* Packs the frame of len bytes decoded in s->dec into a slot (s->cur). */
static struct kcore_error *pack_frame(struct kcore_istream *s, size_t len)
{
	size_t bytes;
	struct kcore_error *err = pack_plan(&s->dec, len, &bytes);

	if (!err)
		err = take_slot(s, bytes);
	if (!err)
		pack_copy(&s->dec, len, s->cur->buf);
	return err;
}

/* Copies n bytes at offset rel of packed slot c to out. */
static void slot_copy(const struct cache_slot *c, size_t rel,
		      unsigned char *out, size_t n)
{
	const uint32_t *map = (const uint32_t *)(const void *)c->buf;
	const unsigned char *pages = c->buf + pack_map_bytes(c->len);

	while (n) {
		size_t in = rel % PACK_PAGE;
		size_t k = in + n > PACK_PAGE ? PACK_PAGE - in : n;
		uint32_t m = map[rel / PACK_PAGE];

		if (m)
			memcpy(out, pages + (size_t)(m - 1) * PACK_PAGE + in,
			       k);
		else
			memset(out, 0, k);
		out += k;
		rel += k;
		n -= k;
	}
}

static void slot_done(struct kcore_istream *s, uint64_t frame, uint64_t start,
		      size_t len)
{
	s->cur->frame = frame;
	s->cur->start = start;
	s->cur->len = len;
	if (s->slot_of && frame < s->nframes)
		s->slot_of[frame] = (uint32_t)(s->cur - s->slots) + 1;
}

/* The cached frame holding decompressed byte offset, or NULL. */
static struct cache_slot *cache_find(struct kcore_istream *s, uint64_t offset)
{
	struct cache_slot *c;
	uint64_t frame;

	if (!s->slot_of)
		return NULL;
	if (s->method == KCORE_COMPRESS_ZSTD) {
		frame = zstd_find_frame(s, offset);
	} else {
		lzma_index_iter iter;

		lzma_index_iter_init(&iter, s->xz_index);
		if (lzma_index_iter_locate(&iter, offset))
			return NULL;
		frame = iter.block.number_in_file - 1;
	}
	if (frame >= s->nframes || !s->slot_of[frame])
		return NULL;
	c = &s->slots[s->slot_of[frame] - 1];
	if (c->frame != frame || offset < c->start ||
	    offset - c->start >= c->len)
		return NULL;
	c->used = ++s->clock;
	return c;
}

/* Frame i of s decoded into d->fbuf (d_off[i + 1] - d_off[i] bytes). */
static struct kcore_error *zstd_decode(const struct kcore_istream *s,
				       struct frame_dec *d, uint64_t i)
{
	uint64_t at = s->c_off[i];
	uint64_t csize = s->c_off[i + 1] - at;
	size_t dsize = (size_t)(s->d_off[i + 1] - s->d_off[i]);
	struct kcore_error *err;
	size_t r;

	if (csize > ZSTD_compressBound(MAX_FRAME_SIZE))
		return format_error(s, at, "zstd frame is implausibly large");
	err = grow(&d->cbuf, &d->cbuf_cap, (size_t)csize);
	if (!err)
		err = dec_frame_buffer(d, dsize);
	if (!err)
		err = file_read(s, d->cbuf, (size_t)csize, at);
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

	for (size_t r = run_after(s->holes, s->nholes, lo);
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
			drop_holes(s, s->hole_map_problem);
			return;
		}
		memcpy(s->holes, s->zholes, s->nzholes * 2 * sizeof(*s->holes));
		s->nholes = s->nzholes;
		return;
	}
}

static struct kcore_error *zstd_decode_frame(struct kcore_istream *s,
					     uint64_t i)
{
	size_t dsize = (size_t)(s->d_off[i + 1] - s->d_off[i]);
	struct kcore_error *err = zstd_decode(s, &s->dec, i);

	if (!err && s->holes)
		check_frame_runs(s, i, s->dec.fbuf);
	if (!err)
		err = pack_frame(s, dsize);
	if (err)
		return err;
	slot_done(s, i, s->d_off[i], dsize);
	return NULL;
}

/* ---- xz index ---- */

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
		err = file_read(s, &first, 1,
				iter.block.compressed_file_offset);
		if (!err && first == mark)
			err = add_hole(s, &cap,
				       iter.block.uncompressed_file_offset,
				       iter.block.uncompressed_file_offset +
					       iter.block.uncompressed_size);
	}
	if (!err)
		err = copy_holes(s); /* whole blocks, by their headers */
	if (err)
		drop_holes(s, NULL);
	return err;
}

static struct kcore_error *xz_parse_index(struct kcore_istream *s)
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
			       : format_error(s, 0,
					      "cannot start xz index "
					      "decoding");
	for (;;) {
		if (strm.avail_in == 0 && at < s->file_size) {
			uint64_t n = s->file_size - at;

			if (n > IBUF_SIZE)
				n = IBUF_SIZE;
			err = file_read(s, s->ibuf, (size_t)n, at);
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

static struct kcore_error *xz_decode_block(struct kcore_istream *s,
					   uint64_t offset)
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
		return format_error(s, offset, "xz index lost a block");
	at = iter.block.compressed_file_offset;
	total = iter.block.total_size;
	dsize = (size_t)iter.block.uncompressed_size;
	err = grow(&s->dec.cbuf, &s->dec.cbuf_cap, (size_t)total);
	if (!err)
		err = dec_frame_buffer(&s->dec, dsize);
	if (err)
		return err;
	err = file_read(s, s->dec.cbuf, (size_t)total, at);
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
	err = pack_frame(s, dsize);
	if (err)
		return err;
	slot_done(s, iter.block.number_in_file - 1,
		  iter.block.uncompressed_file_offset, dsize);
	return NULL;
}

/*
 * The first hole run that ends after offset: its index, or nholes.  Runs
 * are sorted and disjoint, so their ends ascend too.
 */
static size_t run_after(const uint64_t *runs, size_t n, uint64_t offset)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (runs[2 * mid + 1] <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
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
	i = run_after(runs, n, offset);
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
		c = cache_find(s, offset);
		if (!c) {
			if (s->method == KCORE_COMPRESS_ZSTD)
				err = zstd_decode_frame(
					s, zstd_find_frame(s, offset));
			else
				err = xz_decode_block(s, offset);
			if (err) {
				*ret_done = done;
				return err;
			}
			c = s->cur;
			if (offset < c->start || offset - c->start >= c->len) {
				*ret_done = done;
				return format_error(s, offset,
						    "stream index has a gap");
			}
		}
		n = c->len - (size_t)(offset - c->start);
		if (n > de - offset)
			n = (size_t)(de - offset);
		slot_copy(c, (size_t)(offset - c->start), p + done, n);
		done += n;
		offset += n;
	}
	*ret_done = done;
	return NULL;
}

/* ---- sequential decoding ---- */

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
		err = file_read(s, s->ibuf, (size_t)left, s->in_read);
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
static bool zstd_seq_rewind(struct kcore_istream *s, uint64_t offset)
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
			err = format_error(s, s->in_used,
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

static struct kcore_error *seq_read(struct kcore_istream *s, void *buf,
				    size_t len, size_t *ret_done)
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

struct kcore_error *kcore_istream_read(struct kcore_istream *s, void *buf,
				       size_t len, size_t *ret_done)
{
	/*
	 * Even a seekable stream is read front to back with the streaming
	 * decoder: it is as fast for zstd and multi-threaded for xz.
	 */
	return seq_read(s, buf, len, ret_done);
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
	if (offset < s->pos && !zstd_seq_rewind(s, offset))
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
		err = seq_read(s, s->scratch,
			       skip < IBUF_SIZE ? (size_t)skip : IBUF_SIZE,
			       &done);
		if (err)
			return err;
		if (!done)
			return NULL; /* offset is past the end */
	}
	return seq_read(s, buf, len, ret_done);
}

/* ---- open / destroy ---- */

static struct kcore_error *read_magic(struct kcore_istream *s)
{
	struct kcore_error *err;
	size_t want = XZ_MAGIC_LEN;

	if (s->fd_seekable) {
		if (s->file_size < want)
			want = (size_t)s->file_size;
		err = file_read(s, s->ibuf, want, 0);
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
			err = zstd_parse_seek_table(s);
		else
			err = xz_parse_index(s);
		if (err)
			goto fail;
	}
	*ret = s;
	return NULL;

fail:
	kcore_istream_destroy(s);
	return err;
}

/* ---- prefetch by another thread (stream-internal.h) ---- */

struct kcore_prefetch {
	struct frame_dec dec;
	unsigned char *packed; /* the frame decoded last, packed */
	size_t packed_len, len;
	/* publish: the system's page size, and the page a frame's end cut,
	 * its bytes up to carry_end (0: none), for the frame after it. */
	size_t page;
	unsigned char *carry;
	uint64_t carry_page, carry_end;
};

struct kcore_error *kcore_prefetch_create(struct kcore_prefetch **ret)
{
	struct kcore_prefetch *p = calloc(1, sizeof(*p));
	long sz = sysconf(_SC_PAGESIZE);

	*ret = NULL;
	if (!p)
		return &kcore_error_nomem;
	p->page = sz >= (long)PACK_PAGE && sz <= (1l << 20) ? (size_t)sz
							    : PACK_PAGE;
	p->carry = malloc(p->page);
	if (!p->carry) {
		free(p);
		return &kcore_error_nomem;
	}
	*ret = p;
	return NULL;
}

void kcore_prefetch_destroy(struct kcore_prefetch *p)
{
	if (!p)
		return;
	dec_deinit(&p->dec);
	free(p->packed);
	free(p->carry);
	free(p);
}

bool kcore_istream_prefetch_fits(const struct kcore_istream *s)
{
	/* Frames are packed in the cache: less than this, never more. */
	return s->seekable && s->method == KCORE_COMPRESS_ZSTD &&
	       kcore_istream_data_frame_bytes(s) <= s->cache_limit;
}

bool kcore_istream_prefetch_next(struct kcore_istream *s, uint64_t *frame,
				 bool all)
{
	if (!all && s->cache_bytes >= s->cache_limit)
		return false;
	for (uint64_t i = *frame; i < s->nframes; i++) {
		uint64_t d, e;

		if (!all && s->slot_of && s->slot_of[i])
			continue;
		kcore_istream_next_data(s, s->d_off[i], s->d_off[i + 1], &d,
					&e);
		if (d < s->d_off[i + 1]) {
			*frame = i;
			return true;
		}
	}
	return false;
}

struct kcore_error *kcore_istream_prefetch_decode(struct kcore_istream *s,
						  struct kcore_prefetch *p,
						  uint64_t i, bool keep)
{
	size_t dsize = (size_t)(s->d_off[i + 1] - s->d_off[i]);
	struct kcore_error *err = zstd_decode(s, &p->dec, i);

	free(p->packed);
	p->packed = NULL;
	p->len = dsize;
	if (err || !keep)
		return err;
	err = pack_plan(&p->dec, dsize, &p->packed_len);
	if (err)
		return err;
	p->packed = malloc(p->packed_len ? p->packed_len : 1);
	if (!p->packed)
		return &kcore_error_nomem;
	pack_copy(&p->dec, dsize, p->packed);
	return NULL;
}

bool kcore_istream_prefetch_insert(struct kcore_istream *s,
				   struct kcore_prefetch *p, uint64_t i)
{
	size_t need = p->packed_len ? p->packed_len : 1;
	struct cache_slot *c;

	if (!slot_index(s))
		return false;
	if (s->slot_of[i]) /* a reader decoded it meanwhile */
		return true;
	if (s->nslots >= MAX_CACHE_SLOTS ||
	    s->cache_bytes + need > s->cache_limit)
		return false; /* never push out what a reader touched */
	c = new_slot(s);
	if (!c)
		return false;
	*c = (struct cache_slot){ .frame = i,
				  .start = s->d_off[i],
				  .len = p->len,
				  .buf = p->packed,
				  .cap = need,
				  .used = ++s->clock };
	p->packed = NULL;
	s->cache_bytes += need;
	s->slot_of[i] = (uint32_t)(c - s->slots) + 1;
	s->decoded++;
	return true;
}

/* The pages of [from, to) (page-aligned offsets) at buf that are not all
 * zeros, in runs, to fn. */
static void publish_pages(const unsigned char *buf, uint64_t from, uint64_t to,
			  size_t page, kcore_prefetch_fn *fn, void *arg)
{
	uint64_t run = to;

	for (uint64_t o = from; o < to; o += page) {
		bool zero = kcore_is_zero(buf + (o - from), page);

		if (!zero && run == to)
			run = o;
		if (zero && run != to) {
			fn(arg, run, buf + (run - from), (size_t)(o - run));
			run = to;
		}
	}
	if (run != to)
		fn(arg, run, buf + (run - from), (size_t)(to - run));
}

/* The carried page to fn unless all zeros (short at the stream's end). */
static void flush_carry(const struct kcore_istream *s, struct kcore_prefetch *p,
			kcore_prefetch_fn *fn, void *arg)
{
	size_t n = s->total - p->carry_page < p->page
			   ? (size_t)(s->total - p->carry_page)
			   : p->page;

	if (p->carry_end && !kcore_is_zero(p->carry, n))
		fn(arg, p->carry_page, p->carry, n);
	p->carry_end = 0;
}

/* len bytes at o, within the page at pg, into the carried page.  Bytes of
 * that page not given are zeros: the prefetch publishes every frame with
 * data in order, so what it skipped before o is a frame without any. */
static void carry_add(struct kcore_prefetch *p, uint64_t pg, uint64_t o,
		      const unsigned char *b, size_t len)
{
	if (!p->carry_end || p->carry_page != pg) {
		memset(p->carry, 0, p->page);
		p->carry_page = pg;
	}
	memcpy(p->carry + (o - pg), b, len);
	p->carry_end = o + len;
}

void kcore_istream_prefetch_publish(const struct kcore_istream *s,
				    struct kcore_prefetch *p, uint64_t frame,
				    kcore_prefetch_fn *fn, void *arg)
{
	const unsigned char *b = p->dec.fbuf;
	uint64_t start = s->d_off[frame], end = start + p->len;
	uint64_t pg = start / p->page * p->page;
	uint64_t first = (start + p->page - 1) / p->page * p->page;
	uint64_t last = end / p->page * p->page;
	uint64_t head_end = end < first ? end : first;

	/* The page cache takes whole pages of the file, and frames need not
	 * start on one (a header frame of any length comes first): the page
	 * a frame's start cuts is finished with the frame before it, the
	 * page its end cuts with the frame after it. */
	if (p->carry_end && p->carry_page != pg)
		flush_carry(s, p, fn, arg); /* the rest of it: zeros */
	if (start < head_end) {
		carry_add(p, pg, start, b, (size_t)(head_end - start));
		if (head_end == first)
			flush_carry(s, p, fn, arg);
	}
	if (end > first) {
		publish_pages(b + (first - start), first, last, p->page, fn,
			      arg);
		if (last < end)
			carry_add(p, last, last, b + (last - start),
				  (size_t)(end - last));
	}
	if (end == s->total) /* the file's last page, short */
		flush_carry(s, p, fn, arg);
}

void kcore_istream_prefetch_flush(const struct kcore_istream *s,
				  struct kcore_prefetch *p,
				  kcore_prefetch_fn *fn, void *arg)
{
	flush_carry(s, p, fn, arg);
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
	dec_deinit(&s->dec);
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
