// SPDX-License-Identifier: MIT
/*
 * Verifying a dump through the source layer: holes (SEEK_DATA/SEEK_HOLE
 * of a file, the bitmap of a kdump, the hole map of a .zst/.xz) are never
 * read, and their digests are those of zeros, which cost nothing
 * (hash.c).  Comparing with a source walks the data of both: a range
 * that is a hole in both is equal without reading either.
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metanote.h"
#include "plan.h"
#include "source-impl.h"
#include "kcoredump/verify.h"
#include "verify-internal.h"

static struct kcore_error *hash_segment(struct kcore_source *src,
					const struct kcore_segment *seg,
					enum kcore_block_hash m,
					unsigned char *buf, struct vctl *vc,
					unsigned char out[KCORE_DIGEST_LEN])
{
	struct kcore_content_hasher *h;
	struct kcore_error *err;
	uint64_t pos = 0;

	err = kcore_content_hasher_create(m, seg->memsz, &h);
	if (err)
		return err;
	while (!err && pos < seg->filesz) {
		uint64_t ds, de;

		err = kcore_source_next_data(src, seg->offset + pos,
					     seg->offset + seg->filesz, &ds,
					     &de);
		if (err)
			break;
		if (ds >= seg->offset + seg->filesz)
			break;
		ds -= seg->offset;
		de -= seg->offset;
		if (ds > pos)
			err = kcore_content_hasher_add_zeros(h, ds - pos);
		if (!err && ds > pos)
			err = kcore_verify_step(vc, ds - pos, src->path);
		for (pos = ds; !err && pos < de;) {
			uint64_t n = de - pos < CHUNK ? de - pos : CHUNK;

			err = kcore_source_pread(src, buf, n,
						 seg->offset + pos);
			if (!err)
				err = kcore_content_hasher_add(h, buf, n);
			if (!err)
				err = kcore_verify_step(vc, n, src->path);
			pos += n;
		}
	}
	/* A hole to the segment's end. */
	if (!err && pos < seg->filesz)
		err = kcore_verify_step(vc, seg->filesz - pos, src->path);
	if (!err)
		err = kcore_content_hasher_finish(h, out);
	kcore_content_hasher_destroy(h);
	return err;
}

static struct kcore_error *read_trailer_fd(struct kcore_source *src,
					   struct kcore_verify_result *r)
{
	unsigned char tail[16];
	uint64_t len;
	char *text;
	struct kcore_error *err;

	if (src->info.file_size < 16)
		return NULL;
	err = kcore_source_pread(src, tail, 16, src->info.file_size - 16);
	if (err)
		return err;
	if (memcmp(tail + 8, TRAILER_MAGIC, 8) != 0)
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path,
					     src->info.file_size - 16,
					     "the metadata says the digests "
					     "are in a trailer, but there is "
					     "none");
	memcpy(&len, tail, 8);
	if (len > MAX_TRAILER || len > src->info.file_size - 16)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path,
			src->info.file_size - 16,
			"trailer length 0x%" PRIx64 " is impossible", len);
	text = malloc(len ? len : 1);
	if (!text)
		return &kcore_error_nomem;
	err = kcore_source_pread(src, text, len,
				 src->info.file_size - 16 - len);
	if (!err)
		kcore_verify_apply_metadata(r, text, len);
	free(text);
	return err;
}

/* Whether plan (or NULL) left out the page at paddr. */
static bool excluded(const struct kcore_plan *plan, uint64_t paddr)
{
	const struct kcore_range *r =
		plan ? kcore_excluded_after(plan, paddr) : NULL;

	return r && r->start <= paddr;
}

/* The source's pages that --exclude at level leaves out, or NULL. */
static struct kcore_plan *source_exclusion(struct kcore_source *src,
					   unsigned level)
{
	struct kcore_selection sel = { 0 };
	struct kcore_plan *plan = NULL;
	struct kcore_error *err;

	if (!level)
		return NULL;
	err = kcore_plan_create(src, &sel, &plan);
	if (!err)
		err = kcore_plan_exclude(src, plan, level);
	if (err) {
		kcore_error_destroy(err);
		kcore_plan_destroy(plan);
		return NULL;
	}
	return plan;
}

/*
 * How many bytes from addr (virtual, or physical) on are known to be zero
 * in src without reading: a hole of its file (or of its format's map), or
 * the part of a segment past p_filesz.  0 when addr holds data, or when it
 * cannot be told (then it is read).
 */
static uint64_t known_zeros(struct kcore_source *src, uint64_t addr,
			    uint64_t len, bool physical)
{
	const struct kcore_segment *seg = NULL;
	uint64_t start = 0, pos, n, d, de;
	struct kcore_error *err;

	if (!physical && src->info.physical_only)
		return 0; /* read through the kernel's page tables */
	for (size_t i = 0; i < src->nsegments && !seg; i++) {
		const struct kcore_segment *g = &src->segments[i];

		if (g->type != PT_LOAD || !g->memsz ||
		    (physical && !g->has_paddr))
			continue;
		start = physical ? g->paddr : g->vaddr;
		if (addr >= start && addr - start < g->memsz)
			seg = g;
	}
	if (!seg)
		return 0;
	pos = addr - start;
	n = seg->memsz - pos < len ? seg->memsz - pos : len;
	if (pos >= seg->filesz)
		return n;
	if (n > seg->filesz - pos)
		n = seg->filesz - pos;
	err = kcore_source_next_data(src, seg->offset + pos,
				     seg->offset + pos + n, &d, &de);
	if (err) {
		kcore_error_destroy(err);
		return 0;
	}
	return d - (seg->offset + pos);
}

static struct kcore_error *read_side(struct kcore_source *s, bool physical,
				     uint64_t addr, void *buf, uint64_t n)
{
	return physical ? kcore_source_read_paddr(s, addr, buf, n)
			: kcore_source_read_vaddr(s, addr, buf, n);
}

static struct kcore_error *compare_source(struct kcore_source *dump,
					  const char *source,
					  struct kcore_verify_result *r,
					  struct vctl *vc)
{
	struct kcore_source *src;
	struct kcore_error *err = kcore_source_open(source, NULL, &src);
	unsigned char *a = NULL, *b = NULL;
	struct kcore_plan *excl = NULL;
	size_t k = 0;

	if (err)
		return err;
	a = malloc(CHUNK);
	b = malloc(CHUNK);
	if (!a || !b) {
		err = &kcore_error_nomem;
		goto out;
	}
	r->compared = true;
	excl = source_exclusion(src, r->exclude_level);
	for (size_t i = 0; !err && i < dump->nsegments; i++) {
		const struct kcore_segment *seg = &dump->segments[i];

		if (seg->type != PT_LOAD)
			continue;
		struct kcore_verify_segment *vs = &r->segs[k++];
		/* kdump and LiME have no meaningful p_vaddr. */
		bool dphys = dump->info.physical_only, sphys = vs->has_paddr;
		uint64_t dbase = dphys ? seg->paddr : seg->vaddr;
		uint64_t sbase = sphys ? vs->paddr : seg->vaddr;

		for (uint64_t pos = 0; !err && pos < seg->memsz;) {
			uint64_t left = seg->memsz - pos;
			uint64_t n = left < CHUNK ? left : CHUNK;
			uint64_t za =
				known_zeros(dump, dbase + pos, left, dphys);
			uint64_t zb =
				known_zeros(src, sbase + pos, left, sphys);

			/* Zeros on both sides are equal unread. */
			if (za && zb) {
				n = za < zb ? za : zb;
				r->bytes_checked += n;
				pos += n;
				err = kcore_verify_step(vc, n, source);
				continue;
			}
			if (za && za < n)
				n = za;
			if (zb && zb < n)
				n = zb;
			if (za)
				memset(a, 0, n);
			else
				err = read_side(dump, dphys, dbase + pos, a, n);
			if (!err && zb)
				memset(b, 0, n);
			else if (!err)
				err = read_side(src, sphys, sbase + pos, b, n);
			for (uint64_t p = 0; !err && p < n; p += 4096) {
				uint64_t m = n - p < 4096 ? n - p : 4096;

				if (!memcmp(a + p, b + p, m))
					continue;
				if (vs->has_paddr &&
				    excluded(excl, vs->paddr + pos + p) &&
				    kcore_is_zero(a + p, m))
					r->excluded_bytes += m;
				else
					vs->differ_bytes += m;
			}
			r->bytes_checked += n;
			if (!err)
				err = kcore_verify_step(vc, n, source);
			pos += n;
		}
		r->differ_bytes += vs->differ_bytes;
	}
out:
	free(a);
	free(b);
	kcore_plan_destroy(excl);
	kcore_source_destroy(src);
	return err;
}

/* A .zst/.xz: its image is the ELF file that was compressed. */
static bool kcore_source_is_stream(const struct kcore_source *src)
{
	const char *f = kcore_source_format(src);

	return !strncmp(f, "zstd", 4) || !strncmp(f, "xz", 2);
}

/* Our metadata note, or NULL. */
static const struct kcore_note *our_note(const struct kcore_source *src)
{
	for (size_t i = 0; i < src->nnotes; i++)
		if (!strcmp(src->notes[i].name, KCORE_META_NOTE_NAME))
			return &src->notes[i];
	return NULL;
}

/*
 * The segments our note describes in a kdump file kcoredump wrote, as
 * pieces of the file's own segments (its bitmap merges adjacent ones).
 * false when the note is not about this file: makedumpfile copies the
 * notes of the ELF dump it reads, and their digests describe that dump
 * (our writer says output_format=kdump; LiME files have no notes).
 */
static int cmp_seg_paddr(const void *a, const void *b)
{
	const struct kcore_segment *x = *(const struct kcore_segment *const *)a;
	const struct kcore_segment *y = *(const struct kcore_segment *const *)b;

	return x->paddr < y->paddr ? -1 : x->paddr > y->paddr;
}

/* The segment of byidx (n, sorted by paddr, disjoint: a kdump's runs)
 * that holds [paddr, paddr + size), or NULL. */
static const struct kcore_segment *
holding(const struct kcore_segment *const *byaddr, size_t n, uint64_t paddr,
	uint64_t size)
{
	size_t lo = 0, hi = n;
	const struct kcore_segment *g;

	while (lo < hi) { /* the first with a start above paddr */
		size_t mid = lo + (hi - lo) / 2;

		if (byaddr[mid]->paddr <= paddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	g = byaddr[lo - 1];
	return size <= g->memsz && paddr - g->paddr <= g->memsz - size ? g
								       : NULL;
}

static bool note_segments(const struct kcore_source *src,
			  const struct kcore_note *n,
			  struct kcore_segment **ret, size_t *ret_count)
{
	const char *fmt = kcore_source_format(src);
	const char *t = (const char *)n->desc, *end = t + n->descsz;
	struct kcore_segment *segs = NULL;
	const struct kcore_segment **byaddr;
	size_t count = 0, cap = 0, nload = 0;
	bool ours = false;

	if (strcmp(fmt, "kdump") && strcmp(fmt, "flattened"))
		return false;
	/* The file's segments by address: a line finds its own in log n
	 * (one by one, a note of many lines in a file of many runs cost
	 * their product). */
	byaddr = calloc(src->nsegments ? src->nsegments : 1, sizeof(*byaddr));
	if (!byaddr)
		return false;
	for (size_t i = 0; i < src->nsegments; i++)
		if (src->segments[i].type == PT_LOAD &&
		    src->segments[i].has_paddr && src->segments[i].memsz)
			byaddr[nload++] = &src->segments[i];
	qsort(byaddr, nload, sizeof(*byaddr), cmp_seg_paddr);
	for (const char *l = t; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		size_t len = (size_t)((nl ? nl : end) - l);
		unsigned long long vaddr, size, paddr, rel;
		char line[256];
		size_t idx;
		const struct kcore_segment *in;

		snprintf(line, sizeof(line), "%.*s", (int)len, l);
		l += len + 1;
		if (!strcmp(line, "output_format=kdump"))
			ours = true;
		if (sscanf(line,
			   "segment=%zu vaddr=0x%llx size=0x%llx paddr=0x%llx",
			   &idx, &vaddr, &size, &paddr) != 4)
			continue;
		in = holding(byaddr, nload, paddr, size);
		if (in && idx == count && count == cap) {
			size_t nc = cap ? 2 * cap : 64;
			struct kcore_segment *m =
				realloc(segs, nc * sizeof(*segs));

			if (m) {
				segs = m;
				cap = nc;
			}
		}
		if (!in || idx != count || count == cap) {
			free(segs);
			free(byaddr);
			return false;
		}
		rel = paddr - in->paddr;
		segs[count] = *in;
		segs[count].vaddr = vaddr;
		segs[count].paddr = paddr;
		segs[count].offset = in->offset + rel;
		segs[count].memsz = size;
		segs[count].filesz = in->filesz <= rel ? 0
				     : in->filesz - rel < size
					     ? in->filesz - rel
					     : size;
		count++;
	}
	free(byaddr);
	if (!ours || !count) {
		free(segs);
		return false;
	}
	*ret = segs;
	*ret_count = count;
	return true;
}

struct kcore_error *kcore_verify_plain(const char *path, const char *source,
				       int exclude, struct vctl *vc,
				       struct kcore_verify_result *r)
{
	struct kcore_source *src;
	struct kcore_error *err = kcore_source_open(path, NULL, &src);
	const struct kcore_note *note;
	struct kcore_segment *segs = NULL;
	unsigned char *buf;
	size_t n = 0;

	if (err)
		return err;
	if (src->info.page_compression) {
		r->page_compression = strdup(src->info.page_compression);
		if (!r->page_compression) {
			kcore_source_destroy(src);
			return &kcore_error_nomem;
		}
	}
	note = our_note(src);
	/*
	 * Our note's digests describe the file it was written into.  In a
	 * kdump file they are of the segments the note lists; one that
	 * other tools made from our ELF dump carries a copy of that dump's
	 * note, which proves nothing about it.
	 */
	if (src->image && note && !kcore_source_is_stream(src) &&
	    !note_segments(src, note, &segs, &n))
		note = NULL;
	/* makedumpfile's marks (an ELF's e_flags, a kdump's status). */
	r->incomplete = kcore_source_info(src)->incomplete;
	if (!segs) {
		n = 0;
		for (size_t i = 0; i < src->nsegments; i++)
			n += src->segments[i].type == PT_LOAD;
		segs = calloc(n ? n : 1, sizeof(*segs));
		for (size_t i = 0, k = 0; segs && i < src->nsegments; i++)
			if (src->segments[i].type == PT_LOAD)
				segs[k++] = src->segments[i];
	}
	r->segs = calloc(n ? n : 1, sizeof(*r->segs));
	buf = malloc(CHUNK);
	if (!r->segs || !buf || !segs) {
		free(buf);
		free(segs);
		kcore_source_destroy(src);
		return &kcore_error_nomem;
	}
	r->nsegs = n;
	for (size_t k = 0; k < n; k++) {
		r->segs[k].vaddr = segs[k].vaddr;
		r->segs[k].paddr = segs[k].paddr;
		r->segs[k].has_paddr = segs[k].paddr != UINT64_MAX;
		r->segs[k].size = segs[k].memsz;
	}
	if (note)
		kcore_verify_apply_metadata(
			r, (const char *)note->desc,
			strnlen((const char *)note->desc, note->descsz));
	if (exclude >= 0)
		r->exclude_level = (unsigned)exclude;
	/* Unless the source's note already holds the trailer's text. */
	if (r->digest_location == KCORE_DIGESTS_TRAILER && !src->trailer_text)
		err = read_trailer_fd(src, r);
	/* The bytes to go through: every segment's, and again each
	 * load's whole size when a source is compared. */
	for (size_t k = 0; k < n; k++)
		vc->total += segs[k].filesz + (source ? segs[k].memsz : 0);
	for (size_t k = 0; !err && k < n; k++)
		err = hash_segment(src, &segs[k], r->block_hash, buf, vc,
				   r->segs[k].actual);
	free(buf);
	free(segs);
	if (!err)
		kcore_verify_finish(r);
	if (!err && source)
		err = compare_source(src, source, r, vc);
	kcore_source_destroy(src);
	return err;
}
