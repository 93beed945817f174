/* SPDX-License-Identifier: MIT */
/*
 * Verifying a dump against the digests it carries (kcoredump's metadata
 * note, or its trailer for streamed dumps), optionally comparing its
 * content with a source; and extracting a .zst/.xz dump to a sparse ELF.
 */
#ifndef KCOREDUMP_VERIFY_H
#define KCOREDUMP_VERIFY_H

#include <signal.h>

#include "dump.h"

struct kcore_verify_segment {
	uint64_t vaddr;
	uint64_t paddr;
	bool has_paddr;
	uint64_t size;
	bool has_expected;
	unsigned char expected[KCORE_DIGEST_LEN];
	unsigned char actual[KCORE_DIGEST_LEN];
	bool match;
	/* With a source: bytes in pages that differ from it. */
	uint64_t differ_bytes;
};

struct kcore_verify_result {
	enum kcore_compress method; /* how the dump is compressed */
	/* How the format compresses its own pages (kcore_source_info.
	 * page_compression: a kdump's codecs, AVML's snappy), or NULL. */
	char *page_compression;
	/* From the metadata: note, trailer, none, or unknown. */
	enum kcore_digest_location digest_location;
	/* The block digest the digests are computed with: the metadata's
	 * (hash=), else the caller's choice (kcore_verify_opts), else
	 * XXH3-128.  block_hash_unknown: the metadata names a method this
	 * version does not know (its digests cannot match). */
	enum kcore_block_hash block_hash;
	bool block_hash_unknown;
	struct kcore_verify_segment *segs;
	size_t nsegs;
	bool has_expected;
	unsigned char expected[KCORE_DIGEST_LEN];
	unsigned char actual[KCORE_DIGEST_LEN];
	bool match;	       /* every digest present matches */
	bool compared;	       /* a source was compared */
	uint64_t differ_bytes; /* total bytes differing from the source */
	uint64_t bytes_checked;
	/* A dump made with --exclude (its note or the caller says the
	 * level): the pages
	 * the same classification of the source leaves out, zero in the
	 * dump, are not counted as differing but here. */
	unsigned exclude_level;
	uint64_t excluded_bytes;
	/* The dump says it is incomplete (kcoredump(8) COMPLETENESS): its
	 * note's unreadable bytes and ranges (its own and its source's),
	 * or makedumpfile's marks (then the amounts are 0: unknown).  The
	 * digests may all match: they are of what was written. */
	bool incomplete;
	uint64_t unreadable_bytes, unreadable_ranges;
};

/*
 * exclude_level: the --exclude level the dump was made with, for
 * comparing with source (its note's level otherwise): < 0 to take it from
 * the note, which LiME, AVML and other tools' dumps do not have.  On
 * error *ret holds nothing (deinit is not needed, and harmless).
 */
struct kcore_error *kcore_verify(const char *dump, const char *source,
				 int exclude_level,
				 volatile sig_atomic_t *cancel,
				 struct kcore_verify_result *ret);
/*
 * The same, calling progress (when not NULL) from the calling thread as
 * it goes: the bytes checked so far (read, or holes passed) and the
 * bytes there are to check (segments' data, and their whole size again
 * when source is compared).
 */
typedef void (*kcore_verify_progress_fn)(void *arg, uint64_t done,
					 uint64_t total);
struct kcore_error *kcore_verify_progress(const char *dump, const char *source,
					  int exclude_level,
					  volatile sig_atomic_t *cancel,
					  kcore_verify_progress_fn progress,
					  void *arg,
					  struct kcore_verify_result *ret);
void kcore_verify_result_deinit(struct kcore_verify_result *res);

/* Decompress a .zst/.xz dump into a sparse file, published atomically. */
struct kcore_error *kcore_extract(const char *dump, const char *output,
				  bool force, volatile sig_atomic_t *cancel,
				  uint64_t *ret_size);
/* The same, calling progress (when not NULL) after each MiB decoded
 * with the decompressed bytes done and the total (0 when the stream does
 * not say), from the calling thread. */
typedef void (*kcore_extract_progress_fn)(void *arg, uint64_t done,
					  uint64_t total);
struct kcore_error *kcore_extract_progress(const char *dump, const char *output,
					   bool force,
					   volatile sig_atomic_t *cancel,
					   kcore_extract_progress_fn progress,
					   void *arg, uint64_t *ret_size);
/*
 * The plain bytes of a stored core (a .zst/.xz stream decoded, or a plain
 * file copied) into output ("-": stdout): a file is left sparse and
 * published atomically (replacing one only with force); a pipe gets every
 * byte, zeros too.  path is opened without following a final symbolic
 * link.  *ret_size (may be NULL): the bytes written.
 */
struct kcore_error *kcore_copy_core(const char *path, const char *output,
				    bool force, volatile sig_atomic_t *cancel,
				    uint64_t *ret_size);

#endif
