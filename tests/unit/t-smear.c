// SPDX-License-Identifier: MIT
/*
 * The smear check and the time map (issue 51) on a source that changes
 * between the dump's read and the check's: a file core rewritten at three
 * known pages when the dump enters the check's phase.  The check must
 * find exactly those pages (two of them adjacent: one run), in their
 * class, at their addresses; sample a fraction of the blocks; say the
 * source is not live; and the time map must cover the segment with cells
 * of the grain.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kcoredump/kcore.h"
#include "kcoredump/dump.h"
#include "pattern.h"
#include "elfcore.h"
#include "tap.h"

#define DATA_OFF 0x1000ull
#define SEG_SIZE (8ull << 20)
#define VADDR	 0x7f0000000000ull
#define CHANGE1	 (3ull << 20)
#define CHANGE2	 ((5ull << 20) + 0x2000)

static char core[256];
static bool change_now;

static void make_core(const char *path)
{
	static unsigned char hdr[DATA_OFF];
	Elf64_Phdr *ph = kc_elfcore_header(hdr, 2);
	unsigned char *buf = malloc(SEG_SIZE);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_flags = PF_R | PF_W,
			      .p_offset = DATA_OFF,
			      .p_vaddr = VADDR,
			      .p_filesz = SEG_SIZE,
			      .p_memsz = SEG_SIZE,
			      .p_align = 4096 };
	kc_pattern_fill(buf, VADDR, SEG_SIZE, 5);
	if (!buf || fd < 0 || write(fd, hdr, sizeof(hdr)) != sizeof(hdr) ||
	    write(fd, buf, SEG_SIZE) != (ssize_t)SEG_SIZE)
		tap_skip_all("cannot write the test core");
	close(fd);
	free(buf);
}

/* The source changes once the read is over: three pages (two of them
 * adjacent), a byte each. */
static void change_on_check(void *arg, const struct kcore_dump_stats *st)
{
	static const unsigned char x = 0xa5;
	int fd;

	(void)arg;
	if (!change_now || !st->phase ||
	    strcmp(st->phase, "checking the smear") != 0)
		return;
	change_now = false;
	fd = open(core, O_WRONLY);
	if (fd < 0 || pwrite(fd, &x, 1, DATA_OFF + CHANGE1 + 100) != 1 ||
	    pwrite(fd, &x, 1, DATA_OFF + CHANGE1 + 4096) != 1 ||
	    pwrite(fd, &x, 1, DATA_OFF + CHANGE2 + 4095) != 1)
		tap_skip_all("cannot change the test core");
	close(fd);
}

static struct kcore_error *run(const char *out, double fraction, bool change,
			       unsigned threads, struct kcore_dump_result *res)
{
	struct kcore_selection sel = { 0 };
	struct kcore_dump_opts opts = { .output = out,
					.force = true,
					.threads = threads,
					.block_size = 1u << 20,
					.smear_check = fraction,
					.progress = change_on_check };
	struct kcore_source *src;
	struct kcore_plan *plan;
	struct kcore_error *err;

	make_core(core);
	change_now = change;
	err = kcore_source_open(core, NULL, &src);
	if (err)
		return err;
	err = kcore_plan_create(src, &sel, &plan);
	if (!err) {
		err = kcore_dump(src, plan, &opts, res);
		kcore_plan_destroy(plan);
	}
	kcore_source_destroy(src);
	return err;
}

int main(void)
{
	char dir[] = "/tmp/t-smear-XXXXXX", out[256];
	struct kcore_dump_result res;
	struct kcore_error *err;
	const struct kcore_smear *sm = &res.smear;
	int cls;

	if (!mkdtemp(dir))
		tap_skip_all("no temp dir");
	snprintf(core, sizeof(core), "%s/core", dir);
	snprintf(out, sizeof(out), "%s/out.elf", dir);

	err = run(out, 1, true, 2, &res);
	ok(!err, "a dump with --smear-check");
	ok(sm->checked && !sm->live && sm->fraction == 1,
	   "checked, and the file is not live");
	ok(sm->all.pages == SEG_SIZE / 4096 && sm->bytes_read == SEG_SIZE,
	   "every page read again once (%llu pages, %llu bytes)",
	   (unsigned long long)sm->all.pages,
	   (unsigned long long)sm->bytes_read);
	ok(sm->all.changed == 3 && sm->nchanges == 2 && sm->changes_listed == 2,
	   "the three changed pages are found (%llu, %zu runs)",
	   (unsigned long long)sm->all.changed, sm->nchanges);
	ok(sm->nchanges == 2 && sm->changes[0].vaddr == VADDR + CHANGE1 &&
		   sm->changes[0].length == 8192 &&
		   sm->changes[1].vaddr == VADDR + CHANGE2 &&
		   sm->changes[1].offset == CHANGE2 &&
		   sm->changes[1].segment == 0,
	   "at their addresses");
	for (cls = 0; cls <= KCORE_CLASS_OTHER && !sm->by_class[cls].pages;
	     cls++)
		;
	ok(cls <= KCORE_CLASS_OTHER && sm->by_class[cls].changed == 3 &&
		   sm->by_class[cls].pages == sm->all.pages,
	   "counted in the segment's class (%s)",
	   cls <= KCORE_CLASS_OTHER ? kcore_segment_class_name(cls) : "-");
	ok(sm->by_gap[0].pages == sm->all.pages && sm->by_gap[0].changed == 3,
	   "and in the first gap (under a second)");
	ok(sm->seconds >= 0 && sm->pages_unreadable == 0,
	   "its own phase's time, nothing unreadable");
	ok(res.nread_times == 2 && res.read_time_grain == (4u << 20) &&
		   res.read_times[0].offset == 0 &&
		   res.read_times[1].offset == (4u << 20) &&
		   res.read_times[0].start_ns <= res.read_times[0].end_ns &&
		   res.read_times[0].end_ns <= res.read_times[1].end_ns,
	   "the time map: two cells of 4 MiB, in read order");
	kcore_dump_result_deinit(&res);

	err = run(out, 1, false, 1, &res);
	ok(!err && sm->checked && sm->all.changed == 0 &&
		   sm->all.pages == SEG_SIZE / 4096 && sm->nchanges == 0,
	   "no change: nothing changed (one thread)");
	kcore_dump_result_deinit(&res);

	/* 1 MiB blocks 1, 3, 5 and 7 are sampled: both changes with them. */
	err = run(out, 0.5, true, 2, &res);
	ok(!err && sm->fraction == 0.5 &&
		   sm->all.pages == SEG_SIZE / 4096 / 2 &&
		   sm->bytes_read == SEG_SIZE / 2,
	   "--smear-check=0.5 reads half the blocks again (%llu pages)",
	   (unsigned long long)sm->all.pages);
	ok(sm->all.changed == 3, "and finds the changes in them");
	kcore_dump_result_deinit(&res);

	err = run(out, 0, true, 2, &res);
	ok(!err && !sm->checked && sm->all.pages == 0 && res.nread_times == 2,
	   "no --smear-check: no check, the time map still");
	kcore_dump_result_deinit(&res);

	unlink(core);
	unlink(out);
	rmdir(dir);
	return tap_done();
}
