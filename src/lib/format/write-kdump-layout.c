// SPDX-License-Identifier: MIT
/*
 * The kdump file's layout and its writes (write-kdump.c is the writer):
 * where the sub-header, notes, bitmaps, descriptors and page data go,
 * each write in place or as a flattened record, the descriptors buffered
 * into whole-descriptor chunks, the bitmaps, and the header and
 * sub-header with their fields (utsname from the dump's init_uts_ns).
 */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "plan.h"
#include "source-impl.h"
#include "write-kdump.h"

#define DESC_CHUNK 2730 /* descriptors per write: 65520 bytes */

static void set_bit(unsigned char *bm, uint64_t n)
{
	bm[n >> 3] |= (unsigned char)(1u << (n & 7));
}

/* A write of the kdump file: in place, or a flattened record. */
struct kcore_error *kcore_kdump_out(struct kdump_writer *k, uint64_t offset,
				    const void *buf, size_t len)
{
	struct kcore_sink *s = &k->w.sink;
	unsigned char rec[16];
	struct kcore_error *err;

	if (!k->flat)
		return kcore_sink_pwrite(s, offset, buf, len);
	/* Big-endian offset and size, then the data. */
	for (int i = 0; i < 8; i++) {
		rec[i] = (unsigned char)(offset >> (56 - 8 * i));
		rec[8 + i] = (unsigned char)((uint64_t)len >> (56 - 8 * i));
	}
	err = kcore_sink_pwrite(s, s->pos, rec, sizeof(rec));
	return err ? err : kcore_sink_pwrite(s, s->pos, buf, len);
}

/* Layout for these pfn ranges (ascending, disjoint), ndesc_max page
 * descriptors and notes_len bytes of notes.  Every pfn in the ranges is
 * RAM (bitmap 1) and, until excluded, dumped (bitmap 2). */
struct kcore_error *kcore_kdump_layout(struct kdump_writer *k,
				       const struct kdump_range *ranges,
				       size_t nranges, uint64_t ndesc_max,
				       size_t notes_len)
{
	uint64_t page = k->page;

	k->max_mapnr = nranges ? ranges[nranges - 1].end_pfn : 0;
	k->bitmap_len = kcore_round_up((k->max_mapnr + 7) / 8, page);
	if (!k->bitmap_len)
		k->bitmap_len = page;
	if (k->bitmap_len / page * 2 > UINT32_MAX)
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, NULL,
					  "physical address space too large "
					  "for a kdump bitmap");
	k->bitmap1 = calloc(1, k->bitmap_len);
	k->bitmap2 = calloc(1, k->bitmap_len);
	k->descbuf = malloc(DESC_CHUNK * KDUMP_DESC_SIZE);
	if (!k->bitmap1 || !k->bitmap2 || !k->descbuf)
		return &kcore_error_nomem;
	for (size_t i = 0; i < nranges; i++)
		for (uint64_t pfn = ranges[i].start_pfn;
		     pfn < ranges[i].end_pfn; pfn++) {
			set_bit(k->bitmap1, pfn);
			set_bit(k->bitmap2, pfn);
		}
	k->notes_off = page + KDUMP_SUBHEADER_SIZE;
	k->sub_blocks =
		kcore_round_up(KDUMP_SUBHEADER_SIZE + notes_len, page) / page;
	k->ndesc_max = ndesc_max;
	k->desc_off = (1 + k->sub_blocks) * page + 2 * k->bitmap_len;
	k->data_off =
		kcore_round_up(k->desc_off + ndesc_max * KDUMP_DESC_SIZE, page);
	k->data_pos = k->data_off;
	return NULL;
}

/* Write the shared zero page (compressed by codec) at data_off. */
struct kcore_error *kcore_kdump_zero_page(struct kdump_writer *k,
					  struct kcore_page_codec *codec)
{
	unsigned char *zero = calloc(2, k->page), *o = zero + k->page;
	struct kcore_error *err;

	if (!zero)
		return &kcore_error_nomem;
	k->zero_size = kcore_page_codec_compress(codec, zero, o, k->page,
						 &k->zero_flags);
	err = kcore_kdump_out(k, k->data_pos, o, k->zero_size);
	k->data_pos += k->zero_size;
	free(zero);
	return err;
}

/* Write buffered descriptors. */
struct kcore_error *kcore_kdump_flush_descs(struct kdump_writer *k)
{
	uint64_t first = k->ndesc - k->desc_fill;
	struct kcore_error *err;

	if (!k->desc_fill)
		return NULL;
	err = kcore_kdump_out(k, k->desc_off + first * KDUMP_DESC_SIZE,
			      k->descbuf, k->desc_fill * KDUMP_DESC_SIZE);
	k->desc_fill = 0;
	return err;
}

/* The next dumped page (pfn order), its data already written at offset. */
struct kcore_error *kcore_kdump_desc_page(struct kdump_writer *k,
					  uint64_t offset, uint32_t size,
					  uint32_t flags)
{
	unsigned char *d;

	if (k->ndesc == k->ndesc_max)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "more dumped pages than the %llu "
					  "planned",
					  (unsigned long long)k->ndesc_max);
	d = k->descbuf + k->desc_fill * KDUMP_DESC_SIZE;
	put64(d, offset);
	put32(d + 8, size);
	put32(d + 12, flags);
	put64(d + 16, 0); /* page_flags */
	k->desc_fill++;
	k->ndesc++;
	k->dumped++;
	if (k->desc_fill == DESC_CHUNK)
		return kcore_kdump_flush_descs(k);
	return NULL;
}

struct kcore_error *kcore_kdump_desc_zero(struct kdump_writer *k)
{
	k->zero_pages++;
	return kcore_kdump_desc_page(k, k->data_off, (uint32_t)k->zero_size,
				     k->zero_flags);
}

/* pfn is not dumped: cleared in bitmap 2. */
void kcore_kdump_exclude(struct kdump_writer *k, uint64_t pfn)
{
	if (pfn < k->max_mapnr)
		k->bitmap2[pfn >> 3] &= (unsigned char)~(1u << (pfn & 7));
}

void kcore_kdump_exclude_range(struct kdump_writer *k, uint64_t start,
			       uint64_t end)
{
	for (uint64_t pfn = start; pfn < end; pfn++)
		kcore_kdump_exclude(k, pfn);
}

/* Write block 0, the sub-header, the notes and the bitmaps; first (a
 * flattened file, whose records are written once): all but the status and
 * our note's slot, which come last. */
struct kcore_error *
kcore_kdump_write_headers(struct kdump_writer *k,
			  const struct kdump_header_info *hi, bool first)
{
	const void *notes = k->notes.data;
	size_t notes_len = k->notes.len;
	unsigned char *blk;
	struct kcore_error *err;
	size_t hdr_len = (1 + k->sub_blocks) * k->page;

	blk = calloc(1, hdr_len);
	if (!blk)
		return &kcore_error_nomem;
	/* disk_dump_header (x86_64 layout). */
	memcpy(blk, "KDUMP   ", 8);
	put32(blk + 8, 6);
	for (int i = 0; i < 6; i++)
		memcpy(blk + 12 + 65 * i, hi->utsname[i], 64);
	put64(blk + 408, hi->timestamp_sec);
	put64(blk + 416, hi->timestamp_usec);
	put32(blk + STATUS_OFF, hi->status);
	put32(blk + 428, (uint32_t)k->page);
	put32(blk + 432, (uint32_t)k->sub_blocks);
	put32(blk + 436, (uint32_t)(2 * k->bitmap_len / k->page));
	put32(blk + 440,
	      k->max_mapnr > UINT32_MAX ? UINT32_MAX : (uint32_t)k->max_mapnr);
	/* total_ram_blocks, device_blocks, written_blocks, current_cpu: 0 */
	put32(blk + 460, (uint32_t)(hi->nr_cpus > 0 ? hi->nr_cpus : 1));
	/* kdump_sub_header. */
	unsigned char *s = blk + k->page;

	put64(s + 0, hi->phys_base);
	/* dump_level: 1 (DL_EXCLUDE_ZERO) at least, as makedumpfile -d 1:
	 * every zero page, the source's holes included, points at the one
	 * shared zero page; more with the classes kcore_plan_exclude() left
	 * out, which are not dumped (cleared in bitmap 2). */
	put32(s + 8, hi->dump_level | 1);
	put32(s + 12, 0);	     /* split */
	put64(s + 16, 0);	     /* start_pfn */
	put64(s + 24, k->max_mapnr); /* end_pfn */
	if (hi->vmcoreinfo_off != UINT64_MAX) {
		put64(s + 32, k->notes_off + hi->vmcoreinfo_off);
		put64(s + 40, hi->vmcoreinfo_size);
	}
	put64(s + 48, k->notes_off);
	put64(s + 56, notes_len);
	/* offset/size_eraseinfo stay 0. */
	put64(s + 80, 0);
	put64(s + 88, k->max_mapnr);
	put64(s + 96, k->max_mapnr);
	memcpy(s + KDUMP_SUBHEADER_SIZE, notes, notes_len);
	if (first) {
		/* Everything but the status and the slot; the padding after
		 * the slot is zeros. */
		err = kcore_kdump_out(k, 0, blk, STATUS_OFF);
		if (!err)
			err = kcore_kdump_out(k, STATUS_OFF + 4,
					      blk + STATUS_OFF + 4,
					      k->meta_off - STATUS_OFF - 4);
	} else {
		err = kcore_kdump_out(k, 0, blk, hdr_len);
	}
	free(blk);
	if (!err)
		err = kcore_kdump_out(k, hdr_len, k->bitmap1, k->bitmap_len);
	if (!err)
		err = kcore_kdump_out(k, hdr_len + k->bitmap_len, k->bitmap2,
				      k->bitmap_len);
	return err;
}

/* utsname for the header: the kernel's init_uts_ns when the dump holds
 * it, else what VMCOREINFO and the ELF header tell. */
static void header_utsname(struct kcore_source *src,
			   struct kdump_header_info *hi)
{
	const struct kcore_vmcoreinfo *vi = src->vmcoreinfo;
	const char *rel = src->info.kernel_release;
	char uts[6][65];
	uint64_t sym, off = 0;

	memset(hi->utsname, 0, sizeof(hi->utsname));
	if (vi && rel &&
	    kcore_vmcoreinfo_get_u64(vi, "SYMBOL(init_uts_ns)", &sym)) {
		kcore_vmcoreinfo_get_u64(vi, "OFFSET(uts_namespace.name)",
					 &off);
		struct kcore_error *err = kcore_source_read_vaddr(
			src, sym + off, uts, sizeof(uts));
		uint64_t pa;

		/* Where the image is not read virtually: __pa_symbol(). */
		if (err && src->arch && src->arch->pa_symbol &&
		    src->arch->pa_symbol(src, sym + off, &pa)) {
			kcore_error_destroy(err);
			err = kcore_source_read_paddr(src, pa, uts,
						      sizeof(uts));
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
		 src->arch ? src->arch->name : "unknown");
}

void kcore_kdump_header_info(struct kdump_writer *k,
			     struct kdump_header_info *hi)
{
	const struct kcore_write_setup *ws = k->w.ws;
	struct kcore_source *src = ws->src;

	memset(hi, 0, sizeof(*hi));
	header_utsname(src, hi);
	hi->timestamp_sec = ws->res->stats.start_ns / 1000000000ull;
	hi->timestamp_usec = ws->res->stats.start_ns % 1000000000ull / 1000;
	hi->status = kdump_codec_status(ws->opts->codec);
	/* makedumpfile's mark of a dump it could not finish: crash warns
	 * that the dumpfile is incomplete. */
	if (kcore_dump_incomplete(ws->res))
		hi->status |= KDUMP_STATUS_INCOMPLETE;
	for (size_t i = 0; i < src->nnotes; i++)
		if (strcmp(src->notes[i].name, "CORE") == 0 &&
		    src->notes[i].type == NT_PRSTATUS)
			hi->nr_cpus++;
	hi->phys_base = src->info.has_phys_base ? src->info.phys_base : 0;
	hi->vmcoreinfo_off = k->notes.vmcoreinfo_off;
	hi->vmcoreinfo_size = k->notes.vmcoreinfo_size;
	hi->dump_level = ws->plan->exclude.level;
}
