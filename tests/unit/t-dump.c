// SPDX-License-Identifier: MIT
/*
 * The dump pipeline under faults injected through the I/O seam: EIO and
 * short reads on the source, ENOSPC on the output, and a cancel (SIGINT)
 * mid-dump.  Failures must leave no output and no temporary file; read
 * errors must be zero-filled, counted and reported, and the dump go on.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kcoredump/kcore.h"
#include "kcoredump/dump.h"
#include "kcoredump/verify.h"
#include "pattern.h"
#include "elfcore.h"
#include "tap.h"
#include "faultio.h"

#define DATA_OFF 0x1000ull
#define SEG_SIZE (8ull << 20)
#define VADDR	 0x7f0000000000ull

/* A process-like core: one PT_NOTE (empty) and one 8 MiB PT_LOAD of
 * pattern data. */
static void make_core(const char *path)
{
	static unsigned char hdr[DATA_OFF];
	Elf64_Phdr *ph = kc_elfcore_header(hdr, 2);
	unsigned char *buf = malloc(SEG_SIZE);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_flags = PF_R | PF_W,
			      .p_offset = DATA_OFF,
			      .p_vaddr = VADDR,
			      .p_filesz = SEG_SIZE,
			      .p_memsz = SEG_SIZE,
			      .p_align = 4096 };
	kc_pattern_fill(buf, VADDR, SEG_SIZE, 5);
	if (fd < 0 || write(fd, hdr, sizeof(hdr)) != sizeof(hdr) ||
	    write(fd, buf, SEG_SIZE) != (ssize_t)SEG_SIZE)
		tap_skip_all("cannot write the test core");
	close(fd);
	free(buf);
}

static unsigned leftovers(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;

	while (d && (e = readdir(d)))
		if (e->d_name[0] == '.' && strcmp(e->d_name, ".") &&
		    strcmp(e->d_name, ".."))
			n++;
	if (d)
		closedir(d);
	return n;
}

static volatile sig_atomic_t cancel_flag, cancel_at_start;
static unsigned progress_calls;
static struct kcore_dump_stats last_progress;

static void count_progress(void *arg, const struct kcore_dump_stats *st)
{
	progress_calls++;
	last_progress = *st;
}

static void cancel_on_progress(void *arg, const struct kcore_dump_stats *st)
{
	if (st->bytes_done > 0)
		cancel_flag = 1;
}

static struct kcore_error *run(const char *core, const char *out,
			       struct kc_fault *f, enum kcore_compress c,
			       bool cancel, struct kcore_dump_result *res)
{
	struct kcore_io_ops ops = kc_fault_ops(f);
	struct kcore_open_opts oo = { .io = &ops };
	struct kcore_selection sel = { 0 };
	struct kcore_dump_opts opts = { .output = out,
					.compress = c,
					.threads = 2,
					.block_size = 1u << 20,
					.out_io = &ops,
					.cancel = &cancel_flag };
	struct kcore_source *src;
	struct kcore_plan *plan;
	struct kcore_error *err;

	cancel_flag = cancel_at_start;
	progress_calls = 0;
	opts.progress = cancel ? cancel_on_progress : count_progress;
	err = kcore_source_open(core, &oo, &src);
	if (err)
		return err;
	err = kcore_plan_create(src, &sel, &plan);
	if (!err) {
		err = kcore_dump(src, plan, &opts, res);
		kcore_plan_destroy(plan);
	}
	kcore_source_destroy(src);
	return err;
}

int main(void)
{
	char dir[] = "/tmp/t-dump-XXXXXX", core[256], out[256];
	struct kcore_dump_result res;
	struct kcore_verify_result vr;
	struct kcore_error *err;
	struct kc_fault f;
	unsigned char buf[4096];

	if (!mkdtemp(dir))
		tap_skip_all("no temp dir");
	snprintf(core, sizeof(core), "%s/core", dir);
	snprintf(out, sizeof(out), "%s/out.elf", dir);
	make_core(core);

	/* Short reads everywhere: the same dump. */
	f = (struct kc_fault){ .eio_from = UINT64_MAX,
			       .eio_to = UINT64_MAX,
			       .short_chunk = 777 };
	err = run(core, out, &f, KCORE_COMPRESS_NONE, false, &res);
	ok(!err && res.nerrors == 0, "short reads are retried");
	ok(progress_calls >= 2 && last_progress.bytes_done == SEG_SIZE &&
		   last_progress.bytes_written == res.stats.bytes_written,
	   "progress is reported, last with the final numbers");
	kcore_dump_result_deinit(&res);
	err = kcore_verify(out, core, -1, NULL, &vr);
	ok(!err && vr.match && vr.compared && vr.differ_bytes == 0,
	   "the dump equals the source and its digests");
	kcore_verify_result_deinit(&vr);
	unlink(out);

	/* A compressed stream, with progress to the end. */
	f = (struct kc_fault){ .eio_from = UINT64_MAX, .eio_to = UINT64_MAX };
	snprintf(out, sizeof(out), "%s/out.elf.zst", dir);
	err = run(core, out, &f, KCORE_COMPRESS_ZSTD, false, &res);
	ok(!err && progress_calls >= 2 &&
		   last_progress.bytes_written == res.stats.bytes_written,
	   "a .zst dump reports its final size in the last progress call");
	kcore_dump_result_deinit(&res);
	err = err ? err : kcore_verify(out, NULL, -1, NULL, &vr);
	ok(!err && vr.match, "the .zst dump verifies");
	if (!err)
		kcore_verify_result_deinit(&vr);
	kcore_error_destroy(err);
	unlink(out);
	snprintf(out, sizeof(out), "%s/out.elf", dir);

	/* EIO on 3 pages in the middle: zero-filled, counted, reported. */
	f = (struct kc_fault){ .eio_from = DATA_OFF + 0x201000,
			       .eio_to = DATA_OFF + 0x204000 };
	err = run(core, out, &f, KCORE_COMPRESS_NONE, false, &res);
	ok(!err, "EIO does not stop the dump");
	ok(res.stats.bytes_unreadable == 0x3000,
	   "the unreadable bytes are counted (%llu)",
	   (unsigned long long)res.stats.bytes_unreadable);
	ok(res.nerrors == 1 && res.errors[0].offset == DATA_OFF + 0x201000 &&
		   res.errors[0].len == 0x3000 && res.errors[0].errnum == EIO,
	   "one error range at the failing offset");
	kcore_dump_result_deinit(&res);
	{
		struct kcore_source *d;

		err = kcore_source_open(out, NULL, &d);
		ok(!err, "the dump opens");
		err = err ? err
			  : kcore_source_read_vaddr(d, VADDR + 0x202000, buf,
						    sizeof(buf));
		ok(!err && kcore_is_zero(buf, sizeof(buf)),
		   "an unreadable page reads as zeros in the dump");
		err = err ? err
			  : kcore_source_read_vaddr(d, VADDR + 0x204000, buf,
						    sizeof(buf));
		ok(!err && kc_pattern_check(buf, VADDR + 0x204000, sizeof(buf),
					    5) == sizeof(buf),
		   "the page after them is intact");
		kcore_error_destroy(err);
		kcore_source_destroy(d);
	}
	unlink(out);

	/* ENOSPC on the output: an error, and nothing left behind. */
	for (int c = 0; c < 2; c++) {
		f = (struct kc_fault){ .eio_from = UINT64_MAX,
				       .eio_to = UINT64_MAX,
				       .enospc_after = 3u << 20 };
		snprintf(out, sizeof(out), "%s/out.elf%s", dir,
			 c ? ".zst" : "");
		err = run(core, out, &f,
			  c ? KCORE_COMPRESS_ZSTD : KCORE_COMPRESS_NONE, false,
			  &res);
		if (c) /* zstd compresses 8 MiB of pattern to ~8 MiB */
			ok(err && err->errnum == ENOSPC,
			   "ENOSPC on a .zst output is an error");
		else
			ok(err && err->errnum == ENOSPC,
			   "ENOSPC on an .elf output is an error");
		ok(access(out, F_OK) != 0 && leftovers(dir) == 0,
		   "no output and no temporary file remain");
		kcore_error_destroy(err);
	}

	/* Cancel (what SIGINT does) mid-dump. */
	f = (struct kc_fault){ .eio_from = UINT64_MAX, .eio_to = UINT64_MAX };
	snprintf(out, sizeof(out), "%s/out.elf", dir);
	err = run(core, out, &f, KCORE_COMPRESS_NONE, true, &res);
	ok(err && err->code == KCORE_ERR_INTERRUPTED,
	   "a cancel stops the dump with an interrupted error");
	ok(access(out, F_OK) != 0 && leftovers(dir) == 0,
	   "no output and no temporary file remain");
	kcore_error_destroy(err);

	/* Cancel during a dump of holes only (issue 27 item 4: a plan of
	 * holes never looked at the flag, then published and exited 0). */
	{
		char holes[256];
		int hfd;

		snprintf(holes, sizeof(holes), "%s/holes", dir);
		hfd = open(holes, O_RDWR | O_CREAT | O_TRUNC, 0600);
		{
			static unsigned char hdr[DATA_OFF];
			Elf64_Phdr *ph = kc_elfcore_header(hdr, 2);

			ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD,
					      .p_flags = PF_R,
					      .p_offset = DATA_OFF,
					      .p_vaddr = VADDR,
					      .p_filesz = SEG_SIZE,
					      .p_memsz = SEG_SIZE,
					      .p_align = 4096 };
			if (hfd < 0 ||
			    write(hfd, hdr, sizeof(hdr)) != sizeof(hdr) ||
			    ftruncate(hfd, DATA_OFF + SEG_SIZE) != 0)
				tap_skip_all("cannot write the sparse core");
			close(hfd);
		}
		cancel_at_start = 1;
		err = run(holes, out, &f, KCORE_COMPRESS_NONE, false, &res);
		cancel_at_start = 0;
		ok(err && err->code == KCORE_ERR_INTERRUPTED,
		   "a cancel stops a dump of holes only");
		ok(access(out, F_OK) != 0 && leftovers(dir) == 0,
		   "and publishes nothing");
		if (!err)
			kcore_dump_result_deinit(&res);
		kcore_error_destroy(err);
		unlink(out);
		unlink(holes);
	}

	/* An existing output is not replaced without force. */
	int fd = open(out, O_WRONLY | O_CREAT, 0644);
	close(fd);
	err = run(core, out, &f, KCORE_COMPRESS_NONE, false, &res);
	ok(err && err->code == KCORE_ERR_EXISTS, "an existing file is kept");
	kcore_error_destroy(err);
	unlink(out);

	unlink(core);
	rmdir(dir);
	return tap_done();
}
