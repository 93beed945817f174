// SPDX-License-Identifier: MIT
/*
 * A file's SHA-256 on its own thread (file-hash.h).  A ring of
 * runs, handed over in file order by the writing thread and hashed in that
 * order by this one: the writer never waits for SHA-256 unless the ring is
 * full, or it wants a referenced buffer back; SHA-256 never waits for a
 * write.  Copies are bounded (COPY_LIMIT bytes waiting at most), so a
 * compressed stream cannot outrun the hash by more than that.
 *
 * One thread adds, one hashes: the ring's two counters are each written
 * by one of them, so a run goes over without a lock.  The lock and the
 * condition variables serve only a thread that has nothing to do and
 * sleeps: the other wakes it when it has said so (idle, want), not at
 * every run.  Each thread stores its own flag or counter before it reads
 * the other's (sequentially consistent), so one of the two always sees
 * the other's: no wake-up is lost.
 *
 * A whole file is read back into it here (kcore_file_hash_read()): its
 * data a piece at a time into a few buffers, each read while the thread
 * hashes the ones before, its holes handed over as counts of zeros.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "file-hash.h"
#include "kcoredump/io.h"

#define RING	   256
#define COPY_LIMIT (64u << 20)
/* A read-back's holes go over this much at a time (the ring holds 4 GiB
 * of them at most: counts, no memory). */
#define ZEROS_PIECE (16u << 20)

struct run {
	const unsigned char *p; /* NULL: zeros (or a task) */
	uint64_t len;
	unsigned char *owned; /* a copy, freed once hashed */
	void (*task)(void *); /* not bytes: work run in their order */
	void *arg;
};

struct kcore_file_hash {
	struct kcore_file_hasher *sha;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t more, done_cv;
	struct run ring[RING];
	/* Runs handed over (written by the adding thread), runs hashed
	 * (by the hashing thread). */
	uint64_t added, done;
	uint64_t copied; /* bytes of copies not yet hashed */
	/* The adding thread sleeps until done reaches want (0: it does not
	 * sleep); the hashing thread sleeps while idle. */
	uint64_t want;
	bool idle;
	bool stop;
	uint64_t busy_ns;
};

#define LOAD(p)	    __atomic_load_n(p, __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n(p, v, __ATOMIC_SEQ_CST)

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

	if (r->task) {
		r->task(r->arg);
		return;
	}
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

/* Wake the thread sleeping on cv (it said so: the caller saw its flag). */
static void wake(struct kcore_file_hash *h, pthread_cond_t *cv)
{
	pthread_mutex_lock(&h->lock);
	pthread_cond_signal(cv);
	pthread_mutex_unlock(&h->lock);
}

/* The next run to hash, sleeping until there is one; false: stop. */
static bool next_run(struct kcore_file_hash *h, uint64_t done)
{
	if (LOAD(&h->stop))
		return false;
	if (LOAD(&h->added) != done)
		return true;
	pthread_mutex_lock(&h->lock);
	STORE(&h->idle, true);
	while (!LOAD(&h->stop) && LOAD(&h->added) == done)
		pthread_cond_wait(&h->more, &h->lock);
	STORE(&h->idle, false);
	pthread_mutex_unlock(&h->lock);
	return !LOAD(&h->stop);
}

/* Run r hashed (or its task run) and timed, its copy freed. */
static void hash_timed(struct kcore_file_hash *h, const struct run *r)
{
	uint64_t t0 = now_ns();

	hash_run(h, r);
	free(r->owned);
	__atomic_add_fetch(&h->busy_ns, now_ns() - t0, __ATOMIC_RELAXED);
}

static void *hash_main(void *arg)
{
	struct kcore_file_hash *h = arg;

	for (uint64_t done = 0; next_run(h, done);) {
		struct run r = h->ring[done % RING];
		uint64_t want;

		hash_timed(h, &r);
		if (r.owned)
			__atomic_sub_fetch(&h->copied, r.len, __ATOMIC_SEQ_CST);
		STORE(&h->done, ++done);
		want = LOAD(&h->want);
		if (want && done >= want)
			wake(h, &h->done_cv);
	}
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
	/* No thread (out of threads or memory for its stack): every run
	 * is hashed as it is handed over, by the adding thread. */
	if (!err)
		h->started = !pthread_create(&h->thread, NULL, hash_main, h);
	if (err) {
		kcore_file_hash_destroy(h);
		return err;
	}
	*ret = h;
	return NULL;
}

/* Until the hashing thread has hashed n runs. */
static void wait_done(struct kcore_file_hash *h, uint64_t n)
{
	if (LOAD(&h->done) >= n)
		return;
	pthread_mutex_lock(&h->lock);
	STORE(&h->want, n);
	while (LOAD(&h->done) < n)
		pthread_cond_wait(&h->done_cv, &h->lock);
	STORE(&h->want, 0);
	pthread_mutex_unlock(&h->lock);
}

/* Append a run, waiting for room; its ticket. */
static uint64_t push(struct kcore_file_hash *h, struct run r)
{
	uint64_t added = h->added;

	if (!h->started) { /* no thread: hashed here, at once */
		hash_timed(h, &r);
		STORE(&h->done, added + 1);
		STORE(&h->added, added + 1);
		return added + 1;
	}
	if (added - LOAD(&h->done) == RING)
		wait_done(h, added - RING + 1);
	while (r.owned && LOAD(&h->copied) &&
	       LOAD(&h->copied) + r.len > COPY_LIMIT)
		wait_done(h, LOAD(&h->done) + 1);
	h->ring[added % RING] = r;
	if (r.owned)
		__atomic_add_fetch(&h->copied, r.len, __ATOMIC_SEQ_CST);
	STORE(&h->added, added + 1);
	if (LOAD(&h->idle))
		wake(h, &h->more);
	return added + 1;
}

uint64_t kcore_file_hash_add_ref(struct kcore_file_hash *h, const void *p,
				 size_t len)
{
	if (!len)
		return 0;
	return push(h, (struct run){ .p = p, .len = len });
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
	push(h, (struct run){ .p = c, .len = len, .owned = c });
	return NULL;
}

void kcore_file_hash_add_zeros(struct kcore_file_hash *h, uint64_t len)
{
	if (len)
		push(h, (struct run){ .len = len });
}

uint64_t kcore_file_hash_add_task(struct kcore_file_hash *h,
				  void (*task)(void *), void *arg)
{
	return push(h, (struct run){ .task = task, .arg = arg });
}

uint64_t kcore_file_hash_backlog(struct kcore_file_hash *h)
{
	return h->added - LOAD(&h->done);
}

void kcore_file_hash_wait(struct kcore_file_hash *h, uint64_t ticket)
{
	wait_done(h, ticket);
}

void kcore_file_hash_finish(struct kcore_file_hash *h,
			    unsigned char out[KCORE_DIGEST_LEN])
{
	wait_done(h, h->added);
	kcore_file_hasher_finish(h->sha, out);
}

double kcore_file_hash_busy(struct kcore_file_hash *h)
{
	return (double)__atomic_load_n(&h->busy_ns, __ATOMIC_RELAXED) / 1e9;
}

/* Stop the thread at once (a long hole within 64 KiB), whatever is left
 * unhashed: nothing it was handed is used any more. */
static void halt(struct kcore_file_hash *h)
{
	if (!h->started)
		return;
	pthread_mutex_lock(&h->lock);
	STORE(&h->stop, true);
	pthread_cond_broadcast(&h->more);
	pthread_mutex_unlock(&h->lock);
	pthread_join(h->thread, NULL);
	h->started = false;
}

static struct kcore_error *interrupted(volatile sig_atomic_t *cancel,
				       const char *path)
{
	if (cancel && *cancel)
		return kcore_error_create(KCORE_ERR_INTERRUPTED, 0, path,
					  "interrupted while hashing");
	return NULL;
}

/* The read-back's state: the buffer's pieces and the ticket of the run
 * each was last handed over in. */
struct readback {
	struct kcore_file_hash *h;
	int fd;
	const char *path;
	volatile sig_atomic_t *cancel;
	unsigned char *buf;
	uint64_t ticket[KCORE_FILE_HASH_PIECES];
	unsigned next;
};

/* A hole: zeros, handed over ZEROS_PIECE at a time, so that a cancel is
 * seen between them and the ring, not this loop, sets the pace; long
 * enough that the two threads do not wake each other for every piece. */
static struct kcore_error *readback_zeros(struct readback *rb, uint64_t *off,
					  uint64_t to)
{
	struct kcore_error *err = NULL;

	while (!err && *off < to) {
		uint64_t n = to - *off < ZEROS_PIECE ? to - *off : ZEROS_PIECE;

		err = interrupted(rb->cancel, rb->path);
		if (!err)
			kcore_file_hash_add_zeros(rb->h, n);
		*off += n;
	}
	return err;
}

/* Data: read into the next piece once the thread is done with it. */
static struct kcore_error *readback_data(struct readback *rb, uint64_t *off,
					 uint64_t to)
{
	struct kcore_error *err = NULL;

	while (!err && *off < to) {
		size_t n = to - *off < KCORE_FILE_HASH_PIECE
				   ? (size_t)(to - *off)
				   : KCORE_FILE_HASH_PIECE;
		unsigned char *p =
			rb->buf + (size_t)rb->next * KCORE_FILE_HASH_PIECE;

		err = interrupted(rb->cancel, rb->path);
		if (err)
			break;
		kcore_file_hash_wait(rb->h, rb->ticket[rb->next]);
		err = kcore_pread_all(NULL, rb->fd, rb->path, p, n, *off, NULL);
		if (!err)
			rb->ticket[rb->next] =
				kcore_file_hash_add_ref(rb->h, p, n);
		rb->next = (rb->next + 1) % KCORE_FILE_HASH_PIECES;
		*off += n;
	}
	return err;
}

struct kcore_error *kcore_file_hash_read(struct kcore_file_hash *h, int fd,
					 const char *path, uint64_t size,
					 volatile sig_atomic_t *cancel,
					 unsigned char *buf)
{
	struct readback rb = {
		.h = h, .fd = fd, .path = path, .cancel = cancel, .buf = buf
	};
	unsigned char *own = buf ? NULL : malloc(KCORE_FILE_HASH_READ_BUF);
	struct kcore_error *err = NULL;
	uint64_t off = 0, end = size, last = 0;
	struct stat st;

	if (!buf && !own)
		return &kcore_error_nomem;
	if (own)
		rb.buf = own;
	/* What lies past the end of the file (a sparse tail not yet
	 * truncated to its length) is zeros. */
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_size < end)
		end = (uint64_t)st.st_size;
	while (!err && off < end) {
		off_t data = lseek(fd, (off_t)off, SEEK_DATA);
		off_t hole;

		/* No SEEK_DATA: read everything; ENXIO: no data after off. */
		if (data < 0)
			data = errno == ENXIO ? (off_t)end : (off_t)off;
		if ((uint64_t)data > end)
			data = (off_t)end;
		err = readback_zeros(&rb, &off, (uint64_t)data);
		if (err || off >= end)
			break;
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0 || (uint64_t)hole > end || hole <= data)
			hole = (off_t)end;
		err = readback_data(&rb, &off, (uint64_t)hole);
	}
	if (!err)
		err = readback_zeros(&rb, &off, size);
	/* The thread lets go of the pieces before they are reused or freed:
	 * once it has hashed them, or, on an error, stopped. */
	for (unsigned i = 0; i < KCORE_FILE_HASH_PIECES; i++)
		last = rb.ticket[i] > last ? rb.ticket[i] : last;
	if (err)
		halt(h);
	else
		kcore_file_hash_wait(h, last);
	free(own);
	return err;
}

struct kcore_error *kcore_file_sha256(int fd, const char *path, uint64_t size,
				      volatile sig_atomic_t *cancel,
				      unsigned char out[KCORE_DIGEST_LEN])
{
	struct kcore_file_hash *h;
	struct kcore_error *err = kcore_file_hash_start(&h);

	if (err)
		return err;
	err = kcore_file_hash_read(h, fd, path, size, cancel, NULL);
	if (!err)
		kcore_file_hash_finish(h, out);
	kcore_file_hash_destroy(h);
	return err;
}

void kcore_file_hash_destroy(struct kcore_file_hash *h)
{
	if (!h)
		return;
	halt(h);
	for (uint64_t i = h->done; i < h->added; i++)
		free(h->ring[i % RING].owned);
	kcore_file_hasher_destroy(h->sha);
	pthread_mutex_destroy(&h->lock);
	pthread_cond_destroy(&h->more);
	pthread_cond_destroy(&h->done_cv);
	free(h);
}
