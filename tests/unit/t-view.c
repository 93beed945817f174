// SPDX-License-Identifier: MIT
/*
 * kcore_view_prefetch: the kernel-like test core compressed in 1 MiB zstd
 * frames and opened as a view (what kcoredump mount serves).  Prefetch
 * decodes each frame once; the reads after it decode nothing and return
 * the core's bytes.  With a cache too small for the frames it does
 * nothing, and a stop flag already set stops it before the first frame.
 * With a callback (what the mount gives the kernel's page cache) it is
 * given exactly the pages that are not all zeros, once each, whole, with
 * their bytes (frame 0, which opening decoded, too), and the frame cache
 * is left as it was; also when the frames start at no page boundary of
 * the file (a zero run ended a frame at an odd offset) and the file ends
 * inside a page.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kcoredump/stream.h"
#include "kcoredump/view.h"
#include "kernelcore.h"
#include "tap.h"

struct published {
	const unsigned char *want;
	size_t len;
	unsigned char *seen; /* per page: times given */
	bool wrong;	     /* bytes differ, or a run not of whole pages */
};

static void take(void *arg, uint64_t offset, const void *data, size_t len)
{
	struct published *p = arg;

	if (offset % 4096 || offset + len > p->len || !len ||
	    (len % 4096 && offset + len != p->len) ||
	    memcmp(p->want + offset, data, len)) {
		p->wrong = true;
		return;
	}
	for (uint64_t o = offset; o < offset + len; o += 4096)
		p->seen[o / 4096]++;
}

/* out: a .zst of 1 MiB frames holding head_len bytes of head, then zeros
 * zero bytes written as a zero run (as the dump writer writes holes),
 * then tail_len bytes of tail. */
static void write_zst(const char *out, const unsigned char *head,
		      size_t head_len, uint64_t zeros,
		      const unsigned char *tail, size_t tail_len)
{
	struct kcore_ostream_opts o = { .method = KCORE_COMPRESS_ZSTD,
					.threads = 1,
					.frame_size = 1u << 20 };
	struct kcore_ostream *os = NULL;
	struct kcore_error *err = NULL;
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0)
		tap_skip_all("cannot create the .zst");
	err = kcore_ostream_create(fd, out, &o, &os);
	if (!err)
		err = kcore_ostream_write(os, head, head_len);
	if (!err && zeros)
		err = kcore_ostream_write_zeros(os, zeros);
	if (!err && tail_len)
		err = kcore_ostream_write(os, tail, tail_len);
	if (!err)
		err = kcore_ostream_finish(os);
	if (err)
		tap_skip_all("cannot compress the test core");
	kcore_ostream_destroy(os);
	close(fd);
}

/* The test core as it is, in 1 MiB frames from byte 0. */
static void compress(const char *in, const char *out)
{
	size_t len = DATA_OFF + SEG_SIZE;
	unsigned char *buf = malloc(len);
	int fd = open(in, O_RDONLY);

	if (!buf || fd < 0 || read(fd, buf, len) != (ssize_t)len)
		tap_skip_all("cannot read the test core");
	close(fd);
	write_zst(out, buf, len, 0, NULL, 0);
	free(buf);
}

/* Prefetch with take() on the view of zst, whose bytes are want[0, len):
 * every page of the file with a byte that is not zero given once, whole
 * (the last one short), with its bytes; no page of zeros given. */
static void check_published(const char *zst, const unsigned char *want,
			    size_t len, const char *what)
{
	size_t pages = (len + 4095) / 4096, bad = 0, data = 0;
	struct published pub = { .want = want,
				 .len = len,
				 .seen = calloc(pages, 1) };
	struct kcore_view *v = NULL;
	struct kcore_error *err = kcore_view_open(zst, NULL, &v);
	uint64_t decoded;

	if (!pub.seen)
		tap_skip_all("out of memory");
	ok(!err, "%s: opens as a view", what);
	if (err) {
		kcore_error_destroy(err);
		free(pub.seen);
		return;
	}
	decoded = kcore_view_frames_decoded(v);
	err = kcore_view_prefetch(v, NULL, take, &pub);
	for (size_t i = 0; i < pages; i++) {
		size_t n = len - i * 4096 < 4096 ? len - i * 4096 : 4096;
		bool zero = true;

		for (size_t k = 0; k < n && zero; k++)
			zero = !want[i * 4096 + k];
		data += !zero;
		bad += pub.seen[i] != (zero ? 0 : 1);
	}
	ok(!err && !pub.wrong && !bad && data > 0,
	   "%s: with a callback, each of the %zu pages with data given once, "
	   "whole, with its bytes, no page of zeros (%zu wrong)",
	   what, data, bad);
	ok(kcore_view_frames_decoded(v) == decoded,
	   "%s: and none of its frames kept in the frame cache", what);
	kcore_view_destroy(v);
	free(pub.seen);
}

/*
 * The test core with GAP zero bytes between its headers and its segment
 * (p_offset moved), compressed the way the dump writer feeds the stream:
 * the header's zeros from byte HEAD on and the gap as one zero run, which
 * ends a frame at HEAD; the data frames then start at DATA_OFF + GAP and
 * the file ends at no page boundary.  Returns the image (*len bytes).
 */
#define HEAD 0x1064u
#define GAP  ((1u << 20) + 100)
static unsigned char *compress_shifted(const char *core, const char *out,
				       size_t *len)
{
	size_t n = DATA_OFF + GAP + SEG_SIZE;
	unsigned char *img = calloc(1, n);
	int fd = open(core, O_RDONLY);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Phdr *ph;

	if (!img || fd < 0 || read(fd, img, DATA_OFF) != (ssize_t)DATA_OFF ||
	    read(fd, img + DATA_OFF + GAP, SEG_SIZE) != (ssize_t)SEG_SIZE)
		tap_skip_all("cannot read the test core");
	close(fd);
	ph = (Elf64_Phdr *)(img + eh->e_phoff);
	for (unsigned i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD)
			ph[i].p_offset += GAP;
	for (size_t i = HEAD; i < DATA_OFF; i++)
		if (img[i])
			tap_skip_all("the test core's header is longer");
	write_zst(out, img, HEAD, DATA_OFF + GAP - HEAD, img + DATA_OFF + GAP,
		  SEG_SIZE);
	*len = n;
	return img;
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
	err = kcore_view_prefetch(v, &stop, NULL, NULL);
	ok(!err && kcore_view_frames_decoded(v) == decoded,
	   "a stop flag already set: no frame decoded");
	err = kcore_view_prefetch(v, NULL, NULL, NULL);
	decoded = kcore_view_frames_decoded(v);
	ok(!err && decoded >= 8 && decoded <= 10,
	   "prefetch decodes each frame once (%llu frames)",
	   (unsigned long long)decoded);
	err = kcore_view_pread(v, got, len, 0, &done);
	ok(!err && done == len && !memcmp(got, want, len) &&
		   kcore_view_frames_decoded(v) == decoded,
	   "then every byte reads back from the cache, nothing decoded");
	kcore_view_destroy(v);

	check_published(zst, want, len, "1 MiB frames");
	{
		char shifted[256];
		size_t slen;
		unsigned char *img;

		snprintf(shifted, sizeof(shifted), "%s/shifted.zst", dir);
		img = compress_shifted(core, shifted, &slen);
		check_published(shifted, img, slen,
				"frames at no page boundary");
		free(img);
		unlink(shifted);
	}

	err = kcore_view_open(zst, &small, &v);
	ok(!err, "opened again with a 1 MiB cache");
	if (!err) {
		decoded = kcore_view_frames_decoded(v);
		err = kcore_view_prefetch(v, NULL, NULL, NULL);
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
