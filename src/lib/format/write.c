// SPDX-License-Identifier: MIT
/*
 * What the writers share (write.h): the names of where digests are kept,
 * the sink their bytes go to (a sparse file or a stream), the metadata text of
 * our note and the note blob that carries it, and the runs of data and zero
 * pages of a block.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "kcoredump/vmcoreinfo.h"
#include "metanote.h"
#include "source-impl.h"
#include "elfcore.h"
#include "write.h"

/* Room in the note for final values longer than the first ones, and for
 * the unreadable ranges listed (the first META_UNREADABLE of them). */
#define META_UNREADABLE	     16
#define META_UNREADABLE_LINE 96
#define META_SLACK	     (128 + META_UNREADABLE * META_UNREADABLE_LINE)
/* Room for one "read_time=" line of the time map, at its longest. */
#define META_READ_TIME_LINE 160
/* Bytes asked of one splice(2): a pipe takes at most its room anyway. */
#define SPLICE_MAX (1u << 20)

/* ---- where the digests are kept ---- */

static const char *const digest_locations[KCORE_DIGESTS_NUM] = {
	[KCORE_DIGESTS_NONE] = "none",
	[KCORE_DIGESTS_NOTE] = "note",
	[KCORE_DIGESTS_TRAILER] = "trailer",
	[KCORE_DIGESTS_SUMMARY] = "summary",
};

const char *kcore_digest_location_name(enum kcore_digest_location l)
{
	return (unsigned)l < KCORE_DIGESTS_NUM ? digest_locations[l] : NULL;
}

enum kcore_digest_location kcore_digest_location_from_name(const char *name)
{
	for (int i = 1; name && i < KCORE_DIGESTS_NUM; i++)
		if (strcmp(digest_locations[i], name) == 0)
			return (enum kcore_digest_location)i;
	return KCORE_DIGESTS_UNKNOWN;
}

/* ---- the sink ---- */

struct kcore_error *kcore_sink_init(struct kcore_sink *s,
				    struct kcore_output *out,
				    const struct kcore_dump_opts *opts,
				    bool stream)
{
	struct kcore_ostream_opts so = {
		.method = opts->compress,
		.level = opts->level,
		.threads = opts->threads,
		.frame_size = opts->frame_size,
		.io = opts->out_io,
	};

	memset(s, 0, sizeof(*s));
	s->out = out;
	s->io = opts->out_io;
	if (!stream)
		return NULL;
	return kcore_ostream_create(out->fd, out->tmp ? out->tmp : "<stdout>",
				    &so, &s->os);
}

struct kcore_error *kcore_sink_pad(struct kcore_sink *s, uint64_t offset)
{
	struct kcore_error *err;

	if (!s->os || offset <= s->pos)
		return NULL;
	err = kcore_ostream_write_zeros(s->os, offset - s->pos);
	if (!err)
		s->pos = offset;
	return err;
}

struct kcore_error *kcore_sink_pwrite(struct kcore_sink *s, uint64_t offset,
				      const void *buf, size_t len)
{
	struct kcore_error *err;

	if (!s->os) {
		err = kcore_pwrite_all(s->io, s->out->fd, s->out->tmp, buf, len,
				       offset);
		if (!err)
			s->written += len;
		return err;
	}
	err = kcore_sink_pad(s, offset);
	if (!err)
		err = kcore_ostream_write(s->os, buf, len);
	s->pos += len;
	return err;
}

bool kcore_sink_can_splice(const struct kcore_sink *s)
{
	return s->os && kcore_ostream_can_splice(s->os);
}

struct kcore_error *kcore_sink_splice(struct kcore_sink *s, uint64_t offset,
				      int fd, uint64_t src_off, uint64_t len,
				      uint64_t *moved, int *why)
{
	struct kcore_error *err = kcore_sink_pad(s, offset);

	*moved = 0;
	*why = 0;
	if (err)
		return err;
	while (*moved < len) {
		uint64_t want = len - *moved;
		ssize_t n = kcore_ostream_splice(
			s->os, fd, src_off + *moved,
			want < SPLICE_MAX ? (size_t)want : SPLICE_MAX);

		if (n <= 0) {
			*why = n < 0 ? errno
				     : ENODATA; /* 0: the source ended */
			break;
		}
		*moved += (uint64_t)n;
		s->pos += (uint64_t)n;
	}
	return NULL;
}

uint64_t kcore_sink_bytes_out(const struct kcore_sink *s)
{
	return s->os ? kcore_ostream_bytes_out(s->os) : s->written;
}

struct kcore_error *kcore_sink_finish(struct kcore_sink *s)
{
	return s->os ? kcore_ostream_finish(s->os) : NULL;
}

void kcore_sink_deinit(struct kcore_sink *s)
{
	kcore_ostream_destroy(s->os);
	s->os = NULL;
}

/* ---- metadata ---- */

static void iso_time(uint64_t ns, char out[64])
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (unsigned)(ns % 1000000000ull / 1000));
}

/* Characters that would break the line format become '?'. */
static void clean(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/* An optional line of text: control bytes (a newline!) become '?'. */
static void meta_text(FILE *f, const char *key, const char *value)
{
	if (!value)
		return;
	fprintf(f, "%s=", key);
	for (; *value; value++)
		fputc((unsigned char)*value < 0x20 || *value == 0x7f ? '?'
								     : *value,
		      f);
	fputc('\n', f);
}

/* A digest for the note; "none" (which verify does not take for a
 * digest) when the dump is not hashed. */
static void digest_text(const struct kcore_dump_opts *o,
			const unsigned char *digest,
			char hex[2 * KCORE_DIGEST_LEN + 1])
{
	if (o->no_hash)
		strcpy(hex, "none");
	else
		kcore_hex(digest, KCORE_DIGEST_LEN, hex);
}

char *kcore_write_metadata(const struct kcore_writer *w, size_t *ret_len)
{
	const struct kcore_write_setup *ws = w->ws;
	const struct kcore_source_info *in = &ws->src->info;
	const struct kcore_dump_stats *st = &ws->res->stats;
	const struct kcore_plan *plan = ws->plan;
	const struct kcore_dump_opts *o = ws->opts;
	struct utsname u;
	char host[256] = "", t0[64], t1[64], hex[2 * KCORE_DIGEST_LEN + 1];
	char *buf = NULL, *cmd = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	gethostname(host, sizeof(host) - 1);
	clean(host);
	memset(&u, 0, sizeof(u));
	uname(&u);
	iso_time(st->start_ns, t0);
	iso_time(st->end_ns, t1);
	if (o->command_line) {
		cmd = strdup(o->command_line);
		if (cmd)
			clean(cmd);
	}
	fprintf(f,
		"format=kcoredump-metadata-1\ntool=kcoredump %s\n"
		"source=%s\nsource_kind=%s\nkernel_release=%s\n"
		"hostname=%s\nuname=%s %s %s %s\ncommand=%s\n"
		"read_start=%s\nread_end=%s\n"
		"bytes_read=%020" PRIu64 "\nbytes_hole=%020" PRIu64
		"\nbytes_zero=%020" PRIu64 "\nbytes_unreadable=%020" PRIu64
		"\nunreadable_ranges=%020zu\nsource_incomplete=%d\n"
		"source_bytes_unreadable=%020" PRIu64
		"\nsource_unreadable_ranges=%020" PRIu64
		"\nvmalloc_areas=%zu\nhash=%s\n"
		"hash_block=%u\ndigests=%s\n",
		KCOREDUMP_VERSION, in->abs_path,
		kcore_source_kind_name(in->kind),
		in->kernel_release ? in->kernel_release : "-", host, u.sysname,
		u.release, u.version, u.machine, cmd ? cmd : "-", t0, t1,
		st->bytes_read, st->bytes_hole, st->bytes_zero,
		st->bytes_unreadable, ws->res->nerrors,
		ws->res->source_incomplete, ws->res->source_unreadable_bytes,
		ws->res->source_unreadable_ranges, plan->vmalloc_areas,
		o->no_hash ? "none" : kcore_block_hash_note_name(o->block_hash),
		KCORE_HASH_BLOCK,
		kcore_digest_location_name(w->digest_location));
	/* Bytes read by splice(2), not looked at: their zero pages are not
	 * in bytes_zero and count as data.  Only in the final text (a
	 * stream's trailer), where the slot's slack has room for it. */
	if (st->bytes_spliced)
		fprintf(f, "bytes_spliced=%020" PRIu64 "\n", st->bytes_spliced);
	/* The boot the live kernel's memory is of: verify --live checks
	 * that a dump is of this one. */
	if (in->kind == KCORE_SOURCE_LIVE_KCORE) {
		char boot[64];

		if (kcore_boot_id(boot))
			fprintf(f, "boot_id=%s\n", boot);
	}
	meta_text(f, "case", o->case_id);
	meta_text(f, "examiner", o->examiner);
	meta_text(f, "notes", o->notes);
	digest_text(o, ws->res->digest, hex);
	if (plan->exclude.level) {
		char names[64];

		fprintf(f,
			"exclude=%s\nexclude_level=%u\nexcluded_pages=%"
			"020" PRIu64 "\n",
			kcore_exclude_names(plan->exclude.level, names,
					    sizeof(names)),
			plan->exclude.level, plan->exclude.excluded);
	}
	fprintf(f, "dump_sha256=%s\nsegments=%zu\n", hex, plan->nsegs);
	if (w->ops->physical)
		fprintf(f, "output_format=%s\n", w->ops->name);
	for (size_t i = 0; i < plan->nsegs; i++) {
		const struct kcore_plan_segment *s = &plan->segs[i];
		char label[160];

		snprintf(label, sizeof(label), "%s", s->label ? s->label : "-");
		clean(label);
		digest_text(o, s->digest, hex);
		fprintf(f,
			"segment=%zu vaddr=0x%016" PRIx64 " size=0x%016" PRIx64,
			i, s->vaddr, s->size);
		if (w->ops->physical)
			fprintf(f, " paddr=0x%016" PRIx64, s->paddr);
		fprintf(f, " data=%020" PRIu64 " class=%s sha256=%s label=%s\n",
			s->data_bytes, kcore_segment_class_name(s->cls), hex,
			label);
	}
	/* --smear-check: its totals (final once the check is over; fixed
	 * widths keep the note's size). */
	if (o->smear_check > 0)
		fprintf(f,
			"smear_pages=%020" PRIu64
			"\nsmear_pages_changed=%020" PRIu64 "\n",
			ws->res->smear.all.pages, ws->res->smear.all.changed);
	/* The read order, and its phases in the order they were read. */
	fprintf(f, "read_order=%s\n",
		kcore_read_order_name(ws->res->read_order));
	for (size_t i = 0; i < ws->res->nread_phases; i++) {
		const struct kcore_read_phase *p = &ws->res->read_phases[i];

		fprintf(f,
			"read_phase=what=%s segment=%zu offset=0x%016" PRIx64
			" length=0x%016" PRIx64 " start_us=%" PRIu64
			" end_us=%" PRIu64 "\n",
			p->what, p->segment, p->offset, p->length,
			p->start_ns / 1000, (p->end_ns + 999) / 1000);
	}
	/* The time map: when each cell of each segment was read. */
	if (ws->res->read_time_cells)
		fprintf(f, "read_time_grain=0x%016" PRIx64 "\n",
			ws->res->read_time_grain);
	size_t cells = 0, omitted = 0;

	for (size_t i = 0; i < ws->res->nread_times; i++) {
		const struct kcore_read_time *t = &ws->res->read_times[i];

		if (!t->read)
			continue;
		/* Past the room the note has for them (the cells that
		 * hold data, KCORE_READ_TIME_NOTE_CELLS at most). */
		if (cells == ws->res->read_time_cells) {
			omitted++;
			continue;
		}
		cells++;
		fprintf(f,
			"read_time=segment=%zu offset=0x%016" PRIx64
			" length=0x%016" PRIx64 " start_us=%" PRIu64
			" end_us=%" PRIu64 "\n",
			t->segment, t->offset, t->length, t->start_ns / 1000,
			(t->end_ns + 999) / 1000);
	}
	if (omitted)
		fprintf(f, "read_time_omitted=%020zu\n", omitted);
	/* What could not be read: the first ranges, in the output's
	 * segments (all of them are in the dump's summary). */
	for (size_t i = 0; i < ws->res->nerrors && i < META_UNREADABLE; i++) {
		const struct kcore_read_error *e = &ws->res->errors[i];

		fprintf(f,
			"unreadable=segment=%zu offset=0x%016" PRIx64
			" length=0x%016" PRIx64 "\n",
			e->segment, e->seg_offset, e->len);
	}
	free(cmd);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	*ret_len = len;
	return buf;
}

/* ---- notes (built by elfcore.c) ---- */

struct kcore_error *kcore_write_notes(const struct kcore_writer *w,
				      struct kcore_note_blob *ret)
{
	const struct kcore_source *src = w->ws->src;
	size_t len = 0, vi_len = 0, meta_len;
	/* From sysfs: not among the notes. */
	bool add_vmcoreinfo = src->vmcoreinfo && src->info.vmcoreinfo_origin &&
			      !strcmp(src->info.vmcoreinfo_origin, "sysfs");
	const char *vi_text =
		add_vmcoreinfo ? kcore_vmcoreinfo_text(src->vmcoreinfo, &vi_len)
			       : NULL;
	char *meta = kcore_write_metadata(w, &meta_len);
	unsigned char *p;

	memset(ret, 0, sizeof(*ret));
	if (!meta)
		return &kcore_error_nomem;
	ret->meta_len =
		meta_len + META_SLACK +
		(w->ws->res->read_time_cells + w->ws->res->nread_phases) *
			META_READ_TIME_LINE;
	for (size_t i = 0; i < src->nnotes; i++) {
		const struct kcore_note *n = &src->notes[i];

		if (strcmp(n->name, KCORE_META_NOTE_NAME) == 0)
			continue;
		len += kcore_elfcore_note_size(n->name, n->descsz);
	}
	if (add_vmcoreinfo)
		len += kcore_elfcore_note_size("VMCOREINFO", vi_len);
	len += kcore_elfcore_note_size(KCORE_META_NOTE_NAME, ret->meta_len);
	ret->data = calloc(1, len);
	if (!ret->data) {
		free(meta);
		return &kcore_error_nomem;
	}
	ret->len = len;
	ret->vmcoreinfo_off = UINT64_MAX;
	p = ret->data;
	for (size_t i = 0; i < src->nnotes; i++) {
		const struct kcore_note *n = &src->notes[i];

		if (strcmp(n->name, KCORE_META_NOTE_NAME) == 0)
			continue;
		if (strcmp(n->name, "VMCOREINFO") == 0) {
			ret->vmcoreinfo_off =
				(uint64_t)(p - ret->data) +
				kcore_elfcore_note_desc_offset(n->name);
			ret->vmcoreinfo_size = n->descsz;
		}
		p = kcore_elfcore_put_note(p, n->name, n->type, n->desc,
					   n->descsz);
	}
	if (add_vmcoreinfo) {
		ret->vmcoreinfo_off =
			(uint64_t)(p - ret->data) +
			kcore_elfcore_note_desc_offset("VMCOREINFO");
		ret->vmcoreinfo_size = vi_len;
		p = kcore_elfcore_put_note(p, "VMCOREINFO", 0, vi_text, vi_len);
	}
	ret->meta_off = (size_t)(p - ret->data) +
			kcore_elfcore_note_desc_offset(KCORE_META_NOTE_NAME);
	/* The descriptor: the text, then zeros to the slot's end. */
	kcore_elfcore_put_note(p, KCORE_META_NOTE_NAME, KCORE_META_NOTE_TYPE,
			       NULL, ret->meta_len);
	memcpy(ret->data + ret->meta_off, meta, meta_len);
	free(meta);
	return NULL;
}

struct kcore_error *kcore_write_notes_final(const struct kcore_writer *w,
					    struct kcore_note_blob *b)
{
	size_t len;
	char *meta = kcore_write_metadata(w, &len);

	if (!meta)
		return &kcore_error_nomem;
	if (len > b->meta_len) {
		free(meta);
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "metadata grew past its reserved "
					  "size");
	}
	memset(b->data + b->meta_off, 0, b->meta_len);
	memcpy(b->data + b->meta_off, meta, len);
	free(meta);
	return NULL;
}

void kcore_note_blob_deinit(struct kcore_note_blob *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* ---- blocks ---- */

struct kcore_error *
kcore_block_runs(struct kcore_writer *w, const struct kcore_block *b,
		 struct kcore_error *(*data)(struct kcore_writer *w,
					     const struct kcore_block *b,
					     uint64_t at, uint64_t len))
{
	struct kcore_plan_segment *seg = &w->ws->plan->segs[b->seg];
	uint64_t page = w->ws->page, p = 0;

	while (p < b->pages) {
		uint64_t q = p;

		if (b->zero[p]) {
			while (q < b->pages && b->zero[q])
				q++;
			/* Holes in the block are counted as holes already,
			 * unreadable pages as unreadable. */
			for (uint64_t z = p; z < q; z++)
				if (!b->hole[z] && !b->bad[z])
					w->ws->res->stats.bytes_zero +=
						(z + 1) * page < b->len
							? page
							: b->len - z * page;
		} else {
			while (q < b->pages && !b->zero[q])
				q++;
			uint64_t end = q * page < b->len ? q * page : b->len;

			if (data) {
				struct kcore_error *err =
					data(w, b, p * page, end - p * page);

				if (err)
					return err;
			}
			seg->data_bytes += end - p * page;
		}
		p = q;
	}
	return NULL;
}

struct kcore_error *kcore_write_run_in_place(struct kcore_writer *w,
					     const struct kcore_block *b,
					     uint64_t at, uint64_t len)
{
	const struct kcore_plan_segment *seg = &w->ws->plan->segs[b->seg];

	return kcore_sink_pwrite(&w->sink, seg->out_offset + b->off + at,
				 b->buf + at, len);
}
