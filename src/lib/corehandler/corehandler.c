// SPDX-License-Identifier: MIT
/*
 * The core_pattern handler: one pass over the ELF core stream the kernel
 * writes into our stdin, in this order.
 *
 *   restrict  keep only the capabilities the next steps need
 *   /proc     before a byte of the stream: the crashing process's
 *             directory, if it is the one dumping, and what
 *             systemd-coredump records of it (cmdline, cwd, cgroup,
 *             limits, open fds, namespaces, environ if asked) through it
 *   slot      one of the store's handler slots, or store nothing
 *   headers   ELF header, program headers, then everything up to the first
 *             PT_LOAD's data (the notes), read into memory with bounds
 *   tables    the process's page tables (pagemap) and mapped files
 *             (map_files, O_PATH), then the pipe grows to 1 MiB
 *   helper    the build-ID helper starts and drops everything itself
 *   drop      no capability left, no new privileges
 *   data      1 MiB blocks at stream offsets k MiB; all-zero pages (what
 *             dump_skip() writes on a pipe) are skipped, the rest written
 *             at their stream offset (sparse ELF) or into the .zst stream,
 *             within what the store's limits reserved for us
 *   end       the file is cut to the stream's length; if a limit stopped
 *             the copy, the program headers are rewritten so that nothing
 *             points past the end
 *   build IDs the helper reads the unpublished core (or, for a .zst, the
 *             headers and first page of every PT_LOAD arranged as a small
 *             core) within its own time limit
 *             and unwinds its threads (the backtrace)
 *   packages  the FDO package note in each module's first page
 *   publish   under the store lock: the limits once more, the metadata,
 *             then the core (never visible without its metadata)
 *   journal   the entry systemd-coredump would log, for the caller
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "corehandler-internal.h"
#include "corehandler-vacuum.h"

static void close_input(struct ch *ch)
{
	if (ch->o->close_input && !ch->input_closed) {
		/* The kernel ends the dump (and the process) right away. */
		close(ch->o->in_fd);
		ch->input_closed = true;
	}
}

/*
 * The first look at the crashing process's page tables, right after the
 * headers: stream bytes it finds empty need not be read when they come.
 */
static struct kcore_error *find_holes(struct ch *ch)
{
	const struct kcore_ch_opts *o = ch->o;
	struct kcore_error *err;
	struct ch_load *loads;
	struct stat sb;
	long queued;
	int n;

	if (ch->framed) {
		ch_drop_holes(ch, "the kernel sends the holes as records "
				  "(COREDUMP_HOLES)");
		return NULL;
	}
	if (o->no_pagemap) {
		ch_drop_holes(ch, "--no-pagemap");
		return NULL;
	}
	if (fstat(o->in_fd, &sb) < 0 ||
	    !(S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode))) {
		ch_drop_holes(ch, "the core stream is neither a pipe nor a "
				  "socket");
		return NULL;
	}
	if (!ch->proc_ok) {
		/* Its directory was not opened while it dumped. */
		ch_drop_holes(ch, "%s",
			      ch->proc_why[0]
				      ? ch->proc_why
				      : "the process was not looked at");
		return NULL;
	}
	loads = calloc(ch->norder ? ch->norder : 1, sizeof(*loads));
	if (!loads)
		return &kcore_error_nomem;
	for (size_t i = 0; i < ch->norder; i++) {
		const struct ch_phdr *p = &ch->ph[ch->order[i]];

		loads[i] = (struct ch_load){ p->offset, p->vaddr, p->filesz,
					     p->memsz };
	}
	err = ch_holes_create(o->procfs, ch->proc_fd, o->crash.pid, loads,
			      ch->norder, CH_BLOCK, &ch->holes,
			      &ch->res->pagemap_why);
	free(loads);
	if (err || !ch->holes)
		return err;
	if (S_ISSOCK(sb.st_mode)) {
		/* The coredump socket (the kernel writes its zeros as on a
		 * pipe): splice(2) moves them, page references and no
		 * copy, from the socket into a pipe of ours and on to
		 * /dev/null. */
		ch->in_sock = true;
		if (pipe2(ch->drain_pipe, O_CLOEXEC) < 0) {
			ch_drop_holes(ch, "cannot make a pipe: %s",
				      strerror(errno));
			return NULL;
		}
		fcntl(ch->drain_pipe[0], F_SETPIPE_SZ, (int)CH_BLOCK);
		n = fcntl(ch->drain_pipe[0], F_GETPIPE_SZ);
	} else {
		n = fcntl(o->in_fd, F_GETPIPE_SZ);
	}
	ch->pipe_size = n > 0 ? (size_t)n : 65536;
	ch->null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (ch->null_fd < 0) {
		ch_drop_holes(ch, "cannot open /dev/null: %s", strerror(errno));
		return NULL;
	}
	/*
	 * What the kernel wrote before the look ended, and the page it may
	 * be writing now, it decided about before: those bytes are read.
	 * (Holes it decided about but has not written yet are zeros.)
	 */
	queued = ch_pipe_bytes(ch);
	if (queued < 0) {
		ch_drop_holes(ch, "FIONREAD on the stream failed: %s",
			      strerror(errno));
		return NULL;
	}
	ch_holes_set_guard(ch->holes,
			   (ch->res->stream_bytes + (uint64_t)queued + CH_PAGE -
			    1) / CH_PAGE * CH_PAGE +
				   CH_PAGE);
	return NULL;
}

/* The core file as readers will see it: cut headers, sparse tail. */
static struct kcore_error *finish_file(struct ch *ch, uint64_t size)
{
	struct kcore_ch_result *ret = ch->res;
	struct kcore_error *err = NULL;

	if (!ch->os) {
		if (ch->cut != UINT64_MAX)
			err = kcore_pwrite_all(NULL, ch->out->fd, ch->out->tmp,
					       ch->prefix, ch->prefix_len, 0);
		if (!err && ch->xnum && size > ch->cut &&
		    ch->cut != UINT64_MAX) {
			unsigned char sh[sizeof(Elf64_Shdr)];
			size_t n = ch_xnum_shdr(ch, sh);

			err = kcore_pwrite_all(NULL, ch->out->fd, ch->out->tmp,
					       sh, n, size - n);
		}
		if (!err && ftruncate(ch->out->fd, (off_t)size) < 0)
			err = kcore_error_create(KCORE_ERR_OS, errno,
						 ch->out->tmp,
						 "cannot set the file size");
		return err;
	}
	{
		uint64_t end = ch->cut != UINT64_MAX ? ch->cut : size;

		if (end > ch->zpos)
			err = kcore_ostream_write_zeros(ch->os, end - ch->zpos);
		if (!err && size > end) {
			/* PN_XNUM: padding, then section 0. */
			unsigned char sh[8 + sizeof(Elf64_Shdr)] = { 0 };
			size_t shsize = ch->is64 ? sizeof(Elf64_Shdr)
						 : sizeof(Elf32_Shdr);

			ch_xnum_shdr(ch, sh + (size - end) - shsize);
			err = kcore_ostream_write(ch->os, sh, size - end);
		}
		if (!err)
			err = kcore_ostream_finish(ch->os);
		if (!err && ch->cut != UINT64_MAX)
			err = kcore_ostream_rewrite_stored(
				ch->os, ch->stored_header_off, ch->prefix,
				ch->prefix_len);
		if (!err)
			ret->file_size = kcore_ostream_bytes_out(ch->os);
	}
	return err;
}

static void build_ids(struct ch *ch)
{
	unsigned char *img = NULL;
	size_t len = 0;

	if (ch->os) {
		img = ch_store_first_pages_core(ch, &len);
		if (!img) {
			ch->ids.error = strdup("out of memory");
			ch->ids.from = "first pages";
			return;
		}
	}
	ch_priv_build_ids(ch, ch->out->fd, img, len);
	free(img);
	if (ch->os) {
		ch->ids.incomplete = ch->cap_full;
		ch_buildid_add_first_pages(ch);
	}
}

struct kcore_error *kcore_core_handle(const struct kcore_ch_opts *opts,
				      struct kcore_ch_result *ret)
{
	struct ch ch = {
		.o = opts,
		.res = ret,
		.in_name = "<core stream>",
		.null_fd = -1,
		.drain_pipe = { -1, -1 },
		.subdir_fd = -1,
		.proc_fd = -1,
		.framed = opts->via == KCORE_CH_VIA_SOCKET_REQUEST &&
			  opts->peer && (opts->peer->ack_mask & CH_REQ_HOLES),
		.facts = { .owner_uid = -1 },
		.store = { .lock_fd = -1, .slot = -1, .slot_fd = -1 },
	};
	uint64_t t0 = opts->start_ns ? opts->start_ns : ch_mono_ns();
	const char *comm = opts->crash.comm ? opts->crash.comm : "?";
	uint64_t size;
	struct kcore_error *err;
	const char *why;
	char *meta = NULL;
	size_t meta_len = 0;
	struct stat sb;

	memset(ret, 0, sizeof(*ret));
	ch.cut = UINT64_MAX;
	if (opts->timeout_ms)
		ch.deadline_ns = t0 + opts->timeout_ms * 1000000u;
	if (opts->compress >= KCORE_COMPRESS_NUM)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "unknown compression");
	err = opts->keep_privileges ? NULL : ch_priv_restrict(&ch);
	if (err)
		goto out;
	/* The process first, before a byte of the stream is read (see
	 * ch_facts_dumping()). */
	ch.proc_ok = ch_facts_dumping(&ch);
	ch_place_facts(&ch);
	ch_facts_gather(&ch);
	if (!ch_vacuum_enter(&ch, &why)) {
		/* The kernel waits on us: say why, take nothing. */
		ch_log(&ch, KCORE_CH_LOG_WARNING,
		       "not storing the core of pid %" PRId64 " (%s): %s "
		       "(at most %u handlers store at once)",
		       opts->crash.pid, comm, why,
		       opts->max_handlers ? opts->max_handlers : 16);
		ret->not_stored = true;
		goto out;
	}
	err = ch_read_headers(&ch);
	if (err)
		goto out;
	ch_parse_notes(&ch);
	ch.signal =
		opts->crash.signal > 0 ? opts->crash.signal : ch.note_signal;
	if (!opts->crash.comm || !*opts->crash.comm)
		comm = ch.fname ? ch.fname : "?";
	if (opts->verbose)
		ch_log(&ch, KCORE_CH_LOG_DEBUG,
		       "core of pid %" PRId64 " (%s) via %s: %zu header and "
		       "note bytes, %zu program headers, %" PRIu64
		       " stream bytes announced",
		       opts->crash.pid, comm, kcore_ch_via_name(opts->via),
		       ch.prefix_len, ch.phnum, ch.expected);
	ret->expected_bytes = ch.expected;
	/* While the pipe keeps its size the kernel is at most that far
	 * ahead of us, so a core larger than that keeps the process (and
	 * its page tables, its mapped files) until the look is done. */
	err = find_holes(&ch);
	if (err)
		goto out;
	ch_priv_open_maps(&ch);
	/* Fewer wake-ups per MiB; root may exceed pipe-max-size.  The
	 * holes are drained in parts of the pipe's new size. */
	if (fcntl(opts->in_fd, F_SETPIPE_SZ, (int)CH_BLOCK) > 0 && ch.holes) {
		int n = fcntl(opts->in_fd, F_GETPIPE_SZ);

		if (n > 0)
			ch.pipe_size = (size_t)n;
	}
	if (opts->verbose)
		ch_log(&ch, KCORE_CH_LOG_DEBUG,
		       "pid %" PRId64 " %s%s; page tables %s%s%s",
		       opts->crash.pid,
		       ch.proc_ok ? "is the dumping process in /proc"
				  : "is not looked at in /proc: ",
		       ch.proc_ok ? "" : ch.proc_why,
		       ch.holes ? "used" : "not used",
		       ret->pagemap_why ? ": " : "",
		       ret->pagemap_why ? ret->pagemap_why : "");
	ch_priv_start_helper(&ch);
	err = opts->keep_privileges ? NULL : ch_priv_drop(&ch);
	if (err)
		goto out;
	ch_priv_decide_access(&ch);
	err = ch_store_open(&ch);
	if (err)
		goto out;
	ch_store_plan_stacks(&ch);
	/* The headers and notes are always stored: without them the rest
	 * means nothing.  A .zst keeps them in a frame we can rewrite, with
	 * room for what a cut changes (ch_cut_headers(): program headers
	 * that point to the cut, our note of a few hundred bytes). */
	if (ch.os) {
		err = kcore_ostream_write_stored(ch.os, ch.prefix,
						 ch.prefix_len, CH_HEADER_ROOM,
						 &ch.stored_header_off);
		ch.zpos = ch.prefix_len;
	} else {
		err = kcore_pwrite_all(NULL, ch.out->fd, ch.out->tmp, ch.prefix,
				       ch.prefix_len, 0);
		ch.stored += ch.prefix_len;
	}
	if (!err)
		err = ch_store_copy(&ch);
	close_input(&ch);
	ret->stream_elapsed = (double)(ch_mono_ns() - t0) / 1e9;
	if (err)
		goto out;
	if (ch.cut == UINT64_MAX && ret->stream_bytes < ch.expected)
		ch_store_set_cut(&ch, ret->stream_bytes, KCORE_CH_SHORT);
	size = ret->stream_bytes;
	if (ch.cut != UINT64_MAX) {
		ret->cut_offset = ch.cut;
		ch_cut_headers(&ch, &size);
		ch_log(&ch, KCORE_CH_LOG_WARNING,
		       "core of pid %" PRId64 " (%s) truncated at offset "
		       "0x%" PRIx64 " of 0x%" PRIx64 " (%s): %u segments cut",
		       opts->crash.pid, comm, ch.cut, ch.expected,
		       kcore_ch_reason_name(ret->reason), ret->segments_cut);
	}
	ret->file_size = size;
	err = ch_store_finish_digest(
		&ch, ch.cut != UINT64_MAX ? ch.cut : ret->stream_bytes);
	if (!err)
		err = finish_file(&ch, size);
	if (!err && opts->sync && fsync(ch.out->fd) < 0)
		err = kcore_error_create(KCORE_ERR_OS, errno, ch.out->tmp,
					 "fsync failed");
	if (err)
		goto out;
	if (fstat(ch.out->fd, &sb) == 0)
		ret->allocated_bytes = (uint64_t)sb.st_blocks * 512;
	build_ids(&ch);
	ch_buildid_packages(&ch);
	ret->user_access = ch.user_access;
	ret->elapsed = (double)(ch_mono_ns() - t0) / 1e9;
	err = ch_meta_build(&ch, &meta, &meta_len);
	if (!err)
		err = ch_store_publish(&ch, meta, meta_len);
	if (!err)
		ch_journal_build(&ch);
	if (!err)
		ch_log(&ch, KCORE_CH_LOG_INFO,
		       "stored the core of pid %" PRId64 " (%s, signal %d) as "
		       "'%s/%s%s%s': %" PRIu64 " stream bytes (%" PRIu64
		       " of them zeros left unread where the page tables had "
		       "nothing), %" PRIu64 " allocated%s",
		       opts->crash.pid, comm, ch.signal,
		       opts->dir ? opts->dir : ".",
		       ret->subdir ? ret->subdir : "", ret->subdir ? "/" : "",
		       ret->core_name, ret->stream_bytes, ret->unread_bytes,
		       ret->allocated_bytes,
		       ch.user_access ? ", readable by its user" : "");
out:
	free(meta);
	close_input(&ch);
	ch_facts_deinit(&ch);
	ch_packages_deinit(&ch);
	ch_priv_deinit(&ch);
	ch_store_deinit(&ch);
	ch_stream_deinit(&ch);
	return err;
}

void kcore_ch_result_deinit(struct kcore_ch_result *res)
{
	if (!res)
		return;
	free(res->core_name);
	free(res->meta_name);
	free(res->pagemap_why);
	free(res->subdir);
	for (size_t i = 0; i < res->journal_count; i++)
		free(res->journal[i]);
	free(res->journal);
	res->journal = NULL;
	res->journal_count = 0;
	res->core_name = res->meta_name = res->pagemap_why = res->subdir = NULL;
}
