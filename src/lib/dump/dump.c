// SPDX-License-Identifier: MIT
/*
 * The dump pipeline, which knows no output format: plan -> read the data
 * extents of each planned segment in large blocks (holes are never read)
 * -> worker threads find zero pages, hash each block and run the writer's
 * encode step -> the calling thread hands blocks and holes to the writer
 * in order -> publish.  The formats are writers behind one interface
 * (write.h), chosen from a table by the format.
 *
 * Unreadable pages are read as zeros, marked in the block and recorded in
 * the result; the dump goes on.
 *
 * The copy path: a regular file copied into a plain sparse file whose
 * writer puts the bytes where the plan says (ELF), with --hash none or
 * the default XXH3-128 block digests, goes without the workers: small
 * blocks (COPY_CHUNK, or one hash block when hashed) read, their zero
 * pages found (and digested) and written one after the other on the
 * calling thread, with the same reads, holes and accounting as the
 * pipeline, so the same bytes; the file's SHA-256 runs beside it on its
 * own thread.  The ring's 4 MiB blocks do not stay in the CPU's caches:
 * every byte goes to memory and back twice more than through small
 * buffers, and they are most of the dump's memory
 * (bench/results/sparse-copy.md, bench/results/hash-cost.md).
 * KCOREDUMP_COPY_PATH in the environment: 0 never takes it (the tests
 * compare both), 1 takes it also with SHA-256 block digests
 * (use_copy_path()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "extent.h"
#include "file-hash.h"
#include "kcoredump/dump.h"
#include "kcoredump/kcore.h"
#include "kcoredump/output.h"
#include "pool.h"
#include "read-order.h"
#include "read-times.h"
#include "smear.h"
#include "source-impl.h"
#include "write.h"

#define DEFAULT_BLOCK (4u << 20)
#define PROGRESS_NS   200000000ull
/* The copy path's block: cp's buffer, well inside a core's L2 cache. */
#define COPY_CHUNK (128u << 10)
/* Blocks of the ring that may wait for the file's SHA-256 while the
 * reads go on. */
#define FH_SLOTS 4
/* The copy path's blocks when hashed: the file's SHA-256 may lag this
 * many behind the copy. */
#define COPY_SLOTS 8

struct job {
	struct kcore_block b; /* what the writer is given */
	unsigned char (*digest)[KCORE_DIGEST_LEN];
	unsigned char *nonzero; /* per hash block */
	uint64_t fh_ticket;	/* its bytes are hashed (file-hash.h) */
	bool gap;		/* a hole: b.seg, b.off, b.len; not read */
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

/* ---- the output's SHA-256, on the fly ---- */

/* A sparse file's holes are hashed as zeros unless they outweigh its
 * data and this much (then not at all, unless --file-sha256). */
#define HOLE_ALLOWANCE (64ull << 20)

/*
 * Whether a sparse file's holes are worth hashing, told before anything
 * is written: the data the plan's segments hold (the source's data
 * extents, SEEK_DATA/SEEK_HOLE or the segment maps; pages --exclude
 * leaves out are holes) against the rest of their size.  SHA-256 has no
 * shortcut for zeros, so this bounds the hash to about twice the data.
 * Zero pages within the data are not known yet: they are hashed.
 */
static bool holes_affordable(struct dump *d)
{
	uint64_t data = 0, size = 0;

	if (d->opts->file_sha256_always)
		return true;
	for (size_t si = 0; si < d->plan->nsegs; si++) {
		const struct kcore_plan_segment *seg = &d->plan->segs[si];
		uint64_t off = 0, ds, de;

		if (seg->shared)
			continue;
		size += seg->size;
		kcore_extents_rewind(&d->ext);
		while (off < seg->size) {
			kcore_extent_next(&d->ext, si, off, &ds, &de);
			if (ds >= seg->size)
				break;
			if (de > seg->size)
				de = seg->size;
			data += de - ds;
			off = de;
		}
	}
	kcore_extents_rewind(&d->ext);
	d->holes = size - data;
	return size - data <= (data > HOLE_ALLOWANCE ? data : HOLE_ALLOWANCE);
}

/*
 * n bytes of buf were written at offset (a write() goes at d->hashed):
 * handed to the hashing thread in file order.  A gap before them is a
 * hole of a sparse file: zeros.  The block being written is passed by
 * reference (its slot waits for the hash before it is used again), other
 * bytes (headers, compressed frames) as a copy, zeros as a count.  A
 * write behind what was hashed (a header rewritten) ends it: the file is
 * then read back (file_digest()).
 */
static void hash_written(struct dump *d, uint64_t offset, const void *buf,
			 ssize_t n)
{
	const unsigned char *p = buf;
	struct job *j = d->cur;

	if (n <= 0)
		return;
	d->data += (uint64_t)n;
	if (!d->fh || d->out_of_order)
		return;
	if (offset < d->hashed) {
		d->out_of_order = true;
		return;
	}
	/* A hole (a sparse file's gap, or a plain stream's zeros standing
	 * for one), and too many of them: not hashed from here on. */
	if (!d->stopped && d->gave_up &&
	    (offset > d->hashed ||
	     (!(j && p >= j->b.buf && p + n <= j->b.buf + j->b.len) &&
	      kcore_is_zero(p, (size_t)n))))
		d->stopped = true;
	if (d->stopped) {
		d->hashed = offset + (uint64_t)n; /* what is out of order */
		return;
	}
	if (offset > d->hashed)
		kcore_file_hash_add_zeros(d->fh, offset - d->hashed);
	if (j && p >= j->b.buf && p + n <= j->b.buf + j->b.len) {
		j->fh_ticket = kcore_file_hash_add_ref(d->fh, p, (size_t)n);
	} else if (kcore_is_zero(p, (size_t)n)) {
		kcore_file_hash_add_zeros(d->fh, (uint64_t)n);
	} else if (kcore_file_hash_add_copy(d->fh, p, (size_t)n)) {
		d->out_of_order = true; /* out of memory: read it back */
		return;
	}
	d->hashed = offset + (uint64_t)n;
}

static ssize_t hash_pread(void *ctx, int fd, void *buf, size_t len,
			  uint64_t offset)
{
	struct dump *d = ctx;

	return d->inner_io->pread(d->inner_io->ctx, fd, buf, len, offset);
}

static ssize_t hash_pwrite(void *ctx, int fd, const void *buf, size_t len,
			   uint64_t offset)
{
	struct dump *d = ctx;
	ssize_t n = d->inner_io->pwrite(d->inner_io->ctx, fd, buf, len, offset);

	if (fd == d->out->fd)
		hash_written(d, offset, buf, n);
	return n;
}

static ssize_t hash_write(void *ctx, int fd, const void *buf, size_t len)
{
	struct dump *d = ctx;
	ssize_t n = d->inner_io->write(d->inner_io->ctx, fd, buf, len);

	if (fd == d->out->fd)
		hash_written(d, d->hashed, buf, n);
	return n;
}

/* Job j's buffers: buflen bytes (aligned to pages, which may be read
 * into directly), flags for pages and hash blocks; false: out of memory
 * (free_job() frees what was allocated). */
static bool alloc_job(struct job *j, size_t slot, uint64_t buflen,
		      uint64_t pages, uint64_t blocks)
{
	j->b.slot = slot;
	j->b.buf = aligned_alloc(4096, kcore_round_up(buflen, 4096));
	j->b.zero = calloc(pages, 1);
	j->b.hole = calloc(pages, 1);
	j->b.bad = calloc(pages, 1);
	j->digest = calloc(blocks, sizeof(*j->digest));
	j->nonzero = calloc(blocks, 1);
	return j->b.buf && j->b.zero && j->b.hole && j->b.bad && j->digest &&
	       j->nonzero;
}

static void free_job(struct job *j)
{
	free(j->b.buf);
	free(j->b.zero);
	free(j->b.hole);
	free(j->b.bad);
	free(j->digest);
	free(j->nonzero);
}

/* Job j's buffer back from the hashing thread, before it is reused. */
static void job_unhashed(struct dump *d, struct job *j)
{
	if (d->fh && j->fh_ticket)
		kcore_file_hash_wait(d->fh, j->fh_ticket);
	j->fh_ticket = 0;
}

/*
 * The file's SHA-256 once it is complete, before it is published: what
 * the hashing thread made of the bytes as they were written, the last
 * hole of a sparse file added.  Only a file written out of order (a
 * kdump file: its header, bitmaps and page descriptors, final at the end,
 * lie before the pages; an ELF file found incomplete, whose e_flags are
 * marked at the end) is read back, its holes hashed as zeros without
 * being read.  A sparse file whose holes outweigh its data (and 64 MiB)
 * is not hashed unless --file-sha256: the summary says so.
 */
static struct kcore_error *file_digest(struct dump *d, uint64_t size)
{
	struct kcore_error *err;
	uint64_t holes = size > d->data ? size - d->data : 0;

	if (d->opts->no_hash)
		return NULL;
	if (d->fh && !d->out_of_order && !d->stopped && size >= d->hashed &&
	    (!d->gave_up || size == d->hashed)) {
		kcore_file_hash_add_zeros(d->fh, size - d->hashed);
		kcore_file_hash_finish(d->fh, d->res->file_sha256);
		d->res->has_file_sha256 = true;
		return NULL;
	}
	if (!d->out_of_order) {
		/* Given up: the holes were too many (a stream wrote them). */
		d->res->file_sha256_skipped =
			d->out->seekable ? holes : d->holes;
		return NULL;
	}
	if (!d->out->seekable)
		return NULL; /* a device written out of order: unknown */
	if (!d->opts->file_sha256_always && !d->w->sink.os &&
	    holes > (d->data > HOLE_ALLOWANCE ? d->data : HOLE_ALLOWANCE)) {
		d->res->file_sha256_skipped = holes;
		return NULL;
	}
	err = kcore_file_sha256(d->out->fd, d->out->tmp, size, d->opts->cancel,
				d->res->file_sha256);
	d->res->has_file_sha256 = !err;
	return err;
}

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- workers ---- */

/* Zero pages and the digests of the job's hash blocks. */
static void process_job(struct dump *d, struct job *j)
{
	struct kcore_block *b = &j->b;
	uint64_t blocks = (b->len + KCORE_HASH_BLOCK - 1) / KCORE_HASH_BLOCK;

	for (uint64_t p = 0; p < b->pages; p++) {
		uint64_t off = p * d->page;
		uint64_t n = b->len - off < d->page ? b->len - off : d->page;

		b->zero[p] = kcore_is_zero(b->buf + off, n);
	}
	const struct kcore_plan_segment *seg = &d->plan->segs[b->seg];
	/* The hashed content of a segment with p_memsz > p_filesz goes on
	 * in zeros up to p_memsz: pad the last block (the buffer holds
	 * whole blocks). */
	uint64_t logical = seg->memsz > seg->size ? seg->memsz : seg->size;
	uint64_t hlen = logical - b->off;

	if (hlen > kcore_round_up(b->len, KCORE_HASH_BLOCK))
		hlen = kcore_round_up(b->len, KCORE_HASH_BLOCK);
	if (hlen > b->len)
		memset(b->buf + b->len, 0, hlen - b->len);
	for (uint64_t h = 0; h < blocks; h++) {
		uint64_t off = h * KCORE_HASH_BLOCK;
		uint64_t n = b->len - off < KCORE_HASH_BLOCK ? b->len - off
							     : KCORE_HASH_BLOCK;
		uint64_t hn = hlen - off < KCORE_HASH_BLOCK ? hlen - off
							    : KCORE_HASH_BLOCK;
		uint64_t p0 = off / d->page,
			 p1 = (off + n + d->page - 1) / d->page;
		bool nz = false;

		for (uint64_t p = p0; p < p1 && !nz; p++)
			nz = !b->zero[p];
		j->nonzero[h] = nz;
		if (nz && !d->opts->no_hash)
			kcore_block_digest(d->opts->block_hash, b->buf + off,
					   hn, j->digest[h]);
	}
	if (d->smear)
		kcore_smear_hash(d->smear, b);
}

/* The pool's job function: a block (holes are submitted done). */
static struct kcore_error *run_job(void *arg, unsigned worker, size_t slot)
{
	struct dump *d = arg;
	struct job *j = &d->ring[slot];

	(void)worker;
	process_job(d, j);
	if (d->ops->encode)
		d->ops->encode(d->w, &j->b);
	return NULL;
}

/* ---- in order, to the writer ---- */

static struct kcore_error *add_hashes(struct dump *d, struct job *j)
{
	uint64_t blocks = (j->b.len + KCORE_HASH_BLOCK - 1) / KCORE_HASH_BLOCK;

	for (uint64_t h = 0; h < blocks && !d->opts->no_hash; h++) {
		if (!j->nonzero[h])
			continue;
		struct kcore_error *err = kcore_seg_hasher_add(
			d->hashers[j->b.seg], j->b.off / KCORE_HASH_BLOCK + h,
			j->digest[h]);
		if (err)
			return err;
	}
	return NULL;
}

static struct kcore_error *retire_oldest(struct dump *d)
{
	struct kcore_error *err = NULL;
	struct job *j;
	size_t slot;

	if (!kcore_pool_retire(d->pool, true, &slot, &err))
		return NULL;
	if (err)
		return err;
	j = &d->ring[slot];
	d->cur = j;
	if (j->gap)
		err = d->ops->hole(d->w, j->b.seg, j->b.off, j->b.len);
	else
		err = d->ops->block(d->w, &j->b);
	d->cur = NULL;
	if (!err && !j->gap)
		err = add_hashes(d, j);
	return err;
}

/* ---- reading ---- */

static void add_read_error(struct dump *d, size_t seg, uint64_t seg_off,
			   uint64_t offset, uint64_t len,
			   const struct kcore_error *err)
{
	struct kcore_dump_result *r = d->res;
	bool corrupt = err->code == KCORE_ERR_FORMAT && !err->errnum;
	int errnum = corrupt ? EBADMSG : err->errnum ? err->errnum : EIO;

	d->res->stats.bytes_unreadable += len;
	if (r->nerrors) {
		struct kcore_read_error *last = &r->errors[r->nerrors - 1];

		if (last->offset + last->len == offset &&
		    last->errnum == errnum && last->segment == seg &&
		    last->seg_offset + last->len == seg_off) {
			last->len += len;
			return;
		}
	}
	if (r->nerrors == d->errors_cap) {
		size_t cap = d->errors_cap ? 2 * d->errors_cap : 16;
		struct kcore_read_error *e =
			realloc(r->errors, cap * sizeof(*e));

		if (!e)
			return; /* counted, not listed */
		r->errors = e;
		d->errors_cap = cap;
	}
	r->errors[r->nerrors++] = (struct kcore_read_error){
		.offset = offset,
		.len = len,
		.errnum = errnum,
		.message =
			corrupt && err->message ? strdup(err->message) : NULL,
		.segment = seg,
		.seg_offset = seg_off,
	};
}

/* Job pages overlapping job bytes [from, from + len) as read or bad. */
static void mark_pages(struct dump *d, unsigned char *flags, uint64_t from,
		       uint64_t len, unsigned char v)
{
	uint64_t last = (from + len - 1) / d->page;

	if (!flags || !len)
		return;
	for (uint64_t p = from / d->page; p <= last; p++)
		flags[p] = v;
}

/* Read [offset, offset + len) into job j at job offset at; unreadable
 * pages read as zeros and are recorded.  Only out-of-memory is fatal. */
static void read_range(struct dump *d, struct job *j, uint64_t at,
		       uint64_t offset, uint64_t len)
{
	unsigned char *buf = j->b.buf + at;
	struct kcore_error *err;
	size_t done;

	mark_pages(d, j->b.hole, at, len, 0);
	err = kcore_source_pread_partial(d->src, buf, len, offset, &done);
	d->res->stats.bytes_read += len;
	if (!err)
		return;
	kcore_error_destroy(err);
	/* Retry page by page past the failure to save what can be read. */
	for (uint64_t pos = done - done % d->page; pos < len;) {
		uint64_t n = d->page - (offset + pos) % d->page;

		if (n > len - pos)
			n = len - pos;
		err = kcore_source_pread_partial(d->src, buf + pos, n,
						 offset + pos, &done);
		if (err) {
			memset(buf + pos, 0, n);
			mark_pages(d, j->b.bad, at + pos, n, 1);
			add_read_error(d, j->b.seg, j->b.off + at + pos,
				       offset + pos, n, err);
			kcore_error_destroy(err);
		}
		pos += n;
	}
}

/* The bytes of job j (just read) that shared segments describe too. */
static void keep_shared(struct dump *d, const struct job *j)
{
	for (size_t i = j->b.seg + 1; i < d->plan->nsegs; i++) {
		const struct kcore_plan_segment *t = &d->plan->segs[i];
		uint64_t lo, hi;

		if (!t->shared || t->share_seg != j->b.seg)
			continue;
		lo = j->b.off > t->share_off ? j->b.off : t->share_off;
		hi = j->b.off + j->b.len < t->share_off + t->size
			     ? j->b.off + j->b.len
			     : t->share_off + t->size;
		if (lo >= hi)
			continue;
		memcpy(d->share_buf[i] + (lo - t->share_off),
		       j->b.buf + (lo - j->b.off), hi - lo);
		for (uint64_t p = lo; p < hi; p += d->page)
			d->share_hole[i][(p - t->share_off) / d->page] =
				j->b.hole[(p - j->b.off) / d->page];
	}
}

/* A shared segment's job: the copy kept from its share_seg. */
static void fill_shared(struct dump *d, struct job *j)
{
	uint64_t first = j->b.off / d->page;

	memcpy(j->b.buf, d->share_buf[j->b.seg] + j->b.off, j->b.len);
	memcpy(j->b.hole, d->share_hole[j->b.seg] + first, j->b.pages);
	if (j->b.bad)
		memset(j->b.bad, 0, j->b.pages);
}

/* Pages of job j's bytes [pos, end) (segment offsets) as the read
 * phase i read them: bytes and flags, *t_first its start when earlier. */
static void take_first(struct dump *d, struct job *j, size_t i, uint64_t pos,
		       uint64_t end, uint64_t *t_first)
{
	const struct kcore_read_phase *ph = &d->res->read_phases[i];
	const struct first *f = &d->first[i];

	memcpy(j->b.buf + (pos - j->b.off), f->buf + (pos - ph->offset),
	       end - pos);
	for (uint64_t p = pos; p < end; p += d->page - p % d->page) {
		uint64_t jp = (p - j->b.off) / d->page;
		uint64_t fp = (p - ph->offset) / d->page;

		j->b.hole[jp] = f->hole[fp];
		if (j->b.bad)
			j->b.bad[jp] = f->bad[fp];
	}
	if (f->t < *t_first)
		*t_first = f->t;
}

static void drop_first(struct dump *d, size_t i)
{
	struct first *f = &d->first[i];

	free(f->buf);
	free(f->hole);
	free(f->bad);
	f->buf = f->hole = f->bad = NULL;
}

/* Segment bytes [pos, end) of job j, data: from the read phases that
 * hold them (disjoint), the rest read now. */
static void read_part(struct dump *d, struct job *j, uint64_t pos, uint64_t end,
		      uint64_t *t_first)
{
	const struct kcore_plan_segment *seg = &d->plan->segs[j->b.seg];

	while (pos < end) {
		uint64_t stop = end, t;
		size_t i, n = d->first ? d->res->nread_phases : 0;

		for (i = 0; i < n; i++) {
			const struct kcore_read_phase *ph =
				&d->res->read_phases[i];

			if (ph->segment != j->b.seg || !d->first[i].buf ||
			    ph->offset + ph->length <= pos ||
			    ph->offset >= stop)
				continue;
			if (ph->offset <= pos)
				break;
			stop = ph->offset; /* read up to it */
		}
		if (i < n) {
			const struct kcore_read_phase *ph =
				&d->res->read_phases[i];

			if (ph->offset + ph->length < stop)
				stop = ph->offset + ph->length;
			take_first(d, j, i, pos, stop, t_first);
			/* The pass goes forward: its end taken, the phase is
			 * done with. */
			if (stop == ph->offset + ph->length)
				drop_first(d, i);
			pos = stop;
			continue;
		}
		t = kcore_read_times_now();
		read_range(d, j, pos - j->b.off,
			   kcore_extent_source(seg, pos, NULL, NULL),
			   stop - pos);
		kcore_read_times_add(&d->tm, j->b.seg, pos, stop - pos, t);
		pos = stop;
	}
}

static void fill_job(struct dump *d, struct job *j)
{
	const struct kcore_plan_segment *seg = &d->plan->segs[j->b.seg];
	uint64_t pos = j->b.off, end = j->b.off + j->b.len;
	uint64_t pages = (j->b.len + d->page - 1) / d->page;

	uint64_t t_first = kcore_read_times_now();

	if (seg->shared) {
		if (d->smear)
			kcore_smear_block(d->smear, j->b.slot, j->b.seg,
					  j->b.off, j->b.len, true, t_first);
		fill_shared(d, j);
		return;
	}
	memset(j->b.hole, 1, pages);
	if (j->b.bad)
		memset(j->b.bad, 0, pages);
	while (pos < end) {
		uint64_t ds, de;

		kcore_extent_next(&d->ext, j->b.seg, pos, &ds, &de);
		if (ds >= end) {
			memset(j->b.buf + (pos - j->b.off), 0, end - pos);
			d->res->stats.bytes_hole += end - pos;
			break;
		}
		if (ds > pos) {
			memset(j->b.buf + (pos - j->b.off), 0, ds - pos);
			d->res->stats.bytes_hole += ds - pos;
			pos = ds;
		}
		if (de > end)
			de = end;
		read_part(d, j, pos, de, &t_first);
		pos = de;
	}
	if (d->smear)
		kcore_smear_block(d->smear, j->b.slot, j->b.seg, j->b.off,
				  j->b.len, false, t_first);
	if (d->share_buf)
		keep_shared(d, j);
}

static void report_progress(struct dump *d, bool force)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);

	if (!d->opts->progress ||
	    (!force && now - d->last_progress < PROGRESS_NS))
		return;
	d->last_progress = now;
	d->res->stats.elapsed = (double)(now - d->t0) / 1e9;
	if (d->w)
		d->res->stats.bytes_written = kcore_sink_bytes_out(&d->w->sink);
	d->opts->progress(d->opts->progress_arg, &d->res->stats);
}

/* A step after the reads: said at once (they may take a while). */
static void set_phase(struct dump *d, const char *phase)
{
	d->res->stats.phase = phase;
	report_progress(d, true);
}

static struct kcore_error *check_cancel(struct dump *d)
{
	if (d->opts->cancel && *d->opts->cancel)
		return kcore_error_create(KCORE_ERR_INTERRUPTED, 0,
					  d->opts->output,
					  "interrupted; the partial dump was "
					  "removed");
	return NULL;
}

/* The writer's service (struct kcore_write_setup). */
static struct kcore_error *tick_for_writer(void *arg)
{
	struct kcore_error *err = check_cancel(arg);

	if (!err)
		report_progress(arg, false);
	return err;
}

/*
 * A free job in the ring, retiring the oldest when all but FH_SLOTS are in
 * use: the slot taken is then the one retired FH_SLOTS blocks ago, which
 * the file's SHA-256 is likely past.  Were every slot in use, the slot
 * taken would be the one just retired and written, and this thread would
 * wait for SHA-256 to hash it while the hashing thread then waits for the
 * next block: the two would take turns on one CPU and never overlap.
 */
static struct kcore_error *next_job(struct dump *d, struct job **ret)
{
	size_t room = d->nring - (d->fh ? FH_SLOTS : 0);

	if (kcore_pool_pending(d->pool) >= room) {
		struct kcore_error *err = retire_oldest(d);

		if (err)
			return err;
	}
	*ret = &d->ring[kcore_pool_next(d->pool)];
	job_unhashed(d, *ret);
	return NULL;
}

/* A hole has nothing to run: it is done as it is submitted, and may
 * still grow (submit_hole()) until it is retired. */
static void queue(struct dump *d, struct job *j)
{
	kcore_pool_submit(d->pool, !j->gap);
}

static struct kcore_error *submit(struct dump *d, size_t si, uint64_t off,
				  uint64_t len)
{
	struct kcore_error *err;
	struct job *j;

	err = next_job(d, &j);
	if (err)
		return err;
	j->gap = false;
	j->b.seg = si;
	j->b.off = off;
	j->b.len = len;
	j->b.pages = (len + d->page - 1) / d->page;
	fill_job(d, j);
	d->res->stats.bytes_done += len;
	queue(d, j);
	report_progress(d, false);
	return check_cancel(d);
}

/* Segment bytes [off, off + len) that are not read, in order with the
 * blocks: one hole for the writer, joined to the one before it. */
static struct kcore_error *submit_hole(struct dump *d, size_t si, uint64_t off,
				       uint64_t len)
{
	struct job *j = kcore_pool_pending(d->pool)
				? &d->ring[kcore_pool_newest(d->pool)]
				: NULL;
	struct kcore_error *err;

	d->res->stats.bytes_hole += len;
	d->res->stats.bytes_done += len;
	if (!len)
		return NULL;
	/* A dump of holes only must still see a signal. */
	err = check_cancel(d);
	if (err)
		return err;
	if (j && j->gap && j->b.seg == si && j->b.off + j->b.len == off) {
		j->b.len += len;
		return NULL;
	}
	err = next_job(d, &j);
	if (err)
		return err;
	j->gap = true;
	j->b.seg = si;
	j->b.off = off;
	j->b.len = len;
	queue(d, j);
	return NULL;
}

/*
 * The next block with data of segment si at or after off: [*ret_start,
 * *ret_end), starting at a multiple of align (not before off), at most
 * block long; false (*ret_start = the segment's end) when only holes
 * remain.  [off, *ret_start) is a hole either way.
 */
static bool next_block(struct dump *d, size_t si, uint64_t off, uint64_t align,
		       uint64_t block, uint64_t *ret_start, uint64_t *ret_end)
{
	uint64_t size = d->plan->segs[si].size, ds, de, start;

	kcore_extent_next(&d->ext, si, off, &ds, &de);
	if (ds >= size) {
		*ret_start = *ret_end = size;
		return false;
	}
	start = ds - ds % align;
	if (start < off)
		start = off;
	*ret_start = start;
	*ret_end = start + block < size ? start + block : size;
	return true;
}

static struct kcore_error *dump_segment(struct dump *d, size_t si)
{
	const struct kcore_plan_segment *seg = &d->plan->segs[si];
	uint64_t off = 0;

	/* Its source's holes were its share_seg's: every block is copied. */
	while (seg->shared && off < seg->size) {
		uint64_t end =
			off + d->block < seg->size ? off + d->block : seg->size;
		struct kcore_error *err = submit(d, si, off, end - off);

		if (err)
			return err;
		off = end;
	}
	kcore_extents_rewind(&d->ext);
	while (off < seg->size) {
		uint64_t start, end;
		bool data = next_block(d, si, off, KCORE_HASH_BLOCK, d->block,
				       &start, &end);
		struct kcore_error *err = submit_hole(d, si, off, start - off);

		if (err || !data)
			return err;
		err = submit(d, si, start, end - start);
		if (err)
			return err;
		off = end;
	}
	return NULL;
}

/* ---- the volatile-first order ---- */

/*
 * Which parts are read first (kcore_dump_opts.read_order), before the
 * read's clock starts: the walk of the page tables is not part of it.
 */
static struct kcore_error *plan_first(struct dump *d)
{
	enum kcore_read_order o = d->opts->read_order;

	if (o != KCORE_READ_ORDER_ADDRESS &&
	    o != KCORE_READ_ORDER_VOLATILE_FIRST)
		o = d->src->info.kind == KCORE_SOURCE_LIVE_KCORE
			    ? KCORE_READ_ORDER_VOLATILE_FIRST
			    : KCORE_READ_ORDER_ADDRESS;
	d->res->read_order = o;
	if (o != KCORE_READ_ORDER_VOLATILE_FIRST)
		return NULL;
	return kcore_read_phases(d->src, d->plan, d->page, KCORE_READ_FIRST_MAX,
				 &d->res->read_phases, &d->res->nread_phases);
}

/*
 * The read phases, one after the other, into memory: their data extents
 * as the pipeline reads them (unreadable pages as zeros, recorded now),
 * their cells of the time map; fill_job() takes them in address order.
 */
static struct kcore_error *read_first(struct dump *d)
{
	size_t n = d->res->nread_phases;

	if (!n)
		return NULL;
	d->first = calloc(n, sizeof(*d->first));
	if (!d->first)
		return &kcore_error_nomem;
	for (size_t i = 0; i < n; i++) {
		struct kcore_read_phase *ph = &d->res->read_phases[i];
		struct first *f = &d->first[i];
		uint64_t pages = (ph->length + d->page - 1) / d->page;
		uint64_t pos = ph->offset, end = ph->offset + ph->length;
		struct job j = { .b = { .seg = ph->segment,
					.off = ph->offset } };
		struct kcore_error *err;

		f->buf = malloc(ph->length);
		f->hole = malloc(pages);
		f->bad = calloc(pages, 1);
		if (!f->buf || !f->hole || !f->bad)
			return &kcore_error_nomem;
		memset(f->hole, 1, pages);
		j.b.buf = f->buf;
		j.b.hole = f->hole;
		j.b.bad = f->bad;
		f->t = kcore_read_times_now();
		ph->start_ns = f->t - d->tm.t0;
		kcore_extents_rewind(&d->ext);
		while (pos < end) {
			uint64_t ds, de, t = kcore_read_times_now();

			kcore_extent_next(&d->ext, ph->segment, pos, &ds, &de);
			if (ds >= end)
				break;
			if (de > end)
				de = end;
			read_range(
				d, &j, ds - ph->offset,
				kcore_extent_source(&d->plan->segs[ph->segment],
						    ds, NULL, NULL),
				de - ds);
			kcore_read_times_add(&d->tm, ph->segment, ds, de - ds,
					     t);
			ph->bytes += de - ds;
			pos = de;
		}
		ph->end_ns = kcore_read_times_now() - d->tm.t0;
		err = check_cancel(d);
		if (err)
			return err;
	}
	kcore_extents_rewind(&d->ext);
	return NULL;
}

static void free_first(struct dump *d)
{
	for (size_t i = 0; d->first && i < d->res->nread_phases; i++)
		drop_first(d, i);
	free(d->first);
	d->first = NULL;
}

/* ---- the copy path ---- */

/*
 * Taken with --hash none, and with the default XXH3-128 block digests:
 * they cost a fraction of the copy, so this thread computes them itself
 * while the file's SHA-256 runs on its own thread beside it (two threads
 * for two CPUs, and blocks small enough to stay in the caches until the
 * hashing thread takes them).  SHA-256 block digests (--hash sha256) cost
 * as much as the file's: the pipeline's workers spread them over the
 * CPUs.  KCOREDUMP_COPY_PATH=1 takes it then too, =0 never.
 */
static bool use_copy_path(const struct dump *d)
{
	const char *env = getenv("KCOREDUMP_COPY_PATH");

	if (env && !strcmp(env, "0"))
		return false;
	if (!d->opts->no_hash && d->opts->block_hash != KCORE_BLOCK_HASH_XXH3 &&
	    !(env && !strcmp(env, "1")))
		return false;
	return d->w->in_place && !d->ops->encode && d->src->info.is_regular &&
	       !d->share_buf && !d->smear;
}

/* Its blocks, allocated only when it is taken: one of COPY_CHUNK; or,
 * hashed, COPY_SLOTS of one hash block (the unit of the digests), used in
 * turn so that the file's SHA-256 can lag behind the copy. */
static struct kcore_error *copy_setup(struct dump *d)
{
	uint64_t len = kcore_round_up(
		d->opts->no_hash ? COPY_CHUNK : KCORE_HASH_BLOCK, d->page);
	uint64_t pages = len / d->page;

	d->copy_chunk = len;
	d->ncopy = d->fh ? COPY_SLOTS : 1;
	d->copy = calloc(d->ncopy, sizeof(*d->copy));
	if (!d->copy)
		return &kcore_error_nomem;
	for (size_t i = 0; i < d->ncopy; i++)
		if (!alloc_job(&d->copy[i], 0,
			       kcore_round_up(len, KCORE_HASH_BLOCK), pages, 1))
			return &kcore_error_nomem;
	return NULL;
}

/* Its blocks back from the hashing thread, then freed. */
static void copy_teardown(struct dump *d)
{
	for (size_t i = 0; d->copy && i < d->ncopy; i++)
		job_unhashed(d, &d->copy[i]);
	for (size_t i = 0; d->copy && i < d->ncopy; i++)
		free_job(&d->copy[i]);
	free(d->copy);
	d->copy = NULL;
}

/* Segment bytes [off, off + len) read, their zero pages found (and the
 * hash block hashed), written: in the next of the blocks. */
static struct kcore_error *copy_block(struct dump *d, size_t si, uint64_t off,
				      uint64_t len)
{
	struct job *j = &d->copy[d->copy_next++ % d->ncopy];
	struct kcore_block *b = &j->b;
	struct kcore_error *err;

	job_unhashed(d, j);
	b->seg = si;
	b->off = off;
	b->len = len;
	b->pages = (len + d->page - 1) / d->page;
	fill_job(d, j);
	d->res->stats.bytes_done += len;
	if (!d->opts->no_hash) {
		process_job(d, j); /* pads to whole hash blocks */
	} else {
		for (uint64_t p = 0; p < b->pages; p++) {
			uint64_t at = p * d->page;
			uint64_t n =
				b->len - at < d->page ? b->len - at : d->page;

			b->zero[p] = kcore_is_zero(b->buf + at, n);
		}
	}
	d->cur = j;
	err = d->ops->block(d->w, b);
	d->cur = NULL;
	if (!err)
		err = add_hashes(d, j);
	if (err)
		return err;
	report_progress(d, false);
	return check_cancel(d);
}

/* What the writer is not given: counted as the pipeline counts them. */
static struct kcore_error *copy_hole(struct dump *d, size_t si, uint64_t off,
				     uint64_t len)
{
	d->res->stats.bytes_hole += len;
	d->res->stats.bytes_done += len;
	if (!len)
		return NULL;
	struct kcore_error *err = check_cancel(d);

	return err ? err : d->ops->hole(d->w, si, off, len);
}

/* dump_segment()'s walk, block by block on this thread. */
static struct kcore_error *copy_segment(struct dump *d, size_t si)
{
	const struct kcore_plan_segment *seg = &d->plan->segs[si];
	uint64_t chunk = d->copy_chunk, off = 0;

	kcore_extents_rewind(&d->ext);
	while (off < seg->size) {
		uint64_t start, end;
		bool data = next_block(d, si, off, chunk, chunk, &start, &end);
		struct kcore_error *err = copy_hole(d, si, off, start - off);

		if (err || !data)
			return err;
		err = copy_block(d, si, start, end - start);
		if (err)
			return err;
		off = end;
	}
	return NULL;
}

/* ---- setup ---- */

static void stop_workers(struct dump *d)
{
	kcore_pool_destroy(d->pool);
	d->pool = NULL;
}

static unsigned thread_count(const struct kcore_dump_opts *opts)
{
	long c;

	if (opts->threads)
		return opts->threads;
	c = sysconf(_SC_NPROCESSORS_ONLN);
	return c > 0 ? (unsigned)c : 1;
}

/* The ring of jobs (two per thread and two more; and FH_SLOTS for the
 * blocks written but not yet hashed into the file's SHA-256) and the
 * hashers. */
static struct kcore_error *setup(struct dump *d, unsigned n)
{
	uint64_t pages = (d->block + d->page - 1) / d->page;
	uint64_t blocks = (d->block + KCORE_HASH_BLOCK - 1) / KCORE_HASH_BLOCK;

	d->nring = 2 * (size_t)n + 2 + (d->fh ? FH_SLOTS : 0);
	d->ring = calloc(d->nring, sizeof(*d->ring));
	d->hashers = calloc(d->plan->nsegs, sizeof(*d->hashers));
	if (!d->ring || !d->hashers)
		return &kcore_error_nomem;
	for (size_t i = 0; i < d->nring; i++)
		if (!alloc_job(&d->ring[i], i, d->block, pages, blocks))
			return &kcore_error_nomem;
	for (size_t i = 0; i < d->plan->nsegs; i++) {
		const struct kcore_plan_segment *s = &d->plan->segs[i];
		uint64_t np = (s->size + d->page - 1) / d->page;

		if (!s->shared)
			continue;
		if (!d->share_buf) {
			d->share_buf = calloc(d->plan->nsegs, sizeof(void *));
			d->share_hole = calloc(d->plan->nsegs, sizeof(void *));
			if (!d->share_buf || !d->share_hole)
				return &kcore_error_nomem;
		}
		d->share_buf[i] = calloc(1, s->size ? s->size : 1);
		d->share_hole[i] = malloc(np ? np : 1);
		if (!d->share_buf[i] || !d->share_hole[i])
			return &kcore_error_nomem;
		memset(d->share_hole[i], 1, np);
	}
	for (size_t i = 0; i < d->plan->nsegs; i++) {
		const struct kcore_plan_segment *s = &d->plan->segs[i];
		struct kcore_error *err = kcore_seg_hasher_create_with(
			d->opts->block_hash,
			s->memsz > s->size ? s->memsz : s->size,
			&d->hashers[i]);

		if (err)
			return err;
	}
	return NULL;
}

static struct kcore_error *start_workers(struct dump *d, unsigned n)
{
	return kcore_pool_create(n, d->nring, run_job, d, &d->pool);
}

static void teardown(struct dump *d)
{
	stop_workers(d);
	/* Before the blocks it may still be hashing are freed. */
	kcore_file_hash_destroy(d->fh);
	d->fh = NULL;
	if (d->w)
		d->ops->destroy(d->w);
	d->w = NULL; /* the final progress report runs after teardown */
	for (size_t i = 0; d->ring && i < d->nring; i++)
		free_job(&d->ring[i]);
	free(d->ring);
	for (size_t i = 0; d->hashers && i < d->plan->nsegs; i++)
		kcore_seg_hasher_destroy(d->hashers[i]);
	free(d->hashers);
	for (size_t i = 0; d->share_buf && i < d->plan->nsegs; i++) {
		free(d->share_buf[i]);
		free(d->share_hole[i]);
	}
	free(d->share_buf);
	free(d->share_hole);
	kcore_read_times_deinit(&d->tm);
	free_first(d);
	kcore_smear_destroy(d->smear);
	d->smear = NULL;
}

struct kcore_error *kcore_dump_output_check(const struct kcore_source *src,
					    const struct kcore_dump_opts *opts)
{
	if (src->info.kind == KCORE_SOURCE_LIVE_KCORE &&
	    !opts->allow_ram_output) {
		const char *medium = kcore_output_ram_medium(
			opts->output, opts->output_fd, NULL);

		if (medium)
			return kcore_error_create(
				KCORE_ERR_INVALID, 0,
				strcmp(opts->output, "-") ? opts->output
							  : "<stdout>",
				"is on %s, in this machine's RAM: a dump of "
				"live memory written there overwrites the free "
				"memory it is taking an image of (and may run "
				"out of room); write it to a disk or over the "
				"network, or use --allow-ram-output",
				medium);
	}
	return NULL;
}

/* What the format refuses, and the plan it can hold. */
static struct kcore_error *check(struct dump *d, struct kcore_dump_result *ret)
{
	const struct kcore_source *src = d->src;
	const struct kcore_dump_opts *opts = d->opts;
	struct kcore_error *err;

	/* ELF32: the cores of 32-bit processes, in ELF only. */
	if (src->info.big_endian || (src->info.elf_class != 64 &&
				     (src->info.elf_class != 32 || !d->ops ||
				      d->ops->format != KCORE_FORMAT_ELF)))
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
					  "dumping big-endian cores, or 32-bit "
					  "ones to another format than ELF, "
					  "is not supported");
	if (d->block % KCORE_HASH_BLOCK)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "block size must be a multiple of "
					  "1 MiB");
	if (!d->ops || (unsigned)opts->codec >= KCORE_CODEC_NUM)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "unknown output format or codec");
	err = kcore_dump_output_check(src, opts);
	if (err)
		return err;
	err = d->ops->check ? d->ops->check(opts, src, d->page) : NULL;
	if (!err && d->ops->plan)
		err = d->ops->plan(d->plan, d->page, &ret->dropped_segments);
	return err;
}

/* The digest of each segment and of the dump. */
static struct kcore_error *digests(struct dump *d)
{
	unsigned char(*segs)[KCORE_DIGEST_LEN] =
		calloc(d->plan->nsegs, sizeof(*segs));

	if (!segs)
		return &kcore_error_nomem;
	for (size_t i = 0; i < d->plan->nsegs; i++) {
		kcore_seg_hasher_finish(d->hashers[i], d->plan->segs[i].digest);
		memcpy(segs[i], d->plan->segs[i].digest, KCORE_DIGEST_LEN);
	}
	kcore_dump_digest((const unsigned char(*)[KCORE_DIGEST_LEN])segs,
			  d->plan->nsegs, d->res->digest);
	free(segs);
	return NULL;
}

struct kcore_error *kcore_dump(struct kcore_source *src,
			       struct kcore_plan *plan,
			       const struct kcore_dump_opts *opts,
			       struct kcore_dump_result *ret)
{
	struct dump d = { .src = src, .plan = plan, .opts = opts, .res = ret };
	struct kcore_dump_stats *st = &ret->stats;
	struct kcore_error *err;
	unsigned threads = thread_count(opts);
	bool copy = false;
	uint64_t t;

	memset(ret, 0, sizeof(*ret));
	d.ops = kcore_writer_find(opts->format);
	d.page = src->info.page_size ? src->info.page_size : 4096;
	d.block = opts->block_size ? opts->block_size : DEFAULT_BLOCK;
	err = check(&d, ret);
	if (err)
		goto out;
	ret->source_incomplete = src->info.incomplete;
	ret->source_unreadable_bytes = src->info.unreadable_bytes;
	ret->source_unreadable_ranges = src->info.unreadable_ranges;
	kcore_extents_init(&d.ext, src, plan);
	st->seek_data = d.ext.use_seek;
	for (size_t i = 0; i < plan->nsegs; i++)
		st->bytes_total += plan->segs[i].size;
	err = plan_first(&d);
	if (err)
		goto out;
	d.t0 = now_ns(CLOCK_MONOTONIC);
	st->start_ns = now_ns(CLOCK_REALTIME);
	err = kcore_read_times_init(&d.tm, plan, ret);
	if (err)
		goto out;
	kcore_read_times_reserve(&d.tm, plan, &d.ext);
	err = kcore_output_open(opts->output,
				&(struct kcore_output_opts){
					.force = opts->force,
					.sync = opts->sync,
					.special = opts->special_output,
				},
				&d.out);
	if (err)
		goto out;
	d.wopts = *opts;
	d.inner_io = opts->out_io ? opts->out_io : &kcore_io_default;
	d.hash_io = (struct kcore_io_ops){
		.pread = hash_pread,
		.pwrite = hash_pwrite,
		.write = hash_write,
		.ctx = &d,
	};
	if (!opts->no_hash) {
		d.wopts.out_io = &d.hash_io;
		err = kcore_file_hash_start(&d.fh);
		if (err)
			goto out;
		/*
		 * A sparse file, or a plain stream (pipe, FIFO, device) that
		 * carries the same holes as zeros: hashing them costs their
		 * size, so the rule is the same.  A .zst/.xz file or stream
		 * holds its holes in a few bytes: hashed.
		 */
		if (opts->compress == KCORE_COMPRESS_NONE)
			d.gave_up = !holes_affordable(&d);
	}
	err = setup(&d, threads);
	if (!err && opts->smear_check > 0)
		err = kcore_smear_start(src, plan, opts->smear_check, d.page,
					d.nring, &d.smear);
	d.ws = (struct kcore_write_setup){
		.src = src,
		.plan = plan,
		.opts = &d.wopts,
		.out = d.out,
		.page = d.page,
		.block = d.block,
		.slots = d.nring,
		.res = ret,
		.tick = tick_for_writer,
		.arg = &d,
	};
	if (!err)
		err = d.ops->begin(&d.ws, &d.w);
	if (!err) {
		copy = use_copy_path(&d);
		if (!copy)
			err = start_workers(&d, threads);
	}
	st->phase = "reading";
	if (!err)
		err = read_first(&d);
	if (!err && copy) {
		err = copy_setup(&d);
		for (size_t i = 0; !err && i < plan->nsegs; i++)
			err = copy_segment(&d, i);
		copy_teardown(&d);
	} else {
		for (size_t i = 0; !err && i < plan->nsegs; i++)
			err = dump_segment(&d, i);
	}
	set_phase(&d, "compressing the last blocks");
	while (!err && d.pool && kcore_pool_pending(d.pool))
		err = retire_oldest(&d);
	if (err)
		goto out;
	/* Excluded pages were skipped like holes: count them apart. */
	st->bytes_excluded = kcore_plan_excluded_bytes(plan);
	st->bytes_hole -= st->bytes_excluded < st->bytes_hole
				  ? st->bytes_excluded
				  : st->bytes_hole;
	stop_workers(&d);
	kcore_read_times_finish(&d.tm, plan);
	st->end_ns = now_ns(CLOCK_REALTIME);
	t = now_ns(CLOCK_MONOTONIC);
	st->read_seconds = (double)(t - d.t0) / 1e9;
	err = check_cancel(&d);
	if (!err && d.smear) {
		set_phase(&d, "checking the smear");
		err = kcore_smear_check(d.smear, opts->cancel, &ret->smear);
		t = now_ns(CLOCK_MONOTONIC);
	}
	if (!err)
		err = digests(&d);
	set_phase(&d, "writing the notes and headers");
	if (!err)
		err = d.ops->finish(d.w, ret);
	if (err)
		goto out;
	st->bytes_written = kcore_sink_bytes_out(&d.w->sink);
	st->finish_seconds = (double)(now_ns(CLOCK_MONOTONIC) - t) / 1e9;
	t = now_ns(CLOCK_MONOTONIC);
	set_phase(&d, "hashing the file");
	err = file_digest(&d,
			  d.w->sink.os ? st->bytes_written : d.w->sink.size);
	if (d.fh)
		st->file_hash_busy_seconds = kcore_file_hash_busy(d.fh);
	st->file_hash_seconds = (double)(now_ns(CLOCK_MONOTONIC) - t) / 1e9;
	if (err)
		goto out;
	/* Copied before the commit, so that running out of memory here
	 * publishes nothing rather than a result without them. */
	ret->digest_location = d.w->digest_location;
	ret->block_hash = opts->block_hash;
	if (d.out->path)
		ret->output_path = strdup(d.out->path);
	if (d.out->path && !ret->output_path) {
		err = &kcore_error_nomem;
		goto out;
	}
	set_phase(&d, d.opts->sync ? "syncing and publishing" : "publishing");
	t = now_ns(CLOCK_MONOTONIC);
	err = kcore_output_commit(d.out, d.w->sink.os ? st->bytes_written
						      : d.w->sink.size);
	st->publish_seconds = (double)(now_ns(CLOCK_MONOTONIC) - t) / 1e9;
	st->phase = "done";
out:
	st->elapsed = (double)(now_ns(CLOCK_MONOTONIC) - d.t0) / 1e9;
	teardown(&d);
	if (err && d.out)
		kcore_output_abort(d.out);
	kcore_output_destroy(d.out);
	kcore_file_hash_destroy(d.fh);
	if (!err)
		report_progress(&d, true);
	return err;
}

void kcore_dump_result_deinit(struct kcore_dump_result *res)
{
	for (size_t i = 0; i < res->nerrors; i++)
		free(res->errors[i].message);
	free(res->errors);
	free(res->output_path);
	free(res->read_times);
	free(res->smear.changes);
	free(res->read_phases);
	memset(res, 0, sizeof(*res));
}
