/* SPDX-License-Identifier: MIT */
/*
 * Internal to libkcore: the LiME layout both directions share, the reader
 * (read-lime.c, and read-avml.c for AVML's range headers) and the writer
 * (write-lime.c).  Per range a packed 32-byte header { u32 magic
 * 0x4C694D45 ("EMiL" on disk), u32 version 1, u64 s_addr, u64 e_addr
 * (inclusive), 8 reserved bytes }, then the range's physical memory.
 */
#ifndef KCOREDUMP_LIME_H
#define KCOREDUMP_LIME_H

#include <stddef.h>
#include <stdint.h>

#include "kcoredump/error.h"

#define LIME_MAGIC   0x4C694D45u
#define LIME_VERSION 1u
/* The range header, also AVML's. */
#define LIME_HEADER 32
/* Ranges a reader takes, at most. */
#define LIME_MAX_RANGES (1u << 20)

struct kcore_source;
/*
 * A LiME-layout range header (LiME, AVML): the LIME_HEADER bytes h read at
 * file offset at, of format name with magic and version.  prev_end is
 * where the previous range ended (n ranges before this one).  Checks the
 * magic, the version, that the range ascends without overlap and that it
 * is not one too many; gives its start and size.
 */
struct kcore_error *
kcore_lime_range(struct kcore_source *src, const unsigned char *h, uint64_t at,
		 const char *name, uint32_t magic, uint32_t version, size_t n,
		 uint64_t prev_end, uint64_t *ret_start, uint64_t *ret_size);

#endif
