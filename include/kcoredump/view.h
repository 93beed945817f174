/* SPDX-License-Identifier: MIT */
/*
 * A random-access view of any dump as a plain ELF core: the file itself
 * for an ELF core, the ELF inside a .zst/.xz, and for a kdump, LiME or
 * AVML file the ELF core kcoredump reads it as (an ELF header, one PT_NOTE
 * with the dump's notes and VMCOREINFO, one PT_LOAD per physical range,
 * p_align 0), with the kernel image and the direct map at their virtual
 * addresses when the dump's page tables say them exactly (the ELF
 * `convert --format elf` writes).  Reads of holes return zeros without touching
 * the underlying file (file holes, kdump bitmaps, the hole map of a stream);
 * next_data tells data from holes as SEEK_DATA/SEEK_HOLE would.  What
 * `kcoredump mount` serves.  Thread-safe: one lock around each call.
 */
#ifndef KCOREDUMP_VIEW_H
#define KCOREDUMP_VIEW_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The default frame cache of a view: the decompressed bytes of the
 * frames holding data, at least MIN, at most MAX and a quarter of RAM. */
#define KCORE_VIEW_CACHE_MIN (64ull << 20)
#define KCORE_VIEW_CACHE_MAX (1ull << 30)

struct kcore_view_opts {
	/* Decoded frames of a .zst/.xz to keep (0: the default above). */
	size_t cache_bytes;
	/* kcore_open_opts.machine: of a LiME or AVML image whose memory
	 * does not tell it (EM_NONE: not given). */
	uint16_t machine;
};

struct kcore_view;

struct kcore_error *kcore_view_open(const char *path,
				    const struct kcore_view_opts *opts,
				    struct kcore_view **ret);
void kcore_view_destroy(struct kcore_view *v);

/* The ELF core's size. */
uint64_t kcore_view_size(const struct kcore_view *v);
/* Bytes that are data, not holes (counted once when opened). */
uint64_t kcore_view_data_bytes(const struct kcore_view *v);
/* The input format ("file", "zstd", "kdump", ...). */
const char *kcore_view_format(const struct kcore_view *v);
/* Whether holes are known (else everything is data). */
bool kcore_view_knows_holes(const struct kcore_view *v);
/* The served ELF's e_machine: EM_NONE for a LiME or AVML dump whose
 * memory did not tell it and no machine was given. */
uint16_t kcore_view_machine(const struct kcore_view *v);

/*
 * Read [offset, offset + len), clipped at the size: *ret_done bytes
 * (fewer only at the end).  Holes read as zeros unread.
 */
struct kcore_error *kcore_view_pread(struct kcore_view *v, void *buf,
				     size_t len, uint64_t offset,
				     size_t *ret_done);
/*
 * The first data byte at or after offset and the end of its run;
 * *data = *data_end = size when only holes remain.
 */
struct kcore_error *kcore_view_next_data(struct kcore_view *v, uint64_t offset,
					 uint64_t *data, uint64_t *data_end);

/* Bytes with data at [offset, offset + len) of the view, whole pages of
 * it (kcore_view_prefetch). */
typedef void kcore_view_data_fn(void *arg, uint64_t offset, const void *data,
				size_t len);

/*
 * Decode every frame with data of a .zst dump into the frame cache, in
 * file order, beside the reads (the decoding holds no lock readers wait
 * on): for a thread started after opening, so that random reads later
 * find their frames decoded.  Does nothing when those frames do not all
 * fit the cache (it never pushes out what readers touched), for other
 * formats (.xz included), or once *stop (may be NULL) is set.  With fn
 * (may be NULL), the frames are not put in the cache: fn gets each
 * frame's runs of pages that are not all zeros instead (the frames
 * readers decoded first too), called outside every lock of the view,
 * from this thread, to keep them elsewhere (the kernel's page cache); not
 * for a kdump, LiME or AVML inside the .zst (their view is rebuilt: then
 * the frames are cached as without fn).
 */
struct kcore_error *kcore_view_prefetch(struct kcore_view *v,
					volatile sig_atomic_t *stop,
					kcore_view_data_fn *fn, void *arg);

/* Frames of a .zst/.xz decoded so far (cache misses); 0 for others. */
uint64_t kcore_view_frames_decoded(const struct kcore_view *v);

#ifdef __cplusplus
}
#endif

#endif
