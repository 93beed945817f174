/* SPDX-License-Identifier: MIT */
/* The model `kcoredump info` collects and its two renderers. */
#ifndef KCOREDUMP_INFO_MODEL_H
#define KCOREDUMP_INFO_MODEL_H

#include <stdio.h>

#include "cli.h"
#include "kcoredump/kcore.h"

struct info_holes {
	bool known;
	uint64_t data;
	uint64_t hole;
};

/* What a note holds, as cmd-info.c decoded it once for both renderers. */
enum info_note_kind {
	INFO_NOTE_OTHER, /* not decoded: its name, type and size say it */
	INFO_NOTE_PRSTATUS,
	INFO_NOTE_PRPSINFO,
	INFO_NOTE_SIGINFO,
	INFO_NOTE_AUXV,
	INFO_NOTE_FILE,
	INFO_NOTE_TASKSTRUCT,
	INFO_NOTE_VMCOREINFO, /* the model's VMCOREINFO section shows it */
	INFO_NOTE_METADATA,   /* our metadata note */
};

/* A field of our metadata note, beside its key and value. */
struct info_meta_field {
	bool first;	/* the first field of its key (a repeat is shadowed) */
	bool is_number; /* a zero-padded count: its value is number */
	uint64_t number;
};

struct info_note {
	const struct kcore_note *note;
	enum info_note_kind kind;
	/* Its decoder failed: why (NULL when describing it ran out of
	 * memory); the decoded fields below are then unset. */
	bool failed;
	char *error;
	union {
		struct kcore_prstatus prstatus;
		struct kcore_prpsinfo prpsinfo;
		struct kcore_siginfo siginfo;
		struct {
			struct kcore_auxv_entry *entries;
			size_t count;
		} auxv;
		struct kcore_file_table file;
		struct {
			struct kcore_metadata md;
			struct info_meta_field *fields; /* one per md field */
			/* The time map's "read_time" lines: how many, and
			 * the last end_us among them. */
			uint64_t read_cells;
			uint64_t read_end_us;
		} meta;
	};
};

struct info_model {
	struct kcore_source *src;
	const struct kcore_source_info *info;
	struct info_holes *holes; /* one per segment */
	bool holes_counted;
	bool modules_listed;
	struct kcore_module *modules;
	size_t nmodules;
	char *modules_error; /* why listing failed, or NULL */
	bool show_segments;
	bool show_notes;
	struct info_note *notes; /* when show_notes: one per note */
	size_t nnotes;
	bool all_registers;
	/* --read-time ADDR: when the dump read it (cli_read_time()). */
	bool show_read_time;
	uint64_t read_time_addr;
	struct cli_read_time read_time;
};

void render_info_text(FILE *f, const struct info_model *m);
void render_info_json(FILE *f, const struct info_model *m);

/* What both renderers name (render-info.c). */
const char *machine_name(uint16_t machine, char *buf, size_t size);
const char *info_kind_text(enum kcore_source_kind kind);
const char *info_type_text(uint32_t type, char *buf, size_t size);
void info_flags_text(uint32_t flags, char out[4]);
/* A metadata value that is a zero-padded count: its value. */
bool info_meta_number(const char *v, size_t len, uint64_t *ret);
/* Which VMCOREINFO lines the summary names, and how; ends with a NULL
 * key. */
struct info_summary_key {
	const char *json;
	const char *key;
	bool hex; /* print as an address */
};
extern const struct info_summary_key info_summary_keys[];

#endif
