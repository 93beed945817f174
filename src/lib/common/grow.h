/* SPDX-License-Identifier: MIT */
/*
 * Growing arrays (grow.c); not installed.
 */
#ifndef KCOREDUMP_GROW_H
#define KCOREDUMP_GROW_H

#include <stddef.h>

#include "kcoredump/error.h"

/*
 * Make room for one more element in two arrays of *cap elements (of
 * a_size and b_size bytes) that hold n: doubles *cap when n == *cap.
 * b may be NULL: one array.
 */
struct kcore_error *kcore_grow2(void **a, size_t a_size, void **b,
				size_t b_size, size_t n, size_t *cap);

#endif
