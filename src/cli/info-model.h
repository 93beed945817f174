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
const char *machine_name(uint16_t machine, char *buf, size_t size);

#endif
