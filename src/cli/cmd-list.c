// SPDX-License-Identifier: MIT
/*
 * kcoredump list: the cores core-handler stored, from their metadata.
 * Root sees the whole store; a user who may not read it sees the cores
 * the handler let them read (the store's user.UID directory).  Names and
 * strings come from the crashing processes: escaped in the text output.
 * Matches and options follow coredumpctl list: PID, COMM, an executable's
 * path or FIELD=VALUE (matches of one field are alternatives, of several
 * fields all must hold), -S/-U, -1, -n N, -r.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "kcoredump/corehandler.h"

static const struct cli_option list_options[] = {
	{ "dir", 'd', CLI_ARG_REQUIRED, "DIR",
	  "list the cores in DIR (default /var/lib/kcoredump)", "@dir", 'd' },
	{ "json", 'j', CLI_ARG_NONE, NULL,
	  "print one JSON document instead of text", NULL, 'j' },
	{ "since", 'S', CLI_ARG_REQUIRED, "TIME",
	  "only cores of crashes at or after TIME (@EPOCH, YYYY-MM-DD[ "
	  "HH:MM[:SS]] UTC, today, yesterday, now)",
	  NULL, 'S' },
	{ "until", 'U', CLI_ARG_REQUIRED, "TIME",
	  "only cores of crashes at or before TIME", NULL, 'U' },
	{ "newest", '1', CLI_ARG_NONE, NULL, "only the newest core", NULL,
	  '1' },
	{ "lines", 'n', CLI_ARG_REQUIRED, "N", "only the N newest cores", NULL,
	  'n' },
	{ "reverse", 'r', CLI_ARG_NONE, NULL, "newest first", NULL, 'r' },
	{ 0 },
};

/* The fields a match can name (coredumpctl's, with or without the
 * journal's COREDUMP_ prefix). */
enum field { F_PID, F_UID, F_GID, F_SIGNAL, F_COMM, F_EXE, F_NUM };
static const char *const field_names[F_NUM] = { "PID",	  "UID",  "GID",
						"SIGNAL", "COMM", "EXE" };

struct match {
	enum field field;
	const char *value;
	int64_t num; /* PID, UID, GID, SIGNAL */
};

static bool parse_i64(const char *s, int64_t *ret)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (!*s || *end || errno)
		return false;
	*ret = v;
	return true;
}

/* SIGSEGV or SEGV: its number, else 0. */
static int signal_number(const char *s)
{
	for (int sig = 1; sig < 65; sig++) {
		const char *name = kcore_signal_name(sig);

		if (name &&
		    (strcmp(name, s) == 0 || (strncmp(name, "SIG", 3) == 0 &&
					      strcmp(name + 3, s) == 0)))
			return sig;
	}
	return 0;
}

/* One MATCH: a number is a PID, a path (with a slash) an executable, a
 * FIELD=VALUE a field, anything else a COMM.  false if it is bad. */
static bool parse_match(const char *arg, struct match *m)
{
	const char *eq = strchr(arg, '=');

	if (eq) {
		const char *name = arg;
		size_t len = (size_t)(eq - arg);

		if (len > 9 && strncmp(name, "COREDUMP_", 9) == 0) {
			name += 9;
			len -= 9;
		}
		for (int f = 0; f < F_NUM; f++) {
			if (strlen(field_names[f]) == len &&
			    strncmp(name, field_names[f], len) == 0) {
				m->field = (enum field)f;
				m->value = eq + 1;
				if (f == F_SIGNAL &&
				    !isdigit((unsigned char)eq[1])) {
					int sig = signal_number(eq + 1);

					m->num = sig;
					return sig > 0;
				}
				return f >= F_COMM ||
				       parse_i64(eq + 1, &m->num);
			}
		}
		return false;
	}
	m->value = arg;
	if (parse_i64(arg, &m->num)) {
		m->field = F_PID;
		return m->num > 0;
	}
	m->field = strchr(arg, '/') ? F_EXE : F_COMM;
	return *arg != '\0';
}

static bool match_one(const struct kcore_stored_core *c, const struct match *m)
{
	switch (m->field) {
	case F_PID:
		return c->pid == m->num;
	case F_UID:
		return c->uid == m->num;
	case F_GID:
		return c->gid == m->num;
	case F_SIGNAL:
		return c->signal == m->num;
	case F_COMM:
		return c->comm && strcmp(c->comm, m->value) == 0;
	case F_EXE:
		return c->exe && strcmp(c->exe, m->value) == 0;
	default:
		return false;
	}
}

/* Every field named holds for one of its matches. */
static bool matches(const struct kcore_stored_core *c, const struct match *m,
		    size_t n)
{
	for (int f = 0; f < F_NUM; f++) {
		bool named = false, hit = false;

		for (size_t i = 0; i < n; i++) {
			if (m[i].field != (enum field)f)
				continue;
			named = true;
			hit = hit || match_one(c, &m[i]);
		}
		if (named && !hit)
			return false;
	}
	return true;
}

/*
 * TIME for -S/-U, in seconds since the epoch: @EPOCH, now, today,
 * yesterday (midnight UTC), YYYY-MM-DD, YYYY-MM-DD HH:MM[:SS] (also with
 * a T, and a trailing Z): UTC, as the table shows.  until: a date alone
 * means its end.
 */
static bool parse_time(const char *s, bool until, int64_t *ret)
{
	time_t now = time(NULL);
	int y, mo, d, h = 0, mi = 0, sec = 0, n = 0;
	struct tm tm = { 0 };
	char sep = 0;
	bool date_only;

	if (s[0] == '@')
		return parse_i64(s + 1, ret);
	if (strcmp(s, "now") == 0) {
		*ret = (int64_t)now;
		return true;
	}
	if (strcmp(s, "today") == 0 || strcmp(s, "yesterday") == 0) {
		int64_t day = (int64_t)now - (int64_t)now % 86400;

		if (s[0] == 'y')
			day -= 86400;
		*ret = until ? day + 86399 : day;
		return true;
	}
	if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3)
		return false;
	date_only = s[n] == '\0';
	if (!date_only) {
		int m2 = 0;

		sep = s[n];
		if ((sep != ' ' && sep != 'T') ||
		    sscanf(s + n + 1, "%2d:%2d%n", &h, &mi, &m2) != 2)
			return false;
		n += 1 + m2;
		if (s[n] == ':') {
			int m3 = 0;

			if (sscanf(s + n + 1, "%2d%n", &sec, &m3) != 1)
				return false;
			n += 1 + m3;
		}
		if (s[n] == 'Z')
			n++;
		if (s[n])
			return false;
	}
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
	    sec > 60 || h < 0 || mi < 0 || sec < 0)
		return false;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	*ret = (int64_t)timegm(&tm);
	if (date_only && until)
		*ret += 86399;
	return true;
}

static void render_text(const struct kcore_stored_core *const *cores, size_t n)
{
	printf("%-20s %8s %6s %6s %-8s %10s %10s %-12s %-40s %s\n", "TIME",
	       "PID", "UID", "GID", "SIGNAL", "STREAM", "STORED", "STATUS",
	       "CORE", "EXE");
	for (size_t i = 0; i < n; i++) {
		const struct kcore_stored_core *c = cores[i];
		char when[32] = "-", s1[32], s2[32], name[512];
		time_t t = (time_t)c->time;
		struct tm tm;
		const char *sig = kcore_signal_name((int)c->signal);

		if (c->time >= 0 && gmtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		snprintf(name, sizeof(name), "%s%s%s",
			 c->subdir ? cli_esc(c->subdir) : "",
			 c->subdir ? "/" : "",
			 cli_esc(c->core_name ? c->core_name : c->meta_name));
		printf("%-20s %8" PRId64 " %6" PRId64 " %6" PRId64 " %-8s "
		       "%10s %10s %-12s %-40s ",
		       when, c->pid, c->uid, c->gid, sig ? sig : "?",
		       cli_human_size(c->stream_bytes, s1, sizeof(s1)),
		       c->core_present ? cli_human_size(c->allocated_bytes, s2,
							sizeof(s2))
				       : "-",
		       !c->core_present ? "missing"
		       : c->reason	? cli_esc(c->reason)
					: "?",
		       name);
		printf("%s\n", c->exe || c->comm
				       ? cli_esc(c->exe ? c->exe : c->comm)
				       : "-");
	}
}

static void render_json(const char *dir,
			const struct kcore_stored_core *const *cores, size_t n)
{
	struct json j;

	json_init(&j, stdout);
	json_object_begin(&j, NULL);
	json_string(&j, "dir", dir);
	json_array_begin(&j, "cores");
	for (size_t i = 0; i < n; i++) {
		const struct kcore_stored_core *c = cores[i];

		json_object_begin(&j, NULL);
		json_string(&j, "core", c->core_name);
		json_string(&j, "metadata", c->meta_name);
		json_string(&j, "subdir", c->subdir);
		json_bool(&j, "core_present", c->core_present);
		json_i64(&j, "pid", c->pid);
		json_i64(&j, "uid", c->uid);
		json_i64(&j, "gid", c->gid);
		json_i64(&j, "signal", c->signal);
		json_i64(&j, "time", c->time);
		json_string(&j, "comm", c->comm);
		json_string(&j, "executable", c->exe);
		json_u64(&j, "stream_bytes", c->stream_bytes);
		json_u64(&j, "file_size", c->file_size);
		json_u64(&j, "allocated_bytes", c->allocated_bytes);
		json_string(&j, "status", c->reason);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
	json_finish(&j);
}

static int cmd_list(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_command *cmd = &cli_cmd_list;
	struct cli_parser *p = cli_parser_create(cmd, argc, argv);
	const char *dir = "/var/lib/kcoredump", *arg;
	struct kcore_stored_core *cores;
	const struct kcore_stored_core **shown = NULL;
	struct match *m = NULL;
	struct kcore_error *err;
	int64_t since = INT64_MIN, until = INT64_MAX, lines = -1;
	bool reverse = false;
	size_t n, nm = 0, ns = 0;
	int c, first, done, fd, status = EXIT_OK;

	if (!p)
		return cli_fail(ctx, &kcore_error_nomem);
	while ((c = cli_parser_next(p, &arg)) >= 0) {
		if (c == 'd') {
			dir = arg;
		} else if (c == 'j') {
			ctx->json = true;
		} else if (c == 'S' || c == 'U') {
			if (!parse_time(arg, c == 'U',
					c == 'S' ? &since : &until))
				return cli_usage_error(
					ctx, "list",
					"bad time '%s' (@EPOCH, YYYY-MM-DD[ "
					"HH:MM[:SS]], today, yesterday, now)",
					arg);
		} else if (c == '1') {
			lines = 1;
		} else if (c == 'n') {
			if (!parse_i64(arg, &lines) || lines < 0)
				return cli_usage_error(ctx, "list",
						       "bad count '%s'", arg);
		} else if (c == 'r') {
			reverse = true;
		}
	}
	done = cli_parser_end(p, c, &first);
	if (done >= 0)
		return done;
	if (argc > first) {
		m = calloc((size_t)(argc - first), sizeof(*m));
		if (!m)
			return cli_fail(ctx, &kcore_error_nomem);
	}
	for (int i = first; i < argc; i++) {
		if (!parse_match(argv[i], &m[nm])) {
			free(m);
			return cli_usage_error(
				ctx, "list",
				"bad match '%s' (PID, COMM, /path/of/exe or "
				"FIELD=VALUE with FIELD one of PID UID GID "
				"SIGNAL COMM EXE)",
				argv[i]);
		}
		nm++;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == EACCES) {
		/* Not root: the cores we may read, if any. */
		char *mine = NULL;

		if (asprintf(&mine, "%s/user.%u", dir, (unsigned)getuid()) > 0)
			fd = open(mine, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		free(mine);
		if (fd < 0)
			errno = EACCES;
	}
	if (fd < 0)
		return cli_fail(
			ctx, kcore_error_create(
				     errno == ENOENT   ? KCORE_ERR_NOT_FOUND
				     : errno == EACCES ? KCORE_ERR_ACCESS
						       : KCORE_ERR_OS,
				     errno, dir, "cannot open the directory"));
	err = kcore_coredir_list(fd, &cores, &n);
	close(fd);
	if (err) {
		free(m);
		return cli_fail(ctx, err);
	}
	shown = calloc(n ? n : 1, sizeof(*shown));
	if (!shown) {
		free(m);
		kcore_stored_cores_free(cores, n);
		return cli_fail(ctx, &kcore_error_nomem);
	}
	/* Oldest first; -n/-1 keep the newest, -r turns them around. */
	for (size_t i = 0; i < n; i++)
		if (cores[i].time >= since && cores[i].time <= until &&
		    matches(&cores[i], m, nm))
			shown[ns++] = &cores[i];
	if (lines >= 0 && (uint64_t)lines < ns) {
		memmove(shown, shown + (ns - (size_t)lines),
			(size_t)lines * sizeof(*shown));
		ns = (size_t)lines;
	}
	for (size_t i = 0; reverse && i < ns / 2; i++) {
		const struct kcore_stored_core *t = shown[i];

		shown[i] = shown[ns - 1 - i];
		shown[ns - 1 - i] = t;
	}
	if (ctx->json)
		render_json(dir, shown, ns);
	else
		render_text(shown, ns);
	if (fflush(stdout) != 0)
		status = cli_fail(ctx, kcore_error_create(KCORE_ERR_OS, errno,
							  "<stdout>",
							  "write failed"));
	free(shown);
	free(m);
	kcore_stored_cores_free(cores, n);
	return status;
}

const struct cli_command cli_cmd_list = {
	"list",	      cmd_list, list_options,
	"[MATCH...]", NULL,	"list the cores core-handler stored",
	false
};
