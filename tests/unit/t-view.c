// SPDX-License-Identifier: MIT
/*
 * kcore_view_prefetch: the kernel-like test core compressed in 1 MiB zstd
 * frames and opened as a view (what kcoredump mount serves).  Prefetch
 * decodes each frame once; the reads after it decode nothing and return
 * the core's bytes.  With a cache too small for the frames it does
 * nothing, and a stop flag already set stops it before the first frame.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kcoredump/stream.h"
#include "kcoredump/view.h"
#include "kernelcore.h"
#include "tap.h"

static void compress(const char *in, const char *out)
{
	struct kcore_ostream_opts o = { .method = KCORE_COMPRESS_ZSTD,
					.threads = 1,
					.frame_size = 1u << 20 };
	size_t len = DATA_OFF + SEG_SIZE;
	unsigned char *buf = malloc(len);
	struct kcore_ostream *os = NULL;
	struct kcore_error *err;
	int ifd = open(in, O_RDONLY);
	int ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (!buf || ifd < 0 || ofd < 0 || read(ifd, buf, len) != (ssize_t)len)
		tap_skip_all("cannot read the test core");
	err = kcore_ostream_create(ofd, out, &o, &os);
	if (!err)
		err = kcore_ostream_write(os, buf, len);
	if (!err)
		err = kcore_ostream_finish(os);
	if (err)
		tap_skip_all("cannot compress the test core");
	kcore_ostream_destroy(os);
	close(ifd);
	close(ofd);
	free(buf);
}

int main(void)
{
	char dir[] = "/tmp/t-view-XXXXXX", core[256], zst[256];
	struct kcore_view_opts small = { .cache_bytes = 1u << 20 };
	volatile sig_atomic_t stop = 1;
	size_t len = DATA_OFF + SEG_SIZE, done = 0;
	unsigned char *want = malloc(len), *got = malloc(len);
	struct kcore_view *v = NULL;
	struct kcore_error *err;
	uint64_t decoded;
	int fd;

	if (!mkdtemp(dir) || !want || !got)
		tap_skip_all("no temp dir");
	snprintf(core, sizeof(core), "%s/core", dir);
	snprintf(zst, sizeof(zst), "%s/core.zst", dir);
	kc_kernel_core(core, false);
	compress(core, zst);
	fd = open(core, O_RDONLY);
	if (fd < 0 || read(fd, want, len) != (ssize_t)len)
		tap_skip_all("cannot read the test core");
	close(fd);

	err = kcore_view_open(zst, NULL, &v);
	ok(!err, "the .zst opens as a view");
	if (err)
		return tap_done();
	/* Opening reads the ELF header and notes: frame 0. */
	decoded = kcore_view_frames_decoded(v);
	err = kcore_view_prefetch(v, &stop);
	ok(!err && kcore_view_frames_decoded(v) == decoded,
	   "a stop flag already set: no frame decoded");
	err = kcore_view_prefetch(v, NULL);
	decoded = kcore_view_frames_decoded(v);
	ok(!err && decoded >= 8 && decoded <= 10,
	   "prefetch decodes each frame once (%llu frames)",
	   (unsigned long long)decoded);
	err = kcore_view_pread(v, got, len, 0, &done);
	ok(!err && done == len && !memcmp(got, want, len) &&
		   kcore_view_frames_decoded(v) == decoded,
	   "then every byte reads back from the cache, nothing decoded");
	kcore_view_destroy(v);

	err = kcore_view_open(zst, &small, &v);
	ok(!err, "opened again with a 1 MiB cache");
	if (!err) {
		decoded = kcore_view_frames_decoded(v);
		err = kcore_view_prefetch(v, NULL);
		ok(!err && kcore_view_frames_decoded(v) == decoded,
		   "the frames do not fit the cache: prefetch does nothing");
		kcore_view_destroy(v);
	}
	unlink(core);
	unlink(zst);
	rmdir(dir);
	free(want);
	free(got);
	return tap_done();
}
