// SPDX-License-Identifier: MIT
/* kcoredump pid: an ELF core of a running process, like gcore, without
 * reading untouched memory and with a stop only as long as the register
 * capture. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "kcoredump/json.h"
#include "kcoredump/dump.h"
#include "kcoredump/output.h"
#include "kcoredump/process.h"

/* pid's own options; the ones it shares with dump are DOPT_* (cli.h). */
enum {
	OPT_FILTER = 2100,
	OPT_ALL_MAPPINGS,
	OPT_STOP,
};

static const struct cli_option pid_options[] = {
	{ "format", 0, CLI_ARG_REQUIRED, "FORMAT",
	  "output format: {process-formats}, the only one for a process "
	  "({physical-formats} hold a kernel's physical memory)",
	  "@process-formats", DOPT_FORMAT },
	{ "filter", 0, CLI_ARG_REQUIRED, "MASK",
	  "coredump filter bits to apply instead of /proc/PID/coredump_filter",
	  NULL, OPT_FILTER },
	{ "all-mappings", 0, CLI_ARG_NONE, NULL,
	  "dump every mapping whole, VM_DONTDUMP ones too", NULL,
	  OPT_ALL_MAPPINGS },
	{ "stop", 0, CLI_ARG_NONE, NULL,
	  "keep the process stopped while its memory is copied (a consistent "
	  "snapshot)",
	  NULL, OPT_STOP },
	{ "mapping", 0, CLI_ARG_REQUIRED, "PATTERN",
	  "only mappings whose file matches PATTERN (repeatable)", NULL,
	  DOPT_MAPPING },
	{ "dry-run", 'n', CLI_ARG_NONE, NULL,
	  "show the mappings and what the filter dumps, and stop", NULL, 'n' },
	{ 0 },
};

struct pid_args {
	struct kcore_process_opts popts;
	struct kcore_dump_opts opts;
	struct kcore_selection sel;
	const char *mappings[64];
	bool quiet, verbose, dry_run, compress_set;
	int progress;
	int32_t pid;
};

/*
 * A process core is ELF: its addresses are virtual and its threads,
 * registers, auxv and mapped files live in notes.  The formats that hold
 * a kernel's physical memory (kdump by page frame number, LiME and AVML
 * by physical address range, without notes) would take a process's
 * mappings for physical RAM, and gdb, eu-stack and drgn could not read
 * them.  NULL: a format a process core can be written in.
 */
static const char *format_refusal(const char *fmt, char *buf, size_t size)
{
	int f = kcore_format_from_name(fmt);

	if (f < 0)
		return "unknown format (a process core is elf)";
	if (!kcore_format_physical((enum kcore_format)f))
		return NULL;
	snprintf(buf, size,
		 "%s holds a kernel's physical memory (page frames or "
		 "physical ranges); a process has virtual mappings, and its "
		 "threads and registers live in notes: use elf (the default)",
		 kcore_format_title((enum kcore_format)f));
	return buf;
}

static int parse_args(struct cli_ctx *ctx, struct pid_args *a, int argc,
		      char **argv)
{
	struct cli_parser *p = cli_parser_create(&cli_cmd_pid, argc, argv);
	const char *arg;
	int c, first, done;
	uint64_t v;

	if (!p)
		return cli_fail(ctx, &kcore_error_nomem);
	a->sel.mappings = a->mappings;
	a->progress = -1;
	while ((c = cli_parser_next(p, &arg)) >= 0) {
		const char *bad = NULL;
		int r = cli_output_option(ctx, "pid", c, arg, &a->opts,
					  &a->compress_set);

		if (r > 0) {
			cli_parser_destroy(p);
			return r;
		}
		if (r == 0)
			continue;
		switch (c) {
		case DOPT_FORMAT: {
			char why[256];

			if (format_refusal(arg, why, sizeof(why))) {
				cli_parser_destroy(p);
				return cli_usage_error(
					ctx, "pid", "--format %s: %s", arg,
					format_refusal(arg, why, sizeof(why)));
			}
			a->opts.format =
				(enum kcore_format)kcore_format_from_name(arg);
			break;
		}
		case OPT_FILTER: {
			char *end;
			unsigned long f = strtoul(arg, &end, 16);

			if (!*arg || *end || f > 0x1ff)
				bad = "--filter takes hexadecimal "
				      "coredump_filter bits, at most 1ff";
			a->popts.has_filter = true;
			a->popts.filter = (uint32_t)f;
			break;
		}
		case OPT_ALL_MAPPINGS:
			a->popts.all_mappings = true;
			break;
		case OPT_STOP:
			a->popts.keep_stopped = true;
			break;
		case DOPT_MAPPING:
			if (a->sel.nmappings == 64)
				bad = "too many --mapping";
			else
				a->mappings[a->sel.nmappings++] = arg;
			break;
		case 'q':
			a->quiet = true;
			break;
		case 'v':
			a->verbose = true;
			break;
		case DOPT_PROGRESS:
			a->progress = 1;
			break;
		case DOPT_NO_PROGRESS:
			a->progress = 0;
			break;
		case 'n':
			a->dry_run = true;
			break;
		case 'j':
			ctx->json = true;
			break;
		}
		if (bad) {
			cli_parser_destroy(p);
			return cli_usage_error(ctx, "pid", "%s: '%s'", bad,
					       arg);
		}
	}
	done = cli_parser_end(p, c, &first);
	if (done >= 0)
		return done;
	if (argc - first != 1)
		return cli_usage_error(ctx, "pid", "takes one PID");
	if (!cli_parse_u64(argv[first], &v) || !v || v > INT32_MAX)
		return cli_usage_error(ctx, "pid", "bad process id '%s'",
				       argv[first]);
	a->pid = (int32_t)v;
	if (!a->opts.output && !a->dry_run)
		return cli_usage_error(ctx, "pid",
				       "needs -o FILE (or -o - for stdout)");
	struct kcore_opts_given given = { .compress = a->compress_set };
	struct kcore_error *err = kcore_dump_opts_settle(&a->opts, &given);

	return err ? cli_usage_fail(ctx, "pid", err) : -1;
}

static void mappings_text(FILE *f, const struct kcore_process_info *pi)
{
	char s[32];

	fprintf(f, "%zu mappings of process %d (filter 0x%x from %s):\n",
		pi->nmappings, (int)pi->pid, pi->filter, pi->filter_from);
	for (size_t i = 0; i < pi->nmappings; i++) {
		const struct kcore_process_mapping *m = &pi->mappings[i];

		fprintf(f, "  0x%012" PRIx64 "-0x%012" PRIx64 " %s %10s %-15s",
			m->start, m->end, m->perms,
			m->dump_size
				? cli_human_size(m->dump_size, s, sizeof(s))
				: "-",
			m->reason);
		fprintf(f, " %-7s %s\n",
			m->dump_size ? kcore_process_read_name(m->read) : "",
			m->name ? m->name : "");
	}
}

static void mappings_json(struct kcore_json *j,
			  const struct kcore_process_info *pi)
{
	kcore_json_array_begin(j, "mappings");
	for (size_t i = 0; i < pi->nmappings; i++) {
		const struct kcore_process_mapping *m = &pi->mappings[i];

		kcore_json_object_begin(j, NULL);
		kcore_json_hex(j, "start", m->start);
		kcore_json_hex(j, "end", m->end);
		kcore_json_string(j, "perms", m->perms);
		kcore_json_string(j, "name", m->name);
		kcore_json_u64(j, "dump_size", m->dump_size);
		kcore_json_string(j, "reason", m->reason);
		kcore_json_string(
			j, "read",
			m->dump_size ? kcore_process_read_name(m->read) : NULL);
		kcore_json_object_end(j);
	}
	kcore_json_array_end(j);
}

static void process_json(struct kcore_json *j,
			 const struct kcore_process_info *pi,
			 const struct kcore_source_info *si, bool kept)
{
	kcore_json_object_begin(j, "process");
	kcore_json_i64(j, "pid", pi->pid);
	kcore_json_string(j, "name", si->process_name);
	kcore_json_u64(j, "threads", pi->nthreads);
	kcore_json_bool(j, "kept_stopped", kept);
	kcore_json_double(j, "stop_seconds", (double)pi->stop_ns / 1e9);
	kcore_json_double(j, "capture_seconds", (double)pi->capture_ns / 1e9);
	kcore_json_hex(j, "filter", pi->filter);
	kcore_json_string(j, "filter_from", pi->filter_from);
	kcore_json_string(j, "pagemap_method", pi->pagemap_method);
	kcore_json_u64(j, "pagemap_calls", pi->pagemap_calls);
	kcore_json_u64(j, "bytes_scanned", pi->bytes_scanned);
	kcore_json_u64(j, "bytes_read", pi->bytes_read);
	kcore_json_bool(j, "vanished", pi->vanished);
	mappings_json(j, pi);
	kcore_json_object_end(j);
}

static void summary_json(FILE *f, const struct kcore_source *src,
			 const struct kcore_plan *plan,
			 const struct kcore_dump_result *r, bool kept,
			 bool no_hash)
{
	const struct kcore_dump_stats *st = &r->stats;
	struct kcore_json j;

	kcore_json_init(&j, f);
	kcore_json_object_begin(&j, NULL);
	kcore_json_string(&j, "path", r->output_path ? r->output_path : "-");
	cli_dump_hashes_json(&j, r);
	process_json(&j, kcore_source_process_info(src), kcore_source_info(src),
		     kept);
	cli_dump_stats_json(&j, st);
	/* dump --json's segments (paddr null: a process has none). */
	cli_dump_segments_json(&j, plan, true, !no_hash);
	cli_dump_incomplete_json(&j, r);
	kcore_json_object_end(&j);
	kcore_json_finish(&j);
}

/* Why a process's ranges were not read, when it is known. */
static const char *vanished_why(const struct kcore_process_info *pi)
{
	return pi->vanished ? "the process exited during the copy" : NULL;
}

static void summary_text(FILE *f, const struct kcore_source *src,
			 const struct kcore_plan *plan,
			 const struct kcore_dump_result *r, bool kept,
			 bool no_hash)
{
	const struct kcore_process_info *pi = kcore_source_process_info(src);
	const struct kcore_source_info *si = kcore_source_info(src);
	const struct kcore_dump_stats *st = &r->stats;
	char a[32], b[32];
	size_t elf_headers = 0;

	for (size_t i = 0; i < pi->nmappings; i++)
		elf_headers +=
			strcmp(pi->mappings[i].reason, "elf-header") == 0 &&
			pi->mappings[i].dump_size;
	fprintf(f, "Dumped process %d (%s) to %s%s\n", (int)pi->pid,
		si->process_name ? si->process_name : "?",
		r->output_path ? r->output_path : "<stdout>",
		kcore_dump_incomplete(r) ? ": INCOMPLETE" : "");
	cli_dump_incomplete_text(f, r, vanished_why(pi));
	fprintf(f, "  threads:      %u, stopped %.3f ms%s\n", pi->nthreads,
		(double)pi->stop_ns / 1e6,
		kept ? " (kept stopped during the copy)"
		     : " (register capture only)");
	fprintf(f, "  filter:       0x%x (from %s)\n", pi->filter,
		pi->filter_from);
	fprintf(f, "  mappings:     %zu, %zu dumped (%zu ELF header pages)\n",
		pi->nmappings, plan->nsegs, elf_headers);
	fprintf(f, "  logical size: %s\n",
		cli_human_size(st->bytes_total, a, sizeof(a)));
	fprintf(f, "  read:         %s of process memory in %.2f s\n",
		cli_human_size(pi->bytes_read, a, sizeof(a)), st->read_seconds);
	fprintf(f, "  holes:        %s skipped (%s, %" PRIu64 " calls)\n",
		cli_human_size(st->bytes_hole, a, sizeof(a)),
		pi->pagemap_method, pi->pagemap_calls);
	fprintf(f, "  zero pages:   %s\n",
		cli_human_size(st->bytes_zero, a, sizeof(a)));
	fprintf(f, "  written:      %s\n",
		cli_human_size(st->bytes_written, b, sizeof(b)));
	fprintf(f, "  read errors:  %s in %zu range%s\n",
		cli_human_size(st->bytes_unreadable, a, sizeof(a)), r->nerrors,
		r->nerrors == 1 ? "" : "s");
	cli_dump_time_text(f, st);
	cli_dump_hashes_text(f, r, NULL);
}

static int dry_run(struct cli_ctx *ctx, const struct kcore_source *src)
{
	const struct kcore_process_info *pi = kcore_source_process_info(src);

	if (ctx->json) {
		struct kcore_json j;

		kcore_json_init(&j, stdout);
		kcore_json_object_begin(&j, NULL);
		kcore_json_bool(&j, "dry_run", true);
		process_json(&j, pi, kcore_source_info(src), false);
		kcore_json_object_end(&j);
		kcore_json_finish(&j);
	} else {
		mappings_text(stdout, pi);
	}
	return EXIT_OK;
}

static int cmd_pid(struct cli_ctx *ctx, int argc, char **argv)
{
	struct pid_args a = { 0 };
	struct cli_progress ps = { 0 };
	struct kcore_dump_result res;
	struct kcore_source *src = NULL;
	struct kcore_plan *plan = NULL;
	struct kcore_error *err;
	int status = parse_args(ctx, &a, argc, argv);

	if (status >= 0)
		return status;
	/* Everything that can refuse the dump is checked before the target
	 * is attached and stopped. */
	if (!a.dry_run) {
		err = kcore_output_check(
			a.opts.output, &(struct kcore_output_opts){
					       .force = a.opts.force,
					       .special = a.opts.special_output,
				       });
		if (err)
			return cli_fail(ctx, err);
	}
	err = kcore_source_open_process(a.pid, &a.popts, &src);
	if (err)
		return cli_fail(ctx, err);
	if (a.dry_run) {
		kcore_process_resume(src);
		status = dry_run(ctx, src);
		kcore_source_destroy(src);
		return status;
	}
	err = kcore_plan_create(src, &a.sel, &plan);
	if (err) {
		kcore_source_destroy(src);
		return cli_fail(ctx, err);
	}
	if (a.verbose)
		mappings_text(stderr, kcore_source_process_info(src));
	ps.tty = isatty(STDERR_FILENO);
	a.opts.cancel = cli_catch_signals();
	ps.cancel = a.opts.cancel;
	if (a.progress == 1 || (a.progress == -1 && ps.tty && !a.quiet)) {
		a.opts.progress = cli_dump_progress;
		a.opts.progress_arg = &ps;
		cli_progress_start(&ps);
	}
	a.opts.output_fd = STDOUT_FILENO;
	a.opts.command_line = ctx->command_line;
	err = kcore_dump(src, plan, &a.opts, &res);
	cli_progress_stop(&ps);
	/* A process kept stopped runs again as soon as its memory is
	 * copied, before the summary. */
	kcore_process_resume(src);
	if (ps.shown && ps.tty)
		fputc('\n', stderr);
	if (err) {
		status = cli_fail(ctx, err);
	} else {
		FILE *f = strcmp(a.opts.output, "-") == 0 ? stderr : stdout;

		if (ctx->json)
			summary_json(f, src, plan, &res, a.popts.keep_stopped,
				     a.opts.no_hash);
		else if (!a.quiet)
			summary_text(f, src, plan, &res, a.popts.keep_stopped,
				     a.opts.no_hash);
		status = cli_dump_status(
			&res, a.quiet && !ctx->json,
			vanished_why(kcore_source_process_info(src)));
	}
	kcore_dump_result_deinit(&res);
	kcore_plan_destroy(plan);
	kcore_source_destroy(src);
	return status;
}

const struct cli_command cli_cmd_pid = {
	.name = "pid",
	.run = cmd_pid,
	.options = pid_options,
	.args = "PID",
	.args_complete = "@pid",
	.summary =
		"write an ELF core of a running process (like gcore, sparse)",
	.group = cli_output_options,
};
