// SPDX-License-Identifier: MIT
/*
 * kcoredump show: the crash record of the stored cores that match (as
 * coredumpctl info), from the metadata core-handler wrote: who crashed,
 * how, when, where the core is, how complete it is, its build IDs;
 * what the handler read of the process (full command line, directories,
 * cgroup and units, limits, open files, packages); its environment to
 * root only.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kcoredump/json.h"
#include "kcoredump/corehandler.h"
#include "kcoredump/notes.h"
#include "store-match.h"

static const struct cli_option show_options[] = {
	{ "dir", 'D', CLI_ARG_REQUIRED, "DIR",
	  "the store (default /var/lib/kcoredump)", "@dir", 'D' },
	{ "since", 'S', CLI_ARG_REQUIRED, "TIME",
	  "only cores of crashes at or after TIME (as for list)", NULL, 'S' },
	{ "until", 'U', CLI_ARG_REQUIRED, "TIME",
	  "only cores of crashes at or before TIME", NULL, 'U' },
	{ "newest", '1', CLI_ARG_NONE, NULL, "only the newest matching core",
	  NULL, '1' },
	{ "json", 'j', CLI_ARG_NONE, NULL,
	  "the records as JSON: list's fields, the storage path and the "
	  "metadata document",
	  NULL, 'j' },
	CLI_OPT_QUIET("print only each core's path"),
	CLI_OPT_VERBOSE("also print the metadata record the handler wrote"),
	{ 0 },
};

static const char *value_end(const char *p);

/*
 * The raw value of a top-level key of the metadata (the handler writes
 * one key per line, two spaces in), up to the end of its line without the
 * comma, or for an array or object that goes on over the next lines (the
 * build IDs), up to its end; NULL if absent.  Strings keep their quotes
 * and escapes.
 */
static char *field(const char *json, const char *key)
{
	size_t klen = strlen(key);

	for (const char *line = json; line && *line;) {
		const char *next = strchr(line, '\n');
		size_t len = next ? (size_t)(next - line) : strlen(line);

		if (len > klen + 6 && strncmp(line, "  \"", 3) == 0 &&
		    strncmp(line + 3, key, klen) == 0 &&
		    strncmp(line + 3 + klen, "\": ", 3) == 0) {
			const char *v = line + 6 + klen;
			size_t vlen = len - 6 - klen;

			if (vlen && (v[0] == '[' || v[0] == '{') &&
			    v[vlen - 1] != ',' && v[vlen - 1] != v[0] + 2)
				vlen = (size_t)(value_end(v) - v);
			if (vlen && v[vlen - 1] == ',')
				vlen--;
			return strndup(v, vlen);
		}
		line = next ? next + 1 : NULL;
	}
	return NULL;
}

/* A field for the text: strings without their quotes (escapes kept, as
 * JSON wrote them: never raw control bytes), "-" when absent or null. */
static void row(const char *label, const char *json, const char *key)
{
	char *v = field(json, key);
	const char *s = v && strcmp(v, "null") != 0 ? v : "-";
	size_t len = strlen(s);

	if (len >= 2 && s[0] == '"' && s[len - 1] == '"')
		printf("%16s: %.*s\n", label, (int)(len - 2), s + 1);
	else
		printf("%16s: %s\n", label, cli_esc(s));
	free(v);
}

/* ---- walking the values of one metadata line (the handler's JSON) ---- */

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

/* The end of the JSON value at p (strings, nesting, scalars). */
static const char *value_end(const char *p)
{
	int depth = 0;
	bool str = false;

	for (; *p; p++) {
		if (str) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				str = false;
			if (!str && depth == 0)
				return p + 1;
			continue;
		}
		if (*p == '"')
			str = true;
		else if (*p == '{' || *p == '[')
			depth++;
		else if (*p == '}' || *p == ']') {
			if (depth == 0)
				return p;
			if (--depth == 0)
				return p + 1;
		} else if (*p == ',' && depth == 0)
			return p;
	}
	return p;
}

/*
 * The next element of the array or member of the object whose text
 * *pos is in (at its '[' or '{' first): its key (objects; raw, with
 * quotes) and value, false at the end.
 */
static bool next_item(const char **pos, const char **key, size_t *key_len,
		      const char **val, size_t *val_len)
{
	const char *p = skip_ws(*pos), *e;

	if (*p == '[' || *p == '{' || *p == ',')
		p = skip_ws(p + 1);
	if (!*p || *p == ']' || *p == '}')
		return false;
	if (key) {
		e = value_end(p);
		*key = p;
		*key_len = (size_t)(e - p);
		p = skip_ws(e);
		if (*p != ':')
			return false;
		p = skip_ws(p + 1);
	}
	e = value_end(p);
	*val = p;
	*val_len = (size_t)(e - p);
	*pos = e;
	return e > p;
}

/* A value for the text: a string's inside (its escapes kept, as the
 * handler wrote them), else the raw value, escaped for the terminal. */
static void put_value(const char *v, size_t len)
{
	char *t;

	if (len >= 2 && v[0] == '"' && v[len - 1] == '"') {
		printf("%.*s", (int)(len - 2), v + 1);
		return;
	}
	t = strndup(v, len);
	printf("%s", t ? cli_esc(t) : "?");
	free(t);
}

/* The raw value of key in the object text obj (len bytes), or NULL. */
static bool member(const char *obj, const char *name, const char **val,
		   size_t *val_len)
{
	const char *pos = obj, *k;
	size_t kl, nl = strlen(name);

	while (next_item(&pos, &k, &kl, val, val_len))
		if (kl == nl + 2 && k[0] == '"' && memcmp(k + 1, name, nl) == 0)
			return true;
	return false;
}

/* A row whose value is a string member, only when the record has it. */
static void row_if(const char *label, const char *json, const char *key)
{
	char *v = field(json, key);

	if (v && strcmp(v, "null") != 0) {
		printf("%16s: ", label);
		put_value(v, strlen(v));
		putchar('\n');
	}
	free(v);
}

/* Open FDs: "N:target" then its position and flags, as coredumpctl. */
static void show_fds(const char *json)
{
	char *v = field(json, "open_fds"), *t;
	const char *pos = v, *e, *x;
	size_t el, xl;
	int n = 0;

	while (v && next_item(&pos, NULL, NULL, &e, &el)) {
		t = strndup(e, el);
		if (!t)
			break;
		printf("%16s  ", n++ ? "" : "Open FDs:");
		if (member(t, "fd", &x, &xl))
			put_value(x, xl);
		putchar(':');
		if (member(t, "target", &x, &xl))
			put_value(x, xl);
		putchar('\n');
		if (member(t, "pos", &x, &xl)) {
			printf("%18spos:    ", "");
			put_value(x, xl);
			putchar('\n');
		}
		if (member(t, "flags", &x, &xl)) {
			printf("%18sflags:  ", "");
			put_value(x, xl);
			putchar('\n');
		}
		free(t);
	}
	free(v);
	v = field(json, "open_fds_truncated");
	if (v)
		printf("%18s(only the first %s)\n", "", cli_esc(v));
	free(v);
}

/* Limits: "open_files 1024 4096 files" (soft, hard, units). */
static void show_limits(const char *json)
{
	char *v = field(json, "rlimits"), *t;
	const char *pos = v, *k, *e, *x;
	size_t kl, el, xl;
	int n = 0;

	while (v && next_item(&pos, &k, &kl, &e, &el)) {
		t = strndup(e, el);
		if (!t)
			break;
		printf("%16s  ", n++ ? "" : "Limits:");
		put_value(k, kl);
		if (member(t, "soft", &x, &xl)) {
			printf(" soft ");
			put_value(x, xl);
		}
		if (member(t, "hard", &x, &xl)) {
			printf(" hard ");
			put_value(x, xl);
		}
		if (member(t, "units", &x, &xl)) {
			putchar(' ');
			put_value(x, xl);
		}
		putchar('\n');
		free(t);
	}
	free(v);
}

/* An array of strings, one a line (the environment). */
static void show_strings(const char *label, const char *json, const char *key)
{
	char *v = field(json, key);
	const char *pos = v, *e;
	size_t el;
	int n = 0;

	while (v && next_item(&pos, NULL, NULL, &e, &el)) {
		printf("%16s%s ", n ? "" : label, n ? " " : ":");
		n++;
		put_value(e, el);
		putchar('\n');
	}
	free(v);
}

/* Package: "name version (type)" of each module with a package note. */
static void show_packages(const char *json)
{
	char *v = field(json, "packages"), *t;
	const char *pos = v, *e, *x;
	size_t el, xl;
	size_t n = 0, count = 0;

	while (v && next_item(&pos, NULL, NULL, &e, &el))
		count++;
	pos = v;
	while (v && next_item(&pos, NULL, NULL, &e, &el)) {
		t = strndup(e, el);
		if (!t)
			break;
		printf("%16s  ", n++	     ? ""
				 : count > 1 ? "Packages:"
					     : "Package:");
		if (member(t, "name", &x, &xl))
			put_value(x, xl);
		if (member(t, "version", &x, &xl)) {
			putchar(' ');
			put_value(x, xl);
		}
		if (member(t, "type", &x, &xl)) {
			printf(" (");
			put_value(x, xl);
			putchar(')');
		}
		if (member(t, "file", &x, &xl)) {
			printf(" in ");
			put_value(x, xl);
		}
		putchar('\n');
		free(t);
	}
	free(v);
}

/* Whether the raw value v (len bytes) is the literal word. */
static bool is_word(const char *v, size_t len, const char *word)
{
	return len == strlen(word) && memcmp(v, word, len) == 0;
}

/*
 * Build IDs: one module a line, "PATH with build-id HEX" as coredumpctl
 * names them in its stack traces; why there are none when the handler
 * said so.
 */
static void show_build_ids(const char *json)
{
	char *v = field(json, "build_ids"), *t;
	const char *pos = v, *e, *x;
	size_t el, xl;
	int n = 0;

	while (v && next_item(&pos, NULL, NULL, &e, &el)) {
		t = strndup(e, el);
		if (!t)
			break;
		printf("%16s  ", n++ ? "" : "Build IDs:");
		if (member(t, "name", &x, &xl) && !is_word(x, xl, "null"))
			put_value(x, xl);
		else
			printf("(unnamed)");
		if (member(t, "build_id", &x, &xl) && !is_word(x, xl, "null")) {
			printf(" with build-id ");
			put_value(x, xl);
		} else {
			printf(" without build-id");
		}
		putchar('\n');
		free(t);
	}
	free(v);
	v = field(json, "build_ids_error");
	if (v && strcmp(v, "null") != 0) {
		printf("%16s  ", n++ ? "" : "Build IDs:");
		printf("(");
		put_value(v, strlen(v));
		printf(")\n");
	}
	free(v);
	if (!n)
		printf("%16s: -\n", "Build IDs");
}

/* A "0x..." string member of obj as a number (0 if absent). */
static uint64_t hex_member(const char *obj, const char *name)
{
	const char *x;
	size_t xl;

	if (!member(obj, name, &x, &xl) || xl < 4 || x[0] != '"')
		return 0;
	return strtoull(x + 1, NULL, 16);
}

/* The module's file name, without its directories (escapes kept). */
static void put_base_name(const char *v, size_t len)
{
	size_t start = 0;

	if (len >= 2 && v[0] == '"' && v[len - 1] == '"')
		for (size_t i = 1; i + 1 < len; i++)
			if (v[i] == '/')
				start = i;
	if (start)
		printf("%.*s", (int)(len - 2 - start), v + start + 1);
	else
		put_value(v, len);
}

/*
 * The backtrace the handler made at crash time, as systemd-coredump
 * prints its stack trace: "Stack trace of thread TID:" and a line per
 * frame, "#N  0xPC function (module + 0xOFFSET)".
 */
static void show_backtrace(const char *json)
{
	char *v = field(json, "backtrace"), *t;
	const char *threads, *pos, *e, *x;
	size_t el, xl, tl;

	if (!v)
		return;
	if (member(v, "error", &x, &xl) && !is_word(x, xl, "null")) {
		printf("%16s: (", "Backtrace");
		put_value(x, xl);
		printf(")\n");
	}
	if (!member(v, "threads", &threads, &tl)) {
		free(v);
		return;
	}
	pos = threads;
	while (next_item(&pos, NULL, NULL, &e, &el)) {
		const char *fpos, *fe;
		size_t fel, n = 0;

		t = strndup(e, el);
		if (!t)
			break;
		printf("%16s  Stack trace of thread ", "");
		if (member(t, "tid", &x, &xl))
			put_value(x, xl);
		printf(":\n");
		if (member(t, "frames", &fpos, &fel)) {
			while (next_item(&fpos, NULL, NULL, &fe, &fel)) {
				char *fr = strndup(fe, fel);

				if (!fr)
					break;
				printf("%16s  #%-2zu 0x%016" PRIx64 " ", "",
				       n++, hex_member(fr, "pc"));
				if (member(fr, "function", &x, &xl) &&
				    !is_word(x, xl, "null"))
					put_value(x, xl);
				else
					printf("n/a");
				if (member(fr, "module", &x, &xl) &&
				    !is_word(x, xl, "null")) {
					printf(" (");
					put_base_name(x, xl);
					printf(" + 0x%" PRIx64 ")",
					       hex_member(fr, "module_offset"));
				}
				putchar('\n');
				free(fr);
			}
		}
		if (member(t, "error", &x, &xl) && !is_word(x, xl, "null")) {
			printf("%16s  (unwinding stopped: ", "");
			put_value(x, xl);
			printf(")\n");
		}
		free(t);
	}
	free(v);
}

/* Access: who may read the core, and why, in words. */
static void show_access(const char *json, int64_t uid)
{
	char *v = field(json, "access");
	const char *x;
	size_t xl;

	printf("%16s: ", "Access");
	if (!v || strcmp(v, "null") == 0) {
		printf("-\n");
		free(v);
		return;
	}
	if (member(v, "user", &x, &xl) && is_word(x, xl, "true"))
		printf("root and the crashing user (uid %" PRId64 ")", uid);
	else
		printf("root only");
	if (member(v, "why", &x, &xl) && !is_word(x, xl, "null")) {
		printf(": ");
		put_value(x, xl);
	}
	if (member(v, "dump_mode", &x, &xl) && !is_word(x, xl, "null")) {
		printf(" (dump mode ");
		put_value(x, xl);
		putchar(')');
	}
	putchar('\n');
	free(v);
}

/*
 * Where the process ran, when that is not where the handler runs: its
 * pid in its own PID namespace, the namespaces that are not the
 * handler's (their ids), and the executable as the handler's file
 * system names it (the process's root, then its own path).
 */
static void show_container(const char *json, const char *exe)
{
	char *v = field(json, "received"), *ns = NULL, *root;
	const char *x, *pos, *e;
	size_t xl, el;
	int n = 0;

	if (!v)
		return;
	if (member(v, "in_container", &x, &xl) && is_word(x, xl, "true")) {
		printf("%16s: yes", "Container");
		if (member(v, "ns_pid", &x, &xl) && !is_word(x, xl, "null")) {
			printf(", PID ");
			put_value(x, xl);
			printf(" in its PID namespace");
		}
		putchar('\n');
	}
	if (member(v, "namespaces", &x, &xl) && x[0] == '{')
		ns = strndup(x, xl);
	if (ns && member(v, "namespaces_differ", &x, &xl)) {
		pos = x;
		while (next_item(&pos, NULL, NULL, &e, &el)) {
			char name[32];
			const char *id;
			size_t il;

			if (el < 3 || el - 2 >= sizeof(name) || e[0] != '"')
				continue;
			memcpy(name, e + 1, el - 2);
			name[el - 2] = '\0';
			if (!member(ns, name, &id, &il) ||
			    is_word(id, il, "null"))
				continue;
			printf("%16s  ", n++ ? "" : "Namespaces:");
			put_value(id, il);
			putchar('\n');
		}
	}
	free(ns);
	free(v);
	root = field(json, "root");
	if (root && exe && exe[0] == '/' && strlen(root) > 3 &&
	    strcmp(root, "\"/\"") != 0) {
		size_t rl = strlen(root);

		/* The root's inside, without a trailing '/'. */
		if (root[0] == '"' && root[rl - 1] == '"')
			printf("%16s: %.*s%s\n", "Host Executable",
			       (int)(rl - 2 - (root[rl - 2] == '/')), root + 1,
			       cli_esc(exe));
	}
	free(root);
}

/* The process's facts the handler could not read: each with the error,
 * then why (the kernel's access rule). */
static void show_unreadable(const char *json)
{
	char *v = field(json, "facts_unreadable"), *why;
	const char *pos = v, *k, *e;
	size_t kl, el;
	int n = 0;

	while (v && next_item(&pos, &k, &kl, &e, &el)) {
		if (!n++)
			printf("%16s: ", "Not Readable");
		else
			printf(", ");
		put_value(k, kl);
		printf(" (");
		put_value(e, el);
		putchar(')');
	}
	if (n)
		putchar('\n');
	free(v);
	why = field(json, "facts_unreadable_why");
	if (n && why && strcmp(why, "null") != 0) {
		printf("%16s  ", "");
		put_value(why, strlen(why));
		putchar('\n');
	}
	free(why);
}

static void show_one(const char *dir, const struct kcore_stored_core *c,
		     int verbosity)
{
	const char *sig = kcore_signal_name((int)c->signal);
	char when[32] = "-", s1[32], s2[32];
	time_t t = (time_t)c->time;
	struct tm tm;

	if (verbosity < 0) { /* -q: where the core is */
		printf("%s/%s%s%s\n", cli_esc(dir),
		       c->subdir ? cli_esc(c->subdir) : "",
		       c->subdir ? "/" : "",
		       cli_esc(c->core_name ? c->core_name : c->meta_name));
		return;
	}
	if (c->time >= 0 && gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	printf("%16s: %" PRId64 " (%s)\n", "PID", c->pid,
	       cli_esc(c->comm ? c->comm : "?"));
	printf("%16s: %" PRId64 "\n", "UID", c->uid);
	printf("%16s: %" PRId64 "\n", "GID", c->gid);
	printf("%16s: %" PRId64 " (%s)\n", "Signal", c->signal,
	       sig ? sig : "?");
	printf("%16s: %s\n", "Timestamp", when);
	{
		char *full = field(c->json, "cmdline");

		if (full)
			row("Command Line", c->json, "cmdline");
		else
			row("Command Line", c->json, "prpsinfo_args");
		free(full);
	}
	printf("%16s: %s\n", "Executable",
	       cli_esc(c->exe	 ? c->exe
		       : c->comm ? c->comm
				 : "-"));
	row_if("Facts Not Read", c->json, "facts_why_not");
	show_unreadable(c->json);
	show_container(c->json, c->exe);
	row_if("CWD", c->json, "cwd");
	row_if("Root", c->json, "root");
	row_if("Control Group", c->json, "cgroup");
	row_if("Unit", c->json, "unit");
	row_if("User Unit", c->json, "user_unit");
	row_if("Slice", c->json, "slice");
	row_if("Session", c->json, "session");
	row_if("Owner UID", c->json, "owner_uid");
	row_if("Boot ID", c->json, "boot_id");
	row_if("Machine ID", c->json, "machine_id");
	row_if("Hostname", c->json, "hostname");
	row("Threads", c->json, "threads");
	show_access(c->json, c->uid);
	printf("%16s: %s/%s%s%s (%s)\n", "Storage", cli_esc(dir),
	       c->subdir ? cli_esc(c->subdir) : "", c->subdir ? "/" : "",
	       cli_esc(c->core_name ? c->core_name : c->meta_name),
	       c->core_present ? "present" : "missing");
	printf("%16s: %s stream, %s stored\n", "Size",
	       cli_human_size(c->stream_bytes, s1, sizeof(s1)),
	       c->core_present
		       ? cli_human_size(c->allocated_bytes, s2, sizeof(s2))
		       : "-");
	row("Complete", c->json, "complete");
	row("Truncation", c->json, "truncation_reason");
	row("SHA256", c->json, "sha256");
	show_build_ids(c->json);
	row("Build IDs from", c->json, "build_ids_from");
	show_packages(c->json);
	if (c->journal_entry >= 0)
		printf("%16s: %s\n", "Journal",
		       c->journal_entry ? "an entry for coredumpctl"
					: "no entry");
	row_if("No Journal Entry", c->json, "journal_why_not");
	show_backtrace(c->json);
	show_limits(c->json);
	show_fds(c->json);
	/* The environment may hold secrets: root's eyes only. */
	if (geteuid() == 0)
		show_strings("Environment", c->json, "environ");
	if (verbosity > 0) /* -v: the record as the handler wrote it */
		printf("%16s: %s\n", "Record",
		       c->json ? cli_esc(c->json) : "-");
}

/* One record of show --json: list's fields, where the core is, and the
 * metadata document the handler wrote (null, with record_error, when it
 * is not valid JSON). */
static void show_json(struct kcore_json *j, const char *dir,
		      const struct kcore_stored_core *c)
{
	char *path = NULL;

	kcore_json_object_begin(j, NULL);
	store_json_core(j, c);
	if (asprintf(&path, "%s/%s%s%s", dir, c->subdir ? c->subdir : "",
		     c->subdir ? "/" : "",
		     c->core_name ? c->core_name : c->meta_name) > 0)
		kcore_json_string(j, "path", path);
	else
		kcore_json_null(j, "path");
	free(path);
	if (kcore_json_valid(c->json)) {
		kcore_json_raw(j, "record", c->json);
	} else {
		kcore_json_null(j, "record");
		kcore_json_string(j, "record_error",
				  "the metadata document is not valid JSON");
	}
	kcore_json_object_end(j);
}

static int cmd_show(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_command *cmd = &cli_cmd_show;
	struct cli_parser *p = cli_parser_create(cmd, argc, argv);
	const char *dir = "/var/lib/kcoredump", *arg;
	int64_t since = INT64_MIN, until = INT64_MAX;
	struct kcore_stored_core *cores;
	struct match *m = NULL;
	bool newest = false;
	int verbosity = 0;
	struct kcore_json j;
	size_t n, nm = 0, shown = 0, last = SIZE_MAX;
	int c, first, done, status = EXIT_OK;

	if (!p)
		return cli_fail(ctx, &kcore_error_nomem);
	while ((c = cli_parser_next(p, &arg)) >= 0) {
		if (c == 'D') {
			dir = arg;
		} else if (c == 'j') {
			ctx->json = true;
		} else if (c == 'S' || c == 'U') {
			done = store_opt_time(ctx, "show", c, arg, &since,
					      &until);
			if (done >= 0) {
				cli_parser_destroy(p);
				return done;
			}
		} else if (c == '1') {
			newest = true;
		} else if (c == 'q') {
			verbosity = -1;
		} else if (c == 'v') {
			verbosity = 1;
		}
	}
	done = cli_parser_end(p, c, &first);
	if (done >= 0)
		return done;
	done = store_args_matches(ctx, "show", argc, argv, first, &m, &nm);
	if (done >= 0)
		return done;
	done = store_load(ctx, dir, &cores, &n);
	if (done >= 0) {
		free(m);
		return done;
	}
	if (ctx->json) {
		kcore_json_init(&j, stdout);
		kcore_json_object_begin(&j, NULL);
		kcore_json_string(&j, "dir", dir);
		kcore_json_array_begin(&j, "cores");
	}
	for (size_t i = 0; i < n; i++) {
		if (cores[i].time < since || cores[i].time > until ||
		    !store_matches(&cores[i], m, nm))
			continue;
		last = i;
		if (newest)
			continue;
		if (ctx->json) {
			show_json(&j, dir, &cores[i]);
		} else {
			if (shown && verbosity >= 0)
				putchar('\n');
			show_one(dir, &cores[i], verbosity);
		}
		shown++;
	}
	if (newest && last != SIZE_MAX) {
		if (ctx->json)
			show_json(&j, dir, &cores[last]);
		else
			show_one(dir, &cores[last], verbosity);
		shown = 1;
	}
	if (ctx->json) {
		kcore_json_array_end(&j);
		kcore_json_object_end(&j);
		kcore_json_finish(&j);
	}
	if (!shown) {
		fprintf(stderr, "kcoredump show: no stored core matches\n");
		status = EXIT_FAILURE_;
	}
	if (fflush(stdout) != 0)
		status = cli_fail(ctx, kcore_error_create(KCORE_ERR_OS, errno,
							  "<stdout>",
							  "write failed"));
	free(m);
	kcore_stored_cores_free(cores, n);
	return status;
}

const struct cli_command cli_cmd_show = {
	.name = "show",
	.run = cmd_show,
	.options = show_options,
	.args = "[MATCH...]",
	.summary = "the crash record of stored cores (as coredumpctl info)",
};
