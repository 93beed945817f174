// SPDX-License-Identifier: MIT
/*
 * verify --live (kcore_smear_live(), kcoredump/dump.h): a dump made
 * earlier in this boot against the live kernel.  The cells its note's
 * time map says were read are compared byte for byte with the live
 * kernel's pages now, and counted as the smear check counts
 * (smear-tally.h).
 */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kcoredump/kcore.h"
#include "kcoredump/notes.h"
#include "metanote.h"
#include "source-impl.h"
#include "smear-tally.h"

/* A segment of the dump, from its note (the time map's segment numbers)
 * and its program headers. */
struct live_seg {
	uint64_t vaddr, size;
	enum kcore_segment_class cls;
	bool known;  /* in the note */
	bool shared; /* its bytes are another segment's (the image) */
	uint64_t paddr;
	bool has_paddr;
	bool in_file; /* its bytes at offset in the dump's file, filesz */
	uint64_t offset, filesz;
};

/* "2026-12-06T12:00:00.123456Z" in ns of CLOCK_REALTIME, or 0. */
static uint64_t parse_utc(const char *s)
{
	struct tm tm = { 0 };
	unsigned us = 0;
	time_t t;

	if (!s ||
	    sscanf(s, "%d-%d-%dT%d:%d:%d.%6uZ", &tm.tm_year, &tm.tm_mon,
		   &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &us) != 7)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	t = timegm(&tm);
	return t < 0 ? 0 : (uint64_t)t * 1000000000ull + us * 1000ull;
}

/* The note's segments: their place, class and whether another's file
 * bytes hold them (the dump copied them from there). */
static struct kcore_error *live_segments(struct kcore_source *d,
					 const struct kcore_metadata *md,
					 struct live_seg **ret, size_t *ret_n)
{
	size_t n = 0;
	struct live_seg *segs;

	for (size_t i = 0; i < md->nfields; i++)
		if (!strcmp(md->fields[i].key, "segment"))
			n++;
	segs = calloc(n ? n : 1, sizeof(*segs));
	if (!segs)
		return &kcore_error_nomem;
	for (size_t i = 0; i < md->nfields; i++) {
		const char *v = md->fields[i].value, *c;
		uint64_t va, size;
		size_t idx;
		char cls[16] = "";

		if (strcmp(md->fields[i].key, "segment") != 0 ||
		    sscanf(v, "%zu vaddr=0x%" SCNx64 " size=0x%" SCNx64, &idx,
			   &va, &size) != 3 ||
		    idx >= n)
			continue;
		c = strstr(v, " class=");
		if (c)
			sscanf(c, " class=%15[a-z]", cls);
		segs[idx] = (struct live_seg){
			.vaddr = va,
			.size = size,
			.known = true,
			.cls = kcore_segment_class_from_name(cls) >= 0
				       ? kcore_segment_class_from_name(cls)
				       : KCORE_CLASS_OTHER,
		};
		for (size_t k = 0; k < kcore_source_nsegments(d); k++) {
			const struct kcore_segment *p =
				kcore_source_segment(d, k);

			if (p->type != PT_LOAD || p->vaddr != va)
				continue;
			segs[idx].paddr = p->paddr;
			segs[idx].has_paddr = p->has_paddr;
			segs[idx].in_file = true;
			segs[idx].offset = p->offset;
			segs[idx].filesz = p->filesz;
			for (size_t o = 0; o < kcore_source_nsegments(d); o++) {
				const struct kcore_segment *q =
					kcore_source_segment(d, o);

				if (o != k && q->type == PT_LOAD && p->filesz &&
				    q->filesz > p->filesz &&
				    q->offset <= p->offset &&
				    p->offset + p->filesz <=
					    q->offset + q->filesz)
					segs[idx].shared = true;
			}
			break;
		}
	}
	*ret = segs;
	*ret_n = n;
	return NULL;
}

/* The class a page counts in: a shared segment's that holds its
 * physical address, else its own (as page_class()). */
static enum kcore_segment_class live_class(const struct live_seg *segs,
					   size_t n, const struct live_seg *s,
					   uint64_t off)
{
	for (size_t i = 0; s->has_paddr && i < n; i++)
		if (segs[i].shared && segs[i].has_paddr &&
		    s->paddr + off >= segs[i].paddr &&
		    s->paddr + off - segs[i].paddr < segs[i].size)
			return segs[i].cls;
	return s->cls;
}

#define LIVE_CHUNK (1u << 20)

/* Bytes [va, va + len) of src into buf; per page, whether it was read
 * (ok[]), page by page past a failure. */
static void live_read(struct kcore_source *src, uint64_t va, unsigned char *buf,
		      uint64_t len, uint64_t page, bool *ok)
{
	struct kcore_error *err = kcore_source_read_vaddr(src, va, buf, len);
	uint64_t pages = (len + page - 1) / page;

	for (uint64_t p = 0; p < pages; p++)
		ok[p] = !err;
	if (!err)
		return;
	kcore_error_destroy(err);
	for (uint64_t p = 0; p < pages; p++) {
		uint64_t n = len - p * page < page ? len - p * page : page;

		err = kcore_source_read_vaddr(src, va + p * page,
					      buf + p * page, n);
		ok[p] = !err;
		kcore_error_destroy(err);
	}
}

/* The dump's bytes [va, va + len) of seg: its file's holes (zeros) are
 * not read, only its data runs, page by page past a failure. */
static void dump_read(struct kcore_source *d, const struct live_seg *seg,
		      uint64_t va, unsigned char *buf, uint64_t len,
		      uint64_t page, bool *ok)
{
	uint64_t at = 0, rel = va - seg->vaddr;

	if (!seg->in_file || !kcore_source_knows_holes(d)) {
		live_read(d, va, buf, len, page, ok);
		return;
	}
	memset(buf, 0, len);
	for (uint64_t p = 0; p * page < len; p++)
		ok[p] = true;
	while (at < len && rel + at < seg->filesz) {
		uint64_t end =
			rel + len < seg->filesz ? rel + len : seg->filesz;
		uint64_t data, data_end;
		struct kcore_error *err = kcore_source_next_data(
			d, seg->offset + rel + at, seg->offset + end, &data,
			&data_end);

		if (err) { /* cannot tell: read the rest */
			kcore_error_destroy(err);
			data = seg->offset + rel + at;
			data_end = seg->offset + end;
		}
		if (data >= seg->offset + end)
			break;
		/* Whole pages of the chunk (holes and data are pages). */
		uint64_t a = (data - seg->offset - rel) / page * page;
		uint64_t b = data_end - seg->offset - rel;

		b = b > len ? len : (b + page - 1) / page * page;
		if (b > len)
			b = len;
		live_read(d, va + a, buf + a, b - a, page, ok + a / page);
		at = b;
	}
}

/* One cell of the time map, read from both and compared page by page. */
static void live_cell(struct smear_tally *t, uint64_t page,
		      struct kcore_source *d, struct kcore_source *live,
		      const struct live_seg *segs, size_t nsegs, size_t si,
		      uint64_t off, uint64_t len, double gap, bool skip_zero,
		      unsigned char *a, unsigned char *b, bool *aok, bool *bok,
		      struct kcore_smear *ret)
{
	const struct live_seg *seg = &segs[si];
	unsigned g = kcore_smear_gap_bucket(gap);

	if (off >= seg->size)
		return;
	if (len > seg->size - off)
		len = seg->size - off;
	for (uint64_t at = 0; at < len; at += LIVE_CHUNK) {
		uint64_t n = len - at < LIVE_CHUNK ? len - at : LIVE_CHUNK;
		uint64_t va = seg->vaddr + off + at;

		dump_read(d, seg, va, a, n, page, aok);
		live_read(live, va, b, n, page, bok);
		ret->bytes_read += n;
		for (uint64_t p = 0; p * page < n; p++) {
			uint64_t o = p * page;
			uint64_t m = n - o < page ? n - o : page;
			bool changed;

			if (!aok[p] || (skip_zero && kcore_is_zero(a + o, m)))
				continue;
			if (!bok[p]) {
				ret->pages_unreadable++;
				continue;
			}
			changed = memcmp(a + o, b + o, m) != 0;
			kcore_smear_count(
				ret, live_class(segs, nsegs, seg, off + at + o),
				g, changed);
			if (changed)
				kcore_smear_note_change(t, ret, si, va + o,
							off + at + o, m, gap);
		}
	}
}

/* The dump's metadata note, decoded: *ret (its caller deinits it). */
static struct kcore_error *dump_metadata(struct kcore_source *d,
					 const char *path,
					 struct kcore_metadata *ret)
{
	for (size_t i = 0; i < kcore_source_nnotes(d); i++) {
		const struct kcore_note *n = kcore_source_note(d, i);

		if (!strcmp(n->name, KCORE_META_NOTE_NAME))
			return kcore_note_metadata(d, n, ret);
	}
	return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, path,
				  "has no kcoredump metadata note: not a "
				  "kcoredump dump of the live kernel");
}

/* The dump is of this boot: its note's boot_id is this one's. */
static struct kcore_error *same_boot(const struct kcore_metadata *md,
				     const char *path, char boot[64])
{
	const char *was = kcore_metadata_get(md, "boot_id");

	if (!was)
		return kcore_error_create(
			KCORE_ERR_UNSUPPORTED, 0, path,
			"its note has no boot ID: not a dump of the live "
			"kernel, or made before kcoredump recorded one");
	if (!kcore_boot_id(boot))
		return kcore_error_create(KCORE_ERR_OS, 0,
					  "/proc/sys/kernel/random/boot_id",
					  "cannot read this boot's ID");
	if (strcmp(was, boot) != 0)
		return kcore_error_create(
			KCORE_ERR_UNSUPPORTED, 0, path,
			"is a dump of another boot (boot ID %.40s; this boot "
			"is %s): verify --live compares a dump of this boot "
			"only",
			was, boot);
	if (!kcore_metadata_get(md, "read_time_grain"))
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, path,
					  "has no time map in its note");
	return NULL;
}

struct kcore_error *kcore_smear_live(const char *dump_path,
				     const char *live_path,
				     volatile sig_atomic_t *cancel,
				     struct kcore_smear *ret, char boot[64])
{
	struct smear_tally tally = { 0 };
	uint64_t page = 4096;
	struct kcore_source *d = NULL, *live = NULL;
	struct kcore_metadata md = { 0 };
	struct live_seg *segs = NULL;
	unsigned char *a = NULL, *b = NULL;
	bool *aok = NULL, *bok = NULL, skip_zero;
	uint64_t t0 = kcore_smear_mono_ns(), read_start;
	size_t nsegs = 0;
	struct kcore_error *err;

	memset(ret, 0, sizeof(*ret));
	boot[0] = '\0';
	err = kcore_source_open(dump_path, NULL, &d);
	if (!err)
		err = dump_metadata(d, dump_path, &md);
	if (!err)
		err = same_boot(&md, dump_path, boot);
	if (!err)
		err = kcore_source_open(live_path ? live_path : "/proc/kcore",
					NULL, &live);
	if (!err)
		err = live_segments(d, &md, &segs, &nsegs);
	if (err)
		goto out;
	if (kcore_source_info(d)->page_size)
		page = kcore_source_info(d)->page_size;
	a = malloc(LIVE_CHUNK);
	b = malloc(LIVE_CHUNK);
	aok = malloc(LIVE_CHUNK / 512 * sizeof(*aok));
	bok = malloc(LIVE_CHUNK / 512 * sizeof(*bok));
	if (!a || !b || !aok || !bok) {
		err = &kcore_error_nomem;
		goto out;
	}
	ret->fraction = 1;
	ret->live = kcore_source_info(live)->kind == KCORE_SOURCE_LIVE_KCORE;
	read_start = parse_utc(kcore_metadata_get(&md, "read_start"));
	/* Zero pages of a dump that left pages out may be the ones it
	 * excluded: not compared. */
	skip_zero = kcore_metadata_get(&md, "exclude") != NULL;
	for (size_t i = 0; i < md.nfields; i++) {
		uint64_t off, len, start_us, end_us, now;
		size_t si;
		double gap;

		if (cancel && *cancel)
			break;
		if (strcmp(md.fields[i].key, "read_time") != 0 ||
		    sscanf(md.fields[i].value,
			   "segment=%zu offset=0x%" SCNx64 " length=0x%" SCNx64
			   " start_us=%" SCNu64 " end_us=%" SCNu64,
			   &si, &off, &len, &start_us, &end_us) != 5 ||
		    si >= nsegs || !segs[si].known || segs[si].shared)
			continue;
		now = (uint64_t)time(NULL) * 1000000000ull;
		gap = read_start && now > read_start
			      ? (double)(now - read_start) / 1e9 -
					(double)start_us / 1e6
			      : 0;
		live_cell(&tally, page, d, live, segs, nsegs, si, off, len,
			  gap > 0 ? gap : 0, skip_zero, a, b, aok, bok, ret);
	}
	ret->checked = true;
	ret->seconds = (double)(kcore_smear_mono_ns() - t0) / 1e9;
	if (cancel && *cancel)
		err = kcore_error_create(KCORE_ERR_INTERRUPTED, 0, NULL,
					 "interrupted while comparing with "
					 "the live kernel");
out:
	free(a);
	free(b);
	free(aok);
	free(bok);
	free(segs);
	kcore_metadata_deinit(&md);
	kcore_source_destroy(live);
	kcore_source_destroy(d);
	if (err) {
		free(ret->changes);
		ret->changes = NULL;
	}
	return err;
}
