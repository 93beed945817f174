// SPDX-License-Identifier: MIT
/* VMCOREINFO parsing and typed look-ups. */
#include "kcoredump/vmcoreinfo.h"
#include "tap.h"

int main(void)
{
	static const char text[] = "OSRELEASE=6.12.38+deb12-amd64\n"
				   "PAGESIZE=4096\n"
				   "SYMBOL(swapper_pg_dir)=ffffffff9a22e000\n"
				   "OFFSET(uts_namespace.name)=4\n"
				   "NUMBER(pgtable_l5_enabled)=0\n"
				   "NUMBER(VMALLOC_START)=0xffffc90000000000\n"
				   "NUMBER(negative)=-1\n"
				   "KERNELOFFSET=18e00000\n"
				   "NOEQUALS\n"
				   "\n"
				   "PAGESIZE=8192\n"
				   "BAD=zz\n"
				   "\0\0\0padding";
	struct kcore_vmcoreinfo *vi;
	struct kcore_error *err;
	uint64_t v;

	err = kcore_vmcoreinfo_parse(text, sizeof(text) - 1, &vi);
	ok(!err, "parse");
	if (err)
		return tap_done();
	is_int(kcore_vmcoreinfo_count(vi), 11,
	       "11 lines (empty skipped, "
	       "NUL ends the text)");
	is_str(kcore_vmcoreinfo_get(vi, "OSRELEASE"), "6.12.38+deb12-amd64",
	       "OSRELEASE");
	is_str(kcore_vmcoreinfo_get(vi, "NOEQUALS"), "",
	       "a line without '=' is kept with an empty value");
	ok(kcore_vmcoreinfo_get_u64(vi, "PAGESIZE", &v) && v == 8192,
	   "the last line of a repeated key wins (decimal PAGESIZE)");
	ok(kcore_vmcoreinfo_get_u64(vi, "SYMBOL(swapper_pg_dir)", &v) &&
		   v == 0xffffffff9a22e000ull,
	   "SYMBOL() is hex without prefix");
	ok(kcore_vmcoreinfo_get_u64(vi, "OFFSET(uts_namespace.name)", &v) &&
		   v == 4,
	   "OFFSET() is decimal");
	ok(kcore_vmcoreinfo_get_u64(vi, "NUMBER(VMALLOC_START)", &v) &&
		   v == 0xffffc90000000000ull,
	   "NUMBER() with 0x is hex");
	ok(kcore_vmcoreinfo_get_u64(vi, "NUMBER(negative)", &v) &&
		   v == UINT64_MAX,
	   "negative NUMBER() wraps to u64");
	ok(kcore_vmcoreinfo_get_u64(vi, "KERNELOFFSET", &v) && v == 0x18e00000,
	   "KERNELOFFSET is hex");
	ok(!kcore_vmcoreinfo_get_u64(vi, "BAD", &v), "junk is not a number");
	ok(!kcore_vmcoreinfo_get_u64(vi, "MISSING", &v), "missing key");
	ok(!kcore_vmcoreinfo_get(vi, "padding"), "text after NUL ignored");
	kcore_vmcoreinfo_destroy(vi);

	err = kcore_vmcoreinfo_parse("", 0, &vi);
	ok(!err && kcore_vmcoreinfo_count(vi) == 0, "empty text");
	kcore_vmcoreinfo_destroy(vi);
	return tap_done();
}
