// SPDX-License-Identifier: MIT
/* kcoredump info: collect the model, then render it as text or JSON. */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "info-model.h"

#ifndef NT_TASKSTRUCT
#define NT_TASKSTRUCT 4
#endif

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
 * Our metadata note's fields beside its lines: which is the first of its
 * key (the keys sorted, n log n: a note's fields are untrusted and many;
 * ties by position), which is a count, and the time map's extent.
 */
static struct kcore_error *decode_meta(const struct kcore_source *src,
				       struct info_note *n)
{
	struct kcore_metadata *md = &n->meta.md;
	struct kcore_error *err = kcore_note_metadata(src, n->note, md);
	struct info_meta_field *fields;
	struct meta_key *keys;
	size_t count;

	if (err)
		return err;
	count = md->nfields ? md->nfields : 1;
	fields = calloc(count, sizeof(*fields));
	keys = calloc(count, sizeof(*keys));
	if (!fields || !keys) {
		free(fields);
		free(keys);
		kcore_metadata_deinit(md);
		return &kcore_error_nomem;
	}
	for (size_t i = 0; i < md->nfields; i++)
		keys[i] = (struct meta_key){ md->fields[i].key, i };
	qsort(keys, md->nfields, sizeof(*keys), cmp_meta_key);
	for (size_t i = 0; i < md->nfields; i++)
		fields[keys[i].index].first =
			!i || strcmp(keys[i - 1].key, keys[i].key) != 0;
	free(keys);
	for (size_t i = 0; i < md->nfields; i++) {
		const struct kcore_metadata_field *f = &md->fields[i];
		const char *v = strstr(f->value, "end_us=");
		unsigned long long t;

		fields[i].is_number = info_meta_number(
			f->value, strlen(f->value), &fields[i].number);
		if (strcmp(f->key, "read_time") != 0)
			continue;
		n->meta.read_cells++;
		if (v && sscanf(v, "end_us=%llu", &t) == 1 &&
		    t > n->meta.read_end_us)
			n->meta.read_end_us = t;
	}
	n->meta.fields = fields;
	return NULL;
}

static bool is_meta_note(const struct kcore_note *note)
{
	const char *t = kcore_note_type_name(note->name, note->type);

	return t && !strcmp(t, "KCOREDUMP_METADATA");
}

/* A note's kind, and its fields where info shows them. */
static struct kcore_error *decode_note(const struct kcore_source *src,
				       struct info_note *n)
{
	const struct kcore_note *note = n->note;
	bool core = strcmp(note->name, "CORE") == 0;

	if (core && note->type == NT_PRSTATUS) {
		n->kind = INFO_NOTE_PRSTATUS;
		return kcore_note_prstatus(src, note, &n->prstatus);
	} else if (core && note->type == NT_PRPSINFO) {
		n->kind = INFO_NOTE_PRPSINFO;
		return kcore_note_prpsinfo(src, note, &n->prpsinfo);
	} else if (core && note->type == NT_SIGINFO) {
		n->kind = INFO_NOTE_SIGINFO;
		return kcore_note_siginfo(src, note, &n->siginfo);
	} else if (core && note->type == NT_AUXV) {
		n->kind = INFO_NOTE_AUXV;
		return kcore_note_auxv(src, note, &n->auxv.entries,
				       &n->auxv.count);
	} else if (core && note->type == NT_FILE) {
		n->kind = INFO_NOTE_FILE;
		return kcore_note_file(src, note, &n->file);
	} else if (core && note->type == NT_TASKSTRUCT) {
		n->kind = INFO_NOTE_TASKSTRUCT;
	} else if (strcmp(note->name, "VMCOREINFO") == 0) {
		n->kind = INFO_NOTE_VMCOREINFO;
	} else if (is_meta_note(note)) {
		n->kind = INFO_NOTE_METADATA;
		return decode_meta(src, n);
	}
	return NULL;
}

/* Every note decoded once; one that does not decode keeps why. */
static struct kcore_error *collect_notes(struct info_model *m)
{
	m->nnotes = kcore_source_nnotes(m->src);
	m->notes = calloc(m->nnotes ? m->nnotes : 1, sizeof(*m->notes));
	if (!m->notes)
		return &kcore_error_nomem;
	for (size_t i = 0; i < m->nnotes; i++) {
		struct info_note *n = &m->notes[i];
		struct kcore_error *err;

		n->note = kcore_source_note(m->src, i);
		err = decode_note(m->src, n);
		if (err) {
			n->failed = true;
			n->error = kcore_error_describe(err);
			kcore_error_destroy(err);
		}
	}
	return NULL;
}

static void free_notes(struct info_note *notes, size_t count)
{
	for (size_t i = 0; notes && i < count; i++) {
		struct info_note *n = &notes[i];

		free(n->error);
		if (n->failed)
			continue;
		if (n->kind == INFO_NOTE_AUXV) {
			free(n->auxv.entries);
		} else if (n->kind == INFO_NOTE_FILE) {
			free(n->file.entries);
		} else if (n->kind == INFO_NOTE_METADATA) {
			kcore_metadata_deinit(&n->meta.md);
			free(n->meta.fields);
		}
	}
	free(notes);
}

static struct kcore_error *collect(struct info_model *m, bool holes,
				   bool modules, unsigned module_flags)
{
	size_t n = kcore_source_nsegments(m->src);

	m->info = kcore_source_info(m->src);
	m->holes = calloc(n ? n : 1, sizeof(*m->holes));
	if (!m->holes)
		return &kcore_error_nomem;
	/* Regular files, and formats that know their holes (kdump's
	 * excluded pages, a LiME file's holes); not the live kcore. */
	m->holes_counted = holes && (m->info->is_regular ||
				     (kcore_source_knows_holes(m->src) &&
				      !kcore_source_is_elf(m->src)));
	for (size_t i = 0; m->holes_counted && i < n; i++) {
		const struct kcore_segment *seg =
			kcore_source_segment(m->src, i);
		struct kcore_error *err;

		if (seg->type != PT_LOAD || !seg->filesz)
			continue;
		err = kcore_source_count_holes(m->src, i, &m->holes[i].data,
					       &m->holes[i].hole);
		if (err)
			return err;
		m->holes[i].known = true;
	}
	if (modules && m->info->kind == KCORE_SOURCE_PROCESS_CORE &&
	    m->show_segments) {
		struct kcore_error *err = kcore_source_modules(
			m->src, module_flags, &m->modules, &m->nmodules);

		/* Asked to open the files a core names, in a core that is
		 * not the caller's: refused, and said so. */
		if (err && err->code == KCORE_ERR_ACCESS &&
		    (module_flags & KCORE_MODULES_OPEN_FILES))
			return err;
		m->modules_listed = true;
		if (err) {
			/* Not fatal: the rest of the report stands. */
			m->modules_error = kcore_error_describe(err);
			kcore_error_destroy(err);
		}
	}
	return m->show_notes ? collect_notes(m) : NULL;
}

static const struct cli_option info_options[] = {
	{ "json", 'j', CLI_ARG_NONE, NULL,
	  "print one JSON document instead of text", NULL, 'j' },
	{ "segments-only", 0, CLI_ARG_NONE, NULL,
	  "show only the source summary and segments", NULL, 1000 },
	{ "notes-only", 0, CLI_ARG_NONE, NULL,
	  "show only the source summary and notes", NULL, 1001 },
	{ "no-holes", 0, CLI_ARG_NONE, NULL,
	  "do not count data and hole bytes with SEEK_DATA/SEEK_HOLE", NULL,
	  1002 },
	{ "no-modules", 0, CLI_ARG_NONE, NULL,
	  "do not list the modules of a process core (libdwfl)", NULL, 1003 },
	{ "open-mapped-files", 0, CLI_ARG_NONE, NULL,
	  "let libdwfl open the files your own process core names", NULL,
	  1005 },
	{ "registers", 0, CLI_ARG_NONE, NULL,
	  "show every register of each NT_PRSTATUS in text output", NULL,
	  1004 },
	{ "read-time", 0, CLI_ARG_REQUIRED, "ADDR",
	  "say when a kcoredump dump read ADDR (virtual, else physical), "
	  "from its note's time map",
	  NULL, 1006 },
	CLI_OPT_ARCH,
	CLI_OPT_QUIET("print nothing: the exit status says whether SOURCE "
		      "opens (0) and why not"),
	CLI_OPT_VERBOSE("text: every register, as --registers"),
	{ 0 },
};

static int cmd_info(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_command *cmd = &cli_cmd_info;
	struct cli_parser *p = cli_parser_create(cmd, argc, argv);
	struct info_model m = { .show_segments = true, .show_notes = true };
	bool holes = true, modules = true, quiet = false;
	unsigned module_flags = 0;
	const char *read_time = NULL;
	const char *source = "/proc/kcore", *arg;
	struct kcore_open_opts oo = { 0 };
	struct kcore_error *err;
	int c, status = EXIT_OK;

	if (!p)
		return cli_fail(ctx, &kcore_error_nomem);
	while ((c = cli_parser_next(p, &arg)) >= 0) {
		switch (c) {
		case 'j':
			ctx->json = true;
			break;
		case 1000:
			m.show_notes = false;
			break;
		case 1001:
			m.show_segments = false;
			break;
		case 1002:
			holes = false;
			break;
		case 1003:
			modules = false;
			break;
		case 1004:
			m.all_registers = true;
			break;
		case 1005:
			module_flags |= KCORE_MODULES_OPEN_FILES;
			break;
		case 1006:
			read_time = arg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'v':
			m.all_registers = true;
			break;
		case DOPT_ARCH:
			status = cli_arch_option(ctx, "info", arg, &oo.machine);
			if (status) {
				cli_parser_destroy(p);
				return status;
			}
			break;
		}
	}
	int first, done = cli_parser_end(p, c, &first);

	if (done >= 0)
		return done;
	if (argc - first > 1)
		return cli_usage_error(ctx, "info",
				       "takes one SOURCE, got %d arguments",
				       argc - first);
	if (!m.show_notes && !m.show_segments)
		return cli_usage_error(ctx, "info",
				       "--segments-only and --notes-only "
				       "exclude each other");
	if (argc - first == 1)
		source = argv[first];
	err = kcore_source_open(source, &oo, &m.src);
	if (err)
		return cli_fail(ctx, err);
	if (read_time && !cli_parse_u64(read_time, &m.read_time_addr)) {
		kcore_source_destroy(m.src);
		return cli_usage_error(ctx, "info",
				       "--read-time: '%s' is not an address",
				       read_time);
	}
	m.show_read_time = read_time != NULL;
	err = quiet ? NULL : collect(&m, holes, modules, module_flags);
	if (!err && m.show_read_time && !quiet)
		err = cli_read_time(m.src, m.read_time_addr,
				    CLI_READ_TIME_EITHER, &m.read_time);
	if (err) {
		status = cli_fail(ctx, err);
	} else if (quiet) {
		/* Opened: that is the answer. */
	} else if (ctx->json) {
		render_info_json(stdout, &m);
	} else if (m.show_read_time) {
		/* The question asked, answered alone. */
		cli_read_time_text(stdout, m.read_time_addr, &m.read_time);
	} else {
		render_info_text(stdout, &m);
	}
	if (fflush(stdout) != 0 && status == EXIT_OK)
		status = cli_fail(ctx, kcore_error_create(KCORE_ERR_OS, errno,
							  "<stdout>",
							  "write failed"));
	kcore_modules_free(m.modules, m.nmodules);
	free(m.modules_error);
	free(m.holes);
	free_notes(m.notes, m.nnotes);
	kcore_source_destroy(m.src);
	return status;
}

const struct cli_command cli_cmd_info = {
	.name = "info",
	.run = cmd_info,
	.options = info_options,
	.args = "[SOURCE]",
	.args_complete = "@file",
	.summary = "describe a kcore or ELF core: source, segments, notes",
};
