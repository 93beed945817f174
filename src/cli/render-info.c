// SPDX-License-Identifier: MIT
/* Renderers for `kcoredump info`: aligned text and one JSON document.
 * Both are pure functions of the model. */
#include <elf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "info-model.h"
#include "kcoredump/json.h"

#ifndef NT_TASKSTRUCT
#define NT_TASKSTRUCT 4
#endif

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

static const char *kind_text(enum kcore_source_kind kind)
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

static const char *type_text(uint32_t type, char *buf, size_t size)
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

static void flags_text(uint32_t flags, char out[4])
{
	out[0] = flags & PF_R ? 'R' : '-';
	out[1] = flags & PF_W ? 'W' : '-';
	out[2] = flags & PF_X ? 'X' : '-';
	out[3] = '\0';
}

/* Which VMCOREINFO lines the summary names, and how. */
struct summary_key {
	const char *json;
	const char *key;
	bool hex; /* print as an address */
};

static const struct summary_key summary_keys[] = {
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
	fprintf(f, "Kind:         %s\n", kind_text(in->kind));
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
		flags_text(s->flags, fl);
		fprintf(f,
			"  %4u %-4s %-3s %-7s %-37s %-18s 0x%-16" PRIx64
			" %10s",
			s->index, type_text(s->type, tbuf, sizeof(tbuf)), fl,
			kcore_segment_class_name(s->cls), range, phys,
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
static bool meta_number(const char *v, size_t len, uint64_t *ret)
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

static bool is_meta_note(const struct kcore_note *note)
{
	const char *t = kcore_note_type_name(note->name, note->type);

	return t && !strcmp(t, "KCOREDUMP_METADATA");
}

/* The "segment=" and "unreadable=" lines: "[N ]k=v k=v ... label=rest"
 * (a segment line starts with its index). */
static void json_meta_record(struct kcore_json *j, const char *line)
{
	size_t first = strcspn(line, " =");
	uint64_t index;

	kcore_json_object_begin(j, NULL);
	if (line[first] == ' ' && meta_number(line, first, &index)) {
		kcore_json_u64(j, "index", index);
		line += first + 1;
	}
	while (*line) {
		const char *eq = strchr(line, '='), *end;
		uint64_t n;
		char key[32];

		if (!eq || (size_t)(eq - line) >= sizeof(key))
			break;
		memcpy(key, line, (size_t)(eq - line));
		key[eq - line] = '\0';
		end = strcmp(key, "label") ? eq + 1 + strcspn(eq + 1, " ")
					   : eq + 1 + strlen(eq + 1);
		if (meta_number(eq + 1, (size_t)(end - eq - 1), &n))
			kcore_json_u64(j, key, n);
		else
			kcore_json_string_len(j, key, eq + 1,
					      (size_t)(end - eq - 1));
		line = *end ? end + 1 : end;
	}
	kcore_json_object_end(j);
}

struct meta_key {
	const char *key;
	size_t index;
};

static int cmp_meta_key(const void *a, const void *b)
{
	const struct meta_key *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * Which fields are the first of their key: the keys sorted (n log n; a
 * note's fields are untrusted and many), ties by position.  NULL when
 * out of memory.
 */
static bool *meta_firsts(const struct kcore_metadata *md)
{
	struct meta_key *keys =
		calloc(md->nfields ? md->nfields : 1, sizeof(*keys));
	bool *first = calloc(md->nfields ? md->nfields : 1, sizeof(*first));

	if (!keys || !first) {
		free(keys);
		free(first);
		return NULL;
	}
	for (size_t i = 0; i < md->nfields; i++)
		keys[i] = (struct meta_key){ md->fields[i].key, i };
	qsort(keys, md->nfields, sizeof(*keys), cmp_meta_key);
	for (size_t i = 0; i < md->nfields; i++)
		first[keys[i].index] =
			!i || strcmp(keys[i - 1].key, keys[i].key) != 0;
	free(keys);
	return first;
}

/* Our metadata note, decoded: scalars as members, the repeated segment
 * and unreadable lines as arrays. */
static struct kcore_error *json_meta(struct kcore_json *j,
				     const struct kcore_metadata *md)
{
	/* The keys that repeat: arrays of the same name. */
	static const char *const lists[] = { "segment", "unreadable",
					     "read_time", "read_phase" };
	bool *first = meta_firsts(md);

	if (!first)
		return &kcore_error_nomem;
	kcore_json_object_begin(j, "metadata");
	for (size_t i = 0; i < md->nfields; i++) {
		const struct kcore_metadata_field *f = &md->fields[i];
		bool listed = false;
		uint64_t n;

		for (size_t l = 0; l < 4; l++)
			listed |= !strcmp(f->key, lists[l]);
		/* A repeated scalar: the first counts. */
		if (!first[i] || listed)
			continue;
		if (meta_number(f->value, strlen(f->value), &n))
			kcore_json_u64(j, f->key, n);
		else
			kcore_json_string(j, f->key, f->value);
	}
	for (size_t l = 0; l < 4; l++) {
		kcore_json_array_begin(j, lists[l]);
		for (size_t i = 0; i < md->nfields; i++)
			if (!strcmp(md->fields[i].key, lists[l]))
				json_meta_record(j, md->fields[i].value);
		kcore_json_array_end(j);
	}
	kcore_json_object_end(j);
	free(first);
	return NULL;
}

/* The time map's lines: how many, over how long (info --read-time
 * answers for one address; --json lists them). */
static void text_read_times(FILE *f, const struct kcore_metadata *md)
{
	uint64_t last = 0, cells = 0;

	for (size_t i = 0; i < md->nfields; i++) {
		const char *v = strstr(md->fields[i].value, "end_us=");
		unsigned long long t;

		if (strcmp(md->fields[i].key, "read_time") != 0)
			continue;
		cells++;
		if (v && sscanf(v, "end_us=%llu", &t) == 1 && t > last)
			last = t;
	}
	if (cells)
		fprintf(f,
			"      %-24s %" PRIu64 " cells read over %.6f s "
			"(info --read-time ADDR)\n",
			"read_time", cells, (double)last / 1e6);
}

static void text_meta(FILE *f, const struct kcore_metadata *md)
{
	bool times = false;

	for (size_t i = 0; i < md->nfields; i++) {
		const struct kcore_metadata_field *fl = &md->fields[i];
		uint64_t n;

		if (!strcmp(fl->key, "read_time")) {
			if (!times)
				text_read_times(f, md);
			times = true;
			continue;
		}
		fprintf(f, "      %-24s ", cli_esc(fl->key));
		if (meta_number(fl->value, strlen(fl->value), &n))
			fprintf(f, "%" PRIu64 "\n", n);
		else
			fprintf(f, "%s\n", cli_esc(fl->value));
	}
}

static void text_note_body(FILE *f, const struct info_model *m,
			   const struct kcore_note *note)
{
	struct kcore_error *err = NULL;
	bool core = strcmp(note->name, "CORE") == 0;

	if (core && note->type == NT_PRSTATUS) {
		struct kcore_prstatus st;

		err = kcore_note_prstatus(m->src, note, &st);
		if (!err)
			text_prstatus(f, m, &st);
	} else if (core && note->type == NT_PRPSINFO) {
		struct kcore_prpsinfo ps;

		err = kcore_note_prpsinfo(m->src, note, &ps);
		if (!err)
			fprintf(f,
				"      comm \"%s\", args \"%s\", state %c, "
				"uid %u, gid %u, pid %d, ppid %d\n",
				cli_esc(ps.fname), cli_esc(ps.psargs),
				ps.sname > ' ' && ps.sname < 0x7f ? ps.sname
								  : '?',
				ps.uid, ps.gid, ps.pid, ps.ppid);
	} else if (core && note->type == NT_SIGINFO) {
		struct kcore_siginfo si;

		err = kcore_note_siginfo(m->src, note, &si);
		if (!err) {
			const char *sig = kcore_signal_name(si.signo);

			fprintf(f, "      signal %d%s%s%s, code %d, errno %d",
				si.signo, sig ? " (" : "", sig ? sig : "",
				sig ? ")" : "", si.code, si.err);
			if (si.has_addr)
				fprintf(f, ", fault address 0x%" PRIx64,
					si.addr);
			if (si.has_sender)
				fprintf(f, ", sent by pid %d uid %u", si.pid,
					si.uid);
			fputc('\n', f);
		}
	} else if (core && note->type == NT_AUXV) {
		struct kcore_auxv_entry *av;
		size_t n;

		err = kcore_note_auxv(m->src, note, &av, &n);
		for (size_t i = 0; !err && i < n; i++) {
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
		if (!err)
			free(av);
	} else if (core && note->type == NT_FILE) {
		struct kcore_file_table ft;

		err = kcore_note_file(m->src, note, &ft);
		if (!err) {
			fprintf(f,
				"      %zu mapped files, page size %" PRIu64
				"\n",
				ft.count, ft.page_size);
			for (size_t i = 0; i < ft.count; i++)
				fprintf(f,
					"      0x%016" PRIx64 "-0x%016" PRIx64
					" offset 0x%-8" PRIx64 " %s\n",
					ft.entries[i].start, ft.entries[i].end,
					ft.entries[i].offset,
					cli_esc(ft.entries[i].name));
			free(ft.entries);
		}
	} else if (strcmp(note->name, "VMCOREINFO") == 0) {
		fprintf(f, "      (decoded below)\n");
	} else if (is_meta_note(note)) {
		struct kcore_metadata md;

		err = kcore_note_metadata(m->src, note, &md);
		if (!err) {
			text_meta(f, &md);
			kcore_metadata_deinit(&md);
		}
	}
	if (err) {
		char *msg = kcore_error_describe(err);

		fprintf(f, "      not decoded: %s\n", msg ? cli_esc(msg) : "?");
		free(msg);
		kcore_error_destroy(err);
	}
}

static void text_notes(FILE *f, const struct info_model *m)
{
	size_t n = kcore_source_nnotes(m->src);

	fprintf(f, "\nNotes (%zu):\n", n);
	for (size_t i = 0; i < n; i++) {
		const struct kcore_note *note = kcore_source_note(m->src, i);
		const char *tname =
			kcore_note_type_name(note->name, note->type);

		fprintf(f, "  [%zu] %s ", i, cli_esc(note->name));
		if (tname)
			fprintf(f, "%s", tname);
		else
			fprintf(f, "type 0x%x", note->type);
		fprintf(f, ", %zu bytes at offset 0x%" PRIx64 "\n",
			note->descsz, note->offset);
		text_note_body(f, m, note);
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
	for (size_t i = 0; i < sizeof(summary_keys) / sizeof(summary_keys[0]);
	     i++) {
		const char *v = kcore_vmcoreinfo_get(vi, summary_keys[i].key);

		if (v)
			fprintf(f, "  %-28s %s\n", summary_keys[i].key,
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

/* ---- JSON ---- */

static void json_source(struct kcore_json *j, const struct info_model *m)
{
	const struct kcore_source_info *in = m->info;
	char mbuf[16];

	kcore_json_object_begin(j, "source");
	kcore_json_string(j, "path", in->path);
	kcore_json_string(j, "format", kcore_source_format(m->src));
	kcore_json_string(j, "format_detail", in->format_detail);
	kcore_json_bool(j, "complete", !in->incomplete);
	if (in->incomplete) {
		kcore_json_object_begin(j, "incomplete");
		kcore_json_u64(j, "unreadable_bytes", in->unreadable_bytes);
		kcore_json_u64(j, "unreadable_ranges", in->unreadable_ranges);
		kcore_json_string(j, "origin", in->incomplete_origin);
		kcore_json_object_end(j);
	} else {
		kcore_json_null(j, "incomplete");
	}
	kcore_json_bool(j, "physical_only", in->physical_only);
	kcore_json_string(j, "kind", kcore_source_kind_name(in->kind));
	kcore_json_string(j, "machine",
			  machine_name(in->machine, mbuf, sizeof(mbuf)));
	kcore_json_u64(j, "e_machine", in->machine);
	kcore_json_string(j, "machine_origin", in->machine_origin);
	if (in->machine_origin && strcmp(in->machine_origin, "--arch"))
		kcore_json_hex(j, "machine_paddr", in->machine_paddr);
	else
		kcore_json_null(j, "machine_paddr");
	kcore_json_u64(j, "elf_class", in->elf_class);
	kcore_json_string(j, "byte_order", in->big_endian ? "big" : "little");
	kcore_json_u64(j, "page_size", in->page_size);
	kcore_json_string(j, "kernel_release", in->kernel_release);
	kcore_json_string(j, "vmcoreinfo_origin", in->vmcoreinfo_origin);
	if (in->vmcoreinfo_origin && !strcmp(in->vmcoreinfo_origin, "memory"))
		kcore_json_hex(j, "vmcoreinfo_paddr", in->vmcoreinfo_paddr);
	else
		kcore_json_null(j, "vmcoreinfo_paddr");
	kcore_json_bool(j, "regular_file", in->is_regular);
	if (in->is_regular) {
		kcore_json_u64(j, "file_size", in->file_size);
		kcore_json_u64(j, "allocated_bytes", in->file_blocks);
	}
	if (in->kind == KCORE_SOURCE_PROCESS_CORE) {
		const char *sig = kcore_signal_name(in->signal);

		kcore_json_object_begin(j, "process");
		kcore_json_string(j, "name", in->process_name);
		kcore_json_i64(j, "pid", in->pid);
		kcore_json_u64(j, "threads", in->nthreads);
		kcore_json_i64(j, "signal", in->signal);
		kcore_json_string(j, "signal_name", sig);
		kcore_json_object_end(j);
	}
	if (in->kind == KCORE_SOURCE_LIVE_KCORE ||
	    in->kind == KCORE_SOURCE_VMCORE) {
		kcore_json_object_begin(j, "layout");
		if (in->has_page_offset)
			kcore_json_hex(j, "page_offset_base", in->page_offset);
		if (in->has_vmalloc_start)
			kcore_json_hex(j, "vmalloc_base", in->vmalloc_start);
		if (in->has_vmemmap_start)
			kcore_json_hex(j, "vmemmap_base", in->vmemmap_start);
		if (in->has_kernel_offset)
			kcore_json_hex(j, "kernel_offset", in->kernel_offset);
		if (in->has_phys_base)
			kcore_json_hex(j, "phys_base", in->phys_base);
		kcore_json_object_end(j);
	}
	kcore_json_object_end(j);
}

static void json_segments(struct kcore_json *j, const struct info_model *m)
{
	size_t n = kcore_source_nsegments(m->src);
	char tbuf[16], fl[4];

	kcore_json_array_begin(j, "segments");
	for (size_t i = 0; i < n; i++) {
		const struct kcore_segment *s = kcore_source_segment(m->src, i);

		kcore_json_object_begin(j, NULL);
		kcore_json_u64(j, "index", s->index);
		kcore_json_string(j, "type",
				  type_text(s->type, tbuf, sizeof(tbuf)));
		kcore_json_u64(j, "p_type", s->type);
		flags_text(s->flags, fl);
		kcore_json_string(j, "flags", fl);
		kcore_json_string(j, "class", kcore_segment_class_name(s->cls));
		kcore_json_string(j, "label", s->label);
		if (s->type == PT_LOAD && m->info->physical_only) {
			kcore_json_null(j, "vaddr");
			kcore_json_null(j, "vend");
		} else {
			kcore_json_hex(j, "vaddr", s->vaddr);
			kcore_json_hex(j, "vend", s->vaddr + s->memsz);
		}
		if (s->has_paddr) {
			kcore_json_hex(j, "paddr", s->paddr);
			kcore_json_hex(j, "pend", s->paddr + s->memsz);
		} else {
			kcore_json_null(j, "paddr");
		}
		kcore_json_hex(j, "p_paddr", s->paddr);
		kcore_json_hex(j, "offset", s->offset);
		kcore_json_u64(j, "filesz", s->filesz);
		kcore_json_u64(j, "memsz", s->memsz);
		kcore_json_u64(j, "align", s->align);
		if (m->holes[i].known) {
			kcore_json_u64(j, "data_bytes", m->holes[i].data);
			kcore_json_u64(j, "hole_bytes", m->holes[i].hole);
		}
		kcore_json_object_end(j);
	}
	kcore_json_array_end(j);
}

static void json_timeval(struct kcore_json *j, const char *key,
			 const struct kcore_timeval *tv)
{
	kcore_json_object_begin(j, key);
	kcore_json_i64(j, "sec", tv->sec);
	kcore_json_i64(j, "usec", tv->usec);
	kcore_json_object_end(j);
}

static void json_note_body(struct kcore_json *j, const struct info_model *m,
			   const struct kcore_note *note)
{
	struct kcore_error *err = NULL;
	bool core = strcmp(note->name, "CORE") == 0;

	if (core && note->type == NT_PRSTATUS) {
		struct kcore_prstatus st;

		err = kcore_note_prstatus(m->src, note, &st);
		if (!err) {
			kcore_json_object_begin(j, "prstatus");
			kcore_json_i64(j, "pid", st.pid);
			kcore_json_i64(j, "ppid", st.ppid);
			kcore_json_i64(j, "pgrp", st.pgrp);
			kcore_json_i64(j, "sid", st.sid);
			kcore_json_i64(j, "signal", st.cursig);
			kcore_json_string(j, "signal_name",
					  kcore_signal_name(st.cursig));
			kcore_json_i64(j, "si_signo", st.signo);
			kcore_json_i64(j, "si_code", st.code);
			kcore_json_i64(j, "si_errno", st.err);
			kcore_json_hex(j, "sigpend", st.sigpend);
			kcore_json_hex(j, "sighold", st.sighold);
			json_timeval(j, "utime", &st.utime);
			json_timeval(j, "stime", &st.stime);
			json_timeval(j, "cutime", &st.cutime);
			json_timeval(j, "cstime", &st.cstime);
			kcore_json_object_begin(j, "registers");
			for (unsigned i = 0; i < st.nregs; i++)
				kcore_json_hex(j, st.reg_names[i], st.regs[i]);
			kcore_json_object_end(j);
			kcore_json_i64(j, "fpvalid", st.fpvalid);
			kcore_json_object_end(j);
		}
	} else if (core && note->type == NT_PRPSINFO) {
		struct kcore_prpsinfo ps;

		err = kcore_note_prpsinfo(m->src, note, &ps);
		if (!err) {
			char sname[2] = { ps.sname, 0 };

			kcore_json_object_begin(j, "prpsinfo");
			kcore_json_i64(j, "state", ps.state);
			kcore_json_string(j, "sname", sname);
			kcore_json_i64(j, "zomb", ps.zomb);
			kcore_json_i64(j, "nice", ps.nice);
			kcore_json_hex(j, "flag", ps.flag);
			kcore_json_u64(j, "uid", ps.uid);
			kcore_json_u64(j, "gid", ps.gid);
			kcore_json_i64(j, "pid", ps.pid);
			kcore_json_i64(j, "ppid", ps.ppid);
			kcore_json_i64(j, "pgrp", ps.pgrp);
			kcore_json_i64(j, "sid", ps.sid);
			kcore_json_string(j, "fname", ps.fname);
			kcore_json_string(j, "psargs", ps.psargs);
			kcore_json_object_end(j);
		}
	} else if (core && note->type == NT_SIGINFO) {
		struct kcore_siginfo si;

		err = kcore_note_siginfo(m->src, note, &si);
		if (!err) {
			kcore_json_object_begin(j, "siginfo");
			kcore_json_i64(j, "signo", si.signo);
			kcore_json_string(j, "signal_name",
					  kcore_signal_name(si.signo));
			kcore_json_i64(j, "code", si.code);
			kcore_json_i64(j, "errno", si.err);
			if (si.has_addr)
				kcore_json_hex(j, "addr", si.addr);
			if (si.has_sender) {
				kcore_json_i64(j, "sender_pid", si.pid);
				kcore_json_u64(j, "sender_uid", si.uid);
			}
			kcore_json_object_end(j);
		}
	} else if (core && note->type == NT_AUXV) {
		struct kcore_auxv_entry *av;
		size_t n;

		err = kcore_note_auxv(m->src, note, &av, &n);
		if (!err) {
			kcore_json_array_begin(j, "auxv");
			for (size_t i = 0; i < n; i++) {
				kcore_json_object_begin(j, NULL);
				kcore_json_u64(j, "type", av[i].type);
				kcore_json_string(j, "name",
						  kcore_auxv_name(av[i].type));
				kcore_json_hex(j, "value", av[i].value);
				kcore_json_object_end(j);
			}
			kcore_json_array_end(j);
			free(av);
		}
	} else if (core && note->type == NT_FILE) {
		struct kcore_file_table ft;

		err = kcore_note_file(m->src, note, &ft);
		if (!err) {
			kcore_json_object_begin(j, "file");
			kcore_json_u64(j, "page_size", ft.page_size);
			kcore_json_u64(j, "count", ft.count);
			kcore_json_array_begin(j, "mappings");
			for (size_t i = 0; i < ft.count; i++) {
				kcore_json_object_begin(j, NULL);
				kcore_json_hex(j, "start", ft.entries[i].start);
				kcore_json_hex(j, "end", ft.entries[i].end);
				kcore_json_hex(j, "offset",
					       ft.entries[i].offset);
				kcore_json_string(j, "path",
						  ft.entries[i].name);
				kcore_json_object_end(j);
			}
			kcore_json_array_end(j);
			kcore_json_object_end(j);
			free(ft.entries);
		}
	} else if (core && note->type == NT_TASKSTRUCT) {
		kcore_json_object_begin(j, "taskstruct");
		kcore_json_u64(j, "size", note->descsz);
		kcore_json_object_end(j);
	} else if (is_meta_note(note)) {
		struct kcore_metadata md;

		err = kcore_note_metadata(m->src, note, &md);
		if (!err) {
			err = json_meta(j, &md);
			kcore_metadata_deinit(&md);
		}
	}
	if (err) {
		char *msg = kcore_error_describe(err);

		kcore_json_string(j, "decode_error",
				  msg ? msg : "out of memory");
		free(msg);
		kcore_error_destroy(err);
	}
}

static void json_notes(struct kcore_json *j, const struct info_model *m)
{
	size_t n = kcore_source_nnotes(m->src);

	kcore_json_array_begin(j, "notes");
	for (size_t i = 0; i < n; i++) {
		const struct kcore_note *note = kcore_source_note(m->src, i);

		kcore_json_object_begin(j, NULL);
		kcore_json_u64(j, "index", i);
		kcore_json_string(j, "name", note->name);
		kcore_json_u64(j, "type", note->type);
		kcore_json_string(j, "type_name",
				  kcore_note_type_name(note->name, note->type));
		kcore_json_u64(j, "size", note->descsz);
		kcore_json_hex(j, "offset", note->offset);
		kcore_json_u64(j, "segment", note->segment);
		json_note_body(j, m, note);
		kcore_json_object_end(j);
	}
	kcore_json_array_end(j);
}

static void json_vmcoreinfo(struct kcore_json *j, const struct info_model *m)
{
	const struct kcore_vmcoreinfo *vi = kcore_source_vmcoreinfo(m->src);
	size_t n, len;
	const char *text;

	if (!vi) {
		kcore_json_null(j, "vmcoreinfo");
		return;
	}
	n = kcore_vmcoreinfo_count(vi);
	kcore_json_object_begin(j, "vmcoreinfo");
	kcore_json_string(j, "origin", m->info->vmcoreinfo_origin);
	kcore_json_object_begin(j, "summary");
	for (size_t i = 0; i < sizeof(summary_keys) / sizeof(summary_keys[0]);
	     i++) {
		const struct summary_key *k = &summary_keys[i];
		uint64_t v;

		if (!kcore_vmcoreinfo_get(vi, k->key))
			continue;
		if (k->hex && kcore_vmcoreinfo_get_u64(vi, k->key, &v))
			kcore_json_hex(j, k->json, v);
		else
			kcore_json_string(j, k->json,
					  kcore_vmcoreinfo_get(vi, k->key));
	}
	kcore_json_object_end(j);
	/* One member per key; the last line wins, as in the look-ups. */
	kcore_json_object_begin(j, "lines");
	for (size_t i = 0; i < n; i++) {
		const struct kcore_vmcoreinfo_entry *e =
			kcore_vmcoreinfo_entry(vi, i);
		bool later = false;

		for (size_t k = i + 1; k < n && !later; k++)
			later = !strcmp(kcore_vmcoreinfo_entry(vi, k)->key,
					e->key);
		if (!later)
			kcore_json_string(j, e->key, e->value);
	}
	kcore_json_object_end(j);
	text = kcore_vmcoreinfo_text(vi, &len);
	kcore_json_string_len(j, "text", text, len);
	kcore_json_object_end(j);
}

static void json_modules(struct kcore_json *j, const struct info_model *m)
{
	if (!m->modules_listed)
		return;
	kcore_json_array_begin(j, "modules");
	for (size_t i = 0; i < m->nmodules; i++) {
		const struct kcore_module *mod = &m->modules[i];

		kcore_json_object_begin(j, NULL);
		kcore_json_string(j, "name", mod->name);
		kcore_json_hex(j, "start", mod->start);
		kcore_json_hex(j, "end", mod->end);
		if (mod->build_id_len) {
			char hex[2 * 64 + 1];
			size_t len =
				mod->build_id_len < 64 ? mod->build_id_len : 64;

			for (size_t k = 0; k < len; k++)
				snprintf(hex + 2 * k, 3, "%02x",
					 mod->build_id[k]);
			kcore_json_string(j, "build_id", hex);
			kcore_json_hex(j, "build_id_vaddr",
				       mod->build_id_vaddr);
		} else {
			kcore_json_null(j, "build_id");
		}
		kcore_json_string(j, "file", mod->file);
		kcore_json_bool(j, "elf_in_core", mod->elf_in_core);
		kcore_json_string(j, "debug_file", mod->debug_file);
		kcore_json_object_end(j);
	}
	kcore_json_array_end(j);
	if (m->modules_error)
		kcore_json_string(j, "modules_error", m->modules_error);
}

void render_info_json(FILE *f, const struct info_model *m)
{
	struct kcore_json j;

	kcore_json_init(&j, f);
	kcore_json_object_begin(&j, NULL);
	json_source(&j, m);
	if (m->show_segments) {
		json_segments(&j, m);
		json_modules(&j, m);
	}
	if (m->show_notes) {
		json_notes(&j, m);
		json_vmcoreinfo(&j, m);
	}
	if (m->show_read_time)
		cli_read_time_json(&j, m->read_time_addr, &m->read_time);
	kcore_json_object_end(&j);
	kcore_json_finish(&j);
}
