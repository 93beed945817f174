// SPDX-License-Identifier: MIT
/*
 * The core handler's ELF header and program headers, read from the front
 * of the stream (all hostile: every field is checked before use), the
 * fields it rewrites in its copy of them, and the program headers of a
 * core cut short, marked incomplete in its own notes.
 */
#include <elf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corehandler-internal.h"
#include "elf-parse.h"
#include "metanote.h"

#define MAX_PREFIX CH_MAX_PREFIX

/* Grow the prefix to len bytes of the stream; a short stream or a stop
 * here is an error: without headers there is nothing to store. */
static struct kcore_error *need_prefix(struct ch *ch, size_t len,
				       const char *what)
{
	size_t got;
	struct kcore_error *err;
	unsigned char *p;

	if (len <= ch->prefix_len)
		return NULL;
	if (len > MAX_PREFIX)
		return kcore_error_create_at(
			KCORE_ERR_UNSUPPORTED, 0, ch->in_name, ch->prefix_len,
			"%s would end at offset 0x%zx, beyond the %u MiB "
			"allowed for headers and notes",
			what, len, MAX_PREFIX >> 20);
	p = realloc(ch->prefix, len);
	if (!p)
		return &kcore_error_nomem;
	ch->prefix = p;
	err = ch_fill(ch, p + ch->prefix_len, len - ch->prefix_len, &got);
	if (err)
		return err;
	ch->prefix_len += got;
	if (ch->prefix_len < len)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, ch->in_name, ch->prefix_len,
			"the stream %s before the end of the %s (offset 0x%zx)",
			ch->stopped ? (ch->stop_reason == KCORE_CH_TIMEOUT
					       ? "timed out"
					       : "was cancelled")
				    : "ended",
			what, len);
	return NULL;
}

/* ---- ELF fields ---- */

static void st(const struct ch *ch, unsigned char *p, unsigned size, uint64_t v)
{
	for (unsigned i = 0; i < size; i++) {
		unsigned shift = ch->big ? 8 * (size - 1 - i) : 8 * i;

		p[i] = (unsigned char)(v >> shift);
	}
}

static void get_phdr(const struct ch *ch, const unsigned char *p,
		     struct ch_phdr *ph)
{
	struct kcore_elf_phdr e;

	kcore_elf_decode_phdr(ch->is64, ch->big, p, &e);
	*ph = (struct ch_phdr){
		.type = e.type,
		.flags = e.flags,
		.offset = e.offset,
		.vaddr = e.vaddr,
		.paddr = e.paddr,
		.filesz = e.filesz,
		.memsz = e.memsz,
		.align = e.align,
	};
}

/* Rewrite p_offset and p_filesz of phdr i inside buf (a header copy). */
void ch_put_phdr_file(const struct ch *ch, unsigned char *buf, size_t i,
		      uint64_t offset, uint64_t filesz)
{
	unsigned char *p = buf + ch->phoff + i * ch->phentsize;

	if (ch->is64) {
		st(ch, p + 8, 8, offset);
		st(ch, p + 32, 8, filesz);
	} else {
		st(ch, p + 4, 4, offset);
		st(ch, p + 16, 4, filesz);
	}
}

void ch_put_phdr_vaddr(const struct ch *ch, unsigned char *buf, size_t i,
		       uint64_t vaddr, uint64_t memsz)
{
	unsigned char *p = buf + ch->phoff + i * ch->phentsize;

	if (ch->is64) {
		st(ch, p + 16, 8, vaddr);
		st(ch, p + 40, 8, memsz);
	} else {
		st(ch, p + 8, 4, vaddr);
		st(ch, p + 20, 4, memsz);
	}
}

void ch_put_shoff(const struct ch *ch, unsigned char *buf, uint64_t shoff,
		  uint16_t shnum, uint16_t shstrndx)
{
	if (ch->is64) {
		st(ch, buf + 40, 8, shoff);
		st(ch, buf + 60, 2, shnum);
		st(ch, buf + 62, 2, shstrndx);
	} else {
		st(ch, buf + 32, 4, shoff);
		st(ch, buf + 48, 2, shnum);
		st(ch, buf + 50, 2, shstrndx);
	}
}

/* Section 0 as the kernel writes it for PN_XNUM (fill_extnum_info()). */
size_t ch_xnum_shdr(const struct ch *ch, unsigned char *p)
{
	size_t size = ch->is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);

	memset(p, 0, size);
	if (ch->is64) {
		st(ch, p + 32, 8, ch->shnum); /* sh_size = e_shnum */
		st(ch, p + 40, 4, ch->shstrndx);
		st(ch, p + 44, 4, ch->phnum);
	} else {
		st(ch, p + 20, 4, ch->shnum);
		st(ch, p + 24, 4, ch->shstrndx);
		st(ch, p + 28, 4, ch->phnum);
	}
	return size;
}

static struct kcore_error *fmt_error(struct ch *ch, uint64_t off,
				     const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static struct kcore_error *fmt_error(struct ch *ch, uint64_t off,
				     const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return kcore_error_create_at(KCORE_ERR_FORMAT, 0, ch->in_name, off,
				     "%s", msg);
}

struct kcore_error *ch_read_headers(struct ch *ch)
{
	struct kcore_elf_ehdr eh;
	struct kcore_error *err;
	size_t ehsize, phend;
	uint64_t first_data = UINT64_MAX, notes_end = 0;

	err = need_prefix(ch, EI_NIDENT, "ELF identification");
	if (err)
		return err;
	err = kcore_elf_check_ident(ch->prefix, EI_NIDENT, false, ch->in_name);
	if (err)
		return err;
	ch->is64 = ch->prefix[EI_CLASS] == ELFCLASS64;
	ehsize = kcore_elf_ehdr_size(ch->is64);
	err = need_prefix(ch, ehsize, "ELF header");
	if (err)
		return err;
	kcore_elf_decode_ehdr(ch->prefix, &eh);
	if (eh.type != ET_CORE)
		return fmt_error(ch, 16, "not an ELF core (e_type %u)",
				 eh.type);
	ch->big = eh.big;
	ch->machine = eh.machine;
	ch->phoff = eh.phoff;
	ch->shoff = eh.shoff;
	ch->phentsize = eh.phentsize;
	ch->phnum = eh.phnum;
	ch->shentsize = eh.shentsize;
	ch->shnum = eh.shnum;
	ch->shstrndx = eh.shstrndx;
	if (ch->phentsize != kcore_elf_phdr_size(ch->is64))
		return fmt_error(ch, kcore_elf_phentsize_at(ch->is64),
				 "e_phentsize %u is not the size of a program "
				 "header",
				 ch->phentsize);
	if (ch->phnum == 0)
		return fmt_error(ch, kcore_elf_phnum_at(ch->is64),
				 "the core has no program headers");
	if (ch->phoff < ehsize || ch->phoff > MAX_PREFIX)
		return fmt_error(ch, kcore_elf_phoff_at(ch->is64),
				 "e_phoff 0x%" PRIx64 " is not after the ELF "
				 "header",
				 ch->phoff);
	if (ch->phnum == PN_XNUM) {
		/*
		 * More than 65534 segments: the real count is in section
		 * 0, which the kernel writes after the data.  The notes
		 * (the first program header) follow the program headers
		 * directly, so their offset gives the count.
		 */
		struct ch_phdr first;

		ch->xnum = true;
		err = need_prefix(ch, ch->phoff + ch->phentsize,
				  "first program header");
		if (err)
			return err;
		get_phdr(ch, ch->prefix + ch->phoff, &first);
		if (first.type != PT_NOTE || first.offset <= ch->phoff ||
		    (first.offset - ch->phoff) % ch->phentsize)
			return fmt_error(ch, ch->phoff,
					 "PN_XNUM core whose first program "
					 "header is not the notes after the "
					 "program headers");
		ch->phnum = (first.offset - ch->phoff) / ch->phentsize;
	}
	phend = ch->phoff + ch->phnum * ch->phentsize;
	err = need_prefix(ch, phend, "program headers");
	if (err)
		return err;
	ch->ph = calloc(ch->phnum, sizeof(*ch->ph));
	ch->caps = calloc(ch->phnum, sizeof(*ch->caps));
	ch->order = calloc(ch->phnum, sizeof(*ch->order));
	if (!ch->ph || !ch->caps || !ch->order)
		return &kcore_error_nomem;
	ch->expected = phend;
	for (size_t i = 0; i < ch->phnum; i++) {
		struct ch_phdr *p = &ch->ph[i];
		uint64_t off = ch->phoff + i * ch->phentsize, end;

		get_phdr(ch, ch->prefix + off, p);
		if (__builtin_add_overflow(p->offset, p->filesz, &end))
			return fmt_error(ch, off,
					 "program header %zu: offset + size "
					 "overflows",
					 i);
		if (p->type == PT_NOTE && p->filesz)
			notes_end = end > notes_end ? end : notes_end;
		if (p->type == PT_LOAD && p->filesz) {
			/* The kernel writes segments in file order. */
			if (ch->norder &&
			    p->offset <
				    ch->ph[ch->order[ch->norder - 1]].offset +
					    ch->ph[ch->order[ch->norder - 1]]
						    .filesz)
				return fmt_error(ch, off,
						 "program header %zu: PT_LOAD "
						 "at 0x%" PRIx64
						 " overlaps or precedes the "
						 "previous one",
						 i, p->offset);
			ch->order[ch->norder++] = i;
			if (p->offset < first_data)
				first_data = p->offset;
		}
		if (p->filesz && end > ch->expected)
			ch->expected = end;
	}
	if (ch->shoff && ch->shnum) {
		uint64_t shend =
			ch->shoff + (uint64_t)ch->shnum * ch->shentsize;

		if (shend > ch->expected)
			ch->expected = shend;
	}
	if (first_data == UINT64_MAX)
		first_data = notes_end > phend ? notes_end : phend;
	if (notes_end > first_data)
		return fmt_error(ch, first_data,
				 "notes end at 0x%" PRIx64 ", after the first "
				 "PT_LOAD data at 0x%" PRIx64,
				 notes_end, first_data);
	if (first_data < phend)
		return fmt_error(ch, first_data,
				 "segment data at 0x%" PRIx64 " overlaps the "
				 "program headers",
				 first_data);
	ch->first_data = first_data;
	return need_prefix(ch, first_data, "notes");
}

/*
 * A cut core says so itself: our metadata note (name KCOREDUMP, the
 * key=value lines `info` and `verify` read from kcoredump's dumps) after
 * the kernel's notes, in the zeros between them and the first segment's
 * data (the kernel aligns that data to a page), and the PT_NOTE grown
 * over it.  Without room (or a PT_NOTE) the metadata alone says it.
 */
static void mark_cut(struct ch *ch)
{
	uint64_t notes_end = 0,
		 unread = ch->expected > ch->cut ? ch->expected - ch->cut : 0;
	size_t note = SIZE_MAX, need, tlen;
	char text[256];
	unsigned char *p;

	for (size_t i = 0; i < ch->phnum; i++) {
		const struct ch_phdr *ph = &ch->ph[i];

		if (ph->type == PT_NOTE &&
		    ph->offset + ph->filesz > notes_end) {
			notes_end = ph->offset + ph->filesz;
			note = i;
		}
	}
	if (note == SIZE_MAX || notes_end % 4 || ch->cut < ch->first_data)
		return;
	tlen = (size_t)snprintf(text, sizeof(text),
				"writer=kcoredump core-handler\n"
				"source_incomplete=1\n"
				"truncation_reason=%s\n"
				"bytes_unreadable=%" PRIu64 "\n"
				"unreadable_ranges=%u\n",
				kcore_ch_reason_name(ch->res->reason), unread,
				ch->res->segments_cut ? ch->res->segments_cut
						      : 1) +
	       1;
	if (tlen > sizeof(text))
		return;
	need = 12 + 12 + ((tlen + 3) & ~(size_t)3);
	if (notes_end > ch->first_data || ch->first_data - notes_end < need ||
	    ch->first_data > ch->prefix_len)
		return;
	p = ch->prefix + notes_end;
	for (size_t i = 0; i < need; i++)
		if (p[i])
			return; /* not the zeros of the alignment */
	st(ch, p, 4, sizeof(KCORE_META_NOTE_NAME));
	st(ch, p + 4, 4, tlen);
	st(ch, p + 8, 4, KCORE_META_NOTE_TYPE);
	memcpy(p + 12, KCORE_META_NOTE_NAME, sizeof(KCORE_META_NOTE_NAME));
	memcpy(p + 24, text, tlen);
	ch_put_phdr_file(ch, ch->prefix, note, ch->ph[note].offset,
			 ch->ph[note].filesz + need);
	ch->res->cut_marked = true;
}

/*
 * The copy stopped at ch->cut: shorten the segment there, empty the later
 * ones, and move or drop the section headers, in ch->prefix; then mark
 * the core incomplete (mark_cut).
 */
void ch_cut_headers(struct ch *ch, uint64_t *ret_size)
{
	uint64_t cut = ch->cut, size = cut;

	for (size_t i = 0; i < ch->phnum; i++) {
		struct ch_phdr *p = &ch->ph[i];

		/* Readers check p_offset even when p_filesz is 0. */
		if (p->offset >= cut) {
			ch_put_phdr_file(ch, ch->prefix, i, cut, 0);
			ch->res->segments_cut += p->filesz != 0;
		} else if (p->offset + p->filesz > cut) {
			ch_put_phdr_file(ch, ch->prefix, i, p->offset,
					 cut - p->offset);
			ch->res->segments_cut++;
		}
	}
	if (ch->shoff &&
	    ch->shoff + (uint64_t)ch->shnum * ch->shentsize > cut) {
		if (ch->xnum) {
			/* Section 0 carries the segment count: keep it. */
			size = (cut + 7) & ~7ull;
			ch_put_shoff(ch, ch->prefix, size, 1, ch->shstrndx);
			size += ch->is64 ? sizeof(Elf64_Shdr)
					 : sizeof(Elf32_Shdr);
		} else {
			ch_put_shoff(ch, ch->prefix, 0, 0, 0);
		}
	}
	mark_cut(ch);
	*ret_size = size;
}
