/* SPDX-License-Identifier: MIT */
/*
 * Internal to the dump pipeline (dump/): the state that dump.c (the entry
 * point: setup, the order of the steps, publishing) shares with the parts
 * it is cut into, from the bottom up: dump-file-sha256.c (the output's
 * SHA-256 as it is written), dump-read.c (reading the planned segments,
 * the volatile-first order, progress and cancel), dump-pipeline.c (the
 * workers and the ordered ring of blocks), dump-copy.c (the copy
 * path) and dump-splice.c (the splice path).  A part calls only the ones before
 * it.
 */
#ifndef KCOREDUMP_DUMP_INTERNAL_H
#define KCOREDUMP_DUMP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "extent.h"
#include "file-hash.h"
#include "kcoredump/dump.h"
#include "kcoredump/kcore.h"
#include "read-times.h"
#include "smear.h"
#include "write.h"

/* Blocks of the ring that may wait for the file's SHA-256 while the
 * reads go on. */
#define FH_SLOTS 4

struct job {
	struct kcore_block b; /* what the writer is given */
	unsigned char (*digest)[KCORE_DIGEST_LEN];
	unsigned char *nonzero;	 /* per hash block */
	uint64_t fh_ticket;	 /* its bytes are hashed (file-hash.h) */
	uint64_t hlen;		 /* bytes its digests cover (scan_job) */
	bool digests_due;	 /* the copy path: digests not yet added */
	const struct dump *dump; /* for a task on the hashing thread */
	bool gap;		 /* a hole: b.seg, b.off, b.len; not read */
};

/* A read phase of the volatile-first order (res->read_phases[i]): its
 * bytes and per-page flags, kept until the address-order pass takes
 * them. */
struct first {
	unsigned char *buf, *hole, *bad;
	uint64_t t; /* kcore_read_times_now() as its read began */
};

struct dump {
	struct kcore_source *src;
	struct kcore_plan *plan;
	const struct kcore_dump_opts *opts;
	const struct kcore_writer_ops *ops;
	struct kcore_write_setup ws;
	struct kcore_writer *w;
	struct kcore_output *out;
	uint64_t page;
	uint64_t block;
	struct kcore_extents ext;
	struct kcore_read_times tm;	 /* when each part was read */
	struct kcore_smear_state *smear; /* --smear-check, or NULL */
	struct first *first;		 /* per read phase (volatile-first) */
	uint64_t copy_chunk;		 /* the copy path's block */
	struct job *copy;		 /* its jobs, used in turn */
	/* The splice path: whether splice(2) refused the source (buffers
	 * from then on), the buffer. */
	bool splice_off;
	struct job splice_buf;
	size_t ncopy, copy_next;
	/* The jobs, one per slot of the worker pool (common/pool.c). */
	struct job *ring;
	size_t nring;
	struct kcore_pool *pool; /* NULL on the copy path */
	struct kcore_seg_hasher **hashers;
	/* Per plan segment: for a shared one, its bytes and per-page hole
	 * flags, copied as its share_seg is read (else NULL). */
	unsigned char **share_buf, **share_hole;
	/* results */
	struct kcore_dump_result *res;
	size_t errors_cap;
	uint64_t last_progress;
	uint64_t t0;
	/* The file's SHA-256, computed in file order on its own thread from
	 * the bytes as they are written (file-hash.c): the writer's writes
	 * to out->fd pass through hash_io. */
	struct kcore_dump_opts wopts; /* opts, with out_io = &hash_io */
	struct kcore_io_ops hash_io;
	const struct kcore_io_ops *inner_io;
	struct kcore_file_hash *fh;
	struct job *cur;   /* the block being handed to the writer */
	uint64_t hashed;   /* bytes handed to fh, from offset 0 */
	uint64_t data;	   /* of them, written (not a sparse file's holes) */
	uint64_t holes;	   /* the plan's holes, when they are too many */
	bool out_of_order; /* a write behind: read the file back at the end */
	bool gave_up;	   /* holes outweigh the data: not hashed ... */
	bool stopped;	   /* ... from the first hole on */
};

/* ---- dump-file-sha256.c: the output's SHA-256, on the fly ---- */

/* The writer's options (d->wopts) with its writes to the output passing
 * through the file's SHA-256 (unless --hash none, which starts nothing). */
struct kcore_error *kcore_dump_hash_start(struct dump *d);
/* The in-place writer is done with the file up to segment si's byte
 * seg_off: a long hole since its last write is hashed now. */
void kcore_dump_hash_written_upto(struct dump *d, size_t si, uint64_t seg_off);
/* Job j's buffer back from the hashing thread, before it is reused. */
void kcore_dump_job_unhashed(struct dump *d, struct job *j);
/* The file's SHA-256 (size bytes) into the result, before publishing. */
struct kcore_error *kcore_dump_file_digest(struct dump *d, uint64_t size);

/* ---- dump-read.c: reading, the volatile-first order, progress ---- */

uint64_t kcore_dump_now_ns(clockid_t clock);
/* Read job j's block (b.seg, b.off, b.len): its data extents, holes as
 * zeros, unreadable pages as zeros and recorded. */
void kcore_dump_fill_job(struct dump *d, struct job *j);
/* The progress callback, at most every 200 ms unless force. */
void kcore_dump_progress(struct dump *d, bool force);
/* A step after the reads: said at once (they may take a while). */
void kcore_dump_set_phase(struct dump *d, const char *phase);
/* An "interrupted" error once the caller's cancel flag is set. */
struct kcore_error *kcore_dump_cancelled(struct dump *d);
/* The next block with data of segment si at or after off (below). */
bool kcore_dump_next_block(struct dump *d, size_t si, uint64_t off,
			   uint64_t align, uint64_t block, uint64_t *ret_start,
			   uint64_t *ret_end);
/* Segment si's bytes [off, off + len), handed on by the walk below. */
typedef struct kcore_error *kcore_dump_span_fn(struct dump *d, size_t si,
					       uint64_t off, uint64_t len);
/*
 * Segment si front to back, as the pipeline, the copy path and the splice
 * path take it: each block with data (at most block long, starting at a
 * multiple of align) to data; each run of holes before one, or at the end,
 * counted in the stats (done, and holes) and, unless empty or cancelled,
 * to hole.  A shared segment has no holes of its own: all of it goes to
 * data, block by block.
 */
struct kcore_error *kcore_dump_walk_segment(struct dump *d, size_t si,
					    uint64_t align, uint64_t block,
					    kcore_dump_span_fn *data,
					    kcore_dump_span_fn *hole);
/* The volatile-first order: which parts are read first, reading them,
 * freeing what the address-order pass did not take. */
struct kcore_error *kcore_dump_plan_first(struct dump *d);
struct kcore_error *kcore_dump_read_first(struct dump *d);
void kcore_dump_free_first(struct dump *d);

/* ---- dump-pipeline.c: the workers and the ordered ring ---- */

bool kcore_dump_job_alloc(struct job *j, size_t slot, uint64_t buflen,
			  uint64_t pages, uint64_t blocks);
void kcore_dump_job_free(struct job *j);
/* Zero pages and the digests of job j's hash blocks: the parts (a
 * block's zero pages, which hash blocks hold data, their digests), or
 * all of them (and the smear's hashes). */
void kcore_dump_scan_pages(const struct dump *d, struct kcore_block *b);
void kcore_dump_scan_blocks(struct dump *d, struct job *j);
void kcore_dump_digest_job(const struct dump *d, struct job *j);
void kcore_dump_process_job(struct dump *d, struct job *j);
/* Job j's digests to its segment's hasher. */
struct kcore_error *kcore_dump_add_hashes(struct dump *d, struct job *j);
/* The oldest job, once done, to the writer (none pending: nothing). */
struct kcore_error *kcore_dump_retire_oldest(struct dump *d);
/* Segment si through the ring: its blocks read, its holes passed. */
struct kcore_error *kcore_dump_segment(struct dump *d, size_t si);
struct kcore_error *kcore_dump_start_workers(struct dump *d, unsigned n);
void kcore_dump_stop_workers(struct dump *d);

/* ---- dump-copy.c: the copy path ---- */

bool kcore_dump_use_copy_path(const struct dump *d);
/* Every segment on this thread. */
struct kcore_error *kcore_dump_copy(struct dump *d);

/* ---- dump-splice.c: the splice path ---- */

bool kcore_dump_use_splice_path(const struct dump *d);
/* Every segment moved to the output by splice(2), on this thread. */
struct kcore_error *kcore_dump_splice(struct dump *d);

#endif
