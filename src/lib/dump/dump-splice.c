// SPDX-License-Identifier: MIT
/*
 * The splice path (dump.c says when it is taken): with --hash none, an
 * output that is a plain stream into a pipe, a writer that puts the bytes
 * there unchanged (ELF, LiME: kcore_writer_ops.place) and a source whose
 * image is a file (an ELF core, /proc/kcore), the planned segments' bytes
 * are moved from the source to the pipe by splice(2), never copied
 * through this process: the kernel copies each page once, into the pipe,
 * where read(2) and write(2) copy it twice (bench/results/kcore.md:
 * against LiME, which copies once).  Holes become the stream's zeros as
 * on the other paths.
 *
 * What a splice could not move (a read error, a source without splice),
 * the volatile-first order's phases, already in memory, and the bytes a
 * shared segment holds too go through a buffer as on the copy path: read, zero
 * pages found, unreadable pages zero-filled and recorded, the same bytes.
 * Nothing looks at the spliced bytes: they count as data, their zero pages are
 * not counted (kcore_dump_stats.bytes_spliced says how many).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dump-internal.h"
#include "source-impl.h"

/* Bytes between progress reports and cancel checks; the buffer's size. */
#define SPLICE_CHUNK (1u << 20)

bool kcore_dump_use_splice_path(const struct dump *d)
{
	const char *env = getenv("KCOREDUMP_SPLICE");

	if (env && !strcmp(env, "0"))
		return false;
	return d->opts->no_hash && !d->fh && d->ops->place && !d->ops->encode &&
	       !d->smear && kcore_source_splice_fd(d->src) >= 0 &&
	       kcore_sink_can_splice(&d->w->sink);
}

/* Segment bytes [off, off + len) through the buffer: read (or taken from a
 * read phase), their zero pages found, written. */
static struct kcore_error *buffered(struct dump *d, size_t si, uint64_t off,
				    uint64_t len)
{
	struct kcore_block *b = &d->splice_buf.b;

	while (len) {
		uint64_t n = len < SPLICE_CHUNK ? len : SPLICE_CHUNK;
		struct kcore_error *err;

		b->seg = si;
		b->off = off;
		b->len = n;
		b->pages = (n + d->page - 1) / d->page;
		kcore_dump_fill_job(d, &d->splice_buf);
		kcore_dump_scan_pages(d, b);
		err = d->ops->block(d->w, b);
		if (err)
			return err;
		off += n;
		len -= n;
	}
	return NULL;
}

/*
 * Whether segment bytes [start, end) go through the buffer: a read phase
 * still in memory holds part of them, or a shared segment (the kernel
 * image inside RAM, in ELF) is made of them or is one of them, so that
 * both describe one read (kcore_plan_segment.shared).
 */
static bool buffer_them(const struct dump *d, size_t si, uint64_t start,
			uint64_t end)
{
	for (size_t i = 0; d->first && i < d->res->nread_phases; i++) {
		const struct kcore_read_phase *ph = &d->res->read_phases[i];

		if (d->first[i].buf && ph->segment == si && ph->offset < end &&
		    ph->offset + ph->length > start)
			return true;
	}
	if (d->plan->segs[si].shared)
		return true;
	for (size_t i = si + 1; d->share_buf && i < d->plan->nsegs; i++) {
		const struct kcore_plan_segment *t = &d->plan->segs[i];

		if (t->shared && t->share_seg == si && t->share_off < end &&
		    t->share_off + t->size > start)
			return true;
	}
	return false;
}

/* A hole of the source (or excluded pages) in segment si: the writer
 * told (a stream writes its zeros before the next bytes). */
static struct kcore_error *splice_hole(struct dump *d, size_t si, uint64_t off,
				       uint64_t len)
{
	return d->ops->hole(d->w, si, off, len);
}

/* Data [pos, end) of segment si, one range of the source: spliced, and
 * what did not move through the buffer. */
static struct kcore_error *splice_run(struct dump *d, size_t si, uint64_t pos,
				      uint64_t end)
{
	struct kcore_plan_segment *seg = &d->plan->segs[si];
	struct kcore_dump_stats *st = &d->res->stats;
	uint64_t at, moved, t = kcore_read_times_now();
	struct kcore_error *err = d->ops->place(d->w, si, pos, &at);
	int why;

	if (!err)
		err = kcore_sink_splice(
			&d->w->sink, at, kcore_source_splice_fd(d->src),
			kcore_extent_source(seg, pos, NULL, NULL), end - pos,
			&moved, &why);
	if (err)
		return err;
	if (moved) {
		kcore_read_times_add(&d->tm, si, pos, moved, t);
		st->bytes_read += moved;
		st->bytes_spliced += moved;
		seg->data_bytes += moved;
	}
	if (pos + moved == end)
		return NULL;
	/* Not for this source at all (a kernel without splice_read for
	 * it): buffers from now on.  Else a read error, most likely: the
	 * buffer's reads find the pages and record them. */
	if (why == EINVAL || why == ENOSYS || why == EOPNOTSUPP)
		d->splice_off = true;
	return buffered(d, si, pos + moved, end - pos - moved);
}

/* Segment bytes [start, end): spliced run by run, holes passed. */
static struct kcore_error *splice_chunk(struct dump *d, size_t si,
					uint64_t start, uint64_t end)
{
	uint64_t pos = start;

	while (pos < end) {
		uint64_t ds, de;
		struct kcore_error *err = NULL;

		kcore_extent_next(&d->ext, si, pos, &ds, &de);
		if (ds > end)
			ds = end;
		if (ds > pos) {
			d->res->stats.bytes_hole += ds - pos;
			err = splice_hole(d, si, pos, ds - pos);
		}
		if (err || ds == end)
			return err;
		if (de > end)
			de = end;
		/* An extent lies in one range of the source (extent.h), so
		 * [ds, de) is at one source offset on. */
		err = d->splice_off ? buffered(d, si, ds, de - ds)
				    : splice_run(d, si, ds, de);
		if (err)
			return err;
		pos = de;
	}
	return NULL;
}

/* A block of segment si with data, from the walk. */
static struct kcore_error *splice_block(struct dump *d, size_t si, uint64_t off,
					uint64_t len)
{
	struct kcore_error *err = buffer_them(d, si, off, off + len)
					  ? buffered(d, si, off, len)
					  : splice_chunk(d, si, off, off + len);

	d->res->stats.bytes_done += len;
	if (!err)
		err = kcore_dump_cancelled(d);
	if (!err)
		kcore_dump_progress(d, false);
	return err;
}

struct kcore_error *kcore_dump_splice(struct dump *d)
{
	struct kcore_error *err = NULL;

	if (!kcore_dump_job_alloc(&d->splice_buf, 0, SPLICE_CHUNK,
				  SPLICE_CHUNK / d->page + 1, 1))
		err = &kcore_error_nomem;
	for (size_t i = 0; !err && i < d->plan->nsegs; i++)
		err = kcore_dump_walk_segment(d, i, SPLICE_CHUNK, SPLICE_CHUNK,
					      splice_block, splice_hole);
	kcore_dump_job_free(&d->splice_buf);
	return err;
}
