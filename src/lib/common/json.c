// SPDX-License-Identifier: MIT
/* The JSON writer (kcoredump/json.h), a strict validator for the text it
 * is given whole (kcore_json_raw()), and the one string decoder. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kcoredump/json.h"
#include "kcoredump/text.h"

/*
 * The len bytes at s as one JSON string, quotes included: '"' and '\\'
 * escaped, \n \t \r as such, every other control (C0, DEL and the C1
 * controls U+0080..U+009F) as \u00XX, valid UTF-8 as it is, and each
 * byte that starts no valid UTF-8 character as \ufffd.
 */
static void put_string(FILE *f, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	fputc('"', f);
	while (i < len) {
		unsigned char c = p[i];
		uint32_t cp;
		size_t n;

		if (c >= 0x80) {
			n = kcore_utf8_char(s + i, len - i, &cp);
			if (!n) /* bytes, not always UTF-8 */
				fputs("\\ufffd", f);
			else if (cp < 0xa0) /* C1: never raw on a terminal */
				fprintf(f, "\\u%04x", (unsigned)cp);
			else
				fwrite(p + i, 1, n, f);
			i += n ? n : 1;
			continue;
		}
		if (c == '"' || c == '\\') {
			fputc('\\', f);
			fputc(c, f);
		} else if (c == '\n') {
			fputs("\\n", f);
		} else if (c == '\t') {
			fputs("\\t", f);
		} else if (c == '\r') {
			fputs("\\r", f);
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
		} else {
			fputc(c, f);
		}
		i++;
	}
	fputc('"', f);
}

void kcore_json_init(struct kcore_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->need_comma[0] = false;
	j->inline_[0] = false;
}

static void begin_value(struct kcore_json *j, const char *key)
{
	if (j->inline_[j->depth]) {
		if (j->need_comma[j->depth])
			fputs(", ", j->f);
	} else {
		if (j->need_comma[j->depth])
			fputc(',', j->f);
		if (j->depth) {
			fputc('\n', j->f);
			for (int i = 0; i < j->depth; i++)
				fputs("  ", j->f);
		}
	}
	j->need_comma[j->depth] = true;
	if (key) {
		put_string(j->f, key, strlen(key));
		fputs(": ", j->f);
	}
}

static void open_nested(struct kcore_json *j, const char *key, char c,
			bool on_line)
{
	bool in_line = j->inline_[j->depth];

	begin_value(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < KCORE_JSON_MAX_DEPTH)
		j->depth++;
	j->need_comma[j->depth] = false;
	j->inline_[j->depth] = on_line || in_line;
}

static void close_nested(struct kcore_json *j, char c)
{
	bool had = j->need_comma[j->depth] && !j->inline_[j->depth];

	if (j->depth > 0)
		j->depth--;
	if (had) {
		fputc('\n', j->f);
		for (int i = 0; i < j->depth; i++)
			fputs("  ", j->f);
	}
	fputc(c, j->f);
}

void kcore_json_object_begin(struct kcore_json *j, const char *key)
{
	open_nested(j, key, '{', false);
}

void kcore_json_object_inline(struct kcore_json *j, const char *key)
{
	open_nested(j, key, '{', true);
}

void kcore_json_object_end(struct kcore_json *j)
{
	close_nested(j, '}');
}

void kcore_json_array_begin(struct kcore_json *j, const char *key)
{
	open_nested(j, key, '[', false);
}

void kcore_json_array_inline(struct kcore_json *j, const char *key)
{
	open_nested(j, key, '[', true);
}

void kcore_json_array_end(struct kcore_json *j)
{
	close_nested(j, ']');
}

void kcore_json_string(struct kcore_json *j, const char *key, const char *value)
{
	if (!value) {
		kcore_json_null(j, key);
		return;
	}
	kcore_json_string_len(j, key, value, strlen(value));
}

void kcore_json_string_len(struct kcore_json *j, const char *key,
			   const char *value, size_t len)
{
	begin_value(j, key);
	put_string(j->f, value, len);
}

void kcore_json_u64(struct kcore_json *j, const char *key, uint64_t value)
{
	begin_value(j, key);
	fprintf(j->f, "%" PRIu64, value);
}

void kcore_json_i64(struct kcore_json *j, const char *key, int64_t value)
{
	begin_value(j, key);
	fprintf(j->f, "%" PRId64, value);
}

void kcore_json_double(struct kcore_json *j, const char *key, double value)
{
	begin_value(j, key);
	if (isfinite(value))
		fprintf(j->f, "%.6g", value);
	else
		fputs("null", j->f);
}

void kcore_json_fixed(struct kcore_json *j, const char *key, double value,
		      int places)
{
	begin_value(j, key);
	if (isfinite(value))
		fprintf(j->f, "%.*f", places, value);
	else
		fputs("null", j->f);
}

void kcore_json_bool(struct kcore_json *j, const char *key, bool value)
{
	begin_value(j, key);
	fputs(value ? "true" : "false", j->f);
}

void kcore_json_null(struct kcore_json *j, const char *key)
{
	begin_value(j, key);
	fputs("null", j->f);
}

void kcore_json_hex(struct kcore_json *j, const char *key, uint64_t value)
{
	begin_value(j, key);
	fprintf(j->f, "\"0x%" PRIx64 "\"", value);
}

void kcore_json_finish(struct kcore_json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
}

/*
 * A strict JSON value (RFC 8259) at *p, nested at most KCORE_JSON_MAX_DEPTH
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
	if (depth >= KCORE_JSON_MAX_DEPTH)
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

bool kcore_json_valid(const char *text)
{
	const char *p = text;

	if (!text || !valid_value(&p, 0))
		return false;
	skip_ws(&p);
	return *p == '\0';
}

void kcore_json_raw(struct kcore_json *j, const char *key, const char *text)
{
	begin_value(j, key);
	fputs(text, j->f);
}

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

char *kcore_json_unescape(const char **p, const char *end)
{
	const char *s = *p;
	char *out, *o;

	if (s >= end || *s != '"')
		return NULL;
	s++;
	/* Decoding never grows a string (\uXXXX: 6 bytes to at most 3). */
	out = malloc((size_t)(end - s) + 1);
	if (!out)
		return NULL;
	o = out;
	while (s < end && *s != '"') {
		unsigned char c = (unsigned char)*s++;
		unsigned v = 0;

		if (c < 0x20)
			goto bad;
		if (c != '\\') {
			*o++ = (char)c;
			continue;
		}
		if (s >= end)
			goto bad;
		c = (unsigned char)*s++;
		switch (c) {
		case '"':
		case '\\':
		case '/':
			*o++ = (char)c;
			continue;
		case 'b':
			*o++ = '\b';
			continue;
		case 'f':
			*o++ = '\f';
			continue;
		case 'n':
			*o++ = '\n';
			continue;
		case 'r':
			*o++ = '\r';
			continue;
		case 't':
			*o++ = '\t';
			continue;
		case 'u':
			break;
		default:
			goto bad;
		}
		if (end - s < 4)
			goto bad;
		for (int i = 0; i < 4; i++) {
			int h = hexval(s[i]);

			if (h < 0)
				goto bad;
			v = v * 16 + (unsigned)h;
		}
		s += 4;
		if (v == 0 || (v >= 0xd800 && v <= 0xdfff))
			v = 0xfffd;
		if (v < 0x80) {
			*o++ = (char)v;
		} else if (v < 0x800) {
			*o++ = (char)(0xc0 | (v >> 6));
			*o++ = (char)(0x80 | (v & 0x3f));
		} else {
			*o++ = (char)(0xe0 | (v >> 12));
			*o++ = (char)(0x80 | ((v >> 6) & 0x3f));
			*o++ = (char)(0x80 | (v & 0x3f));
		}
	}
	if (s >= end)
		goto bad;
	*o = '\0';
	*p = s + 1;
	return out;
bad:
	free(out);
	return NULL;
}
