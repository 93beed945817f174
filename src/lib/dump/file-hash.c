// SPDX-License-Identifier: MIT
/*
 * The output file's SHA-256 on its own thread (file-hash.h).  A ring of
 * runs, handed over in file order by the writing thread and hashed in that
 * order by this one: the writer never waits for SHA-256 unless the ring is
 * full, or it wants a referenced buffer back; SHA-256 never waits for a
 * write.  Copies are bounded (COPY_LIMIT bytes waiting at most), so a
 * compressed stream cannot outrun the hash by more than that.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "file-hash.h"

#define RING	   256
#define COPY_LIMIT (64u << 20)

struct run {
	const unsigned char *p; /* NULL: zeros */
	uint64_t len;
	unsigned char *owned; /* a copy, freed once hashed */
};

struct kcore_file_hash {
	struct kcore_file_hasher *sha;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t more, done_cv;
	struct run ring[RING];
	uint64_t added, done; /* runs handed over, runs hashed */
	uint64_t copied;      /* bytes of copies not yet hashed */
	bool stop;
	uint64_t busy_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void hash_run(struct kcore_file_hash *h, const struct run *r)
{
	static const unsigned char zeros[1u << 16];
	uint64_t left = r->len;

	if (r->p) {
		kcore_file_hasher_add(h->sha, r->p, (size_t)r->len);
		return;
	}
	/* Zeros: no shortcut in SHA-256; a long hole checks for a stop. */
	while (left && !__atomic_load_n(&h->stop, __ATOMIC_RELAXED)) {
		size_t n = left < sizeof(zeros) ? (size_t)left : sizeof(zeros);

		kcore_file_hasher_add(h->sha, zeros, n);
		left -= n;
	}
}

static void *hash_main(void *arg)
{
	struct kcore_file_hash *h = arg;

	pthread_mutex_lock(&h->lock);
	for (;;) {
		struct run r;
		uint64_t t0;

		while (!h->stop && h->done == h->added)
			pthread_cond_wait(&h->more, &h->lock);
		if (h->stop)
			break;
		r = h->ring[h->done % RING];
		pthread_mutex_unlock(&h->lock);
		t0 = now_ns();
		hash_run(h, &r);
		free(r.owned);
		pthread_mutex_lock(&h->lock);
		h->busy_ns += now_ns() - t0;
		if (r.owned)
			h->copied -= r.len;
		h->done++;
		pthread_cond_broadcast(&h->done_cv);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

struct kcore_error *kcore_file_hash_start(struct kcore_file_hash **ret)
{
	struct kcore_file_hash *h = calloc(1, sizeof(*h));
	struct kcore_error *err;

	if (!h)
		return &kcore_error_nomem;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->more, NULL);
	pthread_cond_init(&h->done_cv, NULL);
	err = kcore_file_hasher_create(&h->sha);
	if (!err) {
		int e = pthread_create(&h->thread, NULL, hash_main, h);

		if (e)
			err = kcore_error_create(KCORE_ERR_OS, e, NULL,
						 "cannot start the file "
						 "hashing thread");
		h->started = !e;
	}
	if (err) {
		kcore_file_hash_destroy(h);
		return err;
	}
	*ret = h;
	return NULL;
}

/* Append a run (the lock held), waiting for room; its ticket. */
static uint64_t push(struct kcore_file_hash *h, struct run r)
{
	while (h->added - h->done == RING ||
	       (r.owned && h->copied && h->copied + r.len > COPY_LIMIT))
		pthread_cond_wait(&h->done_cv, &h->lock);
	h->ring[h->added % RING] = r;
	if (r.owned)
		h->copied += r.len;
	h->added++;
	pthread_cond_signal(&h->more);
	return h->added;
}

uint64_t kcore_file_hash_add_ref(struct kcore_file_hash *h, const void *p,
				 size_t len)
{
	uint64_t ticket;

	if (!len)
		return 0;
	pthread_mutex_lock(&h->lock);
	ticket = push(h, (struct run){ .p = p, .len = len });
	pthread_mutex_unlock(&h->lock);
	return ticket;
}

struct kcore_error *kcore_file_hash_add_copy(struct kcore_file_hash *h,
					     const void *p, size_t len)
{
	unsigned char *c;

	if (!len)
		return NULL;
	c = malloc(len);
	if (!c)
		return &kcore_error_nomem;
	memcpy(c, p, len);
	pthread_mutex_lock(&h->lock);
	push(h, (struct run){ .p = c, .len = len, .owned = c });
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

void kcore_file_hash_add_zeros(struct kcore_file_hash *h, uint64_t len)
{
	if (!len)
		return;
	pthread_mutex_lock(&h->lock);
	push(h, (struct run){ .len = len });
	pthread_mutex_unlock(&h->lock);
}

void kcore_file_hash_wait(struct kcore_file_hash *h, uint64_t ticket)
{
	pthread_mutex_lock(&h->lock);
	while (h->done < ticket)
		pthread_cond_wait(&h->done_cv, &h->lock);
	pthread_mutex_unlock(&h->lock);
}

void kcore_file_hash_finish(struct kcore_file_hash *h,
			    unsigned char out[KCORE_DIGEST_LEN])
{
	pthread_mutex_lock(&h->lock);
	while (h->done < h->added)
		pthread_cond_wait(&h->done_cv, &h->lock);
	pthread_mutex_unlock(&h->lock);
	kcore_file_hasher_finish(h->sha, out);
}

double kcore_file_hash_busy(struct kcore_file_hash *h)
{
	uint64_t ns;

	pthread_mutex_lock(&h->lock);
	ns = h->busy_ns;
	pthread_mutex_unlock(&h->lock);
	return (double)ns / 1e9;
}

void kcore_file_hash_destroy(struct kcore_file_hash *h)
{
	if (!h)
		return;
	if (h->started) {
		pthread_mutex_lock(&h->lock);
		__atomic_store_n(&h->stop, true, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&h->more);
		pthread_mutex_unlock(&h->lock);
		pthread_join(h->thread, NULL);
	}
	for (uint64_t i = h->done; i < h->added; i++)
		free(h->ring[i % RING].owned);
	kcore_file_hasher_destroy(h->sha);
	pthread_mutex_destroy(&h->lock);
	pthread_cond_destroy(&h->more);
	pthread_cond_destroy(&h->done_cv);
	free(h);
}
