// SPDX-License-Identifier: MIT
/*
 * AVML's compressed LiME ("avml --compress") as a source.  Per range a
 * 32-byte header laid out as LiME's { u32 magic 0x4C4D5641 ("AVML"),
 * u32 version 2, u64 s_addr, u64 e_addr (inclusive), 8 reserved bytes },
 * then the range's memory as a snappy framed stream, then a u64 with the
 * stream's length in bytes.
 *
 * The framed stream is a series of chunks, each a 4-byte header (type in
 * the low byte, length of the rest in the upper 24 bits): 0xff the
 * stream identifier "sNaPpY", 0x00 a masked CRC-32C of the data and at
 * most 64 KiB compressed with snappy, 0x01 the same uncompressed, 0x80 to
 * 0xfe skippable, 0x02 to 0x7f reserved and fatal.
 *
 * Opening walks the chunk headers (not their data) and keeps where each
 * chunk starts in the file and in the image, so any address is read by
 * decompressing the one chunk that holds it: random access, and parallel
 * reads share no state.  Every chunk's CRC is checked when it is read.
 */
#include <elf.h>
#include <inttypes.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avml.h"
#include "bytes.h"
#include "grow.h"
#include "lime.h"
#include "read.h"

#define SCAN_BUF (256u << 10)

struct chunk {
	uint64_t at;  /* file offset of the chunk header */
	uint64_t pos; /* offset of its first byte in the data area */
};

struct avml {
	struct chunk *chunks;
	size_t n, cap;
	uint64_t data_start, data_end; /* image offsets */
	char detail[64];
};

/* ---- CRC-32C (Castagnoli), masked as the framing format stores it ---- */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[i] = c;
	}
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t crc, const unsigned char *p, size_t len)
{
	uint64_t c = crc;

	for (; len >= 8; p += 8, len -= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
	}
	crc = (uint32_t)c;
	for (; len; p++, len--)
		crc = __builtin_ia32_crc32qi(crc, *p);
	return crc;
}
#endif

static uint32_t crc32c(const unsigned char *p, size_t len)
{
	uint32_t crc = 0xffffffffu;

#if defined(__x86_64__)
	if (__builtin_cpu_supports("sse4.2"))
		return ~crc32c_hw(crc, p, len);
#endif
	pthread_once(&crc_once, crc_init);
	for (size_t i = 0; i < len; i++)
		crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
	return ~crc;
}

uint32_t kcore_avml_crc(const unsigned char *p, size_t len)
{
	uint32_t c = crc32c(p, len);

	return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

/* ---- reading ---- */

static void avml_destroy(struct kcore_source *src)
{
	struct avml *a = src->reader_data;

	if (a)
		free(a->chunks);
	free(a);
	src->reader_data = NULL;
}

/* The chunk holding data-area offset pos. */
static const struct chunk *find_chunk(const struct avml *a, uint64_t pos)
{
	size_t lo = 0, hi = a->n;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (a->chunks[mid].pos <= pos)
			lo = mid;
		else
			hi = mid;
	}
	return &a->chunks[lo];
}

/*
 * Read chunk c (whose data is ulen bytes) into out: in is scratch for
 * the stored bytes.
 */
static struct kcore_error *read_chunk(struct kcore_source *src,
				      const struct chunk *c, size_t ulen,
				      unsigned char *in, unsigned char *out)
{
	unsigned char h[4];
	struct kcore_error *err = kcore_fmt_read(src, h, 4, c->at);
	size_t len, n = ulen;
	uint32_t crc;

	if (err)
		return err;
	len = (size_t)kcore_load(h + 1, 3, false);
	/* As indexed at open, unless the file changed since. */
	if ((h[0] != AVML_CHUNK_COMPRESSED && h[0] != AVML_CHUNK_RAW) ||
	    len < 5 ||
	    len > snappy_max_compressed_length(AVML_CHUNK_DATA) + 4 ||
	    (h[0] == AVML_CHUNK_RAW && len - 4 != ulen))
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path,
					     c->at,
					     "AVML: chunk at offset 0x%" PRIx64
					     " changed since the file was "
					     "opened",
					     c->at);
	err = kcore_fmt_read(src, in, len, c->at + 4);
	if (err)
		return err;
	crc = (uint32_t)kcore_load(in, 4, false);
	if (h[0] == AVML_CHUNK_RAW) {
		memcpy(out, in + 4, ulen);
	} else if (snappy_uncompress((const char *)in + 4, len - 4, (char *)out,
				     &n) != SNAPPY_OK ||
		   n != ulen) {
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path,
					     c->at,
					     "AVML: snappy chunk at offset "
					     "0x%" PRIx64 " is corrupt",
					     c->at);
	}
	if (kcore_avml_crc(out, ulen) != crc)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, c->at,
			"AVML: chunk at offset 0x%" PRIx64
			" fails its CRC-32C (memory image corrupt)",
			c->at);
	return NULL;
}

static struct kcore_error *avml_pread(struct kcore_source *src, void *buf,
				      size_t len, uint64_t offset, size_t *done)
{
	struct avml *a = src->reader_data;
	unsigned char *out = buf, *in = NULL, *tmp = NULL;
	size_t pos = 0;
	struct kcore_error *err = NULL;

	while (pos < len && !err) {
		uint64_t at = offset + pos, skip;
		const struct chunk *c;
		size_t n, ulen;

		if (at < a->data_start || at >= a->data_end) {
			if (at >= a->data_end) {
				err = kcore_error_create_at(
					KCORE_ERR_FORMAT, 0, src->path, at,
					"read past the end of the image "
					"(0x%" PRIx64 ")",
					a->data_end);
				break;
			}
			n = a->data_start - at < len - pos
				    ? (size_t)(a->data_start - at)
				    : len - pos;
			memset(out + pos, 0, n);
			pos += n;
			continue;
		}
		/* The ranges' data lies back to back in the image, as the
		 * chunks do in the data area. */
		c = find_chunk(a, at - a->data_start);
		ulen = (size_t)((c + 1 < a->chunks + a->n
					 ? c[1].pos
					 : a->data_end - a->data_start) -
				c->pos);
		skip = at - a->data_start - c->pos;
		n = ulen - skip < len - pos ? (size_t)(ulen - skip) : len - pos;
		if (!in) {
			in = malloc(
				snappy_max_compressed_length(AVML_CHUNK_DATA) +
				4);
			tmp = malloc(AVML_CHUNK_DATA);
			if (!in || !tmp) {
				err = &kcore_error_nomem;
				break;
			}
		}
		if (skip == 0 && n == ulen) {
			err = read_chunk(src, c, ulen, in, out + pos);
		} else {
			err = read_chunk(src, c, ulen, in, tmp);
			if (!err)
				memcpy(out + pos, tmp + skip, n);
		}
		if (!err)
			pos += n;
	}
	free(in);
	free(tmp);
	if (done)
		*done = pos;
	return err;
}

/* ---- opening: the chunk index ---- */

/* Buffered reads of the chunk headers, which small chunks pack closely. */
struct scan {
	struct kcore_source *src;
	unsigned char *buf;
	uint64_t off;
	size_t len;
};

static struct kcore_error *scan_get(struct scan *s, uint64_t at, void *dst,
				    size_t len)
{
	uint64_t file_size = s->src->info.file_size;

	if (at < s->off || at + len > s->off + s->len) {
		size_t n = file_size - at < SCAN_BUF ? (size_t)(file_size - at)
						     : SCAN_BUF;
		struct kcore_error *err;

		if (at > file_size || n < len)
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, s->src->path, at,
				"AVML: truncated at offset 0x%" PRIx64
				" (the file ends at 0x%" PRIx64 ")",
				at, file_size);
		err = kcore_fmt_read(s->src, s->buf, n, at);
		if (err)
			return err;
		s->off = at;
		s->len = n;
	}
	memcpy(dst, s->buf + (at - s->off), len);
	return NULL;
}

static struct kcore_error *add_chunk(struct avml *a, uint64_t at, uint64_t pos)
{
	if (a->n == a->cap) {
		size_t c = a->cap ? 2 * a->cap : 1024;
		struct chunk *p = realloc(a->chunks, c * sizeof(*p));

		if (!p)
			return &kcore_error_nomem;
		a->chunks = p;
		a->cap = c;
	}
	a->chunks[a->n++] = (struct chunk){ .at = at, .pos = pos };
	return NULL;
}

/*
 * The framed stream of one range, from file offset *at, holding size
 * bytes that start at data-area offset pos.  *at moves past the trailer.
 */
static struct kcore_error *scan_range(struct scan *s, struct avml *a,
				      uint64_t *at, uint64_t size, uint64_t pos)
{
	const char *path = s->src->path;
	uint64_t p = *at, got = 0, trailer;
	unsigned char t[8];
	struct kcore_error *err;

	while (got < size) {
		unsigned char h[4 + 4 + 5];
		uint64_t len;
		size_t ulen;

		err = scan_get(s, p, h, 4);
		if (err)
			return err;
		len = kcore_load(h + 1, 3, false);
		if (h[0] == AVML_CHUNK_STREAM_ID) {
			err = scan_get(s, p + 4, h + 4, 6 < len ? 6 : len);
			if (err)
				return err;
			if (len != 6 || memcmp(h + 4, "sNaPpY", 6))
				return kcore_error_create_at(
					KCORE_ERR_FORMAT, 0, path, p,
					"AVML: bad snappy stream identifier "
					"at offset 0x%" PRIx64,
					p);
		} else if (h[0] == AVML_CHUNK_COMPRESSED ||
			   h[0] == AVML_CHUNK_RAW) {
			size_t hl = len < 9 ? (size_t)len : 9;

			if (len < 5 || len > snappy_max_compressed_length(
						     AVML_CHUNK_DATA) +
						       4)
				return kcore_error_create_at(
					KCORE_ERR_FORMAT, 0, path, p,
					"AVML: chunk at offset 0x%" PRIx64
					" has length %" PRIu64,
					p, len);
			err = scan_get(s, p + 4, h + 4, hl);
			if (err)
				return err;
			if (h[0] == AVML_CHUNK_RAW)
				ulen = (size_t)len - 4;
			else if (snappy_uncompressed_length((const char *)h + 8,
							    hl - 4,
							    &ulen) != SNAPPY_OK)
				return kcore_error_create_at(
					KCORE_ERR_FORMAT, 0, path, p,
					"AVML: snappy chunk at offset "
					"0x%" PRIx64 " has no length",
					p);
			if (ulen == 0 || ulen > AVML_CHUNK_DATA ||
			    ulen > size - got)
				return kcore_error_create_at(
					KCORE_ERR_FORMAT, 0, path, p,
					"AVML: chunk at offset 0x%" PRIx64
					" holds %zu bytes (at most %u, "
					"0x%" PRIx64 " left in the range)",
					p, ulen, AVML_CHUNK_DATA, size - got);
			err = add_chunk(a, p, pos + got);
			if (err)
				return err;
			got += ulen;
		} else if (h[0] < 0x80) {
			return kcore_error_create_at(
				KCORE_ERR_UNSUPPORTED, 0, path, p,
				"AVML: reserved snappy chunk type 0x%02x at "
				"offset 0x%" PRIx64,
				h[0], p);
		} /* else skippable */
		p += 4 + len;
	}
	err = scan_get(s, p, t, AVML_TRAILER_SIZE);
	if (err)
		return err;
	trailer = kcore_load(t, 8, false);
	if (trailer != p - *at)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, path, p,
			"AVML: the range's trailer says its stream is "
			"0x%" PRIx64 " bytes, it is 0x%" PRIx64,
			trailer, p - *at);
	*at = p + AVML_TRAILER_SIZE;
	return NULL;
}

static bool avml_probe(const unsigned char *magic, size_t len)
{
	return len >= 4 && kcore_load(magic, 4, false) == AVML_MAGIC;
}

static struct kcore_error *avml_open(struct kcore_source *src)
{
	uint64_t file_size = src->info.file_size, at = 0, prev_end = 0;
	uint64_t total = 0; /* bytes of the ranges so far */
	struct kcore_image_load *loads = NULL;
	struct avml *a = calloc(1, sizeof(*a));
	struct scan s = { .src = src, .buf = malloc(SCAN_BUF) };
	struct kcore_error *err = NULL;
	size_t n = 0, cap = 0;

	if (!a || !s.buf) {
		free(a);
		free(s.buf);
		return &kcore_error_nomem;
	}
	src->reader_data = a;
	while (at < file_size) {
		unsigned char h[AVML_RANGE_HEADER];
		uint64_t st, size;

		err = scan_get(&s, at, h, sizeof(h));
		if (err)
			goto out;
		err = kcore_lime_range(src, h, at, "AVML", AVML_MAGIC,
				       AVML_VERSION, n, prev_end, &st, &size);
		if (!err) {
			void *ld = loads;

			err = kcore_grow2(&ld, sizeof(*loads), NULL, 0, n,
					  &cap);
			loads = ld;
		}
		if (err)
			goto out;
		loads[n] =
			(struct kcore_image_load){ .paddr = st, .size = size };
		n++;
		prev_end = st + size;
		at += AVML_RANGE_HEADER;
		err = scan_range(&s, a, &at, size, total);
		if (err)
			goto out;
		total += size;
	}
	if (!n) {
		err = kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path, 0,
					    "AVML: no ranges");
		goto out;
	}
	err = kcore_image_build(EM_NONE, NULL, 0, loads, n, 4096, &src->image,
				&src->image_size, &src->info.file_size);
	if (err)
		goto out;
	a->data_start = loads[0].offset;
	a->data_end = src->info.file_size;
	/* The machine and VMCOREINFO, from the memory (the image moves). */
	err = kcore_image_identify(src, loads, n, 4096);
	if (err)
		goto out;
	a->data_start = loads[0].offset;
	a->data_end = src->info.file_size;
	src->info.physical_only = true;
	snprintf(a->detail, sizeof(a->detail),
		 "version 2, %zu range%s, %zu snappy chunks", n,
		 n == 1 ? "" : "s", a->n);
	src->info.format_detail = a->detail;
	src->info.page_compression = "snappy";
out:
	free(s.buf);
	free(loads);
	return err;
}

const struct kcore_reader_ops kcore_read_avml = {
	.name = "avml",
	.title = "AVML compressed LiME",
	.no_digests = "an AVML file has no place for digests",
	.probe = avml_probe,
	.open = avml_open,
	.pread = avml_pread,
	.destroy = avml_destroy,
};
