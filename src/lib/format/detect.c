// SPDX-License-Identifier: MIT
/*
 * The kernel in a raw physical image (LiME, AVML), whose headers name no
 * machine: found in the memory itself (issue 43 item 2).
 *
 * The kernel keeps VMCOREINFO in pages of its own: the text (from
 * "OSRELEASE=", at the start of a page) and the ELF note built from it
 * (name "VMCOREINFO", its header at the start of a page).  Lines only one
 * architecture publishes name the machine: x86_64 SYMBOL(init_top_pgt)
 * and NUMBER(pgtable_l5_enabled), arm64 NUMBER(kimage_voffset) and
 * NUMBER(TCR_EL1_T1SZ) (NUMBER(phys_base) is 32-bit x86's too and
 * NUMBER(VA_BITS) riscv's).  Without VMCOREINFO, the "Linux version"
 * banner names the compiler's target (x86_64-linux-gnu-gcc, a Debian
 * release's -amd64 or -arm64 suffix).  What was given (--arch) stands
 * where neither tells; it must agree with VMCOREINFO, and wins over a
 * banner (any page may hold such a line).
 *
 * The kernel allocates both VMCOREINFO pages early, from the start of its
 * highest memory zone: on a 1 GiB guest a few MiB into RAM, on a large
 * host just above 4 GiB.  So the memory is read in 1 MiB blocks, holes
 * skipped, ascending from 4 GiB to the end and then from the start, until
 * the first VMCOREINFO or SCAN_BUDGET bytes of data: opening a large
 * image without one costs a bounded read, not the whole image.
 *
 * A VMCOREINFO found becomes the image's VMCOREINFO note, so that every
 * reader of the image and of the ELF made of it (crash, drgn) finds it.
 */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "elf-parse.h"
#include "read.h"
#include "bytes.h"
#include "kcoredump/vmcoreinfo.h"
#include "read.h"

#define BLOCK (1u << 20)
#define PAGE  4096u
/* A note may run past its first page: read this much past each block. */
#define OVERLAP	    (2 * PAGE)
#define NOTE_NAME   "VMCOREINFO"
#define BANNER	    "Linux version "
#define SCAN_BUDGET (4ull << 30)
#define FROM	    (4ull << 30)

/* Whether text[0, len) has a line starting with key. */
static bool has_line(const char *text, size_t len, const char *key)
{
	size_t klen = strlen(key);

	for (size_t i = 0; i < len; i++) {
		if ((i == 0 || text[i - 1] == '\n') && len - i >= klen &&
		    memcmp(text + i, key, klen) == 0)
			return true;
		while (i < len && text[i] != '\n')
			i++;
	}
	return false;
}

uint16_t kcore_vmcoreinfo_text_machine(const char *text, size_t len)
{
	const struct kcore_arch *arch = kcore_arch_by_vmcoreinfo(text, len);

	return arch ? arch->machine : EM_NONE;
}

static bool is_text(unsigned char c)
{
	return c == '\n' || (c >= 0x20 && c < 0x7f);
}

/* VMCOREINFO text of at most len bytes at p, NUL-terminated within them:
 * its length, or 0. */
static size_t text_at(const unsigned char *p, size_t len)
{
	size_t n = 0;

	if (len < 10 || memcmp(p, "OSRELEASE=", 10) != 0)
		return 0;
	while (n < len && p[n] && is_text(p[n]))
		n++;
	if (n == len || p[n] != 0)
		return 0; /* not NUL-terminated within reach, or not text */
	if (!has_line((const char *)p, n, "PAGESIZE="))
		return 0;
	return n;
}

/* The VMCOREINFO note at p (at most len bytes): its text's length (and
 * *text), or 0. */
static size_t note_at(const unsigned char *p, size_t len,
		      const unsigned char **text)
{
	struct kcore_elf_notes it;
	struct kcore_elf_note note;
	const unsigned char *d;
	size_t n = 0;

	kcore_elf_notes_init(&it, p, len, false, 4, false);
	if (kcore_elf_notes_next(&it, &note) != KCORE_ELF_NOTE_OK ||
	    !kcore_elf_note_is(&note, NOTE_NAME) || note.type != 0 ||
	    note.descsz < 10 || note.descsz > PAGE)
		return 0;
	/* The text, which may or may not end in a NUL within descsz. */
	d = note.desc;
	while (n < note.descsz && d[n] && is_text(d[n]))
		n++;
	if (n < note.descsz && d[n] != 0)
		return 0;
	if (n < 10 || memcmp(d, "OSRELEASE=", 10) != 0 ||
	    !has_line((const char *)d, n, "PAGESIZE="))
		return 0;
	*text = d;
	return n;
}

/* The machine a "Linux version" line at p names, or EM_NONE. */
static uint16_t banner_machine(const unsigned char *p, size_t len)
{
	const struct kcore_arch *arch;
	size_t n = 0;
	char line[256];

	while (n < len && n < sizeof(line) - 1 && p[n] && p[n] != '\n') {
		line[n] = (char)p[n];
		n++;
	}
	line[n] = 0;
	arch = kcore_arch_by_banner(line);
	return arch ? arch->machine : EM_NONE;
}

/* What the scan found. */
struct found {
	struct kcore_vmcoreinfo *vmcoreinfo;
	uint64_t vmcoreinfo_paddr;
	uint16_t vmcoreinfo_machine;
	uint16_t banner_machine;
	uint64_t banner_paddr;
};

struct scan {
	struct kcore_source *src;
	unsigned char *buf;
	uint64_t budget; /* data bytes still to read */
	struct found *f;
};

static struct kcore_error *take(struct found *f, const unsigned char *text,
				size_t n, uint64_t paddr)
{
	struct kcore_error *err =
		kcore_vmcoreinfo_parse((const char *)text, n, &f->vmcoreinfo);

	if (err)
		return err;
	f->vmcoreinfo_paddr = paddr;
	f->vmcoreinfo_machine =
		kcore_vmcoreinfo_text_machine((const char *)text, n);
	return NULL;
}

/* The first "Linux version" line starting in buf[0, scan) that names a
 * machine (it may run on into buf[scan, len)). */
static void find_banner(const unsigned char *buf, size_t len, size_t scan,
			uint64_t paddr, struct found *f)
{
	const unsigned char *p = buf, *end;
	size_t extra = sizeof(BANNER) - 2;

	if (extra > len - scan)
		extra = len - scan;
	end = buf + scan + extra;
	while (p < end) {
		const unsigned char *hit = memmem(p, (size_t)(end - p), BANNER,
						  sizeof(BANNER) - 1);
		uint16_t m;

		if (!hit || (size_t)(hit - buf) >= scan)
			return;
		m = banner_machine(hit, len - (size_t)(hit - buf));
		if (m != EM_NONE) {
			f->banner_machine = m;
			f->banner_paddr = paddr + (uint64_t)(hit - buf);
			return;
		}
		p = hit + 1;
	}
}

/*
 * Look through one block: len bytes of memory whose first byte is at
 * paddr, of which the first scan are this block's (the rest overlaps the
 * next block, for a note or banner that starts here and ends there).
 */
static struct kcore_error *scan_block(const unsigned char *buf, size_t len,
				      size_t scan, uint64_t paddr,
				      struct found *f)
{
	uint64_t first = (paddr + PAGE - 1) & ~(uint64_t)(PAGE - 1);

	for (uint64_t pa = first; pa - paddr < scan; pa += PAGE) {
		const unsigned char *p = buf + (pa - paddr), *text = NULL;
		size_t left = len - (size_t)(pa - paddr);
		size_t n = note_at(p, left, &text);

		if (n)
			return take(f, text, n, pa + 24);
		n = text_at(p, left < PAGE ? left : PAGE);
		if (n)
			return take(f, p, n, pa);
	}
	if (f->banner_machine == EM_NONE)
		find_banner(buf, len, scan, paddr, f);
	return NULL;
}

/* Scan image offsets [from, to) of load l. */
static struct kcore_error *scan_span(struct scan *s,
				     const struct kcore_image_load *l,
				     uint64_t from, uint64_t to)
{
	const struct kcore_reader_ops *r = s->src->reader;
	uint64_t end = l->offset + l->size, pos = from;
	struct kcore_error *err;

	while (pos < to && !s->f->vmcoreinfo && s->budget) {
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
				 s->f);
		if (err)
			return err;
		pos = d + scan;
	}
	return NULL;
}

/* Scan the loads (ascending, laid out by kcore_image_build()). */
static struct kcore_error *scan(struct kcore_source *src,
				const struct kcore_image_load *loads,
				size_t nloads, struct found *f)
{
	struct scan s = { .src = src, .budget = SCAN_BUDGET, .f = f };
	struct kcore_error *err = NULL;
	size_t start = 0;
	uint64_t start_off;

	if (!nloads)
		return NULL;
	s.buf = malloc(BLOCK + OVERLAP);
	if (!s.buf)
		return &kcore_error_nomem;
	/* The load holding 4 GiB or the first above it; else the first. */
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
		err = scan_span(&s, &loads[i],
				i == start ? start_off : loads[i].offset,
				loads[i].offset + loads[i].size);
	for (size_t i = 0; i <= start && !err; i++)
		err = scan_span(&s, &loads[i], loads[i].offset,
				i == start ? start_off
					   : loads[i].offset + loads[i].size);
	free(s.buf);
	/* Memory that cannot be read (a corrupt chunk) fails when it is
	 * read, not here: the scan stops with what it found. */
	if (err && err != &kcore_error_nomem) {
		kcore_error_destroy(err);
		err = NULL;
	}
	return err;
}

struct kcore_error *kcore_image_identify(struct kcore_source *src,
					 struct kcore_image_load *loads,
					 size_t nloads, uint64_t align)
{
	struct found f = { 0 };
	struct kcore_error *err = scan(src, loads, nloads, &f);
	unsigned char *notes = NULL;
	size_t notes_len = 0, text_len = 0;
	uint16_t machine = EM_NONE;
	const char *text;
	char b1[32], b2[32];

	if (err)
		goto out;
	if (f.vmcoreinfo_machine != EM_NONE) {
		if (src->given_machine != EM_NONE &&
		    src->given_machine != f.vmcoreinfo_machine) {
			err = kcore_error_create(
				KCORE_ERR_INVALID, 0, src->path,
				"--arch %s, but the VMCOREINFO in its memory "
				"(at physical 0x%" PRIx64 ") is %s's",
				kcore_machine_str(src->given_machine, b1,
						  sizeof(b1)),
				f.vmcoreinfo_paddr,
				kcore_machine_str(f.vmcoreinfo_machine, b2,
						  sizeof(b2)));
			goto out;
		}
		machine = f.vmcoreinfo_machine;
		src->info.machine_origin = "VMCOREINFO";
		src->info.machine_paddr = f.vmcoreinfo_paddr;
	} else if (src->given_machine != EM_NONE) {
		machine = src->given_machine;
		src->info.machine_origin = "--arch";
	} else if (f.banner_machine != EM_NONE) {
		machine = f.banner_machine;
		src->info.machine_origin = "kernel banner";
		src->info.machine_paddr = f.banner_paddr;
	}
	if (f.vmcoreinfo) {
		text = kcore_vmcoreinfo_text(f.vmcoreinfo, &text_len);
		err = kcore_note_append(&notes, &notes_len, NOTE_NAME, 0, text,
					text_len);
		if (err)
			goto out;
		src->info.vmcoreinfo_paddr = f.vmcoreinfo_paddr;
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
	kcore_vmcoreinfo_destroy(f.vmcoreinfo);
	return err;
}
