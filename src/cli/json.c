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

/*
 * A strict JSON value (RFC 8259) at *p, nested at most JSON_MAX_DEPTH
 * deep; *p moves past it.  Strings may hold any UTF-8 but no raw control
 * byte (the writer's own rule).
 */
static bool valid_value(const char **p, int depth);

static void skip_ws(const char **p)
{
	while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
		(*p)++;
}

static bool valid_string(const char **p)
{
	const char *s = *p + 1;

	for (;; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"')
			break;
		if (c < 0x20)
			return false;
		if (c != '\\')
			continue;
		s++;
		if (*s == 'u') {
			for (int i = 1; i <= 4; i++)
				if (!strchr("0123456789abcdefABCDEF", s[i]) ||
				    !s[i])
					return false;
			s += 4;
		} else if (!*s || !strchr("\"\\/bfnrt", *s)) {
			return false;
		}
	}
	*p = s + 1;
	return true;
}

static bool valid_number(const char **p)
{
	const char *s = *p;

	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (*s >= '0' && *s <= '9')
			s++;
	else
		return false;
	if (*s == '.') {
		if (*++s < '0' || *s > '9')
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		if (*++s == '+' || *s == '-')
			s++;
		if (*s < '0' || *s > '9')
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	*p = s;
	return true;
}

static bool valid_members(const char **p, int depth, char close, bool keys)
{
	(*p)++;
	skip_ws(p);
	if (**p == close) {
		(*p)++;
		return true;
	}
	for (;;) {
		skip_ws(p);
		if (keys) {
			if (**p != '"' || !valid_string(p))
				return false;
			skip_ws(p);
			if (**p != ':')
				return false;
			(*p)++;
		}
		if (!valid_value(p, depth + 1))
			return false;
		skip_ws(p);
		if (**p == close) {
			(*p)++;
			return true;
		}
		if (**p != ',')
			return false;
		(*p)++;
	}
}

static bool valid_value(const char **p, int depth)
{
	if (depth >= JSON_MAX_DEPTH)
		return false;
	skip_ws(p);
	switch (**p) {
	case '{':
		return valid_members(p, depth, '}', true);
	case '[':
		return valid_members(p, depth, ']', false);
	case '"':
		return valid_string(p);
	case 't':
		return strncmp(*p, "true", 4) == 0 && (*p += 4, true);
	case 'f':
		return strncmp(*p, "false", 5) == 0 && (*p += 5, true);
	case 'n':
		return strncmp(*p, "null", 4) == 0 && (*p += 4, true);
	}
	return valid_number(p);
}

bool json_valid(const char *text)
{
	const char *p = text;

	if (!text || !valid_value(&p, 0))
		return false;
	skip_ws(&p);
	return *p == '\0';
}

void json_raw(struct json *j, const char *key, const char *text)
{
	begin_value(j, key);
	fputs(text, j->f);
}
