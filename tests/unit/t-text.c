// SPDX-License-Identifier: MIT
/* kcore_utf8_char: what a byte of untrusted text starts. */
#include <stdint.h>

#include "kcoredump/text.h"
#include "tap.h"

static void one(const char *s, size_t len, size_t want_n, uint32_t want_cp,
		const char *what)
{
	uint32_t cp = 0xdeadbeef;
	size_t n = kcore_utf8_char(s, len, &cp);

	ok(n == want_n && (!n || cp == want_cp),
	   "%s: length %zu (want %zu), U+%04X", what, n, want_n, (unsigned)cp);
}

int main(void)
{
	one("A", SIZE_MAX, 0, 0, "ASCII is not a sequence");
	one("\xc3\xa9", SIZE_MAX, 2, 0xe9, "e acute");
	one("\xc2\x85", SIZE_MAX, 2, 0x85, "C1 NEL is valid UTF-8");
	one("\xc2\xa0", SIZE_MAX, 2, 0xa0, "no-break space");
	one("\xe2\x82\xac", SIZE_MAX, 3, 0x20ac, "euro sign");
	one("\xf0\x9f\x98\x80", SIZE_MAX, 4, 0x1f600, "emoji");
	one("\xf4\x8f\xbf\xbf", SIZE_MAX, 4, 0x10ffff, "U+10FFFF");
	one("\xf4\x90\x80\x80", SIZE_MAX, 0, 0, "past U+10FFFF");
	one("\xf5\x80\x80\x80", SIZE_MAX, 0, 0, "lead byte 0xf5");
	one("\xc0\xaf", SIZE_MAX, 0, 0, "overlong 2 bytes (0xc0)");
	one("\xc1\xbf", SIZE_MAX, 0, 0, "overlong 2 bytes (0xc1)");
	one("\xe0\x80\xaf", SIZE_MAX, 0, 0, "overlong 3 bytes");
	one("\xf0\x8f\xbf\xbf", SIZE_MAX, 0, 0, "overlong 4 bytes");
	one("\xed\xa0\x80", SIZE_MAX, 0, 0, "surrogate U+D800");
	one("\xed\x9f\xbf", SIZE_MAX, 3, 0xd7ff, "U+D7FF");
	one("\x80", SIZE_MAX, 0, 0, "stray continuation byte");
	one("\xe2\x82", SIZE_MAX, 0, 0, "cut short by the NUL");
	one("\xe2\x82\xac", 2, 0, 0, "cut short by the length");
	one("\xc3\xa9", 0, 0, 0, "length 0");
	one("\xc3(", SIZE_MAX, 0, 0, "lead byte without continuation");
	ok(kcore_utf8_char("\xc3\xa9", SIZE_MAX, NULL) == 2,
	   "the code point may be left out");
	return tap_done();
}
