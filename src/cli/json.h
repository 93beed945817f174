/* SPDX-License-Identifier: MIT */
/* A small streaming JSON writer: one document, keys in order, every
 * control byte and invalid UTF-8 escaped (note strings are untrusted). */
#ifndef KCOREDUMP_JSON_H
#define KCOREDUMP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

struct json {
	FILE *f;
	int depth;
	bool need_comma[JSON_MAX_DEPTH];
};

void json_init(struct json *j, FILE *f);
/* key is NULL inside arrays and for the top-level value. */
void json_object_begin(struct json *j, const char *key);
void json_object_end(struct json *j);
void json_array_begin(struct json *j, const char *key);
void json_array_end(struct json *j);
void json_string(struct json *j, const char *key, const char *value);
void json_string_len(struct json *j, const char *key, const char *value,
		     size_t len);
void json_u64(struct json *j, const char *key, uint64_t value);
void json_i64(struct json *j, const char *key, int64_t value);
void json_double(struct json *j, const char *key, double value);
void json_bool(struct json *j, const char *key, bool value);
void json_null(struct json *j, const char *key);
/* Addresses: "0x..." strings, since they exceed 2^53. */
void json_hex(struct json *j, const char *key, uint64_t value);
/* text is one JSON value (a whole document, e.g.), strictly. */
bool json_valid(const char *text);
/* The value text as it is: only for text json_valid() accepts. */
void json_raw(struct json *j, const char *key, const char *text);
/* Finish the document with a newline. */
void json_finish(struct json *j);

#endif
