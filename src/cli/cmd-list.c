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
#include "store-match.h"

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
		json_object_begin(&j, NULL);
		store_json_core(&j, cores[i]);
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
	int64_t since = INT64_MIN, until = INT64_MAX, lines = -1;
	bool reverse = false;
	size_t n, nm = 0, ns = 0;
	int c, first, done, status = EXIT_OK;

	if (!p)
		return cli_fail(ctx, &kcore_error_nomem);
	while ((c = cli_parser_next(p, &arg)) >= 0) {
		if (c == 'd') {
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
