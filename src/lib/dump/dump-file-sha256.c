// SPDX-License-Identifier: MIT
/*
 * The output's SHA-256, on the fly (dump-internal.h): the writer's writes
 * to the output pass through hash_io and are handed to the hashing thread
 * (file-hash.c) in file order, by reference, as a copy or as a count of
 * zeros; what the file's digest is once it is complete: a file written
 * out of order is read back, its bytes handed to the hashing thread too.
 */
#include <stdlib.h>
#include <string.h>

#include "dump-internal.h"
#include "kcoredump/output.h"

/* A sparse file's holes are hashed as zeros unless they outweigh its
 * data and this much (then not at all, unless --file-sha256). */
#define HOLE_ALLOWANCE (64ull << 20)
/* A hole of the in-place writer handed over before the next write once
 * it is this long (kcore_dump_hash_written_upto()). */
#define ZEROS_AHEAD (16ull << 20)

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
 * then read back (kcore_dump_file_digest()).
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

struct kcore_error *kcore_dump_hash_start(struct dump *d)
{
	struct kcore_error *err;

	d->wopts = *d->opts;
	d->inner_io = d->opts->out_io ? d->opts->out_io : &kcore_io_default;
	d->hash_io = (struct kcore_io_ops){
		.pread = hash_pread,
		.pwrite = hash_pwrite,
		.write = hash_write,
		.ctx = d,
	};
	if (d->opts->no_hash)
		return NULL;
	d->wopts.out_io = &d->hash_io;
	/* Its first bytes are final last: whatever was hashed as it was
	 * written would be thrown away.  Read back at the end instead (on
	 * a stream, the flattened layout goes out in order: hashed). */
	if (d->ops->headers_last && d->out->seekable) {
		d->out_of_order = true;
		return NULL;
	}
	err = kcore_file_hash_start(&d->fh);
	if (err)
		return err;
	/*
	 * A sparse file, or a plain stream (pipe, FIFO, device) that
	 * carries the same holes as zeros: hashing them costs their
	 * size, so the rule is the same.  A .zst/.xz file or stream
	 * holds its holes in a few bytes: hashed.
	 */
	if (d->opts->compress == KCORE_COMPRESS_NONE)
		d->gave_up = !holes_affordable(d);
	return NULL;
}

/*
 * The in-place writer is done with the file up to segment si's byte
 * seg_off: what it left unwritten since its last write is a hole, zeros.
 * A long one goes to the hashing thread now, not with the next write, so
 * that SHA-256 hashes it while the copy goes on (the copy passes 256 MiB
 * of zero pages in 0.05 s, their SHA-256 takes 0.17 s; handed over at the
 * next write, they left the hashing thread idle, then the copy waiting).
 * Nothing the writer writes later lies there (it writes in file order);
 * the header it may rewrite at the end is before it, read back as ever.
 */
void kcore_dump_hash_written_upto(struct dump *d, size_t si, uint64_t seg_off)
{
	uint64_t end = d->plan->segs[si].out_offset + seg_off;

	if (!d->fh || !d->w->in_place || d->out_of_order || d->gave_up ||
	    d->stopped || end < d->hashed + ZEROS_AHEAD)
		return;
	kcore_file_hash_add_zeros(d->fh, end - d->hashed);
	d->hashed = end;
}

/* Job j's buffer back from the hashing thread, before it is reused. */
void kcore_dump_job_unhashed(struct dump *d, struct job *j)
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
 * marked at the end) is read back (kcore_file_hash_read()), its holes
 * hashed as zeros without being read.  A sparse file whose holes outweigh its
 * data (and 64 MiB) is not hashed unless --file-sha256: the summary says so.
 */
struct kcore_error *kcore_dump_file_digest(struct dump *d, uint64_t size)
{
	struct kcore_error *err;
	unsigned char *buf;
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
	/* Read back on a thread of its own, not what was hashed as it was
	 * written (out of order), into a block buffer of the pipeline, done
	 * with once that thread has stopped, and faulted in already. */
	kcore_file_hash_destroy(d->fh);
	d->fh = NULL;
	for (size_t i = 0; d->ring && i < d->nring; i++)
		d->ring[i].fh_ticket = 0; /* the old thread's */
	for (size_t i = 0; d->copy && i < d->ncopy; i++)
		d->copy[i].fh_ticket = 0;
	err = kcore_file_hash_start(&d->fh);
	if (err)
		return err;
	buf = d->ring && d->nring && d->block >= KCORE_FILE_HASH_READ_BUF
		      ? d->ring[0].b.buf
		      : NULL;
	err = kcore_file_hash_read(d->fh, d->out->fd, d->out->tmp, size,
				   d->opts->cancel, buf);
	if (!err)
		kcore_file_hash_finish(d->fh, d->res->file_sha256);
	d->res->has_file_sha256 = !err;
	return err;
}
