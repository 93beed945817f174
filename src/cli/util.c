// SPDX-License-Identifier: MIT
/* Shared CLI helpers: error reporting, exit statuses, number parsing. */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kcoredump/json.h"
#include "kcoredump/dump.h"
#include "kcoredump/text.h"

int cli_exit_status(const struct kcore_error *err)
{
	switch (err->code) {
	case KCORE_ERR_INVALID:
		return EXIT_USAGE;
	case KCORE_ERR_MISMATCH:
		return EXIT_MISMATCH;
	case KCORE_ERR_FORMAT:
	case KCORE_ERR_UNSUPPORTED:
		return EXIT_BAD_INPUT;
	case KCORE_ERR_ACCESS:
		return EXIT_ACCESS;
	case KCORE_ERR_NOT_FOUND:
		return EXIT_NOT_FOUND;
	default:
		return EXIT_FAILURE_;
	}
}

int cli_fail(struct cli_ctx *ctx, struct kcore_error *err)
{
	char *msg = kcore_error_describe(err);
	int status = cli_exit_status(err);

	fprintf(stderr, "kcoredump: %s\n",
		msg ? cli_esc(msg) : "out of memory");
	if (ctx && ctx->json) {
		struct kcore_json j;

		kcore_json_init(&j, stdout);
		kcore_json_object_begin(&j, NULL);
		kcore_json_object_begin(&j, "error");
		kcore_json_string(&j, "kind", kcore_error_code_name(err->code));
		kcore_json_string(&j, "message", msg ? msg : "out of memory");
		kcore_json_string(&j, "path", err->path);
		if (err->has_offset)
			kcore_json_hex(&j, "offset", err->offset);
		else
			kcore_json_null(&j, "offset");
		if (err->errnum)
			kcore_json_string(&j, "errno",
					  strerrorname_np(err->errnum));
		kcore_json_i64(&j, "exit_status", status);
		kcore_json_object_end(&j);
		kcore_json_object_end(&j);
		kcore_json_finish(&j);
	}
	free(msg);
	kcore_error_destroy(err);
	return status;
}

int cli_bad_exclude(struct cli_ctx *ctx, const char *cmd, const char *arg)
{
	return cli_usage_error(ctx, cmd,
			       "bad --exclude '%s' (free, cache, "
			       "cache-private, user, zero, all, or a dump "
			       "level 0-31)",
			       arg);
}

unsigned cli_edit_distance(const char *a, const char *b)
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

int cli_usage_fail(struct cli_ctx *ctx, const char *cmd,
		   struct kcore_error *err)
{
	int status;

	if (err->code != KCORE_ERR_INVALID)
		return cli_fail(ctx, err);
	status = cli_usage_error(ctx, cmd, "%s", err->message);
	kcore_error_destroy(err);
	return status;
}

void cli_json_detail(struct kcore_json *j, const struct kcore_dump_detail *d)
{
	kcore_json_object_begin(j, d->object);
	for (size_t i = 0; i < d->nfields && i < KCORE_DETAIL_FIELDS; i++) {
		const struct kcore_detail_field *f = &d->fields[i];

		if (f->type == KCORE_DETAIL_STRING)
			kcore_json_string(j, f->key, f->str);
		else if (f->type == KCORE_DETAIL_BOOL)
			kcore_json_bool(j, f->key, f->u64 != 0);
		else
			kcore_json_u64(j, f->key, f->u64);
	}
	kcore_json_object_end(j);
}

int cli_usage_error(struct cli_ctx *ctx, const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kcoredump%s%s: ", cmd ? " " : "", cmd ? cmd : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'kcoredump%s%s --help'.\n", cmd ? " " : "",
		cmd ? cmd : "");
	if (ctx && ctx->json) {
		char *msg = NULL;
		struct kcore_json j;

		va_start(ap, fmt);
		if (vasprintf(&msg, fmt, ap) < 0)
			msg = NULL;
		va_end(ap);
		kcore_json_init(&j, stdout);
		kcore_json_object_begin(&j, NULL);
		kcore_json_object_begin(&j, "error");
		kcore_json_string(&j, "kind", "usage");
		kcore_json_string(&j, "message", msg ? msg : "usage error");
		kcore_json_null(&j, "path");
		kcore_json_null(&j, "offset");
		kcore_json_i64(&j, "exit_status", EXIT_USAGE);
		kcore_json_object_end(&j);
		kcore_json_object_end(&j);
		kcore_json_finish(&j);
		free(msg);
	}
	return EXIT_USAGE;
}

bool cli_parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return false;
	*ret = v;
	return true;
}

bool cli_parse_size(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!s || !*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return false;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	case 't':
	case 'T':
		shift = 40;
		break;
	case '\0':
		break;
	default:
		return false;
	}
	if (shift) {
		end++;
		if (*end == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B')
			end++;
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return false;
	*ret = (uint64_t)v << shift;
	return true;
}

const char *cli_human_size(uint64_t bytes, char *buf, size_t size)
{
	static const char *const units[] = { "B",   "KiB", "MiB", "GiB",
					     "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	unsigned u = 0;

	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, size, "%.1f %s", v, units[u]);
	return buf;
}

static volatile sig_atomic_t cancel_flag;

static void on_signal(int sig)
{
	cancel_flag = sig;
}

volatile sig_atomic_t *cli_catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* A closed pipe is a write error (EPIPE), not a silent death. */
	signal(SIGPIPE, SIG_IGN);
	return &cancel_flag;
}

void cli_dump_incomplete_text(FILE *f, const struct kcore_dump_result *r,
			      const char *why)
{
	char a[32];

	if (!kcore_dump_incomplete(r))
		return;
	if (r->stats.bytes_unreadable)
		fprintf(f,
			"  INCOMPLETE:   %" PRIu64 " bytes (%s) in %zu range%s "
			"could not be read%s%s%s: zeros in the dump, which "
			"says so\n",
			r->stats.bytes_unreadable,
			cli_human_size(r->stats.bytes_unreadable, a, sizeof(a)),
			r->nerrors, r->nerrors == 1 ? "" : "s", why ? " (" : "",
			why ? why : "", why ? ")" : "");
	if (r->source_incomplete && r->source_unreadable_bytes)
		fprintf(f,
			"  INCOMPLETE:   the source is an incomplete dump: "
			"%" PRIu64 " bytes in %" PRIu64
			" range%s it could not read\n",
			r->source_unreadable_bytes, r->source_unreadable_ranges,
			r->source_unreadable_ranges == 1 ? "" : "s");
	else if (r->source_incomplete)
		fprintf(f, "  INCOMPLETE:   the source is an incomplete dump "
			   "(it does not say how much is missing)\n");
}

void cli_dump_incomplete_json(struct kcore_json *j,
			      const struct kcore_dump_result *r)
{
	kcore_json_bool(j, "complete", !kcore_dump_incomplete(r));
	if (!kcore_dump_incomplete(r)) {
		kcore_json_null(j, "incomplete");
	} else {
		kcore_json_object_begin(j, "incomplete");
		kcore_json_u64(j, "unreadable_bytes",
			       r->stats.bytes_unreadable);
		kcore_json_u64(j, "unreadable_ranges", r->nerrors);
		kcore_json_bool(j, "source_incomplete", r->source_incomplete);
		kcore_json_u64(j, "source_unreadable_bytes",
			       r->source_unreadable_bytes);
		kcore_json_u64(j, "source_unreadable_ranges",
			       r->source_unreadable_ranges);
		kcore_json_object_end(j);
	}
	kcore_json_array_begin(j, "read_errors");
	for (size_t i = 0; i < r->nerrors; i++) {
		const struct kcore_read_error *e = &r->errors[i];

		kcore_json_object_begin(j, NULL);
		kcore_json_hex(j, "offset", e->offset);
		kcore_json_u64(j, "length", e->len);
		kcore_json_u64(j, "segment", e->segment);
		kcore_json_hex(j, "segment_offset", e->seg_offset);
		kcore_json_string(j, "error",
				  e->message ? e->message
					     : strerror(e->errnum));
		kcore_json_object_end(j);
	}
	kcore_json_array_end(j);
}

int cli_dump_status(const struct kcore_dump_result *r, bool quiet,
		    const char *why)
{
	const char *out = r->output_path ? cli_esc(r->output_path) : "<stdout>";

	if (!kcore_dump_incomplete(r))
		return EXIT_OK;
	if (quiet && r->stats.bytes_unreadable)
		fprintf(stderr,
			"kcoredump: '%s': incomplete: %" PRIu64
			" bytes in %zu range%s could not be read%s%s%s%s\n",
			out, r->stats.bytes_unreadable, r->nerrors,
			r->nerrors == 1 ? "" : "s", why ? " (" : "",
			why ? why : "", why ? ")" : "",
			r->source_incomplete ? "; its source is incomplete too"
					     : "");
	else if (quiet)
		fprintf(stderr,
			"kcoredump: '%s': incomplete: its source is an "
			"incomplete dump\n",
			out);
	return EXIT_INCOMPLETE;
}

/* Length of the UTF-8 sequence at p when it is printable (not a C1
 * control), else 0. */
static size_t utf8_printable(const unsigned char *p)
{
	uint32_t c;
	size_t n = kcore_utf8_char((const char *)p, SIZE_MAX, &c);

	return n && c >= 0xa0 ? n : 0;
}

char *cli_escape_dup(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);
	char *out = malloc(4 * len + 1), *o = out;

	if (!out)
		return NULL;
	while (*p) {
		size_t n = utf8_printable(p);

		if (n) {
			memcpy(o, p, n);
			o += n;
			p += n;
			continue;
		}
		if (*p == '\\') {
			*o++ = '\\';
			*o++ = '\\';
		} else if (*p == '\n') {
			*o++ = '\\';
			*o++ = 'n';
		} else if (*p == '\t') {
			*o++ = '\\';
			*o++ = 't';
		} else if (*p < 0x20 || *p >= 0x7f) {
			/* Control bytes (ESC sequences!) and bytes that are
			 * not UTF-8: never raw on a terminal or in a log. */
			o += sprintf(o, "\\x%02x", *p);
		} else {
			*o++ = (char)*p;
		}
		p++;
	}
	*o = '\0';
	return out;
}

/* A ring of escaped copies: each lives until 16 more are made. */
const char *cli_esc(const char *s)
{
	static char *ring[16];
	static unsigned next;
	char *e;

	if (!s)
		return NULL;
	e = cli_escape_dup(s);
	if (!e)
		return "?";
	free(ring[next]);
	ring[next] = e;
	next = (next + 1) % 16;
	return e;
}

void cli_dump_hashes_text(FILE *f, const struct kcore_dump_result *r,
			  const char *nostore)
{
	char hex[2 * KCORE_DIGEST_LEN + 1];

	if (r->digest_location == KCORE_DIGESTS_NONE) {
		fprintf(f, "  file sha256:  none (--hash none)\n");
		return;
	}
	if (r->has_file_sha256) {
		kcore_hex(r->file_sha256, KCORE_DIGEST_LEN, hex);
		fprintf(f,
			"  file sha256:  %s (the file's bytes, as sha256sum "
			"gives)\n",
			hex);
	} else if (r->file_sha256_skipped) {
		char s[32];

		fprintf(f,
			"  file sha256:  not computed: mostly holes "
			"(--file-sha256 hashes its %s of holes too)\n",
			cli_human_size(r->file_sha256_skipped, s, sizeof(s)));
	} else {
		fprintf(f, "  file sha256:  unknown (a device written out of "
			   "order)\n");
	}
	kcore_hex(r->digest, KCORE_DIGEST_LEN, hex);
	if (nostore && r->digest_location == KCORE_DIGESTS_SUMMARY)
		fprintf(f, "  segment root: %s (not stored: %s has no notes)\n",
			hex, nostore);
	else
		fprintf(f,
			"  segment root: %s (digests in the %s; blocks: "
			"%s)\n",
			hex,
			r->digest_location
				? kcore_digest_location_name(r->digest_location)
				: "-",
			kcore_block_hash_name(r->block_hash));
}

void cli_dump_time_text(FILE *f, const struct kcore_dump_stats *st)
{
	fprintf(f,
		"  time:         %.2f s: read %.2f s, end of the file %.2f s, "
		"file sha256 %.2f s more (%.2f s alongside the read), "
		"publishing %.2f s\n",
		st->elapsed, st->read_seconds, st->finish_seconds,
		st->file_hash_seconds, st->file_hash_busy_seconds,
		st->publish_seconds);
}

void cli_dump_time_json(struct kcore_json *j, const struct kcore_dump_stats *st)
{
	kcore_json_object_begin(j, "phases");
	kcore_json_double(j, "read_seconds", st->read_seconds);
	kcore_json_double(j, "finish_seconds", st->finish_seconds);
	kcore_json_double(j, "file_sha256_seconds", st->file_hash_seconds);
	kcore_json_double(j, "publish_seconds", st->publish_seconds);
	kcore_json_double(j, "file_sha256_thread_seconds",
			  st->file_hash_busy_seconds);
	kcore_json_double(j, "total_seconds", st->elapsed);
	kcore_json_object_end(j);
}

void cli_dump_stats_json(struct kcore_json *j,
			 const struct kcore_dump_stats *st)
{
	kcore_json_object_begin(j, "stats");
	kcore_json_u64(j, "bytes_total", st->bytes_total);
	kcore_json_u64(j, "bytes_read", st->bytes_read);
	kcore_json_u64(j, "bytes_hole", st->bytes_hole);
	kcore_json_u64(j, "bytes_excluded", st->bytes_excluded);
	kcore_json_u64(j, "bytes_zero", st->bytes_zero);
	kcore_json_u64(j, "bytes_spliced", st->bytes_spliced);
	kcore_json_u64(j, "bytes_written", st->bytes_written);
	kcore_json_u64(j, "bytes_unreadable", st->bytes_unreadable);
	kcore_json_double(j, "seconds", st->elapsed);
	kcore_json_double(j, "read_seconds", st->read_seconds);
	/* Binary units, as the text's MiB/s (issue 46: was decimal MB/s
	 * as read_mb_per_s), over the read (issue 40). */
	kcore_json_double(j, "read_mib_per_s",
			  st->read_seconds > 0
				  ? (double)st->bytes_read / st->read_seconds /
					    (1024.0 * 1024.0)
				  : 0);
	kcore_json_bool(j, "seek_data", st->seek_data);
	/* Chosen once per process: null if no long SHA-256 was wanted. */
	kcore_json_string(j, "sha256_impl",
			  kcore_sha256_chosen() ? kcore_sha256_chosen()->name
						: NULL);
	cli_dump_time_json(j, st);
	kcore_json_object_end(j);
}

void cli_dump_hashes_json(struct kcore_json *j,
			  const struct kcore_dump_result *r)
{
	char hex[2 * KCORE_DIGEST_LEN + 1];
	bool none = r->digest_location == KCORE_DIGESTS_NONE;

	if (!none && r->has_file_sha256) {
		kcore_hex(r->file_sha256, KCORE_DIGEST_LEN, hex);
		kcore_json_string(j, "file_sha256", hex);
	} else {
		kcore_json_null(j, "file_sha256");
		if (r->file_sha256_skipped)
			kcore_json_u64(j, "file_sha256_skipped_hole_bytes",
				       r->file_sha256_skipped);
	}
	kcore_hex(r->digest, KCORE_DIGEST_LEN, hex);
	if (none)
		kcore_json_null(j, "segment_digest_root");
	else
		kcore_json_string(j, "segment_digest_root", hex);
	kcore_json_string(j, "digests",
			  kcore_digest_location_name(r->digest_location));
	kcore_json_string(j, "block_digest",
			  none ? NULL : kcore_block_hash_name(r->block_hash));
}

int cli_arch_option(struct cli_ctx *ctx, const char *cmd, const char *arg,
		    uint16_t *machine)
{
	*machine = kcore_machine_from_name(arg);
	if (*machine == EM_NONE)
		return cli_usage_error(ctx, cmd,
				       "--arch %s: not a machine kcoredump "
				       "knows (x86_64, aarch64)",
				       cli_esc(arg));
	return 0;
}

/* ---- when a dump read an address (its note's time map) ---- */

struct kcore_error *cli_read_time(struct kcore_source *src, uint64_t addr,
				  int mode, struct cli_read_time *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->why = "the source has no kcoredump metadata note";
	for (size_t i = 0; i < kcore_source_nnotes(src); i++) {
		const struct kcore_note *note = kcore_source_note(src, i);
		struct kcore_metadata md;
		struct kcore_error *err;

		const char *t = kcore_note_type_name(note->name, note->type);

		if (!t || strcmp(t, "KCOREDUMP_METADATA") != 0)
			continue;
		err = kcore_note_metadata(src, note, &md);
		if (err)
			return err;
		ret->why = kcore_metadata_get(&md, "read_time_grain")
				   ? "no segment of the dump holds it, or "
				     "its bytes were not read (a hole, "
				     "excluded pages)"
				   : "the dump has no time map (written "
				     "before kcoredump recorded one)";
		if (kcore_metadata_get(&md, "read_time_omitted"))
			ret->why = "not in the note, or not read: the note "
				   "holds the first cells of the time map "
				   "only (the acquisition record has all)";
		for (int phys = mode == CLI_READ_TIME_PHYSICAL;
		     phys <= (mode != CLI_READ_TIME_VIRTUAL) && !ret->known;
		     phys++) {
			ret->known = kcore_metadata_read_time(&md, addr, phys,
							      &ret->w);
			ret->physical = phys;
		}
		snprintf(ret->read_start, sizeof(ret->read_start), "%s",
			 ret->w.read_start ? ret->w.read_start : "-");
		ret->w.read_start = NULL; /* it pointed into md */
		kcore_metadata_deinit(&md);
		if (ret->known)
			ret->why = NULL;
		return NULL;
	}
	return NULL;
}

void cli_read_time_text(FILE *f, uint64_t addr, const struct cli_read_time *rt)
{
	if (!rt->known) {
		fprintf(f, "0x%" PRIx64 ": read time not known: %s\n", addr,
			rt->why);
		return;
	}
	fprintf(f,
		"0x%" PRIx64 " (%s) was read %.6f to %.6f s after the read "
		"started at %s: segment %zu, offset 0x%" PRIx64
		" (its time map cell 0x%" PRIx64 "+0x%" PRIx64 ")\n",
		addr, rt->physical ? "physical" : "virtual",
		(double)rt->w.start_us / 1e6, (double)rt->w.end_us / 1e6,
		cli_esc(rt->read_start), rt->w.segment, rt->w.seg_offset,
		rt->w.cell_offset, rt->w.cell_length);
}

void cli_read_time_json(struct kcore_json *j, uint64_t addr,
			const struct cli_read_time *rt)
{
	kcore_json_object_begin(j, "read_time");
	kcore_json_hex(j, "address", addr);
	kcore_json_bool(j, "known", rt->known);
	kcore_json_string(j, "why", rt->why);
	if (rt->known) {
		kcore_json_bool(j, "physical", rt->physical);
		kcore_json_u64(j, "segment", rt->w.segment);
		kcore_json_hex(j, "segment_offset", rt->w.seg_offset);
		kcore_json_hex(j, "cell_offset", rt->w.cell_offset);
		kcore_json_u64(j, "cell_length", rt->w.cell_length);
		kcore_json_u64(j, "start_us", rt->w.start_us);
		kcore_json_u64(j, "end_us", rt->w.end_us);
		kcore_json_string(j, "read_start", rt->read_start);
	}
	kcore_json_object_end(j);
}

/* ---- --smear-check ---- */

static const char *const gap_names[KCORE_SMEAR_GAPS] = { "under 1 s", "1-10 s",
							 "10-60 s", "60-600 s",
							 "600 s or more" };

static double percent(const struct kcore_smear_count *c)
{
	return c->pages ? 100.0 * (double)c->changed / (double)c->pages : 0;
}

void cli_smear_text(FILE *f, const struct kcore_smear *sm)
{
	if (!sm->checked)
		return;
	fprintf(f,
		"  smear check:  %" PRIu64 " of %" PRIu64
		" pages changed while read (%.3f%%), read again in %.2f s "
		"(%.0f%% of the blocks)%s\n",
		sm->all.changed, sm->all.pages, percent(&sm->all), sm->seconds,
		100 * sm->fraction,
		sm->live ? ""
			 : "; the source is not the live kernel: it "
			   "should not change");
	fprintf(f, "    by class:  ");
	for (int c = 0; c <= KCORE_CLASS_OTHER; c++)
		if (sm->by_class[c].pages)
			fprintf(f, " %s %" PRIu64 "/%" PRIu64,
				kcore_segment_class_name(c),
				sm->by_class[c].changed, sm->by_class[c].pages);
	fprintf(f, "\n    by gap:    ");
	for (int g = 0; g < KCORE_SMEAR_GAPS; g++)
		if (sm->by_gap[g].pages)
			fprintf(f, " %s %" PRIu64 "/%" PRIu64, gap_names[g],
				sm->by_gap[g].changed, sm->by_gap[g].pages);
	fputc('\n', f);
	if (sm->pages_unreadable)
		fprintf(f, "    %" PRIu64 " pages could not be read again\n",
			sm->pages_unreadable);
	for (size_t i = 0; i < sm->changes_listed && i < 8; i++)
		fprintf(f,
			"    changed:    0x%016" PRIx64 "+0x%" PRIx64
			" (segment %zu, %.3f s between the reads)\n",
			sm->changes[i].vaddr, sm->changes[i].length,
			sm->changes[i].segment, sm->changes[i].gap_seconds);
	if (sm->nchanges > 8)
		fprintf(f,
			"    ... %zu runs of changed pages in all (the JSON "
			"lists them)\n",
			sm->nchanges);
}

static void smear_count_json(struct kcore_json *j, const char *key,
			     const struct kcore_smear_count *c)
{
	kcore_json_object_begin(j, key);
	kcore_json_u64(j, "pages", c->pages);
	kcore_json_u64(j, "changed", c->changed);
	kcore_json_object_end(j);
}

void cli_smear_json(struct kcore_json *j, const struct kcore_smear *sm)
{
	if (!sm->checked) {
		kcore_json_null(j, "smear");
		return;
	}
	kcore_json_object_begin(j, "smear");
	kcore_json_bool(j, "live", sm->live);
	kcore_json_double(j, "fraction", sm->fraction);
	kcore_json_double(j, "seconds", sm->seconds);
	kcore_json_u64(j, "bytes_read", sm->bytes_read);
	kcore_json_u64(j, "pages", sm->all.pages);
	kcore_json_u64(j, "pages_changed", sm->all.changed);
	kcore_json_u64(j, "pages_unreadable", sm->pages_unreadable);
	kcore_json_object_begin(j, "by_class");
	for (int c = 0; c <= KCORE_CLASS_OTHER; c++)
		if (sm->by_class[c].pages)
			smear_count_json(j, kcore_segment_class_name(c),
					 &sm->by_class[c]);
	kcore_json_object_end(j);
	kcore_json_array_begin(j, "by_gap");
	for (int g = 0; g < KCORE_SMEAR_GAPS; g++) {
		kcore_json_object_begin(j, NULL);
		kcore_json_double(j, "from_seconds",
				  g ? kcore_smear_gap_limits[g - 1] : 0);
		if (g < KCORE_SMEAR_GAPS - 1)
			kcore_json_double(j, "to_seconds",
					  kcore_smear_gap_limits[g]);
		else
			kcore_json_null(j, "to_seconds");
		kcore_json_u64(j, "pages", sm->by_gap[g].pages);
		kcore_json_u64(j, "changed", sm->by_gap[g].changed);
		kcore_json_object_end(j);
	}
	kcore_json_array_end(j);
	kcore_json_u64(j, "change_runs", sm->nchanges);
	kcore_json_array_begin(j, "changes");
	for (size_t i = 0; i < sm->changes_listed; i++) {
		const struct kcore_smear_change *c = &sm->changes[i];

		kcore_json_object_begin(j, NULL);
		kcore_json_u64(j, "segment", c->segment);
		kcore_json_hex(j, "vaddr", c->vaddr);
		kcore_json_hex(j, "offset", c->offset);
		kcore_json_u64(j, "length", c->length);
		kcore_json_double(j, "gap_seconds", c->gap_seconds);
		kcore_json_object_end(j);
	}
	kcore_json_array_end(j);
	kcore_json_object_end(j);
}
