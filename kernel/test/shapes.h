/* SPDX-License-Identifier: MIT */
/*
 * The pattern kernel/test/crash-shapes.c writes into the memory of the
 * processes it crashes, shared with kernel/test/corecheck.c, which checks
 * the cores against it: the 8-byte word at byte offset OFF of a region
 * filled with seed SEED.  Never zero.
 */
#ifndef KCD_SHAPES_H
#define KCD_SHAPES_H

static inline unsigned long shape_word(unsigned long off, unsigned long seed)
{
	unsigned long x = (off + seed * 0x9e3779b97f4a7c15UL) ^ seed;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9UL;
	x ^= x >> 29;
	return x | 1;
}

#endif
