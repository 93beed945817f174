// SPDX-License-Identifier: MIT
/*
 * The kdump writer under read errors injected through the I/O seam: a
 * kernel-like core (VMCOREINFO note, one 8 MiB direct-map RAM segment of
 * pattern data with a zero page) dumped with 3 unreadable pages.  In a
 * regular file the unreadable pages are excluded (bitmap 2 cleared, no
 * descriptor); the zero page points at the shared copy; every other page
 * has a descriptor; ENOSPC leaves nothing behind.  Then every page codec:
 * a compressible page is stored smaller with the codec's flag, an
 * incompressible one raw; a dump with each codec reads back (through our
 * kdump reader) equal to the core, with the codec's header status bit.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "kcoredump/kcore.h"
#include "kcoredump/dump.h"
#include "kcoredump/source.h"
#include "kdump.h"
#include "pattern.h"
#include "elfcore.h"
#include "kernelcore.h"
#include "tap.h"
#include "faultio.h"

static struct kcore_error *run_codec(const char *core, const char *out,
				     struct kc_fault *f, enum kcore_codec codec,
				     struct kcore_dump_result *res)
{
	struct kcore_io_ops ops = kc_fault_ops(f);
	struct kcore_open_opts oo = { .io = &ops };
	struct kcore_selection sel = { 0 };
	struct kcore_dump_opts opts = { .output = out,
					.format = KCORE_FORMAT_KDUMP,
					.codec = codec,
					.threads = 2,
					.block_size = 1u << 20,
					.out_io = &ops };
	struct kcore_source *src;
	struct kcore_plan *plan;
	struct kcore_error *err;

	err = kcore_source_open(core, &oo, &src);
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

static struct kcore_error *run(const char *core, const char *out,
			       struct kc_fault *f,
			       struct kcore_dump_result *res)
{
	return run_codec(core, out, f, KCORE_CODEC_ZSTD, res);
}

/* A number (or bool) the kdump writer reports, or UINT64_MAX. */
static uint64_t detail_u64(const struct kcore_dump_result *r, const char *key)
{
	for (size_t i = 0; i < r->detail.nfields; i++)
		if (strcmp(r->detail.fields[i].key, key) == 0)
			return r->detail.fields[i].u64;
	return UINT64_MAX;
}

static const uint32_t codec_flag[KCORE_CODEC_NUM] = {
	[KCORE_CODEC_ZSTD] = KDUMP_PAGE_ZSTD,
	[KCORE_CODEC_ZLIB] = KDUMP_PAGE_ZLIB,
	[KCORE_CODEC_NONE] = 0,
	[KCORE_CODEC_LZO] = KDUMP_PAGE_LZO,
	[KCORE_CODEC_SNAPPY] = KDUMP_PAGE_SNAPPY,
};

/* One codec on one compressible and one incompressible page, into a
 * page (lzo and snappy through their scratch) and into room for their
 * worst case (straight into dst); the text comes back. */
static void check_page_codec(enum kcore_codec c)
{
	static unsigned char text[PAGE], noise[PAGE], dst[2 * PAGE], back[PAGE];
	struct kcore_page_codec *pc = NULL;
	struct kcore_error *err;
	uint32_t flags = 99;
	size_t n;

	for (size_t i = 0; i < PAGE; i += 32)
		snprintf((char *)text + i, 32, "line %zu of the text", i);
	kc_pattern_fill(noise, 0x1000, PAGE, 3);
	err = kcore_page_codec_create(c, 0, PAGE, &pc);
	ok(!err, "%s: codec created", kcore_codec_name(c));
	if (err) {
		kcore_error_destroy(err);
		return;
	}
	for (size_t room = PAGE; room <= 2 * PAGE; room += PAGE) {
		memset(dst, 0xa5, sizeof(dst));
		n = kcore_page_codec_compress(pc, text, dst, room, &flags);
		ok(c == KCORE_CODEC_NONE
			   ? n == PAGE && flags == 0 && !memcmp(dst, text, PAGE)
			   : n < PAGE / 4 && flags == codec_flag[c],
		   "%s, room %zu: a text page is stored in %zu bytes, flags "
		   "0x%x",
		   kcore_codec_name(c), room, n, flags);
		if (c != KCORE_CODEC_NONE) {
			ZSTD_DCtx *z = NULL;

			memset(back, 0, sizeof(back));
			err = kcore_page_decompress(&z, "t", flags, dst, n,
						    back, PAGE, 0);
			ok(!err && !memcmp(back, text, PAGE),
			   "%s, room %zu: the text page decompresses back",
			   kcore_codec_name(c), room);
			kcore_error_destroy(err);
			ZSTD_freeDCtx(z);
		}
		n = kcore_page_codec_compress(pc, noise, dst, room, &flags);
		ok(n == PAGE && flags == 0 && !memcmp(dst, noise, PAGE),
		   "%s, room %zu: an incompressible page is stored raw",
		   kcore_codec_name(c), room);
	}
	kcore_page_codec_destroy(pc);
	if (c == KCORE_CODEC_LZO || c == KCORE_CODEC_SNAPPY) {
		err = kcore_page_codec_create(c, 3, PAGE, &pc);
		ok(err && err->code == KCORE_ERR_INVALID &&
			   strstr(err->message, "no compression levels"),
		   "%s: a level is refused", kcore_codec_name(c));
		kcore_error_destroy(err);
	}
}

/* A dump with codec c reads back equal to the core. */
static void check_codec_dump(const char *core, const char *out,
			     enum kcore_codec c)
{
	struct kc_fault f = { .eio_from = UINT64_MAX, .eio_to = UINT64_MAX };
	struct kcore_dump_result res;
	struct kcore_source *a = NULL, *b = NULL;
	unsigned char *x = malloc(SEG_SIZE), *y = malloc(SEG_SIZE), hdr[464];
	struct kcore_error *err = run_codec(core, out, &f, c, &res);
	uint32_t status = 0;
	int fd;

	ok(!err, "%s: kdump dump", kcore_codec_name(c));
	if (err) {
		fprintf(stderr, "# %s\n", err->message);
		kcore_error_destroy(err);
		free(x);
		free(y);
		return;
	}
	kcore_dump_result_deinit(&res);
	fd = open(out, O_RDONLY);
	if (fd >= 0 && pread(fd, hdr, sizeof(hdr), 0) == sizeof(hdr))
		memcpy(&status, hdr + 424, 4);
	if (fd >= 0)
		close(fd);
	ok(status == kdump_codec_status(c), "%s: header status 0x%x",
	   kcore_codec_name(c), status);
	err = kcore_source_open(core, NULL, &a);
	if (!err)
		err = kcore_source_open(out, NULL, &b);
	if (!err)
		err = kcore_source_read_paddr(a, PADDR, x, SEG_SIZE);
	if (!err)
		err = kcore_source_read_paddr(b, PADDR, y, SEG_SIZE);
	ok(!err && !memcmp(x, y, SEG_SIZE),
	   "%s: every page reads back equal to the core", kcore_codec_name(c));
	/* The zero page points at the shared copy: a hole to next_data, so
	 * a sparse source's kdump costs its descriptors, not its pages. */
	for (size_t i = 0; !err && i < kcore_source_nsegments(b); i++) {
		const struct kcore_segment *g = kcore_source_segment(b, i);
		uint64_t data = 0, hole = 0;

		if (g->type != PT_LOAD)
			continue;
		err = kcore_source_count_holes(b, i, &data, &hole);
		ok(!err && data == SEG_SIZE - PAGE && hole == PAGE,
		   "%s: the zero page is a hole (data 0x%llx, holes 0x%llx)",
		   kcore_codec_name(c), (unsigned long long)data,
		   (unsigned long long)hole);
	}
	if (err) {
		fprintf(stderr, "# %s\n", err->message);
		kcore_error_destroy(err);
	}
	kcore_source_destroy(a);
	kcore_source_destroy(b);
	free(x);
	free(y);
	unlink(out);
}

static unsigned leftovers(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;

	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    strcmp(e->d_name, "core"))
			n++;
	if (d)
		closedir(d);
	return n;
}

int main(void)
{
	char dir[] = "/tmp/t-kdump-XXXXXX", core[256], out[256];
	struct kcore_dump_result res;
	struct kcore_error *err;
	struct kc_fault f;
	unsigned char hdr[464], sub[104];
	uint32_t sub_blocks, bm_blocks, dump_level;
	uint64_t pfn0 = PADDR / PAGE, ndesc = 0;
	unsigned char *bm2;
	int fd;

	if (!mkdtemp(dir))
		tap_skip_all("no temp dir");
	snprintf(core, sizeof(core), "%s/core", dir);
	snprintf(out, sizeof(out), "%s/out.kdump", dir);
	kc_kernel_core(core, true);

	f = (struct kc_fault){ .eio_from = DATA_OFF + BAD_OFFSET,
			       .eio_to = DATA_OFF + BAD_OFFSET + BAD_LEN };
	err = run(core, out, &f, &res);
	ok(!err, "EIO does not stop a kdump dump");
	if (err) {
		fprintf(stderr, "# %s\n", err->message);
		kcore_error_destroy(err);
		return tap_done();
	}
	ok(detail_u64(&res, "pages_excluded") == BAD_LEN / PAGE &&
		   detail_u64(&res, "pages_zero") == 1 &&
		   detail_u64(&res, "pages_dumped") == SEG_SIZE / PAGE - 4,
	   "3 pages excluded, 1 shared zero page, the rest with data "
	   "(%llu/%llu/%llu)",
	   (unsigned long long)detail_u64(&res, "pages_excluded"),
	   (unsigned long long)detail_u64(&res, "pages_zero"),
	   (unsigned long long)detail_u64(&res, "pages_dumped"));
	ok(res.nerrors == 1 && res.errors[0].len == BAD_LEN &&
		   res.errors[0].errnum == EIO,
	   "the read error is reported");
	ok(detail_u64(&res, "flattened") == 0 &&
		   res.digest_location == KCORE_DIGESTS_NOTE,
	   "a regular file, digests in the note");
	kcore_dump_result_deinit(&res);

	fd = open(out, O_RDONLY);
	ok(fd >= 0 && pread(fd, hdr, sizeof(hdr), 0) == sizeof(hdr) &&
		   pread(fd, sub, sizeof(sub), PAGE) == sizeof(sub) &&
		   memcmp(hdr, "KDUMP   ", 8) == 0,
	   "the output is a kdump file");
	memcpy(&sub_blocks, hdr + 432, 4);
	memcpy(&bm_blocks, hdr + 436, 4);
	memcpy(&dump_level, sub + 8, 4);
	ok(dump_level == 1, "dump_level 1: excluded pages are zero pages");
	bm2 = malloc(bm_blocks * PAGE / 2);
	ok(bm2 && pread(fd, bm2, bm_blocks * PAGE / 2,
			(1 + sub_blocks + bm_blocks / 2) * PAGE) ==
			   (ssize_t)(bm_blocks * PAGE / 2),
	   "bitmap 2 reads");
	bool bits_ok = true;
	for (uint64_t p = 0; p < SEG_SIZE / PAGE; p++) {
		uint64_t pfn = pfn0 + p;
		bool set = bm2[pfn >> 3] >> (pfn & 7) & 1;
		bool bad = p * PAGE >= BAD_OFFSET &&
			   p * PAGE < BAD_OFFSET + BAD_LEN;

		bits_ok &= set == !bad;
		ndesc += set;
	}
	ok(bits_ok && !(bm2[0] & 1) && ndesc == SEG_SIZE / PAGE - 3,
	   "bitmap 2: the unreadable pfns cleared, the others set");
	/* The zero page's descriptor points at the shared copy, the first
	 * data page of the file, as every zero descriptor must. */
	unsigned char d0[24], dz[24];
	uint64_t desc_off = (1 + sub_blocks + bm_blocks) * PAGE, o0, oz;
	ok(pread(fd, d0, 24, desc_off) == 24 &&
		   pread(fd, dz, 24, desc_off + 24 * (ZERO_PAGE / PAGE)) == 24,
	   "descriptors read");
	memcpy(&o0, d0, 8);
	memcpy(&oz, dz, 8);
	ok(oz < o0 && oz >= desc_off + 24 * ndesc,
	   "the zero page points at the shared copy before the data");
	free(bm2);
	close(fd);
	unlink(out);

	/* ENOSPC part way: an error, and no output or temporary file. */
	f = (struct kc_fault){ .eio_from = UINT64_MAX,
			       .eio_to = UINT64_MAX,
			       .enospc_after = 1u << 20 };
	err = run(core, out, &f, &res);
	ok(err && err->errnum == ENOSPC, "ENOSPC fails the kdump dump");
	kcore_error_destroy(err);
	ok(leftovers(dir) == 0, "nothing is left behind");

	for (int c = 0; c < KCORE_CODEC_NUM; c++) {
		check_page_codec((enum kcore_codec)c);
		check_codec_dump(core, out, (enum kcore_codec)c);
	}
	unlink(core);
	rmdir(dir);
	return tap_done();
}
