// SPDX-License-Identifier: MIT
/*
 * kcoredump convert: any source (an ELF dump, a vmcore, a process core,
 * or another format once it can be opened as a source) rewritten as an
 * ELF, kdump-compressed or LiME file through the dump pipeline: holes
 * skipped, blocks hashed, output published atomically.
 */
#include "cli.h"

static const struct cli_option convert_options[] = {
	{ "format", 0, CLI_ARG_REQUIRED, "FORMAT",
	  "output format: {formats} (required)", "@formats", DOPT_FORMAT },
	{ "codec", 0, CLI_ARG_REQUIRED, "CODEC",
	  "kdump page compression: {codecs*}", "@codecs", DOPT_CODEC },
	{ "range", 'r', CLI_ARG_REQUIRED, "START-END",
	  "only addresses in START-END (repeatable; END may be +LENGTH)", NULL,
	  'r' },
	{ "phys", 0, CLI_ARG_NONE, NULL,
	  "--range addresses are physical, not virtual", NULL, DOPT_PHYS },
	{ "segments", 0, CLI_ARG_REQUIRED, "CLASSES",
	  "only these segment classes, e.g. ram,text,modules,vmalloc,vmemmap",
	  "ram text modules vmalloc vmemmap file anon stack heap vdso other",
	  DOPT_SEGMENTS },
	{ "exclude", 'd', CLI_ARG_REQUIRED, "CLASSES",
	  "leave out pages by kind: free,cache,cache-private,user,zero, all, "
	  "or a makedumpfile dump level (0-31)",
	  "free cache cache-private user zero all 31", 'd' },
	{ "allow-ram-output", 0, CLI_ARG_NONE, NULL,
	  "write a dump of live memory to a file system in this machine's "
	  "RAM (tmpfs, ramfs, zram), which is refused otherwise",
	  NULL, DOPT_ALLOW_RAM_OUTPUT },
	CLI_OPT_ARCH,
	{ "dry-run", 'n', CLI_ARG_NONE, NULL,
	  "show the segments that would be written and stop", NULL, 'n' },
	{ 0 },
};

static int cmd_convert(struct cli_ctx *ctx, int argc, char **argv)
{
	return cli_dump_run(ctx, &cli_cmd_convert, argc, argv);
}

const struct cli_command cli_cmd_convert = {
	.name = "convert",
	.run = cmd_convert,
	.options = convert_options,
	.args = "IN",
	.args_complete = "@file",
	.summary = "rewrite a dump in another format (elf, kdump, lime, avml)",
	.group = cli_output_options,
};
