// SPDX-License-Identifier: MIT
/* The file's SHA-256 on its own thread (common/file-hash.c): runs handed
 * over by reference, as copies and as zeros come out as the SHA-256 of
 * the same bytes hashed in one pass; a referenced buffer is handed back
 * (kcore_file_hash_wait) only once it is hashed, so rewriting it then
 * changes nothing; the ring filling up (more than its 256 runs waiting)
 * and the copies' bound (64 MiB waiting) make the adding thread wait, not
 * lose or reorder runs; a stop with runs still waiting frees them; a
 * task runs on the hashing thread after the runs handed over before it,
 * and its ticket comes back only once it has run.  The one read-back
 * (kcore_file_hash_read(), kcore_file_sha256()) of a sparse file with
 * holes at its start, in its middle and at its end comes out as the
 * SHA-256 of its bytes, holes as zeros (sha256sum's), whole, cut short,
 * or longer than the file on disk; a cancel and a failed read come back
 * as errors naming the file (and the offset of the read); where no
 * thread can start, the same digests come out, hashed on the caller's. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "file-hash.h"
#include "tap.h"

#define BUFS  4
#define BUFSZ (256u << 10)

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void fill(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)next();
}

/* runs runs of random kinds and sizes (small ones fill the ring), the
 * same bytes to a one-pass hasher; the digests compared. */
static void stream(unsigned runs, size_t max_len, const char *what)
{
	static unsigned char zeros[BUFSZ];
	unsigned char *buf[BUFS], want[KCORE_DIGEST_LEN], got[KCORE_DIGEST_LEN];
	uint64_t ticket[BUFS] = { 0 };
	struct kcore_file_hasher *ref = NULL;
	struct kcore_file_hash *h = NULL;
	struct kcore_error *err;
	bool ok_all = true;

	for (unsigned i = 0; i < BUFS; i++)
		buf[i] = malloc(BUFSZ);
	err = kcore_file_hash_start(&h);
	if (!err)
		err = kcore_file_hasher_create(&ref);
	if (!ok(!err, "%s: started", what))
		goto out;
	for (unsigned r = 0; r < runs; r++) {
		size_t len = 1 + (size_t)(next() % max_len);
		unsigned kind = (unsigned)(next() % 3), b = r % BUFS;

		if (kind == 0) { /* by reference: the buffer back first */
			kcore_file_hash_wait(h, ticket[b]);
			fill(buf[b], len);
			kcore_file_hasher_add(ref, buf[b], len);
			ticket[b] = kcore_file_hash_add_ref(h, buf[b], len);
		} else if (kind == 1) { /* a copy: the bytes reused at once */
			unsigned char tmp[4096];
			size_t n = len < sizeof(tmp) ? len : sizeof(tmp);

			fill(tmp, n);
			kcore_file_hasher_add(ref, tmp, n);
			ok_all &= !kcore_file_hash_add_copy(h, tmp, n);
			memset(tmp, 0xa5, n);
		} else {
			kcore_file_hasher_add(ref, zeros, len);
			kcore_file_hash_add_zeros(h, len);
		}
	}
	kcore_file_hash_finish(h, got);
	kcore_file_hasher_finish(ref, want);
	ok(ok_all, "%s: every copy taken", what);
	ok(!memcmp(got, want, sizeof(got)),
	   "%s: the digest of the bytes in order", what);
out:
	kcore_file_hash_destroy(h);
	kcore_file_hasher_destroy(ref);
	kcore_error_destroy(err);
	for (unsigned i = 0; i < BUFS; i++)
		free(buf[i]);
}

/* Copies past the 64 MiB bound: the adding thread waits for them. */
static void copies_bounded(void)
{
	size_t len = 8u << 20;
	unsigned char *p = malloc(len), want[KCORE_DIGEST_LEN],
		      got[KCORE_DIGEST_LEN];
	struct kcore_file_hasher *ref = NULL;
	struct kcore_file_hash *h = NULL;
	bool ok_all = true;

	if (!p || kcore_file_hash_start(&h) || kcore_file_hasher_create(&ref)) {
		ok(0, "copies: started");
		goto out;
	}
	for (unsigned i = 0; i < 20; i++) { /* 160 MiB */
		memset(p, (int)i + 1, len);
		kcore_file_hasher_add(ref, p, len);
		ok_all &= !kcore_file_hash_add_copy(h, p, len);
	}
	kcore_file_hash_finish(h, got);
	kcore_file_hasher_finish(ref, want);
	ok(ok_all && !memcmp(got, want, sizeof(got)),
	   "copies: 160 MiB through the 64 MiB bound, in order");
out:
	kcore_file_hash_destroy(h);
	kcore_file_hasher_destroy(ref);
	free(p);
}

/* A task that rewrites a referenced buffer: were it run before the
 * buffer's bytes were hashed, the digest would be of the new bytes. */
struct rewrite {
	unsigned char *p;
	size_t len;
	unsigned ran;
};

static void rewrite_task(void *arg)
{
	struct rewrite *r = arg;

	memset(r->p, 0xa5, r->len);
	r->ran++;
}

static void tasks_in_order(void)
{
	size_t len = 4u << 20;
	unsigned char *p = malloc(len), want[KCORE_DIGEST_LEN],
		      got[KCORE_DIGEST_LEN];
	struct kcore_file_hasher *ref = NULL;
	struct kcore_file_hash *h = NULL;
	struct rewrite r = { p, len, 0 };
	bool back = true;

	if (!p || kcore_file_hash_start(&h) || kcore_file_hasher_create(&ref)) {
		ok(0, "tasks: started");
		goto out;
	}
	for (unsigned i = 0; i < 8; i++) {
		uint64_t t;

		fill(p, len);
		kcore_file_hash_add_zeros(h, 12345);
		kcore_file_hasher_add(ref, (unsigned char[12345]){ 0 }, 12345);
		kcore_file_hasher_add(ref, p, len);
		kcore_file_hash_add_ref(h, p, len);
		t = kcore_file_hash_add_task(h, rewrite_task, &r);
		kcore_file_hash_wait(h, t);
		back &= r.ran == i + 1;
	}
	kcore_file_hash_finish(h, got);
	kcore_file_hasher_finish(ref, want);
	ok(back, "tasks: each ticket back once its task ran");
	ok(!memcmp(got, want, sizeof(got)),
	   "tasks: run after the bytes handed over before them");
out:
	kcore_file_hash_destroy(h);
	kcore_file_hasher_destroy(ref);
	free(p);
}

/* A stop while runs wait (copies among them): no leak, no hang. */
static void stopped(void)
{
	struct kcore_file_hash *h = NULL;
	unsigned char b[1000] = { 1 };

	if (!ok(!kcore_file_hash_start(&h), "stop: started"))
		return;
	kcore_file_hash_add_zeros(h, 1ull << 40); /* a 1 TiB hole first */
	for (unsigned i = 0; i < 100; i++)
		kcore_file_hash_add_copy(h, b, sizeof(b));
	kcore_file_hash_destroy(h);
	ok(1, "stop: destroyed with a 1 TiB hole and 100 copies waiting");
}

/* The sparse file's layout: a hole first, data, a hole, data, a hole to
 * the end; odd sizes, data runs longer than one read piece. */
#define SP_DATA1   ((3u << 20) + 100)
#define SP_LEN1	   ((700u << 10) + 13)
#define SP_DATA2   (SP_DATA1 + SP_LEN1 + (5u << 20))
#define SP_LEN2	   (300u << 10)
#define SP_SIZE	   (SP_DATA2 + SP_LEN2 + (2u << 20) + 7)
#define SP_PAST	   (1u << 20) /* hashed past the end on disk */
#define SP_IMG_LEN (SP_SIZE + SP_PAST)

/* sha256sum's digest of the first len bytes of img: OpenSSL in one go. */
static void plain_sha256(const unsigned char *img, size_t len,
			 unsigned char out[KCORE_DIGEST_LEN])
{
	unsigned int n = 0;

	if (!EVP_Digest(img, len, out, &n, EVP_sha256(), NULL) ||
	    n != KCORE_DIGEST_LEN)
		memset(out, 0, KCORE_DIGEST_LEN);
}

/* The first size bytes of fd through a started thread's read-back into
 * the caller's buffer, after pre bytes handed over before them. */
static bool readback_into(int fd, const char *path, uint64_t size,
			  const unsigned char *img, size_t pre,
			  unsigned char got[KCORE_DIGEST_LEN])
{
	unsigned char *buf = malloc(KCORE_FILE_HASH_READ_BUF);
	struct kcore_file_hash *h = NULL;
	struct kcore_error *err = buf ? kcore_file_hash_start(&h) : NULL;

	if (buf && !err)
		err = kcore_file_hash_add_copy(h, img, pre);
	if (buf && !err)
		err = kcore_file_hash_read(h, fd, path, size, NULL, buf);
	if (buf && !err)
		kcore_file_hash_finish(h, got);
	kcore_file_hash_destroy(h);
	free(buf);
	kcore_error_destroy(err);
	return buf && !err;
}

/* A thread that holds its stack until the process exits. */
static void *hold(void *arg)
{
	char c;

	while (read(*(int *)arg, &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

/* In a child whose address space leaves no room for a thread's stack
 * (but some for the read-back's buffer): runs and the sparse file hashed
 * without the thread.  Exit 0: the digests match, 77: a thread starts
 * all the same here, else 1. */
static int no_thread_child(int fd, const char *path,
			   const unsigned char want[KCORE_DIGEST_LEN])
{
	unsigned char got[KCORE_DIGEST_LEN], ref_d[KCORE_DIGEST_LEN], b[5000];
	struct kcore_file_hasher *ref = NULL;
	struct kcore_file_hash *h = NULL;
	unsigned long pages = 0;
	struct rlimit rl;
	int never[2], held;
	pthread_t t;
	bool same;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f || fscanf(f, "%lu", &pages) != 1)
		return 77;
	fclose(f);
	rl.rlim_cur = rl.rlim_max =
		pages * (rlim_t)sysconf(_SC_PAGESIZE) + (3u << 20);
	if (setrlimit(RLIMIT_AS, &rl) || pipe(never))
		return 77;
	/* The stacks of threads that have ended (glibc keeps them for the
	 * next ones) taken, until no thread can start. */
	for (held = 0; held < 64; held++)
		if (pthread_create(&t, NULL, hold, &never[0]))
			break;
	if (held == 64)
		return 77;
	if (kcore_file_hash_start(&h) || kcore_file_hasher_create(&ref))
		return 1;
	fill(b, sizeof(b));
	kcore_file_hasher_add(ref, b, sizeof(b));
	kcore_file_hash_wait(h, kcore_file_hash_add_ref(h, b, sizeof(b)));
	kcore_file_hasher_add_zeros(ref, 77777);
	kcore_file_hash_add_zeros(h, 77777);
	kcore_file_hasher_add(ref, b, 100);
	if (kcore_file_hash_add_copy(h, b, 100))
		return 1;
	kcore_file_hash_finish(h, got);
	kcore_file_hasher_finish(ref, ref_d);
	same = !memcmp(got, ref_d, sizeof(got));
	kcore_file_hash_destroy(h);
	kcore_file_hasher_destroy(ref);
	if (kcore_file_sha256(fd, path, SP_SIZE, NULL, got))
		return 1;
	return same && !memcmp(got, want, KCORE_DIGEST_LEN) ? 0 : 1;
}

static void no_thread(int fd, const char *path,
		      const unsigned char want[KCORE_DIGEST_LEN])
{
#if defined(__SANITIZE_ADDRESS__)
	(void)fd, (void)path, (void)want;
	printf("# no thread: not tried under AddressSanitizer (its shadow "
	       "needs the address space)\n");
#else
	int st = 0;
	pid_t pid = fork();

	if (pid == 0)
		_exit(no_thread_child(fd, path, want));
	if (pid < 0 || waitpid(pid, &st, 0) != pid) {
		ok(0, "no thread: a child");
	} else if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		printf("# no thread: a thread starts here all the same\n");
	} else {
		ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		   "no thread (no room for its stack): the runs and the "
		   "sparse file hashed on the caller's thread, the same");
	}
#endif
}

static void sparse_file(void)
{
	unsigned char *img = calloc(1, SP_IMG_LEN), *both = NULL;
	unsigned char want[KCORE_DIGEST_LEN], got[KCORE_DIGEST_LEN];
	char path[] = "/tmp/t-file-hash-XXXXXX";
	static const uint64_t cuts[] = { SP_DATA1 + SP_LEN1 / 2, SP_DATA2 - 1,
					 SP_SIZE - 5 };
	volatile sig_atomic_t cancel = 1;
	struct kcore_error *err;
	int fd = -1, wfd = -1;
	off_t hole, data;

	if (!img || (fd = mkstemp(path)) < 0) {
		ok(0, "sparse: a temporary file");
		free(img);
		return;
	}
	fill(img + SP_DATA1, SP_LEN1);
	fill(img + SP_DATA2, SP_LEN2);
	if (pwrite(fd, img + SP_DATA1, SP_LEN1, SP_DATA1) != SP_LEN1 ||
	    pwrite(fd, img + SP_DATA2, SP_LEN2, SP_DATA2) != SP_LEN2 ||
	    ftruncate(fd, SP_SIZE)) {
		ok(0, "sparse: written");
		goto out;
	}
	/* Where the file system keeps holes, they are holes here. */
	hole = lseek(fd, 0, SEEK_HOLE);
	data = lseek(fd, 0, SEEK_DATA);
	printf("# first hole at %lld, first data at %lld\n", (long long)hole,
	       (long long)data);

	plain_sha256(img, SP_SIZE, want);
	err = kcore_file_sha256(fd, path, SP_SIZE, NULL, got);
	ok(!err && !memcmp(got, want, sizeof(got)),
	   "sparse: kcore_file_sha256 is sha256sum's (holes at the start, "
	   "middle and end as zeros)");
	kcore_error_destroy(err);
	ok(readback_into(fd, path, SP_SIZE, img, 0, got) &&
		   !memcmp(got, want, sizeof(got)),
	   "sparse: read back into the caller's buffer, the same");
	no_thread(fd, path, want);

	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		plain_sha256(img, cuts[i], want);
		err = kcore_file_sha256(fd, path, cuts[i], NULL, got);
		ok(!err && !memcmp(got, want, sizeof(got)),
		   "sparse: its first %llu bytes", (unsigned long long)cuts[i]);
		kcore_error_destroy(err);
	}

	plain_sha256(img, SP_IMG_LEN, want);
	err = kcore_file_sha256(fd, path, SP_IMG_LEN, NULL, got);
	ok(!err && !memcmp(got, want, sizeof(got)),
	   "sparse: 1 MiB past its end on disk hashed as zeros");
	kcore_error_destroy(err);

	/* Bytes handed over before the read-back come first. */
	both = malloc(4096 + SP_SIZE);
	if (both) {
		memcpy(both, img + SP_DATA1, 4096);
		memcpy(both + 4096, img, SP_SIZE);
		plain_sha256(both, 4096 + SP_SIZE, want);
	}
	ok(both &&
		   readback_into(fd, path, SP_SIZE, img + SP_DATA1, 4096,
				 got) &&
		   !memcmp(got, want, sizeof(got)),
	   "sparse: after 4 KiB handed over before it, in order");

	err = kcore_file_sha256(fd, path, SP_SIZE, &cancel, got);
	ok(err && err->code == KCORE_ERR_INTERRUPTED && err->path &&
		   !strcmp(err->path, path),
	   "sparse: a cancel is an interruption naming the file");
	kcore_error_destroy(err);

	/* A read that fails (a descriptor not open for reading): its error
	 * names the file and the offset of the first data. */
	wfd = open(path, O_WRONLY | O_CLOEXEC);
	err = wfd < 0 ? NULL : kcore_file_sha256(wfd, path, SP_SIZE, NULL, got);
	ok(err && err->errnum == EBADF && err->has_offset &&
		   err->offset == (uint64_t)(data < 0 ? 0 : data) &&
		   err->path && !strcmp(err->path, path),
	   "sparse: a failed read names the file and its offset");
	kcore_error_destroy(err);
out:
	if (wfd >= 0)
		close(wfd);
	close(fd);
	unlink(path);
	free(both);
	free(img);
}

int main(void)
{
	stream(20000, 64, "20000 small runs (the ring full most of the time)");
	stream(3000, BUFSZ, "3000 runs up to 256 KiB, 4 buffers reused");
	copies_bounded();
	tasks_in_order();
	stopped();
	sparse_file();
	return tap_done();
}
