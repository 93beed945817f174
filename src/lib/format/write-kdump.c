// SPDX-License-Identifier: MIT
/*
 * The kdump-compressed ("diskdump", header version 6) writer: block 0 is
 * disk_dump_header, block 1 kdump_sub_header followed by a copy of the
 * source's ELF notes, then bitmap 1 (pfn is RAM), bitmap 2 (pfn dumped),
 * one 24-byte page_desc per dumped pfn in pfn order, then page data.  The
 * first data page is the shared zero page every zero pfn points to.
 *
 * The encode step compresses each page of a block on the pipeline's
 * workers (one codec per block slot), back to back at the start of the
 * block's own buffer, whose pages are not read again once compressed (a
 * separate buffer per slot would be as large as the ring, its first
 * touch page faults, every write a miss); page data arrives in pfn order
 * and is appended; descriptors are buffered and written in whole-descriptor
 * chunks, so every descriptor and every page lies within one write (the
 * flattened format's readers look each read up in a single record).  The
 * header, sub-header, notes and bitmaps are written last, when bitmap 2
 * and the digests are final.
 *
 * Every page of a segment is dumped, zero pages and the source's holes as
 * the shared zero page, except the pages --exclude left out and, in a
 * regular file, the unreadable ones: those are cleared in bitmap 2.  A dump
 * with unreadable pages has makedumpfile's incomplete bit in the header's
 * status (crash warns that the dumpfile is incomplete).
 *
 * On a pipe the file is wrapped in makedumpfile's flattened format: every
 * write becomes a big-endian {offset, size} record, ended by {-1, -1}.
 * Readers of a flattened file (crash --osrelease) look for the header in
 * the first records, so it goes first, with its final bitmaps (all pages
 * but those --exclude left out); the header's status and our note's slot
 * follow at the end, each in a record of its own.
 */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "source-impl.h"
#include "write-kdump.h"

static struct kcore_error *
kdump_check_opts(struct kcore_dump_opts *opts,
		 const struct kcore_opts_given *given)
{
	/* Pages are compressed one by one; --level is the codec's. */
	if (given->compress ||
	    (opts->output &&
	     kcore_compress_from_suffix(opts->output) != KCORE_COMPRESS_NONE))
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "a kdump file compresses each page "
					  "(--codec zstd, zlib, lzo, snappy or "
					  "none); it cannot be a .zst or .xz "
					  "stream");
	opts->codec_level = opts->level;
	opts->level = 0;
	if (opts->codec == KCORE_CODEC_ZLIB && opts->codec_level > 9)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "zlib levels are 1 to 9");
	if ((opts->codec == KCORE_CODEC_LZO ||
	     opts->codec == KCORE_CODEC_SNAPPY ||
	     opts->codec == KCORE_CODEC_NONE) &&
	    opts->codec_level)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "--codec %s has no levels",
					  kcore_codec_name(opts->codec));
	return NULL;
}

static struct kcore_error *kdump_check(const struct kcore_dump_opts *opts,
				       const struct kcore_source *src,
				       uint64_t page)
{
	if (opts->compress != KCORE_COMPRESS_NONE)
		return kcore_error_create(KCORE_ERR_INVALID, 0, opts->output,
					  "a kdump file compresses each page "
					  "(--codec); it cannot also be a "
					  "%s stream",
					  kcore_compress_name(opts->compress));
	/* disk_dump_header is the LP64 little-endian one of the
	 * architectures that say so; arm64's phys_base field is PHYS_OFFSET
	 * (classify.c). */
	if (!src->arch || !src->arch->kdump || page != 4096)
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
					  "kdump output is written for x86_64 "
					  "and arm64 kernels with 4 KiB pages "
					  "only");
	return NULL;
}

static struct kcore_error *kdump_plan(struct kcore_plan *plan, uint64_t page,
				      size_t *dropped)
{
	return kcore_plan_restrict_physical(plan, page, dropped);
}

static uint64_t seg_pfn(const struct kdump_writer *k, size_t si, bool end)
{
	const struct kcore_plan_segment *s = &k->w.ws->plan->segs[si];

	return (s->paddr + (end ? s->size : 0)) / k->page;
}

/*
 * Every page of the plan's segments has a descriptor, the zero pages and
 * the holes of the source pointing at the shared zero page (as with
 * makedumpfile -d 1), but those --exclude left out, which are not dumped;
 * with mark, they are cleared in bitmap 2.  Unreadable pages found later
 * are excluded too, except in a flattened file, whose bitmap 2 went out
 * first.
 */
static uint64_t planned_pages(struct kdump_writer *k, bool mark)
{
	const struct kcore_plan *plan = k->w.ws->plan;
	uint64_t n = 0;

	for (size_t si = 0; si < plan->nsegs; si++) {
		const struct kcore_plan_segment *seg = &plan->segs[si];
		uint64_t a = seg->paddr, b = seg->paddr + seg->size;

		n += seg->size / k->page;
		for (const struct kcore_range *r =
			     kcore_excluded_after(plan, a);
		     r && r < plan->excluded + plan->nexcluded && r->start < b;
		     r++) {
			uint64_t s = (r->start > a ? r->start : a) / k->page;
			uint64_t e = (r->end < b ? r->end : b) / k->page;

			n -= e - s;
			if (mark)
				kcore_kdump_exclude_range(k, s, e);
		}
	}
	return n;
}

static void kdump_destroy(struct kcore_writer *w)
{
	struct kdump_writer *k = (struct kdump_writer *)w;

	kcore_sink_deinit(&w->sink);
	for (size_t i = 0; k->slots && i < k->nslots; i++) {
		struct kdump_slot *s = &k->slots[i];

		kcore_page_codec_destroy(s->codec);
		free(s->scratch);
		free(s->coff);
		free(s->csize);
		free(s->cflags);
	}
	free(k->slots);
	free(k->bitmap1);
	free(k->bitmap2);
	free(k->descbuf);
	kcore_note_blob_deinit(&k->notes);
	free(k);
}

static struct kcore_error *slots_create(struct kdump_writer *k)
{
	const struct kcore_write_setup *ws = k->w.ws;
	uint64_t pages = (ws->block + k->page - 1) / k->page;

	k->slots = calloc(ws->slots, sizeof(*k->slots));
	if (!k->slots)
		return &kcore_error_nomem;
	k->nslots = ws->slots;
	for (size_t i = 0; i < ws->slots; i++) {
		struct kdump_slot *s = &k->slots[i];
		struct kcore_error *err = kcore_page_codec_create(
			ws->opts->codec, ws->opts->codec_level, k->page,
			&s->codec);

		if (err)
			return err;
		s->scratch = malloc(k->page);
		s->coff = calloc(pages, sizeof(*s->coff));
		s->csize = calloc(pages, sizeof(*s->csize));
		s->cflags = calloc(pages, sizeof(*s->cflags));
		if (!s->scratch || !s->coff || !s->csize || !s->cflags)
			return &kcore_error_nomem;
	}
	return NULL;
}

static struct kcore_error *start(struct kdump_writer *k)
{
	const struct kcore_write_setup *ws = k->w.ws;
	const struct kcore_plan *plan = ws->plan;
	struct kdump_range *r = calloc(plan->nsegs, sizeof(*r));
	struct kcore_error *err;

	if (!r)
		return &kcore_error_nomem;
	for (size_t i = 0; i < plan->nsegs; i++) {
		r[i].start_pfn = seg_pfn(k, i, false);
		r[i].end_pfn = seg_pfn(k, i, true);
	}
	err = kcore_write_notes(&k->w, &k->notes);
	if (!err)
		err = kcore_kdump_layout(k, r, plan->nsegs,
					 planned_pages(k, false), k->notes.len);
	free(r);
	if (err)
		return err;
	k->meta_off = k->notes_off + k->notes.meta_off;
	if (k->flat) {
		unsigned char h[FLAT_HEADER_SIZE] = { 0 };
		struct kdump_header_info hi;

		memcpy(h, "makedumpfile", 12);
		h[16 + 7] = 1; /* type 1, big-endian */
		h[24 + 7] = 1; /* version 1 */
		err = kcore_sink_pwrite(&k->w.sink, 0, h, sizeof(h));
		if (err)
			return err;
		planned_pages(k, true);
		kcore_kdump_header_info(k, &hi);
		err = kcore_kdump_write_headers(k, &hi, true);
		if (err)
			return err;
	}
	return kcore_kdump_zero_page(k, k->slots[0].codec);
}

static struct kcore_error *kdump_begin(const struct kcore_write_setup *ws,
				       struct kcore_writer **ret)
{
	struct kdump_writer *k = calloc(1, sizeof(*k));
	struct kcore_error *err;

	if (!k)
		return &kcore_error_nomem;
	k->w.ops = &kcore_write_kdump;
	k->w.ws = ws;
	k->page = ws->page;
	k->flat = !ws->out->seekable;
	/* Headers come last, also in records. */
	k->w.digest_location =
		ws->opts->no_hash ? KCORE_DIGESTS_NONE : KCORE_DIGESTS_NOTE;
	err = kcore_sink_init(&k->w.sink, ws->out, ws->opts, k->flat);
	if (!err)
		err = slots_create(k);
	if (!err)
		err = start(k);
	if (err) {
		kdump_destroy(&k->w);
		return err;
	}
	*ret = &k->w;
	return NULL;
}

/*
 * On a worker: compress the pages with data, back to back from the start
 * of the block's buffer.  Page p's output starts at most p pages in: it
 * goes there directly when it cannot reach page p (at most a page), else
 * through the slot's scratch page, once page p was read.
 */
static void kdump_encode(struct kcore_writer *w, const struct kcore_block *b)
{
	struct kdump_writer *k = (struct kdump_writer *)w;
	struct kdump_slot *s = &k->slots[b->slot];
	uint64_t pages = b->len / k->page;
	unsigned char *out = b->buf;

	s->clen = 0;
	for (uint64_t p = 0; p < pages; p++) {
		uint64_t room = p * k->page - s->clen;
		size_t n;

		if (b->zero[p])
			continue;
		if (room >= k->page) {
			n = kcore_page_codec_compress(
				s->codec, b->buf + p * k->page, out + s->clen,
				(size_t)room, &s->cflags[p]);
		} else {
			n = kcore_page_codec_compress(
				s->codec, b->buf + p * k->page, s->scratch,
				k->page, &s->cflags[p]);
			memcpy(out + s->clen, s->scratch, n);
		}
		s->coff[p] = (uint32_t)s->clen;
		s->csize[p] = (uint32_t)n;
		s->clen += n;
	}
}

/* Whether pfn is one --exclude left out.  Pages come in ascending pfn
 * order: the plan's excluded ranges are passed once. */
static bool excluded(struct kdump_writer *k, uint64_t pfn)
{
	const struct kcore_plan *plan = k->w.ws->plan;
	const struct kcore_range *end = plan->excluded + plan->nexcluded;
	const struct kcore_range *r = k->next_excluded;
	uint64_t paddr = pfn * k->page;

	if (!r)
		r = plan->excluded;
	while (r && r < end && r->end <= paddr)
		r++;
	k->next_excluded = r;
	return r && r < end && r->start <= paddr;
}

/* A page not read: left out by --exclude, else a hole of the source,
 * which is a zero page. */
static struct kcore_error *unread_page(struct kdump_writer *k, uint64_t pfn)
{
	if (excluded(k, pfn)) {
		kcore_kdump_exclude(k, pfn);
		return NULL;
	}
	return kcore_kdump_desc_zero(k);
}

/* The block's page data, then one descriptor per dumped page. */
static struct kcore_error *kdump_block(struct kcore_writer *w,
				       const struct kcore_block *b)
{
	struct kdump_writer *k = (struct kdump_writer *)w;
	const struct kdump_slot *s = &k->slots[b->slot];
	struct kcore_plan_segment *seg = &w->ws->plan->segs[b->seg];
	uint64_t pages = b->len / k->page;
	uint64_t first = seg_pfn(k, b->seg, false) + b->off / k->page;
	uint64_t base = k->data_pos;
	struct kcore_error *err = NULL;

	if (s->clen) {
		err = kcore_kdump_out(k, base, b->buf, s->clen);
		k->data_pos += s->clen;
	}
	for (uint64_t p = 0; !err && p < pages; p++) {
		if (b->hole[p]) {
			err = unread_page(k, first + p);
		} else if (b->bad[p] && !k->flat) {
			kcore_kdump_exclude(k, first + p);
		} else if (b->zero[p]) {
			/* The flattened header went out first, with bitmap 2:
			 * an unreadable page is a zero page there (crash reads
			 * a descriptor with offset 0 in a flattened file as
			 * stale data), recorded in our note and the header's
			 * incomplete status. */
			if (!b->bad[p])
				w->ws->res->stats.bytes_zero += k->page;
			err = kcore_kdump_desc_zero(k);
		} else {
			seg->data_bytes += k->page;
			err = kcore_kdump_desc_page(k, base + s->coff[p],
						    s->csize[p], s->cflags[p]);
		}
	}
	return err;
}

/* A hole: zero pages, but for the pages --exclude left out. */
static struct kcore_error *kdump_hole(struct kcore_writer *w, size_t seg,
				      uint64_t off, uint64_t len)
{
	struct kdump_writer *k = (struct kdump_writer *)w;
	uint64_t first = seg_pfn(k, seg, false) + off / k->page;
	uint64_t end = first + len / k->page;
	struct kcore_error *err = NULL;

	for (uint64_t pfn = first; !err && pfn < end; pfn++) {
		/* A hole of a TiB is 2^28 descriptors: the pipeline hears
		 * of it every 64 MiB. */
		if (pfn % (64u << 20 >> 12) == 0)
			err = w->ws->tick(w->ws->arg);
		if (!err)
			err = unread_page(k, pfn);
	}
	return err;
}

/* The summary's kdump part: codec, flattened, the pages with data, the
 * shared zero pages, the excluded pages. */
static void detail(const struct kdump_writer *k, struct kcore_dump_result *r,
		   uint64_t dumped, uint64_t zero, uint64_t excluded)
{
	struct kcore_dump_detail *d = &r->detail;
	const char *codec = kcore_codec_name(k->w.ws->opts->codec);

	snprintf(d->format_text, sizeof(d->format_text), ", %s pages%s", codec,
		 k->flat ? ", flattened (makedumpfile -R restores it)" : "");
	d->line_label = "kdump pages";
	snprintf(d->line, sizeof(d->line),
		 "%" PRIu64 " with data, %" PRIu64 " zero (one shared copy), "
		 "%" PRIu64 " excluded (--exclude, unreadable)",
		 dumped, zero, excluded);
	d->object = "kdump";
	d->fields[0] = (struct kcore_detail_field){ .key = "codec",
						    .type = KCORE_DETAIL_STRING,
						    .str = codec };
	d->fields[1] = (struct kcore_detail_field){ .key = "flattened",
						    .type = KCORE_DETAIL_BOOL,
						    .u64 = k->flat };
	d->fields[2] = (struct kcore_detail_field){ .key = "pages_dumped",
						    .type = KCORE_DETAIL_U64,
						    .u64 = dumped };
	d->fields[3] = (struct kcore_detail_field){ .key = "pages_zero",
						    .type = KCORE_DETAIL_U64,
						    .u64 = zero };
	d->fields[4] = (struct kcore_detail_field){ .key = "pages_excluded",
						    .type = KCORE_DETAIL_U64,
						    .u64 = excluded };
	d->nfields = 5;
}

static struct kcore_error *kdump_finish(struct kcore_writer *w,
					const struct kcore_dump_result *summary)
{
	struct kdump_writer *k = (struct kdump_writer *)w;
	const struct kcore_write_setup *ws = w->ws;
	struct kdump_header_info hi;
	struct kcore_error *err;
	uint64_t pages = 0;

	err = kcore_kdump_flush_descs(k);
	if (err)
		return err;
	if (k->flat && k->ndesc != k->ndesc_max)
		return kcore_error_create(KCORE_ERR_INVALID, 0, ws->src->path,
					  "%llu pages planned, %llu dumped",
					  (unsigned long long)k->ndesc_max,
					  (unsigned long long)k->ndesc);
	for (size_t i = 0; i < ws->plan->nsegs; i++)
		pages += ws->plan->segs[i].size / k->page;
	detail(k, ws->res, k->dumped - k->zero_pages, k->zero_pages,
	       pages - k->dumped);
	/* Our final metadata into its slot. */
	err = kcore_write_notes_final(w, &k->notes);
	if (err)
		return err;
	if (k->flat) {
		unsigned char end[16], status[4];

		kcore_kdump_header_info(k, &hi);
		put32(status, hi.status);
		err = kcore_kdump_out(k, STATUS_OFF, status, sizeof(status));
		if (!err)
			err = kcore_kdump_out(k, k->meta_off,
					      k->notes.data + k->notes.meta_off,
					      k->notes.meta_len);
		memset(end, 0xff, sizeof(end)); /* {-1, -1} */
		if (!err)
			err = kcore_sink_pwrite(&w->sink, w->sink.pos, end,
						sizeof(end));
	} else {
		kcore_kdump_header_info(k, &hi);
		err = kcore_kdump_write_headers(k, &hi, false);
	}
	if (!err)
		err = kcore_sink_finish(&w->sink);
	w->sink.size = k->data_pos;
	return err;
}

const struct kcore_writer_ops kcore_write_kdump = {
	.format = KCORE_FORMAT_KDUMP,
	.name = "kdump",
	.title = "kdump",
	.physical = true,
	.page_codec = true,
	.headers_last = true,
	.check_opts = kdump_check_opts,
	.check = kdump_check,
	.plan = kdump_plan,
	.begin = kdump_begin,
	.encode = kdump_encode,
	.block = kdump_block,
	.hole = kdump_hole,
	.finish = kdump_finish,
	.destroy = kdump_destroy,
};
