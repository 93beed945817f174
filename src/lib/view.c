// SPDX-License-Identifier: MIT
/*
 * The plain ELF view of any dump (kcoredump/view.h): a source's ELF image,
 * read at random, with its holes known.  Every source already presents
 * itself as an ELF core image (internal.h); this adds the size, the data
 * bytes, zero-filled holes and a lock, for `kcoredump mount`.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kcoredump/view.h"
#include "stream-internal.h"

struct kcore_view {
	struct kcore_source *src;
	pthread_mutex_t lock;
	uint64_t size;
	uint64_t data_bytes;
};

/* next_data over the whole image, clipped to it. */
static struct kcore_error *next_data(struct kcore_view *v, uint64_t offset,
				     uint64_t *data, uint64_t *data_end)
{
	struct kcore_error *err;

	err = kcore_source_next_data(v->src, offset, v->size, data, data_end);
	if (!err && *data > v->size)
		*data = *data_end = v->size;
	if (!err && *data_end > v->size)
		*data_end = v->size;
	return err;
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
	err = kcore_source_open(path, NULL, &v->src);
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
	if (opts && opts->cache_bytes)
		kcore_stream_source_set_cache(v->src, opts->cache_bytes);
	v->size = v->src->info.file_size;
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

bool kcore_view_knows_holes(const struct kcore_view *v)
{
	return kcore_source_knows_holes(v->src);
}

uint64_t kcore_view_frames_decoded(const struct kcore_view *v)
{
	return kcore_stream_source_decoded(v->src);
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
		err = kcore_source_pread_partial(v->src, p + done, n, at, &got);
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
