// SPDX-License-Identifier: MIT
/* The renderer of `kcoredump info --json`: one JSON document, a pure
 * function of the model (its names shared with the text in
 * render-info.c). */
#include <elf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "info-model.h"
#include "kcoredump/json.h"

/* The "segment=" and "unreadable=" lines: "[N ]k=v k=v ... label=rest"
 * (a segment line starts with its index). */
static void json_meta_record(struct kcore_json *j, const char *line)
{
	size_t first = strcspn(line, " =");
	uint64_t index;

	kcore_json_object_begin(j, NULL);
	if (line[first] == ' ' && info_meta_number(line, first, &index)) {
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
		if (info_meta_number(eq + 1, (size_t)(end - eq - 1), &n))
			kcore_json_u64(j, key, n);
		else
			kcore_json_string_len(j, key, eq + 1,
					      (size_t)(end - eq - 1));
		line = *end ? end + 1 : end;
	}
	kcore_json_object_end(j);
}

/* Our metadata note, decoded: scalars as members, the repeated segment
 * and unreadable lines as arrays. */
static void json_meta(struct kcore_json *j, const struct info_note *n)
{
	/* The keys that repeat: arrays of the same name. */
	static const char *const lists[] = { "segment", "unreadable",
					     "read_time", "read_phase" };
	const struct kcore_metadata *md = &n->meta.md;

	kcore_json_object_begin(j, "metadata");
	for (size_t i = 0; i < md->nfields; i++) {
		const struct kcore_metadata_field *f = &md->fields[i];
		const struct info_meta_field *fi = &n->meta.fields[i];
		bool listed = false;

		for (size_t l = 0; l < 4; l++)
			listed |= !strcmp(f->key, lists[l]);
		/* A repeated scalar: the first counts. */
		if (!fi->first || listed)
			continue;
		if (fi->is_number)
			kcore_json_u64(j, f->key, fi->number);
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
				  info_type_text(s->type, tbuf, sizeof(tbuf)));
		kcore_json_u64(j, "p_type", s->type);
		info_flags_text(s->flags, fl);
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

static void json_prstatus(struct kcore_json *j, const struct kcore_prstatus *st)
{
	kcore_json_object_begin(j, "prstatus");
	kcore_json_i64(j, "pid", st->pid);
	kcore_json_i64(j, "ppid", st->ppid);
	kcore_json_i64(j, "pgrp", st->pgrp);
	kcore_json_i64(j, "sid", st->sid);
	kcore_json_i64(j, "signal", st->cursig);
	kcore_json_string(j, "signal_name", kcore_signal_name(st->cursig));
	kcore_json_i64(j, "si_signo", st->signo);
	kcore_json_i64(j, "si_code", st->code);
	kcore_json_i64(j, "si_errno", st->err);
	kcore_json_hex(j, "sigpend", st->sigpend);
	kcore_json_hex(j, "sighold", st->sighold);
	json_timeval(j, "utime", &st->utime);
	json_timeval(j, "stime", &st->stime);
	json_timeval(j, "cutime", &st->cutime);
	json_timeval(j, "cstime", &st->cstime);
	kcore_json_object_begin(j, "registers");
	for (unsigned i = 0; i < st->nregs; i++)
		kcore_json_hex(j, st->reg_names[i], st->regs[i]);
	kcore_json_object_end(j);
	kcore_json_i64(j, "fpvalid", st->fpvalid);
	kcore_json_object_end(j);
}

static void json_prpsinfo(struct kcore_json *j, const struct kcore_prpsinfo *ps)
{
	char sname[2] = { ps->sname, 0 };

	kcore_json_object_begin(j, "prpsinfo");
	kcore_json_i64(j, "state", ps->state);
	kcore_json_string(j, "sname", sname);
	kcore_json_i64(j, "zomb", ps->zomb);
	kcore_json_i64(j, "nice", ps->nice);
	kcore_json_hex(j, "flag", ps->flag);
	kcore_json_u64(j, "uid", ps->uid);
	kcore_json_u64(j, "gid", ps->gid);
	kcore_json_i64(j, "pid", ps->pid);
	kcore_json_i64(j, "ppid", ps->ppid);
	kcore_json_i64(j, "pgrp", ps->pgrp);
	kcore_json_i64(j, "sid", ps->sid);
	kcore_json_string(j, "fname", ps->fname);
	kcore_json_string(j, "psargs", ps->psargs);
	kcore_json_object_end(j);
}

static void json_siginfo(struct kcore_json *j, const struct kcore_siginfo *si)
{
	kcore_json_object_begin(j, "siginfo");
	kcore_json_i64(j, "signo", si->signo);
	kcore_json_string(j, "signal_name", kcore_signal_name(si->signo));
	kcore_json_i64(j, "code", si->code);
	kcore_json_i64(j, "errno", si->err);
	if (si->has_addr)
		kcore_json_hex(j, "addr", si->addr);
	if (si->has_sender) {
		kcore_json_i64(j, "sender_pid", si->pid);
		kcore_json_u64(j, "sender_uid", si->uid);
	}
	kcore_json_object_end(j);
}

static void json_auxv(struct kcore_json *j, const struct kcore_auxv_entry *av,
		      size_t n)
{
	kcore_json_array_begin(j, "auxv");
	for (size_t i = 0; i < n; i++) {
		kcore_json_object_begin(j, NULL);
		kcore_json_u64(j, "type", av[i].type);
		kcore_json_string(j, "name", kcore_auxv_name(av[i].type));
		kcore_json_hex(j, "value", av[i].value);
		kcore_json_object_end(j);
	}
	kcore_json_array_end(j);
}

static void json_file(struct kcore_json *j, const struct kcore_file_table *ft)
{
	kcore_json_object_begin(j, "file");
	kcore_json_u64(j, "page_size", ft->page_size);
	kcore_json_u64(j, "count", ft->count);
	kcore_json_array_begin(j, "mappings");
	for (size_t i = 0; i < ft->count; i++) {
		kcore_json_object_begin(j, NULL);
		kcore_json_hex(j, "start", ft->entries[i].start);
		kcore_json_hex(j, "end", ft->entries[i].end);
		kcore_json_hex(j, "offset", ft->entries[i].offset);
		kcore_json_string(j, "path", ft->entries[i].name);
		kcore_json_object_end(j);
	}
	kcore_json_array_end(j);
	kcore_json_object_end(j);
}

static void json_note_body(struct kcore_json *j, const struct info_note *n)
{
	if (n->failed) {
		kcore_json_string(j, "decode_error",
				  n->error ? n->error : "out of memory");
		return;
	}
	switch (n->kind) {
	case INFO_NOTE_PRSTATUS:
		json_prstatus(j, &n->prstatus);
		break;
	case INFO_NOTE_PRPSINFO:
		json_prpsinfo(j, &n->prpsinfo);
		break;
	case INFO_NOTE_SIGINFO:
		json_siginfo(j, &n->siginfo);
		break;
	case INFO_NOTE_AUXV:
		json_auxv(j, n->auxv.entries, n->auxv.count);
		break;
	case INFO_NOTE_FILE:
		json_file(j, &n->file);
		break;
	case INFO_NOTE_TASKSTRUCT:
		kcore_json_object_begin(j, "taskstruct");
		kcore_json_u64(j, "size", n->note->descsz);
		kcore_json_object_end(j);
		break;
	case INFO_NOTE_METADATA:
		json_meta(j, n);
		break;
	case INFO_NOTE_VMCOREINFO:
	case INFO_NOTE_OTHER:
		break;
	}
}

static void json_notes(struct kcore_json *j, const struct info_model *m)
{
	kcore_json_array_begin(j, "notes");
	for (size_t i = 0; i < m->nnotes; i++) {
		const struct kcore_note *note = m->notes[i].note;

		kcore_json_object_begin(j, NULL);
		kcore_json_u64(j, "index", i);
		kcore_json_string(j, "name", note->name);
		kcore_json_u64(j, "type", note->type);
		kcore_json_string(j, "type_name",
				  kcore_note_type_name(note->name, note->type));
		kcore_json_u64(j, "size", note->descsz);
		kcore_json_hex(j, "offset", note->offset);
		kcore_json_u64(j, "segment", note->segment);
		json_note_body(j, &m->notes[i]);
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
	for (size_t i = 0; info_summary_keys[i].key; i++) {
		const struct info_summary_key *k = &info_summary_keys[i];
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
