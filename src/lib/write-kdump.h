/* SPDX-License-Identifier: MIT */
/*
 * Internal to libkcore: the kdump-compressed (diskdump) writer and the
 * per-page codecs, used by the dump pipeline (dump.c), and the layout
 * constants the reader (read-kdump.c) shares.  Layout facts are in
 * kcoredump(8) and makedumpfile's IMPLEMENTATION.
 */
#ifndef KCOREDUMP_WRITE_KDUMP_H
#define KCOREDUMP_WRITE_KDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcoredump/dump.h"

/* disk_dump_header.status bits (makedumpfile diskdump_mod.h). */
#define KDUMP_STATUS_ZLIB	0x1
#define KDUMP_STATUS_LZO	0x2
#define KDUMP_STATUS_SNAPPY	0x4
#define KDUMP_STATUS_INCOMPLETE 0x8 /* the writer stopped early */
#define KDUMP_STATUS_ZSTD	0x20
/* page_desc.flags: the same bits. */
#define KDUMP_PAGE_ZLIB	  0x1
#define KDUMP_PAGE_LZO	  0x2
#define KDUMP_PAGE_SNAPPY 0x4
#define KDUMP_PAGE_ZSTD	  0x20

/* The header's status bit of a codec (0 for none). */
uint32_t kdump_codec_status(enum kcore_codec codec);

#define KDUMP_HEADER_SIZE    464
#define KDUMP_SUBHEADER_SIZE 104
#define KDUMP_DESC_SIZE	     24
#define FLAT_HEADER_SIZE     4096

/* One codec context per worker thread. */
struct kcore_page_codec;
struct kcore_error *kcore_page_codec_create(enum kcore_codec codec, int level,
					    size_t page,
					    struct kcore_page_codec **ret);
/* Compress one page into dst (room for one page).  Returns the stored
 * size; *ret_flags is the page_desc flag, 0 for a raw copy. */
size_t kcore_page_codec_compress(struct kcore_page_codec *c, const void *src,
				 void *dst, uint32_t *ret_flags);
void kcore_page_codec_destroy(struct kcore_page_codec *c);

typedef struct kcore_error *(*kdump_write_fn)(void *arg, uint64_t offset,
					      const void *buf, size_t len);

struct kdump_range {
	uint64_t start_pfn, end_pfn; /* exclusive */
};

struct kdump_writer {
	uint64_t page;
	uint64_t max_mapnr;
	unsigned char *bitmap1, *bitmap2;
	uint64_t bitmap_len; /* each, a multiple of page */
	uint64_t sub_blocks; /* sub-header + notes, in blocks */
	uint64_t notes_off;  /* file offset of the note copy */
	uint64_t desc_off;
	uint64_t ndesc_max; /* reserved descriptors */
	uint64_t ndesc;	    /* descriptors emitted */
	uint64_t data_off;  /* first data byte: the shared zero page */
	uint64_t data_pos;  /* next free data byte */
	uint64_t zero_size;
	uint32_t zero_flags;
	unsigned char *descbuf;
	size_t desc_fill; /* descriptors in descbuf */
	uint64_t dumped, zero_pages;
	kdump_write_fn write;
	void *arg;
};

/* Layout for these pfn ranges (ascending, disjoint), ndesc_max page
 * descriptors and notes_len bytes of notes.  Every pfn in the ranges is
 * RAM (bitmap 1) and, until excluded, dumped (bitmap 2). */
struct kcore_error *kdump_writer_init(struct kdump_writer *w, uint64_t page,
				      const struct kdump_range *ranges,
				      size_t nranges, uint64_t ndesc_max,
				      size_t notes_len, kdump_write_fn write,
				      void *arg);
void kdump_writer_deinit(struct kdump_writer *w);
/* Write the shared zero page (compressed by codec) at data_off. */
struct kcore_error *kdump_writer_zero_page(struct kdump_writer *w,
					   struct kcore_page_codec *codec);
/* The next dumped page (pfn order), its data already written at offset. */
struct kcore_error *kdump_writer_page(struct kdump_writer *w, uint64_t offset,
				      uint32_t size, uint32_t flags);
struct kcore_error *kdump_writer_zero(struct kdump_writer *w);
/* pfn is not dumped: cleared in bitmap 2. */
void kdump_writer_exclude(struct kdump_writer *w, uint64_t pfn);

struct kdump_header_info {
	char utsname[6][65]; /* sysname, nodename, release, version,
				machine, domainname */
	uint64_t timestamp_sec, timestamp_usec;
	uint32_t status;
	int32_t nr_cpus;
	uint64_t phys_base;
	uint64_t vmcoreinfo_off; /* offset in the notes, or -1 */
	uint64_t vmcoreinfo_size;
	uint32_t dump_level; /* makedumpfile's -d bits; the writer adds 1 */
};

/* Write buffered descriptors. */
struct kcore_error *kdump_writer_flush(struct kdump_writer *w);
void kdump_writer_exclude_range(struct kdump_writer *w, uint64_t start,
				uint64_t end);
/* Write block 0, the sub-header, the notes and the bitmaps; with
 * skip_len, leave out file bytes [skip_off, the end of the notes). */
struct kcore_error *kdump_writer_headers(struct kdump_writer *w,
					 const struct kdump_header_info *hi,
					 const void *notes, size_t notes_len,
					 uint64_t skip_off, uint64_t skip_len);

/* The 4096-byte flattened-format header. */
void kdump_flat_header(unsigned char out[FLAT_HEADER_SIZE]);

#endif
