// SPDX-License-Identifier: MIT
/* VMCOREINFO parsing and typed look-ups; the machine its lines name. */
#include <elf.h>
#include <string.h>

#include "kcoredump/vmcoreinfo.h"
#include "read.h"
#include "tap.h"

static unsigned machine(const char *text)
{
	return kcore_vmcoreinfo_text_machine(text, strlen(text));
}

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

	/* detect.c: only lines one architecture publishes name it. */
	is_int(machine(text), EM_X86_64, "pgtable_l5_enabled: x86_64");
	is_int(machine("OSRELEASE=6.12\nSYMBOL(init_top_pgt)=ffffffff82a0a000"),
	       EM_X86_64, "init_top_pgt, last line without newline: x86_64");
	is_int(machine("OSRELEASE=6.12\nNUMBER(phys_base)=0\nKERNELOFFSET=0\n"),
	       EM_NONE, "phys_base alone (32-bit x86 has it too): unknown");
	is_int(machine("OSRELEASE=6.12\nNUMBER(VA_BITS)=48\n"
		       "NUMBER(kimage_voffset)=0xffff7fff80000000\n"),
	       EM_AARCH64, "kimage_voffset: aarch64");
	is_int(machine("NUMBER(TCR_EL1_T1SZ)=16\n"), EM_AARCH64,
	       "TCR_EL1_T1SZ: aarch64");
	is_int(machine("OSRELEASE=6.12\nNUMBER(VA_BITS)=39\n"
		       "NUMBER(phys_ram_base)=0x80000000\n"),
	       EM_NONE, "VA_BITS alone (riscv64 has it too): unknown");
	is_int(machine("XSYMBOL(init_top_pgt)=1\nA NUMBER(kimage_voffset)=1\n"),
	       EM_NONE, "only at the start of a line");
	is_int(machine("SYMBOL(init_top_pgt)"), EM_NONE,
	       "the key needs its '='");
	return tap_done();
}
