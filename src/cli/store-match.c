// SPDX-License-Identifier: MIT
/*
 * Matches on the stored cores' metadata, shared by list and show (see
 * store-match.h): as coredumpctl's, matches of one field are
 * alternatives, of several fields all must hold.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kcoredump/notes.h"
#include "cli.h"
#include "kcoredump/json.h"
#include "store-match.h"

static const char *const field_names[F_NUM] = { "PID",	  "UID",  "GID",
						"SIGNAL", "COMM", "EXE" };

bool store_parse_i64(const char *s, int64_t *ret)
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
bool store_parse_match(const char *arg, struct match *m)
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
				m->field = (enum store_field)f;
				m->value = eq + 1;
				if (f == F_SIGNAL &&
				    !isdigit((unsigned char)eq[1])) {
					int sig = signal_number(eq + 1);

					m->num = sig;
					return sig > 0;
				}
				return f >= F_COMM ||
				       store_parse_i64(eq + 1, &m->num);
			}
		}
		return false;
	}
	m->value = arg;
	if (store_parse_i64(arg, &m->num)) {
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
bool store_matches(const struct kcore_stored_core *c, const struct match *m,
		   size_t n)
{
	for (int f = 0; f < F_NUM; f++) {
		bool named = false, hit = false;

		for (size_t i = 0; i < n; i++) {
			if (m[i].field != (enum store_field)f)
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
bool store_parse_time(const char *s, bool until, int64_t *ret)
{
	time_t now = time(NULL);
	int y, mo, d, h = 0, mi = 0, sec = 0, n = 0;
	struct tm tm = { 0 };
	char sep = 0;
	bool date_only;

	if (s[0] == '@')
		return store_parse_i64(s + 1, ret);
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

int store_opt_time(struct cli_ctx *ctx, const char *cmd, int opt,
		   const char *arg, int64_t *since, int64_t *until)
{
	if (store_parse_time(arg, opt == 'U', opt == 'S' ? since : until))
		return -1;
	return cli_usage_error(ctx, cmd,
			       "bad time '%s' (@EPOCH, YYYY-MM-DD[ "
			       "HH:MM[:SS]], today, yesterday, now)",
			       arg);
}

int store_args_matches(struct cli_ctx *ctx, const char *cmd, int argc,
		       char **argv, int first, struct match **ret,
		       size_t *ret_n)
{
	struct match *m = NULL;
	size_t n = 0;

	if (argc > first) {
		m = calloc((size_t)(argc - first), sizeof(*m));
		if (!m)
			return cli_fail(ctx, &kcore_error_nomem);
	}
	for (int i = first; i < argc; i++) {
		if (!store_parse_match(argv[i], &m[n])) {
			free(m);
			return cli_usage_error(
				ctx, cmd,
				"bad match '%s' (PID, COMM, /path/of/exe or "
				"FIELD=VALUE with FIELD one of PID UID GID "
				"SIGNAL COMM EXE)",
				argv[i]);
		}
		n++;
	}
	*ret = m;
	*ret_n = n;
	return -1;
}

int store_load(struct cli_ctx *ctx, const char *dir,
	       struct kcore_stored_core **ret, size_t *ret_n)
{
	struct kcore_error *err;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char mine[32] = "";

	if (fd < 0 && errno == EACCES) {
		/* Not root: the cores we may read, if any. */
		char *path = NULL;

		snprintf(mine, sizeof(mine), "user.%u", (unsigned)getuid());
		if (asprintf(&path, "%s/%s", dir, mine) > 0)
			fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		free(path);
		if (fd < 0 && errno == ENOENT) {
			/* The handler let us read none of its cores. */
			*ret = NULL;
			*ret_n = 0;
			return -1;
		}
		if (fd < 0)
			errno = EACCES;
	}
	if (fd < 0 && errno == ENOENT) {
		/* No core was ever stored there. */
		*ret = NULL;
		*ret_n = 0;
		return -1;
	}
	if (fd < 0)
		return cli_fail(ctx, kcore_error_create(
					     errno == EACCES ? KCORE_ERR_ACCESS
							     : KCORE_ERR_OS,
					     errno, dir,
					     "cannot open the directory"));
	err = kcore_coredir_list(fd, ret, ret_n);
	close(fd);
	if (err)
		return cli_fail(ctx, err);
	/* Listed from inside user.UID: the cores are in it. */
	for (size_t i = 0; mine[0] && i < *ret_n; i++) {
		if ((*ret)[i].subdir)
			continue;
		(*ret)[i].subdir = strdup(mine);
		if (!(*ret)[i].subdir) {
			kcore_stored_cores_free(*ret, *ret_n);
			return cli_fail(ctx, &kcore_error_nomem);
		}
	}
	return -1;
}

char *store_core_path(const char *dir, const struct kcore_stored_core *c)
{
	const char *name = c->core_name ? c->core_name : c->meta_name;
	size_t len = strlen(dir) + (c->subdir ? strlen(c->subdir) : 0) +
		     strlen(name) + 3;
	char *s = malloc(len);

	if (s)
		snprintf(s, len, "%s%s%s%s%s", dir,
			 dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/",
			 c->subdir ? c->subdir : "", c->subdir ? "/" : "",
			 name);
	return s;
}

void store_json_core(struct kcore_json *j, const struct kcore_stored_core *c)
{
	kcore_json_string(j, "core", c->core_name);
	kcore_json_string(j, "metadata", c->meta_name);
	kcore_json_string(j, "subdir", c->subdir);
	kcore_json_bool(j, "core_present", c->core_present);
	kcore_json_i64(j, "pid", c->pid);
	kcore_json_i64(j, "uid", c->uid);
	kcore_json_i64(j, "gid", c->gid);
	kcore_json_i64(j, "signal", c->signal);
	kcore_json_i64(j, "time", c->time);
	kcore_json_string(j, "comm", c->comm);
	kcore_json_string(j, "executable", c->exe);
	kcore_json_u64(j, "stream_bytes", c->stream_bytes);
	kcore_json_u64(j, "file_size", c->file_size);
	kcore_json_u64(j, "allocated_bytes", c->allocated_bytes);
	kcore_json_string(j, "status", c->reason);
	kcore_json_string(j, "crash_frame", c->crash_frame);
	if (c->journal_entry >= 0)
		kcore_json_bool(j, "journal_entry", c->journal_entry);
	else
		kcore_json_null(j, "journal_entry");
}

int store_newest_match(struct cli_ctx *ctx, const char *cmd, const char *dir,
		       int argc, char **argv, int first,
		       struct kcore_stored_core **ret_cores, size_t *ret_n,
		       struct kcore_stored_core **ret_core)
{
	struct match *m = NULL;
	size_t nm = 0;
	int done;

	*ret_core = NULL;
	done = store_args_matches(ctx, cmd, argc, argv, first, &m, &nm);
	if (done >= 0)
		return done;
	done = store_load(ctx, dir, ret_cores, ret_n);
	if (done >= 0) {
		free(m);
		return done;
	}
	/* The store lists the oldest first: the last match is the
	 * newest. */
	for (size_t i = 0; i < *ret_n; i++)
		if (store_matches(&(*ret_cores)[i], m, nm) &&
		    (*ret_cores)[i].core_name && (*ret_cores)[i].core_present)
			*ret_core = &(*ret_cores)[i];
	free(m);
	return -1;
}
