// SPDX-License-Identifier: MIT
/*
 * AVML output: LiME's layout with each range a snappy framed stream
 * (avml.h).  The encode step compresses each block in 64 KiB chunks
 * on the pipeline's workers; the in-order writer adds the range headers,
 * the zero chunks of holes (AVML has no holes) and the trailers, always as
 * a stream: a range's length is known once it is written.  AVML has no
 * room for notes: the digests are in the summary only.
 */
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>

#include "avml.h"
#include "bytes.h"
#include "write.h"

size_t kcore_avml_chunk_max(void)
{
	return 8 + snappy_max_compressed_length(AVML_CHUNK_DATA);
}

size_t kcore_avml_chunk(const unsigned char *in, size_t len, unsigned char *out)
{
	size_t clen = snappy_max_compressed_length(len);

	kcore_store_le(out + 4, kcore_avml_crc(in, len), 4);
	if (snappy_compress((const char *)in, len, (char *)out + 8, &clen) ==
		    SNAPPY_OK &&
	    clen < len) {
		kcore_store_le(
			out, AVML_CHUNK_COMPRESSED | (uint32_t)(clen + 4) << 8,
			4);
		return 8 + clen;
	}
	memcpy(out + 8, in, len);
	kcore_store_le(out, AVML_CHUNK_RAW | (uint32_t)(len + 4) << 8, 4);
	return 8 + len;
}

void kcore_avml_stream_id(unsigned char out[AVML_STREAM_ID_SIZE])
{
	kcore_store_le(out, AVML_CHUNK_STREAM_ID | 6u << 8, 4);
	memcpy(out + 4, "sNaPpY", 6);
}

void kcore_avml_range_header(uint64_t start, uint64_t size,
			     unsigned char out[AVML_RANGE_HEADER])
{
	memset(out, 0, AVML_RANGE_HEADER);
	kcore_store_le(out, AVML_MAGIC, 4);
	kcore_store_le(out + 4, AVML_VERSION, 4);
	kcore_store_le(out + 8, start, 8);
	kcore_store_le(out + 16, start + size - 1, 8); /* inclusive */
}

/* ---- the writer ---- */

static const unsigned char zero_data[AVML_CHUNK_DATA];

/* A block's framed chunks, back to back. */
struct avml_slot {
	unsigned char *cbuf;
	uint64_t clen;
};

struct avml_writer {
	struct kcore_writer w;
	/* The range being written (those before it are finished), its bytes
	 * so far, where its framed stream starts in the output. */
	size_t seg;
	bool open;
	uint64_t pos, stream;
	/* The chunk of AVML_CHUNK_DATA zero bytes; room for a shorter one. */
	unsigned char *zero, *tmp;
	size_t zero_len;
	struct avml_slot *slots;
	size_t nslots;
};

static struct kcore_error *avml_check_opts(struct kcore_dump_opts *opts,
					   const struct kcore_opts_given *given)
{
	/* Snappy, chunk by chunk: no stream around it, no levels. */
	if ((given->compress && opts->compress != KCORE_COMPRESS_NONE) ||
	    (!given->compress && opts->output &&
	     kcore_compress_from_suffix(opts->output) != KCORE_COMPRESS_NONE))
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "an AVML file is snappy-compressed; "
					  "it cannot also be a .zst or .xz "
					  "stream");
	if (opts->level)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "--level: AVML's snappy has no "
					  "levels");
	opts->compress = KCORE_COMPRESS_NONE;
	return NULL;
}

static struct kcore_error *avml_check(const struct kcore_dump_opts *opts,
				      const struct kcore_source *src,
				      uint64_t page)
{
	if (opts->compress != KCORE_COMPRESS_NONE)
		return kcore_error_create(KCORE_ERR_INVALID, 0, opts->output,
					  "an AVML file is snappy-compressed; "
					  "it cannot also be a %s stream",
					  kcore_compress_name(opts->compress));
	return NULL;
}

static struct kcore_error *avml_plan(struct kcore_plan *plan, uint64_t page,
				     size_t *dropped)
{
	return kcore_plan_restrict_physical(plan, page, dropped);
}

static void avml_destroy(struct kcore_writer *w)
{
	struct avml_writer *aw = (struct avml_writer *)w;

	kcore_sink_deinit(&w->sink);
	for (size_t i = 0; aw->slots && i < aw->nslots; i++)
		free(aw->slots[i].cbuf);
	free(aw->slots);
	free(aw->zero);
	free(aw->tmp);
	free(aw);
}

static struct kcore_error *avml_begin(const struct kcore_write_setup *ws,
				      struct kcore_writer **ret)
{
	struct avml_writer *aw = calloc(1, sizeof(*aw));
	size_t chunks = (ws->block + AVML_CHUNK_DATA - 1) / AVML_CHUNK_DATA;
	struct kcore_error *err;

	if (!aw)
		return &kcore_error_nomem;
	aw->w.ops = &kcore_write_avml;
	aw->w.ws = ws;
	aw->w.digest_location =
		ws->opts->no_hash ? KCORE_DIGESTS_NONE : KCORE_DIGESTS_SUMMARY;
	aw->zero = malloc(kcore_avml_chunk_max());
	aw->tmp = malloc(kcore_avml_chunk_max());
	aw->slots = calloc(ws->slots, sizeof(*aw->slots));
	aw->nslots = ws->slots;
	if (!aw->zero || !aw->tmp || !aw->slots) {
		avml_destroy(&aw->w);
		return &kcore_error_nomem;
	}
	for (size_t i = 0; i < ws->slots; i++) {
		aw->slots[i].cbuf = malloc(chunks * kcore_avml_chunk_max());
		if (!aw->slots[i].cbuf) {
			avml_destroy(&aw->w);
			return &kcore_error_nomem;
		}
	}
	aw->zero_len = kcore_avml_chunk(zero_data, AVML_CHUNK_DATA, aw->zero);
	/* Written in order, as a stream. */
	err = kcore_sink_init(&aw->w.sink, ws->out, ws->opts, true);
	if (err) {
		avml_destroy(&aw->w);
		return err;
	}
	*ret = &aw->w;
	return NULL;
}

/* On a worker: the block as framed chunks; a chunk of zero pages is
 * copied. */
static void avml_encode(struct kcore_writer *w, const struct kcore_block *b)
{
	struct avml_writer *aw = (struct avml_writer *)w;
	struct avml_slot *s = &aw->slots[b->slot];
	uint64_t page = w->ws->page;

	s->clen = 0;
	for (uint64_t off = 0; off < b->len; off += AVML_CHUNK_DATA) {
		uint64_t n = b->len - off < AVML_CHUNK_DATA ? b->len - off
							    : AVML_CHUNK_DATA;
		bool zero = true;

		for (uint64_t p = off / page; zero && p <= (off + n - 1) / page;
		     p++)
			zero = b->zero[p];
		if (zero && n == AVML_CHUNK_DATA) {
			memcpy(s->cbuf + s->clen, aw->zero, aw->zero_len);
			s->clen += aw->zero_len;
		} else {
			s->clen += kcore_avml_chunk(b->buf + off, (size_t)n,
						    s->cbuf + s->clen);
		}
	}
}

static struct kcore_error *out(struct avml_writer *aw, const void *buf,
			       size_t len)
{
	return kcore_sink_pwrite(&aw->w.sink, aw->w.sink.pos, buf, len);
}

/* Zero chunks for the open range up to its byte to.  A hole of a TiB is
 * 48 GB of them: the pipeline hears of it every 64 MiB. */
static struct kcore_error *zeros(struct avml_writer *aw, uint64_t to)
{
	const struct kcore_write_setup *ws = aw->w.ws;

	while (aw->pos < to) {
		if (aw->pos % (64u << 20) < AVML_CHUNK_DATA) {
			struct kcore_error *err = ws->tick(ws->arg);

			if (err)
				return err;
		}
		uint64_t n = to - aw->pos < AVML_CHUNK_DATA ? to - aw->pos
							    : AVML_CHUNK_DATA;
		const unsigned char *c = aw->zero;
		size_t clen = aw->zero_len;
		struct kcore_error *err;

		if (n < AVML_CHUNK_DATA) {
			clen = kcore_avml_chunk(zero_data, (size_t)n, aw->tmp);
			c = aw->tmp;
		}
		err = out(aw, c, clen);
		if (err)
			return err;
		aw->pos += n;
	}
	return NULL;
}

/*
 * Bring the output to byte off of segment seg: finish the ranges before it
 * (zero chunks to their end, the trailer), open the ranges up to it
 * (header, stream identifier), zero chunks up to off.  seg == nsegs
 * finishes them all.
 */
static struct kcore_error *go_to(struct avml_writer *aw, size_t seg,
				 uint64_t off)
{
	const struct kcore_plan *plan = aw->w.ws->plan;
	struct kcore_error *err;

	while (aw->seg < plan->nsegs) {
		const struct kcore_plan_segment *s = &plan->segs[aw->seg];
		unsigned char b[AVML_RANGE_HEADER];

		if (!aw->open) {
			kcore_avml_range_header(s->paddr, s->size, b);
			err = out(aw, b, AVML_RANGE_HEADER);
			aw->stream = aw->w.sink.pos;
			kcore_avml_stream_id(b);
			if (!err)
				err = out(aw, b, AVML_STREAM_ID_SIZE);
			if (err)
				return err;
			aw->open = true;
			aw->pos = 0;
		}
		if (aw->seg == seg)
			return zeros(aw, off);
		err = zeros(aw, s->size);
		if (err)
			return err;
		kcore_store_le(b, aw->w.sink.pos - aw->stream,
			       AVML_TRAILER_SIZE);
		err = out(aw, b, AVML_TRAILER_SIZE);
		if (err)
			return err;
		aw->open = false;
		aw->seg++;
	}
	return NULL;
}

static struct kcore_error *avml_block(struct kcore_writer *w,
				      const struct kcore_block *b)
{
	struct avml_writer *aw = (struct avml_writer *)w;
	const struct avml_slot *s = &aw->slots[b->slot];
	struct kcore_error *err = go_to(aw, b->seg, b->off);

	if (!err)
		err = out(aw, s->cbuf, s->clen);
	if (err)
		return err;
	aw->pos += b->len;
	/* Only counted: the chunks went out above. */
	return kcore_block_runs(w, b, NULL);
}

/* A hole: zero chunks. */
static struct kcore_error *avml_hole(struct kcore_writer *w, size_t seg,
				     uint64_t off, uint64_t len)
{
	return go_to((struct avml_writer *)w, seg, off + len);
}

static struct kcore_error *avml_finish(struct kcore_writer *w,
				       const struct kcore_dump_result *summary)
{
	struct kcore_error *err =
		go_to((struct avml_writer *)w, w->ws->plan->nsegs, 0);

	return err ? err : kcore_sink_finish(&w->sink);
}

const struct kcore_writer_ops kcore_write_avml = {
	.format = KCORE_FORMAT_AVML,
	.name = "avml",
	.title = "AVML",
	.physical = true,
	.check_opts = avml_check_opts,
	.check = avml_check,
	.plan = avml_plan,
	.begin = avml_begin,
	.encode = avml_encode,
	.block = avml_block,
	.hole = avml_hole,
	.finish = avml_finish,
	.destroy = avml_destroy,
};
