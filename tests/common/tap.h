/* SPDX-License-Identifier: MIT */
/*
 * A tiny TAP-like assertion header for the unit tests.  Each test program
 * prints "ok N - what" / "not ok N - what" lines and exits 1 if any check
 * failed, 77 (ctest SKIP_RETURN_CODE) if it skipped, else 0.
 */
#ifndef KCOREDUMP_TESTS_TAP_H
#define KCOREDUMP_TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_count;
static int tap_failed;

static inline int tap_check(int cond, const char *file, int line,
			    const char *fmt, ...)
{
	va_list ap;

	tap_count++;
	printf("%s %d - ", cond ? "ok" : "not ok", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond) {
		printf("#   failed at %s:%d\n", file, line);
		tap_failed++;
	}
	fflush(stdout);
	return cond;
}

#define ok(cond, ...) tap_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(a, b, what)                                               \
	do {                                                             \
		long long _a = (long long)(a), _b = (long long)(b);      \
		if (!ok(_a == _b, "%s", what))                           \
			printf("#   got %lld, expected %lld\n", _a, _b); \
	} while (0)
#define is_str(a, b, what)                                              \
	do {                                                            \
		const char *_a = (a), *_b = (b);                        \
		if (!ok(_a && _b && strcmp(_a, _b) == 0, "%s", what))   \
			printf("#   got '%s', expected '%s'\n",         \
			       _a ? _a : "(null)", _b ? _b : "(null)"); \
	} while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

static inline void tap_skip_all(const char *why)
{
	printf("1..0 # SKIP %s\n", why);
	exit(77);
}

#endif
