// SPDX-License-Identifier: MIT
/* kcoredump: the command table and dispatch. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kcoredump/version.h"

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
	{ "registers", 0, CLI_ARG_NONE, NULL,
	  "show every register of each NT_PRSTATUS in text output", NULL, 'r' },
	{ 0 },
};

static const struct cli_option complete_options[] = {
	{ "shell", 0, CLI_ARG_REQUIRED, "SHELL",
	  "print the completion script for SHELL", "bash zsh fish", 1100 },
	{ 0 },
};

static const struct cli_option no_options[] = { { 0 } };

extern const struct cli_option dump_options[];
extern const struct cli_option convert_options[];
extern const struct cli_option verify_options[];
extern const struct cli_option extract_options[];
extern const struct cli_option bench_options[];
extern const struct cli_option pid_options[];
extern const struct cli_option core_handler_options[];
extern const struct cli_option list_options[];
extern const struct cli_option cat_options[];
extern const struct cli_option mount_options[];

const struct cli_command cli_commands[] = {
	{ "dump", cmd_dump, dump_options, "[SOURCE]", "@file",
	  "write a sparse, compressed, hashed ELF dump of a source", false },
	{ "pid", cmd_pid, pid_options, "PID", NULL,
	  "write an ELF core of a running process (like gcore, sparse)",
	  false },
	{ "convert", cmd_convert, convert_options, "IN", "@file",
	  "rewrite a dump in another format (elf, kdump, lime, avml)", false },
	{ "verify", cmd_verify, verify_options, "DUMP [SOURCE]", "@file",
	  "check a dump against its digests (and a source)", false },
	{ "extract", cmd_extract, extract_options, "DUMP", "@file",
	  "decompress a .zst/.xz dump into a sparse ELF file", false },
	{ "mount", cmd_mount, mount_options, "DUMP MOUNTPOINT", "@file",
	  "serve any dump as a plain ELF core file (FUSE), for crash, drgn, "
	  "gdb",
	  false },
	{ "info", cmd_info, info_options, "[SOURCE]", "@file",
	  "describe a kcore or ELF core: source, segments, notes", false },
	{ "cat", cmd_cat, cat_options, "[SOURCE]", "@file",
	  "print memory at a virtual or physical address of any source",
	  false },
	{ "bench", cmd_bench, bench_options, "[SOURCE]", "@file",
	  "measure read throughput per segment class", false },
	{ "core-handler", cmd_core_handler, core_handler_options,
	  "PID UID GID SIGNAL TIME [COMM]", NULL,
	  "store a core from the kernel's core_pattern pipe", false },
	{ "list", cmd_list, list_options, NULL, NULL,
	  "list the cores core-handler stored", false },
	{ "help", cmd_help, no_options, "[COMMAND]", "@command",
	  "show help for kcoredump or a command", false },
	{ "version", cmd_version, no_options, NULL, NULL, "show the version",
	  false },
	{ "__complete", cmd_complete, complete_options, "[COMMAND]", NULL,
	  "completion helper for the shell scripts", true },
	{ 0 },
};

const struct cli_command *cli_find_command(const char *name)
{
	for (const struct cli_command *c = cli_commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

static unsigned edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned row[64];

	if (la >= 63 || lb >= 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned prev = row[0];

		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned cur = row[j];
			unsigned best = prev + (a[i - 1] != b[j - 1]);

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = cur;
		}
	}
	return row[lb];
}

static int unknown_command(const char *name)
{
	const struct cli_command *best = NULL;
	unsigned best_d = 3;

	for (const struct cli_command *c = cli_commands; c->name; c++) {
		unsigned d = edit_distance(name, c->name);

		if (!c->hidden && d < best_d) {
			best_d = d;
			best = c;
		}
	}
	fprintf(stderr, "kcoredump: '%s' is not a command.", name);
	if (best)
		fprintf(stderr, " Did you mean '%s'?", best->name);
	fprintf(stderr, "\nRun 'kcoredump --help' for the list.\n");
	return EXIT_USAGE;
}

/* Parse a command that takes no options of its own; returns -1 to go
 * on, else the exit status. */
static int parse_plain(const char *name, int argc, char **argv, int max_args,
		       int *ret_first)
{
	struct cli_parser *p =
		cli_parser_create(cli_find_command(name), argc, argv);
	const char *arg;
	int c, status;

	if (!p)
		return EXIT_FAILURE_;
	while ((c = cli_parser_next(p, &arg)) >= 0)
		;
	status = cli_parser_end(p, c, ret_first);
	if (status >= 0)
		return status;
	if (argc - *ret_first > max_args)
		return cli_usage_error(NULL, name, "too many arguments");
	return -1;
}

int cmd_help(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_command *cmd;
	int first, status = parse_plain("help", argc, argv, 1, &first);

	if (status >= 0)
		return status;
	if (first < argc) {
		cmd = cli_find_command(argv[first]);
		if (!cmd)
			return unknown_command(argv[first]);
		cli_print_help(stdout, cmd);
		return EXIT_OK;
	}
	cli_print_main_help(stdout);
	return EXIT_OK;
}

/* The version, then how this binary was built: a responder copying one
 * file to a host needs to see that it is static and what it carries. */
static void print_version(void)
{
	size_t n;
	const struct kcore_library_version *v = kcore_library_versions(&n);

	printf("kcoredump %s\n", KCOREDUMP_VERSION);
	printf("build: %s, %s, glibc %s\n",
	       kcore_build_is_static() ? "static" : "shared libraries",
	       kcore_build_machine(), kcore_build_libc_version());
	printf("libraries:");
	for (size_t i = 0; i < n; i++)
		printf("%s %s %s", i ? "," : "", v[i].name, v[i].version);
	printf("\n");
}

int cmd_version(struct cli_ctx *ctx, int argc, char **argv)
{
	int first, status = parse_plain("version", argc, argv, 0, &first);

	if (status >= 0)
		return status;
	print_version();
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	struct cli_ctx ctx = { .progname = "kcoredump" };
	const struct cli_command *cmd;

	if (argc < 2) {
		cli_print_main_help(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		cli_print_main_help(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		print_version();
		return EXIT_OK;
	}
	/* Options or a path without a command mean "dump". */
	if (argv[1][0] == '-' || strchr(argv[1], '/'))
		return cmd_dump(&ctx, argc, argv);
	cmd = cli_find_command(argv[1]);
	if (!cmd)
		return unknown_command(argv[1]);
	return cmd->run(&ctx, argc - 1, argv + 1);
}
