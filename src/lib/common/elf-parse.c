// SPDX-License-Identifier: MIT
/*
 * The one ELF parser and note walker (elf-parse.h): headers, program
 * headers and notes decoded from the caller's bytes by class and byte
 * order, every size checked in 64 bits before anything is trusted.
 */
#include <elf.h>
#include <inttypes.h>
#include <string.h>

#include "elf-parse.h"
#include "bytes.h"
#include "kcoredump/error.h"
#include "kcoredump/source.h"

size_t kcore_elf_ehdr_size(bool is64)
{
	return is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
}

size_t kcore_elf_phdr_size(bool is64)
{
	return is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
}

size_t kcore_elf_shdr_size(bool is64)
{
	return is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
}

unsigned kcore_elf_phoff_at(bool is64)
{
	return is64 ? offsetof(Elf64_Ehdr, e_phoff)
		    : offsetof(Elf32_Ehdr, e_phoff);
}

unsigned kcore_elf_phentsize_at(bool is64)
{
	return is64 ? offsetof(Elf64_Ehdr, e_phentsize)
		    : offsetof(Elf32_Ehdr, e_phentsize);
}

unsigned kcore_elf_phnum_at(bool is64)
{
	return is64 ? offsetof(Elf64_Ehdr, e_phnum)
		    : offsetof(Elf32_Ehdr, e_phnum);
}

struct kcore_error *kcore_elf_check_ident(const unsigned char *buf, size_t len,
					  bool version, const char *path)
{
	if (len < SELFMAG || memcmp(buf, ELFMAG, SELFMAG) != 0)
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, path, 0,
					     "not an ELF file at offset 0x0: "
					     "bad magic number");
	if (len <= EI_CLASS ||
	    (buf[EI_CLASS] != ELFCLASS32 && buf[EI_CLASS] != ELFCLASS64))
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, path, EI_CLASS,
			"invalid ELF class %u at offset 0x%x",
			len > EI_CLASS ? buf[EI_CLASS] : 0, EI_CLASS);
	if (len <= EI_DATA ||
	    (buf[EI_DATA] != ELFDATA2LSB && buf[EI_DATA] != ELFDATA2MSB))
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, path, EI_DATA,
			"invalid ELF byte order %u at offset 0x%x",
			len > EI_DATA ? buf[EI_DATA] : 0, EI_DATA);
	if (version && (len <= EI_VERSION || buf[EI_VERSION] != EV_CURRENT))
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, path, EI_VERSION,
			"unknown ELF version %u at offset 0x%x",
			len > EI_VERSION ? buf[EI_VERSION] : 0, EI_VERSION);
	return NULL;
}

/* A field of the header or a program header: at its place in the 64-bit
 * layout (o64) or the 32-bit one (o32), its size (s64, s32). */
static uint64_t field(const unsigned char *p, bool is64, bool big, unsigned o64,
		      unsigned s64, unsigned o32, unsigned s32)
{
	return is64 ? kcore_load(p + o64, s64, big)
		    : kcore_load(p + o32, s32, big);
}

#define EH(f)                                                        \
	field(buf, is64, big, offsetof(Elf64_Ehdr, f),               \
	      sizeof(((Elf64_Ehdr *)0)->f), offsetof(Elf32_Ehdr, f), \
	      sizeof(((Elf32_Ehdr *)0)->f))
#define PH(f)                                                        \
	field(p, is64, big, offsetof(Elf64_Phdr, f),                 \
	      sizeof(((Elf64_Phdr *)0)->f), offsetof(Elf32_Phdr, f), \
	      sizeof(((Elf32_Phdr *)0)->f))

void kcore_elf_decode_ehdr(const unsigned char *buf, struct kcore_elf_ehdr *ret)
{
	bool is64 = buf[EI_CLASS] == ELFCLASS64;
	bool big = buf[EI_DATA] == ELFDATA2MSB;

	*ret = (struct kcore_elf_ehdr){
		.is64 = is64,
		.big = big,
		.type = (uint16_t)EH(e_type),
		.machine = (uint16_t)EH(e_machine),
		.flags = (uint32_t)EH(e_flags),
		.phoff = EH(e_phoff),
		.shoff = EH(e_shoff),
		.ehsize = (uint16_t)EH(e_ehsize),
		.phentsize = (uint16_t)EH(e_phentsize),
		.phnum = (uint16_t)EH(e_phnum),
		.shentsize = (uint16_t)EH(e_shentsize),
		.shnum = (uint16_t)EH(e_shnum),
		.shstrndx = (uint16_t)EH(e_shstrndx),
	};
}

void kcore_elf_decode_phdr(bool is64, bool big, const unsigned char *p,
			   struct kcore_elf_phdr *ret)
{
	*ret = (struct kcore_elf_phdr){
		.type = (uint32_t)PH(p_type),
		.flags = (uint32_t)PH(p_flags),
		.offset = PH(p_offset),
		.vaddr = PH(p_vaddr),
		.paddr = PH(p_paddr),
		.filesz = PH(p_filesz),
		.memsz = PH(p_memsz),
		.align = PH(p_align),
	};
}

uint32_t kcore_elf_xnum_count(const struct kcore_elf_ehdr *eh,
			      const unsigned char *shdr0)
{
	return (uint32_t)kcore_load(
		shdr0 + (eh->is64 ? offsetof(Elf64_Shdr, sh_info)
				  : offsetof(Elf32_Shdr, sh_info)),
		4, eh->big);
}

bool kcore_elf_range_past(uint64_t off, uint64_t size, uint64_t limit)
{
	uint64_t end;

	return __builtin_add_overflow(off, size, &end) || end > limit;
}

struct kcore_error *kcore_elf_check_phdr_table(const struct kcore_elf_ehdr *eh,
					       uint64_t phnum,
					       uint64_t file_size,
					       const char *path)
{
	uint64_t table;

	if (!__builtin_mul_overflow(phnum, (uint64_t)eh->phentsize, &table) &&
	    !kcore_elf_range_past(eh->phoff, table, file_size))
		return NULL;
	if (file_size == UINT64_MAX)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, path, eh->phoff,
			"program header table (%" PRIu64 " entries at offset "
			"0x%" PRIx64 ") overflows",
			phnum, eh->phoff);
	return kcore_error_create_at(
		KCORE_ERR_FORMAT, 0, path, eh->phoff,
		"program header table (%" PRIu64 " entries at offset 0x%" PRIx64
		") extends past the end of the file (size 0x%" PRIx64 ")",
		phnum, eh->phoff, file_size);
}

void kcore_elf_notes_init(struct kcore_elf_notes *it, const unsigned char *buf,
			  uint64_t len, bool big, unsigned align, bool padded)
{
	*it = (struct kcore_elf_notes){
		.buf = buf,
		.len = len,
		.big = big,
		.align = align == 8 ? 8 : 4,
		.padded = padded,
	};
}

static uint64_t align_to(uint64_t v, unsigned align)
{
	return (v + align - 1) & ~(uint64_t)(align - 1);
}

enum kcore_elf_note_next kcore_elf_notes_next(struct kcore_elf_notes *it,
					      struct kcore_elf_note *ret)
{
	uint64_t left = it->len - it->pos, name, desc, need, next;
	const unsigned char *h;

	memset(ret, 0, sizeof(*ret));
	ret->offset = it->pos;
	if (!left) /* buf may be NULL then */
		return KCORE_ELF_NOTE_END;
	if (left < 12)
		return KCORE_ELF_NOTE_SHORT_HEADER;
	h = it->buf + it->pos;
	ret->namesz = (uint32_t)kcore_load(h, 4, it->big);
	ret->descsz = (uint32_t)kcore_load(h + 4, 4, it->big);
	ret->type = (uint32_t)kcore_load(h + 8, 4, it->big);
	/* All in 64 bits: namesz and descsz are 32-bit, no sum overflows. */
	name = it->pos + 12;
	desc = align_to(name + ret->namesz, it->align);
	next = align_to(desc + ret->descsz, it->align);
	need = it->padded ? next : desc + ret->descsz;
	if (desc > it->len || need > it->len)
		return KCORE_ELF_NOTE_OVERRUN;
	ret->name = it->buf + name;
	ret->desc = it->buf + desc;
	it->pos = next < it->len ? next : it->len;
	return KCORE_ELF_NOTE_OK;
}

void kcore_elf_note_fill(const struct kcore_elf_note *n, uint64_t base,
			 unsigned segment, char *name, size_t size,
			 struct kcore_note *ret)
{
	size_t len = n->namesz;

	if (len && n->name[len - 1] == '\0')
		len--;
	if (len >= size)
		len = size - 1;
	memcpy(name, n->name, len);
	name[len] = '\0';
	*ret = (struct kcore_note){
		.name = name,
		.type = n->type,
		.desc = n->desc,
		.descsz = n->descsz,
		.offset = base + n->offset,
		.segment = segment,
	};
}

bool kcore_elf_note_is(const struct kcore_elf_note *note, const char *name)
{
	size_t n = strlen(name) + 1;

	return note->namesz == n && memcmp(note->name, name, n) == 0;
}

const unsigned char *kcore_elf_find_note(const unsigned char *buf, size_t len,
					 const char *name, uint32_t type,
					 size_t min_desc, size_t max_desc,
					 size_t *ret_descsz)
{
	struct kcore_elf_ehdr eh;
	size_t phent;

	if (len < sizeof(Elf64_Ehdr) || memcmp(buf, ELFMAG, SELFMAG) != 0)
		return NULL;
	kcore_elf_decode_ehdr(buf, &eh);
	phent = kcore_elf_phdr_size(eh.is64);
	if (eh.phentsize != phent || eh.phoff > len ||
	    eh.phnum > (len - eh.phoff) / phent)
		return NULL;
	for (size_t i = 0; i < eh.phnum; i++) {
		struct kcore_elf_phdr ph;
		struct kcore_elf_notes it;
		struct kcore_elf_note n;

		kcore_elf_decode_phdr(eh.is64, eh.big,
				      buf + eh.phoff + i * phent, &ph);
		/* The start of the file: p_offset is the place in buf. */
		if (ph.type != PT_NOTE ||
		    kcore_elf_range_past(ph.offset, ph.filesz, len))
			continue;
		kcore_elf_notes_init(&it, buf + ph.offset, ph.filesz, eh.big, 4,
				     false);
		while (kcore_elf_notes_next(&it, &n) == KCORE_ELF_NOTE_OK)
			if (n.type == type && kcore_elf_note_is(&n, name) &&
			    n.descsz >= min_desc && n.descsz <= max_desc) {
				*ret_descsz = n.descsz;
				return n.desc;
			}
	}
	return NULL;
}
