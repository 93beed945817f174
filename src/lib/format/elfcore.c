// SPDX-License-Identifier: MIT
/* The ELF core header builder, ELF64 and ELF32 (see elfcore.h). */
#include <string.h>

#include "bytes.h"
#include "elfcore.h"

size_t kcore_elfcore_headers_len(unsigned elf_class, size_t phnum)
{
	if (elf_class == 32)
		return sizeof(Elf32_Ehdr) + phnum * sizeof(Elf32_Phdr) +
		       (kcore_elfcore_xnum(phnum) ? sizeof(Elf32_Shdr) : 0);
	return sizeof(Elf64_Ehdr) + phnum * sizeof(Elf64_Phdr) +
	       (kcore_elfcore_xnum(phnum) ? sizeof(Elf64_Shdr) : 0);
}

size_t kcore_elfcore_flags_offset(unsigned elf_class)
{
	return elf_class == 32 ? offsetof(Elf32_Ehdr, e_flags)
			       : offsetof(Elf64_Ehdr, e_flags);
}

/* ELF32 and ELF64 name the same fields at other offsets and widths. */
#define EHDR_PUT(c, out, field, v)                                            \
	((c) == 32 ? kcore_store_le((out) + offsetof(Elf32_Ehdr, field), (v), \
				    sizeof(((Elf32_Ehdr *)0)->field))         \
		   : kcore_store_le((out) + offsetof(Elf64_Ehdr, field), (v), \
				    sizeof(((Elf64_Ehdr *)0)->field)))
#define PHDR_PUT(c, p, field, v)                                            \
	((c) == 32 ? kcore_store_le((p) + offsetof(Elf32_Phdr, field), (v), \
				    sizeof(((Elf32_Phdr *)0)->field))       \
		   : kcore_store_le((p) + offsetof(Elf64_Phdr, field), (v), \
				    sizeof(((Elf64_Phdr *)0)->field)))

void kcore_elfcore_put_ehdr(unsigned char *out, unsigned elf_class,
			    uint16_t machine, size_t phnum, size_t shoff)
{
	bool xnum = kcore_elfcore_xnum(phnum);
	bool c32 = elf_class == 32;
	size_t ehsize = c32 ? sizeof(Elf32_Ehdr) : sizeof(Elf64_Ehdr);
	size_t phsize = c32 ? sizeof(Elf32_Phdr) : sizeof(Elf64_Phdr);
	size_t shsize = c32 ? sizeof(Elf32_Shdr) : sizeof(Elf64_Shdr);
	unsigned c = c32 ? 32 : 64;

	memset(out, 0, ehsize);
	memcpy(out, ELFMAG, SELFMAG);
	out[EI_CLASS] = c32 ? ELFCLASS32 : ELFCLASS64;
	out[EI_DATA] = ELFDATA2LSB;
	out[EI_VERSION] = EV_CURRENT;
	out[EI_OSABI] = ELFOSABI_NONE;
	if (xnum && !shoff)
		shoff = ehsize + phnum * phsize;
	EHDR_PUT(c, out, e_type, ET_CORE);
	EHDR_PUT(c, out, e_machine, machine);
	EHDR_PUT(c, out, e_version, EV_CURRENT);
	EHDR_PUT(c, out, e_phoff, ehsize);
	EHDR_PUT(c, out, e_shoff, xnum ? shoff : 0);
	EHDR_PUT(c, out, e_ehsize, ehsize);
	EHDR_PUT(c, out, e_phentsize, phsize);
	EHDR_PUT(c, out, e_phnum, xnum ? PN_XNUM : phnum);
	EHDR_PUT(c, out, e_shentsize, xnum ? shsize : 0);
	EHDR_PUT(c, out, e_shnum, xnum ? 1 : 0);
	if (xnum) {
		memset(out + shoff, 0, shsize);
		kcore_store_le(out + shoff +
				       (c32 ? offsetof(Elf32_Shdr, sh_info)
					    : offsetof(Elf64_Shdr, sh_info)),
			       phnum, 4);
	}
}

bool kcore_elfcore_phdr_fits(unsigned elf_class,
			     const struct kcore_elfcore_phdr *ph)
{
	return elf_class != 32 ||
	       (ph->offset <= UINT32_MAX && ph->vaddr <= UINT32_MAX &&
		ph->paddr <= UINT32_MAX && ph->filesz <= UINT32_MAX &&
		ph->memsz <= UINT32_MAX && ph->align <= UINT32_MAX &&
		ph->offset + ph->filesz <= UINT32_MAX);
}

void kcore_elfcore_put_phdr(unsigned char *out, unsigned elf_class,
			    size_t index, const struct kcore_elfcore_phdr *ph)
{
	unsigned c = elf_class == 32 ? 32 : 64;
	unsigned char *p =
		c == 32 ? out + sizeof(Elf32_Ehdr) + index * sizeof(Elf32_Phdr)
			: out + sizeof(Elf64_Ehdr) + index * sizeof(Elf64_Phdr);

	PHDR_PUT(c, p, p_type, ph->type);
	PHDR_PUT(c, p, p_flags, ph->flags);
	PHDR_PUT(c, p, p_offset, ph->offset);
	PHDR_PUT(c, p, p_vaddr, ph->vaddr);
	PHDR_PUT(c, p, p_paddr, ph->paddr);
	PHDR_PUT(c, p, p_filesz, ph->filesz);
	PHDR_PUT(c, p, p_memsz, ph->memsz);
	PHDR_PUT(c, p, p_align, ph->align);
}

/* A note's name and descriptor are each padded to 4 bytes. */
static size_t pad4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

size_t kcore_elfcore_note_desc_offset(const char *name)
{
	return 12 + pad4(strlen(name) + 1);
}

size_t kcore_elfcore_note_size(const char *name, size_t descsz)
{
	return kcore_elfcore_note_desc_offset(name) + pad4(descsz);
}

unsigned char *kcore_elfcore_put_note(unsigned char *out, const char *name,
				      uint32_t type, const void *desc,
				      size_t descsz)
{
	size_t namesz = strlen(name) + 1;
	size_t at = kcore_elfcore_note_desc_offset(name);
	size_t len = kcore_elfcore_note_size(name, descsz);

	memset(out, 0, len);
	kcore_store_le(out, (uint32_t)namesz, 4);
	kcore_store_le(out + 4, (uint32_t)descsz, 4);
	kcore_store_le(out + 8, type, 4);
	memcpy(out + 12, name, namesz);
	if (desc && descsz)
		memcpy(out + at, desc, descsz);
	return out + len;
}
