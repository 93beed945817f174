// SPDX-License-Identifier: MIT
/*
 * AVML output: the chunks and headers (layout in write-avml.h).  The
 * dump pipeline's workers call kcore_avml_chunk() on their blocks; the
 * in-order writer adds the headers, the zero chunks of holes and the
 * trailers.
 */
#include <snappy-c.h>
#include <string.h>

#include "write-avml.h"
#include "internal.h"

#define AVML_VERSION 2u

size_t kcore_avml_chunk_max(void)
{
	return 8 + snappy_max_compressed_length(AVML_CHUNK_DATA);
}

size_t kcore_avml_chunk(const unsigned char *in, size_t len, unsigned char *out)
{
	size_t clen = snappy_max_compressed_length(len);

	kcore_store_le(out + 4, kcore_avml_crc(in, len), 4);
	if (snappy_compress((const char *)in, len, (char *)out + 8, &clen) ==
		    SNAPPY_OK &&
	    clen < len) {
		kcore_store_le(
			out, AVML_CHUNK_COMPRESSED | (uint32_t)(clen + 4) << 8,
			4);
		return 8 + clen;
	}
	memcpy(out + 8, in, len);
	kcore_store_le(out, AVML_CHUNK_RAW | (uint32_t)(len + 4) << 8, 4);
	return 8 + len;
}

void kcore_avml_stream_id(unsigned char out[AVML_STREAM_ID_SIZE])
{
	kcore_store_le(out, AVML_CHUNK_STREAM_ID | 6u << 8, 4);
	memcpy(out + 4, "sNaPpY", 6);
}

void kcore_avml_range_header(uint64_t start, uint64_t size,
			     unsigned char out[AVML_RANGE_HEADER])
{
	memset(out, 0, AVML_RANGE_HEADER);
	kcore_store_le(out, AVML_MAGIC, 4);
	kcore_store_le(out + 4, AVML_VERSION, 4);
	kcore_store_le(out + 8, start, 8);
	kcore_store_le(out + 16, start + size - 1, 8); /* inclusive */
}
