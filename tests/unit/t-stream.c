// SPDX-License-Identifier: MIT
/*
 * Tests for the compressed stream writer and reader: round trips for every
 * method and data mix, random access at frame boundaries, huge zero runs,
 * truncated and corrupted input, pipes, and the zstd/xz command-line
 * tools as independent oracles when they are installed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kcoredump/stream.h"
#include "tap.h"

#define FS (64u << 10) /* small frames keep the tests fast */

static char tmpdir[] = "/tmp/t-stream.XXXXXX";
static bool have_zstd, have_xz;

enum mix { MIX_RANDOM, MIX_ZEROS, MIX_TEXT, MIX_MIXED, MIX_NUM };
static const char *const mix_names[] = { "random", "zeros", "text", "mixed" };

static uint64_t rng_state = 0x123456789abcdefULL;

static uint64_t rng(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static void fill(unsigned char *p, size_t len, enum mix m)
{
	static const char words[] =
		"the quick brown fox jumps over the lazy dog kernel page "
		"vmalloc kcore dump segment note ";

	for (size_t i = 0; i < len;) {
		enum mix cur = m;
		size_t run = len - i;

		if (m == MIX_MIXED) {
			cur = (enum mix)(rng() % 3);
			run = 1 + rng() % (3 * FS / 2);
			if (run > len - i)
				run = len - i;
		}
		switch (cur) {
		case MIX_RANDOM:
			for (size_t k = 0; k < run; k++)
				p[i + k] = (unsigned char)(rng() >> 24);
			break;
		case MIX_ZEROS:
			memset(p + i, 0, run);
			break;
		default:
			for (size_t k = 0; k < run; k++)
				p[i + k] = (unsigned char)
					words[(i + k) % (sizeof(words) - 1)];
			break;
		}
		i += run;
	}
}

static char *tmp_path(const char *name)
{
	static char buf[4][256];
	static int n;
	char *p = buf[n++ % 4];

	snprintf(p, 256, "%s/%s", tmpdir, name);
	return p;
}

static void report(struct kcore_error *err)
{
	char *d;

	if (!err)
		return;
	d = kcore_error_describe(err);
	printf("#   error: %s\n", d ? d : "?");
	free(d);
}

/* Compress data into path; chunk is the size of each write call. */
static bool compress_to(const char *path, enum kcore_compress method,
			const unsigned char *data, size_t len, size_t chunk,
			uint64_t frame_size, unsigned threads)
{
	struct kcore_ostream_opts opts = {
		.method = method,
		.threads = threads,
		.frame_size = frame_size,
	};
	struct kcore_ostream *s = NULL;
	struct kcore_error *err;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	size_t off = 0;

	if (fd < 0)
		return false;
	err = kcore_ostream_create(fd, path, &opts, &s);
	while (!err && off < len) {
		size_t n = len - off < chunk ? len - off : chunk;

		err = kcore_ostream_write(s, data + off, n);
		off += n;
	}
	if (!err)
		err = kcore_ostream_finish(s);
	if (!err && kcore_ostream_bytes_in(s) != len)
		err = kcore_error_create(KCORE_ERR_INVALID, 0, path,
					 "bytes_in is wrong");
	if (!err) {
		struct stat st;

		if (fstat(fd, &st) < 0 ||
		    (uint64_t)st.st_size != kcore_ostream_bytes_out(s))
			err = kcore_error_create(KCORE_ERR_INVALID, 0, path,
						 "bytes_out is wrong");
	}
	report(err);
	kcore_ostream_destroy(s);
	close(fd);
	kcore_error_destroy(err);
	return !err;
}

static struct kcore_istream *open_in(const char *path, int *ret_fd)
{
	struct kcore_istream *s = NULL;
	struct kcore_error *err;
	int fd = open(path, O_RDONLY);

	*ret_fd = fd;
	if (fd < 0)
		return NULL;
	err = kcore_istream_open(fd, path, &s);
	report(err);
	kcore_error_destroy(err);
	return s;
}

static bool read_all_matches(struct kcore_istream *s, const unsigned char *data,
			     size_t len)
{
	unsigned char *buf = malloc(len + 100);
	size_t done = 0, n;
	struct kcore_error *err = NULL;
	bool good;

	/* Odd read sizes cross frame boundaries at varying places. */
	for (;;) {
		size_t want = 1 + rng() % (2 * FS);

		err = kcore_istream_read(
			s, buf + done,
			want < len + 100 - done ? want : len + 100 - done, &n);
		if (err || !n)
			break;
		done += n;
	}
	report(err);
	good = !err && done == len && memcmp(buf, data, len) == 0;
	kcore_error_destroy(err);
	free(buf);
	return good;
}

static bool preads_match(struct kcore_istream *s, const unsigned char *data,
			 size_t len, uint64_t frame)
{
	unsigned char buf[3 * FS];
	bool good = true;

	/* Around every frame boundary, then random ranges. */
	for (uint64_t b = 0; b <= len && good; b += frame) {
		uint64_t off = b > 5 ? b - 5 : 0;
		size_t want = 10, done;
		struct kcore_error *err =
			kcore_istream_pread(s, buf, want, off, &done);
		size_t expect = off + want <= len ? want : len - off;

		report(err);
		good = !err && done == expect &&
		       memcmp(buf, data + off, done) == 0;
		kcore_error_destroy(err);
	}
	for (int i = 0; i < 50 && good && len; i++) {
		uint64_t off = rng() % len;
		size_t want = rng() % sizeof(buf), done;
		struct kcore_error *err =
			kcore_istream_pread(s, buf, want, off, &done);
		size_t expect = off + want <= len ? want : len - off;

		report(err);
		good = !err && done == expect &&
		       memcmp(buf, data + off, done) == 0;
		kcore_error_destroy(err);
	}
	return good;
}

static void flip_byte(const char *path, off_t at);

static bool kcore_is_zero_test(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static bool cli_matches(const char *tool, const char *path, const char *orig)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "%s -d -q -c < '%s' | cmp -s - '%s'", tool,
		 path, orig);
	return system(cmd) == 0;
}

static bool write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	bool good = fd >= 0 && write(fd, data, len) == (ssize_t)len;

	if (fd >= 0)
		close(fd);
	return good;
}

static void test_round_trips(enum kcore_compress method)
{
	static const size_t sizes[] = { 0, 1, FS - 1, FS, 7 * FS / 2 };
	size_t max = 7 * FS / 2;
	unsigned char *data = malloc(max);
	const char *name = kcore_compress_name(method);

	for (int m = 0; m < MIX_NUM; m++) {
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			size_t len = sizes[k];
			const char *path = tmp_path("rt.out");
			const char *orig = tmp_path("rt.orig");
			struct kcore_istream *s;
			int fd;

			fill(data, len, (enum mix)m);
			if (!ok(compress_to(path, method, data, len,
					    1 + rng() % FS, FS, 2),
				"%s %s %zu: compress", name, mix_names[m], len))
				continue;
			s = open_in(path, &fd);
			if (ok(s, "%s %s %zu: open", name, mix_names[m], len)) {
				ok(kcore_istream_method(s) == method &&
					   kcore_istream_seekable(s) &&
					   kcore_istream_size(s) == len,
				   "%s %s %zu: seekable, size right", name,
				   mix_names[m], len);
				ok(preads_match(s, data, len, FS),
				   "%s %s %zu: preads match", name,
				   mix_names[m], len);
				ok(read_all_matches(s, data, len),
				   "%s %s %zu: sequential read matches", name,
				   mix_names[m], len);
			}
			kcore_istream_destroy(s);
			close(fd);
			write_file(orig, data, len);
			if (method == KCORE_COMPRESS_ZSTD && have_zstd)
				ok(cli_matches("zstd", path, orig),
				   "zstd %s %zu: zstd -d restores it",
				   mix_names[m], len);
			if (method == KCORE_COMPRESS_XZ && have_xz)
				ok(cli_matches("xz", path, orig),
				   "xz %s %zu: xz -d restores it", mix_names[m],
				   len);
		}
	}
	free(data);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A 1 GiB zero run with default frames, some data around it. */
static void test_zero_run(enum kcore_compress method)
{
	const uint64_t gib = 1ull << 30;
	const char *path = tmp_path("zero.out");
	const char *name = kcore_compress_name(method);
	struct kcore_ostream_opts opts = { .method = method, .threads = 2 };
	struct kcore_ostream *os = NULL;
	struct kcore_istream *is;
	struct kcore_error *err;
	unsigned char head[1000], tail[3000], buf[8192];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	double t0 = now(), dt;
	size_t done;
	uint64_t total = sizeof(head) + gib + sizeof(tail);

	fill(head, sizeof(head), MIX_TEXT);
	fill(tail, sizeof(tail), MIX_RANDOM);
	err = kcore_ostream_create(fd, path, &opts, &os);
	if (!err)
		err = kcore_ostream_write(os, head, sizeof(head));
	if (!err)
		err = kcore_ostream_write_zeros(os, gib);
	if (!err)
		err = kcore_ostream_write(os, tail, sizeof(tail));
	if (!err)
		err = kcore_ostream_finish(os);
	dt = now() - t0;
	report(err);
	ok(!err, "%s: 1 GiB zero run written in %.2f s", name, dt);
	ok(dt < 5, "%s: zero run is fast", name);
	ok(os && kcore_ostream_bytes_out(os) < (1u << 20),
	   "%s: zero run compresses to %" PRIu64 " bytes", name,
	   os ? kcore_ostream_bytes_out(os) : 0);
	kcore_error_destroy(err);
	kcore_ostream_destroy(os);
	close(fd);

	is = open_in(path, &fd);
	if (!ok(is && kcore_istream_seekable(is) &&
			kcore_istream_size(is) == total,
		"%s: zero run stream is seekable, size right", name)) {
		kcore_istream_destroy(is);
		close(fd);
		return;
	}
	err = kcore_istream_pread(is, buf, sizeof(buf), 0, &done);
	ok(!err && done == sizeof(buf) &&
		   memcmp(buf, head, sizeof(head)) == 0 &&
		   buf[sizeof(head)] == 0 &&
		   !memcmp(buf + sizeof(head), buf + sizeof(head) + 1,
			   sizeof(buf) - sizeof(head) - 1),
	   "%s: head then zeros", name);
	kcore_error_destroy(err);
	err = kcore_istream_pread(is, buf, sizeof(buf),
				  total - sizeof(buf) + 1000, &done);
	ok(!err && done == sizeof(buf) - 1000 &&
		   memcmp(buf + sizeof(buf) - 1000 - sizeof(tail), tail,
			  sizeof(tail)) == 0 &&
		   buf[0] == 0,
	   "%s: zeros then tail, short at the end", name);
	kcore_error_destroy(err);
	err = kcore_istream_pread(is, buf, sizeof(buf), total + 5, &done);
	ok(!err && done == 0, "%s: pread past the end reads nothing", name);
	kcore_error_destroy(err);
	kcore_istream_destroy(is);
	close(fd);
}

/*
 * The hole map: zero runs handed to write_zeros are known after reopening
 * (zstd: exactly; xz: the whole zero frames), reads inside them decode no
 * frame, the CLI tools still restore the exact bytes, and a damaged map is
 * ignored without changing what is read.
 */
/*
 * Frames of one 4 KiB page of data among zeros (no zero run long enough
 * for the hole map): the cache keeps the data pages, not the frames.
 */
static void test_packed_cache(enum kcore_compress method)
{
	const char *name = kcore_compress_name(method);
	const char *path = tmp_path("packed.out");
	const unsigned frames = 8;
	struct kcore_ostream_opts opts = { .method = method,
					   .threads = 2,
					   .frame_size = FS };
	unsigned char *data = calloc(frames, FS), *buf = malloc(FS);
	struct kcore_ostream *os = NULL;
	struct kcore_istream *is;
	struct kcore_error *err;
	bool same = true;
	size_t done;
	int fd;

	for (unsigned f = 0; f < frames; f++)
		fill(data + (size_t)f * FS + (f % 4) * 8192, 4096, MIX_RANDOM);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	err = kcore_ostream_create(fd, path, &opts, &os);
	if (!err)
		err = kcore_ostream_write(os, data, (size_t)frames * FS);
	if (!err)
		err = kcore_ostream_finish(os);
	report(err);
	kcore_error_destroy(err);
	kcore_ostream_destroy(os);
	close(fd);
	is = open_in(path, &fd);
	if (!ok(is && kcore_istream_seekable(is), "%s: packed: seekable", name))
		goto out;
	for (unsigned f = 0; f < frames; f++) {
		err = kcore_istream_pread(is, buf, FS, (uint64_t)f * FS, &done);
		same &= !err && done == FS &&
			!memcmp(buf, data + (size_t)f * FS, FS);
		kcore_error_destroy(err);
	}
	/* Reads across page boundaries of a packed frame, from the cache. */
	err = kcore_istream_pread(is, buf, 3 * 4096 + 10, 3 * FS + 4095, &done);
	same &= !err && !memcmp(buf, data + 3 * FS + 4095, 3 * 4096 + 10);
	kcore_error_destroy(err);
	ok(same, "%s: packed frames read back", name);
	ok(kcore_istream_frames_decoded(is) == frames &&
		   kcore_istream_cache_bytes(is) <= frames * (4096 + 256),
	   "%s: the cache holds %u frames in %zu bytes (their data pages, "
	   "not %u bytes)",
	   name, frames, kcore_istream_cache_bytes(is), frames * FS);
	kcore_istream_destroy(is);
	close(fd);
out:
	free(data);
	free(buf);
}

/*
 * A map of many runs (a process of tens of thousands of mappings, a
 * zero run between each two pages of data): compressed, it is a small
 * part of the file (raw it was 16 bytes a run), and every run comes back.
 */
static void test_hole_map_many(void)
{
	const char *path = tmp_path("manyholes.out");
	const unsigned runs = 20000;
	struct kcore_ostream_opts opts = { .method = KCORE_COMPRESS_ZSTD,
					   .threads = 2 };
	unsigned char page[4096];
	struct kcore_ostream *os = NULL;
	struct kcore_istream *is;
	struct kcore_error *err;
	uint64_t pos = 0, total = 0, d, e, found = 0;
	bool exact = true;
	struct stat st;
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	err = kcore_ostream_create(fd, path, &opts, &os);
	for (unsigned i = 0; !err && i < runs; i++) {
		snprintf((char *)page, sizeof(page), "page %u", i);
		memset(page + 16, (int)(i & 0xff), sizeof(page) - 16);
		err = kcore_ostream_write(os, page, sizeof(page));
		/* Zero runs of one to three pages. */
		if (!err)
			err = kcore_ostream_write_zeros(os,
							4096u * (1 + i % 3));
		total += 4096u * (2 + i % 3);
	}
	if (!err)
		err = kcore_ostream_finish(os);
	report(err);
	kcore_error_destroy(err);
	kcore_ostream_destroy(os);
	close(fd);
	is = open_in(path, &fd);
	if (!ok(is && kcore_istream_has_hole_map(is),
		"zstd: the map of %u runs is found", runs))
		goto out;
	for (unsigned i = 0; pos < total; i++) {
		uint64_t start = pos + 4096, len = 4096u * (1 + i % 3);

		kcore_istream_next_data(is, pos, total, &d, &e);
		exact &= d == pos && e == start;
		pos = start + len;
		found++;
	}
	ok(exact && found == runs, "zstd: all %u runs come back exactly", runs);
	if (fstat(fd, &st) < 0)
		st.st_size = 0;
	kcore_istream_destroy(is);
	close(fd);
	/* The map's frame: the seek table's last entry's compressed size. */
	{
		unsigned char foot[9], ent[8];
		uint32_t n, map = 0;
		int rfd = open(path, O_RDONLY);

		if (rfd >= 0 && pread(rfd, foot, 9, st.st_size - 9) == 9) {
			n = (uint32_t)(foot[0] | foot[1] << 8 | foot[2] << 16 |
				       (uint32_t)foot[3] << 24);
			if (pread(rfd, ent, 8, st.st_size - 9 - 8) == 8 && n)
				map = (uint32_t)(ent[0] | ent[1] << 8 |
						 ent[2] << 16 |
						 (uint32_t)ent[3] << 24);
		}
		if (rfd >= 0)
			close(rfd);
		ok(map > 0 && map < runs,
		   "zstd: the map of %u runs takes %" PRIu32 " bytes (raw: %u)",
		   runs, map, runs * 16);
	}
	return;
out:
	kcore_istream_destroy(is);
	close(fd);
}

/* Offset of the n-th (from 0) zstd frame in path whose header is that of
 * the writer's hole frames (a 4-byte content size, a 128 KiB window), or
 * -1. */
static off_t find_hole_frame(const char *path, unsigned n)
{
	static const unsigned char head[6] = { 0x28, 0xb5, 0x2f,
					       0xfd, 0x80, 0x38 };
	unsigned char *buf = malloc(1 << 20);
	int fd = open(path, O_RDONLY);
	off_t at = 0, found = -1;
	ssize_t got;

	while (buf && fd >= 0 && found < 0 &&
	       (got = pread(fd, buf, 1 << 20, at)) > (ssize_t)sizeof(head)) {
		for (ssize_t i = 0; i + (ssize_t)sizeof(head) <= got; i++)
			if (!memcmp(buf + i, head, sizeof(head)) && !n--) {
				found = at + i;
				break;
			}
		at += got - (ssize_t)sizeof(head) + 1;
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return found;
}

static void put_byte(const char *path, off_t at, unsigned char c)
{
	int fd = open(path, O_RDWR);

	if (fd >= 0 && pwrite(fd, &c, 1, at) != 1)
		perror("pwrite");
	if (fd >= 0)
		close(fd);
}

/*
 * Issue 49: zero runs at the zstd format's floor.  A 1 TiB run and runs of
 * six distinct lengths (their parts short of whole 64 MiB hole frames,
 * ~60 MiB each, are more than the reader would decode to check them) with
 * data between: the file is 32 MiB a TiB, written fast; the map is
 * found, reads inside the runs decode nothing, the data reads back.  A
 * hole frame damaged to hold data, or cut short, drops the map, and reads
 * give what zstd decodes.  zstd -d of a run of one whole hole frame and
 * a part gives the bytes.
 */
static void test_hole_frames(void)
{
	const uint64_t tib = 1ull << 40, hf = 64ull << 20;
	const char *path = tmp_path("tib.out"), *orig = tmp_path("tib.raw");
	struct kcore_ostream_opts opts = { .method = KCORE_COMPRESS_ZSTD,
					   .threads = 2 };
	uint64_t starts[8], runs[8], pos = 0, total, decoded, d, e;
	unsigned char page[4096], buf[8192];
	struct kcore_ostream *os = NULL;
	struct kcore_istream *is;
	struct kcore_error *err;
	bool good = true;
	double t0 = now(), dt;
	size_t done;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	for (unsigned k = 0; k < 7; k++)
		runs[k] = k < 6 ? (k + 1) * hf + hf - 4096 * (k + 1) - 4096 * k
				: tib;
	err = kcore_ostream_create(fd, path, &opts, &os);
	for (unsigned k = 0; !err && k < 7; k++) {
		memset(page, 'a' + k, sizeof(page));
		err = kcore_ostream_write(os, page, sizeof(page));
		pos += sizeof(page);
		starts[k] = pos;
		if (!err)
			err = kcore_ostream_write_zeros(os, runs[k]);
		pos += runs[k];
	}
	memset(page, 'z', sizeof(page));
	if (!err)
		err = kcore_ostream_write(os, page, sizeof(page));
	total = pos + sizeof(page);
	if (!err)
		err = kcore_ostream_finish(os);
	dt = now() - t0;
	report(err);
	ok(!err && dt < 5, "zstd: 1 TiB and six zero runs written in %.2f s",
	   dt);
	ok(os && kcore_ostream_bytes_out(os) <= (33u << 20) &&
		   kcore_ostream_bytes_out(os) >= (32u << 20),
	   "zstd: they take %" PRIu64 " bytes (floor: 32 MiB a TiB)",
	   os ? kcore_ostream_bytes_out(os) : 0);
	kcore_error_destroy(err);
	kcore_ostream_destroy(os);
	close(fd);

	is = open_in(path, &fd);
	if (!ok(is && kcore_istream_seekable(is) &&
			kcore_istream_size(is) == total &&
			kcore_istream_has_hole_map(is),
		"zstd: seekable, size right, the hole map is found")) {
		kcore_istream_destroy(is);
		close(fd);
		return;
	}
	ok(kcore_istream_frames(is) < tib / hf + 48,
	   "zstd: %" PRIu64 " frames (64 MiB hole frames)",
	   kcore_istream_frames(is));
	decoded = kcore_istream_frames_decoded(is);
	for (unsigned k = 0; k < 7; k++) {
		/* Across the end of the run's first hole frame. */
		uint64_t at =
			starts[k] + (runs[k] % hf ? runs[k] % hf : hf) - 4096;

		err = kcore_istream_pread(is, buf, sizeof(buf), at, &done);
		good &= !err && done == sizeof(buf) &&
			kcore_is_zero_test(buf, sizeof(buf));
		kcore_error_destroy(err);
		kcore_istream_next_data(is, starts[k], total, &d, &e);
		good &= d == starts[k] + runs[k];
	}
	ok(good && kcore_istream_frames_decoded(is) == decoded,
	   "zstd: reads inside the runs decode no frame, the map is exact");
	good = true;
	for (unsigned k = 0; k < 7; k++) {
		err = kcore_istream_pread(is, buf, 4096, starts[k] - 4096,
					  &done);
		good &= !err && done == 4096 && buf[0] == 'a' + k &&
			buf[4095] == 'a' + k;
		kcore_error_destroy(err);
	}
	err = kcore_istream_pread(is, buf, sizeof(buf), total - 4096, &done);
	ok(good && !err && done == 4096 && buf[0] == 'z',
	   "zstd: the data between the runs reads back");
	kcore_error_destroy(err);
	kcore_istream_destroy(is);
	close(fd);

	/* The first run's part frame: its first RLE block repeats 1, not 0
	 * (the frame header is 10 bytes, the block's byte follows its 3-byte
	 * header). */
	{
		off_t at = find_hole_frame(path, 0);

		put_byte(path, at + 13, 1);
		is = open_in(path, &fd);
		err = is ? kcore_istream_pread(is, buf, 16, starts[0], &done)
			 : NULL;
		ok(at > 0 && is && !kcore_istream_has_hole_map(is) && !err &&
			   done == 16 && buf[0] == 1 && buf[15] == 1,
		   "zstd: a hole frame of ones drops the map, reads give them");
		kcore_error_destroy(err);
		kcore_istream_destroy(is);
		close(fd);
		put_byte(path, at + 13, 0);
		/* Its first block flagged last: the frame ends early. */
		put_byte(path, at + 10, 0x03); /* was 0x02: RLE, not last */
		is = open_in(path, &fd);
		ok(is && !kcore_istream_has_hole_map(is),
		   "zstd: a hole frame cut short drops the map");
		kcore_istream_destroy(is);
		close(fd);
	}

	/* zstd -d of a whole hole frame and a part, between data. */
	if (have_zstd) {
		const uint64_t run = hf + 5 * 4096 + 7;

		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		os = NULL;
		memset(page, 'q', sizeof(page));
		err = kcore_ostream_create(fd, path, &opts, &os);
		if (!err)
			err = kcore_ostream_write(os, page, 100);
		if (!err)
			err = kcore_ostream_write_zeros(os, run);
		if (!err)
			err = kcore_ostream_write(os, page, 200);
		if (!err)
			err = kcore_ostream_finish(os);
		report(err);
		kcore_error_destroy(err);
		kcore_ostream_destroy(os);
		close(fd);
		fd = open(orig, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		good = fd >= 0 && pwrite(fd, page, 100, 0) == 100 &&
		       pwrite(fd, page, 200, 100 + run) == 200;
		if (fd >= 0)
			close(fd);
		ok(good && cli_matches("zstd", path, orig),
		   "zstd -d restores a run of a whole hole frame and a part");
	}
	unlink(orig);
	unlink(path);
}

static void test_hole_map(enum kcore_compress method)
{
	const char *name = kcore_compress_name(method);
	const char *path = tmp_path("holes.out"), *orig = tmp_path("holes.raw");
	const uint64_t z1 = 3 * FS + 123, z2 = 10 * FS;
	const size_t head = 1000, mid = FS / 2, tail = 3000;
	const size_t total = head + z1 + mid + z2 + tail;
	struct kcore_ostream_opts opts = { .method = method,
					   .threads = 2,
					   .frame_size = FS };
	unsigned char *data = calloc(1, total), *buf = malloc(total);
	struct kcore_ostream *os = NULL;
	struct kcore_istream *is;
	struct kcore_error *err;
	uint64_t pos = 0, holes = 0, d, e, decoded;
	bool inside = true, exact = true;
	size_t done;
	int fd;

	fill(data, head, MIX_TEXT);
	fill(data + head + z1, mid, MIX_RANDOM);
	fill(data + total - tail, tail, MIX_RANDOM);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	err = kcore_ostream_create(fd, path, &opts, &os);
	if (!err)
		err = kcore_ostream_write(os, data, head);
	if (!err)
		err = kcore_ostream_write_zeros(os, z1);
	if (!err)
		err = kcore_ostream_write(os, data + head + z1, mid);
	if (!err)
		err = kcore_ostream_write_zeros(os, z2);
	if (!err)
		err = kcore_ostream_write(os, data + total - tail, tail);
	if (!err)
		err = kcore_ostream_finish(os);
	report(err);
	ok(!err, "%s: stream with zero runs written", name);
	kcore_error_destroy(err);
	kcore_ostream_destroy(os);
	close(fd);
	write_file(orig, data, total);

	is = open_in(path, &fd);
	if (!ok(is && kcore_istream_has_hole_map(is),
		"%s: the hole map is found", name))
		goto out;
	/* Every zero run the map names lies in a written zero run. */
	while (pos < total) {
		kcore_istream_next_data(is, pos, total, &d, &e);
		if (d > pos) {
			holes += d - pos;
			inside &= (pos >= head && d <= head + z1) ||
				  (pos >= head + z1 + mid && d <= total - tail);
		}
		if (d >= total)
			break;
		exact &= e > d;
		pos = e;
	}
	ok(inside && exact, "%s: map runs lie in the zero runs", name);
	if (method == KCORE_COMPRESS_ZSTD)
		is_int(holes, z1 + z2,
		       "zstd: the map holds the zero runs exactly");
	else
		ok(holes >= 2 * FS + 9 * FS,
		   "xz: the map holds the whole zero frames (%" PRIu64
		   " bytes)",
		   holes);
	/* A zero run of a frame or more ends the frame before it and begins
	 * with a frame of its part short of whole frames (z1 % FS): the
	 * frames with data hold the data only (xz: and that short frame,
	 * which its hole map does not mark). */
	ok(kcore_istream_data_frame_bytes(is) ==
		   head + mid + tail +
			   (method == KCORE_COMPRESS_XZ ? z1 % FS : 0),
	   "%s: the frames with data hold only the data (%" PRIu64 " bytes)",
	   name, kcore_istream_data_frame_bytes(is));
	decoded = kcore_istream_frames_decoded(is);
	err = kcore_istream_pread(is, buf, 2 * FS, head + z1 + mid + FS, &done);
	ok(!err && done == 2 * FS && kcore_is_zero_test(buf, 2 * FS) &&
		   kcore_istream_frames_decoded(is) == decoded,
	   "%s: a read inside a zero run decodes no frame", name);
	kcore_error_destroy(err);
	err = kcore_istream_pread(is, buf, total, 0, &done);
	ok(!err && done == total && !memcmp(buf, data, total),
	   "%s: the whole stream reads back", name);
	kcore_error_destroy(err);
	decoded = kcore_istream_frames_decoded(is);
	err = kcore_istream_pread(is, buf, head, 0, &done);
	ok(!err && kcore_istream_frames_decoded(is) == decoded,
	   "%s: frames read before come from the cache", name);
	kcore_error_destroy(err);
	if ((method == KCORE_COMPRESS_ZSTD && have_zstd) ||
	    (method == KCORE_COMPRESS_XZ && have_xz))
		ok(cli_matches(name, path, orig),
		   "%s -d restores the exact bytes past the hole map", name);
	kcore_istream_destroy(is);
	close(fd);

	if (method == KCORE_COMPRESS_ZSTD) {
		/* Damage the map's CRC-covered body: ignored, same bytes. */
		unsigned char foot[4] = { 0 };
		struct stat st;
		int rfd = open(path, O_RDONLY);

		/* The map frame ends where the seek table (8 + 8 * n + 9
		 * bytes) starts; flip a byte of its last run. */
		if (rfd < 0 || fstat(rfd, &st) < 0 ||
		    pread(rfd, foot, 4, st.st_size - 9) != 4)
			st.st_size = 0;
		if (rfd >= 0)
			close(rfd);
		flip_byte(
			path,
			st.st_size -
				(8 + 8 * (off_t)(foot[0] | foot[1] << 8) + 9) -
				10);
		is = open_in(path, &fd);
		if (is) {
			uint64_t dd, de;

			kcore_istream_next_data(is, head, total, &dd, &de);
			err = kcore_istream_pread(is, buf, total, 0, &done);
			ok(!kcore_istream_has_hole_map(is) && dd == head &&
				   !err && done == total &&
				   !memcmp(buf, data, total),
			   "zstd: a damaged hole map is ignored, reads are "
			   "the same");
			kcore_error_destroy(err);
		}
		kcore_istream_destroy(is);
		close(fd);
	}
	free(data);
	free(buf);
	return;
out:
	kcore_istream_destroy(is);
	close(fd);
	free(data);
	free(buf);
}

/*
 * The stored frame (a dump's headers, rewritten once the stream is
 * finished) is compressed; a rewrite that fits its room stays in place, one
 * that does not moves the rest of the file; the hole map, the seek table or
 * index and the zstd/xz tools see the new bytes either way.
 */
static bool stored_reads_back(enum kcore_compress method, const char *path,
			      const unsigned char *data, size_t len,
			      const char *what)
{
	const char *name = kcore_compress_name(method);
	const char *orig = tmp_path("stored.raw");
	struct kcore_istream *is;
	bool good;
	int fd;

	is = open_in(path, &fd);
	good = ok(is && kcore_istream_seekable(is) &&
			  kcore_istream_size(is) == len &&
			  kcore_istream_has_hole_map(is),
		  "%s %s: seekable, size right, hole map found", name, what);
	if (good) {
		ok(preads_match(is, data, len, FS), "%s %s: preads match", name,
		   what);
		ok(read_all_matches(is, data, len),
		   "%s %s: sequential read matches", name, what);
	}
	kcore_istream_destroy(is);
	close(fd);
	write_file(orig, data, len);
	if ((method == KCORE_COMPRESS_ZSTD && have_zstd) ||
	    (method == KCORE_COMPRESS_XZ && have_xz))
		ok(cli_matches(name, path, orig), "%s %s: %s -d restores it",
		   name, what, name);
	/* One stream: a decoder that stops after the first one (systemd
	 * 252's coredumpctl) gets every byte, not only the headers. */
	if (method == KCORE_COMPRESS_XZ && have_xz)
		ok(cli_matches("xz --single-stream", path, orig),
		   "xz %s: one stream holds it all (xz --single-stream)", what);
	return good;
}

/*
 * xz: rewrites of the stored block that compress to sizes up and down
 * leave rooms of every kind (none, one empty block, several, a few bytes
 * too few: grown), and an index that changes length (stream padding after
 * it when shorter); each one reads back, and as one stream.
 */
static void test_stored_rooms(void)
{
	char path[256];
	const size_t head = 16u << 10, zeros = 2 * FS, tail = zeros + FS + 100;
	struct kcore_ostream_opts opts = { .method = KCORE_COMPRESS_XZ,
					   .threads = 1,
					   .frame_size = FS };
	unsigned char *data = malloc(head + tail);
	struct kcore_ostream *os = NULL;
	struct kcore_error *err;
	uint64_t off;
	int fd, bad = 0, k;

	/* Its own copy: tmp_path() reuses 4 buffers. */
	snprintf(path, sizeof(path), "%s", tmp_path("rooms.out"));
	fill(data, head, MIX_TEXT);
	memset(data + head, 0, zeros);
	fill(data + head + zeros, tail - zeros, MIX_MIXED);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	err = kcore_ostream_create(fd, path, &opts, &os);
	if (!err)
		err = kcore_ostream_write_stored(os, data, head, 600, &off);
	if (!err)
		err = kcore_ostream_write_zeros(os, zeros);
	if (!err)
		err = kcore_ostream_write(os, data + head + zeros,
					  tail - zeros);
	if (!err)
		err = kcore_ostream_finish(os);
	for (k = 0; !err && k < 24 && !bad; k++) {
		/* 0..1.4 KiB of random bytes in the text, not in order. */
		size_t r = (size_t)(k * 397) % 1400;

		fill(data, head, MIX_TEXT);
		fill(data + 100, r, MIX_RANDOM);
		err = kcore_ostream_rewrite_stored(os, 0, data, head);
		if (!err && !stored_reads_back(KCORE_COMPRESS_XZ, path, data,
					       head + tail, "room rewrite"))
			bad = k + 1;
	}
	report(err);
	ok(!err && !bad,
	   "xz stored: %d rewrites of sizes up and down read back (room grown "
	   "by %" PRIu64 ")",
	   k, os ? kcore_ostream_room_grown(os) : 0);
	kcore_error_destroy(err);
	kcore_ostream_destroy(os);
	close(fd);
	free(data);
}

/*
 * xz files written before the headers moved into the data's stream: the
 * headers in an .xz stream of their own, stream padding, then the data's
 * stream.  They still read, through the index and front to back.
 */
static void test_xz_two_streams(void)
{
	const char *head_path = tmp_path("two.head"),
		   *rest_path = tmp_path("two.rest"),
		   *path = tmp_path("two.xz");
	const size_t head = 5000, rest = 3 * FS + 10;
	unsigned char *data = malloc(head + rest);
	struct kcore_istream *s;
	char cmd[1024];
	int fd;

	if (!have_xz) {
		free(data);
		return;
	}
	fill(data, head, MIX_TEXT);
	fill(data + head, rest, MIX_MIXED);
	write_file(head_path, data, head);
	write_file(rest_path, data + head, rest);
	snprintf(cmd, sizeof(cmd),
		 "{ xz -q -c '%s' && head -c 64 /dev/zero && "
		 "xz -q -c --block-size=%u '%s'; } > '%s'",
		 head_path, FS, rest_path, path);
	if (!ok(system(cmd) == 0, "xz two streams: made with the xz CLI")) {
		free(data);
		return;
	}
	s = open_in(path, &fd);
	ok(s && kcore_istream_seekable(s) &&
		   kcore_istream_size(s) == head + rest &&
		   kcore_istream_frames(s) == 5 &&
		   preads_match(s, data, head + rest, FS),
	   "xz two streams with padding: 5 blocks, random reads match");
	kcore_istream_destroy(s);
	close(fd);
	s = open_in(path, &fd);
	ok(s && read_all_matches(s, data, head + rest),
	   "xz two streams with padding: a sequential read matches");
	kcore_istream_destroy(s);
	close(fd);
	free(data);
}

static void test_stored(enum kcore_compress method)
{
	const char *name = kcore_compress_name(method);
	const char *path = tmp_path("stored.out");
	const size_t head = 256u << 10, mid = FS / 2, zeros = 8 * FS;
	const size_t total = head + zeros + mid;
	struct kcore_ostream_opts opts = { .method = method,
					   .threads = 2,
					   .frame_size = FS };
	unsigned char *data = calloc(1, total);
	struct kcore_ostream *os = NULL;
	struct kcore_error *err;
	uint64_t off = 1, size1, grown;
	struct stat st;
	int fd;

	fill(data, head, MIX_TEXT);
	fill(data + head + zeros, mid, MIX_RANDOM);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	err = kcore_ostream_create(fd, path, &opts, &os);
	if (!err)
		err = kcore_ostream_write_stored(os, data, head, 64, &off);
	if (!err)
		err = kcore_ostream_write_zeros(os, zeros);
	if (!err)
		err = kcore_ostream_write(os, data + head + zeros, mid);
	if (!err)
		err = kcore_ostream_finish(os);
	report(err);
	ok(!err && off == 0, "%s stored: written at offset 0", name);
	kcore_error_destroy(err);
	size1 = os ? kcore_ostream_bytes_out(os) : 0;
	/* 256 KiB of text and 32 KiB of random bytes: the text must shrink
	 * (stored raw it alone would take more than the whole file). */
	ok(size1 && size1 < head / 4 + mid + 4096,
	   "%s stored: the headers are compressed (%" PRIu64
	   " bytes for %zu of text and %zu random)",
	   name, size1, head, mid);

	/* A few bytes changed: the rewrite fits the room. */
	memcpy(data + 1000, "rewritten", 9);
	err = os ? kcore_ostream_rewrite_stored(os, 0, data, head)
		 : &kcore_error_nomem;
	report(err);
	ok(!err && kcore_ostream_room_grown(os) == 0 &&
		   kcore_ostream_bytes_out(os) == size1 && !fstat(fd, &st) &&
		   (uint64_t)st.st_size == size1,
	   "%s stored: a small change is rewritten in place", name);
	kcore_error_destroy(err);
	stored_reads_back(method, path, data, total, "rewritten in place");

	/* Random bytes: far more than the room, the rest moves. */
	fill(data, head, MIX_RANDOM);
	err = os ? kcore_ostream_rewrite_stored(os, 0, data, head)
		 : &kcore_error_nomem;
	report(err);
	grown = os ? kcore_ostream_room_grown(os) : 0;
	ok(!err && grown > head / 2 &&
		   kcore_ostream_bytes_out(os) == size1 + grown &&
		   !fstat(fd, &st) && (uint64_t)st.st_size == size1 + grown,
	   "%s stored: a rewrite larger than the room moves the rest by "
	   "%" PRIu64 " bytes",
	   name, grown);
	kcore_error_destroy(err);
	stored_reads_back(method, path, data, total, "after the move");

	/* Another length, or a second stored frame: refused. */
	err = os ? kcore_ostream_rewrite_stored(os, 0, data, head - 1)
		 : &kcore_error_nomem;
	ok(err != NULL, "%s stored: a rewrite of another length is refused",
	   name);
	kcore_error_destroy(err);
	kcore_ostream_destroy(os);
	close(fd);
	os = NULL;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	err = kcore_ostream_create(fd, path, &opts, &os);
	if (!err)
		err = kcore_ostream_write(os, data, 100);
	kcore_error_destroy(err);
	err = os ? kcore_ostream_write_stored(os, data, head, 0, &off)
		 : &kcore_error_nomem;
	ok(err != NULL, "%s stored: a stored frame after data is refused",
	   name);
	kcore_error_destroy(err);
	kcore_ostream_destroy(os);
	close(fd);
	free(data);
}

static bool copy_file(const char *from, const char *to, off_t len)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && truncate -s %jd '%s'", from,
		 to, (intmax_t)len, to);
	return system(cmd) == 0;
}

static void flip_byte(const char *path, off_t at)
{
	int fd = open(path, O_RDWR);
	unsigned char c;

	if (fd < 0)
		return;
	if (pread(fd, &c, 1, at) == 1) {
		c ^= 0x55;
		if (pwrite(fd, &c, 1, at) != 1)
			perror("pwrite");
	}
	close(fd);
}

/* Read everything, returning the first error (or NULL at a clean end). */
static struct kcore_error *drain_all(struct kcore_istream *s, uint64_t *ret)
{
	static unsigned char buf[1 << 16];
	struct kcore_error *err;
	size_t n;

	*ret = 0;
	do {
		err = kcore_istream_read(s, buf, sizeof(buf), &n);
		*ret += n;
	} while (!err && n);
	return err;
}

static void test_damage(enum kcore_compress method)
{
	const char *name = kcore_compress_name(method);
	const char *good = tmp_path("dmg.good");
	const char *bad = tmp_path("dmg.bad");
	size_t len = 5 * FS;
	unsigned char *data = malloc(len);
	struct kcore_istream *s;
	struct kcore_error *err;
	struct stat st;
	uint64_t got;
	size_t done;
	int fd;

	fill(data, len, MIX_TEXT);
	if (!compress_to(good, method, data, len, len, FS, 2) ||
	    stat(good, &st) < 0) {
		ok(0, "%s: damage test setup", name);
		free(data);
		return;
	}

	/* Truncated anywhere: an error, never a crash or a hang. */
	for (off_t cut = 0; cut < st.st_size; cut += st.st_size / 7 + 1) {
		copy_file(good, bad, cut);
		fd = open(bad, O_RDONLY);
		err = kcore_istream_open(fd, bad, &s);
		if (!err) {
			ok(!kcore_istream_seekable(s),
			   "%s cut at %jd: not seekable (%s)", name,
			   (intmax_t)cut,
			   kcore_istream_index_problem(s)
				   ? kcore_istream_index_problem(s)
				   : "?");
			err = drain_all(s, &got);
			kcore_istream_destroy(s);
		}
		report(err);
		ok(err && err->code == KCORE_ERR_FORMAT,
		   "%s cut at %jd: format error", name, (intmax_t)cut);
		kcore_error_destroy(err);
		close(fd);
	}

	/* A flipped byte inside the second frame's data. */
	copy_file(good, bad, st.st_size);
	flip_byte(bad, st.st_size / 3);
	s = open_in(bad, &fd);
	if (s) {
		unsigned char *buf = malloc(len);

		err = kcore_istream_pread(s, buf, len, 0, &done);
		report(err);
		ok(err && err->code == KCORE_ERR_FORMAT &&
			   strstr(err->message, method == KCORE_COMPRESS_ZSTD
							? "zstd frame at offset"
							: "xz "),
		   "%s: a flipped byte is a format error", name);
		kcore_error_destroy(err);
		free(buf);
		kcore_istream_destroy(s);
	} else {
		ok(1, "%s: a flipped byte is refused at open", name);
	}
	close(fd);

	/* A flipped byte in the last frame's checksum (zstd). */
	if (method == KCORE_COMPRESS_ZSTD) {
		off_t table = 8 + 8 * 5 + 9;

		copy_file(good, bad, st.st_size);
		flip_byte(bad, st.st_size - table - 1);
		s = open_in(bad, &fd);
		if (s) {
			unsigned char buf[16];

			err = kcore_istream_pread(s, buf, sizeof(buf), len - 10,
						  &done);
			report(err);
			ok(err && strstr(err->message, "fails its checksum"),
			   "zstd: a bad checksum is reported as such");
			kcore_error_destroy(err);
			kcore_istream_destroy(s);
		}
		close(fd);

		/* A seek table that lies: sequential fallback still works. */
		copy_file(good, bad, st.st_size);
		flip_byte(bad, st.st_size - table + 8);
		s = open_in(bad, &fd);
		ok(s && !kcore_istream_seekable(s) &&
			   kcore_istream_index_problem(s) &&
			   kcore_istream_size(s) == UINT64_MAX,
		   "zstd: bad seek table -> not seekable (%s)",
		   s && kcore_istream_index_problem(s)
			   ? kcore_istream_index_problem(s)
			   : "?");
		if (s) {
			unsigned char buf[16];

			ok(read_all_matches(s, data, len),
			   "zstd: bad seek table, sequential read works");
			/* A file: back to the frame that holds it (issue
			 * 27 item 11); a pipe refuses (below). */
			err = kcore_istream_pread(s, buf, 4, 0, &done);
			ok(!err && done == 4 && !memcmp(buf, data, 4),
			   "zstd: backward pread without a seek table "
			   "decodes again from a frame start");
			kcore_error_destroy(err);
			err = kcore_istream_pread(s, buf, 16, len - 16, &done);
			ok(!err && done == 16 &&
				   !memcmp(buf,
					   (const unsigned char *)data + len -
						   16,
					   16),
			   "zstd: and forward again to the end");
			kcore_error_destroy(err);
		}
		kcore_istream_destroy(s);
		close(fd);

		/* An absurd frame count. */
		copy_file(good, bad, st.st_size);
		flip_byte(bad, st.st_size - 6);
		s = open_in(bad, &fd);
		ok(s && !kcore_istream_seekable(s),
		   "zstd: absurd frame count -> not seekable");
		kcore_istream_destroy(s);
		close(fd);
	}

	/* Any single flipped byte: an error, or the right data. */
	for (int i = 0; i < 40; i++) {
		off_t at = (off_t)(rng() % (uint64_t)st.st_size);
		unsigned char *buf = malloc(len + 1);
		bool right = true;

		copy_file(good, bad, st.st_size);
		flip_byte(bad, at);
		fd = open(bad, O_RDONLY);
		s = NULL;
		err = kcore_istream_open(fd, bad, &s);
		if (!err && kcore_istream_seekable(s)) {
			err = kcore_istream_pread(s, buf, len + 1, 0, &done);
			right = err || (done == len && !memcmp(buf, data, len));
		}
		if (!err) {
			err = kcore_istream_read(s, buf, len + 1, &done);
			right = right && (err || (done == len &&
						  !memcmp(buf, data, len)));
		}
		if (!ok(right, "%s: byte 0x%jx flipped: %s", name, (intmax_t)at,
			err ? "error" : "right data"))
			report(err);
		kcore_error_destroy(err);
		kcore_istream_destroy(s);
		close(fd);
		free(buf);
	}

	/* Not compressed at all. */
	write_file(bad, "hello, world\n", 13);
	fd = open(bad, O_RDONLY);
	s = NULL;
	err = kcore_istream_open(fd, bad, &s);
	ok(err && err->code == KCORE_ERR_FORMAT && !s &&
		   strstr(err->message, "not a zstd or xz stream"),
	   "plain text is not a stream");
	kcore_error_destroy(err);
	close(fd);
	free(data);
}

/* Feed a file through a pipe: the reader must go sequentially. */
static void test_pipe(enum kcore_compress method)
{
	const char *name = kcore_compress_name(method);
	const char *path = tmp_path("pipe.out");
	size_t len = 3 * FS + 17;
	unsigned char *data = malloc(len), buf[64];
	struct kcore_istream *s = NULL;
	struct kcore_error *err;
	int p[2];
	pid_t pid;
	size_t done;

	fill(data, len, MIX_MIXED);
	if (!compress_to(path, method, data, len, len, FS, 1) || pipe(p) < 0) {
		ok(0, "%s: pipe setup", name);
		free(data);
		return;
	}
	pid = fork();
	if (pid == 0) {
		char cmd[512];

		close(p[0]);
		dup2(p[1], 1);
		snprintf(cmd, sizeof(cmd), "cat '%s'", path);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	err = kcore_istream_open(p[0], "pipe", &s);
	report(err);
	ok(!err && !kcore_istream_seekable(s) &&
		   !kcore_istream_index_problem(s),
	   "%s pipe: opens, sequential", name);
	if (!err) {
		err = kcore_istream_pread(s, buf, sizeof(buf), FS + 3, &done);
		ok(!err && done == sizeof(buf) &&
			   !memcmp(buf, data + FS + 3, sizeof(buf)),
		   "%s pipe: forward pread skips ahead", name);
		kcore_error_destroy(err);
		err = kcore_istream_pread(s, buf, sizeof(buf), 0, &done);
		ok(err && err->code == KCORE_ERR_UNSUPPORTED,
		   "%s pipe: backward pread is refused", name);
		kcore_error_destroy(err);
		err = kcore_istream_pread(s, buf, sizeof(buf), len - 10, &done);
		ok(!err && done == 10 && !memcmp(buf, data + len - 10, 10),
		   "%s pipe: short read at the end", name);
	}
	kcore_error_destroy(err);
	kcore_istream_destroy(s);
	close(p[0]);
	waitpid(pid, NULL, 0);
	free(data);
}

/* Files made by the real tools: read sequentially or through the index. */
static void test_foreign(void)
{
	const char *orig = tmp_path("foreign.orig");
	const char *path = tmp_path("foreign.out");
	size_t len = 3 << 20;
	unsigned char *data = malloc(len);
	struct kcore_istream *s;
	char cmd[1024];
	int fd;

	fill(data, len, MIX_MIXED);
	write_file(orig, data, len);
	if (have_zstd) {
		snprintf(cmd, sizeof(cmd), "zstd -q -f -1 '%s' -o '%s'", orig,
			 path);
		if (system(cmd) == 0) {
			s = open_in(path, &fd);
			ok(s && !kcore_istream_seekable(s) &&
				   read_all_matches(s, data, len),
			   "zstd CLI output reads sequentially");
			kcore_istream_destroy(s);
			close(fd);
		}
	}
	if (have_xz) {
		snprintf(cmd, sizeof(cmd),
			 "xz -q -T2 -1 --block-size=1MiB -c '%s' > '%s'", orig,
			 path);
		if (system(cmd) == 0) {
			s = open_in(path, &fd);
			ok(s && kcore_istream_seekable(s) &&
				   kcore_istream_frames(s) == 3 &&
				   preads_match(s, data, len, 1 << 20),
			   "xz CLI output with 3 blocks reads randomly");
			kcore_istream_destroy(s);
			close(fd);
		}
	}
	free(data);
}

static int fail_after;

static ssize_t failing_write(void *ctx, int fd, const void *buf, size_t len)
{
	(void)ctx;
	if (fail_after <= 0) {
		errno = ENOSPC;
		return -1;
	}
	fail_after--;
	return write(fd, buf, len);
}

static void test_errors(void)
{
	struct kcore_io_ops ops = { .write = failing_write };
	struct kcore_ostream_opts opts = {
		.method = KCORE_COMPRESS_ZSTD,
		.threads = 2,
		.frame_size = FS,
		.io = &ops,
	};
	struct kcore_ostream *s = NULL;
	struct kcore_error *err;
	unsigned char *data = malloc(40 * FS);
	int fd = open(tmp_path("err.out"), O_WRONLY | O_CREAT | O_TRUNC, 0644);

	fill(data, 40 * FS, MIX_RANDOM);
	fail_after = 2;
	err = kcore_ostream_create(fd, "err.out", &opts, &s);
	for (int i = 0; !err && i < 40; i++)
		err = kcore_ostream_write(s, data + i * FS, FS);
	if (!err)
		err = kcore_ostream_finish(s);
	ok(err && err->code == KCORE_ERR_OS && err->errnum == ENOSPC,
	   "ENOSPC from the fd is reported");
	kcore_error_destroy(err);
	err = kcore_ostream_write(s, data, 10);
	ok(err && err->code == KCORE_ERR_INVALID,
	   "writes after a failure are refused");
	kcore_error_destroy(err);
	kcore_ostream_destroy(s);
	close(fd);

	opts.frame_size = 100;
	s = NULL;
	err = kcore_ostream_create(1, "x", &opts, &s);
	ok(err && err->code == KCORE_ERR_INVALID && !s,
	   "a tiny frame size is refused");
	kcore_error_destroy(err);
	opts.frame_size = 0;
	opts.level = 99;
	err = kcore_ostream_create(1, "x", &opts, &s);
	ok(err && err->code == KCORE_ERR_INVALID && !s,
	   "zstd level 99 is refused");
	kcore_error_destroy(err);
	free(data);
}

static void test_none(void)
{
	const char *path = tmp_path("none.out");
	struct kcore_ostream_opts opts = { .method = KCORE_COMPRESS_NONE };
	struct kcore_ostream *s = NULL;
	struct kcore_error *err;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct stat st;

	err = kcore_ostream_create(fd, path, &opts, &s);
	if (!err)
		err = kcore_ostream_write(s, "abc", 3);
	if (!err)
		err = kcore_ostream_write_zeros(s, (3u << 20) + 5);
	if (!err)
		err = kcore_ostream_finish(s);
	report(err);
	ok(!err && fstat(fd, &st) == 0 && st.st_size == (3 << 20) + 8 &&
		   kcore_ostream_bytes_out(s) == (3u << 20) + 8 &&
		   kcore_ostream_bytes_in(s) == (3u << 20) + 8,
	   "none: pass-through writes data and zeros");
	kcore_error_destroy(err);
	kcore_ostream_destroy(s);
	close(fd);
}

static void test_names(void)
{
	is_str(kcore_compress_name(KCORE_COMPRESS_ZSTD), "zstd", "name zstd");
	is_int(kcore_compress_from_name("xz"), KCORE_COMPRESS_XZ, "from xz");
	is_int(kcore_compress_from_name("gzip"), -1, "from gzip");
	is_int(kcore_compress_from_suffix("a.elf.zst"), KCORE_COMPRESS_ZSTD,
	       ".zst");
	is_int(kcore_compress_from_suffix("a.zstd"), KCORE_COMPRESS_ZSTD,
	       ".zstd");
	is_int(kcore_compress_from_suffix("a.elf.xz"), KCORE_COMPRESS_XZ,
	       ".xz");
	is_int(kcore_compress_from_suffix("a.elf"), KCORE_COMPRESS_NONE,
	       "no suffix");
	is_int(kcore_compress_from_suffix("zst"), KCORE_COMPRESS_NONE,
	       "bare zst");
}

static bool have_tool(const char *tool)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "%s --version >/dev/null 2>&1", tool);
	return system(cmd) == 0;
}

int main(void)
{
	char cmd[300];

	if (!mkdtemp(tmpdir))
		tap_skip_all("cannot make a temporary directory");
	signal(SIGPIPE, SIG_IGN);
	have_zstd = have_tool("zstd");
	have_xz = have_tool("xz");
	if (!have_zstd)
		printf("# zstd CLI missing: skipping its cross-checks\n");
	if (!have_xz)
		printf("# xz CLI missing: skipping its cross-checks\n");

	test_names();
	test_none();
	for (int m = KCORE_COMPRESS_ZSTD; m <= KCORE_COMPRESS_XZ; m++) {
		test_round_trips((enum kcore_compress)m);
		test_zero_run((enum kcore_compress)m);
		test_hole_map((enum kcore_compress)m);
		test_stored((enum kcore_compress)m);
		test_packed_cache((enum kcore_compress)m);
		test_damage((enum kcore_compress)m);
		test_pipe((enum kcore_compress)m);
	}
	test_hole_map_many();
	test_hole_frames();
	test_stored_rooms();
	test_xz_two_streams();
	test_foreign();
	test_errors();

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", tmpdir);
	return tap_done();
}
