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

#include "internal.h"
#include "kcoredump/dump.h"
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
};

struct dump {
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

static void *worker(void *arg)
{
	struct dump *d = arg;

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

/* Write a processed job: data page runs; zero pages become holes. */
static struct kcore_error *retire_job(struct dump *d, struct job *j)
{
	struct kcore_plan_segment *seg = &d->plan->segs[j->seg];
	uint64_t pages = (j->len + d->page - 1) / d->page;
	uint64_t blocks = (j->len + KCORE_HASH_BLOCK - 1) / KCORE_HASH_BLOCK;
	uint64_t p = 0;

	while (p < pages) {
		uint64_t q = p;

		if (j->zero[p]) {
			while (q < pages && j->zero[q])
				q++;
			uint64_t end =
				q * d->page < j->len ? q * d->page : j->len;
			d->res->stats.bytes_zero += end - p * d->page;
		} else {
			while (q < pages && !j->zero[q])
				q++;
			uint64_t end =
				q * d->page < j->len ? q * d->page : j->len;
			struct kcore_error *err = out_write(
				d, seg->out_offset + j->seg_off + p * d->page,
				j->buf + p * d->page, end - p * d->page);
			if (err)
				return err;
			seg->data_bytes += end - p * d->page;
		}
		p = q;
	}
	for (uint64_t b = 0; b < blocks && !d->opts->no_hash; b++) {
		if (!j->nonzero[b])
			continue;
		struct kcore_error *err = kcore_seg_hasher_add(
			d->hashers[j->seg], j->seg_off / KCORE_HASH_BLOCK + b,
			j->digest[b]);
		if (err)
			return err;
	}
	j->state = 0;
	return NULL;
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
			   int errnum)
{
	struct kcore_dump_result *r = d->res;

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
	r->errors[r->nerrors++] =
		(struct kcore_read_error){ offset, len, errnum };
}

/* Read [offset, offset + len); unreadable pages read as zeros and are
 * recorded.  Only out-of-memory is fatal. */
static void read_range(struct dump *d, unsigned char *buf, uint64_t offset,
		       uint64_t len)
{
	struct kcore_error *err;
	size_t done;

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
			add_read_error(d, offset + pos, n,
				       err->errnum ? err->errnum : EIO);
			kcore_error_destroy(err);
		}
		pos += n;
	}
}

/* The data extent at or after seg-relative pos: [*ds, *de), or *ds ==
 * seg->size when only holes remain. */
static void data_extent(struct dump *d, size_t si, uint64_t pos, uint64_t *ds,
			uint64_t *de)
{
	const struct kcore_plan_segment *seg = &d->plan->segs[si];
	struct kcore_error *err;
	uint64_t data, data_end;

	*ds = *de = seg->size;
	if (pos >= seg->src_avail)
		return;
	if (!d->use_seek) {
		*ds = pos;
		*de = seg->src_avail;
		return;
	}
	if (d->ext_valid && d->ext_seg == si && pos >= d->ext_start &&
	    pos < d->ext_end) {
		*ds = pos;
		*de = d->ext_end;
		return;
	}
	err = kcore_source_next_data(d->src, seg->src_offset + pos,
				     seg->src_offset + seg->src_avail, &data,
				     &data_end);
	if (err) { /* cannot tell: read it */
		kcore_error_destroy(err);
		*ds = pos;
		*de = seg->src_avail;
		return;
	}
	if (data >= seg->src_offset + seg->src_avail)
		return;
	*ds = data - seg->src_offset;
	*de = data_end - seg->src_offset;
	d->ext_valid = true;
	d->ext_seg = si;
	d->ext_start = *ds;
	d->ext_end = *de;
}

static void fill_job(struct dump *d, struct job *j)
{
	const struct kcore_plan_segment *seg = &d->plan->segs[j->seg];
	uint64_t pos = j->seg_off, end = j->seg_off + j->len;

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
		read_range(d, j->buf + (pos - j->seg_off),
			   seg->src_offset + pos, de - pos);
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
	fprintf(f, "dump_sha256=%s\nsegments=%zu\n", hex, d->plan->nsegs);
	for (size_t i = 0; i < d->plan->nsegs; i++) {
		const struct kcore_plan_segment *s = &d->plan->segs[i];
		char label[160];

		snprintf(label, sizeof(label), "%s", s->label ? s->label : "-");
		clean(label);
		digest_text(d, s->digest, hex);
		fprintf(f,
			"segment=%zu vaddr=0x%016" PRIx64 " size=0x%016" PRIx64
			" data=%020" PRIu64 " class=%s sha256=%s label=%s\n",
			i, s->vaddr, s->size, s->data_bytes,
			kcore_segment_class_name(s->cls), hex, label);
	}
	free(cmd);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	*ret_len = len;
	return buf;
}

static struct kcore_error *build_header(struct dump *d)
{
	size_t nphdr = 1 + d->plan->nsegs, notes_len = 0, meta_len;
	bool xnum = nphdr >= PN_XNUM;
	uint64_t notes_off, off;
	unsigned char *p;
	char *meta;
	Elf64_Ehdr eh;

	meta = metadata_text(d, digest_location(d), &meta_len);
	if (!meta)
		return &kcore_error_nomem;
	d->meta_len = meta_len + 64; /* room for longer final values */
	for (size_t i = 0; i < d->src->nnotes; i++) {
		const struct kcore_note *n = &d->src->notes[i];

		if (strcmp(n->name, NOTE_NAME) == 0)
			continue; /* a source's own metadata is replaced */
		notes_len += note_size(strlen(n->name) + 1, n->descsz);
	}
	/* A kernel without the note gets the VMCOREINFO we found. */
	bool add_vmcoreinfo = d->src->vmcoreinfo &&
			      d->src->info.vmcoreinfo_origin &&
			      strcmp(d->src->info.vmcoreinfo_origin, "note");
	size_t vi_len = 0;
	const char *vi_text =
		add_vmcoreinfo
			? kcore_vmcoreinfo_text(d->src->vmcoreinfo, &vi_len)
			: NULL;
	if (add_vmcoreinfo)
		notes_len += note_size(sizeof("VMCOREINFO"), vi_len);
	notes_len += note_size(sizeof(NOTE_NAME), d->meta_len);
	notes_off = sizeof(Elf64_Ehdr) + nphdr * sizeof(Elf64_Phdr) +
		    (xnum ? sizeof(Elf64_Shdr) : 0);
	d->header_len = notes_off + notes_len;
	d->header = calloc(1, d->header_len);
	if (!d->header) {
		free(meta);
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
	/* Notes. */
	p = d->header + notes_off;
	for (size_t i = 0; i < d->src->nnotes; i++) {
		const struct kcore_note *n = &d->src->notes[i];

		if (strcmp(n->name, NOTE_NAME) != 0)
			p = put_note(p, n->name, n->type, n->desc, n->descsz);
	}
	if (add_vmcoreinfo)
		p = put_note(p, "VMCOREINFO", 0, vi_text, vi_len);
	d->meta_off =
		(size_t)(p - d->header) + 12 + round_up(sizeof(NOTE_NAME), 4);
	/* The descriptor is the reserved slot: text, then NUL padding. */
	char *slot = calloc(1, d->meta_len);
	if (!slot) {
		free(meta);
		return &kcore_error_nomem;
	}
	memcpy(slot, meta, meta_len);
	p = put_note(p, NOTE_NAME, NOTE_TYPE_META, slot, d->meta_len);
	free(slot);
	free(meta);
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
	d->hashers = calloc(d->plan->nsegs, sizeof(*d->hashers));
	if (!d->ring || !d->threads || !d->hashers)
		return &kcore_error_nomem;
	pages = (d->block + d->page - 1) / d->page;
	blocks = (d->block + KCORE_HASH_BLOCK - 1) / KCORE_HASH_BLOCK;
	for (size_t i = 0; i < d->nring; i++) {
		struct job *j = &d->ring[i];

		j->buf = aligned_alloc(4096, round_up(d->block, 4096));
		j->zero = calloc(pages, 1);
		j->digest = calloc(blocks, sizeof(*j->digest));
		j->nonzero = calloc(blocks, 1);
		if (!j->buf || !j->zero || !j->digest || !j->nonzero)
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
		if (pthread_create(&d->threads[i], NULL, worker, d) != 0) {
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
	}
	free(d->ring);
	free(d->threads);
	for (size_t i = 0; d->hashers && i < d->plan->nsegs; i++)
		kcore_seg_hasher_destroy(d->hashers[i]);
	free(d->hashers);
	kcore_ostream_destroy(d->os);
	d->os = NULL; /* the final progress report runs after teardown */
	free(d->header);
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
	d.use_seek = kcore_source_knows_holes(src);
	ret->stats.seek_data = d.use_seek;
	for (size_t i = 0; i < plan->nsegs; i++)
		ret->stats.bytes_total += plan->segs[i].size;
	d.t0 = now_ns(CLOCK_MONOTONIC);
	ret->stats.start_ns = now_ns(CLOCK_REALTIME);
	err = kcore_output_open(opts->output, opts->force, opts->sync, &d.out);
	if (err)
		return err;
	d.sparse = d.out->seekable && opts->compress == KCORE_COMPRESS_NONE;
	d.rewritable = d.out->seekable && !d.sparse;
	if (!d.sparse) {
		struct kcore_ostream_opts so = {
			.method = opts->compress,
			.level = opts->level,
			.threads = opts->threads,
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
		err = build_header(&d);
	if (!err && d.rewritable) {
		err = kcore_ostream_write_stored(d.os, d.header, d.header_len,
						 &d.header_out);
		d.pos = d.header_len;
	} else if (!err) {
		err = out_write(&d, 0, d.header, d.header_len);
	}
	for (size_t i = 0; !err && i < plan->nsegs; i++)
		err = dump_segment(&d, i);
	while (!err && d.retired < d.submitted)
		err = retire_oldest(&d);
	if (err)
		goto out;
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
	err = write_metadata(&d);
	if (!err && !d.sparse && d.pos < d.total)
		/* A stream ends with the image's last segment. */
		err = kcore_ostream_write_zeros(d.os, d.total - d.pos);
	if (!err && !d.sparse)
		err = kcore_ostream_finish(d.os);
	if (!err && d.rewritable)
		err = kcore_ostream_rewrite_stored(d.os, d.header_out, d.header,
						   d.header_len);
	if (err)
		goto out;
	if (d.os)
		ret->stats.bytes_written = kcore_ostream_bytes_out(d.os);
	err = kcore_output_commit(d.out, d.sparse ? d.total
						  : ret->stats.bytes_written);
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
	free(res->errors);
	free(res->output_path);
	free(res->digest_location);
	memset(res, 0, sizeof(*res));
}
