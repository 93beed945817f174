/* SPDX-License-Identifier: MIT */
/*
 * The known-content pattern shared by the fixture generator, the guest
 * helper programs and the tests: every naturally aligned 64-bit word at
 * address A holds kc_pattern_word(A, seed).  Content can therefore be
 * checked at any address without a reference copy.
 */
#ifndef KCOREDUMP_TESTS_PATTERN_H
#define KCOREDUMP_TESTS_PATTERN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t kc_pattern_word(uint64_t addr, uint64_t seed)
{
	uint64_t x = (addr & ~(uint64_t)7) ^ (seed * 0x9e3779b97f4a7c15ULL);

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	return x |
	       1; /* never a zero word: pattern pages are never zero pages */
}

/* Fill buf, which holds the bytes at addresses [addr, addr + len). */
static inline void kc_pattern_fill(void *buf, uint64_t addr, size_t len,
				   uint64_t seed)
{
	unsigned char *p = buf;

	for (size_t i = 0; i < len; i++) {
		uint64_t a = addr + i;
		uint64_t w = kc_pattern_word(a, seed);

		p[i] = (unsigned char)(w >> (8 * (a & 7)));
	}
}

/* Return the index of the first mismatching byte, or len if all match. */
static inline size_t kc_pattern_check(const void *buf, uint64_t addr,
				      size_t len, uint64_t seed)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < len; i++) {
		uint64_t a = addr + i;
		uint64_t w = kc_pattern_word(a, seed);

		if (p[i] != (unsigned char)(w >> (8 * (a & 7))))
			return i;
	}
	return len;
}

#endif
