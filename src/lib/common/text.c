// SPDX-License-Identifier: MIT
/* UTF-8 of untrusted text (kcoredump/text.h). */
#include "kcoredump/text.h"

size_t kcore_utf8_char(const char *s, size_t len, uint32_t *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;
	uint32_t c;

	if (!len || p[0] < 0xc2 || p[0] > 0xf4)
		return 0;
	n = p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : 4;
	if (n > len)
		return 0;
	c = p[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && (c < 0x800 || (c >= 0xd800 && c < 0xe000))) ||
	    (n == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	if (cp)
		*cp = c;
	return n;
}
