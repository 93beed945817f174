// SPDX-License-Identifier: MIT
/*
 * kcoredump core-handler: the program named in /proc/sys/kernel/core_pattern
 * ("|/usr/bin/kcoredump core-handler --dump-mode=%d [OPTIONS] %P %u %g %s
 * %t %e").  The kernel runs it as root with the core on stdin and no other
 * descriptors open: no terminal, no shell, no PATH.  Messages go to the
 * kernel log (/dev/kmsg) then, else to stderr, with control characters
 * escaped (comm and paths are the crashing process's choice).
 *
 * Options come before the kernel's arguments; %e, the task's comm, is
 * whatever the process named itself (PR_SET_NAME), "--dir=/etc" too, so
 * nothing from the first positional argument on is read as an option.
 * Linux 5.3 and later split the pattern at spaces before expanding it:
 * %e is one argument; before, a name with spaces arrives as several
 * words after %t, which are joined back into the name.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kcoredump/corehandler.h"

#define DEFAULT_DIR		 "/var/lib/kcoredump"
#define DEFAULT_TIMEOUT		 300
#define DEFAULT_HANDLERS	 16
#define DEFAULT_BUILD_ID_TIMEOUT 10
/* The kernel's CORENAME_MAX_SIZE, with its NUL. */
#define CORE_PATTERN_MAX 127

enum {
	OPT_MAX_SIZE = 1200,
	OPT_KEEP_FREE,
	OPT_MAX_USE,
	OPT_OWNER,
	OPT_INSTALL,
	OPT_PRINT_PATTERN,
	OPT_NO_SYNC,
	OPT_NO_PAGEMAP,
	OPT_DUMP_MODE,
	OPT_MAX_HANDLERS,
	OPT_BUILD_ID_TIMEOUT,
	OPT_MAX_CORES,
	OPT_MAX_CORES_PER_USER,
};

static const struct cli_option core_handler_options[] = {
	{ "dir", 'd', CLI_ARG_REQUIRED, "DIR",
	  "store cores in DIR (default " DEFAULT_DIR ")", "@dir", 'd' },
	{ "compress", 'c', CLI_ARG_REQUIRED, "METHOD",
	  "none (sparse ELF, the default), zstd or xz", "none zstd xz", 'c' },
	{ "max-size", 0, CLI_ARG_REQUIRED, "SIZE",
	  "store at most SIZE bytes of a core (then truncate it)", NULL,
	  OPT_MAX_SIZE },
	{ "keep-free", 0, CLI_ARG_REQUIRED, "SIZE",
	  "leave SIZE bytes free on the file system", NULL, OPT_KEEP_FREE },
	{ "max-use", 0, CLI_ARG_REQUIRED, "SIZE",
	  "let all stored cores take at most SIZE bytes (oldest removed)", NULL,
	  OPT_MAX_USE },
	{ "max-cores", 0, CLI_ARG_REQUIRED, "N",
	  "keep at most N cores in the store (oldest removed; default no "
	  "limit)",
	  NULL, OPT_MAX_CORES },
	{ "max-cores-per-user", 0, CLI_ARG_REQUIRED, "N",
	  "keep at most N cores of one crashing user (its oldest removed; "
	  "default no limit)",
	  NULL, OPT_MAX_CORES_PER_USER },
	{ "timeout", 't', CLI_ARG_REQUIRED, "SECONDS",
	  "stop reading after SECONDS (default 300; 0 = never)", NULL, 't' },
	{ "owner", 0, CLI_ARG_REQUIRED, "OWNER",
	  "root (the default): files root's only; user: the crashing user "
	  "may read its core when the process ran with its own credentials",
	  "root user", OPT_OWNER },
	{ "dump-mode", 0, CLI_ARG_REQUIRED, "MODE",
	  "the kernel's %d (0, 1 or 2): 1 lets --owner user apply", NULL,
	  OPT_DUMP_MODE },
	{ "max-handlers", 0, CLI_ARG_REQUIRED, "N",
	  "at most N handlers store at once; others store nothing "
	  "(default 16)",
	  NULL, OPT_MAX_HANDLERS },
	{ "build-id-timeout", 0, CLI_ARG_REQUIRED, "SECONDS",
	  "time for the sandboxed build-ID helper (default 10; 0 = no build "
	  "IDs)",
	  NULL, OPT_BUILD_ID_TIMEOUT },
	{ "no-sync", 0, CLI_ARG_NONE, NULL,
	  "do not fsync the core before publishing it", NULL, OPT_NO_SYNC },
	{ "no-pagemap", 0, CLI_ARG_NONE, NULL,
	  "read every zero of the stream, even where the crashing process's "
	  "page tables say it holds nothing",
	  NULL, OPT_NO_PAGEMAP },
	{ "install", 0, CLI_ARG_NONE, NULL,
	  "write the handler line into /proc/sys/kernel/core_pattern", NULL,
	  OPT_INSTALL },
	{ "print-pattern", 0, CLI_ARG_NONE, NULL,
	  "print the core_pattern line for this binary and options", NULL,
	  OPT_PRINT_PATTERN },
	{ 0 },
};

static bool use_kmsg;

/* Without a terminal the kernel log is where an administrator looks. */
static void fix_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		int nfd;

		if (fcntl(fd, F_GETFD) >= 0)
			continue;
		nfd = -1;
		if (fd == 2) {
			nfd = open("/dev/kmsg",
				   O_WRONLY | O_CLOEXEC | O_NOCTTY);
			use_kmsg = nfd >= 0;
		}
		if (nfd < 0)
			nfd = open("/dev/null", fd ? O_WRONLY : O_RDONLY);
		if (nfd >= 0 && nfd != fd) {
			dup2(nfd, fd);
			close(nfd);
		}
	}
}

static void log_line(void *arg, int priority, const char *msg)
{
	/* comm and paths come from the crashing process: no escape
	 * sequences for the console, no fake second record. */
	char *safe = cli_escape_dup(msg);
	char line[1024];
	int n;

	if (use_kmsg)
		/* One write() is one kernel log record. */
		n = snprintf(line, sizeof(line), "<%d>kcoredump[%d]: %s\n",
			     priority, (int)getpid(), safe ? safe : "?");
	else
		n = snprintf(line, sizeof(line), "kcoredump: %s\n",
			     safe ? safe : "?");
	free(safe);
	if (n >= (int)sizeof(line)) {
		n = sizeof(line);
		line[n - 1] = '\n';
	}
	if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

static int fail(struct kcore_error *err)
{
	char *msg = kcore_error_describe(err);
	int status = cli_exit_status(err);

	log_line(NULL, 3, msg ? msg : "out of memory");
	free(msg);
	kcore_error_destroy(err);
	return status;
}

static bool parse_i64(const char *s, int64_t *ret)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return false;
	*ret = v;
	return true;
}

/* Something the kernel would split or expand in core_pattern. */
static bool pattern_safe(const char *s)
{
	for (; *s; s++)
		if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '%' ||
		    (unsigned char)*s < 0x20)
			return false;
	return true;
}

struct pattern_args {
	const char *dir, *compress, *max_size, *keep_free, *max_use, *timeout,
		*owner, *max_handlers, *build_id_timeout, *max_cores,
		*max_cores_per_user;
	bool no_sync, no_pagemap;
};

/*
 * systemd-coredump's defaults (coredump.conf(5)), for limits not given:
 * MaxUse 10% and KeepFree 15% of the store's file system, each at most
 * 4 GiB (MaxUse at least 1 MiB).
 */
static void default_limits(int dir_fd, struct kcore_ch_opts *o,
			   bool have_max_use, bool have_keep_free)
{
	struct statvfs sv;
	uint64_t fs;

	if (fstatvfs(dir_fd, &sv) < 0)
		return;
	fs = (uint64_t)sv.f_blocks * sv.f_frsize;
	if (!have_max_use) {
		o->max_use = fs / 10 / 4096 * 4096;
		if (o->max_use > (4ull << 30))
			o->max_use = 4ull << 30;
		if (o->max_use < (1u << 20))
			o->max_use = 1u << 20;
	}
	if (!have_keep_free) {
		o->keep_free = fs * 3 / 20 / 4096 * 4096;
		if (o->keep_free > (4ull << 30))
			o->keep_free = 4ull << 30;
	}
}

static int build_pattern(const struct pattern_args *a, char *out, size_t size)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const struct {
		const char *opt, *val;
	} opts[] = {
		{ "--dir", a->dir },
		{ "--compress", a->compress },
		{ "--max-size", a->max_size },
		{ "--keep-free", a->keep_free },
		{ "--max-use", a->max_use },
		{ "--timeout", a->timeout },
		{ "--owner", a->owner },
		{ "--max-handlers", a->max_handlers },
		{ "--build-id-timeout", a->build_id_timeout },
		{ "--max-cores", a->max_cores },
		{ "--max-cores-per-user", a->max_cores_per_user },
	};
	size_t len;

	if (n <= 0) {
		fprintf(stderr, "kcoredump core-handler: cannot read "
				"/proc/self/exe\n");
		return EXIT_FAILURE_;
	}
	exe[n] = '\0';
	if (exe[0] != '/' || !pattern_safe(exe) || strstr(exe, " (deleted)")) {
		fprintf(stderr,
			"kcoredump core-handler: '%s' cannot be named in "
			"core_pattern (it needs an absolute path without "
			"spaces or '%%')\n",
			cli_esc(exe));
		return EXIT_USAGE;
	}
	/* Options first: nothing after %P is read as one. */
	len = (size_t)snprintf(out, size, "|%s core-handler --dump-mode=%%d",
			       exe);
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		if (!opts[i].val)
			continue;
		if (!pattern_safe(opts[i].val)) {
			fprintf(stderr,
				"kcoredump core-handler: %s '%s' cannot be "
				"named in core_pattern (spaces or '%%')\n",
				opts[i].opt, cli_esc(opts[i].val));
			return EXIT_USAGE;
		}
		if (len < size)
			len += (size_t)snprintf(out + len, size - len, " %s %s",
						opts[i].opt, opts[i].val);
	}
	if (a->no_sync && len < size)
		len += (size_t)snprintf(out + len, size - len, " --no-sync");
	if (a->no_pagemap && len < size)
		len += (size_t)snprintf(out + len, size - len, " --no-pagemap");
	if (len < size)
		len += (size_t)snprintf(out + len, size - len,
					" %%P %%u %%g %%s %%t %%e");
	if (len > CORE_PATTERN_MAX) {
		fprintf(stderr,
			"kcoredump core-handler: the pattern is %zu bytes; the "
			"kernel takes at most %d: %s\n",
			len, CORE_PATTERN_MAX, out);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

static int install_pattern(const char *pattern)
{
	int fd = open("/proc/sys/kernel/core_pattern",
		      O_WRONLY | O_CLOEXEC | O_NOCTTY);
	size_t len = strlen(pattern);

	if (fd < 0 || write(fd, pattern, len) != (ssize_t)len) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		fprintf(stderr,
			"kcoredump core-handler: cannot write "
			"/proc/sys/kernel/core_pattern: %s\n",
			strerror(e));
		return e == EACCES || e == EPERM || e == EROFS ? EXIT_ACCESS
							       : EXIT_FAILURE_;
	}
	if (close(fd) < 0) {
		fprintf(stderr,
			"kcoredump core-handler: cannot write "
			"/proc/sys/kernel/core_pattern: %s\n",
			strerror(errno));
		return EXIT_FAILURE_;
	}
	printf("%s\n", pattern);
	return EXIT_OK;
}

struct state {
	struct kcore_ch_opts o;
	struct pattern_args pa;
	bool install, print;
	const char *dir;
};

/* One option: 0, or the exit status of a usage error. */
static int handle_option(struct cli_ctx *ctx, struct state *st, int c,
			 const char *arg)
{
	struct kcore_ch_opts *o = &st->o;
	struct pattern_args *pa = &st->pa;
	char *end;
	double s;

	switch (c) {
	case 'd':
		st->dir = pa->dir = arg;
		break;
	case 'c': {
		int m = kcore_compress_from_name(arg);

		if (m < 0)
			return cli_usage_error(ctx, "core-handler",
					       "unknown --compress '%s'", arg);
		o->compress = (enum kcore_compress)m;
		pa->compress = arg;
		break;
	}
	case OPT_MAX_SIZE:
	case OPT_KEEP_FREE:
	case OPT_MAX_USE: {
		uint64_t *slot = c == OPT_MAX_SIZE    ? &o->max_size
				 : c == OPT_KEEP_FREE ? &o->keep_free
						      : &o->max_use;

		if (!cli_parse_size(arg, slot))
			return cli_usage_error(ctx, "core-handler",
					       "bad size '%s'", arg);
		*(c == OPT_MAX_SIZE    ? &pa->max_size
		  : c == OPT_KEEP_FREE ? &pa->keep_free
				       : &pa->max_use) = arg;
		break;
	}
	case 't':
		s = strtod(arg, &end);
		if (end == arg || *end || !(s >= 0) || s > 86400 * 7)
			return cli_usage_error(ctx, "core-handler",
					       "bad --timeout '%s'", arg);
		o->timeout_ms = (uint64_t)(s * 1000);
		pa->timeout = arg;
		break;
	case OPT_BUILD_ID_TIMEOUT:
		s = strtod(arg, &end);
		if (end == arg || *end || !(s >= 0) || s > 3600)
			return cli_usage_error(ctx, "core-handler",
					       "bad --build-id-timeout '%s'",
					       arg);
		o->build_id_timeout_ms = (uint64_t)(s * 1000);
		if (s > 0 && !o->build_id_timeout_ms)
			o->build_id_timeout_ms = 1;
		pa->build_id_timeout = arg;
		break;
	case OPT_MAX_HANDLERS: {
		uint64_t v;

		if (!cli_parse_u64(arg, &v) || v < 1 || v > 256)
			return cli_usage_error(ctx, "core-handler",
					       "--max-handlers is 1 to 256, "
					       "not '%s'",
					       arg);
		o->max_handlers = (unsigned)v;
		pa->max_handlers = arg;
		break;
	}
	case OPT_MAX_CORES:
	case OPT_MAX_CORES_PER_USER: {
		uint64_t v;

		if (!cli_parse_u64(arg, &v))
			return cli_usage_error(ctx, "core-handler",
					       "bad number of cores '%s'", arg);
		*(c == OPT_MAX_CORES ? &o->max_cores : &o->max_cores_per_user) =
			v;
		*(c == OPT_MAX_CORES ? &pa->max_cores
				     : &pa->max_cores_per_user) = arg;
		break;
	}
	case OPT_DUMP_MODE:
		/* The kernel's %d; a kernel without it (before Linux 5.3)
		 * leaves it empty: not known. */
		o->crash.dump_mode = strcmp(arg, "0") == 0   ? 0
				     : strcmp(arg, "1") == 0 ? 1
				     : strcmp(arg, "2") == 0 ? 2
							     : -1;
		break;
	case OPT_OWNER:
		if (strcmp(arg, "root") != 0 && strcmp(arg, "user") != 0)
			return cli_usage_error(ctx, "core-handler",
					       "--owner is root or user, not "
					       "'%s'",
					       arg);
		o->user_access = strcmp(arg, "user") == 0;
		pa->owner = arg;
		break;
	case OPT_NO_SYNC:
		o->sync = false;
		pa->no_sync = true;
		break;
	case OPT_NO_PAGEMAP:
		o->no_pagemap = true;
		pa->no_pagemap = true;
		break;
	case OPT_INSTALL:
		st->install = true;
		break;
	case OPT_PRINT_PATTERN:
		st->print = true;
		break;
	}
	return 0;
}

/*
 * Where the options end: the first argument that is neither an option
 * nor an option's value (after a "--", the one that follows it).
 */
static int first_positional(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0)
			return i + 1;
		if (a[0] != '-' || !a[1])
			return i;
		if (a[1] == '-') {
			const char *eq = strchr(a + 2, '=');
			size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);

			for (const struct cli_option *o = core_handler_options;
			     o->name; o++)
				if (strlen(o->name) == n &&
				    strncmp(o->name, a + 2, n) == 0 && !eq &&
				    o->arg == CLI_ARG_REQUIRED)
					i++;
			continue;
		}
		/* Short options, maybe clustered; a value ends them. */
		for (const char *p = a + 1; *p; p++) {
			const struct cli_option *o = core_handler_options;

			while (o->name && o->short_name != *p)
				o++;
			if (o->name && o->arg == CLI_ARG_REQUIRED) {
				if (!p[1])
					i++;
				break;
			}
		}
	}
	return argc;
}

/* Parse the options in argv[1..argc); *ret_rest: the first other one. */
static int parse_options(struct cli_ctx *ctx, struct state *st, int argc,
			 char **argv, int *ret_rest)
{
	const struct cli_command *cmd = &cli_cmd_core_handler;
	struct cli_parser *p = cli_parser_create(cmd, argc, argv);
	const char *arg;
	int c, done;

	if (!p)
		return fail(&kcore_error_nomem);
	while ((c = cli_parser_next(p, &arg)) >= 0) {
		int r = handle_option(ctx, st, c, arg);

		if (r) {
			cli_parser_destroy(p);
			return r;
		}
	}
	done = cli_parser_end(p, c, ret_rest);
	return done >= 0 ? done : -1;
}

static int cmd_core_handler(struct cli_ctx *ctx, int argc, char **argv)
{
	struct state st = {
		.o = { .in_fd = STDIN_FILENO,
		       .close_input = true,
		       .sync = true,
		       .timeout_ms = DEFAULT_TIMEOUT * 1000u,
		       .max_handlers = DEFAULT_HANDLERS,
		       .build_id_timeout_ms = DEFAULT_BUILD_ID_TIMEOUT * 1000u,
		       .crash = { .dump_mode = -1 },
		       .log = log_line },
		.dir = DEFAULT_DIR,
	};
	struct kcore_ch_opts *o = &st.o;
	struct kcore_ch_result res;
	struct kcore_error *err;
	struct timespec ts;
	int first, rest, dir_fd, status, npos;
	char *comm = NULL;
	int64_t v;

	/* First: a file we open must not become fd 1 or 2. */
	fix_std_fds();
	umask(077);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	o->start_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	first = first_positional(argc, argv);
	status = parse_options(ctx, &st, first, argv, &rest);
	if (status >= 0)
		return status;
	if (st.install || st.print) {
		char pattern[PATH_MAX + 512];

		if (argc > first)
			return cli_usage_error(ctx, "core-handler",
					       "--install and --print-pattern "
					       "take no arguments");
		if (st.pa.dir && st.pa.dir[0] != '/')
			return cli_usage_error(ctx, "core-handler",
					       "--dir must be an absolute path "
					       "in core_pattern");
		status = build_pattern(&st.pa, pattern, sizeof(pattern));
		if (status != EXIT_OK)
			return status;
		if (st.install)
			return install_pattern(pattern);
		printf("%s\n", pattern);
		return EXIT_OK;
	}
	npos = argc - first;
	if (npos < 5) {
		/* Not the kernel's call: the usage errors every command
		 * gives, for options wherever they are. */
		struct state again = st;

		status = parse_options(ctx, &again, argc, argv, &rest);
		if (status >= 0)
			return status;
		return cli_usage_error(ctx, "core-handler",
				       "needs PID UID GID SIGNAL TIME [COMM] "
				       "(%%P %%u %%g %%s %%t %%e), got %d "
				       "arguments",
				       npos);
	}
	if (!parse_i64(argv[first], &o->crash.pid) ||
	    !parse_i64(argv[first + 1], &v) || v < 0 || v > UINT32_MAX ||
	    (o->crash.uid = (uint32_t)v, !parse_i64(argv[first + 2], &v)) ||
	    v < 0 || v > UINT32_MAX ||
	    (o->crash.gid = (uint32_t)v, !parse_i64(argv[first + 3], &v)) ||
	    v < 0 || v > 128 ||
	    (o->crash.signal = (int)v,
	     !parse_i64(argv[first + 4], &o->crash.time)))
		return cli_usage_error(ctx, "core-handler",
				       "PID UID GID SIGNAL TIME must be "
				       "numbers");
	/* %e is last in the pattern, and whatever the task named itself:
	 * words after it are its name too (a kernel before 5.3 splits the
	 * expanded pattern at spaces), never options. */
	if (npos == 6) {
		o->crash.comm = argv[first + 5];
	} else if (npos > 6) {
		size_t len = 0;

		for (int i = 5; i < npos; i++)
			len += strlen(argv[first + i]) + 1;
		comm = malloc(len);
		if (!comm)
			return fail(&kcore_error_nomem);
		comm[0] = '\0';
		for (int i = 5; i < npos; i++) {
			if (i > 5)
				strcat(comm, " ");
			strcat(comm, argv[first + i]);
		}
		o->crash.comm = comm;
	}
	o->cancel = cli_catch_signals();
	/* A last resort if a write blocks past the timeout. */
	if (o->timeout_ms)
		alarm((unsigned)(o->timeout_ms / 1000) + 60);
	err = kcore_coredir_open(st.dir, true, &dir_fd);
	if (err) {
		free(comm);
		return fail(err);
	}
	o->dir_fd = dir_fd;
	o->dir = st.dir;
	default_limits(dir_fd, o, st.pa.max_use, st.pa.keep_free);
	err = kcore_core_handle(o, &res);
	close(dir_fd);
	free(comm);
	if (err)
		return fail(err);
	kcore_ch_result_deinit(&res);
	return EXIT_OK;
}

const struct cli_command cli_cmd_core_handler = {
	.name = "core-handler",
	.run = cmd_core_handler,
	.options = core_handler_options,
	.args = "PID UID GID SIGNAL TIME [COMM]",
	.summary = "store a core from the kernel's core_pattern pipe",
};
