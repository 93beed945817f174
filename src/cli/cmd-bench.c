// SPDX-License-Identifier: MIT
/* kcoredump bench: read throughput per segment class, rendered as a table
 * or one JSON document. */
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "kcoredump/json.h"
#include "kcoredump/bench.h"
#include "kcoredump/dump.h"

enum {
	OPT_BLOCK_SIZE = 2100,
	OPT_MODE,
	OPT_CLASSES,
	OPT_LIMIT,
	OPT_TIME,
	OPT_COMPRESS,
	OPT_LEVEL,
	OPT_PROGRESS,
	OPT_NO_PROGRESS,
};

static const struct cli_option bench_options[] = {
	{ "block-size", 0, CLI_ARG_REQUIRED, "SIZES",
	  "read sizes to try, comma-separated (default 4K,64K,1M,4M)", NULL,
	  OPT_BLOCK_SIZE },
	{ "threads", 'T', CLI_ARG_REQUIRED, "COUNTS",
	  "reader thread counts to try, comma-separated (default 1,2)", NULL,
	  'T' },
	{ "mode", 0, CLI_ARG_REQUIRED, "MODES",
	  "raw (pread), zero (+ zero pages and SHA-256), dump (the dump "
	  "pipeline to /dev/null); default all",
	  "raw zero dump", OPT_MODE },
	{ "classes", 0, CLI_ARG_REQUIRED, "CLASSES",
	  "only these classes: ram,text,modules,vmalloc,vmalloc-hole,vmemmap "
	  "(kcore) or data,hole (files)",
	  "ram text modules vmalloc vmalloc-hole vmemmap data hole",
	  OPT_CLASSES },
	{ "limit", 0, CLI_ARG_REQUIRED, "BYTES",
	  "bytes to read per class and configuration (default 64M)", NULL,
	  OPT_LIMIT },
	{ "time", 0, CLI_ARG_REQUIRED, "SECONDS",
	  "seconds per class and configuration (default 2)", NULL, OPT_TIME },
	{ "compress", 0, CLI_ARG_REQUIRED, "METHOD",
	  "compression of the dump mode: zstd, xz or none (default none)",
	  "zstd xz none", OPT_COMPRESS },
	{ "level", 0, CLI_ARG_REQUIRED, "N",
	  "compression level of the dump mode", NULL, OPT_LEVEL },
	{ "progress", 0, CLI_ARG_NONE, NULL,
	  "show progress even when stderr is not a terminal", NULL,
	  OPT_PROGRESS },
	{ "no-progress", 0, CLI_ARG_NONE, NULL, "never show progress", NULL,
	  OPT_NO_PROGRESS },
	{ "json", 'j', CLI_ARG_NONE, NULL,
	  "print the results as one JSON document", NULL, 'j' },
	CLI_OPT_QUIET("print only the table of measurements; no progress"),
	CLI_OPT_VERBOSE("also each measurement's reads, seconds and what "
			"ended it (the time or the byte limit)"),
	{ 0 },
};

/* "a,b,c": each item through parse; false on an empty or bad item. */
static bool parse_list(const char *s, bool (*parse)(const char *, void *),
		       void *ctx)
{
	char *copy = strdup(s), *save = NULL;
	bool ok = copy != NULL && *s;

	for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t && ok;
	     t = strtok_r(NULL, ",", &save))
		ok = parse(t, ctx);
	free(copy);
	return ok;
}

static bool add_block_size(const char *t, void *ctx)
{
	struct kcore_bench_opts *o = ctx;
	uint64_t v;

	if (!cli_parse_size(t, &v) || v < 512 || v % 512 || v > (256u << 20) ||
	    o->nblock_sizes == KCORE_BENCH_MAX_CONFIGS)
		return false;
	o->block_sizes[o->nblock_sizes++] = v;
	return true;
}

static bool add_threads(const char *t, void *ctx)
{
	struct kcore_bench_opts *o = ctx;
	uint64_t v;

	if (!cli_parse_u64(t, &v) || v < 1 || v > 256 ||
	    o->nthreads == KCORE_BENCH_MAX_CONFIGS)
		return false;
	o->threads[o->nthreads++] = (unsigned)v;
	return true;
}

static bool add_mode(const char *t, void *ctx)
{
	int m = kcore_bench_mode_from_name(t);

	if (m < 0)
		return false;
	*(unsigned *)ctx |= 1u << m;
	return true;
}

static bool add_class(const char *t, void *ctx)
{
	int c = kcore_bench_class_from_name(t);

	if (c < 0)
		return false;
	*(unsigned *)ctx |= 1u << c;
	return true;
}

static bool parse_seconds(const char *s, double *ret)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v > 0) || v > 3600)
		return false;
	*ret = v;
	return true;
}

static double mb_per_s(const struct kcore_bench_run *r)
{
	return r->seconds > 0 ? (double)r->bytes / r->seconds / 1e6 : 0;
}

static double reads_per_s(const struct kcore_bench_run *r)
{
	return r->seconds > 0 ? (double)r->reads / r->seconds : 0;
}

/* "4K", "1M": block sizes are powers of two in practice. */
static const char *short_size(uint64_t v, char *buf, size_t size)
{
	static const char units[] = "BKMGT";
	unsigned u = 0;

	while (v >= 1024 && v % 1024 == 0 && u + 1 < sizeof(units) - 1) {
		v /= 1024;
		u++;
	}
	if (u)
		snprintf(buf, size, "%" PRIu64 "%c", v, units[u]);
	else
		snprintf(buf, size, "%" PRIu64, v);
	return buf;
}

static const char *latency(double s, char *buf, size_t size)
{
	if (s < 1e-3)
		snprintf(buf, size, "%.1fus", s * 1e6);
	else if (s < 1)
		snprintf(buf, size, "%.2fms", s * 1e3);
	else
		snprintf(buf, size, "%.2fs", s);
	return buf;
}

struct progress_state {
	bool tty;
	bool shown;
};

static void show_progress(void *arg, size_t done, size_t total)
{
	struct progress_state *ps = arg;

	fprintf(stderr, "%smeasured %zu of %zu%s", ps->tty ? "\r\033[K" : "",
		done, total, ps->tty ? "" : "\n");
	fflush(stderr);
	ps->shown = true;
}

static void render_text(FILE *f, const struct kcore_source_info *info,
			const struct kcore_bench_opts *o,
			const struct kcore_bench_result *r, int verbosity)
{
	const struct kcore_bench_holes *h = &r->holes;
	char a[32], b[32], c[32];

	if (verbosity < 0)
		goto table;

	fprintf(f,
		"Benchmark of %s (%s), at most %s and %.3g s per "
		"measurement\n",
		info->path, kcore_source_kind_name(info->kind),
		cli_human_size(o->limit, a, sizeof(a)), o->seconds);
	if (r->warning)
		fprintf(f, "  note: %s\n", r->warning);
	fprintf(f, "\nClasses:\n");
	for (int i = 0; i < KCORE_BENCH_CLASS_NUM; i++) {
		const struct kcore_bench_class_info *ci = &r->classes[i];

		if (!ci->present)
			continue;
		fprintf(f, "  %-13s %10s in %zu range%s\n",
			kcore_bench_class_name((enum kcore_bench_class)i),
			cli_human_size(ci->bytes, a, sizeof(a)), ci->nranges,
			ci->nranges == 1 ? "" : "s");
	}
	fprintf(f, "\nHoles:\n");
	fprintf(f, "  SEEK_DATA/SEEK_HOLE: %s\n",
		h->seek_data ? "meaningful"
		: r->live    ? "not implemented by this kernel's /proc/kcore "
			       "(all data)"
			     : "not meaningful");
	fprintf(f, "  file size %s, PT_LOAD bytes %s\n",
		cli_human_size(h->file_size, a, sizeof(a)),
		cli_human_size(h->load_bytes, b, sizeof(b)));
	if (h->seek_data)
		fprintf(f, "  SEEK_DATA: %s data, %s holes\n",
			cli_human_size(h->data_bytes, a, sizeof(a)),
			cli_human_size(h->hole_bytes, b, sizeof(b)));
	if (r->live) {
		fprintf(f, "  RAM %s of the %s file\n",
			cli_human_size(h->ram_bytes, a, sizeof(a)),
			cli_human_size(h->file_size, b, sizeof(b)));
		fprintf(f, "  vmalloc: %s mapped of a %s segment (%s)\n",
			cli_human_size(h->vmalloc_mapped_bytes, a, sizeof(a)),
			cli_human_size(h->vmalloc_segment_bytes, b, sizeof(b)),
			h->vmalloc_source ? h->vmalloc_source : "no map");
		fprintf(f, "  modules: %s mapped of a %s segment\n",
			cli_human_size(h->modules_mapped_bytes, a, sizeof(a)),
			cli_human_size(h->modules_segment_bytes, b, sizeof(b)));
	}
	fprintf(f, "  the hole map lets a dump skip %s\n",
		cli_human_size(h->skippable_bytes, c, sizeof(c)));
	fputc('\n', f);
table:
	fprintf(f, "%-13s %-4s %5s %3s %10s %9s %9s %9s %9s %5s\n", "CLASS",
		"MODE", "BLOCK", "THR", "BYTES", "MB/s", "READS/s", "MEDIAN",
		"P99", "ZERO%");
	for (size_t i = 0; i < r->nruns; i++) {
		const struct kcore_bench_run *run = &r->runs[i];
		char med[16] = "-", p99[16] = "-";

		if (run->has_latency) {
			latency(run->latency_median, med, sizeof(med));
			latency(run->latency_p99, p99, sizeof(p99));
		}
		fprintf(f, "%-13s %-4s %5s %3u %10s %9.1f %9.0f %9s %9s",
			kcore_bench_class_name(run->cls),
			kcore_bench_mode_name(run->mode),
			short_size(run->block_size, a, sizeof(a)), run->threads,
			cli_human_size(run->bytes, b, sizeof(b)), mb_per_s(run),
			reads_per_s(run), med, p99);
		if (run->mode == KCORE_BENCH_RAW || !run->bytes)
			fprintf(f, " %5s", "-");
		else
			fprintf(f, " %5.1f",
				100.0 * (double)run->zero_bytes /
					(double)run->bytes);
		if (run->bytes_hole)
			fprintf(f, "  %s skipped as holes",
				cli_human_size(run->bytes_hole, c, sizeof(c)));
		if (run->read_errors)
			fprintf(f, "  %" PRIu64 " read errors",
				run->read_errors);
		if (verbosity > 0)
			fprintf(f,
				"  %" PRIu64
				" reads in %.3f s, ended by the %s",
				run->reads, run->seconds,
				run->stopped_by_time ? "time" : "byte limit");
		fputc('\n', f);
	}
	if (verbosity >= 0)
		fprintf(f, "\n%zu measurements in %.1f s\n", r->nruns,
			r->seconds);
	if (verbosity >= 0 && kcore_sha256_chosen())
		fprintf(f, "SHA-256 (zero and dump modes): %s\n",
			kcore_sha256_chosen()->name);
}

static void render_json(FILE *f, const struct kcore_source_info *info,
			const struct kcore_bench_opts *o,
			const struct kcore_bench_result *r)
{
	const struct kcore_bench_holes *h = &r->holes;
	struct kcore_json j;

	kcore_json_init(&j, f);
	kcore_json_object_begin(&j, NULL);
	kcore_json_object_begin(&j, "source");
	kcore_json_string(&j, "path", info->path);
	kcore_json_string(&j, "kind", kcore_source_kind_name(info->kind));
	kcore_json_bool(&j, "live", r->live);
	kcore_json_object_end(&j);
	kcore_json_object_begin(&j, "config");
	kcore_json_u64(&j, "limit", o->limit);
	kcore_json_double(&j, "seconds", o->seconds);
	kcore_json_array_begin(&j, "block_sizes");
	for (size_t i = 0; i < o->nblock_sizes; i++)
		kcore_json_u64(&j, NULL, o->block_sizes[i]);
	kcore_json_array_end(&j);
	kcore_json_array_begin(&j, "threads");
	for (size_t i = 0; i < o->nthreads; i++)
		kcore_json_u64(&j, NULL, o->threads[i]);
	kcore_json_array_end(&j);
	kcore_json_array_begin(&j, "modes");
	for (int m = 0; m < KCORE_BENCH_MODE_NUM; m++)
		if (o->modes >> m & 1)
			kcore_json_string(&j, NULL,
					  kcore_bench_mode_name(
						  (enum kcore_bench_mode)m));
	kcore_json_array_end(&j);
	kcore_json_string(&j, "compress", kcore_compress_name(o->compress));
	kcore_json_object_end(&j);
	kcore_json_string(&j, "warning", r->warning);
	/* The SHA-256 implementation the zero and dump modes took (null:
	 * none hashed). */
	kcore_json_string(&j, "sha256_impl",
			  kcore_sha256_chosen() ? kcore_sha256_chosen()->name
						: NULL);
	kcore_json_object_begin(&j, "classes");
	for (int i = 0; i < KCORE_BENCH_CLASS_NUM; i++) {
		const struct kcore_bench_class_info *ci = &r->classes[i];

		if (!ci->present)
			continue;
		kcore_json_object_begin(
			&j, kcore_bench_class_name((enum kcore_bench_class)i));
		kcore_json_u64(&j, "bytes", ci->bytes);
		kcore_json_u64(&j, "ranges", ci->nranges);
		kcore_json_object_end(&j);
	}
	kcore_json_object_end(&j);
	kcore_json_object_begin(&j, "holes");
	kcore_json_bool(&j, "seek_data", h->seek_data);
	kcore_json_u64(&j, "file_size", h->file_size);
	kcore_json_u64(&j, "load_bytes", h->load_bytes);
	if (h->seek_data) {
		kcore_json_u64(&j, "data_bytes", h->data_bytes);
		kcore_json_u64(&j, "hole_bytes", h->hole_bytes);
	} else {
		kcore_json_null(&j, "data_bytes");
		kcore_json_null(&j, "hole_bytes");
	}
	if (r->live) {
		kcore_json_u64(&j, "ram_bytes", h->ram_bytes);
		kcore_json_u64(&j, "vmalloc_segment_bytes",
			       h->vmalloc_segment_bytes);
		kcore_json_u64(&j, "vmalloc_mapped_bytes",
			       h->vmalloc_mapped_bytes);
		kcore_json_u64(&j, "modules_segment_bytes",
			       h->modules_segment_bytes);
		kcore_json_u64(&j, "modules_mapped_bytes",
			       h->modules_mapped_bytes);
		kcore_json_string(&j, "vmalloc_source", h->vmalloc_source);
	}
	kcore_json_u64(&j, "skippable_bytes", h->skippable_bytes);
	kcore_json_object_end(&j);
	kcore_json_array_begin(&j, "runs");
	for (size_t i = 0; i < r->nruns; i++) {
		const struct kcore_bench_run *run = &r->runs[i];

		kcore_json_object_begin(&j, NULL);
		kcore_json_string(&j, "class",
				  kcore_bench_class_name(run->cls));
		kcore_json_string(&j, "mode", kcore_bench_mode_name(run->mode));
		kcore_json_u64(&j, "block_size", run->block_size);
		kcore_json_u64(&j, "threads", run->threads);
		kcore_json_u64(&j, "bytes", run->bytes);
		kcore_json_u64(&j, "reads", run->reads);
		kcore_json_double(&j, "seconds", run->seconds);
		kcore_json_double(&j, "mb_per_s", mb_per_s(run));
		kcore_json_double(&j, "reads_per_s", reads_per_s(run));
		if (run->has_latency) {
			kcore_json_double(&j, "latency_median_us",
					  run->latency_median * 1e6);
			kcore_json_double(&j, "latency_p99_us",
					  run->latency_p99 * 1e6);
		} else {
			kcore_json_null(&j, "latency_median_us");
			kcore_json_null(&j, "latency_p99_us");
		}
		if (run->mode == KCORE_BENCH_RAW)
			kcore_json_null(&j, "zero_bytes");
		else
			kcore_json_u64(&j, "zero_bytes", run->zero_bytes);
		if (run->mode == KCORE_BENCH_ZERO)
			kcore_json_double(&j, "process_seconds",
					  run->process_seconds);
		if (run->mode == KCORE_BENCH_DUMP) {
			kcore_json_u64(&j, "bytes_hole", run->bytes_hole);
			kcore_json_u64(&j, "bytes_written", run->bytes_written);
		}
		kcore_json_u64(&j, "read_errors", run->read_errors);
		kcore_json_bool(&j, "timed_out", run->stopped_by_time);
		kcore_json_object_end(&j);
	}
	kcore_json_array_end(&j);
	kcore_json_double(&j, "seconds", r->seconds);
	kcore_json_object_end(&j);
	kcore_json_finish(&j);
}

static int usage(struct cli_parser *p, struct cli_ctx *ctx, const char *what,
		 const char *arg)
{
	cli_parser_destroy(p);
	return cli_usage_error(ctx, "bench", "bad %s '%s'", what, arg);
}

static int cmd_bench(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_command *cmd = &cli_cmd_bench;
	struct cli_parser *p = cli_parser_create(cmd, argc, argv);
	struct kcore_bench_opts opts = { 0 };
	struct progress_state ps = { 0 };
	struct kcore_bench_result res;
	struct kcore_source *src = NULL;
	const char *source = "/proc/kcore", *arg;
	struct kcore_error *err;
	int c, progress = -1, first, verbosity = 0;
	uint64_t v;

	if (!p)
		return cli_fail(ctx, &kcore_error_nomem);
	while ((c = cli_parser_next(p, &arg)) >= 0) {
		switch (c) {
		case OPT_BLOCK_SIZE:
			opts.nblock_sizes = 0;
			if (!parse_list(arg, add_block_size, &opts))
				return usage(p, ctx,
					     "--block-size (multiples of 512 "
					     "up to 256M)",
					     arg);
			break;
		case 'T':
			opts.nthreads = 0;
			if (!parse_list(arg, add_threads, &opts))
				return usage(p, ctx, "--threads", arg);
			break;
		case OPT_MODE:
			opts.modes = 0;
			if (!parse_list(arg, add_mode, &opts.modes))
				return usage(p, ctx, "--mode", arg);
			break;
		case OPT_CLASSES:
			opts.classes = 0;
			if (!parse_list(arg, add_class, &opts.classes))
				return usage(p, ctx, "--classes", arg);
			break;
		case OPT_LIMIT:
			if (!cli_parse_size(arg, &v) || !v)
				return usage(p, ctx, "--limit", arg);
			opts.limit = v;
			break;
		case OPT_TIME:
			if (!parse_seconds(arg, &opts.seconds))
				return usage(p, ctx, "--time", arg);
			break;
		case OPT_COMPRESS:
			if (kcore_compress_from_name(arg) < 0)
				return usage(p, ctx, "--compress", arg);
			opts.compress = kcore_compress_from_name(arg);
			break;
		case OPT_LEVEL:
			if (!cli_parse_u64(arg, &v) || v > 22)
				return usage(p, ctx, "--level", arg);
			opts.level = (int)v;
			break;
		case OPT_PROGRESS:
			progress = 1;
			break;
		case OPT_NO_PROGRESS:
			progress = 0;
			break;
		case 'j':
			ctx->json = true;
			break;
		case 'q':
			verbosity = -1;
			break;
		case 'v':
			verbosity = 1;
			break;
		}
	}
	int done = cli_parser_end(p, c, &first);
	if (done >= 0)
		return done;
	if (argc - first > 1)
		return cli_usage_error(ctx, "bench", "takes one SOURCE");
	if (argc - first == 1)
		source = argv[first];
	if (!opts.nblock_sizes) {
		static const uint64_t bs[] = { 4u << 10, 64u << 10, 1u << 20,
					       4u << 20 };

		memcpy(opts.block_sizes, bs, sizeof(bs));
		opts.nblock_sizes = 4;
	}
	if (!opts.nthreads) {
		opts.threads[0] = 1;
		opts.threads[1] = 2;
		opts.nthreads = 2;
	}
	if (!opts.modes)
		opts.modes = (1u << KCORE_BENCH_MODE_NUM) - 1;
	if (!opts.limit)
		opts.limit = 64u << 20;
	if (!(opts.seconds > 0))
		opts.seconds = 2;

	err = kcore_source_open(source, NULL, &src);
	if (err)
		return cli_fail(ctx, err);
	ps.tty = isatty(STDERR_FILENO);
	if (progress == 1 || (progress == -1 && ps.tty && verbosity >= 0)) {
		opts.progress = show_progress;
		opts.progress_arg = &ps;
	}
	opts.cancel = cli_catch_signals();
	err = kcore_bench(src, &opts, &res);
	if (ps.shown && ps.tty)
		fputc('\n', stderr);
	if (err) {
		kcore_source_destroy(src);
		return cli_fail(ctx, err);
	}
	if (ctx->json)
		render_json(stdout, kcore_source_info(src), &opts, &res);
	else
		render_text(stdout, kcore_source_info(src), &opts, &res,
			    verbosity);
	kcore_bench_result_deinit(&res);
	kcore_source_destroy(src);
	return EXIT_OK;
}

const struct cli_command cli_cmd_bench = {
	.name = "bench",
	.run = cmd_bench,
	.options = bench_options,
	.args = "[SOURCE]",
	.args_complete = "@file",
	.summary = "measure read throughput per segment class",
};
