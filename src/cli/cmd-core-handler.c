// SPDX-License-Identifier: MIT
/*
 * kcoredump core-handler: the program named in /proc/sys/kernel/core_pattern
 * ("|/usr/bin/kcoredump core-handler %P %u %g %s %t %e").  The kernel runs
 * it as root with the core on stdin and no other descriptors open: no
 * terminal, no shell, no PATH.  Messages go to the kernel log (/dev/kmsg)
 * then, else to stderr.
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
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kcoredump/corehandler.h"

#define DEFAULT_DIR	"/var/lib/kcoredump"
#define DEFAULT_TIMEOUT 300
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
	{ "timeout", 't', CLI_ARG_REQUIRED, "SECONDS",
	  "stop reading after SECONDS (default 300; 0 = never)", NULL, 't' },
	{ "owner", 0, CLI_ARG_REQUIRED, "OWNER",
	  "root (the default) or user: files owned by the crashing user",
	  "root user", OPT_OWNER },
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
	char line[600];
	int n;

	if (use_kmsg)
		/* One write() is one kernel log record. */
		n = snprintf(line, sizeof(line), "<%d>kcoredump[%d]: %s\n",
			     priority, (int)getpid(), msg);
	else
		n = snprintf(line, sizeof(line), "kcoredump: %s\n", msg);
	if (n > (int)sizeof(line))
		n = sizeof(line);
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
		*owner;
	bool no_sync, no_pagemap;
};

static int build_pattern(const struct pattern_args *a, char *out, size_t size)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const struct {
		const char *opt, *val;
	} opts[] = {
		{ "--dir", a->dir },	       { "--compress", a->compress },
		{ "--max-size", a->max_size }, { "--keep-free", a->keep_free },
		{ "--max-use", a->max_use },   { "--timeout", a->timeout },
		{ "--owner", a->owner },
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
			exe);
		return EXIT_USAGE;
	}
	len = (size_t)snprintf(out, size,
			       "|%s core-handler %%P %%u %%g %%s "
			       "%%t %%e",
			       exe);
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		if (!opts[i].val)
			continue;
		if (!pattern_safe(opts[i].val)) {
			fprintf(stderr,
				"kcoredump core-handler: %s '%s' cannot be "
				"named in core_pattern (spaces or '%%')\n",
				opts[i].opt, opts[i].val);
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

static int cmd_core_handler(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_command *cmd = &cli_cmd_core_handler;
	struct kcore_ch_opts o = { .in_fd = STDIN_FILENO,
				   .close_input = true,
				   .sync = true,
				   .timeout_ms = DEFAULT_TIMEOUT * 1000u,
				   .log = log_line };
	struct pattern_args pa = { 0 };
	struct kcore_ch_result res;
	struct kcore_error *err;
	struct timespec ts;
	struct cli_parser *p;
	bool install = false, print = false;
	const char *arg, *dir = DEFAULT_DIR;
	char *comm = NULL;
	int64_t v;
	int c, first, done, dir_fd, status;

	/* First: a file we open must not become fd 1 or 2. */
	fix_std_fds();
	umask(077);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	o.start_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	p = cli_parser_create(cmd, argc, argv);
	if (!p)
		return fail(&kcore_error_nomem);
	while ((c = cli_parser_next(p, &arg)) >= 0) {
		switch (c) {
		case 'd':
			dir = pa.dir = arg;
			break;
		case 'c': {
			int m = kcore_compress_from_name(arg);

			if (m < 0) {
				cli_parser_destroy(p);
				return cli_usage_error(
					ctx, "core-handler",
					"unknown --compress '%s'", arg);
			}
			o.compress = (enum kcore_compress)m;
			pa.compress = arg;
			break;
		}
		case OPT_MAX_SIZE:
		case OPT_KEEP_FREE:
		case OPT_MAX_USE: {
			uint64_t *slot = c == OPT_MAX_SIZE    ? &o.max_size
					 : c == OPT_KEEP_FREE ? &o.keep_free
							      : &o.max_use;

			if (!cli_parse_size(arg, slot)) {
				cli_parser_destroy(p);
				return cli_usage_error(ctx, "core-handler",
						       "bad size '%s'", arg);
			}
			*(c == OPT_MAX_SIZE    ? &pa.max_size
			  : c == OPT_KEEP_FREE ? &pa.keep_free
					       : &pa.max_use) = arg;
			break;
		}
		case 't': {
			char *end;
			double s = strtod(arg, &end);

			if (end == arg || *end || !(s >= 0) || s > 86400 * 7) {
				cli_parser_destroy(p);
				return cli_usage_error(ctx, "core-handler",
						       "bad --timeout '%s'",
						       arg);
			}
			o.timeout_ms = (uint64_t)(s * 1000);
			pa.timeout = arg;
			break;
		}
		case OPT_OWNER:
			if (strcmp(arg, "root") != 0 &&
			    strcmp(arg, "user") != 0) {
				cli_parser_destroy(p);
				return cli_usage_error(ctx, "core-handler",
						       "--owner is root or "
						       "user, not '%s'",
						       arg);
			}
			o.chown_user = strcmp(arg, "user") == 0;
			pa.owner = arg;
			break;
		case OPT_NO_SYNC:
			o.sync = false;
			pa.no_sync = true;
			break;
		case OPT_NO_PAGEMAP:
			o.no_pagemap = true;
			pa.no_pagemap = true;
			break;
		case OPT_INSTALL:
			install = true;
			break;
		case OPT_PRINT_PATTERN:
			print = true;
			break;
		}
	}
	done = cli_parser_end(p, c, &first);
	if (done >= 0)
		return done;
	if (install || print) {
		char pattern[PATH_MAX + 512];

		if (argc > first)
			return cli_usage_error(ctx, "core-handler",
					       "--install and --print-pattern "
					       "take no arguments");
		if (pa.dir && pa.dir[0] != '/')
			return cli_usage_error(ctx, "core-handler",
					       "--dir must be an absolute path "
					       "in core_pattern");
		status = build_pattern(&pa, pattern, sizeof(pattern));
		if (status != EXIT_OK)
			return status;
		if (install)
			return install_pattern(pattern);
		printf("%s\n", pattern);
		return EXIT_OK;
	}
	if (argc - first < 5)
		return cli_usage_error(ctx, "core-handler",
				       "needs PID UID GID SIGNAL TIME [COMM] "
				       "(%%P %%u %%g %%s %%t %%e), got %d "
				       "arguments",
				       argc - first);
	if (!parse_i64(argv[first], &o.crash.pid) ||
	    !parse_i64(argv[first + 1], &v) || v < 0 || v > UINT32_MAX ||
	    (o.crash.uid = (uint32_t)v, !parse_i64(argv[first + 2], &v)) ||
	    v < 0 || v > UINT32_MAX ||
	    (o.crash.gid = (uint32_t)v, !parse_i64(argv[first + 3], &v)) ||
	    v < 0 || v > 128 ||
	    (o.crash.signal = (int)v,
	     !parse_i64(argv[first + 4], &o.crash.time)))
		return cli_usage_error(ctx, "core-handler",
				       "PID UID GID SIGNAL TIME must be "
				       "numbers");
	/* Old kernels split %e at spaces: join what is left. */
	for (int i = first + 5; i < argc; i++) {
		size_t len = comm ? strlen(comm) : 0;
		char *m = realloc(comm, len + strlen(argv[i]) + 2);

		if (!m) {
			free(comm);
			return fail(&kcore_error_nomem);
		}
		if (len)
			m[len++] = ' ';
		strcpy(m + len, argv[i]);
		comm = m;
	}
	o.crash.comm = comm;
	o.cancel = cli_catch_signals();
	/* A last resort if a write blocks past the timeout. */
	if (o.timeout_ms)
		alarm((unsigned)(o.timeout_ms / 1000) + 60);
	err = kcore_coredir_open(dir, true, &dir_fd);
	if (err) {
		free(comm);
		return fail(err);
	}
	o.dir_fd = dir_fd;
	o.dir = dir;
	err = kcore_core_handle(&o, &res);
	close(dir_fd);
	free(comm);
	if (err)
		return fail(err);
	kcore_ch_result_deinit(&res);
	return EXIT_OK;
}

const struct cli_command cli_cmd_core_handler = {
	"core-handler",
	cmd_core_handler,
	core_handler_options,
	"PID UID GID SIGNAL TIME [COMM]",
	NULL,
	"store a core from the kernel's core_pattern pipe",
	false
};
