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
bool info_is_meta_note(const struct kcore_note *note);
/* Which VMCOREINFO lines the summary names, and how; ends with a NULL
 * key. */
struct info_summary_key {
	const char *json;
	const char *key;
	bool hex; /* print as an address */
};
extern const struct info_summary_key info_summary_keys[];

#endif
