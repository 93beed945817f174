/* SPDX-License-Identifier: MIT */
/*
 * Internal to libkcore: the writer interface between the dump pipeline
 * (dump.c) and the output formats (write-elf.c, write-kdump.c,
 * write-lime.c, write-avml.c), in the manner of libarchive's write
 * formats: one small table of operations per format, the format's state
 * in its own struct behind it, and the pipeline knowing no format.
 *
 * The pipeline calls, in this order:
 *   plan()    make the plan one the format can hold (optional);
 *   begin()   the writer's layout (segments' out_offset) and what comes
 *             before the data: headers, notes, index space;
 *   encode()  on a worker thread, once per block, after its zero pages
 *             were found and it was hashed (optional): per-page or
 *             per-chunk compression into the writer's state for the
 *             block's slot; it may overwrite the block's buf, which
 *             nothing but the writer's block() reads after it (kdump
 *             compresses into it);
 *   block()   in order: every block read from the source;
 *   hole()    in order, between blocks: bytes of a segment that were not
 *             read (a hole of the source, or pages --exclude left out);
 *   finish()  with the summary (final statistics, digests, unread
 *             ranges): metadata, headers written last, the end of the
 *             stream, and sink.size, the length of a file;
 *   destroy() always, also after an error.
 * Blocks and holes cover every byte of every segment exactly once, in
 * segment order.  The stream layer (stream/stream-writer.c: zstd, xz or
 * plain) is below the writers, behind struct kcore_sink.
 */
#ifndef KCOREDUMP_WRITE_H
#define KCOREDUMP_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcoredump/dump.h"
#include "kcoredump/output.h"
#include "kcoredump/stream.h"

/*
 * Where a writer's bytes go: a regular file written with pwrite (holes
 * stay file holes), or a stream (zstd, xz or plain, on a file or a pipe)
 * written in order, where a gap before an offset is written as zeros.
 */
struct kcore_sink {
	struct kcore_output *out;
	const struct kcore_io_ops *io;
	struct kcore_ostream *os; /* NULL: pwrite into out->fd */
	uint64_t pos;		  /* stream: bytes written so far */
	uint64_t written;	  /* file: bytes written so far */
	uint64_t size;		  /* file: its final size (set by the writer) */
};

/* A stream for opts->compress (and its level, threads) when stream, else
 * pwrite into the file (which must be seekable). */
struct kcore_error *kcore_sink_init(struct kcore_sink *s,
				    struct kcore_output *out,
				    const struct kcore_dump_opts *opts,
				    bool stream);
/* Bytes at offset: a stream writes zeros up to it (offset >= pos). */
struct kcore_error *kcore_sink_pwrite(struct kcore_sink *s, uint64_t offset,
				      const void *buf, size_t len);
/* Whether kcore_sink_splice() can move bytes: a plain stream into a pipe,
 * written with the system calls (kcore_ostream_can_splice). */
bool kcore_sink_can_splice(const struct kcore_sink *s);
/*
 * The len bytes of fd at src_off moved to offset of the stream by
 * splice(2) (zeros up to offset first): *moved says how many arrived.
 * Short of len with no error, the splice failed (*why: its errno) and
 * the caller writes the rest itself; an error is the output's (the
 * zeros before).
 */
struct kcore_error *kcore_sink_splice(struct kcore_sink *s, uint64_t offset,
				      int fd, uint64_t src_off, uint64_t len,
				      uint64_t *moved, int *why);
/* Zeros up to offset (a stream), nothing in a file. */
struct kcore_error *kcore_sink_pad(struct kcore_sink *s, uint64_t offset);
/* Output bytes so far (compressed for a stream). */
uint64_t kcore_sink_bytes_out(const struct kcore_sink *s);
/* Finish the stream (nothing for a file). */
struct kcore_error *kcore_sink_finish(struct kcore_sink *s);
void kcore_sink_deinit(struct kcore_sink *s);

/* A block of a segment, read from the source. */
struct kcore_block {
	size_t seg;	    /* plan segment */
	uint64_t off;	    /* segment offset: a multiple of KCORE_HASH_BLOCK */
	uint64_t len;	    /* bytes: the block size, or less at the end */
	unsigned char *buf; /* holes and unreadable pages hold zeros */
	uint64_t pages;	    /* ceil(len / page) */
	unsigned char *zero; /* per page: all zeros (also holes, unreadable) */
	unsigned char *hole; /* per page: wholly not read (hole, excluded) */
	unsigned char *bad;  /* per page: a read failed; zero-filled */
	size_t slot;	     /* < kcore_write_setup.slots: encode()'s state */
};

/* What a writer is given before it writes anything. */
struct kcore_write_setup {
	struct kcore_source *src; /* notes, VMCOREINFO, machine, page size */
	/* The segments in output order; the writer sets their out_offset,
	 * the pipeline their digest and data_bytes. */
	struct kcore_plan *plan;
	const struct kcore_dump_opts *opts;
	struct kcore_output *out; /* open; out->seekable or a pipe */
	uint64_t page;		  /* the source's page size */
	uint64_t block;		  /* bytes per block, at most */
	size_t slots;		  /* blocks in flight at once */
	/* Statistics so far, the digests and the read errors; final at
	 * finish().  The writer counts bytes_zero and segments' data_bytes
	 * as it stores them. */
	struct kcore_dump_result *res;
	/* The pipeline's service: call tick every few MiB of a long loop,
	 * for progress; it fails once the dump is cancelled. */
	struct kcore_error *(*tick)(void *arg);
	void *arg;
};

/* The state every writer starts with (its first member). */
struct kcore_writer {
	const struct kcore_writer_ops *ops;
	const struct kcore_write_setup *ws;
	struct kcore_sink sink;
	/* Where the digests are kept: note, trailer, summary (LiME, AVML:
	 * not in the file) or none (--hash none). */
	enum kcore_digest_location digest_location;
	/* block() writes each data run where the plan puts it, into a file
	 * (pwrite), and hole() writes nothing: blocks of any size page
	 * multiple may be handed to it (the pipeline's copy path, dump.c). */
	bool in_place;
};

struct kcore_writer_ops {
	enum kcore_format format;
	const char *name;
	const char *title; /* for people: "ELF", "LiME" */
	bool physical;	   /* physical RAM only: paddr in the metadata */
	bool page_codec;   /* pages compressed one by one (--codec) */
	/* Into a file, headers final only at the end are written before
	 * the data (kdump's header, bitmaps, page descriptors): the file's
	 * SHA-256 is computed by reading it back, not as it is written. */
	bool headers_last;
	/* The output options' rules, before any source is opened: refuse
	 * what the format cannot hold (KCORE_ERR_INVALID, a usage error)
	 * and settle what it implies in opts.  NULL: the stream compression
	 * follows the output's suffix unless given. */
	struct kcore_error *(*check_opts)(struct kcore_dump_opts *opts,
					  const struct kcore_opts_given *given);
	/* What this format refuses of a source (once it is open). */
	struct kcore_error *(*check)(const struct kcore_dump_opts *opts,
				     const struct kcore_source *src,
				     uint64_t page);
	/* Make the plan one the format can hold; counts dropped segments. */
	struct kcore_error *(*plan)(struct kcore_plan *plan, uint64_t page,
				    size_t *dropped);
	struct kcore_error *(*begin)(const struct kcore_write_setup *ws,
				     struct kcore_writer **ret);
	void (*encode)(struct kcore_writer *w, const struct kcore_block *b);
	struct kcore_error *(*block)(struct kcore_writer *w,
				     const struct kcore_block *b);
	struct kcore_error *(*hole)(struct kcore_writer *w, size_t seg,
				    uint64_t off, uint64_t len);
	/* Where segment seg's byte off goes in the output, once what comes
	 * before it is written (LiME's range headers): block() would write
	 * the bytes there unchanged, so the splice path (dump-splice.c)
	 * may move them there itself.  NULL: a format that changes them. */
	struct kcore_error *(*place)(struct kcore_writer *w, size_t seg,
				     uint64_t off, uint64_t *ret_offset);
	struct kcore_error *(*finish)(struct kcore_writer *w,
				      const struct kcore_dump_result *summary);
	void (*destroy)(struct kcore_writer *w);
};

extern const struct kcore_writer_ops kcore_write_elf, kcore_write_kdump,
	kcore_write_lime, kcore_write_avml;
/* The writer of a format, or NULL. */
const struct kcore_writer_ops *kcore_writer_find(enum kcore_format f);

/* ---- helpers shared by the writers (write.c) ---- */

/*
 * The metadata text of our note for the dump so far (w->digest_location
 * says where its digests are kept).  Every variable field is fixed-width
 * but the list of unreadable ranges, for which the note's slot has room
 * (kcoredump(8) COMPLETENESS), so the final text fits where the first one
 * was written.  malloc()ed; NULL when out of memory.
 */
char *kcore_write_metadata(const struct kcore_writer *w, size_t *ret_len);

/*
 * The note blob ELF and kdump files carry: the source's notes (not its
 * own KCOREDUMP note, which ours replaces), the VMCOREINFO found outside
 * the notes (old kernels), and our metadata note, whose descriptor is a
 * slot of meta_len bytes at meta_off, room for the final text.
 */
struct kcore_note_blob {
	unsigned char *data;
	size_t len;
	size_t meta_off, meta_len;
	uint64_t vmcoreinfo_off; /* in data: its descriptor; or UINT64_MAX */
	uint64_t vmcoreinfo_size;
};
struct kcore_error *kcore_write_notes(const struct kcore_writer *w,
				      struct kcore_note_blob *ret);
/* The final metadata into the blob's slot. */
struct kcore_error *kcore_write_notes_final(const struct kcore_writer *w,
					    struct kcore_note_blob *b);
void kcore_note_blob_deinit(struct kcore_note_blob *b);

/*
 * Runs of pages of a block: data (not all zeros) and zero pages.  Counts
 * the zero pages that are neither holes nor unreadable into bytes_zero and
 * the data into the segment's data_bytes, and calls data(w, byte offset in
 * the block, len) for each data run (when not NULL).
 */
struct kcore_error *
kcore_block_runs(struct kcore_writer *w, const struct kcore_block *b,
		 struct kcore_error *(*data)(struct kcore_writer *w,
					     const struct kcore_block *b,
					     uint64_t at, uint64_t len));

/* A data run written where the plan puts its segment in the output
 * (out_offset + the block's offset): for kcore_block_runs(). */
struct kcore_error *kcore_write_run_in_place(struct kcore_writer *w,
					     const struct kcore_block *b,
					     uint64_t at, uint64_t len);

static inline uint64_t kcore_round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

#endif
