// SPDX-License-Identifier: MIT
/*
 * The plain ELF view of any dump (kcoredump/view.h): a source's ELF image,
 * read at random, with its holes known.  Every source already presents
 * itself as an ELF core image (source-impl.h); this adds the size, the data
 * bytes, zero-filled holes and a lock, for `kcoredump mount`.
 *
 * A physical-only vmcore (kdump, LiME, AVML) whose kernel virtual
 * addresses are exact (kcore_source_kernel_vmap) is served instead as the
 * ELF `convert --format elf` writes of it: its own headers, RAM at the
 * direct map and the kernel image's PT_LOADs, in ascending p_vaddr, each
 * a window on the source image's bytes (the image's pages appear twice,
 * read once).  The image's PT_LOADs have p_paddr -1, as the writer's
 * (write-elf.c): the physical ranges ascend without overlap.
 */
#include <elf.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfcore.h"
#include "kcoredump/view.h"
#include "source-impl.h"
#include "stream-internal.h"

/* A PT_LOAD of the rebuilt ELF: [off, off + size) of the view is
 * [src_off, src_off + size) of the source image. */
struct view_load {
	uint64_t vaddr, paddr, size, src_off, off;
};

struct kcore_view {
	struct kcore_source *src;
	pthread_mutex_t lock;
	uint64_t size;
	uint64_t data_bytes;
	/* Rebuilt ELF (NULL header: the source image as it is). */
	unsigned char *header;
	size_t header_len;
	struct view_load *loads;
	size_t nloads, cap;
};

/* The last load starting at or before off (loads ascend), or NULL. */
static const struct view_load *load_at(const struct kcore_view *v, uint64_t off)
{
	size_t lo = 0, hi = v->nloads;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v->loads[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &v->loads[lo - 1] : NULL;
}

/* next_data over the whole image, clipped to it. */
static struct kcore_error *next_data(struct kcore_view *v, uint64_t offset,
				     uint64_t *data, uint64_t *data_end)
{
	struct kcore_error *err;

	if (v->header) {
		const struct view_load *l;
		size_t i;

		if (offset < v->header_len) {
			*data = offset;
			*data_end = v->header_len;
			return NULL;
		}
		l = load_at(v, offset);
		i = l ? (size_t)(l - v->loads) : 0;
		for (; i < v->nloads; i++) {
			uint64_t rel, d, e;

			l = &v->loads[i];
			if (offset >= l->off + l->size)
				continue;
			rel = offset > l->off ? offset - l->off : 0;
			err = kcore_source_next_data(v->src, l->src_off + rel,
						     l->src_off + l->size, &d,
						     &e);
			if (err)
				return err;
			if (d < l->src_off + l->size) {
				if (e > l->src_off + l->size)
					e = l->src_off + l->size;
				*data = l->off + (d - l->src_off);
				*data_end = l->off + (e - l->src_off);
				return NULL;
			}
		}
		*data = *data_end = v->size;
		return NULL;
	}
	err = kcore_source_next_data(v->src, offset, v->size, data, data_end);
	if (!err && *data > v->size)
		*data = *data_end = v->size;
	if (!err && *data_end > v->size)
		*data_end = v->size;
	return err;
}

static struct kcore_error *add_load(struct kcore_view *v, uint64_t vaddr,
				    uint64_t paddr, uint64_t size,
				    uint64_t src_off)
{
	if (v->nloads == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 16;
		struct view_load *l = realloc(v->loads, cap * sizeof(*l));

		if (!l)
			return &kcore_error_nomem;
		v->loads = l;
		v->cap = cap;
	}
	v->loads[v->nloads++] = (struct view_load){
		.vaddr = vaddr, .paddr = paddr, .size = size, .src_off = src_off
	};
	return NULL;
}

static int by_vaddr(const void *a, const void *b)
{
	const struct view_load *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

static uint64_t round_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

/*
 * The ELF of a physical-only vmcore with exact virtual addresses: an ELF
 * header, PT_NOTE with the source's notes, one PT_LOAD per physical
 * segment at the direct map and the kernel image's PT_LOADs (one per
 * direct-map PT_LOAD it touches, on that one's bytes, p_paddr -1), in
 * ascending p_vaddr as every ELF we write (convert's); data page-aligned,
 * p_align 0, as the dump writer lays out an ELF (PN_XNUM past 65534
 * program headers).  v->loads holds the direct-map PT_LOADs, which the
 * reads go through; the image's are only in the header.
 */
static struct kcore_error *rebuild(struct kcore_view *v,
				   const struct kcore_kernel_vmap *m)
{
	struct kcore_source *src = v->src;
	uint64_t notes_len = 0, off, tend = m->text_paddr + m->text_size;
	size_t nphdr, notes_off, pos, nimage = 0, next;
	struct view_load *image = NULL;
	struct kcore_error *err;

	for (size_t i = 0; i < src->nsegments; i++) {
		const struct kcore_segment *s = &src->segments[i];
		uint64_t hi = s->paddr + s->filesz;

		if (s->type != PT_LOAD || !s->has_paddr || !s->memsz ||
		    !s->filesz)
			continue;
		/* Beyond p_filesz: no bytes in the image. */
		if (s->filesz < s->memsz)
			hi = s->paddr + s->filesz;
		err = add_load(v, m->direct_map + s->paddr, s->paddr,
			       hi - s->paddr, s->offset);
		if (err)
			return err;
	}
	if (v->nloads > 1)
		qsort(v->loads, v->nloads, sizeof(*v->loads), by_vaddr);
	for (size_t i = 0; i < v->nloads; i++)
		if (v->loads[i].paddr < tend &&
		    v->loads[i].paddr + v->loads[i].size > m->text_paddr)
			nimage++;
	if (nimage) {
		image = calloc(nimage, sizeof(*image));
		if (!image)
			return &kcore_error_nomem;
	}
	for (size_t i = 0; i < src->nsegments; i++)
		if (src->segments[i].type == PT_NOTE)
			notes_len += src->segments[i].filesz;
	nphdr = 1 + v->nloads + nimage;
	notes_off = kcore_elfcore_headers_len(64, nphdr);
	if (notes_len > (64u << 20)) {
		free(image);
		return kcore_error_create(KCORE_ERR_FORMAT, 0, src->path,
					  "%" PRIu64 " bytes of notes: too "
					  "many to serve",
					  notes_len);
	}
	v->header_len = notes_off + (size_t)notes_len;
	v->header = calloc(1, v->header_len);
	if (!v->header) {
		free(image);
		return &kcore_error_nomem;
	}
	kcore_elfcore_put_ehdr(v->header, 64, src->info.machine, nphdr, 0);
	pos = notes_off;
	for (size_t i = 0; i < src->nsegments; i++) {
		const struct kcore_segment *s = &src->segments[i];

		if (s->type != PT_NOTE || !s->filesz)
			continue;
		err = kcore_source_pread(src, v->header + pos,
					 (size_t)s->filesz, s->offset);
		if (err) {
			free(image);
			return err;
		}
		pos += (size_t)s->filesz;
	}
	kcore_elfcore_put_phdr(v->header, 64, 0,
			       &(struct kcore_elfcore_phdr){
				       .type = PT_NOTE,
				       .offset = notes_off,
				       .filesz = notes_len,
				       .align = 4,
			       });
	/* The direct-map loads' data, and the image's windows on it. */
	off = round_up(v->header_len, 4096);
	nimage = 0;
	for (size_t i = 0; i < v->nloads; i++) {
		struct view_load *l = &v->loads[i];
		uint64_t lo =
			l->paddr > m->text_paddr ? l->paddr : m->text_paddr;
		uint64_t hi =
			l->paddr + l->size < tend ? l->paddr + l->size : tend;

		l->off = off;
		off = round_up(off + l->size, 4096);
		if (lo < hi)
			image[nimage++] = (struct view_load){
				.vaddr = m->text_vaddr + (lo - m->text_paddr),
				.paddr = UINT64_MAX,
				.size = hi - lo,
				.off = l->off + (lo - l->paddr),
			};
	}
	/* Program headers in ascending p_vaddr: merge the two lists. */
	next = 0;
	for (size_t i = 0, j = 0; i < v->nloads || j < nimage;) {
		const struct view_load *l =
			j == nimage || (i < v->nloads &&
					v->loads[i].vaddr <= image[j].vaddr)
				? &v->loads[i++]
				: &image[j++];

		kcore_elfcore_put_phdr(v->header, 64, ++next,
				       &(struct kcore_elfcore_phdr){
					       .type = PT_LOAD,
					       .flags = PF_R | PF_W | PF_X,
					       .offset = l->off,
					       .vaddr = l->vaddr,
					       .paddr = l->paddr,
					       .filesz = l->size,
					       .memsz = l->size,
				       });
	}
	free(image);
	v->size = v->nloads ? v->loads[v->nloads - 1].off +
				      v->loads[v->nloads - 1].size
			    : v->header_len;
	return NULL;
}

/*
 * The frame cache by default: every frame that holds data, so that random
 * reads decode each frame once (drgn and crash read all over the dump),
 * within KCORE_VIEW_CACHE_MIN..KCORE_VIEW_CACHE_MAX and a quarter of the
 * RAM.  Memory follows what is read: a frame takes room when decoded.
 */
static size_t default_cache(struct kcore_source *src)
{
	uint64_t want = kcore_stream_source_data_frame_bytes(src);
	uint64_t max = KCORE_VIEW_CACHE_MAX;
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);

	if (pages > 0 && psize > 0 &&
	    (uint64_t)pages / 4 < max / (uint64_t)psize)
		max = (uint64_t)pages / 4 * (uint64_t)psize;
	if (want > max)
		want = max;
	if (want < KCORE_VIEW_CACHE_MIN)
		want = KCORE_VIEW_CACHE_MIN;
	return (size_t)want;
}

struct kcore_error *kcore_view_open(const char *path,
				    const struct kcore_view_opts *opts,
				    struct kcore_view **ret)
{
	struct kcore_view *v = calloc(1, sizeof(*v));
	struct kcore_error *err;
	uint64_t pos = 0;

	if (!v)
		return &kcore_error_nomem;
	pthread_mutex_init(&v->lock, NULL);
	err = kcore_source_open(path,
				&(struct kcore_open_opts){
					.machine = opts ? opts->machine : 0 },
				&v->src);
	if (err) {
		kcore_view_destroy(v);
		return err;
	}
	if (v->src->info.kind == KCORE_SOURCE_LIVE_KCORE) {
		kcore_view_destroy(v);
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, path,
					  "the live kernel's memory is not a "
					  "dump; dump it first");
	}
	kcore_stream_source_set_cache(v->src, opts && opts->cache_bytes
						      ? opts->cache_bytes
						      : default_cache(v->src));
	v->size = v->src->info.file_size;
	if (v->src->info.physical_only) {
		struct kcore_kernel_vmap m;

		err = kcore_source_kernel_vmap(v->src, kcore_source_read_paddr,
					       &m);
		if (!err) {
			err = rebuild(v, &m);
			if (err) {
				kcore_view_destroy(v);
				return err;
			}
		}
		kcore_error_destroy(err);
	}
	/* Work in proportion to the runs of data, not to the size. */
	while (pos < v->size) {
		uint64_t d, e;

		err = next_data(v, pos, &d, &e);
		if (err) {
			kcore_view_destroy(v);
			return err;
		}
		v->data_bytes += e - d;
		pos = e > pos ? e : v->size;
	}
	*ret = v;
	return NULL;
}

void kcore_view_destroy(struct kcore_view *v)
{
	if (!v)
		return;
	kcore_source_destroy(v->src);
	pthread_mutex_destroy(&v->lock);
	free(v->header);
	free(v->loads);
	free(v);
}

uint64_t kcore_view_size(const struct kcore_view *v)
{
	return v->size;
}

uint64_t kcore_view_data_bytes(const struct kcore_view *v)
{
	return v->data_bytes;
}

const char *kcore_view_format(const struct kcore_view *v)
{
	return kcore_source_format(v->src);
}

uint16_t kcore_view_machine(const struct kcore_view *v)
{
	return v->src->info.machine;
}

bool kcore_view_knows_holes(const struct kcore_view *v)
{
	return kcore_source_knows_holes(v->src);
}

uint64_t kcore_view_frames_decoded(const struct kcore_view *v)
{
	return kcore_stream_source_decoded(v->src);
}

struct kcore_error *kcore_view_prefetch(struct kcore_view *v,
					volatile sig_atomic_t *stop,
					kcore_view_data_fn *fn, void *arg)
{
	/* The source's own lock guards its cache; the decoding runs beside
	 * the reads, not under the view's lock.  The stream's offsets are
	 * the view's when the view is the stream's ELF as it is. */
	return kcore_stream_source_prefetch(v->src, stop, v->header ? NULL : fn,
					    arg);
}

struct kcore_error *kcore_view_pread(struct kcore_view *v, void *buf,
				     size_t len, uint64_t offset,
				     size_t *ret_done)
{
	unsigned char *p = buf;
	struct kcore_error *err = NULL;
	size_t done = 0;

	if (offset >= v->size)
		len = 0;
	else if (len > v->size - offset)
		len = (size_t)(v->size - offset);
	pthread_mutex_lock(&v->lock);
	while (!err && done < len) {
		uint64_t at = offset + done, d, e;
		size_t n, got = 0;

		err = next_data(v, at, &d, &e);
		if (err)
			break;
		if (d > at) { /* a hole: zeros, nothing read */
			n = d - at < len - done ? (size_t)(d - at) : len - done;
			memset(p + done, 0, n);
			done += n;
			continue;
		}
		n = e - at < len - done ? (size_t)(e - at) : len - done;
		if (!v->header) {
			err = kcore_source_pread_partial(v->src, p + done, n,
							 at, &got);
		} else if (at < v->header_len) {
			got = n;
			memcpy(p + done, v->header + at, n);
		} else { /* next_data ends data at its load's end */
			const struct view_load *l = load_at(v, at);

			err = kcore_source_pread_partial(
				v->src, p + done, n, l->src_off + (at - l->off),
				&got);
		}
		done += got;
	}
	pthread_mutex_unlock(&v->lock);
	*ret_done = done;
	return err;
}

struct kcore_error *kcore_view_next_data(struct kcore_view *v, uint64_t offset,
					 uint64_t *data, uint64_t *data_end)
{
	struct kcore_error *err;

	pthread_mutex_lock(&v->lock);
	err = next_data(v, offset, data, data_end);
	pthread_mutex_unlock(&v->lock);
	return err;
}
