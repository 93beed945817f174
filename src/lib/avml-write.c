// SPDX-License-Identifier: MIT
/*
 * AVML output: the chunks and headers (layout in avml-write.h).  The
 * dump pipeline's workers call kcore_avml_chunk() on their blocks; the
 * in-order writer adds the headers, the zero chunks of holes and the
 * trailers.
 */
#include <snappy-c.h>
#include <string.h>

#include "avml-write.h"

#define AVML_VERSION 2u

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

size_t kcore_avml_chunk_max(void)
{
	return 8 + snappy_max_compressed_length(AVML_CHUNK_DATA);
}

size_t kcore_avml_chunk(const unsigned char *in, size_t len, unsigned char *out)
{
	size_t clen = snappy_max_compressed_length(len);

	put32(out + 4, kcore_avml_crc(in, len));
	if (snappy_compress((const char *)in, len, (char *)out + 8, &clen) ==
		    SNAPPY_OK &&
	    clen < len) {
		put32(out, AVML_CHUNK_COMPRESSED | (uint32_t)(clen + 4) << 8);
		return 8 + clen;
	}
	memcpy(out + 8, in, len);
	put32(out, AVML_CHUNK_RAW | (uint32_t)(len + 4) << 8);
	return 8 + len;
}

void kcore_avml_stream_id(unsigned char out[AVML_STREAM_ID_SIZE])
{
	put32(out, AVML_CHUNK_STREAM_ID | 6u << 8);
	memcpy(out + 4, "sNaPpY", 6);
}

void kcore_avml_range_header(uint64_t start, uint64_t size,
			     unsigned char out[AVML_RANGE_HEADER])
{
	memset(out, 0, AVML_RANGE_HEADER);
	put32(out, AVML_MAGIC);
	put32(out + 4, AVML_VERSION);
	put64(out + 8, start);
	put64(out + 16, start + size - 1); /* inclusive */
}
