// SPDX-License-Identifier: MIT
/*
 * The dump pipeline.  The calling thread reads the data extents of each
 * planned segment in large blocks (holes are never read), worker threads
 * find zero pages and hash each block, and the calling thread writes
 * finished blocks in order: into a sparse ELF file (holes and zero pages
 * stay file holes) or through a zstd/xz/plain stream.
 *
 * The ELF header, program headers and notes come first (crash reads the
 * notes from the area before the first PT_LOAD).  Our metadata note has
 * a fixed size, and the final one is written in place: with pwrite in a
 * sparse file, by rewriting the header's stored (uncompressed) frame in a
 * compressed file.  Only a pipe carries it as a trailer after the image.
 *
 * The same pipeline writes the physical-memory formats: LiME (a 32-byte
 * header before each RAM range; zero pages stay file holes as in ELF),
 * AVML (LiME's layout with each range a snappy framed stream, which the
 * workers compress in 64 KiB chunks; write-avml.c) and kdump-compressed
 * (write-kdump.c), where the workers also compress each
 * page and the in-order writer appends the page data and descriptors.
 * On a pipe a kdump is wrapped in makedumpfile's flattened format: every
 * write becomes an {offset, size} record, so the header, bitmaps and our
 * note can still be written last.
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "write-avml.h"
#include "internal.h"
#include "kcoredump/dump.h"
#include "write-kdump.h"
#include "kcoredump/output.h"

#define NOTE_NAME      "KCOREDUMP"
#define NOTE_TYPE_META 0x4b434d44 /* "KCMD": clear of CORE note types */
#define TRAILER_MAGIC  "KCDTRL01"
#define DEFAULT_BLOCK  (4u << 20)
#define PROGRESS_NS    200000000ull

struct job {
	size_t seg;
	uint64_t seg_off; /* multiple of KCORE_HASH_BLOCK */
	uint64_t len;
	unsigned char *buf;
	unsigned char *zero; /* per page */
	unsigned char (*digest)[KCORE_DIGEST_LEN];
	unsigned char *nonzero; /* per hash block */
	int state;		/* 0 free, 1 submitted, 2 processed */
	/* Physical formats: pages wholly in source holes, unreadable. */
	unsigned char *hole, *bad;
	/* kdump: compressed pages back to back in cbuf; AVML: its
	 * framed chunks. */
	unsigned char *cbuf;
	uint32_t *coff, *csize, *cflags;
	uint64_t clen;
};

struct worker_arg {
	struct dump *d;
	struct kcore_page_codec *codec;
};

struct dump {
	enum kcore_format format;
	struct kcore_source *src;
	struct kcore_plan *plan;
	const struct kcore_dump_opts *opts;
	uint64_t page;
	uint64_t block;
	bool use_seek;
	/* workers */
	pthread_mutex_t lock;
	pthread_cond_t work_cv, done_cv;
	struct job *ring;
	size_t nring;
	uint64_t next_work, submitted, retired;
	bool stop;
	pthread_t *threads;
	unsigned nthreads;
	/* output */
	struct kcore_output *out;
	struct kcore_ostream *os;
	bool sparse;	     /* pwrite into a seekable uncompressed file */
	bool rewritable;     /* compressed file: the header is a stored frame */
	uint64_t header_out; /* where that frame starts in the file */
	uint64_t pos;	     /* stream position */
	uint64_t total;	     /* size of the ELF image */
	unsigned char *header;
	size_t header_len;
	size_t meta_off; /* offset of our note's descriptor */
	size_t meta_len; /* its reserved size */
	struct kcore_seg_hasher **hashers;
	struct worker_arg *wargs;
	unsigned nwargs;
	/* kdump */
	struct kdump_writer kw;
	bool kw_ready;
	bool flat; /* flattened records on a stream */
	size_t cur_seg;
	uint64_t cur_pfn;
	unsigned char *notes; /* note blob (kdump) */
	size_t notes_len;
	uint64_t vmcoreinfo_off, vmcoreinfo_size; /* within the blob */
	/* LiME: headers written so far */
	size_t lime_next;
	/* AVML: the range being written (those before it are finished),
	 * its bytes so far, where its framed stream starts; the chunk of
	 * AVML_CHUNK_DATA zero bytes, and room for a shorter one. */
	size_t avml_seg;
	bool avml_open;
	uint64_t avml_pos, avml_stream;
	unsigned char *avml_zero, *avml_tmp;
	size_t avml_zero_len;
	/* extent cache */
	size_t ext_seg;
	uint64_t ext_start, ext_end;
	bool ext_valid;
	/* results */
	struct kcore_dump_result *res;
	size_t errors_cap;
	uint64_t last_progress;
	uint64_t t0;
};

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* ---- workers ---- */

static void process_job(struct dump *d, struct job *j)
{
	uint64_t pages = (j->len + d->page - 1) / d->page;
	uint64_t blocks = (j->len + KCORE_HASH_BLOCK - 1) / KCORE_HASH_BLOCK;

	for (uint64_t p = 0; p < pages; p++) {
		uint64_t off = p * d->page;
		uint64_t n = j->len - off < d->page ? j->len - off : d->page;

		j->zero[p] = kcore_is_zero(j->buf + off, n);
	}
	const struct kcore_plan_segment *seg = &d->plan->segs[j->seg];
	/* The hashed content of a segment with p_memsz > p_filesz goes on
	 * in zeros up to p_memsz: pad the last block (the buffer holds
	 * whole blocks). */
	uint64_t logical = seg->memsz > seg->size ? seg->memsz : seg->size;
	uint64_t hlen = logical - j->seg_off;

	if (hlen > round_up(j->len, KCORE_HASH_BLOCK))
		hlen = round_up(j->len, KCORE_HASH_BLOCK);
	if (hlen > j->len)
		memset(j->buf + j->len, 0, hlen - j->len);
	for (uint64_t b = 0; b < blocks; b++) {
		uint64_t off = b * KCORE_HASH_BLOCK;
		uint64_t n = j->len - off < KCORE_HASH_BLOCK ? j->len - off
							     : KCORE_HASH_BLOCK;
		uint64_t h = hlen - off < KCORE_HASH_BLOCK ? hlen - off
							   : KCORE_HASH_BLOCK;
		uint64_t p0 = off / d->page,
			 p1 = (off + n + d->page - 1) / d->page;
		bool nz = false;

		for (uint64_t p = p0; p < p1 && !nz; p++)
			nz = !j->zero[p];
		j->nonzero[b] = nz;
		if (nz && !d->opts->no_hash)
			kcore_sha256(j->buf + off, h, j->digest[b]);
	}
}

/* kdump: compress the pages with data, back to back. */
static void compress_job(struct dump *d, struct job *j,
			 struct kcore_page_codec *codec)
{
	uint64_t pages = j->len / d->page;

	j->clen = 0;
	for (uint64_t p = 0; p < pages; p++) {
		if (j->zero[p])
			continue;
		j->coff[p] = (uint32_t)j->clen;
		j->csize[p] = (uint32_t)kcore_page_codec_compress(
			codec, j->buf + p * d->page, j->cbuf + j->clen,
			&j->cflags[p]);
		j->clen += j->csize[p];
	}
}

/* AVML: the job as framed chunks; a chunk of zero pages is copied. */
static void avml_compress_job(struct dump *d, struct job *j)
{
	j->clen = 0;
	for (uint64_t off = 0; off < j->len; off += AVML_CHUNK_DATA) {
		uint64_t n = j->len - off < AVML_CHUNK_DATA ? j->len - off
							    : AVML_CHUNK_DATA;
		bool zero = true;

		for (uint64_t p = off / d->page;
		     zero && p <= (off + n - 1) / d->page; p++)
			zero = j->zero[p];
		if (zero && n == AVML_CHUNK_DATA) {
			memcpy(j->cbuf + j->clen, d->avml_zero,
			       d->avml_zero_len);
			j->clen += d->avml_zero_len;
		} else {
			j->clen += kcore_avml_chunk(j->buf + off, (size_t)n,
						    j->cbuf + j->clen);
		}
	}
}

static void *worker(void *arg)
{
	struct worker_arg *wa = arg;
	struct dump *d = wa->d;

	pthread_mutex_lock(&d->lock);
	for (;;) {
		struct job *j;

		while (!d->stop && d->next_work == d->submitted)
			pthread_cond_wait(&d->work_cv, &d->lock);
		if (d->stop)
			break;
		j = &d->ring[d->next_work++ % d->nring];
		pthread_mutex_unlock(&d->lock);
		process_job(d, j);
		if (d->format == KCORE_FORMAT_AVML)
			avml_compress_job(d, j);
		else if (wa->codec)
			compress_job(d, j, wa->codec);
		pthread_mutex_lock(&d->lock);
		j->state = 2;
		pthread_cond_broadcast(&d->done_cv);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* ---- output ---- */

static struct kcore_error *out_write(struct dump *d, uint64_t offset,
				     const void *buf, size_t len)
{
	struct kcore_error *err;

	if (d->sparse) {
		err = kcore_pwrite_all(d->opts->out_io, d->out->fd, d->out->tmp,
				       buf, len, offset);
	} else if (d->flat) {
		/* A flattened record: big-endian offset and size, data. */
		unsigned char rec[16];

		for (int i = 0; i < 8; i++) {
			rec[i] = (unsigned char)(offset >> (56 - 8 * i));
			rec[8 + i] =
				(unsigned char)((uint64_t)len >> (56 - 8 * i));
		}
		err = kcore_ostream_write(d->os, rec, sizeof(rec));
		if (!err)
			err = kcore_ostream_write(d->os, buf, len);
	} else {
		if (offset > d->pos) {
			err = kcore_ostream_write_zeros(d->os, offset - d->pos);
			if (err)
				return err;
			d->pos = offset;
		}
		err = kcore_ostream_write(d->os, buf, len);
		d->pos += len;
	}
	if (!err)
		d->res->stats.bytes_written += len;
	return err;
}

static struct kcore_error *kdump_write_cb(void *arg, uint64_t offset,
					  const void *buf, size_t len)
{
	return out_write(arg, offset, buf, len);
}

static uint64_t seg_pfn(const struct dump *d, size_t si, bool end)
{
	const struct kcore_plan_segment *s = &d->plan->segs[si];

	return (s->paddr + (end ? s->size : 0)) / d->page;
}

/* kdump: pfns the pipeline skipped (holes) before (seg, pfn) are not
 * dumped: cleared in bitmap 2, no descriptor. */
static void kdump_skip_to(struct dump *d, size_t seg, uint64_t pfn)
{
	while (d->cur_seg < d->plan->nsegs &&
	       (d->cur_seg < seg || (d->cur_seg == seg && d->cur_pfn < pfn))) {
		uint64_t end = seg_pfn(d, d->cur_seg, true);
		uint64_t stop = d->cur_seg == seg ? pfn : end;

		for (; d->cur_pfn < stop; d->cur_pfn++)
			kdump_writer_exclude(&d->kw, d->cur_pfn);
		if (d->cur_pfn == end && ++d->cur_seg < d->plan->nsegs)
			d->cur_pfn = seg_pfn(d, d->cur_seg, false);
	}
}

static struct kcore_error *add_hashes(struct dump *d, struct job *j)
{
	uint64_t blocks = (j->len + KCORE_HASH_BLOCK - 1) / KCORE_HASH_BLOCK;

	for (uint64_t b = 0; b < blocks && !d->opts->no_hash; b++) {
		if (!j->nonzero[b])
			continue;
		struct kcore_error *err = kcore_seg_hasher_add(
			d->hashers[j->seg], j->seg_off / KCORE_HASH_BLOCK + b,
			j->digest[b]);
		if (err)
			return err;
	}
	return NULL;
}

/* kdump: the job's page data, then one descriptor per dumped page. */
static struct kcore_error *retire_kdump(struct dump *d, struct job *j)
{
	struct kcore_plan_segment *seg = &d->plan->segs[j->seg];
	uint64_t pages = j->len / d->page;
	uint64_t first = seg_pfn(d, j->seg, false) + j->seg_off / d->page;
	uint64_t base = d->kw.data_pos;
	struct kcore_error *err = NULL;

	kdump_skip_to(d, j->seg, first);
	if (j->clen) {
		err = out_write(d, base, j->cbuf, j->clen);
		d->kw.data_pos += j->clen;
	}
	for (uint64_t p = 0; !err && p < pages; p++) {
		/* The flattened header went out first, with bitmap 2 from
		 * the holes: an unreadable page is a zero page there. */
		if (j->hole[p] || (j->bad[p] && !d->flat)) {
			kdump_writer_exclude(&d->kw, first + p);
		} else if (j->zero[p]) {
			d->res->stats.bytes_zero += d->page;
			err = kdump_writer_zero(&d->kw);
		} else {
			seg->data_bytes += d->page;
			err = kdump_writer_page(&d->kw, base + j->coff[p],
						j->csize[p], j->cflags[p]);
		}
	}
	d->cur_pfn = first + pages;
	if (d->cur_pfn == seg_pfn(d, j->seg, true) &&
	    ++d->cur_seg < d->plan->nsegs)
		d->cur_pfn = seg_pfn(d, d->cur_seg, false);
	if (!err)
		err = add_hashes(d, j);
	j->state = 0;
	return err;
}

static void lime_header(const struct kcore_plan_segment *s,
			unsigned char out[32])
{
	uint32_t magic = 0x4C694D45, version = 1;
	uint64_t start = s->paddr, end = s->paddr + s->size - 1;

	memset(out, 0, 32);
	memcpy(out, &magic, 4);
	memcpy(out + 4, &version, 4);
	memcpy(out + 8, &start, 8);
	memcpy(out + 16, &end, 8); /* inclusive */
}

/* LiME: the range headers of segments up to seg, in file order. */
static struct kcore_error *lime_headers_upto(struct dump *d, size_t seg)
{
	for (; d->lime_next <= seg && d->lime_next < d->plan->nsegs;
	     d->lime_next++) {
		const struct kcore_plan_segment *s =
			&d->plan->segs[d->lime_next];
		unsigned char h[32];
		struct kcore_error *err;

		lime_header(s, h);
		err = out_write(d, s->out_offset - 32, h, sizeof(h));
		if (err)
			return err;
	}
	return NULL;
}

static const unsigned char avml_zero_data[AVML_CHUNK_DATA];
static struct kcore_error *check_cancel(struct dump *d);
static void report_progress(struct dump *d, bool force);

/* AVML: zero chunks for the open range up to its byte to.  A hole of a
 * TiB is 48 GB of them: progress and a stop are looked at every 64 MiB. */
static struct kcore_error *avml_zeros(struct dump *d, uint64_t to)
{
	while (d->avml_pos < to) {
		if (d->avml_pos % (64u << 20) < AVML_CHUNK_DATA) {
			struct kcore_error *err = check_cancel(d);

			if (err)
				return err;
			report_progress(d, false);
		}
		uint64_t n = to - d->avml_pos < AVML_CHUNK_DATA
				     ? to - d->avml_pos
				     : AVML_CHUNK_DATA;
		const unsigned char *c = d->avml_zero;
		size_t clen = d->avml_zero_len;
		struct kcore_error *err;

		if (n < AVML_CHUNK_DATA) {
			clen = kcore_avml_chunk(avml_zero_data, (size_t)n,
						d->avml_tmp);
			c = d->avml_tmp;
		}
		err = out_write(d, d->pos, c, clen);
		if (err)
			return err;
		d->avml_pos += n;
	}
	return NULL;
}

/*
 * AVML: bring the output to byte off of segment seg: finish the ranges
 * before it (zero chunks to their end, the trailer), open the ranges up
 * to it (header, stream identifier), zero chunks up to off.  seg ==
 * nsegs finishes them all.
 */
static struct kcore_error *avml_goto(struct dump *d, size_t seg, uint64_t off)
{
	struct kcore_error *err;

	while (d->avml_seg < d->plan->nsegs) {
		const struct kcore_plan_segment *s =
			&d->plan->segs[d->avml_seg];
		unsigned char b[AVML_RANGE_HEADER];

		if (!d->avml_open) {
			kcore_avml_range_header(s->paddr, s->size, b);
			err = out_write(d, d->pos, b, AVML_RANGE_HEADER);
			d->avml_stream = d->pos;
			kcore_avml_stream_id(b);
			if (!err)
				err = out_write(d, d->pos, b,
						AVML_STREAM_ID_SIZE);
			if (err)
				return err;
			d->avml_open = true;
			d->avml_pos = 0;
		}
		if (d->avml_seg == seg)
			return avml_zeros(d, off);
		err = avml_zeros(d, s->size);
		if (err)
			return err;
		uint64_t len = d->pos - d->avml_stream;

		kcore_store_le(b, len, AVML_TRAILER_SIZE);
		err = out_write(d, d->pos, b, AVML_TRAILER_SIZE);
		if (err)
			return err;
		d->avml_open = false;
		d->avml_seg++;
	}
	return NULL;
}

/* Write a processed job: data page runs; zero pages become holes. */
static struct kcore_error *retire_job(struct dump *d, struct job *j)
{
	struct kcore_plan_segment *seg = &d->plan->segs[j->seg];
	uint64_t pages = (j->len + d->page - 1) / d->page;
	uint64_t p = 0;

	if (d->format == KCORE_FORMAT_KDUMP)
		return retire_kdump(d, j);
	if (d->format == KCORE_FORMAT_LIME) {
		struct kcore_error *err = lime_headers_upto(d, j->seg);

		if (err)
			return err;
	}
	if (d->format == KCORE_FORMAT_AVML) {
		struct kcore_error *err = avml_goto(d, j->seg, j->seg_off);

		if (!err)
			err = out_write(d, d->pos, j->cbuf, j->clen);
		if (err)
			return err;
		d->avml_pos += j->len;
	}

	while (p < pages) {
		uint64_t q = p;

		if (j->zero[p]) {
			while (q < pages && j->zero[q])
				q++;
			/* Holes in the job are counted as holes already. */
			for (uint64_t z = p; z < q; z++)
				if (!j->hole[z])
					d->res->stats.bytes_zero +=
						(z + 1) * d->page < j->len
							? d->page
							: j->len - z * d->page;
		} else {
			while (q < pages && !j->zero[q])
				q++;
			uint64_t end =
				q * d->page < j->len ? q * d->page : j->len;
			/* AVML's chunks went out above. */
			if (d->format != KCORE_FORMAT_AVML) {
				struct kcore_error *err =
					out_write(d,
						  seg->out_offset + j->seg_off +
							  p * d->page,
						  j->buf + p * d->page,
						  end - p * d->page);

				if (err)
					return err;
			}
			seg->data_bytes += end - p * d->page;
		}
		p = q;
	}
	j->state = 0;
	return add_hashes(d, j);
}

static struct kcore_error *retire_oldest(struct dump *d)
{
	struct job *j = &d->ring[d->retired % d->nring];

	pthread_mutex_lock(&d->lock);
	while (j->state != 2)
		pthread_cond_wait(&d->done_cv, &d->lock);
	pthread_mutex_unlock(&d->lock);
	d->retired++;
	return retire_job(d, j);
}

/* ---- reading ---- */

static void add_read_error(struct dump *d, uint64_t offset, uint64_t len,
			   const struct kcore_error *err)
{
	struct kcore_dump_result *r = d->res;
	bool corrupt = err->code == KCORE_ERR_FORMAT && !err->errnum;
	int errnum = corrupt ? EBADMSG : err->errnum ? err->errnum : EIO;

	d->res->stats.bytes_unreadable += len;
	if (r->nerrors &&
	    r->errors[r->nerrors - 1].offset + r->errors[r->nerrors - 1].len ==
		    offset &&
	    r->errors[r->nerrors - 1].errnum == errnum) {
		r->errors[r->nerrors - 1].len += len;
		return;
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
		offset, len, errnum,
		corrupt && err->message ? strdup(err->message) : NULL
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
	unsigned char *buf = j->buf + at;
	struct kcore_error *err;
	size_t done;

	mark_pages(d, j->hole, at, len, 0);
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
			mark_pages(d, j->bad, at + pos, n, 1);
			add_read_error(d, offset + pos, n, err);
			kcore_error_destroy(err);
		}
		pos += n;
	}
}

/* Where segment byte pos comes from: its source offset, and (when asked)
 * where the source range it belongs to ends and holds data up to, both
 * segment-relative. */
static uint64_t src_at(const struct kcore_plan_segment *seg, uint64_t pos,
		       uint64_t *ret_end, uint64_t *ret_avail)
{
	uint64_t end;

	if (seg->alt_len && pos >= seg->alt_pos &&
	    pos - seg->alt_pos < seg->alt_len) {
		if (ret_end) {
			*ret_end = seg->alt_pos + seg->alt_len;
			*ret_avail = seg->alt_pos + seg->alt_avail;
		}
		return seg->alt_offset + (pos - seg->alt_pos);
	}
	end = seg->alt_len && pos < seg->alt_pos ? seg->alt_pos : seg->size;
	if (ret_end) {
		*ret_end = end;
		*ret_avail = seg->src_avail < end ? seg->src_avail : end;
	}
	return seg->src_offset + pos;
}

/* The source's data extent at or after seg-relative pos: [*ds, *de), or
 * *ds == seg->size when only holes remain.  An extent never crosses the
 * bounds of the segment's alternative source range (alt_pos, alt_len). */
static void source_extent(struct dump *d, size_t si, uint64_t pos, uint64_t *ds,
			  uint64_t *de)
{
	const struct kcore_plan_segment *seg = &d->plan->segs[si];
	struct kcore_error *err;
	uint64_t data, data_end, end, avail, at;

	for (;;) {
		at = src_at(seg, pos, &end, &avail);
		if (pos < avail)
			break;
		/* Zeros to the end of this source range: go on after it. */
		if (end >= seg->size) {
			*ds = *de = seg->size;
			return;
		}
		pos = end;
	}
	if (!d->use_seek) {
		*ds = pos;
		*de = avail;
		return;
	}
	if (d->ext_valid && d->ext_seg == si && pos >= d->ext_start &&
	    pos < d->ext_end) {
		*ds = pos;
		*de = d->ext_end;
		return;
	}
	err = kcore_source_next_data(d->src, at, at + (avail - pos), &data,
				     &data_end);
	if (err) { /* cannot tell: read it */
		kcore_error_destroy(err);
		*ds = pos;
		*de = avail;
		return;
	}
	if (data >= at + (avail - pos)) {
		/* Only holes in this range: look after it. */
		if (end >= seg->size) {
			*ds = *de = seg->size;
			return;
		}
		source_extent(d, si, end, ds, de);
		return;
	}
	*ds = pos + (data - at);
	*de = pos + (data_end - at);
	if (*de > avail)
		*de = avail;
	d->ext_valid = true;
	d->ext_seg = si;
	d->ext_start = *ds;
	d->ext_end = *de;
}

/* Bytes of the plan's RAM segments that kcore_plan_exclude() left out. */
static uint64_t excluded_bytes(const struct kcore_plan *plan)
{
	uint64_t n = 0;

	for (size_t i = 0; i < plan->nsegs; i++) {
		const struct kcore_plan_segment *seg = &plan->segs[i];
		uint64_t a = seg->paddr, b = seg->paddr + seg->size;

		if (seg->cls != KCORE_CLASS_RAM || !seg->has_paddr)
			continue;
		for (const struct kcore_range *r =
			     kcore_excluded_after(plan, a);
		     r && r < plan->excluded + plan->nexcluded && r->start < b;
		     r++)
			n += (r->end < b ? r->end : b) -
			     (r->start > a ? r->start : a);
	}
	return n;
}

/* What the dump reads: the source's data extents of a segment, less the
 * pages kcore_plan_exclude() left out of RAM segments. */
static void data_extent(struct dump *d, size_t si, uint64_t pos, uint64_t *ds,
			uint64_t *de)
{
	const struct kcore_plan_segment *seg = &d->plan->segs[si];

	for (;;) {
		source_extent(d, si, pos, ds, de);
		if (!d->plan->nexcluded || seg->cls != KCORE_CLASS_RAM ||
		    !seg->has_paddr || *ds >= seg->size)
			return;
		const struct kcore_range *r =
			kcore_excluded_after(d->plan, seg->paddr + *ds);

		if (!r || r->start >= seg->paddr + *de)
			return;
		if (r->start > seg->paddr + *ds) {
			*de = r->start - seg->paddr;
			return;
		}
		if (r->end - seg->paddr >= seg->size) {
			*ds = *de = seg->size;
			return;
		}
		pos = r->end - seg->paddr;
	}
}

static void fill_job(struct dump *d, struct job *j)
{
	const struct kcore_plan_segment *seg = &d->plan->segs[j->seg];
	uint64_t pos = j->seg_off, end = j->seg_off + j->len;
	uint64_t pages = (j->len + d->page - 1) / d->page;

	memset(j->hole, 1, pages);
	if (j->bad)
		memset(j->bad, 0, pages);
	while (pos < end) {
		uint64_t ds, de;

		data_extent(d, j->seg, pos, &ds, &de);
		if (ds >= end) {
			memset(j->buf + (pos - j->seg_off), 0, end - pos);
			d->res->stats.bytes_hole += end - pos;
			break;
		}
		if (ds > pos) {
			memset(j->buf + (pos - j->seg_off), 0, ds - pos);
			d->res->stats.bytes_hole += ds - pos;
			pos = ds;
		}
		if (de > end)
			de = end;
		read_range(d, j, pos - j->seg_off, src_at(seg, pos, NULL, NULL),
			   de - pos);
		pos = de;
	}
}

static void report_progress(struct dump *d, bool force)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);

	if (!d->opts->progress ||
	    (!force && now - d->last_progress < PROGRESS_NS))
		return;
	d->last_progress = now;
	d->res->stats.elapsed = (double)(now - d->t0) / 1e9;
	if (d->os)
		d->res->stats.bytes_written = kcore_ostream_bytes_out(d->os);
	d->opts->progress(d->opts->progress_arg, &d->res->stats);
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

static struct kcore_error *submit(struct dump *d, size_t si, uint64_t off,
				  uint64_t len)
{
	struct kcore_error *err;
	struct job *j;

	if (d->submitted - d->retired == d->nring) {
		err = retire_oldest(d);
		if (err)
			return err;
	}
	j = &d->ring[d->submitted % d->nring];
	j->seg = si;
	j->seg_off = off;
	j->len = len;
	fill_job(d, j);
	d->res->stats.bytes_done += len;
	pthread_mutex_lock(&d->lock);
	j->state = 1;
	d->submitted++;
	pthread_cond_signal(&d->work_cv);
	pthread_mutex_unlock(&d->lock);
	report_progress(d, false);
	return check_cancel(d);
}

static struct kcore_error *dump_segment(struct dump *d, size_t si)
{
	const struct kcore_plan_segment *seg = &d->plan->segs[si];
	uint64_t off = 0;

	d->ext_valid = false;
	while (off < seg->size) {
		uint64_t ds, de, start, end;
		struct kcore_error *err;

		data_extent(d, si, off, &ds, &de);
		if (ds >= seg->size) {
			d->res->stats.bytes_hole += seg->size - off;
			d->res->stats.bytes_done += seg->size - off;
			break;
		}
		start = ds - ds % KCORE_HASH_BLOCK;
		if (start < off)
			start = off;
		d->res->stats.bytes_hole += start - off;
		d->res->stats.bytes_done += start - off;
		end = start + d->block < seg->size ? start + d->block
						   : seg->size;
		err = submit(d, si, start, end - start);
		if (err)
			return err;
		off = end;
	}
	return NULL;
}

/* ---- headers and notes ---- */

static size_t note_size(size_t namesz, size_t descsz)
{
	return 12 + round_up(namesz, 4) + round_up(descsz, 4);
}

static unsigned char *put_note(unsigned char *p, const char *name,
			       uint32_t type, const void *desc, size_t descsz)
{
	uint32_t namesz = (uint32_t)strlen(name) + 1, dsz = (uint32_t)descsz;

	memcpy(p, &namesz, 4);
	memcpy(p + 4, &dsz, 4);
	memcpy(p + 8, &type, 4);
	p += 12;
	memcpy(p, name, namesz);
	p += round_up(namesz, 4);
	if (descsz)
		memcpy(p, desc, descsz);
	return p + round_up(descsz, 4);
}

static void iso_time(uint64_t ns, char out[64])
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (unsigned)(ns % 1000000000ull / 1000));
}

/* Characters that would break the line format become '?'. */
static void clean(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/*
 * The metadata text.  Every variable field is fixed-width, so the text
 * written first (with zeros) and the final one have the same length.
 */
static const char *digest_location(const struct dump *d)
{
	if (d->opts->no_hash)
		return "none";
	if (d->format == KCORE_FORMAT_LIME || d->format == KCORE_FORMAT_AVML)
		return "summary"; /* no place for notes */
	if (d->format == KCORE_FORMAT_KDUMP)
		return "note"; /* headers come last, also in records */
	return d->sparse || d->rewritable ? "note" : "trailer";
}

/* A digest for the note; "none" (which verify does not take for a
 * digest) when the dump is not hashed. */
static void digest_text(const struct dump *d, const unsigned char *digest,
			char hex[2 * KCORE_DIGEST_LEN + 1])
{
	if (d->opts->no_hash)
		strcpy(hex, "none");
	else
		kcore_hex(digest, KCORE_DIGEST_LEN, hex);
}

static char *metadata_text(struct dump *d, const char *location,
			   size_t *ret_len)
{
	const struct kcore_source_info *in = &d->src->info;
	const struct kcore_dump_stats *st = &d->res->stats;
	struct utsname u;
	char host[256] = "", t0[64], t1[64], hex[2 * KCORE_DIGEST_LEN + 1];
	char *buf = NULL, *cmd = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	gethostname(host, sizeof(host) - 1);
	clean(host);
	memset(&u, 0, sizeof(u));
	uname(&u);
	iso_time(st->start_ns, t0);
	iso_time(st->end_ns, t1);
	if (d->opts->command_line) {
		cmd = strdup(d->opts->command_line);
		if (cmd)
			clean(cmd);
	}
	fprintf(f,
		"format=kcoredump-metadata-1\ntool=kcoredump %s\n"
		"source=%s\nsource_kind=%s\nkernel_release=%s\n"
		"hostname=%s\nuname=%s %s %s %s\ncommand=%s\n"
		"read_start=%s\nread_end=%s\n"
		"bytes_read=%020" PRIu64 "\nbytes_hole=%020" PRIu64
		"\nbytes_zero=%020" PRIu64 "\nbytes_unreadable=%020" PRIu64
		"\nvmalloc_areas=%zu\nhash=%s\n"
		"hash_block=%u\ndigests=%s\n",
		KCOREDUMP_VERSION, in->path, kcore_source_kind_name(in->kind),
		in->kernel_release ? in->kernel_release : "-", host, u.sysname,
		u.release, u.version, u.machine, cmd ? cmd : "-", t0, t1,
		st->bytes_read, st->bytes_hole, st->bytes_zero,
		st->bytes_unreadable, d->plan->vmalloc_areas,
		d->opts->no_hash ? "none" : "sha256-blocklist-v1",
		KCORE_HASH_BLOCK, location);
	digest_text(d, d->res->digest, hex);
	if (d->plan->exclude.level) {
		char names[64];

		fprintf(f,
			"exclude=%s\nexclude_level=%u\nexcluded_pages=%"
			"020" PRIu64 "\n",
			kcore_exclude_names(d->plan->exclude.level, names,
					    sizeof(names)),
			d->plan->exclude.level, d->plan->exclude.excluded);
	}
	fprintf(f, "dump_sha256=%s\nsegments=%zu\n", hex, d->plan->nsegs);
	if (d->format != KCORE_FORMAT_ELF)
		fprintf(f, "output_format=%s\n", kcore_format_name(d->format));
	for (size_t i = 0; i < d->plan->nsegs; i++) {
		const struct kcore_plan_segment *s = &d->plan->segs[i];
		char label[160];

		snprintf(label, sizeof(label), "%s", s->label ? s->label : "-");
		clean(label);
		digest_text(d, s->digest, hex);
		fprintf(f,
			"segment=%zu vaddr=0x%016" PRIx64 " size=0x%016" PRIx64,
			i, s->vaddr, s->size);
		if (d->format != KCORE_FORMAT_ELF)
			fprintf(f, " paddr=0x%016" PRIx64, s->paddr);
		fprintf(f, " data=%020" PRIu64 " class=%s sha256=%s label=%s\n",
			s->data_bytes, kcore_segment_class_name(s->cls), hex,
			label);
	}
	free(cmd);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	*ret_len = len;
	return buf;
}

/*
 * The note blob every format with notes carries: the source's notes (not
 * its own KCOREDUMP note, which ours replaces), the VMCOREINFO found
 * outside the notes (old kernels), and our metadata note, whose
 * descriptor is a reserved slot of meta_len bytes at *ret_meta.
 */
static struct kcore_error *build_notes(struct dump *d, const char *meta,
				       size_t meta_len, unsigned char **ret,
				       size_t *ret_len, size_t *ret_meta)
{
	size_t len = 0, vi_len = 0;
	bool add_vmcoreinfo = d->src->vmcoreinfo &&
			      d->src->info.vmcoreinfo_origin &&
			      strcmp(d->src->info.vmcoreinfo_origin, "note");
	const char *vi_text =
		add_vmcoreinfo
			? kcore_vmcoreinfo_text(d->src->vmcoreinfo, &vi_len)
			: NULL;
	unsigned char *blob, *p;
	char *slot;

	for (size_t i = 0; i < d->src->nnotes; i++) {
		const struct kcore_note *n = &d->src->notes[i];

		if (strcmp(n->name, NOTE_NAME) == 0)
			continue;
		len += note_size(strlen(n->name) + 1, n->descsz);
	}
	if (add_vmcoreinfo)
		len += note_size(sizeof("VMCOREINFO"), vi_len);
	len += note_size(sizeof(NOTE_NAME), d->meta_len);
	blob = calloc(1, len);
	slot = calloc(1, d->meta_len);
	if (!blob || !slot) {
		free(blob);
		free(slot);
		return &kcore_error_nomem;
	}
	d->vmcoreinfo_off = UINT64_MAX;
	p = blob;
	for (size_t i = 0; i < d->src->nnotes; i++) {
		const struct kcore_note *n = &d->src->notes[i];

		if (strcmp(n->name, NOTE_NAME) == 0)
			continue;
		if (strcmp(n->name, "VMCOREINFO") == 0) {
			d->vmcoreinfo_off = (uint64_t)(p - blob) + 12 +
					    round_up(strlen(n->name) + 1, 4);
			d->vmcoreinfo_size = n->descsz;
		}
		p = put_note(p, n->name, n->type, n->desc, n->descsz);
	}
	if (add_vmcoreinfo) {
		d->vmcoreinfo_off = (uint64_t)(p - blob) + 12 +
				    round_up(sizeof("VMCOREINFO"), 4);
		d->vmcoreinfo_size = vi_len;
		p = put_note(p, "VMCOREINFO", 0, vi_text, vi_len);
	}
	*ret_meta = (size_t)(p - blob) + 12 + round_up(sizeof(NOTE_NAME), 4);
	memcpy(slot, meta, meta_len);
	put_note(p, NOTE_NAME, NOTE_TYPE_META, slot, d->meta_len);
	free(slot);
	*ret = blob;
	*ret_len = len;
	return NULL;
}

static struct kcore_error *build_header(struct dump *d)
{
	size_t nphdr = 1 + d->plan->nsegs, notes_len, meta_len, meta_rel;
	bool xnum = nphdr >= PN_XNUM;
	uint64_t notes_off, off;
	unsigned char *notes;
	struct kcore_error *err;
	char *meta;
	Elf64_Ehdr eh;

	meta = metadata_text(d, digest_location(d), &meta_len);
	if (!meta)
		return &kcore_error_nomem;
	d->meta_len = meta_len + 64; /* room for longer final values */
	err = build_notes(d, meta, meta_len, &notes, &notes_len, &meta_rel);
	free(meta);
	if (err)
		return err;
	notes_off = sizeof(Elf64_Ehdr) + nphdr * sizeof(Elf64_Phdr) +
		    (xnum ? sizeof(Elf64_Shdr) : 0);
	d->header_len = notes_off + notes_len;
	d->header = calloc(1, d->header_len);
	if (!d->header) {
		free(notes);
		return &kcore_error_nomem;
	}
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_ident[EI_OSABI] = ELFOSABI_NONE;
	eh.e_type = ET_CORE;
	eh.e_machine = d->src->info.machine;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(Elf64_Ehdr);
	eh.e_ehsize = sizeof(Elf64_Ehdr);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = xnum ? PN_XNUM : (Elf64_Half)nphdr;
	if (xnum) {
		Elf64_Shdr sh = { 0 };

		eh.e_shoff = sizeof(Elf64_Ehdr) + nphdr * sizeof(Elf64_Phdr);
		eh.e_shentsize = sizeof(Elf64_Shdr);
		eh.e_shnum = 1;
		sh.sh_info = (Elf64_Word)nphdr;
		memcpy(d->header + eh.e_shoff, &sh, sizeof(sh));
	}
	memcpy(d->header, &eh, sizeof(eh));
	memcpy(d->header + notes_off, notes, notes_len);
	free(notes);
	d->meta_off = notes_off + meta_rel;
	/* Program headers: PT_NOTE, then the loads at page-aligned offsets. */
	Elf64_Phdr ph = { .p_type = PT_NOTE,
			  .p_offset = notes_off,
			  .p_filesz = notes_len,
			  .p_align = 4 };
	memcpy(d->header + sizeof(eh), &ph, sizeof(ph));
	off = round_up(d->header_len, d->page);
	for (size_t i = 0; i < d->plan->nsegs; i++) {
		struct kcore_plan_segment *s = &d->plan->segs[i];

		s->out_offset = off;
		ph = (Elf64_Phdr){
			.p_type = PT_LOAD,
			.p_flags = s->flags,
			.p_offset = off,
			.p_vaddr = s->vaddr,
			.p_paddr = s->has_paddr ? s->paddr : UINT64_MAX,
			.p_filesz = s->size,
			.p_memsz = s->memsz > s->size ? s->memsz : s->size,
			.p_align = 0, /* crash misreads p_align 4096 */
		};
		memcpy(d->header + sizeof(eh) + (i + 1) * sizeof(ph), &ph,
		       sizeof(ph));
		off = round_up(off + s->size, d->page);
	}
	d->total = d->plan->nsegs
			   ? d->plan->segs[d->plan->nsegs - 1].out_offset +
				     d->plan->segs[d->plan->nsegs - 1].size
			   : d->header_len;
	return NULL;
}

/* LiME: a 32-byte header, then the range's bytes, for each segment. */
static void lime_layout(struct dump *d)
{
	uint64_t off = 0;

	for (size_t i = 0; i < d->plan->nsegs; i++) {
		d->plan->segs[i].out_offset = off + 32;
		off += 32 + d->plan->segs[i].size;
	}
	d->total = off;
}

/*
 * kdump: the pages the dump gives a descriptor, every page that overlaps
 * a data extent of the source (the pipeline reads exactly those); with
 * w, the others are excluded from its bitmap 2.  Unreadable pages found
 * later are excluded too, except in a flattened file.
 */
static uint64_t kdump_count_pages(struct dump *d, struct kdump_writer *w)
{
	uint64_t n = 0;

	for (size_t si = 0; si < d->plan->nsegs; si++) {
		const struct kcore_plan_segment *seg = &d->plan->segs[si];
		uint64_t pos = 0, ds, de, base = seg_pfn(d, si, false);

		d->ext_valid = false;
		while (pos < seg->size) {
			data_extent(d, si, pos, &ds, &de);
			if (ds > seg->size)
				ds = seg->size;
			if (de > seg->size)
				de = seg->size;
			if (w)
				kdump_writer_exclude_range(w,
							   base + pos / d->page,
							   base + ds / d->page);
			if (ds >= seg->size)
				break;
			n += (de + d->page - 1) / d->page - ds / d->page;
			pos = round_up(de, d->page);
		}
	}
	d->ext_valid = false;
	return n;
}

static void kdump_header_info(struct dump *d, struct kdump_header_info *hi);

static struct kcore_error *kdump_layout(struct dump *d)
{
	struct kdump_range *r = calloc(d->plan->nsegs, sizeof(*r));
	struct kcore_page_codec *codec = NULL;
	struct kcore_error *err;
	size_t meta_len, meta_rel;
	char *meta;

	if (!r)
		return &kcore_error_nomem;
	for (size_t i = 0; i < d->plan->nsegs; i++) {
		r[i].start_pfn = seg_pfn(d, i, false);
		r[i].end_pfn = seg_pfn(d, i, true);
	}
	meta = metadata_text(d, digest_location(d), &meta_len);
	if (!meta) {
		free(r);
		return &kcore_error_nomem;
	}
	d->meta_len = meta_len + 64;
	err = build_notes(d, meta, meta_len, &d->notes, &d->notes_len,
			  &meta_rel);
	free(meta);
	if (!err)
		err = kdump_writer_init(&d->kw, d->page, r, d->plan->nsegs,
					kdump_count_pages(d, NULL),
					d->notes_len, kdump_write_cb, d);
	free(r);
	if (err)
		return err;
	d->kw_ready = true;
	d->meta_off = d->kw.notes_off + meta_rel;
	if (d->flat) {
		/* Readers of a flattened file (crash --osrelease) look for
		 * the header in the first record: it goes first, with its
		 * final bitmaps; our note's slot follows at the end. */
		struct kdump_header_info hi;

		kdump_count_pages(d, &d->kw);
		kdump_header_info(d, &hi);
		err = kdump_writer_headers(&d->kw, &hi, d->notes, d->notes_len,
					   d->meta_off, d->meta_len);
		if (err)
			return err;
	}
	d->cur_seg = 0;
	d->cur_pfn = d->plan->nsegs ? seg_pfn(d, 0, false) : 0;
	err = kcore_page_codec_create(d->opts->codec, d->opts->codec_level,
				      d->page, &codec);
	if (!err)
		err = kdump_writer_zero_page(&d->kw, codec);
	kcore_page_codec_destroy(codec);
	return err;
}

/* utsname for the kdump header: the kernel's init_uts_ns when the dump
 * holds it, else what VMCOREINFO and the ELF header tell. */
static void kdump_utsname(struct dump *d, struct kdump_header_info *hi)
{
	const struct kcore_vmcoreinfo *vi = d->src->vmcoreinfo;
	const char *rel = d->src->info.kernel_release;
	char uts[6][65];
	uint64_t sym, off = 0;

	memset(hi->utsname, 0, sizeof(hi->utsname));
	if (vi && rel &&
	    kcore_vmcoreinfo_get_u64(vi, "SYMBOL(init_uts_ns)", &sym)) {
		kcore_vmcoreinfo_get_u64(vi, "OFFSET(uts_namespace.name)",
					 &off);
		struct kcore_error *err = kcore_source_read_vaddr(
			d->src, sym + off, uts, sizeof(uts));
		/* x86_64 __pa_symbol(): x - __START_KERNEL_map + phys_base */
		if (err && d->src->info.machine == EM_X86_64 &&
		    sym >= 0xffffffff80000000ull) {
			kcore_error_destroy(err);
			err = kcore_source_read_paddr(
				d->src,
				sym + off - 0xffffffff80000000ull +
					d->src->info.phys_base,
				uts, sizeof(uts));
		}
		if (!err && strncmp(uts[0], "Linux", 6) == 0 &&
		    strncmp(uts[2], rel, 65) == 0) {
			for (int i = 0; i < 6; i++) {
				memcpy(hi->utsname[i], uts[i], 64);
				hi->utsname[i][64] = '\0';
			}
			return;
		}
		kcore_error_destroy(err);
	}
	/* libkdumpfile ignores a utsname with empty fields. */
	snprintf(hi->utsname[0], 65, "Linux");
	snprintf(hi->utsname[1], 65, "unknown");
	snprintf(hi->utsname[2], 65, "%s", rel ? rel : "unknown");
	snprintf(hi->utsname[3], 65, "unknown");
	snprintf(hi->utsname[4], 65, "%s",
		 d->src->info.machine == EM_X86_64    ? "x86_64"
		 : d->src->info.machine == EM_AARCH64 ? "aarch64"
						      : "unknown");
}

static void kdump_header_info(struct dump *d, struct kdump_header_info *hi)
{
	memset(hi, 0, sizeof(*hi));
	kdump_utsname(d, hi);
	hi->timestamp_sec = d->res->stats.start_ns / 1000000000ull;
	hi->timestamp_usec = d->res->stats.start_ns % 1000000000ull / 1000;
	hi->status = kdump_codec_status(d->opts->codec);
	for (size_t i = 0; i < d->src->nnotes; i++)
		if (strcmp(d->src->notes[i].name, "CORE") == 0 &&
		    d->src->notes[i].type == NT_PRSTATUS)
			hi->nr_cpus++;
	hi->phys_base = d->src->info.has_phys_base ? d->src->info.phys_base : 0;
	hi->vmcoreinfo_off = d->vmcoreinfo_off;
	hi->vmcoreinfo_size = d->vmcoreinfo_size;
	hi->dump_level = d->plan->exclude.level; /* the writer adds ZERO */
}

static struct kcore_error *kdump_finish(struct dump *d)
{
	struct kdump_header_info hi;
	struct kcore_error *err;
	uint64_t pages = 0;
	size_t len;
	char *meta;

	kdump_skip_to(d, d->plan->nsegs, 0);
	err = kdump_writer_flush(&d->kw);
	if (err)
		return err;
	if (d->flat && d->kw.ndesc != d->kw.ndesc_max)
		return kcore_error_create(KCORE_ERR_FORMAT, 0, d->src->path,
					  "the source's holes changed while "
					  "it was read (%llu pages planned, "
					  "%llu dumped)",
					  (unsigned long long)d->kw.ndesc_max,
					  (unsigned long long)d->kw.ndesc);
	/* Our final metadata into its slot. */
	meta = metadata_text(d, digest_location(d), &len);
	if (!meta)
		return &kcore_error_nomem;
	if (len > d->meta_len) {
		free(meta);
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "metadata grew past its reserved "
					  "size");
	}
	size_t slot = d->meta_off - d->kw.notes_off;

	memset(d->notes + slot, 0, d->meta_len);
	memcpy(d->notes + slot, meta, len);
	free(meta);
	for (size_t i = 0; i < d->plan->nsegs; i++)
		pages += d->plan->segs[i].size / d->page;
	d->res->pages_dumped = d->kw.dumped - d->kw.zero_pages;
	d->res->pages_zero = d->kw.zero_pages;
	d->res->pages_excluded = pages - d->kw.dumped;
	if (d->flat)
		return out_write(d, d->meta_off, d->notes + slot, d->meta_len);
	kdump_header_info(d, &hi);
	return kdump_writer_headers(&d->kw, &hi, d->notes, d->notes_len, 0, 0);
}

/* Final metadata: in place for a seekable file, else a trailer. */
static struct kcore_error *write_metadata(struct dump *d)
{
	size_t len;
	char *meta = metadata_text(d, digest_location(d), &len);
	struct kcore_error *err;

	if (!meta)
		return &kcore_error_nomem;
	if (len > d->meta_len) {
		free(meta);
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "metadata grew past its reserved "
					  "size");
	}
	if (d->sparse) {
		unsigned char *slot = calloc(1, d->meta_len);

		if (!slot) {
			free(meta);
			return &kcore_error_nomem;
		}
		memcpy(slot, meta, len);
		err = kcore_pwrite_all(d->opts->out_io, d->out->fd, d->out->tmp,
				       slot, d->meta_len, d->meta_off);
		free(slot);
	} else if (d->rewritable) {
		/* Rewritten with the header once the stream is finished. */
		memset(d->header + d->meta_off, 0, d->meta_len);
		memcpy(d->header + d->meta_off, meta, len);
		err = NULL;
	} else {
		unsigned char tail[16];
		uint64_t l = len;

		memcpy(tail, &l, 8);
		memcpy(tail + 8, TRAILER_MAGIC, 8);
		err = out_write(d, d->total, meta, len);
		if (!err)
			err = out_write(d, d->total + len, tail, sizeof(tail));
	}
	free(meta);
	return err;
}

/* ---- the whole dump ---- */

static void stop_workers(struct dump *d)
{
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_broadcast(&d->work_cv);
	pthread_mutex_unlock(&d->lock);
	for (unsigned i = 0; i < d->nthreads; i++)
		pthread_join(d->threads[i], NULL);
	d->nthreads = 0;
}

static struct kcore_error *setup(struct dump *d)
{
	unsigned n = d->opts->threads;
	uint64_t pages, blocks;

	if (!n) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);

		n = c > 0 ? (unsigned)c : 1;
	}
	d->nring = 2 * (size_t)n + 2;
	d->ring = calloc(d->nring, sizeof(*d->ring));
	d->threads = calloc(n, sizeof(*d->threads));
	d->wargs = calloc(n, sizeof(*d->wargs));
	d->hashers = calloc(d->plan->nsegs, sizeof(*d->hashers));
	if (!d->ring || !d->threads || !d->wargs || !d->hashers)
		return &kcore_error_nomem;
	d->nwargs = n;
	for (unsigned i = 0; i < n; i++) {
		d->wargs[i].d = d;
		if (d->format == KCORE_FORMAT_KDUMP) {
			struct kcore_error *err = kcore_page_codec_create(
				d->opts->codec, d->opts->codec_level, d->page,
				&d->wargs[i].codec);

			if (err)
				return err;
		}
	}
	if (d->format == KCORE_FORMAT_AVML) {
		d->avml_zero = malloc(kcore_avml_chunk_max());
		d->avml_tmp = malloc(kcore_avml_chunk_max());
		if (!d->avml_zero || !d->avml_tmp)
			return &kcore_error_nomem;
		d->avml_zero_len = kcore_avml_chunk(
			avml_zero_data, AVML_CHUNK_DATA, d->avml_zero);
	}
	pages = (d->block + d->page - 1) / d->page;
	blocks = (d->block + KCORE_HASH_BLOCK - 1) / KCORE_HASH_BLOCK;
	for (size_t i = 0; i < d->nring; i++) {
		struct job *j = &d->ring[i];

		j->buf = aligned_alloc(4096, round_up(d->block, 4096));
		j->zero = calloc(pages, 1);
		j->digest = calloc(blocks, sizeof(*j->digest));
		j->nonzero = calloc(blocks, 1);
		j->hole = calloc(pages, 1);
		if (!j->buf || !j->zero || !j->digest || !j->nonzero ||
		    !j->hole)
			return &kcore_error_nomem;
		if (d->format == KCORE_FORMAT_AVML) {
			j->cbuf = malloc((d->block + AVML_CHUNK_DATA - 1) /
					 AVML_CHUNK_DATA *
					 kcore_avml_chunk_max());
			if (!j->cbuf)
				return &kcore_error_nomem;
		}
		if (d->format != KCORE_FORMAT_KDUMP)
			continue;
		j->bad = calloc(pages, 1);
		j->cbuf = malloc(pages * d->page);
		j->coff = calloc(pages, sizeof(*j->coff));
		j->csize = calloc(pages, sizeof(*j->csize));
		j->cflags = calloc(pages, sizeof(*j->cflags));
		if (!j->hole || !j->bad || !j->cbuf || !j->coff || !j->csize ||
		    !j->cflags)
			return &kcore_error_nomem;
	}
	for (size_t i = 0; i < d->plan->nsegs; i++) {
		const struct kcore_plan_segment *s = &d->plan->segs[i];
		struct kcore_error *err = kcore_seg_hasher_create(
			s->memsz > s->size ? s->memsz : s->size,
			&d->hashers[i]);

		if (err)
			return err;
	}
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->work_cv, NULL);
	pthread_cond_init(&d->done_cv, NULL);
	for (unsigned i = 0; i < n; i++) {
		if (pthread_create(&d->threads[i], NULL, worker,
				   &d->wargs[i]) != 0) {
			stop_workers(d);
			return kcore_error_create(
				KCORE_ERR_OS, errno, NULL,
				"cannot start worker threads");
		}
		d->nthreads++;
	}
	return NULL;
}

static void teardown(struct dump *d)
{
	if (d->nthreads)
		stop_workers(d);
	if (d->ring) {
		pthread_mutex_destroy(&d->lock);
		pthread_cond_destroy(&d->work_cv);
		pthread_cond_destroy(&d->done_cv);
	}
	for (size_t i = 0; d->ring && i < d->nring; i++) {
		free(d->ring[i].buf);
		free(d->ring[i].zero);
		free(d->ring[i].digest);
		free(d->ring[i].nonzero);
		free(d->ring[i].hole);
		free(d->ring[i].bad);
		free(d->ring[i].cbuf);
		free(d->ring[i].coff);
		free(d->ring[i].csize);
		free(d->ring[i].cflags);
	}
	free(d->ring);
	free(d->threads);
	if (d->wargs) {
		for (unsigned i = 0; i < d->nwargs; i++)
			kcore_page_codec_destroy(d->wargs[i].codec);
	}
	free(d->wargs);
	if (d->kw_ready)
		kdump_writer_deinit(&d->kw);
	free(d->notes);
	for (size_t i = 0; d->hashers && i < d->plan->nsegs; i++)
		kcore_seg_hasher_destroy(d->hashers[i]);
	free(d->hashers);
	kcore_ostream_destroy(d->os);
	d->os = NULL; /* the final progress report runs after teardown */
	free(d->header);
	free(d->avml_zero);
	free(d->avml_tmp);
}

static const char *const format_names[KCORE_FORMAT_NUM] = { "elf", "kdump",
							    "lime", "avml" };
static const char *const codec_names[KCORE_CODEC_NUM] = { "zstd", "zlib",
							  "none", "lzo",
							  "snappy" };

const char *kcore_format_name(enum kcore_format f)
{
	return (unsigned)f < KCORE_FORMAT_NUM ? format_names[f] : "unknown";
}

int kcore_format_from_name(const char *name)
{
	for (int i = 0; i < KCORE_FORMAT_NUM; i++)
		if (strcmp(format_names[i], name) == 0)
			return i;
	return -1;
}

const char *kcore_codec_name(enum kcore_codec c)
{
	return (unsigned)c < KCORE_CODEC_NUM ? codec_names[c] : "unknown";
}

int kcore_codec_from_name(const char *name)
{
	for (int i = 0; i < KCORE_CODEC_NUM; i++)
		if (strcmp(codec_names[i], name) == 0)
			return i;
	return -1;
}

/* What comes before the segments: ELF headers and notes; the flattened
 * header and kdump layout; nothing for LiME (headers go with ranges). */
static struct kcore_error *write_head(struct dump *d)
{
	struct kcore_error *err = NULL;

	switch (d->format) {
	case KCORE_FORMAT_ELF:
		err = build_header(d);
		if (!err && d->rewritable) {
			err = kcore_ostream_write_stored(d->os, d->header,
							 d->header_len,
							 &d->header_out);
			d->pos = d->header_len;
		} else if (!err) {
			err = out_write(d, 0, d->header, d->header_len);
		}
		break;
	case KCORE_FORMAT_LIME:
		lime_layout(d);
		break;
	case KCORE_FORMAT_AVML:
		d->total = 0; /* sizes are known as the ranges are written */
		break;
	case KCORE_FORMAT_KDUMP:
		if (d->flat) {
			unsigned char h[FLAT_HEADER_SIZE];

			kdump_flat_header(h);
			err = kcore_ostream_write(d->os, h, sizeof(h));
		}
		if (!err)
			err = kdump_layout(d);
		break;
	default:
		err = kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					 "unknown output format");
	}
	return err;
}

/* After the digests: metadata, remaining headers, stream end. */
static struct kcore_error *write_tail(struct dump *d)
{
	struct kcore_error *err = NULL;

	switch (d->format) {
	case KCORE_FORMAT_ELF:
		err = write_metadata(d);
		break;
	case KCORE_FORMAT_LIME:
		err = lime_headers_upto(d, d->plan->nsegs);
		break;
	case KCORE_FORMAT_AVML:
		err = avml_goto(d, d->plan->nsegs, 0);
		break;
	case KCORE_FORMAT_KDUMP:
		err = kdump_finish(d);
		if (!err && d->flat) {
			unsigned char end[16];

			memset(end, 0xff, sizeof(end)); /* {-1, -1} */
			err = kcore_ostream_write(d->os, end, sizeof(end));
		}
		return err;
	default:
		break;
	}
	if (!err && !d->sparse && d->pos < d->total)
		/* A stream ends with the image's last segment. */
		err = kcore_ostream_write_zeros(d->os, d->total - d->pos);
	return err;
}

struct kcore_error *kcore_dump(struct kcore_source *src,
			       struct kcore_plan *plan,
			       const struct kcore_dump_opts *opts,
			       struct kcore_dump_result *ret)
{
	struct dump d = { .src = src, .plan = plan, .opts = opts, .res = ret };
	struct kcore_error *err;
	unsigned char(*digests)[KCORE_DIGEST_LEN] = NULL;

	memset(ret, 0, sizeof(*ret));
	d.format = opts->format;
	if (src->info.elf_class != 64 || src->info.big_endian)
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
					  "dumping 32-bit or big-endian cores "
					  "is not supported");
	d.page = src->info.page_size ? src->info.page_size : 4096;
	d.block = opts->block_size ? opts->block_size : DEFAULT_BLOCK;
	if (d.block % KCORE_HASH_BLOCK)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "block size must be a multiple of "
					  "1 MiB");
	if ((unsigned)d.format >= KCORE_FORMAT_NUM ||
	    (unsigned)opts->codec >= KCORE_CODEC_NUM)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "unknown output format or codec");
	if (d.format == KCORE_FORMAT_KDUMP &&
	    opts->compress != KCORE_COMPRESS_NONE)
		return kcore_error_create(KCORE_ERR_INVALID, 0, opts->output,
					  "a kdump file compresses each page "
					  "(--codec); it cannot also be a "
					  "%s stream",
					  kcore_compress_name(opts->compress));
	if (d.format == KCORE_FORMAT_AVML &&
	    opts->compress != KCORE_COMPRESS_NONE)
		return kcore_error_create(KCORE_ERR_INVALID, 0, opts->output,
					  "an AVML file is snappy-compressed; "
					  "it cannot also be a %s stream",
					  kcore_compress_name(opts->compress));
	/* disk_dump_header has the same layout on both (LP64, little
	 * endian); arm64's phys_base field is PHYS_OFFSET (classify.c). */
	if (d.format == KCORE_FORMAT_KDUMP &&
	    ((src->info.machine != EM_X86_64 &&
	      src->info.machine != EM_AARCH64) ||
	     d.page != 4096))
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, src->path,
					  "kdump output is written for x86_64 "
					  "and arm64 kernels with 4 KiB pages "
					  "only");
	if (d.format != KCORE_FORMAT_ELF) {
		err = kcore_plan_restrict_physical(plan, d.page,
						   &ret->dropped_segments);
		if (err)
			return err;
	}
	d.use_seek = kcore_source_knows_holes(src);
	ret->stats.seek_data = d.use_seek;
	for (size_t i = 0; i < plan->nsegs; i++)
		ret->stats.bytes_total += plan->segs[i].size;
	d.t0 = now_ns(CLOCK_MONOTONIC);
	ret->stats.start_ns = now_ns(CLOCK_REALTIME);
	err = kcore_output_open(opts->output,
				&(struct kcore_output_opts){
					.force = opts->force,
					.sync = opts->sync,
					.special = opts->special_output,
				},
				&d.out);
	if (err)
		return err;
	/* AVML is written in order, as a stream. */
	d.sparse = d.out->seekable && opts->compress == KCORE_COMPRESS_NONE &&
		   d.format != KCORE_FORMAT_AVML;
	d.rewritable =
		d.out->seekable && !d.sparse && d.format == KCORE_FORMAT_ELF;
	d.flat = !d.sparse && d.format == KCORE_FORMAT_KDUMP;
	ret->flattened = d.flat;
	if (!d.sparse) {
		struct kcore_ostream_opts so = {
			.method = opts->compress,
			.level = opts->level,
			.threads = opts->threads,
			.frame_size = opts->frame_size,
			.io = opts->out_io,
		};

		err = kcore_ostream_create(d.out->fd,
					   d.out->tmp ? d.out->tmp : "<stdout>",
					   &so, &d.os);
		if (err)
			goto out;
	}
	err = setup(&d);
	if (!err)
		err = write_head(&d);
	for (size_t i = 0; !err && i < plan->nsegs; i++)
		err = dump_segment(&d, i);
	while (!err && d.retired < d.submitted)
		err = retire_oldest(&d);
	if (err)
		goto out;
	/* Excluded pages were skipped like holes: count them apart. */
	ret->stats.bytes_excluded = excluded_bytes(plan);
	ret->stats.bytes_hole -=
		ret->stats.bytes_excluded < ret->stats.bytes_hole
			? ret->stats.bytes_excluded
			: ret->stats.bytes_hole;
	stop_workers(&d);
	ret->stats.end_ns = now_ns(CLOCK_REALTIME);
	digests = calloc(plan->nsegs, sizeof(*digests));
	if (!digests) {
		err = &kcore_error_nomem;
		goto out;
	}
	for (size_t i = 0; i < plan->nsegs; i++) {
		kcore_seg_hasher_finish(d.hashers[i], plan->segs[i].digest);
		memcpy(digests[i], plan->segs[i].digest, KCORE_DIGEST_LEN);
	}
	kcore_dump_digest((const unsigned char(*)[KCORE_DIGEST_LEN])digests,
			  plan->nsegs, ret->digest);
	free(digests);
	err = write_tail(&d);
	if (!err && !d.sparse)
		err = kcore_ostream_finish(d.os);
	if (!err && d.rewritable)
		err = kcore_ostream_rewrite_stored(d.os, d.header_out, d.header,
						   d.header_len);
	if (err)
		goto out;
	if (d.os)
		ret->stats.bytes_written = kcore_ostream_bytes_out(d.os);
	err = kcore_output_commit(d.out, !d.sparse ? ret->stats.bytes_written
					 : d.format == KCORE_FORMAT_KDUMP
						 ? d.kw.data_pos
						 : d.total);
	if (err)
		goto out;
	ret->digest_location = strdup(digest_location(&d));
	if (d.out->path)
		ret->output_path = strdup(d.out->path);
out:
	ret->stats.elapsed = (double)(now_ns(CLOCK_MONOTONIC) - d.t0) / 1e9;
	teardown(&d);
	if (err)
		kcore_output_abort(d.out);
	kcore_output_destroy(d.out);
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
	free(res->digest_location);
	memset(res, 0, sizeof(*res));
}
