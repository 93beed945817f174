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
#include "kcoredump/text.h"

void ch_json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	kcore_json_string(f, s, strlen(s));
}

static const char *format_name(enum kcore_compress c)
{
	return c == KCORE_COMPRESS_NONE ? "elf" : kcore_compress_name(c);
}

static void json_u64_or_null(FILE *f, bool have, uint64_t v)
{
	if (have)
		fprintf(f, "%" PRIu64, v);
	else
		fputs("null", f);
}

/* Who may read the core, and what that was decided from. */
static void write_access(struct ch *ch, FILE *f)
{
	const struct ch_creds *c = &ch->creds;

	fprintf(f, "  \"access\": {\"owner\": \"root\", \"user\": %s, ",
		ch->user_access ? "true" : "false");
	fputs("\"why\": ", f);
	ch_json_str(f, ch->access_why);
	fprintf(f, ", \"dump_mode\": ");
	if (ch->o->crash.dump_mode >= 0)
		fprintf(f, "%d", ch->o->crash.dump_mode);
	else
		fputs("null", f);
	fputs(", \"auxv_uid\": ", f);
	json_u64_or_null(f, c->have_uid, c->uid);
	fputs(", \"auxv_euid\": ", f);
	json_u64_or_null(f, c->have_euid, c->euid);
	fputs(", \"auxv_gid\": ", f);
	json_u64_or_null(f, c->have_gid, c->gid);
	fputs(", \"auxv_egid\": ", f);
	json_u64_or_null(f, c->have_egid, c->egid);
	fputs(", \"at_secure\": ", f);
	json_u64_or_null(f, c->have_secure, c->secure);
	fputs(", \"dir\": ", f);
	ch_json_str(f, ch->res->subdir);
	fputs("},\n", f);
}

/* How the core came, and where the process ran. */
static void write_received(struct ch *ch, FILE *f)
{
	const struct kcore_ch_peer *p = ch->o->peer;
	const struct ch_place *pl = &ch->place;

	fputs("  \"received\": {\"via\": ", f);
	ch_json_str(f, kcore_ch_via_name(ch->o->via));
	if (p) {
		fprintf(f, ", \"pidfd\": %s", p->pidfd >= 0 ? "true" : "false");
		if (p->pidfd_why[0]) {
			fputs(", \"pidfd_why_not\": ", f);
			ch_json_str(f, p->pidfd_why);
		}
		fputs(", \"cgroup_id\": ", f);
		json_u64_or_null(f, p->have_cgroupid, p->cgroupid);
		fputs(", \"coredump_mask\": ", f);
		json_u64_or_null(f, p->have_coredump_mask, p->coredump_mask);
		if (p->have_peercred)
			fprintf(f,
				", \"peer_pid\": %" PRId64
				", \"peer_uid\": %" PRIu32
				", \"peer_gid\": %" PRIu32,
				p->peer_pid, p->peer_uid, p->peer_gid);
		if (ch->o->via == KCORE_CH_VIA_SOCKET_REQUEST)
			fprintf(f,
				", \"request\": {\"size\": %" PRIu32
				", \"size_ack\": %" PRIu32
				", \"mask\": \"0x%" PRIx64
				"\", \"ack_mask\": \"0x%" PRIx64 "\"}",
				p->req_size, p->req_size_ack, p->req_mask,
				p->ack_mask);
	}
	fputs(", \"ns_pid\": ", f);
	if (pl->known && pl->ns_pid >= 0)
		fprintf(f, "%" PRId64, pl->ns_pid);
	else
		fputs("null", f);
	fputs(", \"in_container\": ", f);
	fputs(!pl->known ? "null" : pl->container ? "true" : "false", f);
	fputs(", \"namespaces\": ", f);
	if (!pl->known) {
		fputs("null", f);
	} else {
		fputs("{", f);
		for (int i = 0; i < CH_NS_NUM; i++) {
			fprintf(f, "%s\"%s\": ", i ? ", " : "", pl->ns_name[i]);
			ch_json_str(f, pl->ns[i][0] ? pl->ns[i] : NULL);
		}
		fputs("}, \"namespaces_differ\": [", f);
		for (int i = 0, k = 0; i < CH_NS_NUM; i++)
			if (pl->ns_differs[i])
				fprintf(f, "%s\"%s\"", k++ ? ", " : "",
					pl->ns_name[i]);
		fputs("]", f);
	}
	fputs("},\n", f);
}

static void str_member(FILE *f, const char *key, const char *v)
{
	if (!v || !*v)
		return;
	fprintf(f, "  \"%s\": ", key);
	ch_json_str(f, v);
	fputs(",\n", f);
}

/* What systemd-coredump records of the process: each member only when
 * known; one per line, arrays and objects on theirs. */
static void write_facts(struct ch *ch, FILE *f)
{
	const struct ch_facts *x = &ch->facts;

	/* Why /proc/PID was not looked at (then only the machine's facts
	 * below are there). */
	if (!ch->proc_ok && ch->proc_why[0]) {
		fputs("  \"facts_why_not\": ", f);
		ch_json_str(f, ch->proc_why);
		fputs(",\n", f);
	}
	/* What could not be read of it, and why. */
	if (x->nunreadable) {
		fputs("  \"facts_unreadable\": {", f);
		for (size_t i = 0; i < x->nunreadable; i++) {
			fprintf(f, "%s\"%s\": ", i ? ", " : "",
				x->unreadable[i].what);
			ch_json_str(f, strerror(x->unreadable[i].err));
		}
		fputs("},\n", f);
	}
	str_member(f, "facts_unreadable_why", x->unreadable_why);
	if (x->cmdline) {
		fputs("  \"cmdline\": ", f);
		kcore_json_string(f, x->cmdline, x->cmdline_len);
		fputs(",\n", f);
		if (x->cmdline_truncated)
			fputs("  \"cmdline_truncated\": true,\n", f);
	}
	str_member(f, "cwd", x->cwd);
	str_member(f, "root", x->root);
	str_member(f, "cgroup", x->cgroup);
	str_member(f, "unit", x->unit);
	str_member(f, "user_unit", x->user_unit);
	str_member(f, "slice", x->slice);
	str_member(f, "session", x->session);
	if (x->owner_uid >= 0)
		fprintf(f, "  \"owner_uid\": %" PRId64 ",\n", x->owner_uid);
	str_member(f, "boot_id", x->boot_id);
	str_member(f, "machine_id", x->machine_id);
	str_member(f, "hostname", x->hostname);
	if (x->nlimits) {
		fputs("  \"rlimits\": {", f);
		for (size_t i = 0; i < x->nlimits; i++) {
			const struct ch_limit *l = &x->limits[i];

			fprintf(f, "%s", i ? ", " : "");
			ch_json_str(f, l->name);
			fputs(": {\"soft\": ", f);
			ch_json_str(f, l->soft);
			fputs(", \"hard\": ", f);
			ch_json_str(f, l->hard);
			if (l->units[0]) {
				fputs(", \"units\": ", f);
				ch_json_str(f, l->units);
			}
			fputs("}", f);
		}
		fputs("},\n", f);
	}
	if (x->fds) {
		fputs("  \"open_fds\": [", f);
		for (size_t i = 0; i < x->nfds; i++) {
			const struct ch_fd *d = &x->fds[i];

			fprintf(f, "%s{\"fd\": %d, \"target\": ", i ? ", " : "",
				d->fd);
			ch_json_str(f, d->target);
			if (d->have_info)
				fprintf(f,
					", \"pos\": %" PRIu64
					", \"flags\": \"0%o\", \"mnt_id\": "
					"%" PRIu64,
					d->pos, d->flags, d->mnt_id);
			fputs("}", f);
		}
		fputs("],\n", f);
		if (x->fds_truncated)
			fprintf(f, "  \"open_fds_truncated\": %u,\n",
				CH_MAX_FDS);
	}
	if (x->environ) {
		size_t i = 0, k = 0;

		fputs("  \"environ\": [", f);
		while (i < x->environ_len) {
			size_t n = strnlen(x->environ + i, x->environ_len - i);

			if (n) {
				fputs(k++ ? ", " : "", f);
				kcore_json_string(f, x->environ + i, n);
			}
			i += n + 1;
		}
		fputs("],\n", f);
		if (x->environ_truncated)
			fputs("  \"environ_truncated\": true,\n", f);
	}
}

static void write_build_ids(struct ch *ch, FILE *f)
{
	const struct ch_buildids *ids = &ch->ids;

	if (ids->error) {
		fputs("  \"build_ids_error\": ", f);
		ch_json_str(f, ids->error);
		fputs(",\n", f);
	}
	if (ids->incomplete)
		fputs("  \"build_ids_incomplete\": true,\n", f);
	fputs("  \"build_ids_from\": ", f);
	ch_json_str(f, ids->from);
	fputs(",\n", f);
	fprintf(f,
		"  \"build_ids_sandbox\": {\"uid\": %" PRId64
		", \"gid\": %" PRId64 ", \"no_new_privs\": %s, \"seccomp\": "
		"%s, \"chroot\": %s, \"cap_eff\": \"0x%" PRIx64 "\"},\n",
		ids->uid, ids->gid, ids->no_new_privs ? "true" : "false",
		ids->seccomp ? "true" : "false", ids->chroot ? "true" : "false",
		ids->cap_eff);
	fputs("  \"build_ids\": [", f);
	for (size_t i = 0; i < ids->count; i++) {
		const struct ch_module *m = &ids->mods[i];
		char hex[2 * sizeof(m->build_id) + 1] = "";

		if (m->build_id_len)
			kcore_hex(m->build_id, m->build_id_len, hex);
		fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
		ch_json_str(f, m->name);
		fprintf(f,
			", \"start\": \"0x%" PRIx64 "\", \"end\": \"0x%" PRIx64
			"\", \"build_id\": ",
			m->start, m->end);
		ch_json_str(f, m->build_id_len ? hex : NULL);
		fputs("}", f);
	}
	fputs(ids->count ? "\n  ],\n" : "],\n", f);
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

static void json_hex_member(FILE *f, const char *key, uint64_t v)
{
	fprintf(f, ", \"%s\": \"0x%" PRIx64 "\"", key, v);
}

/* The backtrace made at crash time: one thread a line; and the first
 * frame of the crashing thread on a line of its own (list shows it). */
static void write_backtrace(struct ch *ch, FILE *f)
{
	const struct ch_backtrace *bt = &ch->ids.bt;
	char *frame = NULL;
	size_t len = 0;

	if (!ch->o->backtrace_timeout_ms)
		return;
	fputs("  \"backtrace\": {\"made\": ", f);
	fputs(bt->made ? "true" : "false", f);
	fputs(", \"error\": ", f);
	ch_json_str(f, bt->error       ? bt->error
		       : bt->made      ? NULL
		       : ch->ids.error ? ch->ids.error
				       : "no backtrace");
	fprintf(f,
		", \"timed_out\": %s, \"threads_truncated\": %s, "
		"\"debuginfo_files\": %u, \"seconds\": %.3f, "
		"\"threads\": [",
		bt->timed_out ? "true" : "false",
		bt->threads_truncated ? "true" : "false", bt->debug_files,
		bt->seconds);
	for (size_t i = 0; i < bt->nthreads; i++) {
		const struct ch_bt_thread *t = &bt->threads[i];

		fprintf(f, "%s\n    {\"tid\": %" PRId64 ", \"truncated\": %s",
			i ? "," : "", t->tid, t->truncated ? "true" : "false");
		fputs(", \"error\": ", f);
		ch_json_str(f, t->error);
		fputs(", \"frames\": [", f);
		for (size_t k = 0; k < t->nframes; k++) {
			const struct ch_frame *fr = &t->frames[k];

			fprintf(f,
				"%s{\"pc\": \"0x%" PRIx64 "\", \"function\": ",
				k ? ", " : "", fr->pc);
			ch_json_str(f, fr->func);
			if (fr->func)
				json_hex_member(f, "function_offset",
						fr->func_off);
			fputs(", \"module\": ", f);
			ch_json_str(f, fr->module);
			if (fr->module)
				json_hex_member(f, "module_offset",
						fr->module_off);
			fputs("}", f);
		}
		fputs("]}", f);
	}
	fputs(bt->nthreads ? "\n  ]},\n" : "]},\n", f);
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
	fputs("  \"crash_frame\": ", f);
	ch_json_str(f, frame && strlen(frame) > 4 ? frame + 4 : NULL);
	fputs(",\n", f);
	free(frame);
}

/* The package notes: each module's package, the note's strings decoded
 * and escaped again (never the note's JSON as it came). */
static void write_packages(struct ch *ch, FILE *f)
{
	static const char *const keys[] = { "type",    "name",
					    "version", "architecture",
					    "os_cpe",  "debuginfod_url" };

	if (!ch->npkgs)
		return;
	fputs("  \"packages\": [", f);
	for (size_t i = 0; i < ch->npkgs; i++) {
		const struct ch_package *p = &ch->pkgs[i];
		const struct ch_module *m = &ch->ids.mods[p->module];
		const char *vals[] = { p->type, p->name,   p->version,
				       p->arch, p->os_cpe, p->debuginfod };
		char hex[2 * sizeof(m->build_id) + 1] = "";

		if (m->build_id_len)
			kcore_hex(m->build_id, m->build_id_len, hex);
		fprintf(f, "%s{\"build_id\": ", i ? ", " : "");
		ch_json_str(f, m->build_id_len ? hex : NULL);
		fputs(", \"file\": ", f);
		ch_json_str(f, m->name);
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			if (!vals[k])
				continue;
			fprintf(f, ", \"%s\": ", keys[k]);
			ch_json_str(f, vals[k]);
		}
		fputs("}", f);
	}
	fputs("],\n", f);
}

struct kcore_error *ch_meta_build(struct ch *ch, char **ret, size_t *ret_len)
{
	const struct kcore_ch_opts *o = ch->o;
	struct kcore_ch_result *r = ch->res;
	char hex[2 * KCORE_DIGEST_LEN + 1], when[64] = "";
	time_t t = (time_t)o->crash.time;
	struct tm tm;
	struct rusage ru;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	f = open_memstream(&text, &len);
	if (!f)
		return &kcore_error_nomem;
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	kcore_hex(r->sha256, KCORE_DIGEST_LEN, hex);
	fputs("{\n  \"kcoredump_metadata\": 1,\n  \"core\": ", f);
	ch_json_str(f, r->core_name);
	fprintf(f, ",\n  \"format\": \"%s\",\n", format_name(o->compress));
	fprintf(f,
		"  \"pid\": %" PRId64 ",\n  \"uid\": %" PRIu32
		",\n  \"gid\": %" PRIu32 ",\n",
		o->crash.pid, o->crash.uid, o->crash.gid);
	fprintf(f, "  \"signal\": %d,\n  \"signal_name\": ", ch->signal);
	ch_json_str(f, kcore_signal_name(ch->signal));
	fprintf(f, ",\n  \"time\": %" PRId64 ",\n  \"time_utc\": \"%s\",\n",
		o->crash.time, when);
	fputs("  \"comm\": ", f);
	ch_json_str(f, o->crash.comm);
	fputs(",\n  \"executable\": ", f);
	ch_json_str(f, ch->exe ? ch->exe : ch->fname);
	fputs(",\n  \"prpsinfo_fname\": ", f);
	ch_json_str(f, ch->fname);
	fputs(",\n  \"prpsinfo_args\": ", f);
	ch_json_str(f, ch->psargs);
	fprintf(f, ",\n  \"threads\": %u,\n  \"note_signal\": %d,\n",
		ch->nthreads, ch->note_signal);
	if (ch->note_error) {
		fputs("  \"note_error\": ", f);
		ch_json_str(f, ch->note_error);
		fputs(",\n", f);
	}
	write_facts(ch, f);
	write_access(ch, f);
	write_received(ch, f);
	fprintf(f,
		"  \"stream_bytes\": %" PRIu64 ",\n"
		"  \"expected_bytes\": %" PRIu64 ",\n"
		"  \"file_size\": %" PRIu64 ",\n"
		"  \"data_bytes\": %" PRIu64 ",\n"
		"  \"zero_bytes\": %" PRIu64 ",\n"
		"  \"allocated_bytes\": %" PRIu64 ",\n",
		r->stream_bytes, r->expected_bytes, r->file_size, r->data_bytes,
		r->zero_bytes, r->allocated_bytes);
	fprintf(f,
		"  \"pagemap\": {\"used\": %s, \"unread_bytes\": %" PRIu64
		", \"hole_seconds\": %.3f, \"scans\": %" PRIu64
		", \"why_not\": ",
		r->pagemap_why ? "false" : "true", r->unread_bytes,
		(double)r->hole_ns / 1e9,
		r->pagemap_scans + ch_holes_scans(ch->holes));
	ch_json_str(f, r->pagemap_why);
	fputs("},\n", f);
	fprintf(f, "  \"complete\": %s,\n  \"truncation_reason\": \"%s\",\n",
		r->reason == KCORE_CH_COMPLETE ? "true" : "false",
		kcore_ch_reason_name(r->reason));
	if (r->reason != KCORE_CH_COMPLETE)
		fprintf(f,
			"  \"cut_offset\": %" PRIu64
			",\n  \"segments_cut\": %u,\n"
			"  \"marked_in_core\": %s,\n",
			r->cut_offset, r->segments_cut,
			r->cut_marked ? "true" : "false");
	fprintf(f,
		"  \"sha256\": \"%s\",\n"
		"  \"sha256_kind\": \"kcoredump-sha256-v1 of the stored "
		"stream bytes as one segment\",\n",
		hex);
	fprintf(f,
		"  \"limits\": {\"max_size\": %" PRIu64
		", \"max_use\": %" PRIu64 ", \"keep_free\": %" PRIu64
		", \"max_cores\": %" PRIu64 ", \"max_cores_per_user\": %" PRIu64
		", \"max_handlers\": %u},\n",
		o->max_size, o->max_use, o->keep_free, o->max_cores,
		o->max_cores_per_user, o->max_handlers ? o->max_handlers : 16);
	fprintf(f, "  \"removed_for_limits\": %u,\n", r->removed);
	write_build_ids(ch, f);
	write_packages(ch, f);
	write_backtrace(ch, f);
	fputs("  \"journal_entry\": ", f);
	fputs(o->journal_why_not ? "false" : "true", f);
	fputs(",\n", f);
	str_member(f, "journal_why_not", o->journal_why_not);
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		fprintf(f,
			"  \"cpu_user_seconds\": %.3f,\n"
			"  \"cpu_system_seconds\": %.3f,\n",
			(double)ru.ru_utime.tv_sec +
				(double)ru.ru_utime.tv_usec / 1e6,
			(double)ru.ru_stime.tv_sec +
				(double)ru.ru_stime.tv_usec / 1e6);
	fprintf(f,
		"  \"stream_seconds\": %.3f,\n"
		"  \"elapsed_seconds\": %.3f\n}\n",
		r->stream_elapsed, r->elapsed);
	if (fclose(f) != 0 || !text) {
		free(text);
		return &kcore_error_nomem;
	}
	*ret = text;
	*ret_len = len;
	return NULL;
}
