// SPDX-License-Identifier: MIT
/*
 * The kernel in a raw physical image (LiME, AVML), whose headers name no
 * machine: found in the memory itself.
 *
 * The kernel keeps VMCOREINFO in pages of its own: the text (from
 * "OSRELEASE=", at the start of a page) and the ELF note built from it
 * (name "VMCOREINFO", the header at the start of a page).  Its
 * architecture's own lines name the machine (x86_64 publishes
 * SYMBOL(init_top_pgt) and NUMBER(phys_base), arm64 NUMBER(VA_BITS) and
 * NUMBER(kimage_voffset)).  Without VMCOREINFO, the "Linux version"
 * banner names the compiler's target.
 *
 * The kernel allocates both pages early, from the start of its highest
 * memory zone: on a 1 GiB guest 24 MiB into RAM, on a 16 GiB host just
 * above 4 GiB.  So the memory is read in 1 MiB blocks, holes skipped,
 * ascending from 4 GiB to the end and then from the start, until the
 * first VMCOREINFO or a budget of SCAN_BUDGET bytes of data: opening a
 * large image without one costs a bounded read, not the whole image.
 */
#define _GNU_SOURCE /* memmem */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read.h"

#define BLOCK (1u << 20)
#define PAGE 4096u
/* A note may run past its first page: read this much past each block. */
#define OVERLAP (2 * PAGE)
#define NOTE_NAME "VMCOREINFO"
#define BANNER "Linux version "
#define SCAN_BUDGET (4ull << 30)
#define FROM (4ull << 30)

static bool has_line(const char *text, size_t len, const char *key)
{
	size_t klen = strlen(key);

	for (size_t i = 0; i + klen <= len; i++) {
		if ((i == 0 || text[i - 1] == '\n') &&
		    memcmp(text + i, key, klen) == 0)
			return true;
		while (i < len && text[i] != '\n')
			i++;
	}
	return false;
}

uint16_t kcore_vmcoreinfo_text_machine(const char *text, size_t len)
{
	if (has_line(text, len, "SYMBOL(init_top_pgt)=") ||
	    has_line(text, len, "NUMBER(phys_base)=") ||
	    has_line(text, len, "NUMBER(pgtable_l5_enabled)="))
		return EM_X86_64;
	if (has_line(text, len, "NUMBER(kimage_voffset)=") ||
	    has_line(text, len, "NUMBER(VA_BITS)=") ||
	    has_line(text, len, "NUMBER(TCR_EL1_T1SZ)="))
		return EM_AARCH64;
	return EM_NONE;
}

/* VMCOREINFO text of at most len bytes at p: its length, or 0. */
static size_t text_at(const unsigned char *p, size_t len)
{
	size_t n = 0;

	if (len < 10 || memcmp(p, "OSRELEASE=", 10) != 0)
		return 0;
	while (n < len && p[n] && (p[n] == '\n' || (p[n] >= 0x20 && p[n] < 0x7f)))
		n++;
	if (n == len || p[n] != 0)
		return 0; /* not NUL-terminated within reach, or not text */
	if (!has_line((const char *)p, n, "PAGESIZE="))
		return 0;
	return n;
}

/* The VMCOREINFO note at p (at most len bytes): its text and length. */
static size_t note_at(const unsigned char *p, size_t len,
		      const unsigned char **text)
{
	uint32_t namesz, descsz, type;
	size_t n;

	if (len < 24)
		return 0;
	namesz = (uint32_t)kcore_load(p, 4, false);
	descsz = (uint32_t)kcore_load(p + 4, 4, false);
	type = (uint32_t)kcore_load(p + 8, 4, false);
	if (namesz != sizeof(NOTE_NAME) || type != 0 || descsz < 10 ||
	    descsz > PAGE || memcmp(p + 12, NOTE_NAME, sizeof(NOTE_NAME)) ||
	    descsz > len - 24)
		return 0;
	/* The text, which may or may not end in a NUL within descsz. */
	n = 0;
	while (n < descsz && p[24 + n] &&
	       (p[24 + n] == '\n' || (p[24 + n] >= 0x20 && p[24 + n] < 0x7f)))
		n++;
	if (n < 10 || memcmp(p + 24, "OSRELEASE=", 10) != 0 ||
	    !has_line((const char *)p + 24, n, "PAGESIZE="))
		return 0;
	*text = p + 24;
	return n;
}

static uint16_t banner_machine(const unsigned char *p, size_t len)
{
	size_t n = 0;
	char line[256];

	while (n < len && n < sizeof(line) - 1 && p[n] && p[n] != '\n') {
		line[n] = (char)p[n];
		n++;
	}
	line[n] = 0;
	if (strstr(line, "x86_64") || strstr(line, "-amd64"))
		return EM_X86_64;
	if (strstr(line, "aarch64") || strstr(line, "-arm64"))
		return EM_AARCH64;
	return EM_NONE;
}

struct scan {
	struct kcore_source *src;
	unsigned char *buf;
	uint64_t budget; /* data bytes still to read */
	struct kcore_image_arch *a;
};

/*
 * Whether VMCOREINFO text found at paddr is the kernel's: it parses.  A
 * page that only looks like it (hostile or stale) is passed over.
 */
static struct kcore_error *take(struct kcore_image_arch *a,
				const unsigned char *text, size_t n,
				uint64_t paddr, const char *form)
{
	struct kcore_vmcoreinfo *vi;
	struct kcore_error *err = kcore_vmcoreinfo_parse((const char *)text, n,
							 &vi);

	if (err) {
		if (err == &kcore_error_nomem)
			return err;
		kcore_error_destroy(err);
		return NULL;
	}
	a->vmcoreinfo = vi;
	a->vmcoreinfo_paddr = paddr;
	a->vmcoreinfo_form = form;
	a->vmcoreinfo_machine = kcore_vmcoreinfo_text_machine((const char *)text,
							      n);
	return NULL;
}

/* The first "Linux version" line in buf[0, scan) naming a machine. */
static void find_banner(const unsigned char *buf, size_t len, size_t scan,
			uint64_t paddr, struct kcore_image_arch *a)
{
	size_t extra = len - scan < sizeof(BANNER) - 2 ? len - scan
						       : sizeof(BANNER) - 2;
	const unsigned char *p = buf, *end = buf + scan + extra;

	while (p < end) {
		const unsigned char *hit =
			memmem(p, (size_t)(end - p), BANNER, sizeof(BANNER) - 1);
		uint16_t m;

		if (!hit || (size_t)(hit - buf) >= scan)
			return;
		m = banner_machine(hit, len - (size_t)(hit - buf));
		if (m != EM_NONE) {
			a->banner_machine = m;
			a->banner_paddr = paddr + (uint64_t)(hit - buf);
			return;
		}
		p = hit + 1;
	}
}

/*
 * Look through one block: len bytes of image data whose first byte is at
 * paddr, of which the first scan are this block's (the rest is overlap
 * with the next, for a note that starts here and ends there).
 */
static struct kcore_error *scan_block(const unsigned char *buf, size_t len,
				      size_t scan, uint64_t paddr,
				      struct kcore_image_arch *a)
{
	uint64_t first = (paddr + PAGE - 1) & ~(uint64_t)(PAGE - 1);
	struct kcore_error *err;

	for (uint64_t pa = first; pa - paddr < scan; pa += PAGE) {
		const unsigned char *p = buf + (pa - paddr), *text = NULL;
		size_t left = len - (size_t)(pa - paddr);
		size_t n = note_at(p, left, &text);

		if (n) {
			err = take(a, text, n, pa + (uint64_t)(text - p),
				   "note");
			if (err || a->vmcoreinfo)
				return err;
		}
		n = text_at(p, left < PAGE ? left : PAGE);
		if (n) {
			err = take(a, p, n, pa, "text");
			if (err || a->vmcoreinfo)
				return err;
		}
	}
	if (a->banner_machine == EM_NONE)
		find_banner(buf, len, scan, paddr, a);
	return NULL;
}

/* Scan image offsets [from, to) of load l (its data ends at end). */
static struct kcore_error *scan_span(struct scan *s,
				     const struct kcore_image_load *l,
				     uint64_t from, uint64_t to)
{
	const struct kcore_reader_ops *r = s->src->reader;
	uint64_t end = l->offset + l->size, pos = from;
	struct kcore_error *err;

	while (pos < to && !s->a->vmcoreinfo && s->budget) {
		uint64_t d = pos, de = to;
		size_t len, scan;

		if (r->next_data && s->src->knows_holes) {
			err = r->next_data(s->src, pos, to, &d, &de);
			if (err)
				return err;
			if (d >= to)
				break;
		}
		scan = de - d < BLOCK ? (size_t)(de - d) : BLOCK;
		if (scan > s->budget)
			scan = (size_t)s->budget;
		len = end - d < scan + OVERLAP ? (size_t)(end - d)
					       : scan + OVERLAP;
		err = r->pread(s->src, s->buf, len, d, NULL);
		if (err)
			return err;
		s->budget -= scan;
		err = scan_block(s->buf, len, scan, l->paddr + (d - l->offset),
				 s->a);
		if (err)
			return err;
		pos = d + scan;
	}
	return NULL;
}

struct kcore_error *kcore_image_detect(struct kcore_source *src,
				       const struct kcore_image_load *loads,
				       size_t nloads,
				       struct kcore_image_arch *ret)
{
	struct scan s = { .src = src, .budget = SCAN_BUDGET, .a = ret };
	struct kcore_error *err = NULL;
	size_t start = 0;
	uint64_t start_off;

	memset(ret, 0, sizeof(*ret));
	if (!nloads)
		return NULL;
	s.buf = malloc(BLOCK + OVERLAP);
	if (!s.buf)
		return &kcore_error_nomem;
	/* Where 4 GiB is (the loads ascend), or the start. */
	while (start < nloads && loads[start].paddr + loads[start].size <= FROM)
		start++;
	if (start == nloads) {
		start = 0;
		start_off = loads[0].offset;
	} else {
		const struct kcore_image_load *l = &loads[start];

		start_off = l->offset + (l->paddr < FROM ? FROM - l->paddr : 0);
	}
	for (size_t i = start; i < nloads && !err; i++)
		err = scan_span(&s, &loads[i], i == start ? start_off
							  : loads[i].offset,
				loads[i].offset + loads[i].size);
	for (size_t i = 0; i <= start && !err; i++)
		err = scan_span(&s, &loads[i], loads[i].offset,
				i == start ? start_off
					   : loads[i].offset + loads[i].size);
	free(s.buf);
	if (err) {
		kcore_vmcoreinfo_destroy(ret->vmcoreinfo);
		memset(ret, 0, sizeof(*ret));
	}
	return err;
}

struct kcore_error *kcore_image_identify(struct kcore_source *src,
					 struct kcore_image_load *loads,
					 size_t nloads, uint64_t align)
{
	struct kcore_image_arch a;
	struct kcore_error *err = kcore_image_detect(src, loads, nloads, &a);
	unsigned char *notes = NULL;
	size_t notes_len = 0, text_len = 0;
	uint16_t machine = EM_NONE;
	const char *text;

	if (err)
		return err;
	if (src->given_machine != EM_NONE) {
		machine = src->given_machine;
		src->info.machine_origin = "given";
	} else if (a.vmcoreinfo_machine != EM_NONE) {
		machine = a.vmcoreinfo_machine;
		src->info.machine_origin = "VMCOREINFO";
		src->info.machine_paddr = a.vmcoreinfo_paddr;
	} else if (a.banner_machine != EM_NONE) {
		machine = a.banner_machine;
		src->info.machine_origin = "banner";
		src->info.machine_paddr = a.banner_paddr;
	}
	if (a.vmcoreinfo) {
		text = kcore_vmcoreinfo_text(a.vmcoreinfo, &text_len);
		err = kcore_note_append(&notes, &notes_len, NOTE_NAME, 0, text,
					text_len);
		if (err)
			goto out;
		src->info.vmcoreinfo_paddr = a.vmcoreinfo_paddr;
		src->vmcoreinfo_in_memory = true;
	}
	if (machine == EM_NONE && !notes)
		goto out; /* the image stands as built */
	free(src->image);
	src->image = NULL;
	err = kcore_image_build(machine, notes, notes_len, loads, nloads, align,
				&src->image, &src->image_size,
				&src->info.file_size);
out:
	free(notes);
	kcore_vmcoreinfo_destroy(a.vmcoreinfo);
	return err;
}
