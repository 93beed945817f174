// SPDX-License-Identifier: MIT
/*
 * fuzz-source: libFuzzer target for everything libkcore does with an
 * untrusted ELF core: kcore_source_open() (ELF header, program headers,
 * PN_XNUM, notes, VMCOREINFO, segment classification), then every accessor
 * a reader uses afterwards: segments, note decoders, VMCOREINFO look-ups,
 * memory reads by virtual and physical address, hole counting.
 * kcore_source_modules() is left out: libdwfl is not ours to fuzz and is
 * slow.  The same bytes then go through the core handler as a core
 * stream (kcore_core_handle() into a scratch store).
 *
 * The input goes into a memfd that is opened again by its /proc/self/fd
 * path, so the library sees a regular file and takes its real code path
 * (fstat, pread, SEEK_DATA/SEEK_HOLE).
 *
 * Built with -DKCORE_FUZZ_REPLAY this file has its own main() that runs
 * the same function over files and directories given on the command line
 * (tests/fuzz/corpus in ctest "fuzz-corpus-replay"), so the corpus is
 * re-checked by every normal build, with or without clang.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kcoredump/corehandler.h"
#include "kcoredump/dump.h"
#include "kcoredump/kcore.h"
#include "kcoredump/view.h"

/* Bound the work per input: reads are at most this long ... */
#define MAX_READ (64u << 10)
/* ... and only this many segments are read and hole-counted. */
#define MAX_SEGMENTS 256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned char read_buf[MAX_READ];
/* Keeps the compiler from dropping the loads of what we look at. */
static volatile size_t sink;

static void consume_error(struct kcore_error *err)
{
	char *msg;

	if (!err)
		return;
	msg = kcore_error_describe(err);
	if (msg)
		sink += strlen(msg);
	free(msg);
	kcore_error_destroy(err);
}

static void touch_str(const char *s)
{
	if (s)
		sink += strlen(s);
}

static size_t min_size(uint64_t a, uint64_t b)
{
	return (size_t)(a < b ? a : b);
}

/* Reads at the start, across the p_filesz boundary and at the end. */
static void read_segment(struct kcore_source *src,
			 const struct kcore_segment *seg, bool physical)
{
	uint64_t base = physical ? seg->paddr : seg->vaddr;
	uint64_t memsz = seg->memsz;
	uint64_t at[3], len[3];

	if (!memsz)
		return;
	at[0] = base;
	len[0] = min_size(memsz, 4096);
	at[1] = base + (seg->filesz > 16 ? seg->filesz - 16 : 0);
	len[1] = min_size(memsz - (at[1] - base), 64);
	len[2] = min_size(memsz, MAX_READ);
	at[2] = base + memsz - len[2];
	for (unsigned i = 0; i < 3; i++) {
		if (!len[i])
			continue;
		consume_error(physical ? kcore_source_read_paddr(
						 src, at[i], read_buf, len[i])
				       : kcore_source_read_vaddr(
						 src, at[i], read_buf, len[i]));
	}
}

static void check_segments(struct kcore_source *src)
{
	size_t n = kcore_source_nsegments(src);

	for (size_t i = 0; i < n; i++) {
		const struct kcore_segment *seg = kcore_source_segment(src, i);
		uint64_t data, hole;

		touch_str(kcore_segment_class_name(seg->cls));
		touch_str(seg->label);
		if (i >= MAX_SEGMENTS || seg->type != PT_LOAD)
			continue;
		read_segment(src, seg, false);
		if (seg->has_paddr)
			read_segment(src, seg, true);
		if (seg->filesz)
			consume_error(
				kcore_source_count_holes(src, i, &data, &hole));
	}
	sink += kcore_source_segment(src, n) == NULL;
	/* Addresses no segment is likely to hold, and a wrapping range. */
	consume_error(kcore_source_read_vaddr(src, 0, read_buf, 16));
	consume_error(
		kcore_source_read_vaddr(src, UINT64_MAX - 7, read_buf, 16));
	consume_error(kcore_source_read_paddr(src, 0, read_buf, 16));
	consume_error(kcore_source_pread(src, read_buf, 64, 0));
	/* Kernel addresses VMCOREINFO names: a physical-only source (or an
	 * arm64 one) translates them through the input's page tables. */
	if (kcore_source_vmcoreinfo(src)) {
		static const char *const syms[] = { "SYMBOL(swapper_pg_dir)",
						    "SYMBOL(_stext)",
						    "SYMBOL(init_uts_ns)" };
		uint64_t v;

		for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
			if (kcore_vmcoreinfo_get_u64(
				    kcore_source_vmcoreinfo(src), syms[i], &v))
				consume_error(kcore_source_read_vaddr(
					src, v, read_buf, 16));
	}
}

static void check_prstatus(const struct kcore_source *src,
			   const struct kcore_note *note)
{
	struct kcore_prstatus st;
	struct kcore_error *err = kcore_note_prstatus(src, note, &st);

	if (err) {
		consume_error(err);
		return;
	}
	touch_str(kcore_signal_name(st.cursig));
	touch_str(kcore_signal_name(st.signo));
	for (unsigned r = 0; r < st.nregs; r++) {
		touch_str(st.reg_names[r]);
		sink += st.regs[r];
	}
}

static void check_prpsinfo(const struct kcore_source *src,
			   const struct kcore_note *note)
{
	struct kcore_prpsinfo ps;
	struct kcore_error *err = kcore_note_prpsinfo(src, note, &ps);

	if (err) {
		consume_error(err);
		return;
	}
	touch_str(ps.fname);
	touch_str(ps.psargs);
}

static void check_siginfo(const struct kcore_source *src,
			  const struct kcore_note *note)
{
	struct kcore_siginfo si;
	struct kcore_error *err = kcore_note_siginfo(src, note, &si);

	if (err) {
		consume_error(err);
		return;
	}
	touch_str(kcore_signal_name(si.signo));
	sink += si.addr + (uint64_t)si.pid + si.uid;
}

static void check_auxv(const struct kcore_source *src,
		       const struct kcore_note *note)
{
	struct kcore_auxv_entry *v;
	size_t count;
	struct kcore_error *err = kcore_note_auxv(src, note, &v, &count);

	if (err) {
		consume_error(err);
		return;
	}
	for (size_t i = 0; i < count; i++) {
		touch_str(kcore_auxv_name(v[i].type));
		sink += kcore_auxv_is_address(v[i].type) + v[i].value;
	}
	free(v);
}

static void check_file(const struct kcore_source *src,
		       const struct kcore_note *note)
{
	struct kcore_file_table t;
	struct kcore_error *err = kcore_note_file(src, note, &t);

	if (err) {
		consume_error(err);
		return;
	}
	for (size_t i = 0; i < t.count; i++) {
		touch_str(t.entries[i].name);
		sink += t.entries[i].start + t.entries[i].end +
			t.entries[i].offset;
	}
	free(t.entries);
}

/* Our metadata note's key=value lines (only a KCOREDUMP note of its
 * type decodes; the rest must be refused cleanly). */
static void check_metadata(const struct kcore_source *src,
			   const struct kcore_note *note)
{
	struct kcore_metadata m;
	struct kcore_error *err = kcore_note_metadata(src, note, &m);

	if (err) {
		consume_error(err);
		return;
	}
	if (m.nfields > KCORE_METADATA_MAX_FIELDS)
		abort();
	for (size_t i = 0; i < m.nfields; i++) {
		touch_str(m.fields[i].key);
		touch_str(m.fields[i].value);
	}
	touch_str(kcore_metadata_get(&m, "dump_sha256"));
	kcore_metadata_deinit(&m);
}

static void check_notes(struct kcore_source *src)
{
	size_t n = kcore_source_nnotes(src);

	for (size_t i = 0; i < n; i++) {
		const struct kcore_note *note = kcore_source_note(src, i);

		touch_str(note->name);
		touch_str(kcore_note_type_name(note->name, note->type));
		/* A descriptor may be anything: check every byte is there. */
		for (size_t b = 0; b < note->descsz; b++)
			sink += note->desc[b];
		/*
		 * Every decoder on every note, whatever its type: each must
		 * check the descriptor size itself, so a note of the wrong
		 * type or size is fair input.
		 */
		check_prstatus(src, note);
		check_prpsinfo(src, note);
		check_siginfo(src, note);
		check_auxv(src, note);
		check_file(src, note);
		check_metadata(src, note);
	}
	sink += kcore_source_note(src, n) == NULL;
}

static void check_vmcoreinfo(const struct kcore_vmcoreinfo *vi)
{
	static const char *const keys[] = {
		"OSRELEASE",
		"PAGESIZE",
		"KERNELOFFSET",
		"CRASHTIME",
		"SYMBOL(_stext)",
		"SYMBOL(swapper_pg_dir)",
		"NUMBER(phys_base)",
		"NUMBER(page_offset_base)",
		"NUMBER(vmalloc_start)",
		"NUMBER(vmemmap_start)",
		"NUMBER(pgtable_l5_enabled)",
		"NUMBER(VA_BITS)",
		"SIZE(page)",
		"OFFSET(page.flags)",
		"LENGTH(mem_section)",
	};
	size_t n, len;
	uint64_t v;

	if (!vi)
		return;
	touch_str(kcore_vmcoreinfo_text(vi, &len));
	n = kcore_vmcoreinfo_count(vi);
	for (size_t i = 0; i < n; i++) {
		const struct kcore_vmcoreinfo_entry *e =
			kcore_vmcoreinfo_entry(vi, i);

		touch_str(e->key);
		touch_str(e->value);
		if (kcore_vmcoreinfo_get_u64(vi, e->key, &v))
			sink += v;
	}
	sink += kcore_vmcoreinfo_entry(vi, n) == NULL;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		touch_str(kcore_vmcoreinfo_get(vi, keys[i]));
		if (kcore_vmcoreinfo_get_u64(vi, keys[i], &v))
			sink += v;
	}
}

static void check_info(const struct kcore_source_info *info)
{
	touch_str(info->path);
	touch_str(kcore_source_kind_name(info->kind));
	touch_str(info->kernel_release);
	touch_str(info->vmcoreinfo_origin);
	touch_str(info->process_name);
	touch_str(kcore_signal_name(info->signal));
	sink += info->page_size + info->page_offset + info->kernel_offset;
}

static int memfd = -1;
static char memfd_path[64];

static int setup_memfd(void)
{
	if (memfd >= 0)
		return 0;
	memfd = memfd_create("fuzz-source", MFD_CLOEXEC);
	if (memfd < 0) {
		perror("fuzz-source: memfd_create");
		return -1;
	}
	snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d", memfd);
	return 0;
}

/* --exclude 31: mem_section and struct pages from untrusted VMCOREINFO. */
static void check_exclude(struct kcore_source *src)
{
	struct kcore_selection sel = { 0 };
	struct kcore_plan *plan = NULL;
	struct kcore_error *err = kcore_plan_create(src, &sel, &plan);

	if (!err)
		err = kcore_plan_exclude(src, plan, KCORE_EXCLUDE_ALL);
	if (err) {
		consume_error(err);
	} else {
		uint64_t last = 0;

		for (size_t i = 0; i < plan->nexcluded; i++) {
			if (plan->excluded[i].start >= plan->excluded[i].end ||
			    (i && plan->excluded[i].start <= last))
				abort(); /* sorted, merged, not empty */
			last = plan->excluded[i].end;
		}
	}
	kcore_plan_destroy(plan);
}

/*
 * The ELF `kcoredump mount` serves of it (for a kdump with exact virtual
 * addresses, rebuilt from its page tables): its data runs in order, and
 * up to 64 KiB read at the start of the first 256, including the header;
 * then 64 bytes of the last run read and of the header, backwards.
 */
static void check_view(void)
{
	struct kcore_view *v;
	struct kcore_error *err = kcore_view_open(memfd_path, NULL, &v);
	uint64_t pos = 0, size, d, e, last = 0;
	size_t done;

	if (err) {
		consume_error(err);
		return;
	}
	size = kcore_view_size(v);
	for (unsigned n = 0; n < 256 && pos < size; n++) {
		err = kcore_view_next_data(v, pos, &d, &e);
		if (err) {
			consume_error(err);
			break;
		}
		if (d >= size)
			break;
		if (d < pos || e <= d || e > size)
			abort(); /* runs ascend, are not empty, fit */
		err = kcore_view_pread(v, read_buf, min_size(e - d, MAX_READ),
				       d, &done);
		if (err)
			consume_error(err);
		last = d;
		pos = e;
	}
	/* Backwards, as crash and drgn read through the mount: the last run
	 * again, then the header (a sequential .zst restarts from a frame
	 * start, kcore_istream_pread). */
	for (unsigned k = 0; k < 2; k++) {
		err = kcore_view_pread(v, read_buf, 64, k ? 0 : last, &done);
		if (err)
			consume_error(err);
		if (done > 64)
			abort();
	}
	kcore_view_destroy(v);
}

static int write_input(const uint8_t *data, size_t size)
{
	size_t done = 0;

	if (ftruncate(memfd, 0) < 0)
		return -1;
	while (done < size) {
		ssize_t n =
			pwrite(memfd, data + done, size - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/*
 * The core handler's stream parser on the same bytes, as the kernel's
 * pipe would bring them: headers, notes, the copy into a store (sparse
 * ELF or .zst, by the last byte), the limits' cut and the rewritten
 * headers, the first-page build-ID notes, the metadata.  The build-ID
 * helper is not started (libdwfl's, and a fork per input); nothing is
 * read from /proc (the pid is no process's).
 */
static int store_fd = -1;

static void remove_result(const struct kcore_ch_result *res)
{
	int dfd = store_fd;

	if (res->subdir)
		dfd = openat(store_fd, res->subdir, O_RDONLY | O_DIRECTORY);
	if (res->core_name)
		unlinkat(dfd, res->core_name, 0);
	if (res->meta_name)
		unlinkat(dfd, res->meta_name, 0);
	if (dfd != store_fd && dfd >= 0)
		close(dfd);
}

static void fuzz_core_handler(const uint8_t *data, size_t size)
{
	unsigned char knobs = size ? data[size - 1] : 0;
	struct kcore_ch_opts o = {
		.in_fd = memfd,
		.dir = "fuzz-store",
		.compress =
			knobs & 1 ? KCORE_COMPRESS_ZSTD : KCORE_COMPRESS_NONE,
		.level = 1,
		.threads = 1,
		.max_size = knobs & 2 ? 16384 : 0,
		.max_use = knobs & 4 ? 65536 : 0,
		.timeout_ms = 10000,
		.no_pagemap = true,
		.keep_privileges = true,
		.user_access = knobs & 8,
		.crash = { .pid = 0x7ffffff0,
			   .uid = 1000,
			   .gid = 1000,
			   .signal = 6,
			   .time = 1700000000,
			   .comm = knobs & 16 ? NULL : "fuzz",
			   .dump_mode = knobs & 32 ? 1 : -1 },
		.procfs = "/nonexistent",
	};
	struct kcore_ch_result res;
	struct kcore_error *err;

	if (store_fd < 0) {
		char dir[] = "/tmp/fuzz-store.XXXXXX";

		if (!mkdtemp(dir) || kcore_coredir_open(dir, false, &store_fd))
			abort();
	}
	if (lseek(memfd, 0, SEEK_SET) < 0)
		abort();
	o.dir_fd = store_fd;
	err = kcore_core_handle(&o, &res);
	consume_error(err);
	remove_result(&res);
	kcore_ch_result_deinit(&res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kcore_vmcoreinfo *vi;
	struct kcore_source *src;
	struct kcore_error *err;

	if (setup_memfd() < 0 || write_input(data, size) < 0)
		abort();
	err = kcore_source_open(memfd_path, NULL, &src);
	if (!err) {
		check_info(kcore_source_info(src));
		check_segments(src);
		check_notes(src);
		check_vmcoreinfo(kcore_source_vmcoreinfo(src));
		check_exclude(src);
		kcore_source_destroy(src);
		check_view();
	} else {
		consume_error(err);
	}
	fuzz_core_handler(data, size);
	/* The VMCOREINFO parser on its own, on the raw bytes. */
	if (size <= MAX_READ &&
	    !kcore_vmcoreinfo_parse((const char *)data, size, &vi)) {
		check_vmcoreinfo(vi);
		kcore_vmcoreinfo_destroy(vi);
	}
	return 0;
}

#ifdef KCORE_FUZZ_REPLAY
static int failures, runs;

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	size_t len = 0, cap = 0;

	if (!f) {
		printf("not ok %d - %s: %s\n", ++runs, path, strerror(errno));
		failures++;
		return -1;
	}
	for (;;) {
		size_t n;

		if (len == cap) {
			unsigned char *nbuf;

			cap = cap ? 2 * cap : 65536;
			nbuf = realloc(buf, cap);
			if (!nbuf)
				abort();
			buf = nbuf;
		}
		n = fread(buf + len, 1, cap - len, f);
		if (n == 0)
			break;
		len += n;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	/* A crash or sanitizer report never gets here. */
	printf("ok %d - %s (%zu bytes)\n", ++runs, path, len);
	return 0;
}

static void replay_dir(const char *dir)
{
	struct dirent **ents;
	int n = scandir(dir, &ents, NULL, alphasort);

	if (n < 0) {
		printf("not ok %d - %s: %s\n", ++runs, dir, strerror(errno));
		failures++;
		return;
	}
	for (int i = 0; i < n; i++) {
		char path[4096];
		struct stat st;

		if (ents[i]->d_name[0] != '.' &&
		    snprintf(path, sizeof(path), "%s/%s", dir,
			     ents[i]->d_name) < (int)sizeof(path) &&
		    stat(path, &st) == 0 && S_ISREG(st.st_mode))
			replay_file(path);
		free(ents[i]);
	}
	free(ents);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: fuzz-source-replay FILE|DIR...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
			replay_dir(argv[i]);
		else
			replay_file(argv[i]);
	}
	printf("1..%d\n", runs);
	if (!runs) {
		fprintf(stderr, "fuzz-source-replay: no inputs\n");
		return 1;
	}
	return failures ? 1 : 0;
}
#endif
