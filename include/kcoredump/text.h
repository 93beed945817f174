/* SPDX-License-Identifier: MIT */
/* Text taken from dumps and cores: names, command lines, paths.  Bytes,
 * not always UTF-8; every printer of them asks here what a byte starts. */
#ifndef KCOREDUMP_TEXT_H
#define KCOREDUMP_TEXT_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

/*
 * The length (2 to 4) of the valid UTF-8 sequence of one non-ASCII
 * character at s, of at most len bytes, and its code point in *cp (may be
 * NULL); 0 when s does not start one: an ASCII byte, a stray continuation
 * byte, an overlong form, a surrogate, a code point past U+10FFFF, or a
 * sequence cut short by len or by a NUL (a C string may pass SIZE_MAX).
 * C1 controls (U+0080..U+009F) are valid UTF-8: a printer for a terminal
 * checks *cp itself.
 */
size_t kcore_utf8_char(const char *s, size_t len, uint32_t *cp);

#endif
