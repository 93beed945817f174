// SPDX-License-Identifier: MIT
/*
 * Source opening paths that fixtures cannot reach: the VMCOREINFO fallback
 * of kernels before 4.19 (no note in kcore; /sys/kernel/vmcoreinfo gives
 * its physical address), reads across p_filesz, and unmapped addresses.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfcore.h"
#include "kcoredump/kcore.h"
#include "source-impl.h"
#include "tap.h"

#define PAGE_OFFSET 0xffff888000000000ull
#define RAM_PADDR   0x100000ull
#define RAM_SIZE    0x4000ull
#define NOTE_PADDR  (RAM_PADDR + 0x1800)

static const char vmcoreinfo[] = "OSRELEASE=4.14.0-old\nPAGESIZE=4096\n"
				 "SYMBOL(swapper_pg_dir)=ffffffff82a0a000\n";

/* An old-style kcore: an empty PT_NOTE and one RAM PT_LOAD whose memory
 * holds a VMCOREINFO ELF note at NOTE_PADDR; p_memsz > p_filesz. */
static size_t build(unsigned char *img, size_t *note_len)
{
	Elf64_Phdr *ph = kc_elfcore_header(img, 2);
	size_t data = 0x1000;

	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_flags = PF_R | PF_W | PF_X,
			      .p_offset = data,
			      .p_vaddr = PAGE_OFFSET + RAM_PADDR,
			      .p_paddr = RAM_PADDR,
			      .p_filesz = RAM_SIZE / 2,
			      .p_memsz = RAM_SIZE,
			      .p_align = 4096 };
	*note_len = kc_elfcore_vmcoreinfo(img + data + (NOTE_PADDR - RAM_PADDR),
					  vmcoreinfo, sizeof(vmcoreinfo) - 1);
	memset(img + data, 0xab, 16);
	return data + RAM_SIZE / 2;
}

int main(void)
{
	char dir[] = "/tmp/t-source-XXXXXX", path[256], sys[256];
	static unsigned char img[0x4000];
	struct kcore_open_opts opts = { .force_live = true };
	const struct kcore_source_info *in;
	struct kcore_source *src;
	struct kcore_error *err;
	unsigned char buf[64];
	size_t len, note_len;
	FILE *f;
	int fd;

	if (!mkdtemp(dir))
		tap_skip_all("no temp dir");
	len = build(img, &note_len);
	snprintf(path, sizeof(path), "%s/kcore", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ok(fd >= 0 && write(fd, img, len) == (ssize_t)len, "write image");
	close(fd);
	snprintf(sys, sizeof(sys), "%s/sys", dir);
	mkdir(sys, 0700);
	snprintf(sys, sizeof(sys), "%s/sys/kernel", dir);
	mkdir(sys, 0700);
	snprintf(sys, sizeof(sys), "%s/sys/kernel/vmcoreinfo", dir);
	f = fopen(sys, "w");
	ok(f != NULL, "fake /sys/kernel/vmcoreinfo");
	fprintf(f, "%llx %zx\n", (unsigned long long)NOTE_PADDR, note_len);
	fclose(f);

	opts.sysroot = dir;
	err = kcore_source_open(path, &opts, &src);
	ok(!err, "open as a live kcore without a VMCOREINFO note");
	if (err)
		return tap_done();
	in = kcore_source_info(src);
	is_str(in->vmcoreinfo_origin, "sysfs",
	       "VMCOREINFO found through /sys/kernel/vmcoreinfo");
	is_str(in->kernel_release, "4.14.0-old", "release from it");
	ok(in->kind == KCORE_SOURCE_LIVE_KCORE, "kind is live kcore");
	ok(kcore_source_segment(src, 1)->cls == KCORE_CLASS_RAM,
	   "the direct-map segment is RAM");
	/* What people read of the format, from the reader's table. */
	is_str(kcore_source_format(src), "file", "format: file");
	is_str(kcore_source_format_title(src), "ELF", "format title: ELF");
	ok(kcore_source_is_elf(src), "an ELF file is the image itself");
	ok(!kcore_source_format_no_digests(src),
	   "an ELF file has a place for digests");

	err = kcore_source_read_paddr(src, RAM_PADDR, buf, 16);
	ok(!err && buf[0] == 0xab && buf[15] == 0xab, "read by physical "
						      "address");
	err = kcore_source_read_vaddr(
		src, PAGE_OFFSET + RAM_PADDR + RAM_SIZE / 2 - 8, buf, 16);
	ok(!err && buf[8] == 0 && buf[15] == 0,
	   "bytes past p_filesz read as zeros");
	err = kcore_source_read_vaddr(src, 0x1000, buf, 8);
	ok(err && err->code == KCORE_ERR_INVALID,
	   "an unmapped address is an error, not zeros");
	kcore_error_destroy(err);
	kcore_source_destroy(src);

	/* Without the sysfs file the source still opens, without it. */
	unlink(sys);
	err = kcore_source_open(path, &opts, &src);
	ok(!err && !kcore_source_info(src)->vmcoreinfo_origin,
	   "no sysfs file: no VMCOREINFO, no error");
	if (!err)
		kcore_source_destroy(src);

	/* A sysfs file pointing at garbage is reported. */
	f = fopen(sys, "w");
	fprintf(f, "%llx 40\n", (unsigned long long)RAM_PADDR);
	fclose(f);
	err = kcore_source_open(path, &opts, &src);
	ok(err && err->code == KCORE_ERR_FORMAT,
	   "a VMCOREINFO address without the note is a format error");
	kcore_error_destroy(err);
	unlink(sys);

	/* Lockdown's refusal keeps the errno (JSON errors show it, issue
	 * 28 item 10). */
	snprintf(sys, sizeof(sys), "%s/sys/kernel/security", dir);
	mkdir(sys, 0700);
	snprintf(sys, sizeof(sys), "%s/sys/kernel/security/lockdown", dir);
	f = fopen(sys, "w");
	fprintf(f, "none integrity [confidentiality]\n");
	fclose(f);
	err = kcore_explain_open_error("/proc/kcore", EPERM, true, dir);
	ok(err && err->code == KCORE_ERR_ACCESS && err->errnum == EPERM &&
		   strstr(err->message, "lockdown"),
	   "lockdown: an access error with errno EPERM");
	kcore_error_destroy(err);
	unlink(sys);
	snprintf(sys, sizeof(sys), "%s/sys/kernel/security", dir);
	rmdir(sys);
	unlink(path);
	snprintf(sys, sizeof(sys), "%s/sys/kernel", dir);
	rmdir(sys);
	snprintf(sys, sizeof(sys), "%s/sys", dir);
	rmdir(sys);
	rmdir(dir);
	return tap_done();
}
