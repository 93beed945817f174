// SPDX-License-Identifier: MIT
/* Option specs to getopt tables and --help text. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const struct cli_option cli_common_options[] = {
	{ "help", 'h', CLI_ARG_NONE, NULL, "show this help and exit", NULL,
	  'h' },
	{ 0 },
};

struct cli_parser {
	const struct cli_command *cmd;
	int argc;
	char **argv;
	struct option *longopts;
	char shortopts[128];
};

static size_t count_options(const struct cli_option *o)
{
	size_t n = 0;

	while (o && o[n].name)
		n++;
	return n;
}

static void add_options(struct cli_parser *p, const struct cli_option *o,
			size_t *n, size_t *s)
{
	for (; o && o->name; o++) {
		struct option *lo = &p->longopts[(*n)++];

		lo->name = o->name;
		lo->has_arg = o->arg == CLI_ARG_NONE	   ? no_argument
			      : o->arg == CLI_ARG_REQUIRED ? required_argument
							   : optional_argument;
		lo->flag = NULL;
		lo->val = o->short_name ? o->short_name : o->key;
		if (o->short_name && *s + 3 < sizeof(p->shortopts)) {
			p->shortopts[(*s)++] = (char)o->short_name;
			if (o->arg == CLI_ARG_REQUIRED)
				p->shortopts[(*s)++] = ':';
		}
	}
}

struct cli_parser *cli_parser_create(const struct cli_command *cmd, int argc,
				     char **argv)
{
	struct cli_parser *p = calloc(1, sizeof(*p));
	size_t n = 0, s = 0;

	if (!p)
		return NULL;
	p->cmd = cmd;
	p->argc = argc;
	p->argv = argv;
	p->longopts = calloc(count_options(cmd->options) +
				     count_options(cli_common_options) + 1,
			     sizeof(*p->longopts));
	if (!p->longopts) {
		free(p);
		return NULL;
	}
	/* ':' first: report a missing value apart from an unknown option;
	 * GNU getopt still lets options follow positional arguments. */
	p->shortopts[s++] = ':';
	add_options(p, cmd->options, &n, &s);
	add_options(p, cli_common_options, &n, &s);
	p->shortopts[s] = '\0';
	optind = 1;
	opterr = 0;
	return p;
}

int cli_parser_next(struct cli_parser *p, const char **ret_arg)
{
	int prev = optind;
	int c = getopt_long(p->argc, p->argv, p->shortopts, p->longopts, NULL);

	*ret_arg = optarg;
	if (c == -1)
		return -1;
	if (c == 'h') {
		cli_print_help(stdout, p->cmd);
		return -3;
	}
	if (c == '?' || c == ':') {
		const char *bad = prev < p->argc ? p->argv[prev] : "?";

		if (c == ':')
			fprintf(stderr,
				"kcoredump %s: option '%s' needs a "
				"value\n",
				p->cmd->name, bad);
		else
			fprintf(stderr, "kcoredump %s: unknown option '%s'\n",
				p->cmd->name, bad);
		fprintf(stderr, "Try 'kcoredump %s --help'.\n", p->cmd->name);
		return -2;
	}
	return c;
}

int cli_parser_end(struct cli_parser *p, int c, int *ret_first)
{
	*ret_first = cli_parser_optind(p);
	cli_parser_destroy(p);
	if (c == -3)
		return EXIT_OK;
	if (c == -2)
		return EXIT_USAGE;
	return -1;
}

int cli_parser_optind(const struct cli_parser *p)
{
	return optind;
}

void cli_parser_destroy(struct cli_parser *p)
{
	if (!p)
		return;
	free(p->longopts);
	free(p);
}

static void print_options(FILE *f, const struct cli_option *o)
{
	for (; o && o->name; o++) {
		char left[96];
		int n;

		if (o->short_name)
			n = snprintf(left, sizeof(left), "  -%c, --%s",
				     o->short_name, o->name);
		else
			n = snprintf(left, sizeof(left), "      --%s", o->name);
		if (o->arg == CLI_ARG_REQUIRED && n > 0)
			snprintf(left + n, sizeof(left) - (size_t)n, " %s",
				 o->argname);
		else if (o->arg == CLI_ARG_OPTIONAL && n > 0)
			snprintf(left + n, sizeof(left) - (size_t)n, "[=%s]",
				 o->argname);
		if (strlen(left) > 28)
			fprintf(f, "%s\n%30s%s\n", left, "", o->help);
		else
			fprintf(f, "%-30s%s\n", left, o->help);
	}
}

void cli_print_help(FILE *f, const struct cli_command *cmd)
{
	fprintf(f, "Usage: kcoredump %s [OPTIONS]%s%s\n\n%s\n\nOptions:\n",
		cmd->name, cmd->args ? " " : "", cmd->args ? cmd->args : "",
		cmd->summary);
	print_options(f, cmd->options);
	print_options(f, cli_common_options);
	fprintf(f, "\nSee kcoredump(8) for details and exit statuses.\n");
}

const struct cli_command *
cli_find_command(const struct cli_command *const *commands, const char *name)
{
	for (; *commands; commands++)
		if (strcmp((*commands)->name, name) == 0)
			return *commands;
	return NULL;
}

void cli_print_main_help(FILE *f, const struct cli_command *const *commands)
{
	fprintf(f, "Usage: kcoredump COMMAND [OPTIONS] [ARGS]\n\n"
		   "Read /proc/kcore and ELF core files; write compressed, "
		   "hole-skipping dumps.\n\nCommands:\n");
	for (; *commands; commands++)
		if (!(*commands)->hidden)
			fprintf(f, "  %-14s%s\n", (*commands)->name,
				(*commands)->summary);
	fprintf(f, "\nOptions:\n"
		   "  -h, --help                  show this help and exit\n"
		   "  -V, --version               show the version and exit\n"
		   "\nRun 'kcoredump COMMAND --help' for a command's options; "
		   "see kcoredump(8).\n");
}
