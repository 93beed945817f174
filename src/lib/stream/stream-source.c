// SPDX-License-Identifier: MIT
/*
 * ELF cores inside a .zst or .xz stream (what `dump --compress` writes,
 * or plain zstd/xz of an ELF core) as a source.  The decompressed ELF
 * headers and notes become the image; segment data is read through the
 * stream reader.  With a seek table (zstd) or index (xz) reads decode
 * only the frames they touch.  Without one the stream can only be
 * decoded front to back: reads that go backwards start decoding again
 * from the beginning, which is correct but slow (info says which case
 * applies through the format name "zstd-sequential"/"xz-sequential").
 * The hole map our writer leaves in the stream (kcoredump(8) HOLE MAP)
 * makes its zero runs holes of the image: they are never decoded, and
 * next_data skips them.  Streams without one are all data.
 */
#include <elf.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "elf-parse.h"
#include "read.h"
#include "bytes.h"
#include "kcoredump/stream.h"
#include "read.h"
#include "stream-internal.h"

/* The headers and notes we are willing to hold in memory. */
#define MAX_IMAGE (256u << 20)

struct zstream {
	struct kcore_istream *is;
	pthread_mutex_t lock;
	uint64_t restarts; /* sequential streams: decodes from the start */
	bool seekable;	   /* else read in order (next_data: all data) */
};

static void zs_destroy(struct kcore_source *src)
{
	struct zstream *z = src->reader_data;

	if (!z)
		return;
	kcore_istream_destroy(z->is);
	pthread_mutex_destroy(&z->lock);
	free(z);
	src->reader_data = NULL;
}

/* Decompressed bytes [offset, offset + len); *done short at the end. */
static struct kcore_error *zs_read(struct kcore_source *src, struct zstream *z,
				   void *buf, size_t len, uint64_t offset,
				   size_t *done)
{
	struct kcore_error *err;

	*done = 0;
	err = kcore_istream_pread(z->is, buf, len, offset, done);
	if (err && err->code == KCORE_ERR_UNSUPPORTED &&
	    !kcore_istream_seekable(z->is)) {
		/* Backwards in a sequential stream: decode from the start. */
		struct kcore_istream *is;

		kcore_error_destroy(err);
		err = kcore_istream_open(src->fd, src->path, &is);
		if (err)
			return err;
		kcore_istream_destroy(z->is);
		z->is = is;
		z->restarts++;
		err = kcore_istream_pread(z->is, buf, len, offset, done);
	}
	return err;
}

static struct kcore_error *zs_pread(struct kcore_source *src, void *buf,
				    size_t len, uint64_t offset, size_t *done)
{
	struct zstream *z = src->reader_data;
	struct kcore_error *err;
	size_t got = 0;

	pthread_mutex_lock(&z->lock);
	err = zs_read(src, z, buf, len, offset, &got);
	pthread_mutex_unlock(&z->lock);
	if (!err && got < len)
		err = kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, offset + got,
			"the compressed stream ends at decompressed offset "
			"0x%" PRIx64 ", before the ELF core does",
			offset + got);
	if (done)
		*done = got;
	return err;
}

static struct kcore_error *zs_next_data(struct kcore_source *src,
					uint64_t offset, uint64_t end,
					uint64_t *data, uint64_t *data_end)
{
	struct zstream *z = src->reader_data;

	if (!z->seekable) { /* all data: its hole map cannot be trusted */
		*data = offset < end ? offset : end;
		*data_end = end;
		return NULL;
	}
	/* The map is read-only once open: no lock needed. */
	kcore_istream_next_data(z->is, offset, end, data, data_end);
	return NULL;
}

static bool zs_probe(const unsigned char *magic, size_t len)
{
	uint32_t m = len >= 4 ? stream_get_le32(magic) : 0;

	return m == ZSTD_FRAME_MAGIC ||
	       (m & ZSTD_SKIPPABLE_MAGIC_MASK) == ZSTD_SKIPPABLE_MAGIC_BASE ||
	       (len >= XZ_MAGIC_LEN &&
		memcmp(magic, XZ_MAGIC, XZ_MAGIC_LEN) == 0);
}

/* Grow the image to hold decompressed bytes [0, need). */
static struct kcore_error *want(struct kcore_source *src, struct zstream *z,
				uint64_t need)
{
	unsigned char *p;
	size_t got;
	struct kcore_error *err;

	if (need <= src->image_size)
		return NULL;
	if (need > MAX_IMAGE)
		return kcore_error_create_at(
			KCORE_ERR_UNSUPPORTED, 0, src->path, need,
			"the compressed ELF core's headers and notes end at "
			"decompressed offset 0x%" PRIx64
			", more than the 0x%x bytes this reader holds",
			need, MAX_IMAGE);
	p = realloc(src->image, (size_t)need);
	if (!p)
		return &kcore_error_nomem;
	src->image = p;
	err = zs_read(src, z, p + src->image_size,
		      (size_t)(need - src->image_size), src->image_size, &got);
	if (err)
		return err;
	if (got < need - src->image_size)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, src->image_size + got,
			"the compressed ELF core is truncated: its headers "
			"need decompressed bytes up to 0x%" PRIx64,
			need);
	src->image_size = (size_t)need;
	return NULL;
}

static struct kcore_error *zs_open(struct kcore_source *src)
{
	struct zstream *z = calloc(1, sizeof(*z));
	struct kcore_error *err;
	const unsigned char *e;
	struct kcore_elf_ehdr eh;
	bool is64, seekable;
	uint64_t phoff, phnum, entsize, end = 0, last = 0;

	if (!z)
		return &kcore_error_nomem;
	pthread_mutex_init(&z->lock, NULL);
	src->reader_data = z;
	err = kcore_istream_open(src->fd, src->path, &z->is);
	if (err)
		return err;
	seekable = kcore_istream_seekable(z->is);
	z->seekable = seekable;
	if (kcore_istream_method(z->is) == KCORE_COMPRESS_XZ) {
		src->format_name = seekable ? "xz" : "xz-sequential";
		src->format_title =
			seekable ? "ELF in xz (indexed)"
				 : "ELF in xz (no index: sequential)";
	} else {
		src->format_name = seekable ? "zstd" : "zstd-sequential";
		src->format_title =
			seekable ? "ELF in zstd (seekable)"
				 : "ELF in zstd (no seek table: sequential)";
	}
	err = want(src, z, EI_NIDENT);
	if (err)
		return err;
	e = src->image;
	if (memcmp(e, ELFMAG, SELFMAG) != 0)
		return kcore_error_create_at(
			KCORE_ERR_UNSUPPORTED, 0, src->path, 0,
			"the %s stream does not hold an ELF core",
			kcore_compress_name(kcore_istream_method(z->is)));
	is64 = e[EI_CLASS] == ELFCLASS64;
	err = want(src, z, kcore_elf_ehdr_size(is64));
	if (err)
		return err;
	kcore_elf_decode_ehdr(src->image, &eh);
	phoff = eh.phoff;
	entsize = eh.phentsize;
	phnum = eh.phnum;
	end = src->image_size;
	if (phnum == PN_XNUM) { /* the count is in section header 0 */
		size_t shsize = kcore_elf_shdr_size(is64);

		if (eh.shoff && eh.shoff < MAX_IMAGE) {
			err = want(src, z, eh.shoff + shsize);
			if (err)
				return err;
			phnum = kcore_elf_xnum_count(&eh,
						     src->image + eh.shoff);
		}
	}
	/* The ELF parser explains bad tables; we only fetch them. */
	if (entsize == kcore_elf_phdr_size(is64) && phoff &&
	    phoff < MAX_IMAGE && phnum < MAX_IMAGE / entsize) {
		err = want(src, z, phoff + phnum * entsize);
		if (err)
			return err;
		for (uint64_t i = 0; i < phnum; i++) {
			struct kcore_elf_phdr ph;

			kcore_elf_decode_phdr(is64, eh.big,
					      src->image + phoff + i * entsize,
					      &ph);
			if (ph.offset + ph.filesz < ph.offset)
				continue;
			if (ph.type == PT_NOTE && ph.offset + ph.filesz > end)
				end = ph.offset + ph.filesz;
			if ((ph.type == PT_LOAD || ph.type == PT_NOTE) &&
			    ph.offset + ph.filesz > last)
				last = ph.offset + ph.filesz;
		}
		err = want(src, z, end);
		if (err)
			return err;
	}
	if (last < src->image_size)
		last = src->image_size;
	/* The decompressed size is the "file" size the ELF is checked
	 * against; a sequential stream's size is that of its last
	 * segment (a shorter stream fails when read). */
	src->info.file_size = seekable ? kcore_istream_size(z->is) : last;
	src->knows_holes = kcore_istream_has_hole_map(z->is);
	return NULL;
}

static bool is_stream(const struct kcore_source *src)
{
	return src->reader == &kcore_read_stream;
}

void kcore_stream_source_set_cache(struct kcore_source *src, size_t bytes)
{
	struct zstream *z = src->reader_data;

	if (!is_stream(src) || !z)
		return;
	pthread_mutex_lock(&z->lock);
	kcore_istream_set_cache_limit(z->is, bytes);
	pthread_mutex_unlock(&z->lock);
}

uint64_t kcore_stream_source_data_frame_bytes(struct kcore_source *src)
{
	struct zstream *z = src->reader_data;
	uint64_t n;

	if (!is_stream(src) || !z)
		return 0;
	pthread_mutex_lock(&z->lock);
	n = kcore_istream_data_frame_bytes(z->is);
	pthread_mutex_unlock(&z->lock);
	return n;
}

struct kcore_error *kcore_stream_source_prefetch(struct kcore_source *src,
						 volatile sig_atomic_t *stop,
						 kcore_prefetch_fn *fn,
						 void *arg)
{
	struct zstream *z = src->reader_data;
	struct kcore_prefetch *p = NULL;
	struct kcore_error *err;
	uint64_t frame = 0;
	bool more = true;

	if (!is_stream(src) || !z)
		return NULL;
	pthread_mutex_lock(&z->lock);
	more = kcore_istream_prefetch_fits(z->is);
	pthread_mutex_unlock(&z->lock);
	if (!more)
		return NULL;
	err = kcore_prefetch_create(&p);
	while (!err && more && !(stop && *stop)) {
		pthread_mutex_lock(&z->lock);
		more = kcore_istream_prefetch_next(z->is, &frame, fn != NULL);
		pthread_mutex_unlock(&z->lock);
		if (!more)
			break;
		err = kcore_istream_prefetch_decode(z->is, p, frame, !fn);
		if (err)
			break;
		if (fn) {
			kcore_istream_prefetch_publish(z->is, p, frame, fn,
						       arg);
		} else {
			pthread_mutex_lock(&z->lock);
			more = kcore_istream_prefetch_insert(z->is, p, frame);
			pthread_mutex_unlock(&z->lock);
		}
		frame++;
	}
	if (!err && fn && !(stop && *stop))
		kcore_istream_prefetch_flush(z->is, p, fn, arg);
	kcore_prefetch_destroy(p);
	return err;
}

uint64_t kcore_stream_source_decoded(const struct kcore_source *src)
{
	struct zstream *z = src->reader_data;

	return is_stream(src) && z ? kcore_istream_frames_decoded(z->is) : 0;
}

const struct kcore_reader_ops kcore_read_stream = {
	.name = "zstd", /* or a variant: format_name */
	.title = "ELF in zstd (seekable)",
	.probe = zs_probe,
	.open = zs_open,
	.pread = zs_pread,
	.next_data = zs_next_data,
	.destroy = zs_destroy,
};
