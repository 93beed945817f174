// SPDX-License-Identifier: MIT
/*
 * kcoredump convert: any source (an ELF dump, a vmcore, a process core,
 * or another format once it can be opened as a source) rewritten as an
 * ELF, kdump-compressed or LiME file through the dump pipeline: holes
 * skipped, blocks hashed, output published atomically.
 */
#include "cli.h"

static const struct cli_option convert_options[] = {
	{ "output", 'o', CLI_ARG_REQUIRED, "FILE",
	  "write the result to FILE ('-' for stdout)", "@file", 'o' },
	{ "format", 0, CLI_ARG_REQUIRED, "FORMAT",
	  "output format: elf, kdump, lime or avml (required)", "@formats",
	  DOPT_FORMAT },
	{ "compress", 0, CLI_ARG_REQUIRED, "METHOD",
	  "whole-stream compression of elf and lime: zstd, xz or none "
	  "(default: from the suffix)",
	  "zstd xz none", DOPT_COMPRESS },
	{ "codec", 0, CLI_ARG_REQUIRED, "CODEC",
	  "kdump page compression: zlib (default), zstd, lzo, snappy or "
	  "none",
	  "zstd zlib lzo snappy none", DOPT_CODEC },
	{ "level", 0, CLI_ARG_REQUIRED, "N",
	  "compression level (of the stream, or of the kdump codec)", NULL,
	  DOPT_LEVEL },
	{ "threads", 'T', CLI_ARG_REQUIRED, "N",
	  "worker threads for hashing and compression (default: CPUs)", NULL,
	  'T' },
	{ "block-size", 0, CLI_ARG_REQUIRED, "SIZE",
	  "read size, a multiple of 1M (default 4M)", NULL, DOPT_BLOCK_SIZE },
	{ "frame-size", 0, CLI_ARG_REQUIRED, "SIZE",
	  ".zst/.xz: bytes per independent frame, 4K..64M (default 4M)", NULL,
	  DOPT_FRAME_SIZE },
	{ "hash", 0, CLI_ARG_REQUIRED, "METHOD",
	  "integrity digests: sha256 (default) or none", "sha256 none",
	  DOPT_HASH },
	{ "file-sha256", 0, CLI_ARG_NONE, NULL,
	  "hash the file's bytes even when it is sparse (its holes are hashed "
	  "as zeros: the cost of its logical size)",
	  NULL, DOPT_FILE_SHA256 },
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
	{ "force", 'f', CLI_ARG_NONE, NULL, "replace an existing output file",
	  NULL, 'f' },
	{ "allow-ram-output", 0, CLI_ARG_NONE, NULL,
	  "write a dump of live memory to a file system in this machine's "
	  "RAM (tmpfs, ramfs, zram), which is refused otherwise",
	  NULL, DOPT_ALLOW_RAM_OUTPUT },
	{ "sync", 0, CLI_ARG_NONE, NULL,
	  "fsync the result before publishing it", NULL, DOPT_SYNC },
	{ "special-output", 0, CLI_ARG_NONE, NULL,
	  "write into an existing FIFO or device named by -o (owned by root "
	  "or us; never through a symbolic link)",
	  NULL, DOPT_SPECIAL_OUTPUT },
	{ "quiet", 'q', CLI_ARG_NONE, NULL, "print no summary", NULL, 'q' },
	{ "progress", 0, CLI_ARG_NONE, NULL,
	  "show progress even when stderr is not a terminal", NULL,
	  DOPT_PROGRESS },
	{ "no-progress", 0, CLI_ARG_NONE, NULL, "never show progress", NULL,
	  DOPT_NO_PROGRESS },
	{ "dry-run", 'n', CLI_ARG_NONE, NULL,
	  "show the segments that would be written and stop", NULL, 'n' },
	{ "json", 'j', CLI_ARG_NONE, NULL,
	  "print the summary as one JSON document", NULL, 'j' },
	{ 0 },
};

static int cmd_convert(struct cli_ctx *ctx, int argc, char **argv)
{
	return cli_dump_run(ctx, &cli_cmd_convert, argc, argv);
}

const struct cli_command cli_cmd_convert = {
	"convert",
	cmd_convert,
	convert_options,
	"IN",
	"@file",
	"rewrite a dump in another format (elf, kdump, lime, avml)",
	false
};
