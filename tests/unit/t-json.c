// SPDX-License-Identifier: MIT
/* The JSON writer and string decoder (common/json.c): strings escaped
 * for untrusted bytes, the two layouts (a member a line, and inline),
 * numbers, the validator, and decoding what the writer wrote. */
#include <math.h>
#include <stdlib.h>

#include "kcoredump/json.h"
#include "tap.h"

static char *buf;
static size_t len;

static struct kcore_json *start(struct kcore_json *j)
{
	free(buf);
	buf = NULL;
	kcore_json_init(j, open_memstream(&buf, &len));
	return j;
}

static const char *done(struct kcore_json *j)
{
	fclose(j->f);
	return buf;
}

static void strings(void)
{
	struct kcore_json j;

	kcore_json_string(start(&j), NULL,
			  "a\xc2\x85"
			  "b\xc3\xa9\xff\x1b[31m\"\\\n\xe2\x82");
	is_str(done(&j),
	       "\"a\\u0085b\xc3\xa9\\ufffd\\u001b[31m\\\"\\\\\\n"
	       "\\ufffd\\ufffd\"",
	       "C1 and C0 escaped, UTF-8 kept, bad bytes U+FFFD");
	kcore_json_string_len(start(&j), NULL, "a\0b\t\r\x7f", 6);
	is_str(done(&j), "\"a\\u0000b\\t\\r\\u007f\"",
	       "NUL, tab, CR and DEL inside a counted string");
	kcore_json_string(start(&j), NULL, NULL);
	is_str(done(&j), "null", "a NULL string is null");
}

static void layouts(void)
{
	struct kcore_json j;

	start(&j);
	kcore_json_object_begin(&j, NULL);
	kcore_json_u64(&j, "a", 18446744073709551615ull);
	kcore_json_array_begin(&j, "list");
	kcore_json_i64(&j, NULL, -5);
	kcore_json_object_inline(&j, NULL);
	kcore_json_bool(&j, "t", true);
	kcore_json_array_inline(&j, "in");
	kcore_json_null(&j, NULL);
	kcore_json_hex(&j, NULL, 0xffff800000000000ull);
	kcore_json_array_end(&j);
	kcore_json_object_begin(&j, "nested"); /* inline, as its parent */
	kcore_json_double(&j, "d", 0.5);
	kcore_json_object_end(&j);
	kcore_json_object_end(&j);
	kcore_json_array_end(&j);
	kcore_json_array_begin(&j, "empty");
	kcore_json_array_end(&j);
	kcore_json_object_inline(&j, "empty_inline");
	kcore_json_object_end(&j);
	kcore_json_fixed(&j, "secs", 1.23456, 3);
	kcore_json_double(&j, "inf", INFINITY);
	kcore_json_fixed(&j, "nan", NAN, 3);
	kcore_json_object_end(&j);
	kcore_json_finish(&j);
	is_str(done(&j),
	       "{\n"
	       "  \"a\": 18446744073709551615,\n"
	       "  \"list\": [\n"
	       "    -5,\n"
	       "    {\"t\": true, \"in\": [null, \"0xffff800000000000\"], "
	       "\"nested\": {\"d\": 0.5}}\n"
	       "  ],\n"
	       "  \"empty\": [],\n"
	       "  \"empty_inline\": {},\n"
	       "  \"secs\": 1.235,\n"
	       "  \"inf\": null,\n"
	       "  \"nan\": null\n"
	       "}\n",
	       "a member a line, inline containers on theirs");
	ok(kcore_json_valid(buf), "the document is valid JSON");

	start(&j);
	kcore_json_object_inline(&j, NULL);
	kcore_json_raw(&j, "raw", "{\"x\": [1, 2.5e3]}");
	kcore_json_object_end(&j);
	is_str(done(&j), "{\"raw\": {\"x\": [1, 2.5e3]}}", "raw text as it is");
}

static void validator(void)
{
	static const char *const good[] = {
		"0",
		"-1.5e+3",
		"\"\\u00e9\\n\"",
		"[]",
		"{\"a\": [true, false, null]}",
		" { } ",
	};
	static const char *const bad[] = {
		"",	     "01",	 "1.",		"[1,]",
		"{\"a\" 1}", "\"\x01\"", "\"\\x\"",	"\"\\u12\"",
		"[1] 2",     "tru",	 "{\"a\": 1,}",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ok(kcore_json_valid(good[i]), "valid: %s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(!kcore_json_valid(bad[i]), "not valid: '%s'", bad[i]);
	ok(!kcore_json_valid(NULL), "NULL is not valid");
}

static void decode_one(const char *in, const char *want, size_t used,
		       const char *what)
{
	const char *p = in;
	char *s = kcore_json_unescape(&p, in + strlen(in));

	if (!want) {
		ok(!s && p == in, "%s: refused, nothing consumed", what);
	} else {
		is_str(s, want, what);
		is_int(p - in, used, "the closing quote consumed");
	}
	free(s);
}

static void decoder(void)
{
	struct kcore_json j;
	const char *raw = "x\xc2\x85y\x1b\"\\/\n\t\r\xe2\x82\xac";
	const char *p;
	char *s;

	decode_one("\"plain\" rest", "plain", 7, "a plain string");
	decode_one("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\/\b\f\n\r\t", 18,
		   "the short escapes");
	decode_one("\"\\u00e9\\u20AC\\u0041\"",
		   "\xc3\xa9\xe2\x82\xac"
		   "A",
		   20, "\\u escapes as UTF-8");
	decode_one("\"\\u0000\\ud800\"", "\xef\xbf\xbd\xef\xbf\xbd", 14,
		   "NUL and a surrogate become U+FFFD");
	decode_one("\"no end", NULL, 0, "no closing quote");
	decode_one("\"\\q\"", NULL, 0, "an unknown escape");
	decode_one("\"\\u12\"", NULL, 0, "a short \\u escape");
	decode_one("\"a\nb\"", NULL, 0, "a raw control byte");
	decode_one("nope", NULL, 0, "no opening quote");
	p = "\"abc\"";
	s = kcore_json_unescape(&p, p + 3);
	ok(!s, "the end bounds the string");
	free(s);

	/* What the writer writes, the decoder reads back (valid UTF-8,
	 * C1 controls included, survives). */
	kcore_json_string(start(&j), NULL, raw);
	done(&j);
	p = buf;
	s = kcore_json_unescape(&p, buf + len);
	is_str(s, raw, "written and read back: the same bytes");
	ok(p == buf + len, "all of it read");
	free(s);
}

int main(void)
{
	strings();
	layouts();
	validator();
	decoder();
	free(buf);
	return tap_done();
}
