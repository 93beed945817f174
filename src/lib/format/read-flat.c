// SPDX-License-Identifier: MIT
/*
 * Flattened kdump (what makedumpfile -F and crash's pipes carry): a
 * 4096-byte header ("makedumpfile", big-endian type 1 and version 1),
 * then records of big-endian { i64 offset, i64 size } followed by size
 * bytes that belong at offset of the rearranged kdump file, ended by
 * { -1, -1 }.  As a source the file is indexed once (records sorted by
 * offset) and the kdump reader reads the rearranged dump through that
 * index, without rewriting anything.  The gaps between records are holes
 * (a stream has none of its own, so a writer leaves out nothing it
 * holds): the bitmaps must be in the records, and reading them costs
 * what the records hold, not what the header declares.
 */
#include <elf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "kdump.h"
#include "read.h"

#define FLAT_SIGNATURE "makedumpfile"
#define RECORD_HEADER  16

struct record {
	uint64_t offset; /* in the rearranged dump */
	uint64_t size;
	uint64_t at; /* where its data is in the file */
};

struct flat {
	struct record *recs; /* sorted by offset, non-overlapping */
	size_t nrecs;
};

static uint64_t be64(const unsigned char *p)
{
	return kcore_load(p, 8, true);
}

static void flat_destroy(void *ctx)
{
	struct flat *f = ctx;

	if (f)
		free(f->recs);
	free(f);
}

/* The index of the first record that ends after offset (nrecs: none). */
static size_t first_after(const struct flat *f, uint64_t offset)
{
	size_t lo = 0, hi = f->nrecs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->recs[mid].offset + f->recs[mid].size <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The gaps between records are the rearranged dump's holes. */
static uint64_t flat_next_data(struct kcore_source *src, void *ctx,
			       uint64_t offset)
{
	const struct flat *f = ctx;
	size_t i = first_after(f, offset);

	(void)src;
	if (i == f->nrecs)
		return UINT64_MAX;
	return f->recs[i].offset > offset ? f->recs[i].offset : offset;
}

/* Bytes of the rearranged dump: records where they exist, zeros between. */
static struct kcore_error *flat_read(struct kcore_source *src, void *ctx,
				     void *buf, size_t len, uint64_t offset)
{
	struct flat *f = ctx;
	unsigned char *out = buf;
	size_t lo = first_after(f, offset);

	while (len) {
		const struct record *r = lo < f->nrecs ? &f->recs[lo] : NULL;
		size_t n;

		if (!r || r->offset > offset) {
			uint64_t gap = r ? r->offset - offset : UINT64_MAX;

			n = gap < len ? (size_t)gap : len;
			memset(out, 0, n);
		} else {
			uint64_t in = offset - r->offset;
			struct kcore_error *err;

			n = r->size - in < len ? (size_t)(r->size - in) : len;
			err = kcore_fmt_read(src, out, n, r->at + in);
			if (err)
				return err;
			lo++;
		}
		out += n;
		offset += n;
		len -= n;
	}
	return NULL;
}

static int cmp_record(const void *a, const void *b)
{
	const struct record *x = a, *y = b;

	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

static struct kcore_error *index_records(struct kcore_source *src,
					 struct flat *f, uint64_t file_size,
					 uint64_t *ret_size, uint64_t *ret_held)
{
	uint64_t at = FLAT_HEADER_SIZE, size = 0, held = 0;
	size_t cap = 0;
	struct kcore_error *err;

	for (;;) {
		unsigned char h[RECORD_HEADER];
		uint64_t off, len;

		if (file_size - at < RECORD_HEADER)
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path, at,
				"flattened kdump: truncated: no end marker "
				"(record header at offset 0x%" PRIx64
				" is past the end)",
				at);
		err = kcore_fmt_read(src, h, sizeof(h), at);
		if (err)
			return err;
		off = be64(h);
		len = be64(h + 8);
		if (off == UINT64_MAX && len == UINT64_MAX)
			break;
		if (off > INT64_MAX || len > INT64_MAX || off + len > INT64_MAX)
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path, at,
				"flattened kdump: record at offset 0x%" PRIx64
				" has offset 0x%" PRIx64 " and size 0x%" PRIx64,
				at, off, len);
		if (len > file_size - at - RECORD_HEADER)
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path, at,
				"flattened kdump: record at offset 0x%" PRIx64
				" (0x%" PRIx64 " bytes) extends past the end "
				"of the file",
				at, len);
		if (len) {
			if (f->nrecs == cap) {
				size_t c = cap ? 2 * cap : 1024;
				struct record *r =
					realloc(f->recs, c * sizeof(*r));

				if (!r)
					return &kcore_error_nomem;
				f->recs = r;
				cap = c;
			}
			f->recs[f->nrecs++] = (struct record){
				.offset = off,
				.size = len,
				.at = at + RECORD_HEADER,
			};
			if (off + len > size)
				size = off + len;
			held += len;
		}
		at += RECORD_HEADER + len;
	}
	if (f->nrecs)
		qsort(f->recs, f->nrecs, sizeof(*f->recs), cmp_record);
	for (size_t i = 1; i < f->nrecs; i++) {
		const struct record *a = &f->recs[i - 1], *b = &f->recs[i];

		if (b->offset < a->offset + a->size)
			return kcore_error_create_at(
				KCORE_ERR_UNSUPPORTED, 0, src->path,
				b->at - RECORD_HEADER,
				"flattened kdump: records at offsets 0x%" PRIx64
				" and 0x%" PRIx64 " overlap; rearrange with "
				"makedumpfile -R",
				a->at - RECORD_HEADER, b->at - RECORD_HEADER);
	}
	*ret_size = size;
	*ret_held = held;
	return NULL;
}

static bool flat_probe(const unsigned char *magic, size_t len)
{
	return len >= 16 &&
	       memcmp(magic, FLAT_SIGNATURE, sizeof(FLAT_SIGNATURE) - 1) == 0 &&
	       !magic[12] && !magic[13] && !magic[14] && !magic[15];
}

static struct kcore_error *flat_open(struct kcore_source *src)
{
	unsigned char h[32];
	uint64_t file_size = src->info.file_size, size = 0, held = 0;
	struct kcore_kdump_raw raw = { .read = flat_read,
				       .next_data = flat_next_data,
				       .destroy = flat_destroy };
	struct flat *f;
	struct kcore_error *err;

	if (file_size < FLAT_HEADER_SIZE)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, file_size,
			"flattened kdump: truncated header (%" PRIu64
			" bytes, needs %u)",
			file_size, FLAT_HEADER_SIZE);
	err = kcore_fmt_read(src, h, sizeof(h), 0);
	if (err)
		return err;
	if (be64(h + 16) != 1 || be64(h + 24) != 1)
		return kcore_error_create_at(
			KCORE_ERR_UNSUPPORTED, 0, src->path, 16,
			"flattened kdump: type %" PRIu64 " version %" PRIu64
			" (this reader knows type 1 version 1)",
			be64(h + 16), be64(h + 24));
	f = calloc(1, sizeof(*f));
	if (!f)
		return &kcore_error_nomem;
	err = index_records(src, f, file_size, &size, &held);
	if (err) {
		flat_destroy(f);
		return err;
	}
	if (size >= SELFMAG) {
		unsigned char magic[SELFMAG];

		err = flat_read(src, f, magic, sizeof(magic), 0);
		if (!err && memcmp(magic, ELFMAG, SELFMAG) == 0)
			err = kcore_error_create_at(
				KCORE_ERR_UNSUPPORTED, 0, src->path, 0,
				"flattened ELF dumps are not supported; "
				"rearrange with makedumpfile -R");
		if (err) {
			flat_destroy(f);
			return err;
		}
	}
	raw.ctx = f;
	raw.size = size;
	raw.held = held;
	return kcore_kdump_open_raw(src, &raw, "flattened");
}

/* Once its records are indexed, a flattened kdump is read as a kdump. */
const struct kcore_reader_ops kcore_read_flattened = {
	.name = "flattened",
	.title = "flattened kdump (makedumpfile -F)",
	.probe = flat_probe,
	.open = flat_open,
	.pread = kcore_kdump_pread,
	.next_data = kcore_kdump_next_data,
	.destroy = kcore_kdump_destroy,
};
