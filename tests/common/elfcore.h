/* SPDX-License-Identifier: MIT */
/* Building minimal x86_64 ELF cores in memory, for unit tests that need
 * what the text fixtures cannot express (faults, live-kcore paths). */
#ifndef KCOREDUMP_TESTS_ELFCORE_H
#define KCOREDUMP_TESTS_ELFCORE_H

#include <elf.h>
#include <stdint.h>
#include <string.h>

/* An ET_CORE header with phnum program headers right after it, the
 * first an empty PT_NOTE; returns the program header table. */
static inline Elf64_Phdr *kc_elfcore_header(void *image, unsigned phnum)
{
	Elf64_Ehdr *eh = image;
	Elf64_Phdr *ph = (Elf64_Phdr *)(eh + 1);

	memset(eh, 0, sizeof(*eh));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_CORE;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = (Elf64_Half)phnum;
	ph[0] = (Elf64_Phdr){ .p_type = PT_NOTE, .p_offset = 0x200 };
	return ph;
}

/* A VMCOREINFO note of the len bytes of text vi at note (its padding
 * zeroed); returns the note's size, for the PT_NOTE's p_filesz. */
static inline size_t kc_elfcore_vmcoreinfo(unsigned char *note, const char *vi,
					   size_t len)
{
	const uint32_t hdr[3] = { sizeof("VMCOREINFO"), (uint32_t)len, 0 };
	size_t size = 24 + ((len + 3) & ~(size_t)3);

	memset(note, 0, size);
	memcpy(note, hdr, sizeof(hdr));
	memcpy(note + 12, "VMCOREINFO", sizeof("VMCOREINFO"));
	memcpy(note + 24, vi, len);
	return size;
}

#endif
