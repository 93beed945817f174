// SPDX-License-Identifier: MIT
/* The JSON writer. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "json.h"
#include "kcoredump/text.h"

void json_init(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->need_comma[0] = false;
}

static void begin_value(struct json *j, const char *key)
{
	if (j->need_comma[j->depth])
		fputc(',', j->f);
	j->need_comma[j->depth] = true;
	if (j->depth) {
		fputc('\n', j->f);
		for (int i = 0; i < j->depth; i++)
			fputs("  ", j->f);
	}
	if (key) {
		kcore_json_string(j->f, key, strlen(key));
		fputs(": ", j->f);
	}
}

static void open_nested(struct json *j, const char *key, char c)
{
	begin_value(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void close_nested(struct json *j, char c)
{
	bool had = j->need_comma[j->depth];

	if (j->depth > 0)
		j->depth--;
	if (had) {
		fputc('\n', j->f);
		for (int i = 0; i < j->depth; i++)
			fputs("  ", j->f);
	}
	fputc(c, j->f);
}

void json_object_begin(struct json *j, const char *key)
{
	open_nested(j, key, '{');
}

void json_object_end(struct json *j)
{
	close_nested(j, '}');
}

void json_array_begin(struct json *j, const char *key)
{
	open_nested(j, key, '[');
}

void json_array_end(struct json *j)
{
	close_nested(j, ']');
}

void json_string(struct json *j, const char *key, const char *value)
{
	if (!value) {
		json_null(j, key);
		return;
	}
	json_string_len(j, key, value, strlen(value));
}

void json_string_len(struct json *j, const char *key, const char *value,
		     size_t len)
{
	begin_value(j, key);
	kcore_json_string(j->f, value, len);
}

void json_u64(struct json *j, const char *key, uint64_t value)
{
	begin_value(j, key);
	fprintf(j->f, "%" PRIu64, value);
}

void json_i64(struct json *j, const char *key, int64_t value)
{
	begin_value(j, key);
	fprintf(j->f, "%" PRId64, value);
}

void json_double(struct json *j, const char *key, double value)
{
	begin_value(j, key);
	if (isfinite(value))
		fprintf(j->f, "%.6g", value);
	else
		fputs("null", j->f);
}

void json_bool(struct json *j, const char *key, bool value)
{
	begin_value(j, key);
	fputs(value ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
	begin_value(j, key);
	fputs("null", j->f);
}

void json_hex(struct json *j, const char *key, uint64_t value)
{
	begin_value(j, key);
	fprintf(j->f, "\"0x%" PRIx64 "\"", value);
}

void json_finish(struct json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
}
