// SPDX-License-Identifier: MIT
/*
 * Reading the planned segments (dump-internal.h): a job's block from its
 * data extents (holes are never read), unreadable pages read as zeros and
 * recorded, shared segments copied from the one they share; the
 * volatile-first order's phases read first into memory; and what every
 * part of the dump checks as it goes: progress and cancel.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dump-internal.h"
#include "grow.h"
#include "read-order.h"
#include "source-impl.h"

#define PROGRESS_NS 200000000ull

uint64_t kcore_dump_now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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
	if (kcore_grow2((void **)&r->errors, sizeof(*r->errors), NULL, 0,
			r->nerrors, &d->errors_cap))
		return; /* counted, not listed */
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

void kcore_dump_fill_job(struct dump *d, struct job *j)
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

void kcore_dump_progress(struct dump *d, bool force)
{
	uint64_t now = kcore_dump_now_ns(CLOCK_MONOTONIC);

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
void kcore_dump_set_phase(struct dump *d, const char *phase)
{
	d->res->stats.phase = phase;
	kcore_dump_progress(d, true);
}

struct kcore_error *kcore_dump_cancelled(struct dump *d)
{
	if (d->opts->cancel && *d->opts->cancel)
		return kcore_error_create(KCORE_ERR_INTERRUPTED, 0,
					  d->opts->output,
					  "interrupted; the partial dump was "
					  "removed");
	return NULL;
}

/*
 * The next block with data of segment si at or after off: [*ret_start,
 * *ret_end), starting at a multiple of align (not before off), at most
 * block long; false (*ret_start = the segment's end) when only holes
 * remain.  [off, *ret_start) is a hole either way.
 */
bool kcore_dump_next_block(struct dump *d, size_t si, uint64_t off,
			   uint64_t align, uint64_t block, uint64_t *ret_start,
			   uint64_t *ret_end)
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

struct kcore_error *kcore_dump_walk_segment(struct dump *d, size_t si,
					    uint64_t align, uint64_t block,
					    kcore_dump_span_fn *data,
					    kcore_dump_span_fn *hole)
{
	const struct kcore_plan_segment *seg = &d->plan->segs[si];
	uint64_t size = seg->size, off = 0;

	/* Its source's holes were its share_seg's: every block is copied. */
	while (seg->shared && off < size) {
		uint64_t end = off + block < size ? off + block : size;
		struct kcore_error *err = data(d, si, off, end - off);

		if (err)
			return err;
		off = end;
	}
	kcore_extents_rewind(&d->ext);
	while (off < size) {
		uint64_t start, end;
		bool more = kcore_dump_next_block(d, si, off, align, block,
						  &start, &end);
		uint64_t len = start - off;
		struct kcore_error *err = NULL;

		d->res->stats.bytes_hole += len;
		d->res->stats.bytes_done += len;
		/* A dump of holes only must still see a signal. */
		if (len)
			err = kcore_dump_cancelled(d);
		if (!err && len)
			err = hole(d, si, off, len);
		if (err || !more)
			return err;
		err = data(d, si, start, end - start);
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
struct kcore_error *kcore_dump_plan_first(struct dump *d)
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
 * their cells of the time map; kcore_dump_fill_job() takes them in address
 * order.
 */
struct kcore_error *kcore_dump_read_first(struct dump *d)
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
		err = kcore_dump_cancelled(d);
		if (err)
			return err;
	}
	kcore_extents_rewind(&d->ext);
	return NULL;
}

void kcore_dump_free_first(struct dump *d)
{
	for (size_t i = 0; d->first && i < d->res->nread_phases; i++)
		drop_first(d, i);
	free(d->first);
	d->first = NULL;
}
