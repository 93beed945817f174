// SPDX-License-Identifier: MIT
/* kcoredump verify and extract. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kcoredump/json.h"
#include "kcoredump/dump.h"
#include "kcoredump/verify.h"

static const struct cli_option verify_options[] = {
	{ "json", 'j', CLI_ARG_NONE, NULL,
	  "print the result as one JSON document", NULL, 'j' },
	CLI_OPT_QUIET("print nothing; only the exit status tells"),
	CLI_OPT_VERBOSE("a line for every segment (address, size, digest), not "
			"only for those that differ"),
	{ "exclude", 'd', CLI_ARG_REQUIRED, "CLASSES",
	  "with SOURCE: DUMP was made without these pages (as dump "
	  "--exclude; default: what its note says), not counted as differing",
	  "free cache cache-private user zero all", 'd' },
	{ "sha256", 0, CLI_ARG_REQUIRED, "HEX",
	  "also check the file's bytes against this SHA-256 (dump's \"file "
	  "sha256\", what sha256sum prints)",
	  NULL, 's' },
	{ "live", 0, CLI_ARG_NONE, NULL,
	  "DUMP is a dump of this boot's /proc/kcore: read again what it "
	  "read and count the pages that changed since (as dump "
	  "--smear-check)",
	  NULL, DOPT_LIVE },
	{ "progress", 0, CLI_ARG_NONE, NULL,
	  "show progress even when stderr is not a terminal", NULL,
	  DOPT_PROGRESS },
	{ "no-progress", 0, CLI_ARG_NONE, NULL, "never show progress", NULL,
	  DOPT_NO_PROGRESS },
	{ 0 },
};

/* verify's progress line: what is checked of how much, how fast. */
static void draw_verify(struct cli_progress *ps,
			const struct kcore_dump_stats *st, double elapsed)
{
	struct cli_progress_line l = { 0 };
	char a[32], b[32];
	double rate = elapsed > 0 ? (double)st->bytes_done / elapsed : 0;

	cli_progress_add(&l, 100, "verify: %5.1f%%",
			 st->bytes_total ? 100.0 * (double)st->bytes_done /
						   (double)st->bytes_total
					 : 100.0);
	cli_progress_add(&l, 90, "%s of %s checked",
			 cli_human_size(st->bytes_done, a, sizeof(a)),
			 cli_human_size(st->bytes_total, b, sizeof(b)));
	cli_progress_add(&l, 60, "%s/s",
			 cli_human_size((uint64_t)rate, a, sizeof(a)));
	cli_progress_add(&l, 80, "%s",
			 cli_progress_stopping(ps) && !st->phase ? "stopping…"
			 : st->phase				 ? st->phase
								 : "checking");
	cli_progress_add(&l, 50, "elapsed %s", cli_hms(elapsed, b, sizeof(b)));
	cli_progress_print(ps, &l);
}

struct verify_progress {
	struct cli_progress ps;
	struct kcore_dump_stats st;
	struct timespec t0;
	double last;
};

static double since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) +
	       (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* From kcore_verify_progress: a redraw every 100 ms at most (the timer
 * redraws between), and at the end. */
static void verify_progress(void *arg, uint64_t done, uint64_t total)
{
	struct verify_progress *vp = arg;
	double el = since(&vp->t0);

	vp->st.bytes_done = done;
	vp->st.bytes_total = total;
	vp->st.elapsed = el;
	if (el - vp->last < 0.1 && done < total)
		return;
	vp->last = el;
	cli_dump_progress(&vp->ps, &vp->st);
}

/* The file's SHA-256, when --sha256 asked for it. */
struct file_check {
	const char *expected; /* lowercase hex, or NULL: not asked */
	char actual[2 * KCORE_DIGEST_LEN + 1];
	bool match;
};

static const struct cli_option extract_options[] = {
	{ "output", 'o', CLI_ARG_REQUIRED, "FILE",
	  "write the sparse ELF dump to FILE", "@file", 'o' },
	{ "force", 'f', CLI_ARG_NONE, NULL, "replace an existing output file",
	  NULL, 'f' },
	CLI_OPT_QUIET("print no summary"),
	CLI_OPT_VERBOSE("say how big DUMP is, the ratio and how long it took"),
	{ 0 },
};

/* Where the digests verify checks come from, or why there are none:
 * some formats have no place for a note, other tools write none. */
static const char *digest_origin(const char *dump,
				 const struct kcore_verify_result *r)
{
	struct kcore_source *src;
	static char buf[160];
	const char *why;

	switch (r->digest_location) {
	case KCORE_DIGESTS_NONE:
		return "dumped with --hash none";
	case KCORE_DIGESTS_NOTE:
		return "digests in kcoredump's metadata note";
	case KCORE_DIGESTS_TRAILER:
		return "digests in kcoredump's trailer";
	case KCORE_DIGESTS_SUMMARY: /* a file has no note saying it */
		return kcore_digest_location_name(r->digest_location);
	default:
		break;
	}
	if (kcore_source_open(dump, NULL, &src))
		return "no kcoredump digests";
	/* The format has no place for our note, or none was written. */
	why = kcore_source_format_no_digests(src);
	if (why)
		snprintf(buf, sizeof(buf), "%s: compare it with a SOURCE", why);
	kcore_source_destroy(src);
	return why ? buf : "no kcoredump metadata note, so no digests";
}

static void render_verify_text(const char *dump,
			       const struct kcore_verify_result *r,
			       const struct file_check *fc, bool verbose)
{
	char hex[2 * KCORE_DIGEST_LEN + 1], s[32];

	printf("%s: %s (%zu segments, %s%s, %s)\n", dump,
	       !r->match	 ? "MISMATCH"
	       : r->incomplete	 ? "INCOMPLETE"
	       : r->has_expected ? "OK"
				 : "no digests to check",
	       r->nsegs,
	       r->method != KCORE_COMPRESS_NONE || !r->page_compression
		       ? kcore_compress_name(r->method)
		       : r->page_compression,
	       r->method == KCORE_COMPRESS_NONE && r->page_compression
		       ? " pages"
		       : "",
	       digest_origin(dump, r));
	for (size_t i = 0; i < r->nsegs; i++) {
		const struct kcore_verify_segment *v = &r->segs[i];

		if (!verbose && v->match && !v->differ_bytes)
			continue;
		printf("  segment %zu at 0x%016" PRIx64 ": %s", i, v->vaddr,
		       v->match ? "digest ok" : "DIGEST MISMATCH");
		if (verbose) {
			kcore_hex(v->actual, KCORE_DIGEST_LEN, hex);
			printf(", %s, sha256 %s",
			       cli_human_size(v->size, s, sizeof(s)), hex);
		}
		if (v->differ_bytes)
			printf(", %s differ from the source",
			       cli_human_size(v->differ_bytes, s, sizeof(s)));
		printf("\n");
	}
	kcore_hex(r->actual, KCORE_DIGEST_LEN, hex);
	printf("  segment root: %s (SHA-256 of the segment digests; blocks: "
	       "%s)\n",
	       hex, kcore_block_hash_name(r->block_hash));
	if (r->block_hash_unknown)
		printf("  the dump's digests use a block digest this version "
		       "does not know: they cannot match\n");
	if (fc->expected && fc->match)
		printf("  file sha256:  %s (matches)\n", fc->actual);
	else if (fc->expected)
		printf("  file sha256:  %s: MISMATCH, expected %s\n",
		       fc->actual, fc->expected);
	if (r->incomplete && r->unreadable_bytes)
		printf("  INCOMPLETE: %" PRIu64 " bytes in %" PRIu64
		       " range%s could not be read when the dump was made: "
		       "its digests are of the zeros written there\n",
		       r->unreadable_bytes, r->unreadable_ranges,
		       r->unreadable_ranges == 1 ? "" : "s");
	else if (r->incomplete)
		printf("  INCOMPLETE: the dump says it is incomplete "
		       "(makedumpfile's mark), not how much\n");
	if (r->compared)
		printf("  source: %s of %s differ\n",
		       cli_human_size(r->differ_bytes, s, sizeof(s)),
		       cli_human_size(r->bytes_checked, hex, sizeof(hex)));
	if (r->compared && r->exclude_level)
		printf("  excluded: %s zero in the dump where the source's "
		       "pages are of the classes it left out (--exclude %u), "
		       "not counted\n",
		       cli_human_size(r->excluded_bytes, s, sizeof(s)),
		       r->exclude_level);
}

static void render_verify_json(const char *dump,
			       const struct kcore_verify_result *r,
			       const struct file_check *fc)
{
	char hex[2 * KCORE_DIGEST_LEN + 1];
	struct kcore_json j;

	kcore_json_init(&j, stdout);
	kcore_json_object_begin(&j, NULL);
	kcore_json_string(&j, "path", dump);
	kcore_json_bool(&j, "ok",
			r->match && (!r->compared || !r->differ_bytes) &&
				!r->incomplete && (!fc->expected || fc->match));
	kcore_json_bool(&j, "digests_match", r->match);
	kcore_json_bool(&j, "complete", !r->incomplete);
	if (r->incomplete) {
		kcore_json_object_begin(&j, "incomplete");
		kcore_json_u64(&j, "unreadable_bytes", r->unreadable_bytes);
		kcore_json_u64(&j, "unreadable_ranges", r->unreadable_ranges);
		kcore_json_object_end(&j);
	} else {
		kcore_json_null(&j, "incomplete");
	}
	kcore_json_bool(&j, "has_digests", r->has_expected);
	/* A stream's compression, else the format's own (kdump pages). */
	kcore_json_string(&j, "compression",
			  r->method != KCORE_COMPRESS_NONE
				  ? kcore_compress_name(r->method)
			  : r->page_compression ? r->page_compression
						: "none");
	kcore_json_string(&j, "page_compression", r->page_compression);
	/* Where the digests are ("note", "trailer", "none"), as dump
	 * --json says; null: none found, digests_detail says why. */
	kcore_json_string(&j, "digests",
			  kcore_digest_location_name(r->digest_location));
	kcore_json_string(&j, "digests_detail", digest_origin(dump, r));
	kcore_json_string(&j, "block_digest",
			  r->block_hash_unknown
				  ? NULL
				  : kcore_block_hash_name(r->block_hash));
	kcore_hex(r->actual, KCORE_DIGEST_LEN, hex);
	kcore_json_string(&j, "segment_digest_root", hex);
	if (fc->expected) {
		kcore_json_string(&j, "file_sha256", fc->actual);
		kcore_json_string(&j, "file_sha256_expected", fc->expected);
		kcore_json_bool(&j, "file_sha256_match", fc->match);
	} else {
		kcore_json_null(&j, "file_sha256");
	}
	if (r->compared) {
		kcore_json_u64(&j, "source_bytes_checked", r->bytes_checked);
		kcore_json_u64(&j, "source_bytes_differ", r->differ_bytes);
		kcore_json_u64(&j, "exclude_level", r->exclude_level);
		kcore_json_u64(&j, "source_bytes_excluded", r->excluded_bytes);
	}
	kcore_json_array_begin(&j, "segments");
	for (size_t i = 0; i < r->nsegs; i++) {
		const struct kcore_verify_segment *v = &r->segs[i];

		kcore_json_object_begin(&j, NULL);
		kcore_json_hex(&j, "vaddr", v->vaddr);
		if (v->has_paddr)
			kcore_json_hex(&j, "paddr", v->paddr);
		kcore_json_u64(&j, "size", v->size);
		kcore_json_bool(&j, "match", v->match);
		kcore_hex(v->actual, KCORE_DIGEST_LEN, hex);
		kcore_json_string(&j, "sha256", hex);
		if (v->has_expected) {
			kcore_hex(v->expected, KCORE_DIGEST_LEN, hex);
			kcore_json_string(&j, "sha256_expected", hex);
		}
		if (r->compared)
			kcore_json_u64(&j, "source_bytes_differ",
				       v->differ_bytes);
		kcore_json_object_end(&j);
	}
	kcore_json_array_end(&j);
	kcore_json_object_end(&j);
	kcore_json_finish(&j);
}

/* The SHA-256 of the file's bytes against --sha256's. */
static struct kcore_error *check_file(const char *path, struct file_check *fc)
{
	unsigned char d[KCORE_DIGEST_LEN];
	struct kcore_error *err;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return kcore_error_create(errno == EACCES ? KCORE_ERR_ACCESS
					  : errno == ENOENT
						  ? KCORE_ERR_NOT_FOUND
						  : KCORE_ERR_OS,
					  errno, path, "cannot open");
	if (fstat(fd, &st)) {
		err = kcore_error_create(KCORE_ERR_OS, errno, path,
					 "cannot stat");
	} else {
		err = kcore_file_sha256(fd, path, (uint64_t)st.st_size,
					cli_catch_signals(), d);
	}
	close(fd);
	if (err)
		return err;
	kcore_hex(d, KCORE_DIGEST_LEN, fc->actual);
	fc->match = strcmp(fc->actual, fc->expected) == 0;
	return NULL;
}

static bool is_sha256_hex(const char *s)
{
	size_t n = strspn(s, "0123456789abcdefABCDEF");

	return n == 2 * KCORE_DIGEST_LEN && !s[n];
}

/*
 * verify --live DUMP: the live kernel against a dump of this boot (the
 * smear since the dump).  Exit 0 when no page changed, EXIT_MISMATCH when
 * some did; a dump of another boot is refused (EXIT_BAD_INPUT).
 */
static int verify_live(struct cli_ctx *ctx, const char *dump, bool quiet)
{
	struct kcore_smear sm;
	char boot[64];
	struct kcore_error *err =
		kcore_smear_live(dump, NULL, cli_catch_signals(), &sm, boot);

	if (err)
		return cli_fail(ctx, err);
	if (ctx->json) {
		struct kcore_json j;

		kcore_json_init(&j, stdout);
		kcore_json_object_begin(&j, NULL);
		kcore_json_string(&j, "path", dump);
		kcore_json_string(&j, "live_source", "/proc/kcore");
		kcore_json_string(&j, "boot_id", boot);
		kcore_json_bool(&j, "ok", sm.all.changed == 0);
		cli_smear_json(&j, &sm);
		kcore_json_object_end(&j);
		kcore_json_finish(&j);
	} else if (!quiet) {
		printf("%s: %s: %" PRIu64 " of %" PRIu64
		       " pages changed since the dump read them (boot %s)\n",
		       dump, sm.all.changed ? "CHANGED" : "UNCHANGED",
		       sm.all.changed, sm.all.pages, boot);
		cli_smear_text(stdout, &sm);
	}
	free(sm.changes);
	return sm.all.changed ? EXIT_MISMATCH : EXIT_OK;
}

static int cmd_verify(struct cli_ctx *ctx, int argc, char **argv)
{
	struct file_check fc = { 0 };
	char want[2 * KCORE_DIGEST_LEN + 1];
	struct cli_parser *p = cli_parser_create(&cli_cmd_verify, argc, argv);
	struct kcore_verify_result r;
	struct kcore_error *err;
	bool quiet = false, verbose = false, live = false;
	const char *arg;
	int c, exclude = -1, progress = -1;
	struct verify_progress vp = { .st.phase = "checking" };

	if (!p)
		return cli_fail(ctx, &kcore_error_nomem);
	while ((c = cli_parser_next(p, &arg)) >= 0) {
		if (c == 'j')
			ctx->json = true;
		else if (c == 'q')
			quiet = true;
		else if (c == 'v')
			verbose = true;
		else if (c == DOPT_LIVE)
			live = true;
		else if (c == DOPT_PROGRESS)
			progress = 1;
		else if (c == DOPT_NO_PROGRESS)
			progress = 0;
		else if (c == 's') {
			if (!is_sha256_hex(arg)) {
				cli_parser_destroy(p);
				return cli_usage_error(
					ctx, "verify",
					"--sha256 takes 64 hexadecimal "
					"digits: '%s'",
					arg);
			}
			for (size_t i = 0; i <= 2 * KCORE_DIGEST_LEN; i++)
				want[i] = (char)tolower((unsigned char)arg[i]);
			fc.expected = want;
		} else if (c == 'd' &&
			   (exclude = kcore_exclude_parse(arg)) < 0) {
			cli_parser_destroy(p);
			return cli_bad_exclude(ctx, "verify", arg);
		}
	}
	int first, done = cli_parser_end(p, c, &first);

	if (done >= 0)
		return done;
	if (argc - first < 1 || argc - first > 2)
		return cli_usage_error(ctx, "verify",
				       "needs DUMP and optionally SOURCE");
	if (live && (argc - first != 1 || exclude >= 0 || fc.expected))
		return cli_usage_error(ctx, "verify",
				       "--live takes one DUMP, without SOURCE, "
				       "--exclude or --sha256");
	if (live)
		return verify_live(ctx, argv[first], quiet);
	if (exclude >= 0 && argc - first != 2)
		return cli_usage_error(ctx, "verify",
				       "--exclude is for comparing with a "
				       "SOURCE");
	vp.ps.tty = isatty(STDERR_FILENO);
	vp.ps.draw = draw_verify;
	vp.ps.cancel = cli_catch_signals();
	if (progress < 0)
		progress = vp.ps.tty && !quiet;
	clock_gettime(CLOCK_MONOTONIC, &vp.t0);
	if (progress)
		cli_progress_start(&vp.ps);
	err = kcore_verify_progress(argv[first],
				    argc - first == 2 ? argv[first + 1] : NULL,
				    exclude, cli_catch_signals(),
				    progress ? verify_progress : NULL, &vp, &r);
	cli_progress_stop(&vp.ps);
	if (progress && vp.ps.shown) {
		vp.st.phase = err ? "stopped" : "done";
		vp.st.elapsed = since(&vp.t0);
		draw_verify(&vp.ps, &vp.st, vp.st.elapsed);
		if (vp.ps.tty)
			fputc('\n', stderr);
	}
	if (!err && fc.expected) {
		err = check_file(argv[first], &fc);
		if (err)
			kcore_verify_result_deinit(&r);
	}
	if (err)
		return cli_fail(ctx, err);
	if (ctx->json)
		render_verify_json(argv[first], &r, &fc);
	else if (!quiet)
		render_verify_text(argv[first], &r, &fc, verbose);
	int status = !r.match || (r.compared && r.differ_bytes) ||
				     (fc.expected && !fc.match)
			     ? EXIT_MISMATCH
		     : r.incomplete ? EXIT_INCOMPLETE
				    : EXIT_OK;
	if (!r.has_expected && status == EXIT_OK && !r.compared &&
	    !fc.expected) {
		if (!quiet)
			fprintf(stderr, "kcoredump: '%s': %s\n", argv[first],
				digest_origin(argv[first], &r));
		status = EXIT_BAD_INPUT;
	}
	kcore_verify_result_deinit(&r);
	return status;
}

struct extract_progress {
	struct cli_progress ps;
	uint64_t t0, last; /* monotonic ns */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* On a terminal: how much is decoded, at what rate, for how long. */
static void extract_progress(void *arg, uint64_t done, uint64_t total)
{
	struct extract_progress *ep = arg;
	uint64_t now = now_ns();
	double el = (double)(now - ep->t0) / 1e9;
	struct cli_progress_line l = { 0 };
	char a[32], b[32];

	if (ep->ps.shown && now - ep->last < 200000000u && done < total)
		return;
	ep->last = now;
	cli_progress_add(&l, 100, "%5.1f%%",
			 total ? 100.0 * (double)done / (double)total : 0.0);
	cli_progress_add(&l, 90, "%s of %s extracted",
			 cli_human_size(done, a, sizeof(a)),
			 total ? cli_human_size(total, b, sizeof(b)) : "?");
	cli_progress_add(
		&l, 60, "%s/s",
		cli_human_size(el > 0 ? (uint64_t)((double)done / el) : 0, a,
			       sizeof(a)));
	if (cli_progress_stopping(&ep->ps))
		cli_progress_add(&l, 80, "stopping…");
	cli_progress_add(&l, 50, "elapsed %s", cli_hms(el, b, sizeof(b)));
	cli_progress_print(&ep->ps, &l);
}

static int cmd_extract(struct cli_ctx *ctx, int argc, char **argv)
{
	struct extract_progress ep = { .ps.tty = true, .t0 = now_ns() };
	struct cli_parser *p = cli_parser_create(&cli_cmd_extract, argc, argv);
	const char *output = NULL, *arg;
	bool force = false, quiet = false, verbose = false;
	struct kcore_error *err;
	struct stat st;
	uint64_t size;
	char s[32], in[32];
	int c;

	if (!p)
		return cli_fail(ctx, &kcore_error_nomem);
	while ((c = cli_parser_next(p, &arg)) >= 0) {
		if (c == 'o')
			output = arg;
		else if (c == 'f')
			force = true;
		else if (c == 'q')
			quiet = true;
		else if (c == 'v')
			verbose = true;
	}
	int first, done = cli_parser_end(p, c, &first);

	if (done >= 0)
		return done;
	if (argc - first != 1 || !output)
		return cli_usage_error(ctx, "extract",
				       "needs DUMP and -o FILE");
	ep.ps.cancel = cli_catch_signals();
	err = kcore_extract_progress(
		argv[first], output, force, ep.ps.cancel,
		isatty(STDERR_FILENO) && !quiet ? extract_progress : NULL, &ep,
		&size);
	if (ep.ps.shown)
		fputc('\n', stderr);
	if (err)
		return cli_fail(ctx, err);
	if (!quiet)
		printf("Extracted %s to %s (%s)\n", argv[first], output,
		       cli_human_size(size, s, sizeof(s)));
	if (verbose && !quiet && stat(argv[first], &st) == 0) {
		double el = (double)(now_ns() - ep.t0) / 1e9;

		printf("  %s compressed, ratio %.2f, %.1f s\n",
		       cli_human_size((uint64_t)st.st_size, in, sizeof(in)),
		       st.st_size ? (double)size / (double)st.st_size : 0.0,
		       el);
	}
	return EXIT_OK;
}

const struct cli_command cli_cmd_verify = {
	.name = "verify",
	.run = cmd_verify,
	.options = verify_options,
	.args = "DUMP [SOURCE]",
	.args_complete = "@file",
	.summary = "check a dump against its digests (and a source)",
};

const struct cli_command cli_cmd_extract = {
	.name = "extract",
	.run = cmd_extract,
	.options = extract_options,
	.args = "DUMP",
	.args_complete = "@file",
	.summary = "decompress a .zst/.xz dump into a sparse ELF file",
};
