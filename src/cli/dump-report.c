// SPDX-License-Identifier: MIT
/*
 * What dump and convert print of a dump (cmd-dump.c): the plan (--dry-run,
 * -v) and the summary, as text and as JSON.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kcoredump/json.h"
#include "kcoredump/dump.h"

static void print_exclude(FILE *f, const struct kcore_plan *plan)
{
	const struct kcore_exclude_stats *e = &plan->exclude;
	uint64_t page = e->page_size ? e->page_size : 4096;
	char names[64], a[32];

	fprintf(f,
		"  excluded:     %s (dump level %u): %" PRIu64
		" pages, %s, in %.2f s\n",
		kcore_exclude_names(e->level, names, sizeof(names)), e->level,
		e->excluded, cli_human_size(e->excluded * page, a, sizeof(a)),
		e->seconds);
	fprintf(f,
		"                free %" PRIu64 ", cache %" PRIu64
		", cache-private %" PRIu64 ", user %" PRIu64
		", hwpoison/offline/unaccepted %" PRIu64 " of %" PRIu64
		" pages scanned",
		e->free, e->cache, e->cache_private, e->user,
		e->hwpoison + e->offline + e->unaccepted, e->pages_scanned);
	if (e->unreadable)
		fprintf(f, " (%" PRIu64 " without struct pages, kept)",
			e->unreadable);
	fputc('\n', f);
}

static void json_exclude(struct kcore_json *j, const struct kcore_plan *plan)
{
	const struct kcore_exclude_stats *e = &plan->exclude;
	char names[64];

	if (!e->level) {
		kcore_json_null(j, "exclude");
		return;
	}
	kcore_json_object_begin(j, "exclude");
	kcore_json_u64(j, "level", e->level);
	kcore_json_string(j, "classes",
			  kcore_exclude_names(e->level, names, sizeof(names)));
	kcore_json_u64(j, "pages_scanned", e->pages_scanned);
	kcore_json_u64(j, "pages_excluded", e->excluded);
	kcore_json_u64(j, "free", e->free);
	kcore_json_u64(j, "cache", e->cache);
	kcore_json_u64(j, "cache_private", e->cache_private);
	kcore_json_u64(j, "user", e->user);
	kcore_json_u64(j, "hwpoison", e->hwpoison);
	kcore_json_u64(j, "offline", e->offline);
	kcore_json_u64(j, "unaccepted", e->unaccepted);
	kcore_json_u64(j, "unreadable", e->unreadable);
	kcore_json_u64(j, "ranges", e->ranges);
	kcore_json_double(j, "seconds", e->seconds);
	kcore_json_object_end(j);
}

void cli_dump_print_plan(FILE *f, const struct kcore_plan *plan)
{
	char s[32];

	if (plan->exclude.level)
		print_exclude(f, plan);

	fprintf(f, "%zu segment%s would be dumped", plan->nsegs,
		plan->nsegs == 1 ? "" : "s");
	if (plan->vmalloc_source)
		fprintf(f, " (%zu vmalloc areas from %s)", plan->vmalloc_areas,
			plan->vmalloc_source);
	fprintf(f, ":\n");
	for (size_t i = 0; i < plan->nsegs; i++) {
		const struct kcore_plan_segment *p = &plan->segs[i];

		fprintf(f, "  %5zu %-7s 0x%016" PRIx64 "-0x%016" PRIx64, i,
			kcore_segment_class_name(p->cls), p->vaddr,
			p->vaddr + p->size);
		if (p->has_paddr)
			fprintf(f, " phys 0x%" PRIx64, p->paddr);
		fprintf(f, " %10s %s\n", cli_human_size(p->size, s, sizeof(s)),
			p->label ? p->label : "");
	}
}

static void json_vmalloc(struct kcore_json *j, const struct kcore_plan *plan)
{
	if (!plan->vmalloc_source)
		return;
	kcore_json_object_begin(j, "vmalloc");
	kcore_json_string(j, "source", plan->vmalloc_source);
	kcore_json_u64(j, "areas", plan->vmalloc_areas);
	kcore_json_u64(j, "segment_size", plan->vmalloc_segment_size);
	kcore_json_string(j, "warning", plan->warning);
	kcore_json_object_end(j);
}

void cli_dump_plan_json(FILE *f, const struct kcore_plan *plan)
{
	struct kcore_json j;

	kcore_json_init(&j, f);
	kcore_json_object_begin(&j, NULL);
	kcore_json_bool(&j, "dry_run", true);
	json_vmalloc(&j, plan);
	json_exclude(&j, plan);
	cli_dump_segments_json(&j, plan, false, false);
	kcore_json_object_end(&j);
	kcore_json_finish(&j);
}

void cli_dump_summary_text(FILE *f, const struct kcore_plan *plan,
			   const struct kcore_dump_opts *o,
			   const struct kcore_dump_result *r,
			   const struct cli_record *record)
{
	const struct kcore_dump_stats *st = &r->stats;
	char a[32], b[32], c[32], d[32];
	double ratio = st->bytes_written ? (double)st->bytes_total /
						   (double)st->bytes_written
					 : 0;

	fprintf(f, "Dumped %zu segment%s to %s\n", plan->nsegs,
		plan->nsegs == 1 ? "" : "s",
		r->output_path ? r->output_path : "<stdout>");
	if (plan->vmalloc_source)
		fprintf(f,
			"  vmalloc:      %zu mapped areas (from %s) of a "
			"%s vmalloc segment\n",
			plan->vmalloc_areas, plan->vmalloc_source,
			cli_human_size(plan->vmalloc_segment_size, a,
				       sizeof(a)));
	if (plan->warning)
		fprintf(f, "  note:         %s\n", plan->warning);
	fprintf(f, "  format:       %s", kcore_format_name(o->format));
	if (r->detail.format_text[0])
		fputs(r->detail.format_text, f);
	else if (o->compress != KCORE_COMPRESS_NONE)
		fprintf(f, " in a %s stream", kcore_compress_name(o->compress));
	fputc('\n', f);
	if (r->dropped_segments)
		fprintf(f,
			"  warning:      %zu segment%s without physical "
			"memory dropped (%s holds physical RAM only)\n",
			r->dropped_segments,
			r->dropped_segments == 1 ? "" : "s",
			kcore_format_name(o->format));
	if (r->detail.line_label) {
		char label[32];

		snprintf(label, sizeof(label), "%s:", r->detail.line_label);
		fprintf(f, "  %-14s%s\n", label, r->detail.line);
	}
	if (plan->exclude.level)
		print_exclude(f, plan);
	fprintf(f, "  logical size: %s\n",
		cli_human_size(st->bytes_total, a, sizeof(a)));
	fprintf(f, "  read:         %s in %.2f s (%s/s)\n",
		cli_human_size(st->bytes_read, a, sizeof(a)), st->read_seconds,
		cli_human_size(st->read_seconds > 0
				       ? (uint64_t)((double)st->bytes_read /
						    st->read_seconds)
				       : 0,
			       b, sizeof(b)));
	fprintf(f, "  holes:        %s skipped (%s)\n",
		cli_human_size(st->bytes_hole, a, sizeof(a)),
		st->seek_data ? "SEEK_DATA/SEEK_HOLE" : "segment maps");
	fprintf(f, "  zero pages:   %s\n",
		cli_human_size(st->bytes_zero, c, sizeof(c)));
	if (st->bytes_spliced)
		fprintf(f,
			"  spliced:      %s of it moved by splice(2), not "
			"looked at (zero pages not counted)\n",
			cli_human_size(st->bytes_spliced, c, sizeof(c)));
	fprintf(f, "  written:      %s (%.1fx smaller than the logical size)\n",
		cli_human_size(st->bytes_written, d, sizeof(d)), ratio);
	fprintf(f, "  read errors:  %s in %zu range%s\n",
		cli_human_size(st->bytes_unreadable, a, sizeof(a)), r->nerrors,
		r->nerrors == 1 ? "" : "s");
	for (size_t i = 0; i < r->nerrors && i < 20; i++)
		fprintf(f, "    offset 0x%" PRIx64 "+0x%" PRIx64 ": %s\n",
			r->errors[i].offset, r->errors[i].len,
			r->errors[i].message ? r->errors[i].message
					     : strerror(r->errors[i].errnum));
	cli_dump_incomplete_text(f, r, NULL);
	cli_smear_text(f, &r->smear);
	cli_dump_time_text(f, st);
	cli_dump_hashes_text(f, r, kcore_format_title(o->format));
	if (record)
		fprintf(f, "  record:       %s and %s\n",
			cli_esc(cli_record_json_path(record)),
			cli_esc(cli_record_text_path(record)));
}

void cli_dump_summary_json(FILE *f, const struct kcore_plan *plan,
			   const struct kcore_dump_opts *o,
			   const struct kcore_dump_result *r,
			   const struct cli_record *record)
{
	struct kcore_json j;

	kcore_json_init(&j, f);
	kcore_json_object_begin(&j, NULL);
	kcore_json_string(&j, "path", r->output_path ? r->output_path : "-");
	cli_dump_hashes_json(&j, r);
	kcore_json_string(&j, "format", kcore_format_name(o->format));
	if (r->detail.object)
		cli_json_detail(&j, &r->detail);
	kcore_json_u64(&j, "dropped_segments", r->dropped_segments);
	cli_dump_stats_json(&j, &r->stats);
	json_vmalloc(&j, plan);
	json_exclude(&j, plan);
	cli_dump_segments_json(&j, plan, true,
			       r->digest_location != KCORE_DIGESTS_NONE);
	cli_dump_incomplete_json(&j, r);
	cli_smear_json(&j, &r->smear);
	if (record) {
		kcore_json_object_begin(&j, "record");
		kcore_json_string(&j, "path", cli_record_json_path(record));
		kcore_json_string(&j, "text_path",
				  cli_record_text_path(record));
		kcore_json_object_end(&j);
	} else {
		kcore_json_null(&j, "record");
	}
	kcore_json_object_end(&j);
	kcore_json_finish(&j);
}
