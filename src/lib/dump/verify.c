// SPDX-License-Identifier: MIT
/*
 * verify and extract.  A dump is read through the source layer: holes
 * (SEEK_DATA/SEEK_HOLE of a file, the bitmap of a kdump, the hole map of
 * a .zst/.xz) are never read, and their digests are those of zeros, which
 * cost nothing (hash.c).  Only a compressed dump that allows no random
 * access (no seek table or index) is read as a stream: the header area
 * first, then the segments in file order, then the trailer.  Comparing
 * with a source walks the data of both: a range that is a hole in both is
 * equal without reading either.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kcoredump/output.h"
#include "kcoredump/stream.h"
#include "kcoredump/verify.h"
#include "metanote.h"
#include "plan.h"
#include "source-impl.h"

#define CHUNK	      (1u << 20)
#define TRAILER_MAGIC "KCDTRL01"
#define MAX_HEADER    (256u << 20)
#define MAX_TRAILER   (64u << 20)

static bool parse_hex_digest(const char *s, unsigned char out[KCORE_DIGEST_LEN])
{
	for (int i = 0; i < KCORE_DIGEST_LEN; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return false;
		out[i] = (unsigned char)v;
	}
	return true;
}

/* Take the digests from metadata text into the result. */
static void apply_metadata(struct kcore_verify_result *r, const char *text,
			   size_t len)
{
	char *copy = strndup(text, len), *save = NULL;

	if (!copy)
		return;
	for (char *line = strtok_r(copy, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *sha;
		size_t idx;

		if (!strncmp(line, "dump_sha256=", 12)) {
			r->has_expected =
				parse_hex_digest(line + 12, r->expected);
		} else if (!strncmp(line, "exclude_level=", 14)) {
			unsigned long v = strtoul(line + 14, NULL, 10);

			r->exclude_level =
				v <= KCORE_EXCLUDE_ALL ? (unsigned)v : 0;
		} else if (!strncmp(line, "bytes_unreadable=", 17) ||
			   !strncmp(line, "source_bytes_unreadable=", 24)) {
			r->unreadable_bytes +=
				strtoull(strchr(line, '=') + 1, NULL, 10);
			r->incomplete |= r->unreadable_bytes != 0;
		} else if (!strncmp(line, "unreadable_ranges=", 18) ||
			   !strncmp(line, "source_unreadable_ranges=", 25)) {
			r->unreadable_ranges +=
				strtoull(strchr(line, '=') + 1, NULL, 10);
		} else if (!strncmp(line, "source_incomplete=1", 19)) {
			r->incomplete = true;
		} else if (!strncmp(line, "digests=", 8)) {
			r->digest_location =
				kcore_digest_location_from_name(line + 8);
		} else if (sscanf(line, "segment=%zu ", &idx) == 1 &&
			   idx < r->nsegs && (sha = strstr(line, " sha256="))) {
			r->segs[idx].has_expected = parse_hex_digest(
				sha + 8, r->segs[idx].expected);
		}
	}
	free(copy);
}

static void finish_result(struct kcore_verify_result *r)
{
	unsigned char(*d)[KCORE_DIGEST_LEN] =
		calloc(r->nsegs ? r->nsegs : 1, KCORE_DIGEST_LEN);

	r->match = true;
	for (size_t i = 0; i < r->nsegs; i++) {
		struct kcore_verify_segment *s = &r->segs[i];

		s->match = !s->has_expected ||
			   !memcmp(s->expected, s->actual, KCORE_DIGEST_LEN);
		r->match &= s->match;
		if (d)
			memcpy(d[i], s->actual, KCORE_DIGEST_LEN);
	}
	if (d)
		kcore_dump_digest((const unsigned char(*)[KCORE_DIGEST_LEN])d,
				  r->nsegs, r->actual);
	free(d);
	if (r->has_expected)
		r->match &= !memcmp(r->expected, r->actual, KCORE_DIGEST_LEN);
}

static struct kcore_error *cancelled(volatile sig_atomic_t *cancel,
				     const char *path)
{
	if (cancel && *cancel)
		return kcore_error_create(KCORE_ERR_INTERRUPTED, 0, path,
					  "interrupted");
	return NULL;
}

/* What verify is told to stop by, and tells its progress to. */
struct vctl {
	volatile sig_atomic_t *cancel;
	kcore_verify_progress_fn progress;
	void *arg;
	uint64_t done, total;
};

/* n more bytes checked (read, or holes passed): progress, then a
 * signal's stop. */
static struct kcore_error *vstep(struct vctl *vc, uint64_t n, const char *path)
{
	vc->done += n;
	if (vc->progress)
		vc->progress(vc->arg, vc->done, vc->total);
	return cancelled(vc->cancel, path);
}

/* ---- plain ELF dumps ---- */

static struct kcore_error *hash_segment(struct kcore_source *src,
					const struct kcore_segment *seg,
					unsigned char *buf, struct vctl *vc,
					unsigned char out[KCORE_DIGEST_LEN])
{
	struct kcore_content_hasher *h;
	struct kcore_error *err;
	uint64_t pos = 0;

	err = kcore_content_hasher_create(seg->memsz, &h);
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
			err = vstep(vc, ds - pos, src->path);
		for (pos = ds; !err && pos < de;) {
			uint64_t n = de - pos < CHUNK ? de - pos : CHUNK;

			err = kcore_source_pread(src, buf, n,
						 seg->offset + pos);
			if (!err)
				err = kcore_content_hasher_add(h, buf, n);
			if (!err)
				err = vstep(vc, n, src->path);
			pos += n;
		}
	}
	/* A hole to the segment's end. */
	if (!err && pos < seg->filesz)
		err = vstep(vc, seg->filesz - pos, src->path);
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
		apply_metadata(r, text, len);
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
				err = vstep(vc, n, source);
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
				err = vstep(vc, n, source);
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

static struct kcore_error *verify_plain(const char *path, const char *source,
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
		apply_metadata(r, (const char *)note->desc,
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
		err = hash_segment(src, &segs[k], buf, vc, r->segs[k].actual);
	free(buf);
	free(segs);
	if (!err)
		finish_result(r);
	if (!err && source)
		err = compare_source(src, source, r, vc);
	kcore_source_destroy(src);
	return err;
}

/* ---- compressed dumps, as a stream ---- */

struct sload {
	size_t idx; /* in the result */
	uint64_t offset, filesz;
};

static int cmp_sload(const void *a, const void *b)
{
	const struct sload *x = a, *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Stream bytes into a content hasher, zeros as zeros. */
static struct kcore_error *hash_bytes(struct kcore_content_hasher *h,
				      const unsigned char *buf, uint64_t len)
{
	if (kcore_is_zero(buf, len))
		return kcore_content_hasher_add_zeros(h, len);
	return kcore_content_hasher_add(h, buf, len);
}

static struct kcore_error *sread(struct kcore_istream *is, const char *path,
				 void *buf, size_t len, uint64_t at)
{
	size_t done = 0;

	while (done < len) {
		size_t n;
		struct kcore_error *err = kcore_istream_read(
			is, (char *)buf + done, len - done, &n);

		if (err)
			return err;
		if (!n)
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, path, at + done,
				"the decompressed stream ends at offset "
				"0x%" PRIx64 " inside the dump",
				at + done);
		done += n;
	}
	return NULL;
}

/* Read the header area (ELF header to the first PT_LOAD) and the phdrs. */
static struct kcore_error *stream_header(struct kcore_istream *is,
					 const char *path,
					 unsigned char **ret_hdr,
					 size_t *ret_len, Elf64_Phdr **ret_ph,
					 size_t *ret_phnum)
{
	Elf64_Ehdr eh;
	unsigned char *hdr;
	uint64_t hdr_len = sizeof(eh), phnum, first = UINT64_MAX;
	Elf64_Phdr *ph;
	struct kcore_error *err = sread(is, path, &eh, sizeof(eh), 0);

	if (err)
		return err;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_type != ET_CORE ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff < sizeof(eh))
		return kcore_error_create_at(KCORE_ERR_UNSUPPORTED, 0, path, 0,
					     "the decompressed stream is not a "
					     "64-bit little-endian ELF core");
	phnum = eh.e_phnum;
	/* Our writer puts section header 0 (PN_XNUM) after the phdrs; read
	 * the table and learn the count from sh_info. */
	if (phnum == PN_XNUM) {
		if (eh.e_shoff < eh.e_phoff || eh.e_shoff > MAX_HEADER)
			return kcore_error_create_at(KCORE_ERR_FORMAT, 0, path,
						     0x28,
						     "bad PN_XNUM e_shoff");
		hdr_len = eh.e_shoff + sizeof(Elf64_Shdr);
	} else {
		hdr_len = eh.e_phoff + phnum * sizeof(Elf64_Phdr);
	}
	if (hdr_len > MAX_HEADER)
		return kcore_error_create_at(KCORE_ERR_UNSUPPORTED, 0, path,
					     0x20,
					     "program header table too "
					     "large");
	hdr = malloc(hdr_len);
	if (!hdr)
		return &kcore_error_nomem;
	memcpy(hdr, &eh, sizeof(eh));
	err = sread(is, path, hdr + sizeof(eh), hdr_len - sizeof(eh),
		    sizeof(eh));
	if (!err && phnum == PN_XNUM) {
		Elf64_Shdr sh;

		memcpy(&sh, hdr + eh.e_shoff, sizeof(sh));
		phnum = sh.sh_info;
		if (eh.e_phoff + phnum * sizeof(Elf64_Phdr) > eh.e_shoff)
			err = kcore_error_create_at(KCORE_ERR_FORMAT, 0, path,
						    eh.e_shoff,
						    "PN_XNUM count overlaps");
	}
	if (err) {
		free(hdr);
		return err;
	}
	ph = calloc(phnum ? phnum : 1, sizeof(*ph));
	if (!ph) {
		free(hdr);
		return &kcore_error_nomem;
	}
	memcpy(ph, hdr + eh.e_phoff, phnum * sizeof(*ph));
	for (size_t i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset < first)
			first = ph[i].p_offset;
	/* Extend the buffer to cover the notes before the first load. */
	if (first != UINT64_MAX && first > hdr_len) {
		unsigned char *more;

		if (first > MAX_HEADER) {
			free(ph);
			free(hdr);
			return kcore_error_create_at(KCORE_ERR_UNSUPPORTED, 0,
						     path, 0,
						     "header area too large");
		}
		more = realloc(hdr, first);
		if (!more) {
			free(ph);
			free(hdr);
			return &kcore_error_nomem;
		}
		hdr = more;
		err = sread(is, path, hdr + hdr_len, first - hdr_len, hdr_len);
		hdr_len = first;
	}
	if (err) {
		free(ph);
		free(hdr);
		return err;
	}
	*ret_hdr = hdr;
	*ret_len = hdr_len;
	*ret_ph = ph;
	*ret_phnum = phnum;
	return NULL;
}

/* Find our metadata note in the header area. */
static void stream_notes(const unsigned char *hdr, size_t len,
			 const Elf64_Phdr *ph, size_t phnum,
			 struct kcore_verify_result *r)
{
	for (size_t i = 0; i < phnum; i++) {
		uint64_t off = ph[i].p_offset, end = off + ph[i].p_filesz;

		if (ph[i].p_type != PT_NOTE || end > len || end < off)
			continue;
		while (off + 12 <= end) {
			uint32_t nsz, dsz;

			memcpy(&nsz, hdr + off, 4);
			memcpy(&dsz, hdr + off + 4, 4);
			uint64_t name = off + 12;
			uint64_t desc = name + ((nsz + 3ull) & ~3ull);
			uint64_t next = desc + ((dsz + 3ull) & ~3ull);

			if (next > end)
				break;
			if (nsz == sizeof(KCORE_META_NOTE_NAME) &&
			    !memcmp(hdr + name, KCORE_META_NOTE_NAME, nsz))
				apply_metadata(
					r, (const char *)hdr + desc,
					strnlen((const char *)hdr + desc, dsz));
			off = next;
		}
	}
}

static struct kcore_error *verify_stream(int fd, const char *path,
					 struct vctl *vc,
					 struct kcore_verify_result *r)
{
	struct kcore_istream *is;
	unsigned char *hdr = NULL, *buf = NULL;
	Elf64_Phdr *ph = NULL;
	struct sload *loads = NULL;
	size_t hdr_len = 0, phnum = 0, n = 0;
	uint64_t pos;
	struct kcore_error *err = kcore_istream_open(fd, path, &is);

	if (err)
		return err;
	r->method = kcore_istream_method(is);
	err = stream_header(is, path, &hdr, &hdr_len, &ph, &phnum);
	if (err)
		goto out;
	for (size_t i = 0; i < phnum; i++)
		n += ph[i].p_type == PT_LOAD;
	r->segs = calloc(n ? n : 1, sizeof(*r->segs));
	loads = calloc(n ? n : 1, sizeof(*loads));
	buf = malloc(CHUNK);
	if (!r->segs || !loads || !buf) {
		err = &kcore_error_nomem;
		goto out;
	}
	r->nsegs = n;
	for (size_t i = 0, k = 0; i < phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		r->segs[k] = (struct kcore_verify_segment){
			.vaddr = ph[i].p_vaddr,
			.paddr = ph[i].p_paddr,
			.has_paddr = ph[i].p_paddr != UINT64_MAX,
			.size = ph[i].p_memsz,
		};
		loads[k] = (struct sload){ k, ph[i].p_offset, ph[i].p_filesz };
		k++;
	}
	stream_notes(hdr, hdr_len, ph, phnum, r);
	qsort(loads, n, sizeof(*loads), cmp_sload);
	for (size_t k = 0; k < n; k++)
		if (loads[k].offset + loads[k].filesz > vc->total)
			vc->total = loads[k].offset + loads[k].filesz;
	pos = hdr_len;
	for (size_t k = 0; !err && k < n;) {
		struct kcore_content_hasher *h, **in = NULL;
		uint64_t end = loads[k].offset + loads[k].filesz;
		size_t ni = 0;

		if (loads[k].offset < pos) {
			err = kcore_error_create_at(
				KCORE_ERR_UNSUPPORTED, 0, path, loads[k].offset,
				"segments overlap; a stream cannot be "
				"verified");
			break;
		}
		/* Loads inside this one (the kernel image inside RAM) are
		 * hashed from the same bytes as they pass. */
		while (k + 1 + ni < n && loads[k + 1 + ni].offset < end &&
		       loads[k + 1 + ni].offset + loads[k + 1 + ni].filesz <=
			       end)
			ni++;
		if (ni && !(in = calloc(ni, sizeof(*in)))) {
			err = &kcore_error_nomem;
			break;
		}
		while (!err && pos < loads[k].offset) { /* padding */
			uint64_t m = loads[k].offset - pos;

			m = m < CHUNK ? m : CHUNK;
			err = sread(is, path, buf, m, pos);
			pos += m;
			if (!err)
				err = vstep(vc, m, path);
		}
		if (!err)
			err = kcore_content_hasher_create(
				r->segs[loads[k].idx].size, &h);
		for (size_t i = 0; !err && i < ni; i++)
			err = kcore_content_hasher_create(
				r->segs[loads[k + 1 + i].idx].size, &in[i]);
		if (err) {
			for (size_t i = 0; i < ni; i++)
				kcore_content_hasher_destroy(in[i]);
			free(in);
			break;
		}
		for (uint64_t done = 0; !err && done < loads[k].filesz;) {
			uint64_t m = loads[k].filesz - done;

			m = m < CHUNK ? m : CHUNK;
			err = sread(is, path, buf, m, pos);
			if (!err)
				err = hash_bytes(h, buf, m);
			for (size_t i = 0; !err && i < ni; i++) {
				const struct sload *l = &loads[k + 1 + i];
				uint64_t lo = l->offset > pos ? l->offset : pos;
				uint64_t hi = l->offset + l->filesz < pos + m
						      ? l->offset + l->filesz
						      : pos + m;

				if (lo < hi)
					err = hash_bytes(in[i],
							 buf + (lo - pos),
							 hi - lo);
			}
			if (!err)
				err = vstep(vc, m, path);
			done += m;
			pos += m;
		}
		if (!err)
			err = kcore_content_hasher_finish(
				h, r->segs[loads[k].idx].actual);
		kcore_content_hasher_destroy(h);
		for (size_t i = 0; i < ni; i++) {
			if (!err)
				err = kcore_content_hasher_finish(
					in[i],
					r->segs[loads[k + 1 + i].idx].actual);
			kcore_content_hasher_destroy(in[i]);
		}
		free(in);
		k += 1 + ni;
	}
	if (!err && r->digest_location == KCORE_DIGESTS_TRAILER) {
		/* The rest of the stream: metadata text, le64 len, magic. */
		size_t cap = 1 << 16, len = 0, got;
		char *t = malloc(cap);

		while (t && !err) {
			if (len == cap) {
				char *nt = cap < MAX_TRAILER
						   ? realloc(t, 2 * cap)
						   : NULL;
				if (!nt) {
					err = kcore_error_create_at(
						KCORE_ERR_FORMAT, 0, path, pos,
						"trailer too large");
					break;
				}
				t = nt;
				cap *= 2;
			}
			err = kcore_istream_read(is, t + len, cap - len, &got);
			if (!err && !got)
				break;
			len += got;
		}
		if (!t && !err)
			err = &kcore_error_nomem;
		if (!err) {
			uint64_t tl = 0;

			if (len >= 16)
				memcpy(&tl, t + len - 16, 8);
			if (len < 16 || memcmp(t + len - 8, TRAILER_MAGIC, 8) ||
			    tl > len - 16)
				err = kcore_error_create_at(
					KCORE_ERR_FORMAT, 0, path, pos,
					"no kcoredump trailer after the last "
					"segment");
			else
				apply_metadata(r, t + len - 16 - tl, tl);
		}
		free(t);
	}
	if (!err)
		finish_result(r);
out:
	free(buf);
	free(loads);
	free(ph);
	free(hdr);
	kcore_istream_destroy(is);
	return err;
}

static bool is_compressed(int fd)
{
	unsigned char m[6];

	if (pread(fd, m, sizeof(m), 0) != (ssize_t)sizeof(m))
		return false;
	return !memcmp(m, "\x28\xb5\x2f\xfd", 4) || !memcmp(m,
							    "\xfd"
							    "7zXZ\0",
							    6);
}

/* How fd is compressed, and whether it can be read at random. */
static struct kcore_error *stream_kind(int fd, const char *path,
				       enum kcore_compress *ret_method,
				       bool *ret_seekable)
{
	struct kcore_istream *is;
	struct kcore_error *err = kcore_istream_open(fd, path, &is);

	if (err)
		return err;
	*ret_method = kcore_istream_method(is);
	*ret_seekable = kcore_istream_seekable(is);
	kcore_istream_destroy(is);
	return NULL;
}

struct kcore_error *kcore_verify(const char *dump, const char *source,
				 int exclude_level,
				 volatile sig_atomic_t *cancel,
				 struct kcore_verify_result *ret)
{
	return kcore_verify_progress(dump, source, exclude_level, cancel, NULL,
				     NULL, ret);
}

struct kcore_error *kcore_verify_progress(const char *dump, const char *source,
					  int exclude_level,
					  volatile sig_atomic_t *cancel,
					  kcore_verify_progress_fn progress,
					  void *arg,
					  struct kcore_verify_result *ret)
{
	struct vctl vc = { .cancel = cancel, .progress = progress, .arg = arg };
	enum kcore_compress method = KCORE_COMPRESS_NONE;
	bool seekable = true;
	struct kcore_error *err = NULL;
	int fd;

	memset(ret, 0, sizeof(*ret));
	fd = open(dump, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return kcore_explain_open_error(dump, errno, false, NULL);
	if (is_compressed(fd))
		err = stream_kind(fd, dump, &method, &seekable);
	/*
	 * A compressed dump without random access is decoded once, front
	 * to back; with a source to compare it goes through the source
	 * layer all the same (which decodes again from the start when it
	 * has to go back).
	 */
	if (!err && !seekable && !source) {
		err = verify_stream(fd, dump, &vc, ret);
		close(fd);
		if (err)
			kcore_verify_result_deinit(ret);
		return err;
	}
	close(fd);
	if (err)
		return err;
	ret->method = method;
	err = verify_plain(dump, source, exclude_level, &vc, ret);
	if (err)
		kcore_verify_result_deinit(ret);
	return err;
}

void kcore_verify_result_deinit(struct kcore_verify_result *res)
{
	free(res->segs);
	free(res->page_compression);
	memset(res, 0, sizeof(*res));
}

/* Write the pages of buf (at file offset pos) that are not all zero. */
static struct kcore_error *write_nonzero(struct kcore_output *out,
					 const unsigned char *buf, size_t n,
					 uint64_t pos)
{
	struct kcore_error *err = NULL;

	for (size_t p = 0; !err && p < n;) {
		size_t q = p, m = n - p < 4096 ? n - p : 4096;

		if (kcore_is_zero(buf + p, m)) {
			p += m;
			continue;
		}
		while (q < n &&
		       !kcore_is_zero(buf + q, n - q < 4096 ? n - q : 4096))
			q += n - q < 4096 ? n - q : 4096;
		err = kcore_pwrite_all(NULL, out->fd, out->tmp, buf + p, q - p,
				       pos + p);
		p = q;
	}
	return err;
}

/*
 * Bytes [pos, pos + n) of buf to out: a sparse file keeps its zero pages
 * as holes; a pipe gets every byte.
 */
static struct kcore_error *write_out(struct kcore_output *out,
				     const unsigned char *buf, size_t n,
				     uint64_t pos)
{
	if (out->seekable)
		return write_nonzero(out, buf, n, pos);
	return kcore_write_all(NULL, out->fd, "stdout", buf, n);
}

/* n zero bytes at pos: nothing in a sparse file, zeros into a pipe (a
 * signal stops it). */
static struct kcore_error *
write_zeros(struct kcore_output *out, unsigned char *buf, uint64_t n,
	    uint64_t pos, volatile sig_atomic_t *cancel, const char *dump)
{
	struct kcore_error *err = NULL;

	if (out->seekable || !n)
		return NULL;
	memset(buf, 0, n < CHUNK ? (size_t)n : CHUNK);
	while (!err && n) {
		size_t m = n < CHUNK ? (size_t)n : CHUNK;

		err = write_out(out, buf, m, pos);
		if (!err)
			err = cancelled(cancel, dump);
		n -= m;
		pos += m;
	}
	return err;
}

/* With a hole map: decode the data runs only; zero runs stay holes in a
 * file.  Into a pipe every byte goes in order, the zero runs still
 * answered by the map without decoding. */
static struct kcore_error *
extract_map(struct kcore_istream *is, const char *dump,
	    struct kcore_output *out, unsigned char *buf,
	    volatile sig_atomic_t *cancel, kcore_extract_progress_fn progress,
	    void *arg)
{
	uint64_t size = kcore_istream_size(is), pos = 0;
	struct kcore_error *err = NULL;

	while (!err && pos < size) {
		uint64_t ds, de;

		if (out->seekable) {
			kcore_istream_next_data(is, pos, size, &ds, &de);
		} else {
			ds = pos;
			de = size;
		}
		for (pos = ds; !err && pos < de;) {
			size_t n =
				de - pos < CHUNK ? (size_t)(de - pos) : CHUNK;
			size_t got;

			err = kcore_istream_pread(is, buf, n, pos, &got);
			if (!err && got < n)
				err = kcore_error_create_at(
					KCORE_ERR_FORMAT, 0, dump, pos + got,
					"the stream ends early at "
					"decompressed offset 0x%" PRIx64,
					pos + got);
			if (!err)
				err = write_out(out, buf, n, pos);
			if (!err)
				err = cancelled(cancel, dump);
			pos += n;
			if (!err && progress)
				progress(arg, pos, size);
		}
		pos = de;
	}
	return err;
}

struct kcore_error *kcore_extract(const char *dump, const char *output,
				  bool force, volatile sig_atomic_t *cancel,
				  uint64_t *ret_size)
{
	return kcore_extract_progress(dump, output, force, cancel, NULL, NULL,
				      ret_size);
}

/*
 * An uncompressed file (a plain core the handler stored) copied extent by
 * extent: its holes stay holes in a file and are zeros in a pipe.
 */
static struct kcore_error *
copy_plain(int fd, const char *dump, struct kcore_output *out,
	   unsigned char *buf, volatile sig_atomic_t *cancel,
	   kcore_extract_progress_fn progress, void *arg, uint64_t *ret_pos)
{
	struct kcore_error *err = NULL;
	struct stat st;
	uint64_t pos = 0, size;

	if (fstat(fd, &st) < 0)
		return kcore_error_create(KCORE_ERR_OS, errno, dump,
					  "cannot stat");
	if (!S_ISREG(st.st_mode))
		return kcore_error_create(KCORE_ERR_INVALID, 0, dump,
					  "not a regular file");
	size = (uint64_t)st.st_size;
	while (!err && pos < size) {
		off_t d = lseek(fd, (off_t)pos, SEEK_DATA), h;

		/* No SEEK_DATA here: all of it is data. */
		if (d < 0 && errno == ENXIO)
			d = (off_t)size;
		else if (d < 0)
			d = (off_t)pos;
		h = lseek(fd, d, SEEK_HOLE);
		if (h < 0 || (uint64_t)h > size)
			h = (off_t)size;
		err = write_zeros(out, buf, (uint64_t)d - pos, pos, cancel,
				  dump);
		for (pos = (uint64_t)d; !err && pos < (uint64_t)h;) {
			uint64_t left = (uint64_t)h - pos;
			size_t n = left < CHUNK ? (size_t)left : CHUNK;
			ssize_t got = pread(fd, buf, n, (off_t)pos);

			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0)
				err = kcore_error_create_at(KCORE_ERR_OS, errno,
							    dump, pos,
							    "cannot read");
			else if (got == 0)
				err = kcore_error_create_at(
					KCORE_ERR_FORMAT, 0, dump, pos,
					"the file shrank while it was read");
			if (!err)
				err = write_out(out, buf, (size_t)got, pos);
			if (!err)
				err = cancelled(cancel, dump);
			if (!err) {
				pos += (uint64_t)got;
				if (progress)
					progress(arg, pos, size);
			}
		}
	}
	*ret_pos = pos;
	return err;
}

/* The stream is (on fd, open) decoded into output; both are closed. */
static struct kcore_error *extract_stream(int fd, struct kcore_istream *is,
					  const char *dump, const char *output,
					  bool force,
					  volatile sig_atomic_t *cancel,
					  kcore_extract_progress_fn progress,
					  void *arg, uint64_t *ret_size)
{
	struct kcore_output *out = NULL;
	struct kcore_error *err;
	unsigned char *buf = NULL;
	uint64_t pos = 0;

	err = kcore_output_open(
		output, &(struct kcore_output_opts){ .force = force }, &out);
	buf = err ? NULL : malloc(CHUNK);
	if (!err && !buf)
		err = &kcore_error_nomem;
	if (!err && kcore_istream_has_hole_map(is)) {
		err = extract_map(is, dump, out, buf, cancel, progress, arg);
		pos = kcore_istream_size(is);
	}
	while (!err && !kcore_istream_has_hole_map(is)) {
		size_t n;

		err = kcore_istream_read(is, buf, CHUNK, &n);
		if (err || !n)
			break;
		/* Zero pages stay holes in a file. */
		err = write_out(out, buf, n, pos);
		pos += n;
		if (!err)
			err = cancelled(cancel, dump);
		if (!err && progress)
			progress(arg, pos, kcore_istream_size(is));
	}
	if (!err)
		err = kcore_output_commit(out, pos);
	if (err)
		kcore_output_abort(out);
	else if (ret_size)
		*ret_size = pos;
	kcore_output_destroy(out);
	kcore_istream_destroy(is);
	free(buf);
	close(fd);
	return err;
}

struct kcore_error *kcore_extract_progress(const char *dump, const char *output,
					   bool force,
					   volatile sig_atomic_t *cancel,
					   kcore_extract_progress_fn progress,
					   void *arg, uint64_t *ret_size)
{
	struct kcore_istream *is = NULL;
	struct kcore_error *err;
	int fd = open(dump, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return kcore_explain_open_error(dump, errno, false, NULL);
	err = kcore_istream_open(fd, dump, &is);
	if (err) {
		kcore_istream_destroy(is);
		close(fd);
		return err;
	}
	return extract_stream(fd, is, dump, output, force, cancel, progress,
			      arg, ret_size);
}

struct kcore_error *kcore_copy_core(const char *path, const char *output,
				    bool force, volatile sig_atomic_t *cancel,
				    uint64_t *ret_size)
{
	struct kcore_istream *is = NULL;
	struct kcore_output *out = NULL;
	struct kcore_error *err;
	unsigned char *buf = NULL;
	uint64_t pos = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return kcore_explain_open_error(path, errno, false, NULL);
	err = kcore_istream_open(fd, path, &is);
	/* The file opened here, never its name again. */
	if (!err)
		return extract_stream(fd, is, path, output, force, cancel, NULL,
				      NULL, ret_size);
	kcore_istream_destroy(is);
	if (err->code != KCORE_ERR_FORMAT) {
		close(fd);
		return err;
	}
	/* Not a zstd or xz stream: a plain core. */
	kcore_error_destroy(err);
	err = kcore_output_open(
		output, &(struct kcore_output_opts){ .force = force }, &out);
	buf = err ? NULL : malloc(CHUNK);
	if (!err && !buf)
		err = &kcore_error_nomem;
	if (!err)
		err = copy_plain(fd, path, out, buf, cancel, NULL, NULL, &pos);
	if (!err)
		err = kcore_output_commit(out, pos);
	if (err && out)
		kcore_output_abort(out);
	else if (!err && ret_size)
		*ret_size = pos;
	kcore_output_destroy(out);
	free(buf);
	close(fd);
	return err;
}
