/* SPDX-License-Identifier: MIT */
/*
 * The one ELF parser and note walker (elf-parse.c): the ELF header,
 * program headers and notes of either class and byte order, decoded from
 * bytes the caller holds, every offset and size checked before it is
 * used.  The readers (format/), verify (dump/), the stream source
 * (stream/) and the crash handler (corehandler/) all parse through it;
 * how they fetch the bytes (pread, a decompressed stream, the kernel's
 * pipe) stays theirs.  format/elfcore.c is the one ELF core builder.
 */
#ifndef KCOREDUMP_ELF_PARSE_H
#define KCOREDUMP_ELF_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kcore_error;

/* An ELF header, decoded for its class and byte order. */
struct kcore_elf_ehdr {
	bool is64, big;
	uint16_t type, machine;
	uint32_t flags;
	uint64_t phoff, shoff;
	uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};

/* A program header, decoded. */
struct kcore_elf_phdr {
	uint32_t type, flags;
	uint64_t offset, vaddr, paddr, filesz, memsz, align;
};

/* The sizes of the header, a program header and a section header. */
size_t kcore_elf_ehdr_size(bool is64);
size_t kcore_elf_phdr_size(bool is64);
size_t kcore_elf_shdr_size(bool is64);
/* Where e_phoff, e_phentsize and e_phnum are in the header (for errors). */
unsigned kcore_elf_phoff_at(bool is64);
unsigned kcore_elf_phentsize_at(bool is64);
unsigned kcore_elf_phnum_at(bool is64);

/*
 * Check the identification of the len bytes at buf (a file's first):
 * the magic number, the class, the byte order and, with version, the
 * version.  On error a one-line message naming path, the offset of the
 * bad byte and what is wrong.
 */
struct kcore_error *kcore_elf_check_ident(const unsigned char *buf, size_t len,
					  bool version, const char *path);
/* Decode the header at buf (kcore_elf_ehdr_size() bytes of the class its
 * e_ident[EI_CLASS] names: 64-bit when ELFCLASS64, else 32-bit). */
void kcore_elf_decode_ehdr(const unsigned char *buf,
			   struct kcore_elf_ehdr *ret);
/* Decode the program header at p of a file of this class and byte order. */
void kcore_elf_decode_phdr(bool is64, bool big, const unsigned char *p,
			   struct kcore_elf_phdr *ret);
/* The real program header count of a PN_XNUM file: sh_info of its section
 * header 0, at shdr0. */
uint32_t kcore_elf_xnum_count(const struct kcore_elf_ehdr *eh,
			      const unsigned char *shdr0);
/*
 * Check that phnum program headers of eh->phentsize bytes at eh->phoff
 * end within file_size bytes, without overflow (UINT64_MAX: the size is
 * not known, only overflow is checked).  On error a one-line message
 * naming path, e_phoff and the file's size.
 */
struct kcore_error *kcore_elf_check_phdr_table(const struct kcore_elf_ehdr *eh,
					       uint64_t phnum,
					       uint64_t file_size,
					       const char *path);
/* Whether the file range off+size overflows, or ends past limit. */
bool kcore_elf_range_past(uint64_t off, uint64_t size, uint64_t limit);

/*
 * The note walker: the notes of a PT_NOTE segment's len bytes at buf.
 * Each note's name starts 12 bytes after its header and its descriptor
 * and the next note at the alignment (4, or 8 for a segment of p_align
 * 8: GNU property notes), counted from buf.  Sizes are checked in 64
 * bits, so no namesz or descsz overflows.
 */
struct kcore_elf_notes {
	const unsigned char *buf;
	uint64_t len, pos;
	bool big;
	unsigned align;
	/* The last note's descriptor must be padded to the alignment within
	 * len (libelf's rule); without, only the descriptor must fit. */
	bool padded;
};

struct kcore_elf_note {
	uint32_t namesz, descsz, type;
	const unsigned char *name; /* namesz bytes, not always NUL-ended */
	const unsigned char *desc; /* descsz bytes */
	uint64_t offset;	   /* of its header, from buf */
};

enum kcore_elf_note_next {
	KCORE_ELF_NOTE_END,	     /* no bytes left */
	KCORE_ELF_NOTE_OK,	     /* *ret is the next note */
	KCORE_ELF_NOTE_SHORT_HEADER, /* fewer than 12 bytes left */
	/* The name or descriptor (namesz and descsz in *ret) runs past the
	 * end. */
	KCORE_ELF_NOTE_OVERRUN,
};

void kcore_elf_notes_init(struct kcore_elf_notes *it, const unsigned char *buf,
			  uint64_t len, bool big, unsigned align, bool padded);
/* The next note; on a malformed one, ret->offset says where it is and
 * the walk stays there. */
enum kcore_elf_note_next kcore_elf_notes_next(struct kcore_elf_notes *it,
					      struct kcore_elf_note *ret);
struct kcore_note;
/*
 * The note as the decoders take it: its name copied into name (size
 * bytes; a final NUL in namesz dropped, cut to fit, NUL-terminated), its
 * offset in the file (base: the PT_NOTE's p_offset) and segment index.
 */
void kcore_elf_note_fill(const struct kcore_elf_note *n, uint64_t base,
			 unsigned segment, char *name, size_t size,
			 struct kcore_note *ret);
/* Whether the note is named name (namesz covers name and its NUL). */
bool kcore_elf_note_is(const struct kcore_elf_note *note, const char *name);

/*
 * The descriptor of the first note named name of type type, with
 * min_desc <= descsz <= max_desc, in the PT_NOTE segments that lie in the
 * len bytes at buf: the start of an ELF file (a mapped file's first page),
 * of either class and byte order.  NULL when there is none.
 */
const unsigned char *kcore_elf_find_note(const unsigned char *buf, size_t len,
					 const char *name, uint32_t type,
					 size_t min_desc, size_t max_desc,
					 size_t *ret_descsz);

#endif
