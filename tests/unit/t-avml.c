// SPDX-License-Identifier: MIT
/* AVML output: the framed chunks, their CRC and the range header. */
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>

#include "avml.h"
#include "tap.h"

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* Decode one chunk as a framing-format reader does. */
static int decode(const unsigned char *c, size_t clen, unsigned char *out,
		  size_t *len)
{
	uint32_t h = le32(c);
	size_t n = h >> 8;

	*len = AVML_CHUNK_DATA; /* snappy_uncompress: the room in out */
	if (n + 4 != clen || n < 4)
		return -1;
	if ((h & 0xff) == AVML_CHUNK_RAW) {
		memcpy(out, c + 8, n - 4);
		*len = n - 4;
	} else if ((h & 0xff) != AVML_CHUNK_COMPRESSED ||
		   snappy_uncompress((const char *)c + 8, n - 4, (char *)out,
				     len) != SNAPPY_OK) {
		return -1;
	}
	return kcore_avml_crc(out, *len) == le32(c + 4) ? (int)(h & 0xff) : -1;
}

int main(void)
{
	size_t max = kcore_avml_chunk_max(), len = 0;
	unsigned char *in = calloc(1, AVML_CHUNK_DATA);
	unsigned char *c = malloc(max), *out = malloc(AVML_CHUNK_DATA);
	unsigned char id[AVML_STREAM_ID_SIZE], h[AVML_RANGE_HEADER];
	size_t clen;

	/* The framing format's mask of CRC-32C("123456789") = 0xe3069283. */
	uint32_t crc = 0xe3069283u;
	is_int(kcore_avml_crc((const unsigned char *)"123456789", 9),
	       (long long)(((crc >> 15) | (crc << 17)) + 0xa282ead8u),
	       "masked CRC-32C of the check string");

	clen = kcore_avml_chunk(in, AVML_CHUNK_DATA, c);
	ok(clen < 4096, "64 KiB of zeros: a chunk of %zu bytes", clen);
	is_int(decode(c, clen, out, &len), AVML_CHUNK_COMPRESSED,
	       "zeros: a compressed chunk with the right CRC");
	ok(len == AVML_CHUNK_DATA && !memcmp(out, in, len),
	   "zeros: decompress to 64 KiB of zeros");

	srand(7);
	for (size_t i = 0; i < AVML_CHUNK_DATA; i++)
		in[i] = (unsigned char)rand();
	clen = kcore_avml_chunk(in, AVML_CHUNK_DATA, c);
	is_int(decode(c, clen, out, &len), AVML_CHUNK_RAW,
	       "random bytes: stored, CRC right");
	ok(clen == AVML_CHUNK_DATA + 8 && len == AVML_CHUNK_DATA &&
		   !memcmp(out, in, len),
	   "random bytes: stored as they are");
	ok(clen <= max, "within kcore_avml_chunk_max()");

	memset(in + 100, 'x', 3000);
	clen = kcore_avml_chunk(in, 4096, c);
	is_int(decode(c, clen, out, &len), AVML_CHUNK_COMPRESSED,
	       "a short chunk, partly compressible: compressed");
	ok(len == 4096 && !memcmp(out, in, len), "and decompresses to it");
	in[5] ^= 1;
	ok(kcore_avml_crc(in, 4096) != le32(c + 4),
	   "a changed byte changes the CRC");

	kcore_avml_stream_id(id);
	ok(le32(id) == (0xffu | 6u << 8) && !memcmp(id + 4, "sNaPpY", 6),
	   "stream identifier chunk");
	kcore_avml_range_header(0x100000, 0x3fee0000, h);
	ok(le32(h) == 0x4C4D5641u && !memcmp(h, "AVML", 4) && le32(h + 4) == 2,
	   "range header: magic \"AVML\" on disk, version 2");
	ok(le64(h + 8) == 0x100000 && le64(h + 16) == 0x3ffdffff &&
		   le64(h + 24) == 0,
	   "range header: start, inclusive end, zero reserved bytes");
	free(in);
	free(c);
	free(out);
	return tap_done();
}
