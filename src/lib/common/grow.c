// SPDX-License-Identifier: MIT
/* Growing arrays (grow.h): one home for the doubling every reader and
 * the page filter use. */
#include <stdlib.h>

#include "grow.h"

struct kcore_error *kcore_grow2(void **a, size_t a_size, void **b,
				size_t b_size, size_t n, size_t *cap)
{
	size_t c = *cap ? 2 * *cap : 64;
	void *pa, *pb;

	if (n < *cap)
		return NULL;
	pa = realloc(*a, c * a_size);
	if (pa)
		*a = pa;
	pb = b ? realloc(*b, c * b_size) : pa;
	if (pb && b)
		*b = pb;
	if (!pa || !pb)
		return &kcore_error_nomem;
	*cap = c;
	return NULL;
}
