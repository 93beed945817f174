// SPDX-License-Identifier: MIT
/*
 * kcoredump dump: select, read, compress, hash and publish a dump.  The
 * same code runs kcoredump convert (cmd-convert.c) with its own option
 * spec: the options share their keys (cli.h).
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kcoredump/output.h"
#include "kcoredump/json.h"
#include "kcoredump/dump.h"
#include "store-dump.h"

static const struct cli_option dump_options[] = {
	{ "format", 0, CLI_ARG_REQUIRED, "FORMAT", "output format: {formats*}",
	  "@formats", DOPT_FORMAT },
	{ "codec", 0, CLI_ARG_REQUIRED, "CODEC",
	  "kdump page compression: {codecs*}", "@codecs", DOPT_CODEC },
	{ "vmalloc-range", 0, CLI_ARG_OPTIONAL, "START-END",
	  "only the mapped vmalloc areas (optionally within START-END)", NULL,
	  DOPT_VMALLOC },
	{ "caller", 0, CLI_ARG_REQUIRED, "SUBSTR",
	  "only vmalloc areas whose caller or module text matches SUBSTR "
	  "(live: "
	  "needs kernel.kptr_restrict=1 as root)",
	  NULL, DOPT_CALLER },
	{ "range", 'r', CLI_ARG_REQUIRED, "START-END",
	  "only addresses in START-END (repeatable; END may be +LENGTH; START "
	  "and END may be kernel symbols: _stext+16M)",
	  NULL, 'r' },
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
	{ "mapping", 0, CLI_ARG_REQUIRED, "PATTERN",
	  "process cores: only mappings whose file matches PATTERN "
	  "(repeatable)",
	  NULL, DOPT_MAPPING },
	{ "allow-ram-output", 0, CLI_ARG_NONE, NULL,
	  "write a dump of live memory to a file system in this machine's "
	  "RAM (tmpfs, ramfs, zram), which is refused otherwise",
	  NULL, DOPT_ALLOW_RAM_OUTPUT },
	{ "record", 0, CLI_ARG_REQUIRED, "FILE",
	  "write the acquisition record (host, boot ID, command, read times, "
	  "hashes) to FILE as JSON and to FILE.txt (FILE's .json replaced) as "
	  "text",
	  "@file", DOPT_RECORD },
	{ "case", 0, CLI_ARG_REQUIRED, "TEXT",
	  "the case this dump belongs to (in its note and record)", NULL,
	  DOPT_CASE },
	{ "examiner", 0, CLI_ARG_REQUIRED, "NAME",
	  "who takes the dump (in its note and record)", NULL, DOPT_EXAMINER },
	{ "notes", 0, CLI_ARG_REQUIRED, "TEXT",
	  "free text for the note and the record", NULL, DOPT_NOTES },
	{ "smear-check", 0, CLI_ARG_OPTIONAL, "FRACTION",
	  "after the read, read the data again and count the pages that "
	  "changed while it was read (FRACTION: only that share of the "
	  "blocks, e.g. 0.1)",
	  NULL, DOPT_SMEAR_CHECK },
	{ "read-order", 0, CLI_ARG_REQUIRED, "ORDER",
	  "address: front to back; volatile-first: the kernel image and "
	  "page tables first, close together (the default for the live "
	  "kernel; files: address)",
	  "address volatile-first", DOPT_READ_ORDER },
	{ "dry-run", 'n', CLI_ARG_NONE, NULL,
	  "show the segments that would be dumped and stop", NULL, 'n' },
	CLI_OPT_ARCH,
	{ "stored", 0, CLI_ARG_NONE, NULL,
	  "the arguments are MATCHes: write the plain bytes of the newest "
	  "stored core that matches (as coredumpctl dump)",
	  NULL, DOPT_STORED },
	{ "dir", 'D', CLI_ARG_REQUIRED, "DIR",
	  "with MATCH: the store (default /var/lib/kcoredump; implies "
	  "--stored)",
	  "@dir", 'D' },
	{ 0 },
};

/* --smear-check's FRACTION: a number in (0, 1]. */
static bool parse_fraction(const char *s, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0 && v <= 1))
		return false;
	*ret = v;
	return true;
}

/* A kernel symbol's name, as kallsyms and VMCOREINFO spell them. */
static bool is_symbol_name(const char *s)
{
	if (!(*s == '_' || (*s >= 'A' && *s <= 'Z') ||
	      (*s >= 'a' && *s <= 'z')))
		return false;
	for (; *s; s++)
		if (!(*s == '_' || *s == '.' || (*s >= '0' && *s <= '9') ||
		      (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')))
			return false;
	return true;
}

/* One end of a range: a number (K/M/G/T suffixes) or, as a START or an
 * END, a kernel symbol, looked up in src (without src: syntax only). */
static bool range_side(const char *s, bool symbol_ok,
		       const struct kcore_source *src, uint64_t *ret,
		       struct kcore_error **err)
{
	if (cli_parse_size(s, ret))
		return true;
	if (!symbol_ok || !is_symbol_name(s))
		return false;
	*ret = 0;
	if (src)
		*err = kcore_source_symbol(src, s, ret);
	return true;
}

/*
 * "START-END" or "START+LENGTH"; START and END may be kernel symbols
 * (_stext+16M, _stext-_etext: KASLR moves the numbers).  false when s is
 * malformed; *err (with src) when a symbol is not known.
 */
static bool parse_range(const char *s, const struct kcore_source *src,
			struct kcore_range *ret, struct kcore_error **err)
{
	char *copy = strdup(s), *sep;
	uint64_t a, b;
	bool ok = false;

	*err = NULL;
	if (!copy)
		return false;
	sep = strpbrk(copy + 1, "-+");
	if (sep) {
		char kind = *sep;

		*sep = '\0';
		if (range_side(copy, true, src, &a, err) && !*err &&
		    range_side(sep + 1, kind == '-', src, &b, err) && !*err) {
			if (!src && kind == '+')
				ok = b > 0;
			else if (!src)
				ok = true; /* symbols: checked with src */
			else if (kind == '+' &&
				 !__builtin_add_overflow(a, b, &b))
				ok = b > a;
			else if (kind == '-')
				ok = b > a;
		}
	}
	free(copy);
	if (*err)
		return true;
	if (ok) {
		ret->start = a;
		ret->end = b;
	}
	return ok;
}

/* The ranges again, with the source's symbols: an unknown symbol or an
 * empty range fails.  Exit status, or -1. */
static int resolve_ranges(struct cli_ctx *ctx, const char *cmd,
			  const struct kcore_source *src, const char **args,
			  size_t n, struct kcore_range *ranges)
{
	for (size_t i = 0; i < n; i++) {
		struct kcore_error *err;

		if (!parse_range(args[i], src, &ranges[i], &err))
			return cli_usage_error(ctx, cmd,
					       "bad range '%s': it ends before "
					       "it starts",
					       args[i]);
		if (err)
			return cli_fail(ctx, err);
	}
	return -1;
}

static bool parse_classes(const char *s, unsigned *ret)
{
	char *copy = strdup(s), *save = NULL;
	bool ok = copy != NULL;

	*ret = 0;
	for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t;
	     t = strtok_r(NULL, ",", &save)) {
		int c = kcore_segment_class_from_name(t);

		if (c < 0) {
			fprintf(stderr,
				"kcoredump dump: unknown segment class "
				"'%s'\n",
				t);
			ok = false;
			break;
		}
		*ret |= 1u << c;
	}
	free(copy);
	return ok && *ret;
}

/* --exclude: the struct page scan before the dump. */
static void exclude_progress(void *arg, const struct kcore_exclude_stats *st,
			     uint64_t total)
{
	struct cli_progress *ps = arg;
	struct cli_progress_line l = { 0 };
	uint64_t page = st->page_size ? st->page_size : 4096;
	double el = st->seconds > 0 ? st->seconds : 0;
	char a[32], b[32], t[32], next[48] = "ETA -:--:--";

	if (cli_progress_stopping(ps))
		snprintf(next, sizeof(next), "stopping…");
	else if (el > 0 && st->pages_scanned && st->pages_scanned < total)
		snprintf(next, sizeof(next), "ETA %s",
			 cli_hms((double)(total - st->pages_scanned) * el /
					 (double)st->pages_scanned,
				 t, sizeof(t)));
	cli_progress_add(&l, 100, "%5.1f%%",
			 total ? 100.0 * (double)st->pages_scanned /
					 (double)total
			       : 100.0);
	cli_progress_add(&l, 90, "struct pages of %s of %s RAM classified",
			 cli_human_size(st->pages_scanned * page, a, sizeof(a)),
			 cli_human_size(total * page, b, sizeof(b)));
	cli_progress_add(&l, 40, "%" PRIu64 " pages left out", st->excluded);
	cli_progress_add(&l, 80, "%s", next);
	cli_progress_print(ps, &l);
}

/*
 * A dump of live memory whose file system has less room than the memory
 * it may hold: said before the dump starts rather than at ENOSPC.
 */
static void warn_free_space(const struct kcore_source *src,
			    const struct kcore_plan *plan,
			    const struct kcore_dump_opts *o)
{
	uint64_t avail, need = 0;
	char a[32], b[32];

	if (kcore_source_info(src)->kind != KCORE_SOURCE_LIVE_KCORE)
		return;
	kcore_output_ram_medium(o->output, o->output_fd, &avail);
	for (size_t i = 0; i < plan->nsegs; i++)
		if (plan->segs[i].cls == KCORE_CLASS_RAM)
			need += plan->segs[i].size;
	if (avail == UINT64_MAX || avail >= need)
		return;
	fprintf(stderr,
		"kcoredump: warning: '%s' has %s free, less than the %s of "
		"RAM this dump may hold%s\n",
		strcmp(o->output, "-") ? o->output : "<stdout>",
		cli_human_size(avail, a, sizeof(a)),
		cli_human_size(need, b, sizeof(b)),
		o->compress != KCORE_COMPRESS_NONE ||
				kcore_format_page_codec(o->format)
			? " (compression and zero pages make it smaller)"
			: " (zero pages are holes: it may still fit)");
}

static uint64_t page_size(struct kcore_source *src)
{
	uint64_t page = kcore_source_info(src)->page_size;

	return page ? page : 4096;
}

/* An argument as a shell would need it: as is, or in single quotes. */
static void append_quoted(FILE *f, const char *a)
{
	if (*a && !a[strcspn(a, " \t\n'\"\\$`!*?[]{}()<>|&;#~")]) {
		fputs(a, f);
		return;
	}
	fputc('\'', f);
	for (; *a; a++)
		if (*a == '\'')
			fputs("'\\''", f);
		else
			fputc(*a, f);
	fputc('\'', f);
}

char *cli_join_args(const char *cmd, int argc, char **argv)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	if (!f)
		return NULL;
	fprintf(f, "kcoredump %s", cmd);
	for (int i = 1; i < argc; i++) {
		fputc(' ', f);
		append_quoted(f, argv[i]);
	}
	if (fclose(f)) {
		free(s);
		return NULL;
	}
	return s;
}

/* The long name of the option whose key is key. */
static const char *option_name(const struct cli_command *cmd, int key)
{
	const struct cli_option *lists[] = { cmd->options, cmd->group,
					     cli_common_options };

	for (size_t l = 0; l < 3; l++)
		for (const struct cli_option *o = lists[l]; o && o->name; o++)
			if (o->key == key)
				return o->name;
	return "?";
}

/* A signal while opening or planning: stop there, publish nothing. */
static struct kcore_error *planning_cancelled(const struct kcore_dump_opts *o,
					      struct kcore_error *err)
{
	if (err || !*o->cancel)
		return err;
	return kcore_error_create(KCORE_ERR_INTERRUPTED, 0, o->output,
				  "interrupted while planning; nothing was "
				  "written");
}

/* One run of dump or convert: the command line taken apart, then what it
 * opens; dump_run_deinit() frees it, whichever step ended the run. */
struct dump_run {
	struct cli_ctx *ctx;
	const struct cli_command *cmd;
	const char *name;
	bool convert;
	/* the command line */
	struct kcore_selection sel;
	struct kcore_dump_opts opts;
	struct kcore_opts_given given;
	struct kcore_open_opts oo;
	const char *source, *record_path, *vmalloc_arg, *store_dir;
	const char *mappings[64], *range_args[64];
	struct kcore_range ranges[64];
	int progress, exclude;
	int other_opt; /* an option a stored core's copy does not take */
	bool quiet, verbose, dry_run, stored, format_set;
	/* what it opens */
	struct cli_record *record;
	struct kcore_source *src;
	struct kcore_plan *plan;
	size_t dropped_segments;
	struct cli_progress ps;
	bool show; /* the progress line */
	struct kcore_dump_result res;
};

static void dump_run_deinit(struct dump_run *r)
{
	cli_record_destroy(r->record);
	kcore_dump_result_deinit(&r->res);
	kcore_plan_destroy(r->plan);
	kcore_source_destroy(r->src);
}

/* One option of the command's own: -1 when taken, else the exit status
 * of a usage error. */
static int take_option(struct dump_run *r, int c, const char *arg)
{
	struct kcore_selection *sel = &r->sel;
	struct kcore_error *err;
	char names[64];

	switch (c) {
	case DOPT_FORMAT:
		if (kcore_format_from_name(arg) < 0)
			return cli_usage_error(
				r->ctx, r->name,
				"unknown format '%s' (supported: %s)", arg,
				kcore_format_names(names, sizeof(names), ", ",
						   ", "));
		r->opts.format = kcore_format_from_name(arg);
		r->format_set = true;
		break;
	case DOPT_CODEC:
		if (kcore_codec_from_name(arg) < 0)
			return cli_usage_error(
				r->ctx, r->name,
				"unknown codec '%s' (supported: %s)", arg,
				cli_names("codecs", ", ", ", ", names,
					  sizeof(names)));
		r->opts.codec = kcore_codec_from_name(arg);
		r->given.codec = true;
		break;
	case DOPT_VMALLOC:
		sel->vmalloc = true;
		r->vmalloc_arg = arg;
		if (arg && !parse_range(arg, NULL, &sel->vmalloc_window, &err))
			return cli_usage_error(r->ctx, r->name,
					       "bad range '%s'", arg);
		break;
	case DOPT_CALLER:
		sel->caller = arg;
		break;
	case 'r':
		if (sel->nranges == 64 ||
		    !parse_range(arg, NULL, &r->ranges[sel->nranges], &err))
			return cli_usage_error(r->ctx, r->name,
					       "bad range '%s' (START-END or "
					       "START+LENGTH)",
					       arg);
		r->range_args[sel->nranges++] = arg;
		break;
	case DOPT_PHYS:
		sel->ranges_physical = true;
		break;
	case DOPT_SEGMENTS:
		if (!parse_classes(arg, &sel->classes))
			return cli_usage_error(r->ctx, r->name,
					       "bad --segments '%s'", arg);
		break;
	case 'd':
		r->exclude = kcore_exclude_parse(arg);
		if (r->exclude < 0)
			return cli_bad_exclude(r->ctx, r->name, arg);
		break;
	case DOPT_MAPPING:
		if (sel->nmappings == 64)
			return cli_usage_error(r->ctx, r->name,
					       "too many --mapping");
		r->mappings[sel->nmappings++] = arg;
		break;
	case DOPT_RECORD:
		r->record_path = arg;
		break;
	case DOPT_CASE:
		r->opts.case_id = arg;
		break;
	case DOPT_EXAMINER:
		r->opts.examiner = arg;
		break;
	case DOPT_NOTES:
		r->opts.notes = arg;
		break;
	case DOPT_SMEAR_CHECK:
		r->opts.smear_check = 1;
		if (arg && !parse_fraction(arg, &r->opts.smear_check))
			return cli_usage_error(r->ctx, r->name,
					       "--smear-check: '%s' is not a "
					       "fraction in (0, 1]",
					       arg);
		break;
	case DOPT_READ_ORDER:
		r->opts.read_order = kcore_read_order_from_name(arg);
		if (r->opts.read_order < 0)
			return cli_usage_error(r->ctx, r->name,
					       "--read-order: '%s' is not "
					       "address or volatile-first",
					       arg);
		break;
	case 'q':
		r->quiet = true;
		break;
	case 'v':
		r->verbose = true;
		break;
	case DOPT_PROGRESS:
		r->progress = 1;
		break;
	case DOPT_NO_PROGRESS:
		r->progress = 0;
		break;
	case 'n':
		r->dry_run = true;
		break;
	case 'j':
		r->ctx->json = true;
		break;
	case DOPT_STORED:
		r->stored = true;
		break;
	case DOPT_ARCH: {
		int status =
			cli_arch_option(r->ctx, r->name, arg, &r->oo.machine);

		if (status)
			return status;
		break;
	}
	case 'D':
		r->store_dir = arg;
		r->stored = true;
		break;
	}
	return -1;
}

/* The options, into r; -1 and the first argument's index in *ret_first,
 * else the exit status (--help, a usage error). */
static int parse_options(struct dump_run *r, int argc, char **argv,
			 int *ret_first)
{
	struct cli_parser *p = cli_parser_create(r->cmd, argc, argv);
	const char *arg;
	int c = -1, status = -1;

	if (!p)
		return cli_fail(r->ctx, &kcore_error_nomem);
	while (status < 0 && (c = cli_parser_next(p, &arg)) >= 0) {
		/* What a stored core's copy takes: -o, -f, -q, -j. */
		if (c != 'o' && c != 'f' && c != 'q' && c != 'v' && c != 'j' &&
		    c != 'D' && c != DOPT_STORED && !r->other_opt)
			r->other_opt = c;
		status = cli_output_option(r->ctx, r->name, c, arg, &r->opts,
					   &r->given.compress);
		if (status > 0)
			break;
		status = status == 0 ? -1 : take_option(r, c, arg);
	}
	if (status >= 0) {
		cli_parser_destroy(p);
		return status;
	}
	status = cli_parser_end(p, c, ret_first);
	return status >= 0 ? status : -1;
}

/* dump MATCH...: a stored core, as coredumpctl dump. */
static int stored_core(struct dump_run *r, int argc, char **argv, int first)
{
	if (r->other_opt)
		return cli_usage_error(r->ctx, r->name,
				       "--%s does not apply to a stored "
				       "core (it takes -o, --force, "
				       "-q, -j, -D)",
				       option_name(r->cmd, r->other_opt));
	if (!r->opts.output)
		return cli_usage_error(r->ctx, r->name,
				       "needs -o FILE (or -o - for stdout)");
	return store_dump(r->ctx, r->name,
			  r->store_dir ? r->store_dir : "/var/lib/kcoredump",
			  argc, argv, first, r->opts.output, r->opts.force,
			  r->quiet);
}

/* The SOURCE and the rules between options: -1, or a usage error. */
static int check_usage(struct dump_run *r, int argc, char **argv, int first)
{
	struct kcore_error *err;
	char formats[64];

	if (argc - first > 1)
		return cli_usage_error(r->ctx, r->name, "takes one SOURCE");
	if (argc - first == 1)
		r->source = argv[first];
	else if (r->convert)
		return cli_usage_error(r->ctx, r->name, "needs an input file");
	if (r->convert && !r->format_set)
		return cli_usage_error(r->ctx, r->name, "needs --format %s",
				       kcore_format_names(formats,
							  sizeof(formats), ", ",
							  " or "));
	err = kcore_dump_opts_settle(&r->opts, &r->given);
	if (err)
		return cli_usage_fail(r->ctx, r->name, err);
	if (!r->opts.output && !r->dry_run)
		return cli_usage_error(r->ctx, r->name,
				       "needs -o FILE (or -o - for stdout)");
	if (r->record_path && r->dry_run)
		return cli_usage_error(
			r->ctx, r->name,
			"--record records a dump, not a dry run");
	if (r->sel.caller && !r->sel.vmalloc)
		return cli_usage_error(r->ctx, r->name,
				       "--caller needs --vmalloc-range");
	if (r->sel.ranges_physical && !r->sel.nranges)
		return cli_usage_error(r->ctx, r->name, "--phys needs --range");
	return -1;
}

/* Open the source and the record, and plan the dump as the format writes
 * it: -1, or the exit status. */
static int open_and_plan(struct dump_run *r)
{
	const char *name = r->name;
	struct kcore_dump_opts *opts = &r->opts;
	struct kcore_error *err;
	int status;

	/* Signals are caught from here on: opening and planning a hostile
	 * file may take a while, and SIGTERM must still stop it. */
	opts->cancel = cli_catch_signals();
	err = planning_cancelled(opts,
				 kcore_source_open(r->source, &r->oo, &r->src));
	if (err)
		return cli_fail(r->ctx, err);
	/* Symbols in the ranges are the source's. */
	status = resolve_ranges(r->ctx, name, r->src, r->range_args,
				r->sel.nranges, r->ranges);
	if (status < 0 && r->vmalloc_arg)
		status = resolve_ranges(r->ctx, name, r->src, &r->vmalloc_arg,
					1, &r->sel.vmalloc_window);
	if (status >= 0)
		return status;
	opts->output_fd = STDOUT_FILENO;
	err = r->dry_run ? NULL : kcore_dump_output_check(r->src, opts);
	if (!err && r->record_path)
		err = cli_record_open(r->record_path, opts->output, opts->force,
				      &r->record);
	if (!err)
		err = planning_cancelled(
			opts, kcore_plan_create(r->src, &r->sel, &r->plan));
	if (err)
		return cli_fail(r->ctx, err);
	if (!r->dry_run && !r->quiet && !r->ctx->json)
		warn_free_space(r->src, r->plan, opts);
	/* An ELF of a LiME or AVML image whose machine is unknown: crash
	 * refuses e_machine EM_NONE ("machine type mismatch"). */
	if (opts->format == KCORE_FORMAT_ELF && !r->quiet && !r->ctx->json &&
	    kcore_source_info(r->src)->physical_only &&
	    kcore_source_info(r->src)->machine == EM_NONE)
		fprintf(stderr,
			"kcoredump %s: warning: '%s' names no machine and its "
			"memory does not tell it (no VMCOREINFO, no kernel "
			"banner): the ELF has e_machine EM_NONE, which crash "
			"refuses; give --arch x86_64 or --arch aarch64\n",
			name, cli_esc(r->source));
	/* The plan as the format writes it (the dry run shows it). */
	err = planning_cancelled(opts,
				 kcore_plan_for_format(r->plan, opts->format,
						       page_size(r->src),
						       &r->dropped_segments));
	if (err)
		return cli_fail(r->ctx, err);
	/* The summary says it after a dump; a dry run says it here. */
	if (r->dropped_segments && r->dry_run && !r->quiet && !r->ctx->json)
		fprintf(stderr,
			"kcoredump: %s holds physical RAM only: %zu "
			"segment%s without physical memory (kernel "
			"text, vmalloc, modules, ...) dropped\n",
			kcore_format_name(opts->format), r->dropped_segments,
			r->dropped_segments == 1 ? "" : "s");
	r->ps.tty = isatty(STDERR_FILENO);
	r->ps.cancel = opts->cancel;
	r->show = r->progress == 1 ||
		  (r->progress == -1 && r->ps.tty && !r->quiet);
	if (r->exclude) {
		err = planning_cancelled(
			opts,
			kcore_plan_exclude_progress(
				r->src, r->plan, (unsigned)r->exclude,
				r->show ? exclude_progress : NULL, &r->ps));
		if (r->ps.shown && r->ps.tty)
			fputc('\n', stderr);
		r->ps.shown = false;
		if (err)
			return cli_fail(r->ctx, err);
	}
	if (r->plan->warning && !r->quiet && !r->ctx->json)
		fprintf(stderr, "kcoredump: %s\n", r->plan->warning);
	return -1;
}

/* The dry run's answer: the plan. */
static int show_plan(struct dump_run *r)
{
	if (r->ctx->json)
		cli_dump_plan_json(stdout, r->plan);
	else
		cli_dump_print_plan(stdout, r->plan);
	return EXIT_OK;
}

/* Dump, then the record and the summary: the exit status. */
static int write_dump(struct dump_run *r)
{
	struct kcore_dump_opts *opts = &r->opts;
	struct kcore_dump_result *res = &r->res;
	struct kcore_error *err;
	FILE *f;

	if (r->verbose)
		cli_dump_print_plan(stderr, r->plan);
	if (r->show) {
		opts->progress = cli_dump_progress;
		opts->progress_arg = &r->ps;
		cli_progress_start(&r->ps);
	}
	opts->output_fd = STDOUT_FILENO;
	opts->command_line = r->ctx->command_line;
	err = kcore_dump(r->src, r->plan, opts, res);
	cli_progress_stop(&r->ps);
	if (!err)
		res->dropped_segments = r->dropped_segments;
	if (r->ps.shown && r->ps.tty)
		fputc('\n', stderr);
	if (err)
		return cli_fail(r->ctx, err);
	err = r->record ? cli_record_write(r->record, r->ctx,
					   kcore_source_info(r->src), r->plan,
					   opts, res)
			: NULL;
	if (err) {
		/* The dump is published; its record is not. */
		fprintf(stderr,
			"kcoredump: the dump '%s' is written, but its record "
			"is not:\n",
			res->output_path ? cli_esc(res->output_path)
					 : "<stdout>");
		return cli_fail(r->ctx, err);
	}
	/* With -o - the dump owns stdout: the summary goes to stderr. */
	f = strcmp(opts->output, "-") == 0 ? stderr : stdout;
	if (r->ctx->json)
		cli_dump_summary_json(f, r->plan, opts, res, r->record);
	else if (!r->quiet)
		cli_dump_summary_text(f, r->plan, opts, res, r->record);
	return cli_dump_status(res, r->quiet && !r->ctx->json, NULL);
}

int cli_dump_run(struct cli_ctx *ctx, const struct cli_command *cmd, int argc,
		 char **argv)
{
	struct dump_run r = {
		.ctx = ctx,
		.cmd = cmd,
		.name = cmd->name,
		.convert = strcmp(cmd->name, "convert") == 0,
		.opts = { .codec = CLI_DEFAULT_CODEC },
		.source = "/proc/kcore",
		.progress = -1,
	};
	int first = 0, status;

	r.sel.ranges = r.ranges;
	r.sel.mappings = r.mappings;
	status = parse_options(&r, argc, argv, &first);
	if (status >= 0)
		return status;
	if (!r.convert && !r.stored && argc - first == 1 &&
	    store_dump_wanted(argv[first]))
		r.stored = true;
	if (r.stored)
		return stored_core(&r, argc, argv, first);
	status = check_usage(&r, argc, argv, first);
	if (status < 0)
		status = open_and_plan(&r);
	if (status < 0)
		status = r.dry_run ? show_plan(&r) : write_dump(&r);
	dump_run_deinit(&r);
	return status;
}

static int cmd_dump(struct cli_ctx *ctx, int argc, char **argv)
{
	return cli_dump_run(ctx, &cli_cmd_dump, argc, argv);
}

const struct cli_command cli_cmd_dump = {
	.name = "dump",
	.run = cmd_dump,
	.options = dump_options,
	.args = "[SOURCE | MATCH...]",
	.args_complete = "@file",
	.summary = "write a sparse, compressed, hashed ELF dump of a source "
		   "(or a stored core, as coredumpctl dump)",
	.group = cli_output_options,
};
