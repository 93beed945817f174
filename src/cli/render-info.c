// SPDX-License-Identifier: MIT
/* The renderer of `kcoredump info` as aligned text, and what it and the
 * JSON one (render-info-json.c) both name; pure functions of the model. */
#include <elf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "info-model.h"

const char *machine_name(uint16_t machine, char *buf, size_t size)
{
	const char *name = kcore_machine_name(machine);

	if (name)
		return name;
	switch (machine) {
	case EM_386:
		return "i386";
	case EM_ARM:
		return "arm";
	case EM_PPC64:
		return "ppc64";
	case EM_PPC:
		return "ppc";
	case EM_S390:
		return "s390";
	case EM_RISCV:
		return "riscv";
	case EM_LOONGARCH:
		return "loongarch";
	case EM_MIPS:
		return "mips";
	}
	snprintf(buf, size, "EM_%u", machine);
	return buf;
}

const char *info_kind_text(enum kcore_source_kind kind)
{
	switch (kind) {
	case KCORE_SOURCE_LIVE_KCORE:
		return "live kernel memory (/proc/kcore)";
	case KCORE_SOURCE_VMCORE:
		return "kernel vmcore (ELF)";
	case KCORE_SOURCE_PROCESS_CORE:
		return "process core";
	default:
		return "ELF core (unknown origin)";
	}
}

const char *info_type_text(uint32_t type, char *buf, size_t size)
{
	switch (type) {
	case PT_LOAD:
		return "LOAD";
	case PT_NOTE:
		return "NOTE";
	case PT_NULL:
		return "NULL";
	}
	snprintf(buf, size, "0x%x", type);
	return buf;
}

void info_flags_text(uint32_t flags, char out[4])
{
	out[0] = flags & PF_R ? 'R' : '-';
	out[1] = flags & PF_W ? 'W' : '-';
	out[2] = flags & PF_X ? 'X' : '-';
	out[3] = '\0';
}

const struct info_summary_key info_summary_keys[] = {
	{ "osrelease", "OSRELEASE", false },
	{ "build_id", "BUILD-ID", false },
	{ "page_size", "PAGESIZE", false },
	{ "kernel_offset", "KERNELOFFSET", true },
	{ "phys_base", "NUMBER(phys_base)", true },
	{ "swapper_pg_dir", "SYMBOL(swapper_pg_dir)", true },
	{ "init_top_pgt", "SYMBOL(init_top_pgt)", true },
	{ "stext", "SYMBOL(_stext)", true },
	{ "pgtable_l5_enabled", "NUMBER(pgtable_l5_enabled)", false },
	{ "kernel_image_size", "NUMBER(KERNEL_IMAGE_SIZE)", true },
	{ "crashtime", "CRASHTIME", false },
	{ 0 },
};

/* ---- text ---- */

static void text_source(FILE *f, const struct info_model *m)
{
	const struct kcore_source_info *in = m->info;
	char mbuf[16], s1[32], s2[32];

	fprintf(f, "Source:       %s\n", cli_esc(in->path));
	fprintf(f, "Format:       %s%s%s%s%s\n",
		kcore_source_format_title(m->src),
		in->format_detail ? " (" : "",
		in->format_detail ? cli_esc(in->format_detail) : "",
		in->format_detail ? ")" : "",
		in->physical_only ? ", physical addresses only" : "");
	fprintf(f, "Kind:         %s\n", info_kind_text(in->kind));
	if (in->incomplete && in->unreadable_bytes)
		fprintf(f,
			"Complete:     no; incomplete: %" PRIu64
			" bytes in %" PRIu64
			" range%s could not be read when it was made (%s)\n",
			in->unreadable_bytes, in->unreadable_ranges,
			in->unreadable_ranges == 1 ? "" : "s",
			in->incomplete_origin);
	else if (in->incomplete)
		fprintf(f,
			"Complete:     no; incomplete: its %s says so, not "
			"how much\n",
			in->incomplete_origin);
	fprintf(f, "Machine:      %s, ELF%u, %s-endian",
		machine_name(in->machine, mbuf, sizeof(mbuf)), in->elf_class,
		in->big_endian ? "big" : "little");
	if (in->machine_origin && strcmp(in->machine_origin, "--arch"))
		fprintf(f, " (from the %s at physical 0x%" PRIx64 ")",
			in->machine_origin, in->machine_paddr);
	else if (in->machine_origin)
		fprintf(f, " (from --arch)");
	else if (in->machine == EM_NONE && in->physical_only)
		fprintf(f, " (unknown: no VMCOREINFO or kernel banner found "
			   "in its memory; give --arch)");
	fputc('\n', f);
	fprintf(f, "Page size:    %" PRIu64 "\n", in->page_size);
	if (in->kernel_release && in->vmcoreinfo_origin &&
	    !strcmp(in->vmcoreinfo_origin, "memory"))
		fprintf(f,
			"Kernel:       %s (VMCOREINFO from memory at physical "
			"0x%" PRIx64 ")\n",
			cli_esc(in->kernel_release), in->vmcoreinfo_paddr);
	else if (in->kernel_release)
		fprintf(f, "Kernel:       %s (VMCOREINFO from %s)\n",
			cli_esc(in->kernel_release), in->vmcoreinfo_origin);
	if (in->kind == KCORE_SOURCE_PROCESS_CORE) {
		const char *sig = kcore_signal_name(in->signal);

		fprintf(f, "Process:      %s, pid %d, %u thread%s",
			in->process_name ? cli_esc(in->process_name) : "?",
			in->pid, in->nthreads, in->nthreads == 1 ? "" : "s");
		if (in->signal)
			fprintf(f, ", killed by signal %d%s%s%s", in->signal,
				sig ? " (" : "", sig ? sig : "",
				sig ? ")" : "");
		fputc('\n', f);
	}
	if (in->is_regular)
		fprintf(f, "File size:    %s (%s allocated)\n",
			cli_human_size(in->file_size, s1, sizeof(s1)),
			cli_human_size(in->file_blocks, s2, sizeof(s2)));
	if (in->kind == KCORE_SOURCE_LIVE_KCORE ||
	    in->kind == KCORE_SOURCE_VMCORE) {
		if (in->has_page_offset)
			fprintf(f, "Direct map:   0x%" PRIx64 "\n",
				in->page_offset);
		if (in->has_vmalloc_start)
			fprintf(f, "Vmalloc:      0x%" PRIx64 "\n",
				in->vmalloc_start);
		if (in->has_vmemmap_start)
			fprintf(f, "Vmemmap:      0x%" PRIx64 "\n",
				in->vmemmap_start);
		if (in->has_kernel_offset)
			fprintf(f, "KASLR offset: 0x%" PRIx64 "\n",
				in->kernel_offset);
		/* `gdb vmlinux FILE` takes vmlinux's link-time addresses and
		 * silently reads the wrong memory under KASLR. */
		if (in->has_kernel_offset && !in->physical_only &&
		    kcore_source_is_elf(m->src))
			fprintf(f,
				"gdb:          gdb -ex 'symbol-file -o "
				"0x%" PRIx64 " vmlinux' -ex 'core-file %s'\n",
				in->kernel_offset, cli_esc(in->path));
	}
}

static void text_segments(FILE *f, const struct info_model *m)
{
	size_t n = kcore_source_nsegments(m->src);
	char tbuf[16], fl[4], s1[32], s2[32], s3[32], s4[32];

	fprintf(f, "\nSegments (%zu program headers):\n", n);
	fprintf(f, "  %4s %-4s %-3s %-7s %-37s %-18s %-18s %10s %10s", "IDX",
		"TYPE", "FLG", "CLASS", "VIRTUAL RANGE", "PHYSICAL", "OFFSET",
		"SIZE", "IN FILE");
	if (m->info->is_regular || m->holes_counted)
		fprintf(f, " %10s %10s", "DATA", "HOLES");
	fprintf(f, "  LABEL\n");
	for (size_t i = 0; i < n; i++) {
		const struct kcore_segment *s = kcore_source_segment(m->src, i);
		char range[48] = "-", phys[24] = "-";

		if (s->type == PT_LOAD && !m->info->physical_only)
			snprintf(range, sizeof(range),
				 "0x%016" PRIx64 "-0x%016" PRIx64, s->vaddr,
				 s->vaddr + s->memsz);
		if (s->has_paddr)
			snprintf(phys, sizeof(phys), "0x%" PRIx64, s->paddr);
		info_flags_text(s->flags, fl);
		fprintf(f,
			"  %4u %-4s %-3s %-7s %-37s %-18s 0x%-16" PRIx64
			" %10s",
			s->index, info_type_text(s->type, tbuf, sizeof(tbuf)),
			fl, kcore_segment_class_name(s->cls), range, phys,
			s->offset,
			cli_human_size(s->type == PT_LOAD ? s->memsz
							  : s->filesz,
				       s1, sizeof(s1)));
		fprintf(f, " %10s", cli_human_size(s->filesz, s4, sizeof(s4)));
		if (m->info->is_regular || m->holes_counted) {
			if (m->holes[i].known)
				fprintf(f, " %10s %10s",
					cli_human_size(m->holes[i].data, s2,
						       sizeof(s2)),
					cli_human_size(m->holes[i].hole, s3,
						       sizeof(s3)));
			else
				fprintf(f, " %10s %10s", "-", "-");
		}
		fprintf(f, "  %s\n", s->label ? cli_esc(s->label) : "");
	}
}

static void text_prstatus(FILE *f, const struct info_model *m,
			  const struct kcore_prstatus *st)
{
	const char *sig = kcore_signal_name(st->cursig);
	unsigned shown = 0;

	fprintf(f, "      pid %d, ppid %d, pgrp %d, sid %d, signal %d%s%s%s\n",
		st->pid, st->ppid, st->pgrp, st->sid, st->cursig,
		sig ? " (" : "", sig ? sig : "", sig ? ")" : "");
	for (unsigned i = 0; i < st->nregs; i++) {
		const char *name = st->reg_names[i];

		if (!m->all_registers && strcmp(name, "rip") &&
		    strcmp(name, "rsp") && strcmp(name, "rbp") &&
		    strcmp(name, "pc") && strcmp(name, "sp") &&
		    strcmp(name, "x29") && strcmp(name, "x30"))
			continue;
		fprintf(f, "%s%8s 0x%016" PRIx64, shown % 3 ? "" : "      ",
			name, st->regs[i]);
		if (++shown % 3 == 0)
			fputc('\n', f);
	}
	if (shown % 3)
		fputc('\n', f);
}

/* A metadata value that is a zero-padded count (the note pads its
 * numbers so that it keeps its size when rewritten): its value. */
bool info_meta_number(const char *v, size_t len, uint64_t *ret)
{
	uint64_t n = 0;

	if (!len || len > 20)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9' ||
		    __builtin_mul_overflow(n, 10, &n) ||
		    __builtin_add_overflow(n, (uint64_t)(v[i] - '0'), &n))
			return false;
	}
	*ret = n;
	return true;
}

/* The time map's lines: how many, over how long (info --read-time
 * answers for one address; --json lists them). */
static void text_read_times(FILE *f, const struct info_note *n)
{
	if (n->meta.read_cells)
		fprintf(f,
			"      %-24s %" PRIu64 " cells read over %.6f s "
			"(info --read-time ADDR)\n",
			"read_time", n->meta.read_cells,
			(double)n->meta.read_end_us / 1e6);
}

static void text_meta(FILE *f, const struct info_note *n)
{
	const struct kcore_metadata *md = &n->meta.md;
	bool times = false;

	for (size_t i = 0; i < md->nfields; i++) {
		const struct kcore_metadata_field *fl = &md->fields[i];

		if (!strcmp(fl->key, "read_time")) {
			if (!times)
				text_read_times(f, n);
			times = true;
			continue;
		}
		fprintf(f, "      %-24s ", cli_esc(fl->key));
		if (n->meta.fields[i].is_number)
			fprintf(f, "%" PRIu64 "\n", n->meta.fields[i].number);
		else
			fprintf(f, "%s\n", cli_esc(fl->value));
	}
}

static void text_prpsinfo(FILE *f, const struct kcore_prpsinfo *ps)
{
	fprintf(f,
		"      comm \"%s\", args \"%s\", state %c, "
		"uid %u, gid %u, pid %d, ppid %d\n",
		cli_esc(ps->fname), cli_esc(ps->psargs),
		ps->sname > ' ' && ps->sname < 0x7f ? ps->sname : '?', ps->uid,
		ps->gid, ps->pid, ps->ppid);
}

static void text_siginfo(FILE *f, const struct kcore_siginfo *si)
{
	const char *sig = kcore_signal_name(si->signo);

	fprintf(f, "      signal %d%s%s%s, code %d, errno %d", si->signo,
		sig ? " (" : "", sig ? sig : "", sig ? ")" : "", si->code,
		si->err);
	if (si->has_addr)
		fprintf(f, ", fault address 0x%" PRIx64, si->addr);
	if (si->has_sender)
		fprintf(f, ", sent by pid %d uid %u", si->pid, si->uid);
	fputc('\n', f);
}

static void text_auxv(FILE *f, const struct kcore_auxv_entry *av, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *name = kcore_auxv_name(av[i].type);

		if (name)
			fprintf(f, "      %-22s", name);
		else
			fprintf(f, "      AT_%-19" PRIu64, av[i].type);
		if (kcore_auxv_is_address(av[i].type))
			fprintf(f, "0x%" PRIx64 "\n", av[i].value);
		else
			fprintf(f, "%" PRIu64 "\n", av[i].value);
	}
}

static void text_file(FILE *f, const struct kcore_file_table *ft)
{
	fprintf(f, "      %zu mapped files, page size %" PRIu64 "\n", ft->count,
		ft->page_size);
	for (size_t i = 0; i < ft->count; i++)
		fprintf(f,
			"      0x%016" PRIx64 "-0x%016" PRIx64
			" offset 0x%-8" PRIx64 " %s\n",
			ft->entries[i].start, ft->entries[i].end,
			ft->entries[i].offset, cli_esc(ft->entries[i].name));
}

static void text_note_body(FILE *f, const struct info_model *m,
			   const struct info_note *n)
{
	if (n->failed) {
		fprintf(f, "      not decoded: %s\n",
			n->error ? cli_esc(n->error) : "?");
		return;
	}
	switch (n->kind) {
	case INFO_NOTE_PRSTATUS:
		text_prstatus(f, m, &n->prstatus);
		break;
	case INFO_NOTE_PRPSINFO:
		text_prpsinfo(f, &n->prpsinfo);
		break;
	case INFO_NOTE_SIGINFO:
		text_siginfo(f, &n->siginfo);
		break;
	case INFO_NOTE_AUXV:
		text_auxv(f, n->auxv.entries, n->auxv.count);
		break;
	case INFO_NOTE_FILE:
		text_file(f, &n->file);
		break;
	case INFO_NOTE_VMCOREINFO:
		fprintf(f, "      (decoded below)\n");
		break;
	case INFO_NOTE_METADATA:
		text_meta(f, n);
		break;
	case INFO_NOTE_TASKSTRUCT:
	case INFO_NOTE_OTHER:
		break;
	}
}

static void text_notes(FILE *f, const struct info_model *m)
{
	size_t n = m->nnotes;

	fprintf(f, "\nNotes (%zu):\n", n);
	for (size_t i = 0; i < n; i++) {
		const struct kcore_note *note = m->notes[i].note;
		const char *tname =
			kcore_note_type_name(note->name, note->type);

		fprintf(f, "  [%zu] %s ", i, cli_esc(note->name));
		if (tname)
			fprintf(f, "%s", tname);
		else
			fprintf(f, "type 0x%x", note->type);
		fprintf(f, ", %zu bytes at offset 0x%" PRIx64 "\n",
			note->descsz, note->offset);
		text_note_body(f, m, &m->notes[i]);
	}
}

static void text_vmcoreinfo(FILE *f, const struct info_model *m)
{
	const struct kcore_vmcoreinfo *vi = kcore_source_vmcoreinfo(m->src);
	size_t n;

	if (!vi)
		return;
	n = kcore_vmcoreinfo_count(vi);
	fprintf(f, "\nVMCOREINFO (%zu lines, from the %s):\n", n,
		m->info->vmcoreinfo_origin);
	for (size_t i = 0; info_summary_keys[i].key; i++) {
		const char *v =
			kcore_vmcoreinfo_get(vi, info_summary_keys[i].key);

		if (v)
			fprintf(f, "  %-28s %s\n", info_summary_keys[i].key,
				cli_esc(v));
	}
	fprintf(f, "  All lines:\n");
	for (size_t i = 0; i < n; i++) {
		const struct kcore_vmcoreinfo_entry *e =
			kcore_vmcoreinfo_entry(vi, i);

		fprintf(f, "    %s=%s\n", cli_esc(e->key), cli_esc(e->value));
	}
}

static void text_modules(FILE *f, const struct info_model *m)
{
	if (!m->modules_listed)
		return;
	fprintf(f, "\nModules (%zu, via libdwfl):\n", m->nmodules);
	if (m->modules_error)
		fprintf(f, "  not listed: %s\n", cli_esc(m->modules_error));
	for (size_t i = 0; i < m->nmodules; i++) {
		const struct kcore_module *mod = &m->modules[i];

		fprintf(f, "  0x%016" PRIx64 "+0x%-8" PRIx64 " ", mod->start,
			mod->end - mod->start);
		if (mod->build_id_len) {
			for (size_t k = 0; k < mod->build_id_len; k++)
				fprintf(f, "%02x", mod->build_id[k]);
			fprintf(f, "@0x%" PRIx64, mod->build_id_vaddr);
		} else {
			fputc('-', f);
		}
		fprintf(f, " %s %s %s\n",
			mod->file	   ? cli_esc(mod->file)
			: mod->elf_in_core ? "."
					   : "-",
			mod->debug_file ? cli_esc(mod->debug_file) : "-",
			cli_esc(mod->name));
	}
}

void render_info_text(FILE *f, const struct info_model *m)
{
	text_source(f, m);
	if (m->show_segments) {
		text_segments(f, m);
		text_modules(f, m);
	}
	if (m->show_notes) {
		text_notes(f, m);
		text_vmcoreinfo(f, m);
	}
}
