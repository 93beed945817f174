// SPDX-License-Identifier: MIT
/*
 * kcoredump debug: a debugger on the newest stored core that matches (as
 * coredumpctl debug), with its executable when that is still there.  A
 * .zst/.xz core is extracted first into a private temporary directory,
 * removed when the debugger exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "kcoredump/corehandler.h"
#include "kcoredump/verify.h"
#include "store-match.h"

static const struct cli_option debug_options[] = {
	{ "dir", 'D', CLI_ARG_REQUIRED, "DIR",
	  "the store (default /var/lib/kcoredump)", "@dir", 'D' },
	{ "debugger", 0, CLI_ARG_REQUIRED, "PROG",
	  "the debugger: gdb (default), lldb, or a program called as gdb",
	  "gdb lldb", 1100 },
	{ "debugger-arguments", 'A', CLI_ARG_REQUIRED, "ARGS",
	  "more arguments for the debugger (split at spaces; quotes group)",
	  NULL, 'A' },
	CLI_OPT_QUIET("do not say which core the debugger runs on"),
	CLI_OPT_VERBOSE("also print the debugger's command line"),
	{ 0 },
};

/* ARGS split at blanks, '...' and "..." grouping; appended to argv. */
static size_t split_args(char *s, char **argv, size_t max)
{
	size_t n = 0;

	while (*s && n < max) {
		char *out = s, *start = s;

		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		start = out = s;
		while (*s && *s != ' ' && *s != '\t') {
			if (*s == '\'' || *s == '"') {
				char q = *s++;

				while (*s && *s != q)
					*out++ = *s++;
				if (*s)
					s++;
			} else {
				*out++ = *s++;
			}
		}
		if (*s)
			s++;
		*out = '\0';
		argv[n++] = start;
	}
	return n;
}

static int run_debugger(const char *debugger, char *extra, const char *exe,
			const char *core, bool verbose)
{
	char *argv[64];
	size_t n = 0;
	const char *base = strrchr(debugger, '/');
	bool lldb = strcmp(base ? base + 1 : debugger, "lldb") == 0;
	pid_t pid;
	int st;

	argv[n++] = (char *)debugger;
	if (extra)
		n += split_args(extra, argv + n, 48);
	if (lldb) {
		argv[n++] = (char *)"--core";
		argv[n++] = (char *)core;
		if (exe)
			argv[n++] = (char *)exe;
	} else {
		if (exe)
			argv[n++] = (char *)exe;
		argv[n++] = (char *)"-c";
		argv[n++] = (char *)core;
	}
	argv[n] = NULL;
	if (verbose) {
		fputs("kcoredump debug: running", stderr);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, " %s", cli_esc(argv[i]));
		fputc('\n', stderr);
	}
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		execvp(debugger, argv);
		fprintf(stderr, "kcoredump debug: cannot run '%s': %s\n",
			debugger, strerror(errno));
		_exit(127);
	}
	/* The debugger takes Ctrl-C; we wait for it. */
	signal(SIGINT, SIG_IGN);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	signal(SIGINT, SIG_DFL);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static bool compressed(const char *name)
{
	size_t len = strlen(name);

	return (len > 4 && strcmp(name + len - 4, ".zst") == 0) ||
	       (len > 3 && strcmp(name + len - 3, ".xz") == 0);
}

static int cmd_debug(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_parser *p = cli_parser_create(&cli_cmd_debug, argc, argv);
	const char *dir = "/var/lib/kcoredump", *debugger = "gdb", *arg;
	char *extra = NULL, core[PATH_MAX], tmpdir[PATH_MAX] = "",
	     plain[PATH_MAX + 8];
	struct kcore_stored_core *cores, *c = NULL;
	const char *exe = NULL;
	struct kcore_error *err;
	size_t n;
	int opt, first, done, status;
	bool quiet = false, verbose = false;

	if (!p)
		return cli_fail(ctx, &kcore_error_nomem);
	while ((opt = cli_parser_next(p, &arg)) >= 0) {
		if (opt == 'D')
			dir = arg;
		else if (opt == 1100)
			debugger = arg;
		else if (opt == 'A')
			extra = (char *)arg;
		else if (opt == 'q')
			quiet = true;
		else if (opt == 'v')
			verbose = true;
	}
	done = cli_parser_end(p, opt, &first);
	if (done >= 0)
		return done;
	done = store_newest_match(ctx, "debug", dir, argc, argv, first, &cores,
				  &n, &c);
	if (done >= 0)
		return done;
	if (!c) {
		fprintf(stderr, "kcoredump debug: no stored core matches\n");
		kcore_stored_cores_free(cores, n);
		return EXIT_FAILURE_;
	}
	snprintf(core, sizeof(core), "%s/%s%s%s", dir,
		 c->subdir ? c->subdir : "", c->subdir ? "/" : "",
		 c->core_name);
	/* The executable, when it is still where it was (not "(deleted)"). */
	if (c->exe && c->exe[0] == '/' && access(c->exe, R_OK) == 0)
		exe = c->exe;
	if (compressed(c->core_name)) {
		const char *t = getenv("TMPDIR");

		snprintf(tmpdir, sizeof(tmpdir), "%s/kcoredump-debug.XXXXXX",
			 t && *t ? t : "/var/tmp");
		if (!mkdtemp(tmpdir)) {
			err = kcore_error_create(KCORE_ERR_OS, errno, tmpdir,
						 "cannot make a directory");
			kcore_stored_cores_free(cores, n);
			return cli_fail(ctx, err);
		}
		snprintf(plain, sizeof(plain), "%s/core", tmpdir);
		err = kcore_extract(core, plain, false, cli_catch_signals(),
				    NULL);
		if (err) {
			unlink(plain);
			rmdir(tmpdir);
			kcore_stored_cores_free(cores, n);
			return cli_fail(ctx, err);
		}
	}
	if (!quiet)
		fprintf(stderr, "kcoredump debug: %s on %s%s%s\n", debugger,
			cli_esc(core), exe ? " with " : " (no executable)",
			exe ? cli_esc(exe) : "");
	status = run_debugger(debugger, extra, exe, tmpdir[0] ? plain : core,
			      verbose);
	if (status < 0) {
		fprintf(stderr, "kcoredump debug: cannot run '%s': %s\n",
			debugger, strerror(errno));
		status = EXIT_FAILURE_;
	}
	if (tmpdir[0]) {
		unlink(plain);
		rmdir(tmpdir);
	}
	kcore_stored_cores_free(cores, n);
	return status;
}

const struct cli_command cli_cmd_debug = {
	.name = "debug",
	.run = cmd_debug,
	.options = debug_options,
	.args = "[MATCH...]",
	.summary = "a debugger on the newest matching stored core (as "
		   "coredumpctl debug)",
};
