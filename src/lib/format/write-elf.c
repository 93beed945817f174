// SPDX-License-Identifier: MIT
/*
 * ELF output.  The ELF header, program headers and notes come first (crash
 * reads the notes from the area before the first PT_LOAD), then each
 * PT_LOAD's bytes at a page-aligned offset, in ascending p_vaddr: in a sparse
 * file zero pages and holes stay file holes, in a stream (zstd, xz, or plain on
 * a pipe) they are zeros.
 *
 * Our metadata note has a fixed size.  When the file's SHA-256 is
 * computed (not --hash none), every byte is written once, in file order,
 * so that it is hashed as it goes out (dump.c): the header and notes are
 * final when they are written first, and the final metadata follows the
 * image as a trailer: the text, its length (le64) and TRAILER_MAGIC, as a
 * pipe always carries it.  With --hash none the final note is written in
 * place: with pwrite in a sparse file, by rewriting the header's stored
 * (uncompressed) frame in a compressed file.  An incomplete dump also has
 * makedumpfile's DUMP_ELF_INCOMPLETE in e_flags, but on a pipe: in a file
 * that is known only at the end, when the header is rewritten (and a
 * hashed file is then read back to hash it).
 */
#include <elf.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "elfcore.h"
#include "source-impl.h"
#include "write.h"

#define TRAILER_MAGIC "KCDTRL01"
/* e_flags of an incomplete dump, as makedumpfile sets it on ENOSPC and
 * crash reads it ("This dumpfile is incomplete"). */
#define DUMP_ELF_INCOMPLETE 0x1

struct elf_writer {
	struct kcore_writer w;
	bool rewritable;     /* compressed file: the header is a stored frame */
	bool trailer;	     /* the final metadata after the image */
	uint64_t header_out; /* where that frame starts in the file */
	unsigned char *header;
	size_t header_len;
	size_t meta_off, meta_len; /* our note's descriptor in the header */
	uint64_t total;		   /* size of the ELF image */
	uint64_t end;		   /* of the file: the image and its trailer */
	unsigned elf_class;	   /* 32 for the core of a 32-bit process */
};

static struct kcore_error *build_header(struct elf_writer *ew)
{
	const struct kcore_write_setup *ws = ew->w.ws;
	struct kcore_plan *plan = ws->plan;
	size_t nphdr = 1 + plan->nsegs;
	struct kcore_note_blob notes;
	uint64_t notes_off, off;
	struct kcore_error *err;

	err = kcore_write_notes(&ew->w, &notes);
	if (err)
		return err;
	ew->elf_class = ws->src->info.elf_class == 32 ? 32 : 64;
	notes_off = kcore_elfcore_headers_len(ew->elf_class, nphdr);
	ew->header_len = notes_off + notes.len;
	ew->header = calloc(1, ew->header_len);
	if (!ew->header) {
		kcore_note_blob_deinit(&notes);
		return &kcore_error_nomem;
	}
	kcore_elfcore_put_ehdr(ew->header, ew->elf_class, ws->src->info.machine,
			       nphdr, 0);
	memcpy(ew->header + notes_off, notes.data, notes.len);
	ew->meta_off = notes_off + notes.meta_off;
	ew->meta_len = notes.meta_len;
	/* Program headers: PT_NOTE, then the loads at page-aligned offsets. */
	kcore_elfcore_put_phdr(ew->header, ew->elf_class, 0,
			       &(struct kcore_elfcore_phdr){
				       .type = PT_NOTE,
				       .offset = notes_off,
				       .filesz = notes.len,
				       .align = 4,
			       });
	kcore_note_blob_deinit(&notes);
	off = kcore_round_up(ew->header_len, ws->page);
	ew->total = ew->header_len;
	for (size_t i = 0; i < plan->nsegs; i++) {
		struct kcore_plan_segment *s = &plan->segs[i];

		if (s->shared) {
			s->out_offset = plan->segs[s->share_seg].out_offset +
					s->share_off;
		} else {
			s->out_offset = off;
			off = kcore_round_up(off + s->size, ws->page);
			if (s->out_offset + s->size > ew->total)
				ew->total = s->out_offset + s->size;
		}
		struct kcore_elfcore_phdr ph = {
			.type = PT_LOAD,
			.flags = s->flags,
			.offset = s->out_offset,
			.vaddr = s->vaddr,
			/* ELF32 holds only the 32-bit cores of processes:
			 * no physical addresses, 0 as the kernel writes.
			 * A shared segment (the kernel image inside RAM)
			 * has none either: its physical pages are RAM's. */
			.paddr = s->has_paddr && !s->shared ? s->paddr
				 : ew->elf_class == 32	    ? 0
							    : UINT64_MAX,
			.filesz = s->size,
			.memsz = s->memsz > s->size ? s->memsz : s->size,
			.align = 0, /* crash misreads p_align 4096 */
		};

		if (!kcore_elfcore_phdr_fits(ew->elf_class, &ph))
			return kcore_error_create(
				KCORE_ERR_UNSUPPORTED, 0, NULL,
				"segment at 0x%" PRIx64 " (offset %" PRIu64
				", %" PRIu64 " bytes) does not fit the 32-bit "
				"fields of an ELF32 core",
				ph.vaddr, ph.offset, ph.filesz);
		kcore_elfcore_put_phdr(ew->header, ew->elf_class, i + 1, &ph);
	}
	return NULL;
}

/*
 * What the final header may take beyond the first one, compressed: the
 * metadata note's digests (64 hex digits, about 32 bytes compressed,
 * zeros at first), its numbers and times, e_flags.
 */
static uint64_t header_room(const struct elf_writer *ew)
{
	/* The time map's lines, which compress poorly. */
	return 4096 + 40 * (uint64_t)ew->w.ws->plan->nsegs +
	       64 * (uint64_t)(ew->w.ws->res->read_time_cells +
			       ew->w.ws->res->nread_phases);
}

/*
 * PT_LOADs in ascending p_vaddr (the ELF ABI).  A segment whose physical
 * pages lie inside an earlier RAM segment (the kernel image: kcore lists it
 * as TEXT and again in RAM) shares RAM's file bytes: program headers may
 * describe the same bytes, and two copies read at different moments of a
 * live kernel differ (drgn reads the image's, crash RAM's).
 *
 * A shared segment is written with p_paddr -1, as kcore's vmalloc: its
 * physical pages are described once, by RAM.  So the physical ranges of
 * the PT_LOADs ascend in program header order and do not overlap, which
 * is what Volatility 3 assumes (its ELF layer finds a physical address by
 * binary search over the PT_LOADs' p_paddr, in header order): the image,
 * listed last with the physical address of pages in the middle of RAM,
 * made every address above the image's end resolve to it and fail.
 * crash takes phys_base from VMCOREINFO and reads the image physically
 * (from RAM), drgn and gdb read it by p_vaddr: the same file bytes.
 */
static struct kcore_error *elfw_plan(struct kcore_plan *plan, uint64_t page,
				     size_t *dropped)
{
	kcore_plan_sort_virtual(plan);
	for (size_t i = 0; i < plan->nsegs; i++) {
		struct kcore_plan_segment *t = &plan->segs[i];

		if (t->cls == KCORE_CLASS_RAM || !t->has_paddr ||
		    t->memsz > t->size || t->paddr % page)
			continue;
		for (size_t j = 0; j < i; j++) {
			const struct kcore_plan_segment *r = &plan->segs[j];

			if (r->cls != KCORE_CLASS_RAM || !r->has_paddr ||
			    r->shared || t->paddr < r->paddr ||
			    t->paddr - r->paddr > r->size ||
			    t->size > r->size - (t->paddr - r->paddr))
				continue;
			t->shared = true;
			t->share_seg = j;
			t->share_off = t->paddr - r->paddr;
			break;
		}
	}
	return NULL;
}

static void elfw_destroy(struct kcore_writer *w)
{
	struct elf_writer *ew = (struct elf_writer *)w;

	kcore_sink_deinit(&w->sink);
	free(ew->header);
	free(ew);
}

static struct kcore_error *elfw_begin(const struct kcore_write_setup *ws,
				      struct kcore_writer **ret)
{
	struct elf_writer *ew = calloc(1, sizeof(*ew));
	bool stream =
		!ws->out->seekable || ws->opts->compress != KCORE_COMPRESS_NONE;
	struct kcore_error *err;

	if (!ew)
		return &kcore_error_nomem;
	ew->w.ops = &kcore_write_elf;
	ew->w.ws = ws;
	ew->rewritable = ws->out->seekable && stream;
	ew->trailer = !ws->opts->no_hash || (stream && !ew->rewritable);
	ew->w.digest_location =
		ws->opts->no_hash ? KCORE_DIGESTS_NONE : KCORE_DIGESTS_TRAILER;
	ew->w.in_place = !stream;
	err = kcore_sink_init(&ew->w.sink, ws->out, ws->opts, stream);
	if (!err)
		err = build_header(ew);
	if (!err && ew->rewritable) {
		err = kcore_ostream_write_stored(
			ew->w.sink.os, ew->header, ew->header_len,
			header_room(ew), &ew->header_out);
		ew->w.sink.pos = ew->header_len;
	} else if (!err) {
		err = kcore_sink_pwrite(&ew->w.sink, 0, ew->header,
					ew->header_len);
	}
	if (err) {
		elfw_destroy(&ew->w);
		return err;
	}
	*ret = &ew->w;
	return NULL;
}

/* Data page runs; zero pages become holes. */
static struct kcore_error *elfw_block(struct kcore_writer *w,
				      const struct kcore_block *b)
{
	if (w->ws->plan->segs[b->seg].shared)
		return NULL; /* its bytes are its share_seg's */
	return kcore_block_runs(w, b, kcore_write_run_in_place);
}

/* A segment's bytes go unchanged where its program header says. */
static struct kcore_error *elfw_place(struct kcore_writer *w, size_t seg,
				      uint64_t off, uint64_t *ret_offset)
{
	*ret_offset = w->ws->plan->segs[seg].out_offset + off;
	return NULL;
}

/* Holes: file holes, or zeros before the next bytes of a stream. */
static struct kcore_error *elfw_hole(struct kcore_writer *w, size_t seg,
				     uint64_t off, uint64_t len)
{
	return NULL;
}

/* Final metadata: a trailer, or in place (--hash none, a seekable file). */
static struct kcore_error *write_metadata(struct elf_writer *ew)
{
	struct kcore_writer *w = &ew->w;
	size_t len;
	char *meta = kcore_write_metadata(w, &len);
	struct kcore_error *err;

	if (!meta)
		return &kcore_error_nomem;
	if (len > ew->meta_len) {
		free(meta);
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "metadata grew past its reserved "
					  "size");
	}
	ew->end = ew->total;
	if (!ew->trailer && !w->sink.os) {
		unsigned char *slot = calloc(1, ew->meta_len);

		if (!slot) {
			free(meta);
			return &kcore_error_nomem;
		}
		memcpy(slot, meta, len);
		err = kcore_pwrite_all(w->sink.io, w->sink.out->fd,
				       w->sink.out->tmp, slot, ew->meta_len,
				       ew->meta_off);
		free(slot);
	} else if (!ew->trailer) {
		/* Rewritten with the header once the stream is finished. */
		memset(ew->header + ew->meta_off, 0, ew->meta_len);
		memcpy(ew->header + ew->meta_off, meta, len);
		err = NULL;
	} else {
		unsigned char tail[16];
		uint64_t l = len;

		memcpy(tail, &l, 8);
		memcpy(tail + 8, TRAILER_MAGIC, 8);
		err = kcore_sink_pwrite(&w->sink, ew->total, meta, len);
		if (!err)
			err = kcore_sink_pwrite(&w->sink, ew->total + len, tail,
						sizeof(tail));
		ew->end = ew->total + len + sizeof(tail);
	}
	free(meta);
	return err;
}

/* An incomplete dump says so in e_flags, where the header can still be
 * written: in a file, not on a pipe (there the trailer says it). */
static struct kcore_error *mark_incomplete(struct elf_writer *ew)
{
	struct kcore_writer *w = &ew->w;
	size_t at = kcore_elfcore_flags_offset(ew->elf_class);
	unsigned char *flags = ew->header + at;

	kcore_store_le(flags, kcore_load(flags, 4, false) | DUMP_ELF_INCOMPLETE,
		       4);
	if (w->sink.os)
		return NULL; /* rewritten with the stored frame, or a pipe */
	return kcore_pwrite_all(w->sink.io, w->sink.out->fd, w->sink.out->tmp,
				flags, 4, at);
}

static struct kcore_error *elfw_finish(struct kcore_writer *w,
				       const struct kcore_dump_result *summary)
{
	struct elf_writer *ew = (struct elf_writer *)w;
	struct kcore_error *err = write_metadata(ew);

	if (!err && kcore_dump_incomplete(summary))
		err = mark_incomplete(ew);

	/* A stream ends with the image's last segment (or its trailer). */
	if (!err)
		err = kcore_sink_pad(&w->sink, ew->end);
	if (!err)
		err = kcore_sink_finish(&w->sink);
	/* The final header: the note (--hash none) or the incomplete mark. */
	if (!err && ew->rewritable &&
	    (!ew->trailer || kcore_dump_incomplete(summary)))
		err = kcore_ostream_rewrite_stored(w->sink.os, ew->header_out,
						   ew->header, ew->header_len);
	w->sink.size = ew->end;
	return err;
}

const struct kcore_writer_ops kcore_write_elf = {
	.format = KCORE_FORMAT_ELF,
	.name = "elf",
	.title = "ELF",
	.plan = elfw_plan,
	.begin = elfw_begin,
	.block = elfw_block,
	.hole = elfw_hole,
	.place = elfw_place,
	.finish = elfw_finish,
	.destroy = elfw_destroy,
};
