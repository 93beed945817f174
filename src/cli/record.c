// SPDX-License-Identifier: MIT
/*
 * dump --record: the acquisition record beside a dump, as JSON (FILE) and
 * as text (FILE with .json replaced by .txt, else FILE.txt): who made the
 * image where and how, when its memory was read, and the hashes an
 * examiner writes down.  Both files are opened before anything is read
 * (so a record that cannot be written refuses the dump up front) and
 * published, mode 0600, after the dump is.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kcoredump/json.h"
#include "kcoredump/dump.h"
#include "kcoredump/output.h"
#include "kcoredump/version.h"

struct cli_record {
	char *json_path, *text_path;
	struct kcore_output *json_out, *text_out;
};

static char *text_path_of(const char *path)
{
	size_t len = strlen(path);
	char *s = malloc(len + 5);

	if (!s)
		return NULL;
	memcpy(s, path, len + 1);
	if (len > 5 && !strcmp(path + len - 5, ".json"))
		s[len - 5] = '\0';
	strcat(s, ".txt");
	return s;
}

void cli_record_destroy(struct cli_record *r)
{
	if (!r)
		return;
	kcore_output_abort(r->json_out);
	kcore_output_abort(r->text_out);
	kcore_output_destroy(r->json_out);
	kcore_output_destroy(r->text_out);
	free(r->json_path);
	free(r->text_path);
	free(r);
}

struct kcore_error *cli_record_open(const char *path, const char *dump_output,
				    bool force, struct cli_record **ret)
{
	struct kcore_output_opts oo = { .force = force };
	struct cli_record *r;
	struct kcore_error *err;

	if (!strcmp(path, "-") || !*path)
		return kcore_error_create(KCORE_ERR_INVALID, 0, path,
					  "--record needs a file name (the "
					  "record is two files)");
	r = calloc(1, sizeof(*r));
	if (!r)
		return &kcore_error_nomem;
	r->json_path = strdup(path);
	r->text_path = text_path_of(path);
	if (!r->json_path || !r->text_path) {
		cli_record_destroy(r);
		return &kcore_error_nomem;
	}
	if (dump_output && (!strcmp(dump_output, r->json_path) ||
			    !strcmp(dump_output, r->text_path))) {
		err = kcore_error_create(KCORE_ERR_INVALID, 0, path,
					 "the record would replace the dump "
					 "'%s'",
					 dump_output);
		cli_record_destroy(r);
		return err;
	}
	err = kcore_output_open(r->json_path, &oo, &r->json_out);
	if (!err)
		err = kcore_output_open(r->text_path, &oo, &r->text_out);
	if (err) {
		cli_record_destroy(r);
		return err;
	}
	*ret = r;
	return NULL;
}

static void iso_time_ns(uint64_t ns, char out[48])
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(out, 48, "%04d-%02d-%02dT%02d:%02d:%02d.%09uZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (unsigned)(ns % 1000000000ull));
}

/* /proc/sys/kernel/random/boot_id, or "" where there is none. */
static void boot_id(char out[64])
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	size_t n = 0;

	out[0] = '\0';
	if (!f)
		return;
	if (fgets(out, 64, f))
		n = strcspn(out, "\n");
	out[n] = '\0';
	fclose(f);
}

/* What the record knows besides the dump: gathered once for both files. */
struct record_facts {
	char host[256], boot[64], t0[48], t1[48], *cwd, *output;
	struct utsname u;
	char file_hex[2 * KCORE_DIGEST_LEN + 1],
		root_hex[2 * KCORE_DIGEST_LEN + 1];
	const char *file_why; /* why there is no file hash, or NULL */
};

static void facts_init(struct record_facts *x,
		       const struct kcore_dump_result *r)
{
	bool none = r->digest_location == KCORE_DIGESTS_NONE;

	memset(x, 0, sizeof(*x));
	gethostname(x->host, sizeof(x->host) - 1);
	boot_id(x->boot);
	uname(&x->u);
	iso_time_ns(r->stats.start_ns, x->t0);
	iso_time_ns(r->stats.end_ns, x->t1);
	x->cwd = getcwd(NULL, 0);
	x->output = r->output_path ? realpath(r->output_path, NULL) : NULL;
	if (!none && r->has_file_sha256)
		kcore_hex(r->file_sha256, KCORE_DIGEST_LEN, x->file_hex);
	else if (none)
		x->file_why = "not computed (--hash none)";
	else if (r->file_sha256_skipped)
		x->file_why = "not computed: mostly holes (--file-sha256 "
			      "hashes its holes too; a .zst or .xz output is "
			      "always hashed)";
	else
		x->file_why = "unknown: a device written out of order";
	if (!none)
		kcore_hex(r->digest, KCORE_DIGEST_LEN, x->root_hex);
}

static void facts_deinit(struct record_facts *x)
{
	free(x->cwd);
	free(x->output);
}

/* When each cell of each segment was read (kcore_dump_result's time map),
 * as rows of numbers: it may have a few thousand. */
static void record_time_map(struct kcore_json *j,
			    const struct kcore_dump_result *r)
{
	static const char *const columns[] = { "segment", "offset", "length",
					       "start_us", "end_us" };
	char row[128];

	kcore_json_object_begin(j, "time_map");
	kcore_json_string(j, "clock", "CLOCK_BOOTTIME, from the read's start");
	kcore_json_u64(j, "grain", r->read_time_grain);
	kcore_json_array_begin(j, "columns");
	for (size_t i = 0; i < 5; i++)
		kcore_json_string(j, NULL, columns[i]);
	kcore_json_array_end(j);
	kcore_json_array_begin(j, "cells");
	for (size_t i = 0; i < r->nread_times; i++) {
		const struct kcore_read_time *t = &r->read_times[i];

		snprintf(row, sizeof(row),
			 "[%zu, %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64
			 "]",
			 t->segment, t->offset, t->length, t->start_ns / 1000,
			 (t->end_ns + 999) / 1000);
		kcore_json_raw(j, NULL, row);
	}
	kcore_json_array_end(j);
	kcore_json_object_end(j);
}

static void
record_json(FILE *f, const struct cli_ctx *ctx, const struct record_facts *x,
	    const struct kcore_source_info *in, const struct kcore_plan *plan,
	    const struct kcore_dump_opts *o, const struct kcore_dump_result *r)
{
	const struct kcore_dump_stats *st = &r->stats;
	const struct kcore_library_version *lib;
	size_t nlib;
	struct kcore_json j;

	kcore_json_init(&j, f);
	kcore_json_object_begin(&j, NULL);
	kcore_json_string(&j, "record", "kcoredump-acquisition-record-2");
	kcore_json_object_begin(&j, "tool");
	kcore_json_string(&j, "name", "kcoredump");
	kcore_json_string(&j, "version", KCOREDUMP_VERSION);
	kcore_json_object_begin(&j, "build");
	kcore_json_string(&j, "linkage",
			  kcore_build_is_static() ? "static" : "shared");
	kcore_json_string(&j, "machine", kcore_build_machine());
	kcore_json_string(&j, "libc", kcore_build_libc_version());
	kcore_json_object_begin(&j, "libraries");
	lib = kcore_library_versions(&nlib);
	for (size_t i = 0; i < nlib; i++)
		kcore_json_string(&j, lib[i].name, lib[i].version);
	kcore_json_object_end(&j);
	kcore_json_object_end(&j);
	kcore_json_object_end(&j);
	kcore_json_string(&j, "case", o->case_id);
	kcore_json_string(&j, "examiner", o->examiner);
	kcore_json_string(&j, "notes", o->notes);
	kcore_json_object_begin(&j, "host");
	kcore_json_string(&j, "hostname", x->host);
	kcore_json_string(&j, "boot_id", x->boot[0] ? x->boot : NULL);
	kcore_json_object_begin(&j, "uname");
	kcore_json_string(&j, "sysname", x->u.sysname);
	kcore_json_string(&j, "release", x->u.release);
	kcore_json_string(&j, "version", x->u.version);
	kcore_json_string(&j, "machine", x->u.machine);
	kcore_json_object_end(&j);
	kcore_json_object_end(&j);
	kcore_json_string(&j, "command_line", ctx->command_line);
	kcore_json_string(&j, "working_directory", x->cwd);
	kcore_json_object_begin(&j, "source");
	kcore_json_string(&j, "path", in->abs_path);
	kcore_json_string(&j, "kind", kcore_source_kind_name(in->kind));
	kcore_json_string(&j, "kernel_release", in->kernel_release);
	kcore_json_object_end(&j);
	kcore_json_object_begin(&j, "read");
	kcore_json_string(&j, "start_utc", x->t0);
	kcore_json_string(&j, "end_utc", x->t1);
	kcore_json_double(&j, "seconds", st->read_seconds);
	kcore_json_string(&j, "order", kcore_read_order_name(r->read_order));
	kcore_json_array_begin(&j, "phases");
	for (size_t i = 0; i < r->nread_phases; i++) {
		const struct kcore_read_phase *p = &r->read_phases[i];

		kcore_json_object_begin(&j, NULL);
		kcore_json_string(&j, "what", p->what);
		kcore_json_u64(&j, "segment", p->segment);
		kcore_json_u64(&j, "offset", p->offset);
		kcore_json_u64(&j, "length", p->length);
		kcore_json_u64(&j, "bytes_read", p->bytes);
		kcore_json_u64(&j, "start_us", p->start_ns / 1000);
		kcore_json_u64(&j, "end_us", (p->end_ns + 999) / 1000);
		kcore_json_object_end(&j);
	}
	kcore_json_array_end(&j);
	record_time_map(&j, r);
	kcore_json_object_end(&j);
	cli_dump_time_json(&j, st);
	kcore_json_object_begin(&j, "output");
	kcore_json_string(&j, "path", x->output ? x->output : "-");
	kcore_json_string(&j, "format", kcore_format_name(o->format));
	kcore_json_string(&j, "compression",
			  kcore_format_page_codec(o->format)
				  ? kcore_codec_name(o->codec)
				  : kcore_compress_name(o->compress));
	kcore_json_u64(&j, "bytes_written", st->bytes_written);
	kcore_json_string(&j, "file_sha256",
			  x->file_hex[0] ? x->file_hex : NULL);
	kcore_json_string(&j, "file_sha256_missing", x->file_why);
	kcore_json_string(&j, "segment_digest_root",
			  x->root_hex[0] ? x->root_hex : NULL);
	kcore_json_string(&j, "digests",
			  kcore_digest_location_name(r->digest_location));
	kcore_json_string(&j, "block_digest",
			  o->no_hash ? NULL
				     : kcore_block_hash_name(r->block_hash));
	kcore_json_object_end(&j);
	/* The byte counts under dump --json's names (issue 46). */
	kcore_json_object_begin(&j, "stats");
	kcore_json_u64(&j, "bytes_total", st->bytes_total);
	kcore_json_u64(&j, "bytes_read", st->bytes_read);
	kcore_json_u64(&j, "bytes_hole", st->bytes_hole);
	kcore_json_u64(&j, "bytes_zero", st->bytes_zero);
	kcore_json_u64(&j, "bytes_spliced", st->bytes_spliced);
	kcore_json_u64(&j, "bytes_excluded", st->bytes_excluded);
	kcore_json_u64(&j, "bytes_unreadable", st->bytes_unreadable);
	kcore_json_object_end(&j);
	cli_dump_segments_json(&j, plan, true, x->root_hex[0] != '\0');
	cli_dump_incomplete_json(&j, r);
	cli_smear_json(&j, &r->smear);
	kcore_json_object_end(&j);
	kcore_json_finish(&j);
}

/* The command line is quoted for a shell already: as it is, unless it
 * holds a control byte or a byte that is not ASCII (then escaped). */
static const char *shell_text(const char *s)
{
	if (!s)
		return "-";
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			return cli_esc(s);
	return s;
}

static void
record_text(FILE *f, const struct cli_ctx *ctx, const struct record_facts *x,
	    const struct kcore_source_info *in, const struct kcore_plan *plan,
	    const struct kcore_dump_opts *o, const struct kcore_dump_result *r)
{
	const struct kcore_dump_stats *st = &r->stats;
	const struct kcore_library_version *lib;
	size_t nlib;
	char a[32];

	fprintf(f, "kcoredump acquisition record\n\n");
	fprintf(f, "Case:          %s\n",
		o->case_id ? cli_esc(o->case_id) : "-");
	fprintf(f, "Examiner:      %s\n",
		o->examiner ? cli_esc(o->examiner) : "-");
	fprintf(f, "Notes:         %s\n", o->notes ? cli_esc(o->notes) : "-");
	fprintf(f, "Tool:          kcoredump %s (%s, %s, glibc %s)\n",
		KCOREDUMP_VERSION,
		kcore_build_is_static() ? "static" : "shared libraries",
		kcore_build_machine(), kcore_build_libc_version());
	fprintf(f, "Libraries:    ");
	lib = kcore_library_versions(&nlib);
	for (size_t i = 0; i < nlib; i++)
		fprintf(f, " %s %s%s", lib[i].name, lib[i].version,
			i + 1 < nlib ? "," : "\n");
	fprintf(f, "Host:          %s\n", cli_esc(x->host));
	fprintf(f, "Boot ID:       %s\n", x->boot[0] ? cli_esc(x->boot) : "-");
	fprintf(f, "Uname:         %s %s %s %s\n", cli_esc(x->u.sysname),
		cli_esc(x->u.release), cli_esc(x->u.version),
		cli_esc(x->u.machine));
	fprintf(f, "Command:       %s\n", shell_text(ctx->command_line));
	fprintf(f, "Directory:     %s\n", x->cwd ? cli_esc(x->cwd) : "-");
	fprintf(f, "Source:        %s (%s%s%s)\n", cli_esc(in->abs_path),
		kcore_source_kind_name(in->kind),
		in->kernel_release ? ", kernel " : "",
		in->kernel_release ? cli_esc(in->kernel_release) : "");
	fprintf(f, "Read started:  %s\n", x->t0);
	fprintf(f, "Read ended:    %s (%.3f s)\n", x->t1, st->read_seconds);
	fprintf(f, "Read order:    %s\n", kcore_read_order_name(r->read_order));
	for (size_t i = 0; i < r->nread_phases; i++) {
		const struct kcore_read_phase *p = &r->read_phases[i];

		fprintf(f,
			"Read first:    %s: segment %zu, 0x%" PRIx64
			" bytes at 0x%" PRIx64 ", %.3f-%.3f s\n",
			p->what, p->segment, p->length, p->offset,
			(double)p->start_ns / 1e9, (double)p->end_ns / 1e9);
	}
	fprintf(f,
		"Time map:      %zu cells of up to %s, each with when it was "
		"read (the JSON record; kcoredump info --read-time ADDR)\n",
		r->nread_times,
		cli_human_size(r->read_time_grain, a, sizeof(a)));
	fprintf(f,
		"Time:          %.3f s in all: read %.3f s, end of the file "
		"%.3f s, file SHA-256 %.3f s after the read (%.3f s "
		"alongside it), publishing %.3f s\n",
		st->elapsed, st->read_seconds, st->finish_seconds,
		st->file_hash_seconds, st->file_hash_busy_seconds,
		st->publish_seconds);
	fprintf(f, "Image:         %s\n",
		x->output ? cli_esc(x->output) : "<stdout>");
	fprintf(f, "Format:        %s, %s\n", kcore_format_name(o->format),
		kcore_format_page_codec(o->format)
			? kcore_codec_name(o->codec)
			: kcore_compress_name(o->compress));
	fprintf(f, "Size:          %" PRIu64 " bytes (%s)\n", st->bytes_written,
		cli_human_size(st->bytes_written, a, sizeof(a)));
	fprintf(f, "File SHA-256:  %s\n",
		x->file_hex[0] ? x->file_hex : x->file_why);
	fprintf(f, "Segment root:  %s\n", x->root_hex[0] ? x->root_hex : "-");
	fprintf(f,
		"Bytes:         %" PRIu64 " logical, %" PRIu64 " read, %" PRIu64
		" holes, %" PRIu64 " zero, %" PRIu64 " excluded\n",
		st->bytes_total, st->bytes_read, st->bytes_hole, st->bytes_zero,
		st->bytes_excluded);
	if (st->bytes_spliced)
		fprintf(f,
			"Spliced:       %" PRIu64 " of the bytes read moved by "
			"splice(2), not looked at (their zero pages are not "
			"counted)\n",
			st->bytes_spliced);
	if (kcore_dump_incomplete(r))
		fprintf(f,
			"Complete:      NO: %" PRIu64
			" bytes in %zu range%s could not be read%s\n",
			st->bytes_unreadable, r->nerrors,
			r->nerrors == 1 ? "" : "s",
			r->source_incomplete ? "; the source is incomplete"
					     : "");
	else
		fprintf(f, "Complete:      yes\n");
	if (r->smear.checked) {
		fprintf(f, "Smear:\n");
		cli_smear_text(f, &r->smear);
	}
	fprintf(f, "\nSegments (%zu):\n", plan->nsegs);
	for (size_t i = 0; i < plan->nsegs; i++) {
		const struct kcore_plan_segment *p = &plan->segs[i];
		char hex[2 * KCORE_DIGEST_LEN + 1] = "-";

		if (x->root_hex[0])
			kcore_hex(p->digest, KCORE_DIGEST_LEN, hex);
		fprintf(f,
			"  %zu %s 0x%016" PRIx64 " size 0x%" PRIx64
			" data %" PRIu64 " sha256 %s %s\n",
			i, kcore_segment_class_name(p->cls), p->vaddr, p->size,
			p->data_bytes, hex, p->label ? cli_esc(p->label) : "");
	}
	if (r->nerrors) {
		fprintf(f, "\nUnreadable ranges (%zu):\n", r->nerrors);
		for (size_t i = 0; i < r->nerrors; i++)
			fprintf(f,
				"  source offset 0x%" PRIx64
				" length 0x%" PRIx64
				" (segment %zu at 0x%" PRIx64 "): %s\n",
				r->errors[i].offset, r->errors[i].len,
				r->errors[i].segment, r->errors[i].seg_offset,
				r->errors[i].message
					? cli_esc(r->errors[i].message)
					: strerror(r->errors[i].errnum));
	}
}

static struct kcore_error *write_one(struct kcore_output *out, char *buf,
				     size_t len, const char *path)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(out->fd, buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return kcore_error_create(KCORE_ERR_OS,
						  n < 0 ? errno : EIO, path,
						  "cannot write the record");
		done += (size_t)n;
	}
	return kcore_output_commit(out, len);
}

struct kcore_error *cli_record_write(struct cli_record *r,
				     const struct cli_ctx *ctx,
				     const struct kcore_source_info *in,
				     const struct kcore_plan *plan,
				     const struct kcore_dump_opts *o,
				     const struct kcore_dump_result *res)
{
	struct record_facts x;
	struct kcore_error *err = NULL;
	char *jbuf = NULL, *tbuf = NULL;
	size_t jlen = 0, tlen = 0;
	FILE *jf = open_memstream(&jbuf, &jlen);
	FILE *tf = open_memstream(&tbuf, &tlen);

	facts_init(&x, res);
	if (jf) {
		record_json(jf, ctx, &x, in, plan, o, res);
		if (fclose(jf))
			err = &kcore_error_nomem;
	}
	if (tf) {
		record_text(tf, ctx, &x, in, plan, o, res);
		if (fclose(tf))
			err = &kcore_error_nomem;
	}
	facts_deinit(&x);
	if (!jf || !tf)
		err = &kcore_error_nomem;
	if (!err)
		err = write_one(r->json_out, jbuf, jlen, r->json_path);
	if (!err)
		err = write_one(r->text_out, tbuf, tlen, r->text_path);
	free(jbuf);
	free(tbuf);
	return err;
}

const char *cli_record_json_path(const struct cli_record *r)
{
	return r->json_path;
}

const char *cli_record_text_path(const struct cli_record *r)
{
	return r->text_path;
}
