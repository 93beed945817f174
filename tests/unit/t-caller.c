// SPDX-License-Identifier: MIT
/*
 * --caller SUBSTR on a live kernel (issue 46 item 4): a source taken for
 * the live kernel's kcore (force_live) with a vmalloc segment, and a
 * proc/vmallocinfo and proc/modules under a sysroot.  A caller that no
 * area has (xfs, not loaded) is said as such, with the callers and the
 * modules there are, not as "the selection matches no memory"; callers
 * and module text that are there select their areas; a caller that is
 * there but outside the --vmalloc-range window still gets the general
 * message.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfcore.h"
#include "kcoredump/dump.h"
#include "kcoredump/kcore.h"
#include "tap.h"

#define PAGE_OFFSET   0xffff888000000000ull
#define VMALLOC_START 0xffffc90000000000ull
#define VMALLOC_SIZE  0x10000ull

static const char vmcoreinfo[] = "OSRELEASE=6.12.0-test\nPAGESIZE=4096\n";

static int write_core(const char *path)
{
	static unsigned char img[0x1000 + 0x4000 + VMALLOC_SIZE];
	Elf64_Phdr *ph = kc_elfcore_header(img, 3);
	size_t nlen = kc_elfcore_vmcoreinfo(img + 0x200, vmcoreinfo,
					    sizeof(vmcoreinfo) - 1);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int r;

	ph[0].p_filesz = nlen;
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_flags = PF_R | PF_W | PF_X,
			      .p_offset = 0x1000,
			      .p_vaddr = PAGE_OFFSET + 0x100000,
			      .p_paddr = 0x100000,
			      .p_filesz = 0x4000,
			      .p_memsz = 0x4000,
			      .p_align = 4096 };
	/* kcore's vmalloc segment: no physical address. */
	ph[2] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_flags = PF_R | PF_W | PF_X,
			      .p_offset = 0x5000,
			      .p_vaddr = VMALLOC_START,
			      .p_paddr = UINT64_MAX,
			      .p_filesz = VMALLOC_SIZE,
			      .p_memsz = VMALLOC_SIZE,
			      .p_align = 4096 };
	memset(img + 0x1000, 0x5a, sizeof(img) - 0x1000);
	if (fd < 0)
		return -1;
	r = write(fd, img, sizeof(img)) == (ssize_t)sizeof(img) ? 0 : -1;
	close(fd);
	return r;
}

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* The plan of --vmalloc-range[=window] --caller caller: its error, or
 * NULL with *areas the areas it holds. */
static struct kcore_error *plan(const char *core, const char *root,
				const char *caller, uint64_t lo, uint64_t hi,
				size_t *areas)
{
	struct kcore_open_opts oo = { .force_live = true, .sysroot = root };
	struct kcore_selection sel = { .vmalloc = true,
				       .vmalloc_window = { lo, hi },
				       .caller = caller,
				       .sysroot = root };
	struct kcore_source *src;
	struct kcore_plan *p;
	struct kcore_error *err = kcore_source_open(core, &oo, &src);

	*areas = 0;
	if (err)
		return err;
	err = kcore_plan_create(src, &sel, &p);
	if (!err) {
		*areas = p->vmalloc_areas;
		kcore_plan_destroy(p);
	}
	kcore_source_destroy(src);
	return err;
}

int main(void)
{
	char dir[] = "/tmp/t-caller-XXXXXX", core[256], proc[128];
	struct kcore_error *err;
	const char *m;
	size_t n;

	if (!mkdtemp(dir))
		tap_skip_all("no temporary directory");
	snprintf(core, sizeof(core), "%s/kcore", dir);
	snprintf(proc, sizeof(proc), "%s/proc", dir);
	ok(write_core(core) == 0 && mkdir(proc, 0700) == 0,
	   "test core and sysroot written");
	ok(write_file(proc, "vmallocinfo",
		      "0xffffc90000000000-0xffffc90000002000    8192 "
		      "alloc_large_system_hash+0x16b/0x260 pages=1 vmalloc "
		      "N0=1\n"
		      "0xffffc90000002000-0xffffc90000004000    8192 "
		      "bpf_prog_alloc_no_stats+0x4a/0x2a0 pages=1 vmalloc\n"
		      "0xffffc90000004000-0xffffc90000006000    8192 "
		      "bpf_prog_alloc_no_stats+0x4a/0x2a0 pages=1 vmalloc\n"
		      "0xffffc90000008000-0xffffc9000000a000    8192 "
		      "execmem_alloc+0xdd/0x1c0 pages=1 vmalloc\n") == 0 &&
		   write_file(proc, "modules",
			      "ext4 1003520 1 - Live 0xffffc90000008000\n") ==
			   0,
	   "proc/vmallocinfo and proc/modules written");

	err = plan(core, dir, "xfs", 0, 0, &n);
	m = err ? err->message : "";
	ok(err != NULL, "--caller xfs: an error (%s)", m);
	ok(strstr(m, "no vmalloc area's caller or module text matches "
		     "'xfs'") != NULL,
	   "--caller xfs: says no area's caller matches 'xfs'");
	ok(strstr(m, "the 4 areas' callers include bpf_prog_alloc_no_stats, "
		     "alloc_large_system_hash, execmem_alloc") != NULL,
	   "--caller xfs: names the callers there are, the most frequent "
	   "first, without their offsets");
	ok(strstr(m, "module text: ext4") != NULL,
	   "--caller xfs: names the modules");
	ok(!strstr(m, "matches no memory"),
	   "--caller xfs: not 'the selection matches no memory'");
	ok(err && err->path && strstr(err->path, "/proc/vmallocinfo"),
	   "--caller xfs: about proc/vmallocinfo (%s)",
	   err && err->path ? err->path : "no path");
	kcore_error_destroy(err);

	err = plan(core, dir, "bpf_prog", 0, 0, &n);
	ok(!err && n == 2, "--caller bpf_prog: its 2 areas (%zu, %s)", n,
	   err ? err->message : "ok");
	kcore_error_destroy(err);

	err = plan(core, dir, "ext4", 0, 0, &n);
	ok(!err && n == 1,
	   "--caller ext4: the area of its module text (%zu, %s)", n,
	   err ? err->message : "ok");
	kcore_error_destroy(err);

	/* A caller that is there, but not in the window. */
	err = plan(core, dir, "bpf_prog", VMALLOC_START + 0x8000,
		   VMALLOC_START + 0xa000, &n);
	m = err ? err->message : "";
	ok(err && strstr(m, "the selection matches no memory"),
	   "--caller bpf_prog outside the window: the general message (%s)", m);
	kcore_error_destroy(err);

	unlink(core);
	snprintf(core, sizeof(core), "%s/vmallocinfo", proc);
	unlink(core);
	snprintf(core, sizeof(core), "%s/modules", proc);
	unlink(core);
	rmdir(proc);
	rmdir(dir);
	return tap_done();
}
