/* SPDX-License-Identifier: MIT */
/*
 * Internal to the kdump writer (format/): the writer's state, which
 * write-kdump.c (the writer: plan, pages, descriptors in pfn order) and
 * write-kdump-layout.c (the file's layout, its writes, bitmaps, headers)
 * share.
 */
#ifndef KCOREDUMP_WRITE_KDUMP_H
#define KCOREDUMP_WRITE_KDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kdump.h"
#include "write.h"

struct kdump_range {
	uint64_t start_pfn, end_pfn; /* exclusive */
};

/* One per block slot: where its pages went, compressed back to back at
 * the start of the block's buffer. */
struct kdump_slot {
	struct kcore_page_codec *codec;
	unsigned char *scratch; /* a page: output that would overlap input */
	uint32_t *coff, *csize, *cflags;
	uint64_t clen;
};

struct kdump_writer {
	struct kcore_writer w;
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
	bool flat; /* flattened records on a stream */
	/* The next of the plan's excluded ranges (--exclude) to pass. */
	const struct kcore_range *next_excluded;
	struct kcore_note_blob notes;
	uint64_t meta_off; /* file offset of our note's descriptor */
	struct kdump_slot *slots;
	size_t nslots;
};

/* disk_dump_header's fields (x86_64 layout, kcoredump(8)). */
struct kdump_header_info {
	char utsname[6][65]; /* sysname, nodename, release, version,
				machine, domainname */
	uint64_t timestamp_sec, timestamp_usec;
	uint32_t status;
	int32_t nr_cpus;
	uint64_t phys_base;
	uint64_t vmcoreinfo_off; /* offset in the notes, or -1 */
	uint64_t vmcoreinfo_size;
	uint32_t dump_level; /* makedumpfile's -d bits; 1 is added */
};

static inline void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4); /* the dumped machine's byte order: x86_64 LE */
}

static inline void put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* disk_dump_header.status: known last (an incomplete dump). */
#define STATUS_OFF 424

/* A write of the kdump file: in place, or a flattened record. */
struct kcore_error *kcore_kdump_out(struct kdump_writer *k, uint64_t offset,
				    const void *buf, size_t len);
/* Layout for these pfn ranges (ascending, disjoint), ndesc_max page
 * descriptors and notes_len bytes of notes. */
struct kcore_error *kcore_kdump_layout(struct kdump_writer *k,
				       const struct kdump_range *ranges,
				       size_t nranges, uint64_t ndesc_max,
				       size_t notes_len);
/* Write the shared zero page (compressed by codec) at data_off. */
struct kcore_error *kcore_kdump_zero_page(struct kdump_writer *k,
					  struct kcore_page_codec *codec);
/* Write buffered descriptors. */
struct kcore_error *kcore_kdump_flush_descs(struct kdump_writer *k);
/* The next dumped page (pfn order), its data already written at offset. */
struct kcore_error *kcore_kdump_desc_page(struct kdump_writer *k,
					  uint64_t offset, uint32_t size,
					  uint32_t flags);
/* The next dumped page is a zero page: the shared one. */
struct kcore_error *kcore_kdump_desc_zero(struct kdump_writer *k);
/* pfn (or [start, end)) is not dumped: cleared in bitmap 2. */
void kcore_kdump_exclude(struct kdump_writer *k, uint64_t pfn);
void kcore_kdump_exclude_range(struct kdump_writer *k, uint64_t start,
			       uint64_t end);
/* Write block 0, the sub-header, the notes and the bitmaps (first: a
 * flattened file's, all but the status and our note's slot). */
struct kcore_error *
kcore_kdump_write_headers(struct kdump_writer *k,
			  const struct kdump_header_info *hi, bool first);
/* disk_dump_header's fields for this dump. */
void kcore_kdump_header_info(struct kdump_writer *k,
			     struct kdump_header_info *hi);

#endif
