// SPDX-License-Identifier: MIT
/* Option specs to getopt tables and --help text, and the names of the
 * library's tables (formats, codecs, compressions, hash methods) that help
 * texts and completions name through {list} and @list; the output options
 * dump, convert and pid share, and their parser. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kcoredump/dump.h"
#include "kcoredump/stream.h"

const struct cli_option cli_common_options[] = {
	{ "help", 'h', CLI_ARG_NONE, NULL, "show this help and exit", NULL,
	  'h' },
	{ 0 },
};

const struct cli_option cli_output_options[] = {
	{ "output", 'o', CLI_ARG_REQUIRED, "FILE",
	  "write the output to FILE ('-' for stdout)", "@file", 'o' },
	{ "compress", 0, CLI_ARG_REQUIRED, "METHOD",
	  "whole-stream compression: {compressions} (default: from the "
	  "suffix)",
	  "@compressions", DOPT_COMPRESS },
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
	  "integrity digests: {hashes*} (the file's SHA-256, and a content "
	  "digest over XXH3-128 or SHA-256 block digests: SHA-256 ones are "
	  "collision-resistant and cost a second SHA-256 pass over the data)",
	  "@hashes", DOPT_HASH },
	{ "file-sha256", 0, CLI_ARG_NONE, NULL,
	  "hash the file's bytes even when it is sparse (its holes are hashed "
	  "as zeros: the cost of its logical size)",
	  NULL, DOPT_FILE_SHA256 },
	{ "force", 'f', CLI_ARG_NONE, NULL, "replace an existing output file",
	  NULL, 'f' },
	{ "sync", 0, CLI_ARG_NONE, NULL,
	  "fsync the output before publishing it", NULL, DOPT_SYNC },
	{ "special-output", 0, CLI_ARG_NONE, NULL,
	  "write into an existing FIFO or device named by -o (owned by root "
	  "or us; never through a symbolic link)",
	  NULL, DOPT_SPECIAL_OUTPUT },
	CLI_OPT_QUIET("print no summary"),
	CLI_OPT_VERBOSE("also print what will be read (as --dry-run shows it) "
			"before reading"),
	{ "progress", 0, CLI_ARG_NONE, NULL,
	  "show progress even when stderr is not a terminal", NULL,
	  DOPT_PROGRESS },
	{ "no-progress", 0, CLI_ARG_NONE, NULL, "never show progress", NULL,
	  DOPT_NO_PROGRESS },
	{ "json", 'j', CLI_ARG_NONE, NULL,
	  "print the summary as one JSON document", NULL, 'j' },
	{ 0 },
};

/* One of cli_output_options (cli.h). */
int cli_output_option(struct cli_ctx *ctx, const char *cmd, int c,
		      const char *arg, struct kcore_dump_opts *opts,
		      bool *compress_set)
{
	uint64_t v;

	switch (c) {
	case 'o':
		opts->output = arg;
		return 0;
	case 'f':
		opts->force = true;
		return 0;
	case DOPT_SYNC:
		opts->sync = true;
		return 0;
	case DOPT_SPECIAL_OUTPUT:
		opts->special_output = true;
		return 0;
	case DOPT_COMPRESS:
		if (kcore_compress_from_name(arg) < 0)
			return cli_usage_error(ctx, cmd,
					       "unknown compression '%s'", arg);
		opts->compress = kcore_compress_from_name(arg);
		*compress_set = true;
		return 0;
	case DOPT_ALLOW_RAM_OUTPUT:
		opts->allow_ram_output = true;
		return 0;
	case DOPT_FILE_SHA256:
		opts->file_sha256_always = true;
		return 0;
	case DOPT_HASH: {
		int m = kcore_block_hash_from_name(arg);

		opts->no_hash = !strcmp(arg, CLI_HASH_NONE);
		if (m < 0 && !opts->no_hash)
			return cli_usage_error(ctx, cmd, "unknown hash '%s'",
					       arg);
		opts->block_hash = m < 0 ? KCORE_BLOCK_HASH_XXH3
					 : (enum kcore_block_hash)m;
		return 0;
	}
	case DOPT_LEVEL:
		if (!cli_parse_u64(arg, &v) || v > 22)
			return cli_usage_error(ctx, cmd, "bad level '%s'", arg);
		opts->level = (int)v;
		return 0;
	case 'T':
		if (!cli_parse_u64(arg, &v) || v < 1 || v > 256)
			return cli_usage_error(ctx, cmd,
					       "bad thread count '%s'", arg);
		opts->threads = (unsigned)v;
		return 0;
	case DOPT_BLOCK_SIZE:
		if (!cli_parse_size(arg, &v) || !v || v % KCORE_HASH_BLOCK ||
		    v > (256u << 20))
			return cli_usage_error(ctx, cmd,
					       "block size '%s' must be a "
					       "multiple of 1M, at most 256M",
					       arg);
		opts->block_size = v;
		return 0;
	case DOPT_FRAME_SIZE:
		if (!cli_parse_size(arg, &v) || v < KCORE_STREAM_MIN_FRAME ||
		    v > KCORE_STREAM_MAX_FRAME)
			return cli_usage_error(
				ctx, cmd, "frame size '%s' must be 4K..64M",
				arg);
		opts->frame_size = v;
		return 0;
	default:
		return -1;
	}
}

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
	p->longopts =
		calloc(count_options(cmd->options) + count_options(cmd->group) +
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
	add_options(p, cmd->group, &n, &s);
	add_options(p, cli_common_options, &n, &s);
	p->shortopts[s] = '\0';
	optind = 1;
	opterr = 0;
	return p;
}

/* The long option named by argv element ARG ("--name" or "--name=value"),
 * or NULL. */
static const struct option *long_option_of(const struct cli_parser *p,
					   const char *arg)
{
	size_t len;

	if (!arg || strncmp(arg, "--", 2) != 0)
		return NULL;
	arg += 2;
	len = strcspn(arg, "=");
	for (const struct option *lo = p->longopts; lo->name; lo++)
		if (strlen(lo->name) == len && strncmp(lo->name, arg, len) == 0)
			return lo;
	return NULL;
}

/*
 * What getopt refused, as the user wrote it.  GNU getopt permutes argv
 * while it scans (positional arguments move behind the options), so the
 * element the scan started at says nothing; what does: optopt, the short
 * option's letter (0 for an unknown or ambiguous long option), and
 * argv[optind - 1], the element just consumed (a long option, or the
 * cluster ending in a short one).  Within a cluster such as -qZ, optind
 * has not moved yet and optopt alone names the letter.
 */
static void describe_refused(const struct cli_parser *p, char *buf, size_t size,
			     bool *ret_takes_no_value)
{
	const char *last =
		optind > 0 && optind <= p->argc ? p->argv[optind - 1] : NULL;
	const struct option *lo = long_option_of(p, last);

	*ret_takes_no_value = false;
	if (optopt == 0 || (lo && lo->val == optopt)) {
		/* A long option: unknown, ambiguous, missing its value, or
		 * given one it does not take ("--json=1"). */
		const char *arg = last ? last : "?";

		*ret_takes_no_value =
			lo && lo->has_arg == no_argument && strchr(arg, '=');
		snprintf(buf, size, "%.*s", (int)strcspn(arg, "="), arg);
	} else if (optopt > 0 && optopt < 128) {
		snprintf(buf, size, "-%c", optopt);
	} else {
		snprintf(buf, size, "%s", last ? last : "?");
	}
}

/* An unknown option, with the long option of this command closest to it
 * (at most 2 edits) when it is a long one. */
static void unknown_option(const struct cli_parser *p, const char *bad)
{
	const char *best = NULL;
	unsigned best_d = 3;

	if (strncmp(bad, "--", 2) == 0 && bad[2]) {
		for (const struct option *lo = p->longopts; lo->name; lo++) {
			unsigned d = cli_edit_distance(bad + 2, lo->name);

			if (d < best_d) {
				best_d = d;
				best = lo->name;
			}
		}
	}
	fprintf(stderr, "kcoredump %s: unknown option '%s'", p->cmd->name, bad);
	if (best)
		fprintf(stderr, ". Did you mean '--%s'?", best);
	fputc('\n', stderr);
}

int cli_parser_next(struct cli_parser *p, const char **ret_arg)
{
	int c = getopt_long(p->argc, p->argv, p->shortopts, p->longopts, NULL);

	*ret_arg = optarg;
	if (c == -1)
		return -1;
	if (c == 'h') {
		cli_print_help(stdout, p->cmd);
		return -3;
	}
	if (c == '?' || c == ':') {
		char bad[128];
		bool no_value;

		describe_refused(p, bad, sizeof(bad), &no_value);
		if (c == ':')
			fprintf(stderr,
				"kcoredump %s: option '%s' needs a value\n",
				p->cmd->name, bad);
		else if (no_value)
			fprintf(stderr,
				"kcoredump %s: option '%s' takes no value\n",
				p->cmd->name, bad);
		else
			unknown_option(p, bad);
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

/* ---- the library's names, for help and completion ---- */

struct name_list {
	const char *token; /* {token} in help, @token in completion */
	int count;
	const char *(*name)(int i);
	bool (*keep)(int i); /* NULL: all */
	int def;	     /* the default, marked in {token*}; -1: none */
	const char *last_sep;
};

static const char *format_name(int i)
{
	return kcore_format_name((enum kcore_format)i);
}

static bool format_physical(int i)
{
	return kcore_format_physical((enum kcore_format)i);
}

static bool format_process(int i)
{
	return !kcore_format_physical((enum kcore_format)i);
}

static const char *codec_name(int i)
{
	return kcore_codec_name((enum kcore_codec)i);
}

static const char *compress_name(int i)
{
	return kcore_compress_name((enum kcore_compress)i);
}

/* --hash: the library's methods by the names options take, then none (no
 * digests at all: the dump option no_hash). */
static const char *hash_name(int i)
{
	return i == KCORE_BLOCK_HASH_NUM
		       ? CLI_HASH_NONE
		       : kcore_block_hash_option_name((enum kcore_block_hash)i);
}

static const struct name_list name_lists[] = {
	{ "formats", KCORE_FORMAT_NUM, format_name, NULL, KCORE_FORMAT_ELF,
	  " or " },
	{ "process-formats", KCORE_FORMAT_NUM, format_name, format_process, -1,
	  " or " },
	{ "physical-formats", KCORE_FORMAT_NUM, format_name, format_physical,
	  -1, " and " },
	{ "codecs", KCORE_CODEC_NUM, codec_name, NULL, CLI_DEFAULT_CODEC,
	  " or " },
	{ "compressions", KCORE_COMPRESS_NUM, compress_name, NULL, -1, " or " },
	{ "hashes", KCORE_BLOCK_HASH_NUM + 1, hash_name, NULL,
	  KCORE_BLOCK_HASH_XXH3, " or " },
};

static const struct name_list *find_list(const char *token, size_t len)
{
	for (size_t i = 0; i < sizeof(name_lists) / sizeof(name_lists[0]); i++)
		if (strlen(name_lists[i].token) == len &&
		    strncmp(name_lists[i].token, token, len) == 0)
			return &name_lists[i];
	return NULL;
}

/* Whether entry i comes in pass (0: the default, when first; 1: the
 * others; 2: "none", last). */
static bool in_pass(const struct name_list *l, int i, int pass, bool first)
{
	bool none = strcmp(l->name(i), "none") == 0;

	if (l->keep && !l->keep(i))
		return false;
	if (first && i == l->def)
		return pass == 0;
	return pass == (none ? 2 : 1);
}

/* The list's names appended to buf at *len: in table order with "none"
 * last; with mark, the default first, "(default)" after it. */
static void join_list(const struct name_list *l, bool mark, const char *sep,
		      const char *last_sep, char *buf, size_t size, size_t *len)
{
	int total = 0, n = 0;

	for (int i = 0; i < l->count; i++)
		total += !l->keep || l->keep(i);
	for (int pass = 0; pass < 3; pass++)
		for (int i = 0; i < l->count; i++) {
			int w;

			if (!in_pass(l, i, pass, mark))
				continue;
			w = snprintf(buf + *len, size - *len, "%s%s%s",
				     !n		      ? ""
				     : n + 1 == total ? last_sep
						      : sep,
				     l->name(i),
				     mark && i == l->def ? " (default)" : "");
			n++;
			if (w < 0 || (size_t)w >= size - *len) {
				*len = size - 1;
				return;
			}
			*len += (size_t)w;
		}
}

const char *cli_names(const char *list, const char *sep, const char *last_sep,
		      char *buf, size_t size)
{
	const struct name_list *l = find_list(list, strlen(list));
	size_t len = 0;

	buf[0] = '\0';
	if (l)
		join_list(l, false, sep, last_sep, buf, size, &len);
	return buf;
}

const char *cli_option_help(const struct cli_option *o)
{
	static char buf[1024];
	const char *s = o->help;
	size_t len = 0;

	/* {list} or {list*}: the names, ", " between them and the list's
	 * last separator before the last one (*: the default first). */
	while (*s && len + 1 < sizeof(buf)) {
		const char *end = *s == '{' ? strchr(s, '}') : NULL;
		size_t n = end ? (size_t)(end - s - 1) : 0;
		bool mark = n && s[n] == '*';
		const struct name_list *l =
			end ? find_list(s + 1, n - mark) : NULL;

		if (!l) {
			buf[len++] = *s++;
			continue;
		}
		join_list(l, mark, ", ", l->last_sep, buf, sizeof(buf), &len);
		s = end + 1;
	}
	buf[len] = '\0';
	return buf;
}

const char *cli_option_words(const struct cli_option *o)
{
	static char buf[256];

	if (o->complete && o->complete[0] == '@' &&
	    find_list(o->complete + 1, strlen(o->complete + 1)))
		return cli_names(o->complete + 1, " ", " ", buf, sizeof(buf));
	return o->complete && o->complete[0] != '@' ? o->complete : NULL;
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
			fprintf(f, "%s\n%30s%s\n", left, "",
				cli_option_help(o));
		else
			fprintf(f, "%-30s%s\n", left, cli_option_help(o));
	}
}

void cli_print_help(FILE *f, const struct cli_command *cmd)
{
	fprintf(f, "Usage: kcoredump %s [OPTIONS]%s%s\n\n%s\n\nOptions:\n",
		cmd->name, cmd->args ? " " : "", cmd->args ? cmd->args : "",
		cmd->summary);
	print_options(f, cmd->options);
	print_options(f, cmd->group);
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
