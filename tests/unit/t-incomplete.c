// SPDX-License-Identifier: MIT
/*
 * Complete or say so: a kernel-like core (VMCOREINFO, one 8 MiB direct-map
 * RAM segment of pattern data, one zero page) dumped in every format while
 * reads of 3 of its pages fail with EIO (tests/common/faultio.h).  Each
 * dump goes on and its result lists the range (segment and offset) and
 * says the dump is incomplete; the unreadable bytes are not counted again
 * as zero pages; and every format records it where it has room: our note
 * (ELF in a file, compressed or on a pipe; kdump, also flattened), an
 * ELF's e_flags DUMP_ELF_INCOMPLETE (not on a pipe) and a kdump header's
 * incomplete status, as makedumpfile writes and crash reads them.  The
 * dumps open as sources that say so, verify reports it with matching
 * digests, and a dump converted from an incomplete one is incomplete too.
 * LiME and AVML have no room for it: only the result says it.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kcoredump/dump.h"
#include "kcoredump/kcore.h"
#include "kcoredump/source.h"
#include "kcoredump/verify.h"
#include "elfcore.h"
#include "faultio.h"
#include "pattern.h"
#include "kernelcore.h"
#include "tap.h"

/* Drains a pipe into a file while a dump writes to it. */
struct drain {
	int in, out;
};

static void *drain(void *arg)
{
	struct drain *d = arg;
	char buf[65536];
	ssize_t n;

	while ((n = read(d->in, buf, sizeof(buf))) > 0)
		if (write(d->out, buf, (size_t)n) != n)
			break;
	return NULL;
}

/* Dump core (or any source) to out in format f with compression c, with
 * EIO on the bad pages when fault; out "-" goes through a pipe into pipe
 * (a file). */
static struct kcore_error *run(const char *core, const char *out,
			       const char *pipe_file, enum kcore_format fmt,
			       enum kcore_compress c, bool fault,
			       struct kcore_dump_result *res)
{
	struct kc_fault f = { .eio_from = UINT64_MAX, .eio_to = UINT64_MAX };
	struct kcore_io_ops ops;
	struct kcore_open_opts oo = { .io = &ops };
	struct kcore_selection sel = { 0 };
	struct kcore_dump_opts opts = { .output = out,
					.format = fmt,
					.compress = c,
					.threads = 2,
					.block_size = 1u << 20 };
	struct kcore_source *src;
	struct kcore_plan *plan;
	struct kcore_error *err;
	int fds[2] = { -1, -1 }, saved = -1;
	pthread_t thread;
	struct drain dr;

	if (fault)
		f = (struct kc_fault){ .eio_from = DATA_OFF + BAD_OFFSET,
				       .eio_to = DATA_OFF + BAD_OFFSET +
						 BAD_LEN };
	ops = kc_fault_ops(&f);
	err = kcore_source_open(core, &oo, &src);
	if (err)
		return err;
	err = kcore_plan_create(src, &sel, &plan);
	if (err) {
		kcore_source_destroy(src);
		return err;
	}
	if (pipe_file) {
		/* "-" is standard output: a pipe there for the dump. */
		fflush(stdout);
		dr.out = open(pipe_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (pipe(fds) || dr.out < 0)
			tap_skip_all("no pipe");
		dr.in = fds[0];
		saved = dup(STDOUT_FILENO);
		dup2(fds[1], STDOUT_FILENO);
		close(fds[1]);
		pthread_create(&thread, NULL, drain, &dr);
	}
	err = kcore_dump(src, plan, &opts, res);
	if (pipe_file) {
		dup2(saved, STDOUT_FILENO); /* closes the pipe's end */
		close(saved);
		pthread_join(thread, NULL);
		close(fds[0]);
		close(dr.out);
	}
	kcore_plan_destroy(plan);
	kcore_source_destroy(src);
	return err;
}

/* The result of a dump with the 3 bad pages. */
static void check_result(const char *what, struct kcore_error *err,
			 struct kcore_dump_result *res)
{
	ok(!err, "%s: EIO does not stop the dump", what);
	if (err) {
		fprintf(stderr, "# %s\n", err->message);
		kcore_error_destroy(err);
		memset(res, 0, sizeof(*res));
		return;
	}
	ok(kcore_dump_incomplete(res) && res->stats.bytes_unreadable == BAD_LEN,
	   "%s: the result says incomplete, 0x%llx bytes unreadable", what,
	   (unsigned long long)res->stats.bytes_unreadable);
	ok(res->nerrors == 1 && res->errors[0].segment == 0 &&
		   res->errors[0].seg_offset == BAD_OFFSET &&
		   res->errors[0].len == BAD_LEN &&
		   res->errors[0].offset == DATA_OFF + BAD_OFFSET,
	   "%s: one range, segment 0 at 0x%llx", what,
	   res->nerrors ? (unsigned long long)res->errors[0].seg_offset : 0);
	ok(res->stats.bytes_zero == PAGE,
	   "%s: the one zero page counted as zero, the unreadable ones not "
	   "(%llu bytes)",
	   what, (unsigned long long)res->stats.bytes_zero);
}

/* What a reader sees of the dump: info and verify. */
static void check_file(const char *what, const char *path, bool note,
		       bool marked)
{
	struct kcore_source *s = NULL;
	struct kcore_verify_result vr;
	struct kcore_error *err = kcore_source_open(path, NULL, &s);
	const struct kcore_source_info *in;

	ok(!err, "%s: opens", what);
	if (err) {
		fprintf(stderr, "# %s\n", err->message);
		kcore_error_destroy(err);
		return;
	}
	in = kcore_source_info(s);
	if (note)
		ok(in->incomplete && in->unreadable_bytes == BAD_LEN &&
			   in->unreadable_ranges == 1 &&
			   !strcmp(in->incomplete_origin, "note"),
		   "%s: info: incomplete, 0x%llx bytes in %llu ranges (%s)",
		   what, (unsigned long long)in->unreadable_bytes,
		   (unsigned long long)in->unreadable_ranges,
		   in->incomplete_origin ? in->incomplete_origin : "-");
	if (marked && in->e_type == ET_CORE && !in->format_detail)
		ok(in->e_flags & 0x1, "%s: e_flags has DUMP_ELF_INCOMPLETE",
		   what);
	if (marked && in->format_detail)
		ok(strstr(in->format_detail, "marked incomplete") != NULL,
		   "%s: the kdump header's status is incomplete (%s)", what,
		   in->format_detail);
	kcore_source_destroy(s);
	err = kcore_verify(path, NULL, -1, NULL, &vr);
	ok(!err && vr.match && vr.has_expected && vr.incomplete &&
		   vr.unreadable_bytes == BAD_LEN,
	   "%s: verify: the digests match, INCOMPLETE", what);
	if (err)
		kcore_error_destroy(err);
	else
		kcore_verify_result_deinit(&vr);
}

int main(void)
{
	char dir[] = "/tmp/t-incomplete-XXXXXX", core[256], out[256],
	     again[256];
	struct kcore_dump_result res;
	struct kcore_error *err;
	struct kcore_source *s;
	static const struct {
		const char *name;
		enum kcore_format fmt;
		enum kcore_compress c;
		bool pipe, note, marked;
	} cases[] = {
		{ "elf", KCORE_FORMAT_ELF, KCORE_COMPRESS_NONE, false, true,
		  true },
		{ "elf.zst", KCORE_FORMAT_ELF, KCORE_COMPRESS_ZSTD, false, true,
		  true },
		{ "elf-pipe", KCORE_FORMAT_ELF, KCORE_COMPRESS_NONE, true, true,
		  false },
		{ "kdump", KCORE_FORMAT_KDUMP, KCORE_COMPRESS_NONE, false, true,
		  true },
		{ "kdump-flat", KCORE_FORMAT_KDUMP, KCORE_COMPRESS_NONE, true,
		  true, true },
		{ "lime", KCORE_FORMAT_LIME, KCORE_COMPRESS_NONE, false, false,
		  false },
		{ "avml", KCORE_FORMAT_AVML, KCORE_COMPRESS_NONE, false, false,
		  false },
	};

	if (!mkdtemp(dir))
		tap_skip_all("no temp dir");
	snprintf(core, sizeof(core), "%s/core", dir);
	snprintf(again, sizeof(again), "%s/again.elf", dir);
	kc_kernel_core(core, false);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(out, sizeof(out), "%s/out.%s", dir, cases[i].name);
		err = run(core, cases[i].pipe ? "-" : out,
			  cases[i].pipe ? out : NULL, cases[i].fmt, cases[i].c,
			  true, &res);
		check_result(cases[i].name, err, &res);
		kcore_dump_result_deinit(&res);
		if (cases[i].note || cases[i].marked)
			check_file(cases[i].name, out, cases[i].note,
				   cases[i].marked);
		if (!cases[i].note) {
			/* No room for the mark: a reader cannot tell. */
			s = NULL;
			err = kcore_source_open(out, NULL, &s);
			ok(!err && !kcore_source_info(s)->incomplete,
			   "%s: has no room to record it (the result, exit "
			   "status and summary say it)",
			   cases[i].name);
			ok(!err && kcore_source_format_no_digests(s) &&
				   strstr(kcore_source_format_title(s),
					  "LiME") &&
				   !kcore_source_is_elf(s),
			   "%s: its reader's table says it has no place for "
			   "digests, and its title",
			   cases[i].name);
			kcore_error_destroy(err);
			kcore_source_destroy(s);
		}
		if (i == 3) {
			/* Converted, the dump of an incomplete dump is
			 * incomplete too, though all of it reads. */
			err = run(out, again, NULL, KCORE_FORMAT_ELF,
				  KCORE_COMPRESS_NONE, false, &res);
			ok(!err && res.stats.bytes_unreadable == 0 &&
				   res.source_incomplete &&
				   res.source_unreadable_bytes == BAD_LEN &&
				   kcore_dump_incomplete(&res),
			   "a dump of the incomplete kdump is incomplete");
			if (err)
				kcore_error_destroy(err);
			else
				kcore_dump_result_deinit(&res);
			s = NULL;
			err = kcore_source_open(again, NULL, &s);
			ok(!err && kcore_source_info(s)->incomplete &&
				   kcore_source_info(s)->unreadable_bytes ==
					   BAD_LEN,
			   "and says so in its note");
			kcore_error_destroy(err);
			kcore_source_destroy(s);
			unlink(again);
		}
		unlink(out);
	}
	/* A complete dump says nothing of the kind. */
	snprintf(out, sizeof(out), "%s/whole.elf", dir);
	err = run(core, out, NULL, KCORE_FORMAT_ELF, KCORE_COMPRESS_NONE, false,
		  &res);
	ok(!err && !kcore_dump_incomplete(&res) && res.nerrors == 0,
	   "without faults the dump is complete");
	if (!err)
		kcore_dump_result_deinit(&res);
	kcore_error_destroy(err);
	s = NULL;
	err = kcore_source_open(out, NULL, &s);
	ok(!err && !kcore_source_info(s)->incomplete &&
		   !(kcore_source_info(s)->e_flags & 1),
	   "and a reader sees it complete");
	kcore_error_destroy(err);
	kcore_source_destroy(s);
	unlink(out);
	unlink(core);
	rmdir(dir);
	return tap_done();
}
