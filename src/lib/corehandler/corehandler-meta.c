// SPDX-License-Identifier: MIT
/*
 * The core handler's metadata: one JSON document beside each core, one
 * top-level member per line (coredir.c reads it back that way).  Every
 * string from the core or the kernel's arguments is untrusted: JSON-
 * escaped, invalid UTF-8 as U+FFFD.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "corehandler-internal.h"
#include "kcoredump/json.h"

static const char *format_name(enum kcore_compress c)
{
	return c == KCORE_COMPRESS_NONE ? "elf" : kcore_compress_name(c);
}

static void u64_or_null(struct kcore_json *j, const char *key, bool have,
			uint64_t v)
{
	if (have)
		kcore_json_u64(j, key, v);
	else
		kcore_json_null(j, key);
}

/* Who may read the core, and what that was decided from. */
static void write_access(struct ch *ch, struct kcore_json *j)
{
	const struct ch_creds *c = &ch->creds;

	kcore_json_object_inline(j, "access");
	kcore_json_string(j, "owner", "root");
	kcore_json_bool(j, "user", ch->user_access);
	kcore_json_string(j, "why", ch->access_why);
	if (ch->o->crash.dump_mode >= 0)
		kcore_json_i64(j, "dump_mode", ch->o->crash.dump_mode);
	else
		kcore_json_null(j, "dump_mode");
	u64_or_null(j, "auxv_uid", c->have_uid, c->uid);
	u64_or_null(j, "auxv_euid", c->have_euid, c->euid);
	u64_or_null(j, "auxv_gid", c->have_gid, c->gid);
	u64_or_null(j, "auxv_egid", c->have_egid, c->egid);
	u64_or_null(j, "at_secure", c->have_secure, c->secure);
	kcore_json_string(j, "dir", ch->res->subdir);
	kcore_json_object_end(j);
}

/* How the core came, and where the process ran. */
static void write_received(struct ch *ch, struct kcore_json *j)
{
	const struct kcore_ch_peer *p = ch->o->peer;
	const struct ch_place *pl = &ch->place;

	kcore_json_object_inline(j, "received");
	kcore_json_string(j, "via", kcore_ch_via_name(ch->o->via));
	if (p) {
		kcore_json_bool(j, "pidfd", p->pidfd >= 0);
		if (p->pidfd_why[0])
			kcore_json_string(j, "pidfd_why_not", p->pidfd_why);
		u64_or_null(j, "cgroup_id", p->have_cgroupid, p->cgroupid);
		u64_or_null(j, "coredump_mask", p->have_coredump_mask,
			    p->coredump_mask);
		if (p->have_peercred) {
			kcore_json_i64(j, "peer_pid", p->peer_pid);
			kcore_json_u64(j, "peer_uid", p->peer_uid);
			kcore_json_u64(j, "peer_gid", p->peer_gid);
		}
		if (ch->o->via == KCORE_CH_VIA_SOCKET_REQUEST) {
			kcore_json_object_inline(j, "request");
			kcore_json_u64(j, "size", p->req_size);
			kcore_json_u64(j, "size_ack", p->req_size_ack);
			kcore_json_hex(j, "mask", p->req_mask);
			kcore_json_hex(j, "ack_mask", p->ack_mask);
			kcore_json_object_end(j);
		}
	}
	if (pl->known && pl->ns_pid >= 0)
		kcore_json_i64(j, "ns_pid", pl->ns_pid);
	else
		kcore_json_null(j, "ns_pid");
	if (pl->known)
		kcore_json_bool(j, "in_container", pl->container);
	else
		kcore_json_null(j, "in_container");
	if (!pl->known) {
		kcore_json_null(j, "namespaces");
	} else {
		kcore_json_object_inline(j, "namespaces");
		for (int i = 0; i < CH_NS_NUM; i++)
			kcore_json_string(j, pl->ns_name[i],
					  pl->ns[i][0] ? pl->ns[i] : NULL);
		kcore_json_object_end(j);
		kcore_json_array_inline(j, "namespaces_differ");
		for (int i = 0; i < CH_NS_NUM; i++)
			if (pl->ns_differs[i])
				kcore_json_string(j, NULL, pl->ns_name[i]);
		kcore_json_array_end(j);
	}
	kcore_json_object_end(j);
}

static void str_member(struct kcore_json *j, const char *key, const char *v)
{
	if (v && *v)
		kcore_json_string(j, key, v);
}

/* What systemd-coredump records of the process: each member only when
 * known; one per line, arrays and objects on theirs. */
static void write_facts(struct ch *ch, struct kcore_json *j)
{
	const struct ch_facts *x = &ch->facts;

	/* Why /proc/PID was not looked at (then only the machine's facts
	 * below are there). */
	if (!ch->proc_ok && ch->proc_why[0])
		kcore_json_string(j, "facts_why_not", ch->proc_why);
	/* What could not be read of it, and why. */
	if (x->nunreadable) {
		kcore_json_object_inline(j, "facts_unreadable");
		for (size_t i = 0; i < x->nunreadable; i++)
			kcore_json_string(j, x->unreadable[i].what,
					  strerror(x->unreadable[i].err));
		kcore_json_object_end(j);
	}
	str_member(j, "facts_unreadable_why", x->unreadable_why);
	if (x->cmdline) {
		kcore_json_string_len(j, "cmdline", x->cmdline, x->cmdline_len);
		if (x->cmdline_truncated)
			kcore_json_bool(j, "cmdline_truncated", true);
	}
	str_member(j, "cwd", x->cwd);
	str_member(j, "root", x->root);
	str_member(j, "cgroup", x->cgroup);
	str_member(j, "unit", x->unit);
	str_member(j, "user_unit", x->user_unit);
	str_member(j, "slice", x->slice);
	str_member(j, "session", x->session);
	if (x->owner_uid >= 0)
		kcore_json_i64(j, "owner_uid", x->owner_uid);
	str_member(j, "boot_id", x->boot_id);
	str_member(j, "machine_id", x->machine_id);
	str_member(j, "hostname", x->hostname);
	if (x->nlimits) {
		kcore_json_object_inline(j, "rlimits");
		for (size_t i = 0; i < x->nlimits; i++) {
			const struct ch_limit *l = &x->limits[i];

			kcore_json_object_inline(j, l->name);
			kcore_json_string(j, "soft", l->soft);
			kcore_json_string(j, "hard", l->hard);
			if (l->units[0])
				kcore_json_string(j, "units", l->units);
			kcore_json_object_end(j);
		}
		kcore_json_object_end(j);
	}
	if (x->fds) {
		kcore_json_array_inline(j, "open_fds");
		for (size_t i = 0; i < x->nfds; i++) {
			const struct ch_fd *d = &x->fds[i];
			char flags[16];

			kcore_json_object_inline(j, NULL);
			kcore_json_i64(j, "fd", d->fd);
			kcore_json_string(j, "target", d->target);
			if (d->have_info) {
				snprintf(flags, sizeof(flags), "0%o", d->flags);
				kcore_json_u64(j, "pos", d->pos);
				kcore_json_string(j, "flags", flags);
				kcore_json_u64(j, "mnt_id", d->mnt_id);
			}
			kcore_json_object_end(j);
		}
		kcore_json_array_end(j);
		if (x->fds_truncated)
			kcore_json_u64(j, "open_fds_truncated", CH_MAX_FDS);
	}
	if (x->environ) {
		size_t i = 0;

		kcore_json_array_inline(j, "environ");
		while (i < x->environ_len) {
			size_t n = strnlen(x->environ + i, x->environ_len - i);

			if (n)
				kcore_json_string_len(j, NULL, x->environ + i,
						      n);
			i += n + 1;
		}
		kcore_json_array_end(j);
		if (x->environ_truncated)
			kcore_json_bool(j, "environ_truncated", true);
	}
}

static void write_build_ids(struct ch *ch, struct kcore_json *j)
{
	const struct ch_buildids *ids = &ch->ids;

	if (ids->error)
		kcore_json_string(j, "build_ids_error", ids->error);
	if (ids->incomplete)
		kcore_json_bool(j, "build_ids_incomplete", true);
	kcore_json_string(j, "build_ids_from", ids->from);
	kcore_json_object_inline(j, "build_ids_sandbox");
	kcore_json_i64(j, "uid", ids->uid);
	kcore_json_i64(j, "gid", ids->gid);
	kcore_json_bool(j, "no_new_privs", ids->no_new_privs);
	kcore_json_bool(j, "seccomp", ids->seccomp);
	kcore_json_bool(j, "chroot", ids->chroot);
	kcore_json_hex(j, "cap_eff", ids->cap_eff);
	kcore_json_object_end(j);
	/* One module a line. */
	kcore_json_array_begin(j, "build_ids");
	for (size_t i = 0; i < ids->count; i++) {
		const struct ch_module *m = &ids->mods[i];
		char hex[2 * sizeof(m->build_id) + 1] = "";

		if (m->build_id_len)
			kcore_hex(m->build_id, m->build_id_len, hex);
		kcore_json_object_inline(j, NULL);
		kcore_json_string(j, "name", m->name);
		kcore_json_hex(j, "start", m->start);
		kcore_json_hex(j, "end", m->end);
		kcore_json_string(j, "build_id", m->build_id_len ? hex : NULL);
		kcore_json_object_end(j);
	}
	kcore_json_array_end(j);
}

static const char *base_name(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;

	return b ? b + 1 : path;
}

/* Names from the core's files as text: control bytes as '?' (the
 * journal's MESSAGE reaches terminals as it is). */
static void put_clean(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
}

/* One frame as systemd-coredump prints it. */
static void frame_text(const struct ch_frame *fr, size_t n, FILE *f)
{
	fprintf(f, "#%-2zu 0x%016" PRIx64 " ", n, fr->pc);
	put_clean(f, fr->func ? fr->func : "n/a");
	if (fr->module) {
		fputs(" (", f);
		put_clean(f, base_name(fr->module));
		fprintf(f, " + 0x%" PRIx64 ")", fr->module_off);
	}
}

void ch_backtrace_text(const struct ch_backtrace *bt, FILE *f)
{
	for (size_t i = 0; i < bt->nthreads; i++) {
		const struct ch_bt_thread *t = &bt->threads[i];

		fprintf(f, "%sStack trace of thread %" PRId64 ":\n",
			i ? "\n" : "", t->tid);
		for (size_t k = 0; k < t->nframes; k++) {
			frame_text(&t->frames[k], k, f);
			fputc('\n', f);
		}
		if (t->truncated)
			fprintf(f, "(more than %u frames)\n", CH_BT_MAX_FRAMES);
		if (t->error) {
			fputs("(unwinding stopped: ", f);
			put_clean(f, t->error);
			fputs(")\n", f);
		}
	}
	if (bt->threads_truncated)
		fprintf(f, "\n(more than %u threads)\n", CH_BT_MAX_THREADS);
	if (bt->timed_out)
		fputs("\n(the time for the backtrace ran out)\n", f);
}

/* The backtrace made at crash time: one thread a line; and the first
 * frame of the crashing thread on a line of its own (list shows it). */
static void write_backtrace(struct ch *ch, struct kcore_json *j)
{
	const struct ch_backtrace *bt = &ch->ids.bt;
	char *frame = NULL;
	size_t len = 0;

	if (!ch->o->backtrace_timeout_ms)
		return;
	kcore_json_object_begin(j, "backtrace");
	kcore_json_bool(j, "made", bt->made);
	kcore_json_string(j, "error",
			  bt->error	  ? bt->error
			  : bt->made	  ? NULL
			  : ch->ids.error ? ch->ids.error
					  : "no backtrace");
	kcore_json_bool(j, "timed_out", bt->timed_out);
	kcore_json_bool(j, "threads_truncated", bt->threads_truncated);
	kcore_json_u64(j, "debuginfo_files", bt->debug_files);
	kcore_json_fixed(j, "seconds", bt->seconds, 3);
	kcore_json_array_begin(j, "threads");
	for (size_t i = 0; i < bt->nthreads; i++) {
		const struct ch_bt_thread *t = &bt->threads[i];

		kcore_json_object_inline(j, NULL);
		kcore_json_i64(j, "tid", t->tid);
		kcore_json_bool(j, "truncated", t->truncated);
		kcore_json_string(j, "error", t->error);
		kcore_json_array_inline(j, "frames");
		for (size_t k = 0; k < t->nframes; k++) {
			const struct ch_frame *fr = &t->frames[k];

			kcore_json_object_inline(j, NULL);
			kcore_json_hex(j, "pc", fr->pc);
			kcore_json_string(j, "function", fr->func);
			if (fr->func)
				kcore_json_hex(j, "function_offset",
					       fr->func_off);
			kcore_json_string(j, "module", fr->module);
			if (fr->module)
				kcore_json_hex(j, "module_offset",
					       fr->module_off);
			kcore_json_object_end(j);
		}
		kcore_json_array_end(j);
		kcore_json_object_end(j);
	}
	kcore_json_array_end(j);
	kcore_json_object_end(j);
	if (bt->nthreads && bt->threads[0].nframes) {
		FILE *m = open_memstream(&frame, &len);

		if (m) {
			frame_text(&bt->threads[0].frames[0], 0, m);
			if (fclose(m) != 0) {
				free(frame);
				frame = NULL;
			}
		}
	}
	/* "#0  0x... func (module + 0x...)" without the "#0  ". */
	kcore_json_string(j, "crash_frame",
			  frame && strlen(frame) > 4 ? frame + 4 : NULL);
	free(frame);
}

/* The package notes: each module's package, the note's strings decoded
 * and escaped again (never the note's JSON as it came). */
static void write_packages(struct ch *ch, struct kcore_json *j)
{
	static const char *const keys[] = { "type",    "name",
					    "version", "architecture",
					    "os_cpe",  "debuginfod_url" };

	if (!ch->npkgs)
		return;
	kcore_json_array_inline(j, "packages");
	for (size_t i = 0; i < ch->npkgs; i++) {
		const struct ch_package *p = &ch->pkgs[i];
		const struct ch_module *m = &ch->ids.mods[p->module];
		const char *vals[] = { p->type, p->name,   p->version,
				       p->arch, p->os_cpe, p->debuginfod };
		char hex[2 * sizeof(m->build_id) + 1] = "";

		if (m->build_id_len)
			kcore_hex(m->build_id, m->build_id_len, hex);
		kcore_json_object_inline(j, NULL);
		kcore_json_string(j, "build_id", m->build_id_len ? hex : NULL);
		kcore_json_string(j, "file", m->name);
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (vals[k])
				kcore_json_string(j, keys[k], vals[k]);
		kcore_json_object_end(j);
	}
	kcore_json_array_end(j);
}

struct kcore_error *ch_meta_build(struct ch *ch, char **ret, size_t *ret_len)
{
	const struct kcore_ch_opts *o = ch->o;
	struct kcore_ch_result *r = ch->res;
	char hex[2 * KCORE_DIGEST_LEN + 1], when[64] = "";
	time_t t = (time_t)o->crash.time;
	struct tm tm;
	struct rusage ru;
	struct kcore_json j;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	f = open_memstream(&text, &len);
	if (!f)
		return &kcore_error_nomem;
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	kcore_hex(r->sha256, KCORE_DIGEST_LEN, hex);
	kcore_json_init(&j, f);
	kcore_json_object_begin(&j, NULL);
	kcore_json_u64(&j, "kcoredump_metadata", 1);
	kcore_json_string(&j, "core", r->core_name);
	kcore_json_string(&j, "format", format_name(o->compress));
	kcore_json_i64(&j, "pid", o->crash.pid);
	kcore_json_u64(&j, "uid", o->crash.uid);
	kcore_json_u64(&j, "gid", o->crash.gid);
	kcore_json_i64(&j, "signal", ch->signal);
	kcore_json_string(&j, "signal_name", kcore_signal_name(ch->signal));
	kcore_json_i64(&j, "time", o->crash.time);
	kcore_json_string(&j, "time_utc", when);
	kcore_json_string(&j, "comm", o->crash.comm);
	kcore_json_string(&j, "executable", ch->exe ? ch->exe : ch->fname);
	kcore_json_string(&j, "prpsinfo_fname", ch->fname);
	kcore_json_string(&j, "prpsinfo_args", ch->psargs);
	kcore_json_u64(&j, "threads", ch->nthreads);
	kcore_json_i64(&j, "note_signal", ch->note_signal);
	if (ch->note_error)
		kcore_json_string(&j, "note_error", ch->note_error);
	write_facts(ch, &j);
	write_access(ch, &j);
	write_received(ch, &j);
	kcore_json_u64(&j, "stream_bytes", r->stream_bytes);
	kcore_json_u64(&j, "expected_bytes", r->expected_bytes);
	kcore_json_u64(&j, "file_size", r->file_size);
	kcore_json_u64(&j, "data_bytes", r->data_bytes);
	kcore_json_u64(&j, "zero_bytes", r->zero_bytes);
	kcore_json_u64(&j, "allocated_bytes", r->allocated_bytes);
	kcore_json_object_inline(&j, "pagemap");
	kcore_json_bool(&j, "used", !r->pagemap_why);
	kcore_json_u64(&j, "unread_bytes", r->unread_bytes);
	kcore_json_fixed(&j, "hole_seconds", (double)r->hole_ns / 1e9, 3);
	kcore_json_u64(&j, "scans",
		       r->pagemap_scans + ch_holes_scans(ch->holes));
	kcore_json_string(&j, "why_not", r->pagemap_why);
	kcore_json_object_end(&j);
	kcore_json_bool(&j, "complete", r->reason == KCORE_CH_COMPLETE);
	kcore_json_string(&j, "truncation_reason",
			  kcore_ch_reason_name(r->reason));
	if (r->reason != KCORE_CH_COMPLETE) {
		kcore_json_u64(&j, "cut_offset", r->cut_offset);
		kcore_json_u64(&j, "segments_cut", r->segments_cut);
		kcore_json_bool(&j, "marked_in_core", r->cut_marked);
	}
	kcore_json_string(&j, "sha256", hex);
	kcore_json_string(&j, "sha256_kind",
			  "kcoredump-sha256-v1 of the stored stream bytes as "
			  "one segment");
	kcore_json_object_inline(&j, "limits");
	kcore_json_u64(&j, "max_size", o->max_size);
	kcore_json_u64(&j, "max_use", o->max_use);
	kcore_json_u64(&j, "keep_free", o->keep_free);
	kcore_json_u64(&j, "max_cores", o->max_cores);
	kcore_json_u64(&j, "max_cores_per_user", o->max_cores_per_user);
	kcore_json_u64(&j, "max_handlers",
		       o->max_handlers ? o->max_handlers : 16);
	kcore_json_object_end(&j);
	kcore_json_u64(&j, "removed_for_limits", r->removed);
	write_build_ids(ch, &j);
	write_packages(ch, &j);
	write_backtrace(ch, &j);
	kcore_json_bool(&j, "journal_entry", !o->journal_why_not);
	str_member(&j, "journal_why_not", o->journal_why_not);
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		kcore_json_fixed(&j, "cpu_user_seconds",
				 (double)ru.ru_utime.tv_sec +
					 (double)ru.ru_utime.tv_usec / 1e6,
				 3);
		kcore_json_fixed(&j, "cpu_system_seconds",
				 (double)ru.ru_stime.tv_sec +
					 (double)ru.ru_stime.tv_usec / 1e6,
				 3);
	}
	kcore_json_fixed(&j, "stream_seconds", r->stream_elapsed, 3);
	kcore_json_fixed(&j, "elapsed_seconds", r->elapsed, 3);
	kcore_json_object_end(&j);
	kcore_json_finish(&j);
	if (fclose(f) != 0 || !text) {
		free(text);
		return &kcore_error_nomem;
	}
	*ret = text;
	*ret_len = len;
	return NULL;
}
