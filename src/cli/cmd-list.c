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
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kcoredump/json.h"
#include "kcoredump/corehandler.h"
#include "store-match.h"

static const struct cli_option list_options[] = {
	{ "dir", 'D', CLI_ARG_REQUIRED, "DIR",
	  "list the cores in DIR (default /var/lib/kcoredump)", "@dir", 'D' },
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
	/* -n and -r as coredumpctl's (dump's -n and -r are others). */
	{ "lines", 'n', CLI_ARG_REQUIRED, "N", "only the N newest cores", NULL,
	  'n' },
	{ "reverse", 'r', CLI_ARG_NONE, NULL, "newest first", NULL, 'r' },
	CLI_OPT_QUIET("print only the cores' paths, one a line (nothing when "
		      "there are none)"),
	CLI_OPT_VERBOSE("never fit the lines to the terminal: every column, "
			"whole paths"),
	{ 0 },
};

/* The width to fit lines to: $COLUMNS, else a terminal's, else none. */
static size_t output_width(void)
{
	const char *env = getenv("COLUMNS");
	struct winsize ws;
	uint64_t v;

	if (env && cli_parse_u64(env, &v) && v >= 20 && v < 10000)
		return (size_t)v;
	if (isatty(STDOUT_FILENO) &&
	    ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	return SIZE_MAX;
}

/*
 * One line per core, fitted to the width: the core's path last,
 * shortened in the middle ("...") so that its file name stays; then, when
 * even that does not fit, the line cut at the width.
 */
static void print_fitted(const char *head, const char *path, size_t width)
{
	size_t hl = strlen(head), pl = strlen(path);

	if (width == SIZE_MAX || hl + pl <= width) {
		printf("%s%s\n", head, path);
		return;
	}
	if (hl + 12 <= width) {
		size_t room = width - hl - 3, tail = room / 2;

		if (tail > pl)
			tail = pl;
		printf("%s%.*s...%s\n", head, (int)(room - tail), path,
		       path + pl - tail);
		return;
	}
	printf("%.*s\n", (int)width, head);
}

static size_t longest(char **s, size_t n)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++)
		if (s[i] && strlen(s[i]) > m)
			m = strlen(s[i]);
	return m;
}

/*
 * One line per core (coredumpctl's columns): TIME PID UID GID SIG STORED
 * STATUS CORE EXE.  Fitted to the terminal: without EXE (it is in --json
 * and show) when the line is too long, then with the paths inside the
 * store (named once above), then shortened.
 */
static void render_text(const char *dir,
			const struct kcore_stored_core *const *cores, size_t n,
			bool verbose)
{
	size_t width = verbose ? SIZE_MAX : output_width(), hl, pw;
	char head[256], **full = calloc(n + 1, sizeof(char *)),
			**rel = calloc(n + 1, sizeof(char *)),
			**exe = calloc(n + 1, sizeof(char *)), **paths;
	bool with_exe = true, relative = false;

	if (!full || !rel || !exe) {
		free(full);
		free(rel);
		free(exe);
		return;
	}
	snprintf(head, sizeof(head), "%-17s %7s %5s %5s %-4s %9s %-8s ", "TIME",
		 "PID", "UID", "GID", "SIG", "STORED", "STATUS");
	hl = strlen(head);
	full[n] = strdup("CORE");
	rel[n] = strdup("CORE");
	exe[n] = strdup("EXE");
	for (size_t i = 0; i < n; i++) {
		const struct kcore_stored_core *c = cores[i];
		char *p = store_core_path(dir, c);
		const char *name = c->core_name ? c->core_name : c->meta_name;

		full[i] = p ? cli_escape_dup(p) : NULL;
		free(p);
		p = malloc(strlen(name) + (c->subdir ? strlen(c->subdir) : 0) +
			   2);
		if (p)
			sprintf(p, "%s%s%s", c->subdir ? c->subdir : "",
				c->subdir ? "/" : "", name);
		rel[i] = p ? cli_escape_dup(p) : NULL;
		free(p);
		exe[i] = cli_escape_dup(c->exe	  ? c->exe
					: c->comm ? c->comm
						  : "-");
	}
	if (width != SIZE_MAX &&
	    hl + longest(full, n + 1) + 1 + longest(exe, n + 1) > width) {
		with_exe = false;
		relative = hl + longest(full, n + 1) > width;
	}
	paths = relative ? rel : full;
	pw = longest(paths, n + 1);
	if (relative)
		print_fitted("Cores in ", cli_esc(dir), width);
	for (size_t k = 0; k <= n; k++) {
		/* The header (k == 0), then the cores. */
		size_t i = k ? k - 1 : n;
		const char *path = paths[i] ? paths[i] : "?";
		char line[4096];

		if (k) {
			const struct kcore_stored_core *c = cores[i];
			char when[32] = "-", sz[32];
			time_t t = (time_t)c->time;
			struct tm tm;
			const char *sig = kcore_signal_name((int)c->signal);

			if (c->time >= 0 && gmtime_r(&t, &tm))
				strftime(when, sizeof(when), "%Y-%m-%dT%H:%MZ",
					 &tm);
			snprintf(head, sizeof(head),
				 "%-17s %7" PRId64 " %5" PRId64 " %5" PRId64
				 " %-4s %9s %-8s ",
				 when, c->pid, c->uid, c->gid,
				 sig ? sig + 3 : "?",
				 c->core_present
					 ? cli_human_size(c->allocated_bytes,
							  sz, sizeof(sz))
					 : "-",
				 !c->core_present ? "missing"
				 : c->reason	  ? cli_esc(c->reason)
						  : "?");
		}
		if (with_exe) {
			snprintf(line, sizeof(line), "%-*s %s", (int)pw, path,
				 exe[i] ? exe[i] : "?");
			path = line;
		}
		print_fitted(head, path, width);
	}
	for (size_t i = 0; i <= n; i++) {
		free(full[i]);
		free(rel[i]);
		free(exe[i]);
	}
	free(full);
	free(rel);
	free(exe);
}

static void render_json(const char *dir,
			const struct kcore_stored_core *const *cores, size_t n)
{
	struct kcore_json j;

	kcore_json_init(&j, stdout);
	kcore_json_object_begin(&j, NULL);
	kcore_json_string(&j, "dir", dir);
	kcore_json_array_begin(&j, "cores");
	for (size_t i = 0; i < n; i++) {
		char *path = store_core_path(dir, cores[i]);

		kcore_json_object_begin(&j, NULL);
		kcore_json_string(&j, "path", path);
		free(path);
		store_json_core(&j, cores[i]);
		kcore_json_object_end(&j);
	}
	kcore_json_array_end(&j);
	kcore_json_object_end(&j);
	kcore_json_finish(&j);
}

static int cmd_list(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_command *cmd = &cli_cmd_list;
	struct cli_parser *p = cli_parser_create(cmd, argc, argv);
	const char *dir = "/var/lib/kcoredump", *arg;
	struct kcore_stored_core *cores;
	const struct kcore_stored_core **shown = NULL;
	struct match *m = NULL;
	int64_t since = INT64_MIN, until = INT64_MAX, lines = -1;
	bool reverse = false;
	int verbosity = 0;
	size_t n, nm = 0, ns = 0;
	int c, first, done, status = EXIT_OK;

	if (!p)
		return cli_fail(ctx, &kcore_error_nomem);
	while ((c = cli_parser_next(p, &arg)) >= 0) {
		if (c == 'D') {
			dir = arg;
		} else if (c == 'j') {
			ctx->json = true;
		} else if (c == 'S' || c == 'U') {
			done = store_opt_time(ctx, "list", c, arg, &since,
					      &until);
			if (done >= 0) {
				cli_parser_destroy(p);
				return done;
			}
		} else if (c == '1') {
			lines = 1;
		} else if (c == 'n') {
			if (!store_parse_i64(arg, &lines) || lines < 0) {
				cli_parser_destroy(p);
				return cli_usage_error(ctx, "list",
						       "bad count '%s'", arg);
			}
		} else if (c == 'r') {
			reverse = true;
		} else if (c == 'q') {
			verbosity = -1;
		} else if (c == 'v') {
			verbosity = 1;
		}
	}
	done = cli_parser_end(p, c, &first);
	if (done >= 0)
		return done;
	done = store_args_matches(ctx, "list", argc, argv, first, &m, &nm);
	if (done >= 0)
		return done;
	done = store_load(ctx, dir, &cores, &n);
	if (done >= 0) {
		free(m);
		return done;
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
		    store_matches(&cores[i], m, nm))
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
	if (ctx->json) {
		render_json(dir, shown, ns);
	} else if (verbosity < 0) {
		for (size_t i = 0; i < ns; i++) {
			char *path = store_core_path(dir, shown[i]);

			printf("%s\n", path ? cli_esc(path) : "?");
			free(path);
		}
	} else if (ns) {
		render_text(dir, shown, ns, verbosity > 0);
	} else if (n)
		fprintf(stderr, "kcoredump: no stored core matches\n");
	else if (access(dir, F_OK) != 0)
		fprintf(stderr,
			"kcoredump: no cores: '%s' does not exist "
			"(core-handler "
			"has stored none there)\n",
			cli_esc(dir));
	else if (access(dir, R_OK | X_OK) != 0)
		fprintf(stderr,
			"kcoredump: no cores of yours in '%s' (uid %u; the "
			"cores of other users are root's)\n",
			cli_esc(dir), (unsigned)getuid());
	else
		fprintf(stderr, "kcoredump: no cores in '%s'\n", cli_esc(dir));
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
	.name = "list",
	.run = cmd_list,
	.options = list_options,
	.args = "[MATCH...]",
	.summary = "list the cores core-handler stored",
};
