// SPDX-License-Identifier: MIT
/*
 * The journal entry of a stored core, with systemd-coredump's fields, so
 * that coredumpctl lists, shows, dumps and debugs it: MESSAGE_ID
 * fc2e22bc6ee647b6b90729ab34a250b1 (SD_MESSAGE_COREDUMP), the process's
 * COREDUMP_* facts, COREDUMP_FILENAME the stored file (absolute), and a
 * MESSAGE with the backtrace.  Only built here ("FIELD=value" strings in
 * the result); the caller sends it (sd_journal_sendv()), after the core
 * is published.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corehandler-internal.h"

#define MAX_FIELDS 48

static void add(struct kcore_ch_result *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void add(struct kcore_ch_result *r, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	if (r->journal_count >= MAX_FIELDS)
		return;
	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n >= 0)
		r->journal[r->journal_count++] = s;
}

static void add_str(struct kcore_ch_result *r, const char *field, const char *v)
{
	if (v && *v)
		add(r, "%s=%s", field, v);
}

/* Where the store is, absolute (the name given may not be). */
static char *store_path(struct ch *ch)
{
	char proc[64], buf[4096];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", ch->o->dir_fd);
	n = readlink(proc, buf, sizeof(buf) - 1);
	if (n > 0 && buf[0] == '/') {
		buf[n] = '\0';
		return strdup(buf);
	}
	return ch->o->dir && ch->o->dir[0] == '/' ? strdup(ch->o->dir) : NULL;
}

void ch_journal_build(struct ch *ch)
{
	const struct kcore_ch_opts *o = ch->o;
	const struct ch_facts *x = &ch->facts;
	struct kcore_ch_result *r = ch->res;
	const char *comm =
		o->crash.comm && *o->crash.comm ? o->crash.comm : ch->fname;
	const char *sig = kcore_signal_name(ch->signal);
	char *dir, *msg = NULL;
	size_t len = 0;
	FILE *f;

	if (o->journal_why_not || !r->core_name)
		return;
	r->journal = calloc(MAX_FIELDS, sizeof(*r->journal));
	if (!r->journal)
		return;
	f = open_memstream(&msg, &len);
	if (f) {
		fprintf(f, "Process %" PRId64 " (", o->crash.pid);
		/* The comm is the process's own: no control bytes. */
		for (const char *c = comm ? comm : "?"; *c; c++)
			fputc((unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c,
			      f);
		fprintf(f, ") of user %" PRIu32 " dumped core.", o->crash.uid);
		if (ch->ids.bt.nthreads) {
			fputs("\n\n", f);
			ch_backtrace_text(&ch->ids.bt, f);
		}
		if (fclose(f) != 0) {
			free(msg);
			msg = NULL;
		}
	}
	add(r, "MESSAGE_ID=fc2e22bc6ee647b6b90729ab34a250b1");
	add(r, "PRIORITY=2");
	add(r, "SYSLOG_IDENTIFIER=kcoredump");
	add_str(r, "MESSAGE", msg);
	free(msg);
	add(r, "COREDUMP_PID=%" PRId64, o->crash.pid);
	add(r, "COREDUMP_UID=%" PRIu32, o->crash.uid);
	add(r, "COREDUMP_GID=%" PRIu32, o->crash.gid);
	add(r, "COREDUMP_SIGNAL=%d", ch->signal);
	add_str(r, "COREDUMP_SIGNAL_NAME", sig);
	add(r, "COREDUMP_TIMESTAMP=%" PRId64 "000000", o->crash.time);
	add_str(r, "COREDUMP_COMM", comm);
	add_str(r, "COREDUMP_EXE", ch->exe);
	if (x->cmdline)
		add(r, "COREDUMP_CMDLINE=%.*s", (int)x->cmdline_len,
		    x->cmdline);
	add_str(r, "COREDUMP_CWD", x->cwd);
	add_str(r, "COREDUMP_ROOT", x->root);
	add_str(r, "COREDUMP_CGROUP", x->cgroup);
	add_str(r, "COREDUMP_UNIT", x->unit);
	add_str(r, "COREDUMP_USER_UNIT", x->user_unit);
	add_str(r, "COREDUMP_SLICE", x->slice);
	add_str(r, "COREDUMP_SESSION", x->session);
	if (x->owner_uid >= 0)
		add(r, "COREDUMP_OWNER_UID=%" PRId64, x->owner_uid);
	add_str(r, "COREDUMP_HOSTNAME", x->hostname);
	if (x->boot_id[0]) { /* as sd_id128: 32 hex digits */
		char id[sizeof(x->boot_id)];
		size_t n = 0;

		for (const char *c = x->boot_id; *c && n + 1 < sizeof(id); c++)
			if (*c != '-')
				id[n++] = *c;
		id[n] = '\0';
		add_str(r, "COREDUMP_BOOT_ID", id);
	}
	add_str(r, "COREDUMP_MACHINE_ID", x->machine_id);
	for (size_t i = 0; i < ch->npkgs; i++) {
		const struct ch_package *p = &ch->pkgs[i];
		const char *mod = ch->ids.mods[p->module].name;

		/* systemd-coredump's: the executable's package. */
		if (!ch->exe || !mod || strcmp(mod, ch->exe) != 0)
			continue;
		add_str(r, "COREDUMP_PACKAGE_NAME", p->name);
		add_str(r, "COREDUMP_PACKAGE_VERSION", p->version);
		break;
	}
	if (r->reason != KCORE_CH_COMPLETE)
		add(r, "COREDUMP_TRUNCATED=1");
	dir = store_path(ch);
	if (dir)
		add(r, "COREDUMP_FILENAME=%s/%s%s%s", dir,
		    r->subdir ? r->subdir : "", r->subdir ? "/" : "",
		    r->core_name);
	free(dir);
	add_str(r, "KCOREDUMP_METADATA", r->meta_name);
}
