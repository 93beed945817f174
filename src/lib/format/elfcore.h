/* SPDX-License-Identifier: MIT */
/*
 * The little-endian core header every ELF the library builds shares (ELF64;
 * ELF32 for the cores of 32-bit processes, elf_class 32):
 * the ELF header, the program headers right after it and, from PN_XNUM
 * program headers on, section header 0 holding the real count; and the
 * notes.  One builder for the dump writer (write-elf.c, write.c's notes),
 * the kernel view (view.c), the live process image (process.c, its notes
 * in process-notes.c) and the synthetic images non-ELF readers present
 * (read-image.c).
 */
#ifndef KCORE_FORMAT_ELFCORE_H
#define KCORE_FORMAT_ELFCORE_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kcore_elfcore_phdr {
	uint32_t type;
	uint32_t flags;
	uint64_t offset;
	uint64_t vaddr;
	uint64_t paddr;
	uint64_t filesz;
	uint64_t memsz;
	uint64_t align;
};

/* True when phnum program headers need section header 0 (PN_XNUM). */
static inline bool kcore_elfcore_xnum(size_t phnum)
{
	return phnum >= PN_XNUM;
}

/*
 * Bytes of the ELF header, phnum program headers and, when
 * kcore_elfcore_xnum(phnum), section header 0 right after them.
 */
size_t kcore_elfcore_headers_len(unsigned elf_class, size_t phnum);

/*
 * Write the ELF header of an ET_CORE of elf_class (32 or 64) for machine
 * with phnum program headers right after it into out.  Past PN_XNUM, section
 * header 0 (sh_info = phnum) is written at shoff, or right after the
 * program headers when shoff is 0; out must hold it.
 */
void kcore_elfcore_put_ehdr(unsigned char *out, unsigned elf_class,
			    uint16_t machine, size_t phnum, size_t shoff);

/* Write program header index (0 = the first) of a header built above.  In
 * ELF32 a field is its low 32 bits: callers check with
 * kcore_elfcore_phdr_fits() first. */
void kcore_elfcore_put_phdr(unsigned char *out, unsigned elf_class,
			    size_t index, const struct kcore_elfcore_phdr *ph);

/* Whether ph's offset, address and sizes fit the fields of elf_class. */
bool kcore_elfcore_phdr_fits(unsigned elf_class,
			     const struct kcore_elfcore_phdr *ph);

/* Offset of e_flags in the ELF header of elf_class. */
size_t kcore_elfcore_flags_offset(unsigned elf_class);

/* A note: n_namesz, n_descsz, n_type, then the name with its NUL and the
 * descriptor, each padded to 4 bytes.  Its bytes, and where its
 * descriptor starts in it. */
size_t kcore_elfcore_note_size(const char *name, size_t descsz);
size_t kcore_elfcore_note_desc_offset(const char *name);
/* Write the note at out, its padding zeros (desc NULL: descsz zeros); the
 * byte after it. */
unsigned char *kcore_elfcore_put_note(unsigned char *out, const char *name,
				      uint32_t type, const void *desc,
				      size_t descsz);

#endif
