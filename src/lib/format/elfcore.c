// SPDX-License-Identifier: MIT
/* The ELF64 core header builder (see elfcore.h). */
#include <string.h>

#include "elfcore.h"
#include "internal.h"

size_t kcore_elfcore_headers_len(size_t phnum)
{
	return sizeof(Elf64_Ehdr) + phnum * sizeof(Elf64_Phdr) +
	       (kcore_elfcore_xnum(phnum) ? sizeof(Elf64_Shdr) : 0);
}

void kcore_elfcore_put_ehdr(unsigned char *out, uint16_t machine, size_t phnum,
			    size_t shoff)
{
	bool xnum = kcore_elfcore_xnum(phnum);

	memset(out, 0, sizeof(Elf64_Ehdr));
	memcpy(out, ELFMAG, SELFMAG);
	out[EI_CLASS] = ELFCLASS64;
	out[EI_DATA] = ELFDATA2LSB;
	out[EI_VERSION] = EV_CURRENT;
	out[EI_OSABI] = ELFOSABI_NONE;
	if (xnum && !shoff)
		shoff = sizeof(Elf64_Ehdr) + phnum * sizeof(Elf64_Phdr);
	kcore_store_le(out + offsetof(Elf64_Ehdr, e_type), ET_CORE, 2);
	kcore_store_le(out + offsetof(Elf64_Ehdr, e_machine), machine, 2);
	kcore_store_le(out + offsetof(Elf64_Ehdr, e_version), EV_CURRENT, 4);
	kcore_store_le(out + offsetof(Elf64_Ehdr, e_phoff), sizeof(Elf64_Ehdr),
		       8);
	kcore_store_le(out + offsetof(Elf64_Ehdr, e_shoff), xnum ? shoff : 0,
		       8);
	kcore_store_le(out + offsetof(Elf64_Ehdr, e_ehsize), sizeof(Elf64_Ehdr),
		       2);
	kcore_store_le(out + offsetof(Elf64_Ehdr, e_phentsize),
		       sizeof(Elf64_Phdr), 2);
	kcore_store_le(out + offsetof(Elf64_Ehdr, e_phnum),
		       xnum ? PN_XNUM : phnum, 2);
	kcore_store_le(out + offsetof(Elf64_Ehdr, e_shentsize),
		       xnum ? sizeof(Elf64_Shdr) : 0, 2);
	kcore_store_le(out + offsetof(Elf64_Ehdr, e_shnum), xnum ? 1 : 0, 2);
	if (xnum) {
		memset(out + shoff, 0, sizeof(Elf64_Shdr));
		kcore_store_le(out + shoff + offsetof(Elf64_Shdr, sh_info),
			       phnum, 4);
	}
}

void kcore_elfcore_put_phdr(unsigned char *out, size_t index,
			    const struct kcore_elfcore_phdr *ph)
{
	unsigned char *p =
		out + sizeof(Elf64_Ehdr) + index * sizeof(Elf64_Phdr);

	kcore_store_le(p + offsetof(Elf64_Phdr, p_type), ph->type, 4);
	kcore_store_le(p + offsetof(Elf64_Phdr, p_flags), ph->flags, 4);
	kcore_store_le(p + offsetof(Elf64_Phdr, p_offset), ph->offset, 8);
	kcore_store_le(p + offsetof(Elf64_Phdr, p_vaddr), ph->vaddr, 8);
	kcore_store_le(p + offsetof(Elf64_Phdr, p_paddr), ph->paddr, 8);
	kcore_store_le(p + offsetof(Elf64_Phdr, p_filesz), ph->filesz, 8);
	kcore_store_le(p + offsetof(Elf64_Phdr, p_memsz), ph->memsz, 8);
	kcore_store_le(p + offsetof(Elf64_Phdr, p_align), ph->align, 8);
}
