// SPDX-License-Identifier: MIT
/*
 * corecheck CORE LAYOUT: check the bytes of an ELF core that the kernel
 * wrote for a kernel/test/crash-shapes.c program against the layout the
 * program recorded before it aborted (see crash-shapes.c):
 *
 *  - every "map" range lies in PT_LOAD segments of the core;
 *  - every word of every "fill" holds the shape_word() pattern
 *    (kernel/test/shapes.h), a later fill of the same bytes taking
 *    precedence over an earlier one;
 *  - every other byte of the "map" ranges is zero, except in "ignore"
 *    ranges; this part reads only the data extents of the core
 *    (SEEK_DATA/SEEK_HOLE), so a TiB of holes costs nothing.
 *
 * Bytes beyond a segment's p_filesz count as zeros.  Prints one TAP-like
 * line ("ok - ..." or "not ok - ... at vaddr ...") and the layout's "info"
 * lines; exit 0 if the core matches, 1 if not, 2 on usage or I/O errors.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shapes.h"

#define PAGE 4096UL

struct range {
	uint64_t start, len, seed;
	int kind;	/* 'm' map, 'f' fill, 'i' ignore */
	int order;
};

static Elf64_Phdr *ph;
static int nph;
static struct range *rs;
static int nrs;
static int fd;
static const char *core_path;

static void fatal(const char *what)
{
	fprintf(stderr, "corecheck: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* the core file offset of vaddr, or -1 if no PT_LOAD holds it; *in_file
 * is 0 if it lies beyond p_filesz (reads as zero) */
static int64_t core_off(uint64_t va, int *in_file, uint64_t *seg_end)
{
	for (int i = 0; i < nph; i++) {
		if (ph[i].p_type != PT_LOAD || va < ph[i].p_vaddr ||
		    va - ph[i].p_vaddr >= ph[i].p_memsz)
			continue;
		*in_file = va - ph[i].p_vaddr < ph[i].p_filesz;
		*seg_end = ph[i].p_vaddr + (*in_file ? ph[i].p_filesz :
							ph[i].p_memsz);
		return (int64_t)(ph[i].p_offset + (va - ph[i].p_vaddr));
	}
	return -1;
}

/* the word expected at vaddr va; *ignored set if no check applies */
static uint64_t expected(uint64_t va, int *ignored)
{
	const struct range *best = NULL;

	*ignored = 0;
	for (int i = 0; i < nrs; i++) {
		const struct range *r = &rs[i];

		if (va < r->start || va - r->start >= r->len)
			continue;
		if (r->kind == 'i')
			*ignored = 1;
		if (r->kind == 'f' && (!best || r->order > best->order))
			best = r;
	}
	return best ? shape_word(va - best->start, best->seed) : 0;
}

static int read_words(uint64_t va, uint64_t *w, size_t n)
{
	int in_file;
	uint64_t seg_end;
	int64_t off = core_off(va, &in_file, &seg_end);

	if (off < 0)
		return -1;
	if (!in_file || va + n * 8 > seg_end) {
		/* at a segment edge: word by word */
		for (size_t i = 0; i < n; i++) {
			off = core_off(va + i * 8, &in_file, &seg_end);
			if (off < 0)
				return -1;
			w[i] = 0;
			if (in_file && pread(fd, &w[i], 8, off) != 8)
				fatal(core_path);
		}
		return 0;
	}
	if (pread(fd, w, n * 8, off) != (ssize_t)(n * 8))
		fatal(core_path);
	return 0;
}

static int check_page(uint64_t va, const char **why, uint64_t *bad_va,
		      uint64_t *got, uint64_t *want)
{
	uint64_t w[PAGE / 8];
	int ignored;

	if (read_words(va, w, PAGE / 8)) {
		*why = "not in any PT_LOAD";
		*bad_va = va;
		return -1;
	}
	for (size_t i = 0; i < PAGE / 8; i++) {
		uint64_t e = expected(va + i * 8, &ignored);

		if (!ignored && w[i] != e) {
			*why = e ? "wrong pattern" : "not zero";
			*bad_va = va + i * 8;
			*got = w[i];
			*want = e;
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t bad_va = 0, got = 0, want = 0, pages = 0, fill_pages = 0;
	const char *why = NULL;
	char line[256], kind[16];
	Elf64_Ehdr eh;
	FILE *lf;
	int rc = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: corecheck CORE LAYOUT\n");
		return 2;
	}
	core_path = argv[1];
	fd = open(core_path, O_RDONLY);
	if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh))
		fatal(core_path);
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_type != ET_CORE) {
		fprintf(stderr, "corecheck: %s: not an ELF core\n", core_path);
		return 2;
	}
	nph = eh.e_phnum;
	ph = calloc(nph, sizeof(*ph));
	if (!ph || pread(fd, ph, nph * sizeof(*ph), eh.e_phoff) !=
			   (ssize_t)(nph * sizeof(*ph)))
		fatal(core_path);

	lf = fopen(argv[2], "r");
	if (!lf)
		fatal(argv[2]);
	while (fgets(line, sizeof(line), lf)) {
		struct range r = { 0 };

		if (!strncmp(line, "info ", 5)) {
			printf("# %s", line);
			continue;
		}
		if (sscanf(line, "%15s %" SCNx64 " %" SCNu64 " %" SCNu64, kind,
			   &r.start, &r.len, &r.seed) < 3)
			continue;
		r.kind = kind[0];
		r.order = nrs;
		rs = realloc(rs, (nrs + 1) * sizeof(*rs));
		if (!rs)
			fatal("realloc");
		rs[nrs++] = r;
	}
	fclose(lf);

	/* 1. the fills, word by word */
	for (int i = 0; i < nrs && !why; i++) {
		if (rs[i].kind != 'f')
			continue;
		for (uint64_t va = rs[i].start & ~(PAGE - 1);
		     va < rs[i].start + rs[i].len && !why; va += PAGE) {
			check_page(va, &why, &bad_va, &got, &want);
			fill_pages++;
		}
	}

	/* 2. the rest of the mapped ranges: zero wherever the core has data */
	for (int i = 0; i < nrs && !why; i++) {
		uint64_t va = rs[i].start, end = rs[i].start + rs[i].len;

		if (rs[i].kind != 'm')
			continue;
		while (va < end && !why) {
			int in_file;
			uint64_t seg_end;
			int64_t off = core_off(va, &in_file, &seg_end), d, h;

			if (off < 0) {
				why = "not in any PT_LOAD";
				bad_va = va;
				break;
			}
			if (!in_file) {
				va = seg_end;
				continue;
			}
			if (seg_end > end)
				seg_end = end;
			d = lseek(fd, off, SEEK_DATA);
			if (d < 0 && errno != ENXIO)
				fatal(core_path);
			if (d < 0 || (uint64_t)d >= off + (seg_end - va)) {
				va = seg_end;
				continue;
			}
			h = lseek(fd, d, SEEK_HOLE);
			if (h < 0)
				fatal(core_path);
			va += (uint64_t)d - off;
			va &= ~(PAGE - 1);
			for (uint64_t e = va + ((uint64_t)h - d); va < e &&
			     va < seg_end && !why; va += PAGE) {
				check_page(va, &why, &bad_va, &got, &want);
				pages++;
			}
		}
	}

	if (why) {
		printf("not ok - corecheck %s: %s at vaddr 0x%" PRIx64
		       " (0x%016" PRIx64 ", want 0x%016" PRIx64 ")\n",
		       core_path, why, bad_va, got, want);
		rc = 1;
	} else {
		printf("ok - corecheck %s: %" PRIu64 " pages of fills match,"
		       " %" PRIu64 " data pages of the mappings checked\n",
		       core_path, fill_pages, pages);
	}
	return rc;
}
