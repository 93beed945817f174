// SPDX-License-Identifier: MIT
/*
 * LiME output (version 1): for each RAM range a 32-byte header { u32 magic
 * "EMiL", u32 version 1, u64 start, u64 end (inclusive), 8 zero bytes },
 * then the range's bytes.  Zero pages stay file holes, as in ELF; in a
 * stream they are zeros.  A range's header goes out with its first bytes,
 * so that a stream is written in order.  LiME has no room for notes: the
 * digests are in the summary only.
 */
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "lime.h"
#include "write.h"

struct lime_writer {
	struct kcore_writer w;
	size_t next;	/* ranges whose header is written */
	uint64_t total; /* file size */
};

static struct kcore_error *lime_plan(struct kcore_plan *plan, uint64_t page,
				     size_t *dropped)
{
	return kcore_plan_restrict_physical(plan, page, dropped);
}

static void lime_destroy(struct kcore_writer *w)
{
	kcore_sink_deinit(&w->sink);
	free(w);
}

static struct kcore_error *lime_begin(const struct kcore_write_setup *ws,
				      struct kcore_writer **ret)
{
	struct lime_writer *lw = calloc(1, sizeof(*lw));
	bool stream =
		!ws->out->seekable || ws->opts->compress != KCORE_COMPRESS_NONE;
	struct kcore_error *err;
	uint64_t off = 0;

	if (!lw)
		return &kcore_error_nomem;
	lw->w.ops = &kcore_write_lime;
	lw->w.ws = ws;
	lw->w.digest_location =
		ws->opts->no_hash ? KCORE_DIGESTS_NONE : KCORE_DIGESTS_SUMMARY;
	err = kcore_sink_init(&lw->w.sink, ws->out, ws->opts, stream);
	if (err) {
		lime_destroy(&lw->w);
		return err;
	}
	for (size_t i = 0; i < ws->plan->nsegs; i++) {
		ws->plan->segs[i].out_offset = off + LIME_HEADER;
		off += LIME_HEADER + ws->plan->segs[i].size;
	}
	lw->total = off;
	*ret = &lw->w;
	return NULL;
}

/* The range headers of segments up to seg, in file order. */
static struct kcore_error *headers_upto(struct lime_writer *lw, size_t seg)
{
	const struct kcore_plan *plan = lw->w.ws->plan;

	for (; lw->next <= seg && lw->next < plan->nsegs; lw->next++) {
		const struct kcore_plan_segment *s = &plan->segs[lw->next];
		unsigned char h[LIME_HEADER] = { 0 };
		struct kcore_error *err;

		kcore_store_le(h, LIME_MAGIC, 4);
		kcore_store_le(h + 4, LIME_VERSION, 4);
		kcore_store_le(h + 8, s->paddr, 8);
		kcore_store_le(h + 16, s->paddr + s->size - 1, 8);
		err = kcore_sink_pwrite(
			&lw->w.sink, s->out_offset - LIME_HEADER, h, sizeof(h));
		if (err)
			return err;
	}
	return NULL;
}

static struct kcore_error *lime_block(struct kcore_writer *w,
				      const struct kcore_block *b)
{
	struct kcore_error *err = headers_upto((struct lime_writer *)w, b->seg);

	return err ? err : kcore_block_runs(w, b, kcore_write_run_in_place);
}

/* A range's bytes go unchanged after its header. */
static struct kcore_error *lime_place(struct kcore_writer *w, size_t seg,
				      uint64_t off, uint64_t *ret_offset)
{
	*ret_offset = w->ws->plan->segs[seg].out_offset + off;
	return headers_upto((struct lime_writer *)w, seg);
}

/* Holes: file holes, or zeros before the next bytes of a stream. */
static struct kcore_error *lime_hole(struct kcore_writer *w, size_t seg,
				     uint64_t off, uint64_t len)
{
	return NULL;
}

static struct kcore_error *lime_finish(struct kcore_writer *w,
				       const struct kcore_dump_result *summary)
{
	struct lime_writer *lw = (struct lime_writer *)w;
	struct kcore_error *err = headers_upto(lw, w->ws->plan->nsegs);

	/* A stream ends with the last range's bytes. */
	if (!err)
		err = kcore_sink_pad(&w->sink, lw->total);
	if (!err)
		err = kcore_sink_finish(&w->sink);
	w->sink.size = lw->total;
	return err;
}

const struct kcore_writer_ops kcore_write_lime = {
	.format = KCORE_FORMAT_LIME,
	.name = "lime",
	.title = "LiME",
	.physical = true,
	.plan = lime_plan,
	.begin = lime_begin,
	.block = lime_block,
	.hole = lime_hole,
	.place = lime_place,
	.finish = lime_finish,
	.destroy = lime_destroy,
};
