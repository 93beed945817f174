// SPDX-License-Identifier: MIT
/*
 * A dump of live memory is refused on a file system this machine keeps in
 * RAM (issue 28 item 1): the decision from statfs f_type and the block
 * device, and kcore_dump() of a source taken for the live kernel's kcore
 * (force_live: no /proc/kcore needed) into a tmpfs directory: refused
 * without --allow-ram-output, nothing created; allowed with it; a
 * non-live source is not refused.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "elfcore.h"
#include "kcoredump/dump.h"
#include "kcoredump/kcore.h"
#include "kcoredump/output.h"
#include "tap.h"

#define PAGE_OFFSET 0xffff888000000000ull

static const char vmcoreinfo[] = "OSRELEASE=6.12.0-test\nPAGESIZE=4096\n";

static int write_core(const char *path)
{
	static unsigned char img[0x5000];
	Elf64_Phdr *ph = kc_elfcore_header(img, 2);
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
	memset(img + 0x1000, 0x5a, 0x4000);
	if (fd < 0)
		return -1;
	r = write(fd, img, sizeof(img)) == (ssize_t)sizeof(img) ? 0 : -1;
	close(fd);
	return r;
}

/* A tmpfs directory: /dev/shm, or one of our own in a private mount
 * namespace (root), which goes away with this process. */
static bool tmpfs_dir(char *dir, size_t len)
{
	struct statfs s;

	if (statfs("/dev/shm", &s) == 0 && s.f_type == 0x01021994) {
		snprintf(dir, len, "/dev/shm/t-ram-output-XXXXXX");
		return mkdtemp(dir) != NULL;
	}
	snprintf(dir, len, "/tmp/t-ram-output-mnt-XXXXXX");
	if (!mkdtemp(dir))
		return false;
	if (unshare(CLONE_NEWNS) == 0 &&
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
	    mount("tmpfs", dir, "tmpfs", 0, "size=16m") == 0)
		return true;
	rmdir(dir);
	return false;
}

static struct kcore_error *dump_to(const char *core, bool live, const char *out,
				   bool allow)
{
	struct kcore_open_opts oo = { .force_live = live };
	struct kcore_dump_opts o = { .output = out, .allow_ram_output = allow };
	struct kcore_selection sel = { 0 };
	struct kcore_source *src;
	struct kcore_plan *plan;
	struct kcore_dump_result res;
	struct kcore_error *err = kcore_source_open(core, &oo, &src);

	if (err)
		return err;
	err = kcore_plan_create(src, &sel, &plan);
	if (!err) {
		err = kcore_dump(src, plan, &o, &res);
		if (!err)
			kcore_dump_result_deinit(&res);
		kcore_plan_destroy(plan);
	}
	kcore_source_destroy(src);
	return err;
}

int main(void)
{
	char tdir[] = "/tmp/t-ram-output-XXXXXX", core[128], dir[128], out[192];
	struct kcore_error *err;
	struct stat st;

	is_str(kcore_ram_medium_from(0x01021994, NULL), "tmpfs",
	       "statfs TMPFS_MAGIC: tmpfs");
	is_str(kcore_ram_medium_from(0x858458f6, NULL), "ramfs",
	       "statfs RAMFS_MAGIC: ramfs");
	is_str(kcore_ram_medium_from(0xef53, "zram0"), "zram",
	       "ext4 on zram0: zram");
	is_str(kcore_ram_medium_from(0x9123683e, "ram0"), "a RAM disk (brd)",
	       "btrfs on ram0: a RAM disk");
	ok(!kcore_ram_medium_from(0xef53, "sda"), "ext4 on sda: not RAM");
	ok(!kcore_ram_medium_from(0xef53, "ramdisk-like"),
	   "a name merely starting with 'ram': not RAM");
	/* Outputs that store nothing in the file system they sit on: /dev
	 * is a devtmpfs, but /dev/null and a pipe are not RAM (the guest's
	 * bench writes its live dumps to /dev/null). */
	ok(!kcore_output_ram_medium("/dev/null", -1, NULL),
	   "/dev/null (a character device on devtmpfs): not RAM");
	{
		int pfd[2];

		if (pipe(pfd) == 0) {
			ok(!kcore_output_ram_medium("-", pfd[1], NULL),
			   "standard output a pipe: not RAM");
			close(pfd[0]);
			close(pfd[1]);
		}
	}

	if (!mkdtemp(tdir))
		tap_skip_all("no temporary directory");
	snprintf(core, sizeof(core), "%s/kcore", tdir);
	ok(write_core(core) == 0, "test core written");
	if (!tmpfs_dir(dir, sizeof(dir))) {
		printf("# no tmpfs: /dev/shm is not one and no private "
		       "mount\n");
		unlink(core);
		rmdir(tdir);
		return tap_done();
	}
	snprintf(out, sizeof(out), "%s/dump.elf", dir);
	is_str(kcore_output_ram_medium(out, -1, NULL), "tmpfs",
	       "an output in the tmpfs directory: tmpfs");

	err = dump_to(core, true, out, false);
	ok(err && err->code == KCORE_ERR_INVALID &&
		   strstr(err->message, "is on tmpfs, in this machine's RAM") &&
		   strstr(err->message, "--allow-ram-output"),
	   "live source to tmpfs: refused (%s)",
	   err ? err->message : "no error");
	kcore_error_destroy(err);
	ok(stat(out, &st) != 0 && errno == ENOENT,
	   "nothing created when refused");

	err = dump_to(core, true, out, true);
	ok(!err, "live source to tmpfs with allow_ram_output: written (%s)",
	   err ? err->message : "ok");
	kcore_error_destroy(err);
	ok(stat(out, &st) == 0, "the dump exists");
	unlink(out);

	err = dump_to(core, false, out, false);
	ok(!err, "a core file (not live) to tmpfs: written (%s)",
	   err ? err->message : "ok");
	kcore_error_destroy(err);
	unlink(out);

	snprintf(out, sizeof(out), "%s/dump.elf", tdir);
	if (!kcore_output_ram_medium(out, -1, NULL)) {
		err = dump_to(core, true, out, false);
		ok(!err, "live source to a disk directory: written (%s)",
		   err ? err->message : "ok");
		kcore_error_destroy(err);
		unlink(out);
	}
	rmdir(dir);
	unlink(core);
	rmdir(tdir);
	return tap_done();
}
