/* SPDX-License-Identifier: MIT */
/*
 * The JSON writer of the library and the CLI: one document streamed to a
 * FILE, keys in order, every control byte and invalid UTF-8 escaped (note
 * strings are untrusted; kcore_json_string() in text.h).  A container's
 * members go one per line, indented two spaces a level; an inline one
 * (kcore_json_object_inline(), and everything inside it) keeps them on
 * its line, ", " between them, as the core handler's metadata does.
 */
#ifndef KCOREDUMP_JSON_H
#define KCOREDUMP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define KCORE_JSON_MAX_DEPTH 32

struct kcore_json {
	FILE *f;
	int depth;
	bool need_comma[KCORE_JSON_MAX_DEPTH];
	bool inline_[KCORE_JSON_MAX_DEPTH];
};

void kcore_json_init(struct kcore_json *j, FILE *f);
/* key is NULL inside arrays and for the top-level value. */
void kcore_json_object_begin(struct kcore_json *j, const char *key);
void kcore_json_object_end(struct kcore_json *j);
void kcore_json_array_begin(struct kcore_json *j, const char *key);
void kcore_json_array_end(struct kcore_json *j);
/* Containers whose members stay on the line: {"a": 1, "b": [2, 3]}.
 * They end with kcore_json_object_end() and kcore_json_array_end(). */
void kcore_json_object_inline(struct kcore_json *j, const char *key);
void kcore_json_array_inline(struct kcore_json *j, const char *key);
/* value NULL: null. */
void kcore_json_string(struct kcore_json *j, const char *key,
		       const char *value);
void kcore_json_string_len(struct kcore_json *j, const char *key,
			   const char *value, size_t len);
void kcore_json_u64(struct kcore_json *j, const char *key, uint64_t value);
void kcore_json_i64(struct kcore_json *j, const char *key, int64_t value);
/* "%.6g"; not finite: null. */
void kcore_json_double(struct kcore_json *j, const char *key, double value);
/* With places digits after the point ("%.*f"); not finite: null. */
void kcore_json_fixed(struct kcore_json *j, const char *key, double value,
		      int places);
void kcore_json_bool(struct kcore_json *j, const char *key, bool value);
void kcore_json_null(struct kcore_json *j, const char *key);
/* Addresses: "0x..." strings, since they exceed 2^53. */
void kcore_json_hex(struct kcore_json *j, const char *key, uint64_t value);
/* text is one JSON value (a whole document, e.g.), strictly. */
bool kcore_json_valid(const char *text);
/* The value text as it is: only for text kcore_json_valid() accepts. */
void kcore_json_raw(struct kcore_json *j, const char *key, const char *text);
/* Finish the document with a newline. */
void kcore_json_finish(struct kcore_json *j);

/*
 * The one JSON string decoder: the string whose opening quote is at *p,
 * ending before end, decoded into a malloc()ed C string (\u0000 and
 * surrogates become U+FFFD, other \uXXXX UTF-8); *p then points past its
 * closing quote.  NULL, *p unmoved, when it is malformed (a raw control
 * byte, an unknown escape, no closing quote) or memory runs out.
 */
char *kcore_json_unescape(const char **p, const char *end);

#endif
