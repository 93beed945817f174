// SPDX-License-Identifier: MIT
/* --exclude: the class names and makedumpfile dump levels. */
#include "kcoredump/dump.h"
#include "tap.h"

int main(void)
{
	char buf[64];

	is_int(kcore_exclude_parse("31"), 31, "a dump level");
	is_int(kcore_exclude_parse("0"), 0, "level 0");
	is_int(kcore_exclude_parse("32"), -1, "no level above 31");
	is_int(kcore_exclude_parse("3x"), -1, "a level is all digits");
	is_int(kcore_exclude_parse("free"), KCORE_EXCLUDE_FREE, "free");
	is_int(kcore_exclude_parse("user,free"),
	       KCORE_EXCLUDE_USER | KCORE_EXCLUDE_FREE, "a list");
	is_int(kcore_exclude_parse("cache-private,cache"),
	       KCORE_EXCLUDE_CACHE | KCORE_EXCLUDE_CACHE_PRIVATE,
	       "cache-private is not cache's prefix match");
	is_int(kcore_exclude_parse("all"), KCORE_EXCLUDE_ALL, "all");
	is_int(kcore_exclude_parse("zero,all"), KCORE_EXCLUDE_ALL,
	       "all with others");
	is_int(kcore_exclude_parse("fre"), -1, "no prefixes");
	is_int(kcore_exclude_parse("free,"), -1, "no trailing comma");
	is_int(kcore_exclude_parse(",free"), -1, "no empty name");
	is_int(kcore_exclude_parse(""), -1, "not empty");
	is_int(kcore_exclude_parse(NULL), -1, "not NULL");
	is_str(kcore_exclude_names(31, buf, sizeof(buf)),
	       "zero,cache,cache-private,user,free", "names of 31");
	is_str(kcore_exclude_names(16, buf, sizeof(buf)), "free",
	       "names of 16");
	is_str(kcore_exclude_names(0, buf, sizeof(buf)), "none", "names of 0");
	is_str(kcore_exclude_names(31, buf, 8), "zero",
	       "a short buffer "
	       "keeps whole names");
	is_int(kcore_exclude_parse(kcore_exclude_names(26, buf, sizeof(buf))),
	       26, "names parse back");
	return tap_done();
}
