// SPDX-License-Identifier: MIT
/*
 * LiME v1 memory images as a source: per range a packed 32-byte header
 * { u32 magic 0x4C694D45, u32 version 1, u64 s_addr, u64 e_addr
 * (inclusive), 8 reserved bytes } followed by the range's physical
 * memory.  Each range becomes one physical PT_LOAD whose data is read
 * straight from the file (its holes are the file's holes).  LiME names no
 * machine and carries no VMCOREINFO: both are looked for in the memory
 * (detect.c).  The image is physical-only.  AVML's compressed variant is
 * in read-avml.c.
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "grow.h"
#include "lime.h"
#include "read.h"

struct range {
	uint64_t offset; /* image offset */
	uint64_t at;	 /* file offset of the data */
	uint64_t size;
};

struct lime {
	struct range *ranges;
	size_t n;
	uint64_t data_start;
	char detail[32];
	/* The last SEEK_DATA/SEEK_HOLE answer: file bytes [data, hole) are
	 * data, so ranges inside need no system call of their own. */
	uint64_t data, hole;
};

static void lime_destroy(struct kcore_source *src)
{
	struct lime *l = src->reader_data;

	if (l)
		free(l->ranges);
	free(l);
	src->reader_data = NULL;
}

static const struct range *find_range(const struct lime *l, uint64_t offset)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct range *r = &l->ranges[mid];

		if (offset < r->offset)
			hi = mid;
		else if (offset - r->offset >= r->size)
			lo = mid + 1;
		else
			return r;
	}
	return NULL;
}

static struct kcore_error *lime_pread(struct kcore_source *src, void *buf,
				      size_t len, uint64_t offset, size_t *done)
{
	struct lime *l = src->reader_data;
	unsigned char *out = buf;
	size_t pos = 0;
	struct kcore_error *err = NULL;

	while (pos < len && !err) {
		uint64_t at = offset + pos;
		const struct range *r;
		size_t n, got = 0;

		if (at < l->data_start) {
			n = l->data_start - at < len - pos
				    ? (size_t)(l->data_start - at)
				    : len - pos;
			memset(out + pos, 0, n);
			pos += n;
			continue;
		}
		r = find_range(l, at);
		if (!r) {
			err = kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path, at,
				"read past the end of the image (0x%" PRIx64
				")",
				src->info.file_size);
			break;
		}
		n = r->size - (at - r->offset) < len - pos
			    ? (size_t)(r->size - (at - r->offset))
			    : len - pos;
		err = kcore_pread_all(src->io, src->fd, src->path, out + pos, n,
				      r->at + (at - r->offset), &got);
		pos += err ? got : n;
	}
	if (done)
		*done = pos;
	return err;
}

static struct kcore_error *lime_next_data(struct kcore_source *src,
					  uint64_t offset, uint64_t end,
					  uint64_t *data, uint64_t *data_end)
{
	struct lime *l = src->reader_data;

	*data = *data_end = end;
	while (offset < end) {
		const struct range *r;
		uint64_t rel, d, h;
		off_t got;

		if (offset < l->data_start) {
			if (offset < src->image_size) {
				*data = offset;
				*data_end = end < src->image_size
						    ? end
						    : src->image_size;
				return NULL;
			}
			offset = l->data_start;
			continue;
		}
		r = find_range(l, offset);
		if (!r)
			return NULL;
		rel = offset - r->offset;
		if (r->at + rel >= l->data && r->at + rel < l->hole) {
			/* Inside the data the last look found. */
			d = offset;
			h = l->hole < r->at + r->size
				    ? r->offset + (l->hole - r->at)
				    : r->offset + r->size;
			if (d >= end)
				return NULL;
			*data = d;
			*data_end = h < end ? h : end;
			return NULL;
		}
		got = lseek(src->fd, (off_t)(r->at + rel), SEEK_DATA);
		if (got < 0 && errno != ENXIO) {
			if (errno != EINVAL)
				return kcore_error_create_at(
					KCORE_ERR_OS, errno, src->path,
					r->at + rel, "SEEK_DATA failed");
			got = (off_t)(r->at + rel); /* no hole support */
		}
		if (got < 0 || (uint64_t)got >= r->at + r->size) {
			offset = r->offset + r->size;
			continue;
		}
		d = r->offset + ((uint64_t)got - r->at);
		l->data = (uint64_t)got;
		got = lseek(src->fd, got, SEEK_HOLE);
		l->hole = got < 0 ? l->data : (uint64_t)got;
		h = got < 0 || (uint64_t)got > r->at + r->size
			    ? r->offset + r->size
			    : r->offset + ((uint64_t)got - r->at);
		if (d >= end)
			return NULL;
		*data = d;
		*data_end = h < end ? h : end;
		return NULL;
	}
	return NULL;
}

struct kcore_error *
kcore_lime_range(struct kcore_source *src, const unsigned char *h, uint64_t at,
		 const char *name, uint32_t magic, uint32_t version, size_t n,
		 uint64_t prev_end, uint64_t *ret_start, uint64_t *ret_size)
{
	uint64_t s = kcore_load(h + 8, 8, false),
		 e = kcore_load(h + 16, 8, false);

	if (kcore_load(h, 4, false) != magic)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, at,
			"%s: bad magic 0x%08" PRIx64
			" in the range header at offset 0x%" PRIx64,
			name, kcore_load(h, 4, false), at);
	if (kcore_load(h + 4, 4, false) != version)
		return kcore_error_create_at(
			KCORE_ERR_UNSUPPORTED, 0, src->path, at + 4,
			"%s: version %" PRIu64
			" (this reader knows version %" PRIu32 ")",
			name, kcore_load(h + 4, 4, false), version);
	if (e < s || e - s == UINT64_MAX)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, at + 8,
			"%s: range 0x%" PRIx64 "-0x%" PRIx64
			" ends before it starts",
			name, s, e);
	if (n && (s < prev_end || prev_end == 0))
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, at + 8,
			"%s: range 0x%" PRIx64 "-0x%" PRIx64
			" is not above the previous one (ends at 0x%" PRIx64
			"); ranges must ascend without overlap",
			name, s, e, prev_end - 1);
	if (n == LIME_MAX_RANGES)
		return kcore_error_create_at(
			KCORE_ERR_UNSUPPORTED, 0, src->path, at,
			"%s: more than %u ranges", name, LIME_MAX_RANGES);
	*ret_start = s;
	*ret_size = e - s + 1;
	return NULL;
}

/* Where the ranges' data is in the image kcore_image_build() laid out. */
static void take_offsets(struct lime *l, const struct kcore_image_load *loads)
{
	for (size_t i = 0; i < l->n; i++)
		l->ranges[i].offset = loads[i].offset;
	l->data_start = loads[0].offset;
	l->data = l->hole = 0;
}

static bool lime_probe(const unsigned char *magic, size_t len)
{
	return len >= 4 && kcore_load(magic, 4, false) == LIME_MAGIC;
}

/*
 * Range headers are read through a window of the file: a file of many
 * small ranges costs one read per window, not one per range.
 */
#define WINDOW (256u << 10)

struct window {
	unsigned char *buf;
	uint64_t at; /* file offset of buf[0] */
	size_t len;
};

static struct kcore_error *read_header(struct kcore_source *src,
				       struct window *w, unsigned char *h,
				       uint64_t at)
{
	uint64_t left = src->info.file_size - at;
	size_t n = left < WINDOW ? (size_t)left : WINDOW;
	struct kcore_error *err;

	if (at < w->at || at + LIME_HEADER > w->at + w->len) {
		if (!w->buf)
			w->buf = malloc(WINDOW);
		if (!w->buf)
			return &kcore_error_nomem;
		err = kcore_fmt_read(src, w->buf, n, at);
		if (err)
			return err;
		w->at = at;
		w->len = n;
	}
	memcpy(h, w->buf + (at - w->at), LIME_HEADER);
	return NULL;
}

static struct kcore_error *lime_open(struct kcore_source *src)
{
	uint64_t file_size = src->info.file_size, at = 0, prev_end = 0;
	struct kcore_image_load *loads = NULL;
	struct lime *l = calloc(1, sizeof(*l));
	struct kcore_error *err = NULL;
	struct window w = { 0 };
	size_t cap = 0;

	if (!l)
		return &kcore_error_nomem;
	src->reader_data = l;
	while (at < file_size) {
		unsigned char h[LIME_HEADER];
		uint64_t s, e, size;

		if (file_size - at < LIME_HEADER) {
			err = kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path, at,
				"lime: truncated range header at offset "
				"0x%" PRIx64,
				at);
			goto out;
		}
		err = read_header(src, &w, h, at);
		if (err)
			goto out;
		err = kcore_lime_range(src, h, at, "lime", LIME_MAGIC,
				       LIME_VERSION, l->n, prev_end, &s, &size);
		if (err)
			goto out;
		e = s + size - 1;
		if (size > file_size - at - LIME_HEADER) {
			err = kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path, at,
				"lime: range 0x%" PRIx64 "-0x%" PRIx64
				" (0x%" PRIx64 " bytes at offset 0x%" PRIx64
				") is truncated: the file ends at 0x%" PRIx64,
				s, e, size, at + LIME_HEADER, file_size);
			goto out;
		}
		void *r = l->ranges, *ld = loads;

		err = kcore_grow2(&r, sizeof(*l->ranges), &ld, sizeof(*loads),
				  l->n, &cap);
		l->ranges = r;
		loads = ld;
		if (err)
			goto out;
		l->ranges[l->n] =
			(struct range){ .at = at + LIME_HEADER, .size = size };
		loads[l->n] =
			(struct kcore_image_load){ .paddr = s, .size = size };
		l->n++;
		prev_end = e + 1;
		at += LIME_HEADER + size;
	}
	if (!l->n) {
		err = kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path, 0,
					    "lime: no ranges");
		goto out;
	}
	err = kcore_image_build(EM_NONE, NULL, 0, loads, l->n, 4096,
				&src->image, &src->image_size,
				&src->info.file_size);
	if (err)
		goto out;
	take_offsets(l, loads);
	src->info.physical_only = true;
	snprintf(l->detail, sizeof(l->detail), "version 1, %zu range%s", l->n,
		 l->n == 1 ? "" : "s");
	src->info.format_detail = l->detail;
	src->knows_holes = true;
	/* The machine and VMCOREINFO, from the memory (the image moves). */
	err = kcore_image_identify(src, loads, l->n, 4096);
	if (!err)
		take_offsets(l, loads);
out:
	free(w.buf);
	free(loads);
	return err;
}

const struct kcore_reader_ops kcore_read_lime = {
	.name = "lime",
	.title = "LiME",
	.no_digests = "a LiME file has no place for digests",
	.probe = lime_probe,
	.open = lime_open,
	.pread = lime_pread,
	.next_data = lime_next_data,
	.destroy = lime_destroy,
};
