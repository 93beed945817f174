// SPDX-License-Identifier: MIT
/* kcoredump: the command table and dispatch; help and version. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kcoredump/dump.h"
#include "kcoredump/version.h"

static const struct cli_option no_options[] = { { 0 } };

static int cmd_help(struct cli_ctx *ctx, int argc, char **argv);
static int cmd_version(struct cli_ctx *ctx, int argc, char **argv);

static const struct cli_command help_command = {
	.name = "help",
	.run = cmd_help,
	.options = no_options,
	.args = "[COMMAND]",
	.args_complete = "@command",
	.summary = "show help for kcoredump or a command",
};
static const struct cli_command version_command = {
	.name = "version",
	.run = cmd_version,
	.options = no_options,
	.summary = "show the version",
};

/* The commands, in the order help lists them.  Each is defined by its
 * own file (cmd-*.c); nothing here knows their options. */
static const struct cli_command *const commands[] = {
	&cli_cmd_dump,
	&cli_cmd_pid,
	&cli_cmd_convert,
	&cli_cmd_verify,
	&cli_cmd_extract,
	&cli_cmd_mount,
	&cli_cmd_info,
	&cli_cmd_cat,
	&cli_cmd_bench,
	&cli_cmd_core_handler,
	&cli_cmd_list,
	&cli_cmd_show,
	&cli_cmd_debug,
	&help_command,
	&version_command,
	&cli_cmd_complete,
	NULL,
};

static int unknown_command(const char *name)
{
	const struct cli_command *best = NULL;
	unsigned best_d = 3;

	for (const struct cli_command *const *c = commands; *c; c++) {
		unsigned d = cli_edit_distance(name, (*c)->name);

		if (!(*c)->hidden && d < best_d) {
			best_d = d;
			best = *c;
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
static int parse_plain(const struct cli_command *cmd, int argc, char **argv,
		       int max_args, int *ret_first)
{
	struct cli_parser *p = cli_parser_create(cmd, argc, argv);
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
		return cli_usage_error(NULL, cmd->name, "too many arguments");
	return -1;
}

static int cmd_help(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_command *cmd;
	int first, status = parse_plain(&help_command, argc, argv, 1, &first);

	if (status >= 0)
		return status;
	if (first < argc) {
		cmd = cli_find_command(commands, argv[first]);
		if (!cmd)
			return unknown_command(argv[first]);
		cli_print_help(stdout, cmd);
		return EXIT_OK;
	}
	cli_print_main_help(stdout, commands);
	return EXIT_OK;
}

/* Which SHA-256 implementation long digests take here, and why. */
static void print_sha256_choice(void)
{
	const struct kcore_sha256_choice *c;
	struct kcore_error *err = kcore_sha256_choose(&c);

	printf("sha256: %s (", c->name);
	if (!strcmp(c->why, "timed"))
		printf("the faster here: openssl %.0f MiB/s, nettle %.0f MiB/s",
		       c->mib_per_s[KCORE_SHA256_OPENSSL],
		       c->mib_per_s[KCORE_SHA256_NETTLE]);
	else if (!strcmp(c->why, "KCOREDUMP_SHA256"))
		printf("KCOREDUMP_SHA256");
	else
		printf("the only one built in");
	printf(")\n");
	if (err) {
		char *msg = kcore_error_describe(err);

		fprintf(stderr, "kcoredump: %s\n", msg ? msg : "out of memory");
		free(msg);
		kcore_error_destroy(err);
	}
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
	printf(", libfuse %s\n", cli_fuse_version());
	print_sha256_choice();
}

static int cmd_version(struct cli_ctx *ctx, int argc, char **argv)
{
	int first,
		status = parse_plain(&version_command, argc, argv, 0, &first);

	if (status >= 0)
		return status;
	print_version();
	return EXIT_OK;
}

static const struct cli_option help_option = { "help", 'h',  CLI_ARG_NONE, NULL,
					       NULL,   NULL, 'h' };

/* The option of list o that arg names (-o, --output, --output=FILE), or
 * NULL. */
static const struct cli_option *option_in(const struct cli_option *o,
					  const char *arg)
{
	for (; o && o->name; o++) {
		size_t n = strlen(o->name);

		if (arg[1] == '-' && !strncmp(arg + 2, o->name, n) &&
		    (!arg[2 + n] || arg[2 + n] == '='))
			return o;
		if (arg[1] != '-' && o->short_name && arg[1] == o->short_name)
			return o;
	}
	return NULL;
}

/* dump's option (its own or its group's) that arg names, or NULL; not
 * -v: "kcoredump -v" is more often a version asked for than a verbose
 * dump of the running kernel. */
static const struct cli_option *dump_option(const char *arg)
{
	const struct cli_option *o;

	if (arg[0] != '-' || !arg[1])
		return NULL;
	o = option_in(cli_cmd_dump.options, arg);
	if (!o)
		o = option_in(cli_cmd_dump.group, arg);
	if (o && o->short_name == 'v')
		return NULL;
	if (o)
		return o;
	if (!strcmp(arg, "--help") || !strcmp(arg, "-h"))
		return &help_option;
	return NULL;
}

/*
 * Without a command, kcoredump means dump, but only for an argument list
 * that starts with an option dump knows (or a path): "kcoredump -v" is not
 * "dump: unknown option", and "kcoredump --json info core" put the
 * options before the command.  -1 to run dump, else the exit status.
 */
static int check_shorthand(int argc, char **argv)
{
	const struct cli_option *o = NULL;

	if (!strcmp(argv[1], "-v") || !strcmp(argv[1], "--verbose")) {
		fprintf(stderr,
			"kcoredump: '%s' is not a command: 'kcoredump "
			"--version' shows the version, 'kcoredump dump %s' "
			"is a verbose dump.\n",
			argv[1], argv[1]);
		return EXIT_USAGE;
	}
	if (argv[1][0] == '-' && !dump_option(argv[1])) {
		fprintf(stderr,
			"kcoredump: '%s' is not a command, and not an option "
			"of dump (what kcoredump does without a command).\n"
			"Run 'kcoredump --help' for the commands and "
			"'kcoredump dump --help' for dump's options.\n",
			argv[1]);
		return EXIT_USAGE;
	}
	for (int i = 1; i < argc; i++) {
		bool takes_arg = o && o->arg == CLI_ARG_REQUIRED &&
				 !strchr(argv[i - 1], '=') &&
				 (argv[i - 1][1] == '-' || !argv[i - 1][2]);
		const struct cli_command *c;

		if (!strcmp(argv[i], "--"))
			break;
		o = argv[i][0] == '-' ? dump_option(argv[i]) : NULL;
		if (takes_arg || argv[i][0] == '-')
			continue;
		c = cli_find_command(commands, argv[i]);
		if (c && !c->hidden && c != &cli_cmd_dump) {
			fprintf(stderr,
				"kcoredump: options go after the command: "
				"'kcoredump %s %s ...' (a source named '%s' "
				"is written './%s')\n",
				c->name, argv[1], argv[i], argv[i]);
			return EXIT_USAGE;
		}
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct cli_ctx ctx = { .progname = "kcoredump", .commands = commands };
	const struct cli_command *cmd;
	char *cmdline;

	if (argc < 2) {
		cli_print_main_help(stderr, commands);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		cli_print_main_help(stdout, commands);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		print_version();
		return EXIT_OK;
	}
	/* Options of dump's, or a path, without a command mean "dump". */
	if (argv[1][0] == '-' || strchr(argv[1], '/')) {
		int status = check_shorthand(argc, argv);

		if (status >= 0)
			return status;
		cmdline = cli_join_args("dump", argc, argv);
		ctx.command_line = cmdline;
		status = cli_cmd_dump.run(&ctx, argc, argv);
		free(cmdline);
		return status;
	}
	cmd = cli_find_command(commands, argv[1]);
	if (!cmd)
		return unknown_command(argv[1]);
	cmdline = cli_join_args(cmd->name, argc - 1, argv + 1);
	ctx.command_line = cmdline;
	int status = cmd->run(&ctx, argc - 1, argv + 1);
	free(cmdline);
	return status;
}
