/* SPDX-License-Identifier: MIT */
/*
 * Internal to libkcore: the layout of AVML's compressed LiME (version 2)
 * both directions share, the reader (read-avml.c) and the writer
 * (write-avml.c), and the snappy framing helpers: per range a 32-byte header {
 * u32 magic "AVML", u32 version 2, u64 start, u64 end (inclusive), 8 zero bytes
 * }, the range's memory as one snappy framed stream (a stream identifier, then
 * chunks of at most 64 KiB of data), and a u64 with the stream's length in
 * bytes.
 */
#ifndef KCOREDUMP_AVML_H
#define KCOREDUMP_AVML_H

#include <stddef.h>
#include <stdint.h>

#define AVML_MAGIC	    0x4C4D5641u
#define AVML_VERSION	    2u
#define AVML_CHUNK_DATA	    65536u /* data bytes per chunk, at most */
#define AVML_RANGE_HEADER   32	   /* LiME's (lime.h) */
#define AVML_TRAILER_SIZE   8
#define AVML_STREAM_ID_SIZE 10

/* Chunk types of the framing format; 0x80-0xfe are skippable, 0x02-0x7f
 * reserved. */
enum {
	AVML_CHUNK_COMPRESSED = 0x00,
	AVML_CHUNK_RAW = 0x01,
	AVML_CHUNK_STREAM_ID = 0xff
};

/* The masked CRC-32C of the framing format (read-avml.c). */
uint32_t kcore_avml_crc(const unsigned char *p, size_t len);

/* Largest framed chunk of AVML_CHUNK_DATA bytes or fewer. */
size_t kcore_avml_chunk_max(void);

/*
 * One chunk of len (1 to AVML_CHUNK_DATA) bytes into out (room for
 * kcore_avml_chunk_max()): snappy-compressed, or stored when that is not
 * smaller.  Returns the chunk's size.  Thread-safe.
 */
size_t kcore_avml_chunk(const unsigned char *in, size_t len,
			unsigned char *out);

/* The stream identifier chunk that opens each range's stream. */
void kcore_avml_stream_id(unsigned char out[AVML_STREAM_ID_SIZE]);

/* The range header of [start, start + size). */
void kcore_avml_range_header(uint64_t start, uint64_t size,
			     unsigned char out[AVML_RANGE_HEADER]);

#endif
