// SPDX-License-Identifier: MIT
/*
 * The synthetic ELF core images non-ELF sources are presented as, and the
 * small helpers their readers share (notes, machine names, reading the
 * real input file).
 */
#include <elf.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "elf-parse.h"
#include "bytes.h"
#include "elfcore.h"
#include "kcoredump/vmcoreinfo.h"
#include "read.h"

struct kcore_error *
kcore_image_build(uint16_t machine, const unsigned char *notes,
		  size_t notes_len, struct kcore_image_load *loads,
		  size_t nloads, uint64_t align, unsigned char **ret,
		  size_t *ret_size, uint64_t *ret_end)
{
	size_t phnum = nloads + 1;
	bool xnum = phnum >= PN_XNUM;
	size_t phoff = sizeof(Elf64_Ehdr);
	size_t note_off = phoff + phnum * sizeof(Elf64_Phdr);
	size_t shoff = (note_off + notes_len + 7) & ~(size_t)7;
	size_t size = shoff + (xnum ? sizeof(Elf64_Shdr) : 0);
	uint64_t pos;
	unsigned char *img;

	if (nloads > (SIZE_MAX - 4096) / sizeof(Elf64_Phdr) / 2)
		return &kcore_error_nomem;
	img = calloc(1, size);
	if (!img)
		return &kcore_error_nomem;
	kcore_elfcore_put_ehdr(img, 64, machine, phnum, shoff);
	/* These images always named the section header size. */
	kcore_store_le(img + offsetof(Elf64_Ehdr, e_shentsize),
		       sizeof(Elf64_Shdr), 2);
	if (notes_len)
		memcpy(img + note_off, notes, notes_len);
	kcore_elfcore_put_phdr(img, 64, 0,
			       &(struct kcore_elfcore_phdr){
				       .type = PT_NOTE,
				       .offset = note_off,
				       .filesz = notes_len,
				       .memsz = notes_len,
				       .align = 4,
			       });
	if (!align)
		align = 1;
	pos = (size + align - 1) / align * align;
	for (size_t i = 0; i < nloads; i++) {
		loads[i].offset = pos;
		kcore_elfcore_put_phdr(img, 64, i + 1,
				       &(struct kcore_elfcore_phdr){
					       .type = PT_LOAD,
					       .flags = PF_R | PF_W | PF_X,
					       .offset = pos,
					       .vaddr = loads[i].vaddr,
					       .paddr = loads[i].paddr,
					       .filesz = loads[i].size,
					       .memsz = loads[i].size,
				       });
		pos += loads[i].size;
	}
	*ret = img;
	*ret_size = size;
	*ret_end = nloads ? pos : size;
	return NULL;
}

struct kcore_error *kcore_note_append(unsigned char **buf, size_t *len,
				      const char *name, uint32_t type,
				      const void *desc, size_t desc_len)
{
	size_t need = kcore_elfcore_note_size(name, desc_len);
	unsigned char *p = realloc(*buf, *len + need);

	if (!p)
		return &kcore_error_nomem;
	kcore_elfcore_put_note(p + *len, name, type, desc, desc_len);
	*buf = p;
	*len += need;
	return NULL;
}

const unsigned char *kcore_note_find(const unsigned char *notes, size_t len,
				     const char *name, size_t *ret_len)
{
	struct kcore_elf_notes it;
	struct kcore_elf_note n;

	kcore_elf_notes_init(&it, notes, len, false, 4, true);
	while (kcore_elf_notes_next(&it, &n) == KCORE_ELF_NOTE_OK)
		if (kcore_elf_note_is(&n, name)) {
			*ret_len = n.descsz;
			return n.desc;
		}
	return NULL;
}

uint16_t kcore_machine_from_uts(const char *machine)
{
	/* Machines without an architecture table, named all the same. */
	static const struct {
		const char *name;
		uint16_t em;
	} table[] = {
		{ "ppc64le", EM_PPC64 },	 { "riscv64", EM_RISCV },
		{ "loongarch64", EM_LOONGARCH }, { "s390x", EM_S390 },
		{ "ppc64", EM_PPC64 },
	};
	const struct kcore_arch *arch = kcore_arch_by_name(machine);

	if (arch)
		return arch->machine;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(machine, table[i].name) == 0)
			return table[i].em;
	return EM_NONE;
}

const char *kcore_machine_str(uint16_t machine, char *buf, size_t size)
{
	const struct kcore_arch *arch = kcore_arch_lookup(machine);

	if (arch)
		return arch->name;
	snprintf(buf, size, "e_machine %u", machine);
	return buf;
}

const char *kcore_machine_name(uint16_t machine)
{
	const struct kcore_arch *arch = kcore_arch_lookup(machine);

	return arch ? arch->name : NULL;
}

uint16_t kcore_machine_from_name(const char *name)
{
	const struct kcore_arch *arch = kcore_arch_by_name(name);

	return arch ? arch->machine : EM_NONE;
}

bool kcore_vmcoreinfo_text_page_offset(const char *text, size_t len,
				       uint64_t *ret)
{
	struct kcore_vmcoreinfo *vi;
	bool found;

	if (kcore_vmcoreinfo_parse(text, len, &vi))
		return false;
	found = kcore_vmcoreinfo_get_u64(vi, "NUMBER(PAGE_OFFSET)", ret) ||
		kcore_vmcoreinfo_get_u64(vi, "PAGE_OFFSET", ret);
	kcore_vmcoreinfo_destroy(vi);
	return found;
}

struct kcore_error *kcore_fmt_read(struct kcore_source *src, void *buf,
				   size_t len, uint64_t offset)
{
	return kcore_pread_all(src->io, src->fd, src->path, buf, len, offset,
			       NULL);
}
