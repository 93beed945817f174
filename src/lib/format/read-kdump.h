/* SPDX-License-Identifier: MIT */
/*
 * Internal to the kdump reader: what read-kdump.c (opening a dump, the
 * plain file's reader), read-kdump-pages.c (reading its pages) and
 * read-kdump-bitmap.c (bitmap 2 kept as chunks with a rank table) share.
 */
#ifndef KCOREDUMP_READ_KDUMP_H
#define KCOREDUMP_READ_KDUMP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <zstd.h>

#include "bytes.h"
#include "read.h"

#define RANK_BITS   4096 /* pfns per rank entry */
#define DESC_CHUNKS 4
#define PAGE_CACHE  16
#define BM_CHUNK    (1u << 18) /* pfns per chunk of bitmap 2 */

struct run {
	uint64_t pfn;	 /* first pfn */
	uint64_t npages; /* pfns in the run */
	uint64_t offset; /* image offset of its data */
};

struct desc_chunk {
	uint64_t index; /* first descriptor, or UINT64_MAX */
	unsigned char *data;
	size_t count;
};

/* A chunk of bitmap 2 with bits set. */
struct bm_chunk {
	uint64_t first;			    /* pfn, a multiple of BM_CHUNK */
	uint64_t rank;			    /* set bits before it */
	unsigned char *bits;		    /* BM_CHUNK / 8 bytes, + 8 */
	uint32_t sub[BM_CHUNK / RANK_BITS]; /* set bits before each block */
};

struct cached_page {
	uint64_t pfn; /* or UINT64_MAX */
	unsigned char *data;
};

struct kdump {
	struct kcore_kdump_raw raw;
	pthread_mutex_t lock;
	uint32_t block_size;
	uint64_t max_mapnr;
	uint64_t bitmap_len;  /* bytes per bitmap */
	uint64_t bitmap2_off; /* in the raw dump */
	uint64_t desc_off;
	uint64_t ndesc;
	struct bm_chunk *bm2; /* bitmap 2's chunks with bits set, by pfn */
	size_t nbm2;
	struct run *runs;
	size_t nruns;
	uint64_t data_start; /* image offset of the first run */
	struct desc_chunk chunks[DESC_CHUNKS];
	unsigned next_chunk;
	struct cached_page pages[PAGE_CACHE];
	unsigned char *cbuf; /* compressed page */
	/* The last page decoded, by descriptor: makedumpfile points every
	 * zero page at one shared copy, so most repeats are free. */
	unsigned char *last;
	uint64_t last_off;
	uint32_t last_size, last_flags;
	/* The shared zero page, once a descriptor pointing at the first
	 * page-data byte was decoded: every descriptor equal to it is a
	 * zero page, a hole to next_data (zero_state 1), or not (2). */
	int zero_state;
	uint64_t zero_off;
	uint32_t zero_size, zero_flags;
	/* Pfns [zero_from, zero_to) are known zero pages (next_data). */
	uint64_t zero_from, zero_to;
	ZSTD_DCtx *zstd;
	char detail[160]; /* src->info.format_detail */
	char codecs[40];  /* src->info.page_compression */
};

static inline uint64_t le(const unsigned char *p, unsigned size)
{
	return kcore_load(p, size, false);
}

static inline bool bit(const unsigned char *bm, uint64_t n)
{
	return bm[n >> 3] & (1u << (n & 7));
}

static inline struct kcore_error *raw_read(struct kcore_source *src,
					   struct kdump *k, void *buf,
					   size_t len, uint64_t offset)
{
	return k->raw.read(src, k->raw.ctx, buf, len, offset);
}

/* Set bits of bm in [from, to). */
uint64_t kdump_count_bits(const unsigned char *bm, uint64_t from, uint64_t to);
/* The first pfn in [from, to) whose bit equals want, or to. */
uint64_t kdump_find_bit(const unsigned char *bm, uint64_t from, uint64_t to,
			bool want);
/* Whether pfn is set in bitmap 2 (was dumped). */
bool kdump_bit2(const struct kdump *k, uint64_t pfn);
/* The descriptor index of pfn (set in bitmap 2). */
uint64_t kdump_index2(const struct kdump *k, uint64_t pfn);
/* The first pfn in [from, to) whose bit 2 equals want, or to. */
uint64_t kdump_find2(const struct kdump *k, uint64_t from, uint64_t to,
		     bool want);

#endif
