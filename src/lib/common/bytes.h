/* SPDX-License-Identifier: MIT */
/*
 * Loads and stores of integers of a given size and byte order in
 * unaligned, untrusted bytes; shared inside libkcore, not installed.
 */
#ifndef KCOREDUMP_BYTES_H
#define KCOREDUMP_BYTES_H

#include <stdbool.h>
#include <stdint.h>

/* Endian-aware loads from untrusted, unaligned note data. */
static inline uint64_t kcore_load(const unsigned char *p, unsigned size,
				  bool big_endian)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < size; i++) {
		unsigned shift = big_endian ? 8 * (size - 1 - i) : 8 * i;

		v |= (uint64_t)p[i] << shift;
	}
	return v;
}

/* Little-endian stores of size bytes (of the formats we write). */
static inline void kcore_store_le(unsigned char *p, uint64_t v, unsigned size)
{
	for (unsigned i = 0; i < size; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

#endif
