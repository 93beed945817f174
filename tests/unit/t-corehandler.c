// SPDX-License-Identifier: MIT
/*
 * The core_pattern handler's library on streams built here: zero pages
 * at page granularity (one non-zero byte keeps its page), a stream whose
 * length is not a multiple of the page size, an unaligned prefix, the
 * exact byte counts, the cancel flag, and a stream written in tiny
 * pieces.  A writer thread feeds a pipe, as the kernel does.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfcore.h"
#include "kcoredump/corehandler.h"
#include "tap.h"

#define PG 4096u

struct feed {
	int fd;
	const unsigned char *buf;
	size_t len, piece;
};

static void *writer(void *arg)
{
	struct feed *f = arg;

	for (size_t off = 0; off < f->len;) {
		size_t n = f->len - off < f->piece ? f->len - off : f->piece;
		ssize_t w = write(f->fd, f->buf + off, n);

		if (w <= 0)
			break;
		off += (size_t)w;
	}
	close(f->fd);
	return NULL;
}

/* ehdr + 3 phdrs + a note; PT_LOADs at unaligned 0x1234 (3 pages + 100
 * bytes) and page-aligned after it. */
static unsigned char *make_core(size_t *ret_len)
{
	size_t len = 0x1234 + 3 * PG + 100;
	unsigned char *img = calloc(1, 0x10000 + len);
	Elf64_Phdr *ph = kc_elfcore_header(img, 3);
	size_t l2 = 0x6000;

	ph[0].p_offset = 0x200;
	ph[0].p_filesz = 0;
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_offset = 0x1234,
			      .p_vaddr = 0x400000,
			      .p_filesz = 3 * PG + 100,
			      .p_memsz = 3 * PG + 100,
			      .p_flags = PF_R };
	ph[2] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_offset = l2,
			      .p_vaddr = 0x500000,
			      .p_filesz = 4 * PG + 7,
			      .p_memsz = 4 * PG + 7,
			      .p_flags = PF_R | PF_W };
	/* Segment 1: bytes in its first (partial) page and its tail. */
	img[0x1240] = 1;
	img[0x1234 + 3 * PG + 99] = 2;
	/* Segment 2: one byte at the end of its second page, the last 7. */
	img[l2 + 2 * PG - 1] = 3;
	img[l2 + 4 * PG + 6] = 4;
	*ret_len = l2 + 4 * PG + 7;
	return img;
}

static struct kcore_error *run(const unsigned char *img, size_t len,
			       size_t piece, int dir_fd,
			       volatile sig_atomic_t *cancel,
			       struct kcore_ch_result *res)
{
	struct kcore_ch_opts o = {
		.dir_fd = dir_fd,
		.dir = "t",
		.timeout_ms = 20000,
		.close_input = true,
		.cancel = cancel,
		.crash = { .pid = 42,
			   .uid = 7,
			   .gid = 8,
			   .signal = 11,
			   .time = 1000,
			   .comm = "t" },
	};
	struct feed f = { .buf = img, .len = len, .piece = piece };
	struct kcore_error *err;
	pthread_t th;
	int p[2];

	if (pipe(p) < 0)
		return kcore_error_create(KCORE_ERR_OS, 0, NULL, "pipe");
	f.fd = p[1];
	o.in_fd = p[0];
	pthread_create(&th, NULL, writer, &f);
	err = kcore_core_handle(&o, res);
	pthread_join(th, NULL);
	return err;
}

static unsigned char *slurp(int dir_fd, const char *name, size_t *len)
{
	int fd = openat(dir_fd, name, O_RDONLY);
	struct stat st;
	unsigned char *b;

	if (fd < 0 || fstat(fd, &st) < 0)
		return NULL;
	b = malloc((size_t)st.st_size + 1);
	*len = (size_t)read(fd, b, (size_t)st.st_size);
	close(fd);
	return b;
}

int main(void)
{
	char dir[] = "/tmp/t-corehandler.XXXXXX";
	struct kcore_ch_result res;
	struct kcore_error *err;
	unsigned char *img, *got;
	size_t len, glen = 0;
	int dir_fd;
	volatile sig_atomic_t cancel = 1;

	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(dir))
		return 99;
	err = kcore_coredir_open(dir, false, &dir_fd);
	ok(!err, "coredir_open on a fresh 0700 directory");
	img = make_core(&len);

	for (size_t piece = 1 << 20; piece >= 61; piece /= 128) {
		err = run(img, len, piece, dir_fd, NULL, &res);
		ok(!err, "stream in %zu-byte writes: stored", piece);
		if (err)
			continue;
		got = slurp(dir_fd, res.core_name, &glen);
		ok(got && glen == len && memcmp(got, img, len) == 0,
		   "stream in %zu-byte writes: identical (%zu of %zu bytes)",
		   piece, glen, len);
		is_int(res.stream_bytes, len, "stream_bytes");
		is_int(res.reason, KCORE_CH_COMPLETE, "complete");
		/* Kept (stream pages): [0x1234, 0x2000) with the byte at
		 * 0x1240, [0x4000, 0x5000) with segment 1's last byte,
		 * [0x7000, 0x8000) with 0x7fff, [0xa000, 0xa007).  Zero:
		 * 0x2000-0x4000, 0x5000-0x7000, 0x8000-0xa000. */
		is_int(res.data_bytes, (0x2000 - 0x1234) + PG + PG + 7,
		       "data bytes: the non-zero pages after the headers");
		is_int(res.zero_bytes, 3 * 0x2000, "zero bytes: the rest");
		free(got);
		unlinkat(dir_fd, res.core_name, 0);
		unlinkat(dir_fd, res.meta_name, 0);
		kcore_ch_result_deinit(&res);
	}

	err = run(img, len, 4096, dir_fd, &cancel, &res);
	ok(err != NULL, "cancelled before the headers: an error");
	kcore_error_destroy(err);

	/* Not ELF, with the offset in the message. */
	memcpy(img, "NOPE", 4);
	err = run(img, len, 4096, dir_fd, NULL, &res);
	ok(err && err->code == KCORE_ERR_FORMAT && err->has_offset &&
		   err->offset == 0,
	   "not ELF: KCORE_ERR_FORMAT at offset 0");
	kcore_error_destroy(err);
	free(img);
	close(dir_fd);
	rmdir(dir);
	return tap_done();
}
