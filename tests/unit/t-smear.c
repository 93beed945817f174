// SPDX-License-Identifier: MIT
/*
 * The smear check and the time map (issue 51) on a source that changes
 * between the dump's read and the check's: a file core rewritten at three
 * known pages when the dump enters the check's phase.  The check must
 * find exactly those pages (two of them adjacent: one run), in their
 * class, at their addresses; sample a fraction of the blocks; say the
 * source is not live; and the time map must cover the segment with cells
 * of the grain.
 *
 * verify --live (kcore_smear_live()) on a dump whose note is made to
 * carry this boot's ID, against the core changed at three pages after
 * the dump: exactly those, at their addresses; a dump of another boot is
 * refused.
 *
 * The note's room for the time map follows the data: a core of many
 * small segments, most of them holes, has room for the cells with data
 * only; one whose every segment holds data, for at most
 * KCORE_READ_TIME_NOTE_CELLS of them, the rest counted as omitted.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kcoredump/kcore.h"
#include "kcoredump/dump.h"
#include "kcoredump/notes.h"
#include "pattern.h"
#include "elfcore.h"
#include "tap.h"

#define DATA_OFF 0x1000ull
#define SEG_SIZE (8ull << 20)
#define VADDR	 0x7f0000000000ull
#define CHANGE1	 (3ull << 20)
#define CHANGE2	 ((5ull << 20) + 0x2000)
#define HOLE	 (6ull << 20)

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

#define MANY	   20000u
#define MANY_HDR   ((64 + (MANY + 1) * 56 + 4095) / 4096 * 4096)
#define MANY_EVERY 200u

/* MANY segments of a page each; with sparse, only every MANY_EVERY-th
 * holds data, the others are holes of the file.  Whether the file system
 * keeps them as holes. */
static bool make_many(const char *path, bool sparse)
{
	unsigned char *hdr = calloc(1, MANY_HDR), page[4096];
	Elf64_Phdr *ph = kc_elfcore_header(hdr, MANY + 1);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	bool holes;

	if (!hdr || fd < 0)
		tap_skip_all("cannot write the test core");
	for (unsigned i = 0; i < MANY; i++)
		ph[i + 1] = (Elf64_Phdr){ .p_type = PT_LOAD,
					  .p_flags = PF_R | PF_W,
					  .p_offset = MANY_HDR + i * 4096ull,
					  .p_vaddr = VADDR + i * 8192ull,
					  .p_filesz = 4096,
					  .p_memsz = 4096,
					  .p_align = 4096 };
	if (write(fd, hdr, MANY_HDR) != (ssize_t)MANY_HDR ||
	    ftruncate(fd, (off_t)(MANY_HDR + MANY * 4096ull)))
		tap_skip_all("cannot write the test core");
	for (unsigned i = 0; i < MANY; i++) {
		if (sparse && i % MANY_EVERY)
			continue;
		kc_pattern_fill(page, VADDR + i * 8192ull, sizeof(page), 5);
		if (pwrite(fd, page, sizeof(page),
			   (off_t)(MANY_HDR + i * 4096ull)) != sizeof(page))
			tap_skip_all("cannot write the test core");
	}
	holes = lseek(fd, (off_t)MANY_HDR + 4096, SEEK_DATA) ==
		(off_t)(MANY_HDR + MANY_EVERY * 4096ull);
	close(fd);
	free(hdr);
	return holes;
}

/* The dump's metadata note: its size, and read_time_omitted (0: none). */
static bool note_of(const char *path, size_t *size, uint64_t *omitted)
{
	struct kcore_source *s;
	bool found = false;

	if (kcore_source_open(path, NULL, &s))
		return false;
	for (size_t i = 0; i < kcore_source_nnotes(s) && !found; i++) {
		const struct kcore_note *n = kcore_source_note(s, i);
		struct kcore_metadata md;
		const char *v;

		if (strcmp(n->name, "KCOREDUMP") != 0 ||
		    kcore_note_metadata(s, n, &md))
			continue;
		found = true;
		*size = n->descsz;
		v = kcore_metadata_get(&md, "read_time_omitted");
		*omitted = v ? strtoull(v, NULL, 10) : 0;
		kcore_metadata_deinit(&md);
	}
	kcore_source_destroy(s);
	return found;
}

static void many_segments(const char *out)
{
	struct kcore_selection sel = { 0 };
	struct kcore_dump_opts opts = { .output = out,
					.force = true,
					.no_hash = true };
	struct kcore_dump_result res;
	struct kcore_source *src;
	struct kcore_plan *plan;
	struct kcore_error *err;
	uint64_t omitted = 0;
	size_t size = 0;

	for (int sparse = 1; sparse >= 0; sparse--) {
		bool holes = make_many(core, sparse);

		err = kcore_source_open(core, NULL, &src);
		if (!err) {
			err = kcore_plan_create(src, &sel, &plan);
			if (!err) {
				err = kcore_dump(src, plan, &opts, &res);
				kcore_plan_destroy(plan);
			}
			kcore_source_destroy(src);
		}
		ok(!err, "%u segments%s: dumped", MANY,
		   sparse ? ", most of them holes" : "");
		if (err) {
			fprintf(stderr, "# %s\n", err->message);
			kcore_error_destroy(err);
			continue;
		}
		ok(note_of(out, &size, &omitted), "its note reads back");
		if (sparse && !holes) {
			printf("# the file system keeps no holes: the "
			       "room for them is not checked\n");
		} else if (sparse) {
			ok(res.read_time_cells == MANY / MANY_EVERY &&
				   res.nread_times == MANY / MANY_EVERY &&
				   omitted == 0,
			   "room for the %u cells with data only (%zu; "
			   "read %zu)",
			   MANY / MANY_EVERY, res.read_time_cells,
			   res.nread_times);
			/* The segment lines are most of it: 160 bytes a
			 * cell of every segment was 3.2 MB more. */
			ok(size < 200u * MANY,
			   "the note is %zu bytes, under %u", size,
			   200u * MANY);
		} else {
			ok(res.read_time_cells == KCORE_READ_TIME_NOTE_CELLS &&
				   res.nread_times == MANY &&
				   omitted == MANY - KCORE_READ_TIME_NOTE_CELLS,
			   "every segment with data: room for %u cells, the "
			   "%llu others counted as omitted",
			   KCORE_READ_TIME_NOTE_CELLS,
			   (unsigned long long)omitted);
			ok(size < 200u * MANY +
					   160u * KCORE_READ_TIME_NOTE_CELLS,
			   "the note is %zu bytes", size);
		}
		kcore_dump_result_deinit(&res);
	}
}

/* The dump's "notes=" line (38 characters of text), or the boot_id= line
 * made of it, made a boot_id= line of id, of the same length: in the
 * note and in the trailer that has the final metadata. */
static bool set_boot_id(const char *path, const char *id)
{
	int fd = open(path, O_RDWR);
	off_t size = fd < 0 ? 0 : lseek(fd, 0, SEEK_END);
	char *file = size > 0 ? malloc((size_t)size) : NULL, line[64];
	size_t done = 0;

	snprintf(line, sizeof(line), "\nboot_id=%.36s\n", id);
	if (file && pread(fd, file, (size_t)size, 0) == size)
		for (const char *key = "\nnotes="; key;
		     key = key[1] == 'n' ? "\nboot_id=" : NULL)
			for (char *at = file;
			     (at = memmem(at, (size_t)(file + size - at), key,
					  strlen(key)));
			     at++)
				done += pwrite(fd, line, 46, at - file) == 46;
	free(file);
	if (fd >= 0)
		close(fd);
	return strlen(line) == 46 && done > 0;
}

static void verify_live(const char *out)
{
	struct kcore_selection sel = { 0 };
	struct kcore_dump_opts opts = {
		.output = out,
		.force = true,
		.notes = "01234567890123456789012345678901234567",
	};
	struct kcore_dump_result res;
	struct kcore_smear sm;
	struct kcore_source *src;
	struct kcore_plan *plan;
	struct kcore_error *err;
	char boot[64] = "", now[64];
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	bool have = f && fgets(boot, sizeof(boot), f);

	if (f)
		fclose(f);
	boot[strcspn(boot, "\n")] = '\0';
	if (!have || strlen(boot) != 36) {
		printf("# no boot ID here: verify --live is not checked\n");
		return;
	}
	make_core(core);
	/* A zero page: a hole of the dump, which changes too. */
	static const unsigned char zero[4096], x = 0x5a;
	int fd = open(core, O_WRONLY);

	if (fd < 0 || pwrite(fd, zero, sizeof(zero), DATA_OFF + HOLE) !=
			      (ssize_t)sizeof(zero))
		tap_skip_all("cannot change the test core");
	close(fd);
	err = kcore_source_open(core, NULL, &src);
	if (!err) {
		err = kcore_plan_create(src, &sel, &plan);
		if (!err) {
			err = kcore_dump(src, plan, &opts, &res);
			kcore_dump_result_deinit(&res);
			kcore_plan_destroy(plan);
		}
		kcore_source_destroy(src);
	}
	ok(!err && set_boot_id(out, "00000000-0000-0000-0000-000000000000"),
	   "verify --live: a dump, its note made another boot's");
	kcore_error_destroy(err);
	err = kcore_smear_live(out, core, NULL, &sm, now);
	ok(err && err->code == KCORE_ERR_UNSUPPORTED &&
		   strstr(err->message, "another boot"),
	   "another boot's dump is refused (%s)",
	   err ? err->message : "accepted");
	kcore_error_destroy(err);
	if (!err)
		free(sm.changes);
	/* The source changes at three pages after the dump, and its zero
	 * page. */
	change_now = true;
	change_on_check(NULL, &(struct kcore_dump_stats){
				      .phase = "checking the smear" });
	fd = open(core, O_WRONLY);
	if (fd < 0 || pwrite(fd, &x, 1, DATA_OFF + HOLE + 17) != 1)
		tap_skip_all("cannot change the test core");
	close(fd);
	ok(set_boot_id(out, boot), "its note made this boot's");
	err = kcore_smear_live(out, core, NULL, &sm, now);
	ok(!err && sm.checked && !sm.live && !strcmp(now, boot),
	   "this boot's dump is compared (%s)", err ? err->message : "");
	ok(!err && sm.all.pages == SEG_SIZE / 4096 && sm.all.changed == 4 &&
		   sm.nchanges == 3 && sm.changes[0].vaddr == VADDR + CHANGE1 &&
		   sm.changes[0].length == 8192 &&
		   sm.changes[1].vaddr == VADDR + CHANGE2 &&
		   sm.changes[2].vaddr == VADDR + HOLE,
	   "every page compared, the four changed ones found, the dump's "
	   "hole among them (%llu of %llu)",
	   (unsigned long long)sm.all.changed,
	   (unsigned long long)sm.all.pages);
	kcore_error_destroy(err);
	if (!err)
		free(sm.changes);
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

	verify_live(out);
	many_segments(out);

	unlink(core);
	unlink(out);
	rmdir(dir);
	return tap_done();
}
