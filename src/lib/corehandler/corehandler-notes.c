// SPDX-License-Identifier: MIT
/*
 * The core handler's reading of the core's notes (all hostile): the
 * threads and their stack pointers, the command's name and arguments,
 * the signal, the credentials of the exec in the auxiliary vector, the
 * mapped files and the executable among them; and the build-id note of
 * a mapped ELF file's first page.
 */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "corehandler-internal.h"
#include "elf-parse.h"

static char *dup_str(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* The thread's stack pointer, by its register's name. */
static void note_sp(struct ch *ch, const struct kcore_source *src,
		    const struct kcore_note *note)
{
	struct kcore_prstatus ps;
	struct kcore_error *err;

	if (ch->nsps >= CH_BT_MAX_THREADS)
		return;
	err = kcore_note_prstatus(src, note, &ps);
	if (err) {
		kcore_error_destroy(err);
		return;
	}
	for (unsigned r = 0; r < ps.nregs && ps.reg_names; r++)
		if (strcmp(ps.reg_names[r], "rsp") == 0 ||
		    strcmp(ps.reg_names[r], "sp") == 0 ||
		    strcmp(ps.reg_names[r], "esp") == 0) {
			ch->sps[ch->nsps++] = ps.regs[r];
			return;
		}
}

/*
 * One NT_AUXV entry.  The kernel writes its own copy of the auxiliary
 * vector (mm->saved_auxv, which the process cannot change without
 * CAP_SYS_RESOURCE), so the credentials in it are the exec's.
 */
static void auxv_entry(struct ch *ch, const struct kcore_auxv_entry *a,
		       uint64_t *phdr_addr, uint64_t *entry)
{
	struct ch_creds *c = &ch->creds;

	switch (a->type) {
	case AT_PHDR:
		*phdr_addr = a->value;
		break;
	case AT_ENTRY:
		*entry = a->value;
		break;
	case AT_UID:
		c->uid = a->value;
		c->have_uid = true;
		break;
	case AT_EUID:
		c->euid = a->value;
		c->have_euid = true;
		break;
	case AT_GID:
		c->gid = a->value;
		c->have_gid = true;
		break;
	case AT_EGID:
		c->egid = a->value;
		c->have_egid = true;
		break;
	case AT_SECURE:
		c->secure = a->value;
		c->have_secure = true;
		break;
	}
}

void ch_parse_notes(struct ch *ch)
{
	struct kcore_source *src = &ch->fake;
	uint64_t phdr_addr = 0, entry = 0;
	struct kcore_file_table files = { 0 };
	bool have_files = false;

	src->path = (char *)ch->in_name;
	src->info.elf_class = ch->is64 ? 64 : 32;
	src->info.big_endian = ch->big;
	src->info.machine = ch->machine;
	src->arch = kcore_arch_lookup(ch->machine); /* its register layout */
	for (size_t i = 0; i < ch->phnum; i++) {
		const struct ch_phdr *p = &ch->ph[i];
		struct kcore_elf_notes it;
		struct kcore_elf_note nh;
		enum kcore_elf_note_next r;

		if (p->type != PT_NOTE || !p->filesz)
			continue;
		kcore_elf_notes_init(&it, ch->prefix + p->offset, p->filesz,
				     ch->big, 4, false);
		while ((r = kcore_elf_notes_next(&it, &nh)) !=
		       KCORE_ELF_NOTE_END) {
			char name[32];
			struct kcore_note note;
			struct kcore_error *err = NULL;

			if (r == KCORE_ELF_NOTE_SHORT_HEADER)
				break;
			if (r == KCORE_ELF_NOTE_OVERRUN) {
				if (!ch->note_error &&
				    asprintf(&ch->note_error,
					     "note at offset 0x%" PRIx64
					     " runs past its segment",
					     p->offset + nh.offset) < 0)
					ch->note_error = NULL;
				break;
			}
			kcore_elf_note_fill(&nh, p->offset, (unsigned)i, name,
					    sizeof(name), &note);
			if (strcmp(name, "CORE") != 0)
				continue;
			if (note.type == NT_PRSTATUS) {
				ch->nthreads++;
				note_sp(ch, src, &note);
			} else if (note.type == NT_PRPSINFO && !ch->fname) {
				struct kcore_prpsinfo ps;

				err = kcore_note_prpsinfo(src, &note, &ps);
				if (!err) {
					ch->fname = dup_str(ps.fname);
					ch->psargs = dup_str(ps.psargs);
				}
			} else if (note.type == NT_SIGINFO &&
				   !ch->note_signal) {
				struct kcore_siginfo si;

				err = kcore_note_siginfo(src, &note, &si);
				if (!err)
					ch->note_signal = si.signo;
			} else if (note.type == NT_AUXV && !phdr_addr) {
				struct kcore_auxv_entry *av;
				size_t n;

				err = kcore_note_auxv(src, &note, &av, &n);
				for (size_t k = 0; !err && k < n; k++)
					auxv_entry(ch, &av[k], &phdr_addr,
						   &entry);
				if (!err)
					free(av);
			} else if (note.type == NT_FILE && !have_files) {
				err = kcore_note_file(src, &note, &files);
				have_files = !err;
			}
			if (err) {
				if (!ch->note_error)
					ch->note_error =
						kcore_error_describe(err);
				kcore_error_destroy(err);
			}
		}
	}
	/* The executable: the file mapped where AT_PHDR (or AT_ENTRY)
	 * points; the kernel maps it first, so else the first entry. */
	for (size_t k = 0; have_files && k < files.count && !ch->exe; k++) {
		const struct kcore_file_entry *f = &files.entries[k];

		if ((phdr_addr >= f->start && phdr_addr < f->end) ||
		    (entry >= f->start && entry < f->end))
			ch->exe = dup_str(f->name);
	}
	if (have_files && !ch->exe && files.count && !phdr_addr && !entry)
		ch->exe = dup_str(files.entries[0].name);
	if (have_files)
		ch->files = files; /* names point into ch->prefix */
}

/* The build-id note of the ELF file whose first page is page (len bytes). */
size_t ch_first_page_build_id(const unsigned char *page, size_t len,
			      const unsigned char **ret)
{
	size_t descsz;
	const unsigned char *id = kcore_elf_find_note(
		page, len, "GNU", NT_GNU_BUILD_ID, 1, 64, &descsz);

	if (!id)
		return 0;
	*ret = id;
	return descsz;
}
