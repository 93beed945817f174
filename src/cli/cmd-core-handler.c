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
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/un.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-journal.h>
#endif

#include "cli.h"
#include "kcoredump/corehandler.h"

#define DEFAULT_DIR		  "/var/lib/kcoredump"
#define DEFAULT_TIMEOUT		  300
#define DEFAULT_HANDLERS	  16
#define DEFAULT_BUILD_ID_TIMEOUT  10
#define DEFAULT_BACKTRACE_TIMEOUT 5
#define JOURNAL_SOCKET		  "/run/systemd/journal/socket"
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
	OPT_RECORD_ENVIRON,
	OPT_DUMP_MODE,
	OPT_MAX_HANDLERS,
	OPT_BUILD_ID_TIMEOUT,
	OPT_SOCKET,
	OPT_MAX_CORES,
	OPT_MAX_CORES_PER_USER,
	OPT_NO_JOURNAL,
	OPT_NO_BACKTRACE,
	OPT_BACKTRACE_TIMEOUT,
};

static const struct cli_option core_handler_options[] = {
	{ "dir", 'D', CLI_ARG_REQUIRED, "DIR",
	  "store cores in DIR (default " DEFAULT_DIR ")", "@dir", 'D' },
	{ "socket", 0, CLI_ARG_REQUIRED, "PATH",
	  "listen on the AF_UNIX socket PATH for the kernel's coredump "
	  "connections (core_pattern @PATH or @@PATH, Linux 6.16/6.17); with "
	  "--install: the socket to name",
	  "@file", OPT_SOCKET },
	{ "compress", 'c', CLI_ARG_REQUIRED, "METHOD",
	  "compression of a stored core: {compressions} (default none: a "
	  "sparse ELF)",
	  "@compressions", 'c' },
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
	{ "backtrace-timeout", 0, CLI_ARG_REQUIRED, "SECONDS",
	  "time for unwinding the crashing threads in the sandboxed helper "
	  "(default 5)",
	  NULL, OPT_BACKTRACE_TIMEOUT },
	{ "no-backtrace", 0, CLI_ARG_NONE, NULL,
	  "make no backtrace of the crashing threads", NULL, OPT_NO_BACKTRACE },
	{ "no-journal", 0, CLI_ARG_NONE, NULL,
	  "log no journal entry for coredumpctl (made when "
	  "/run/systemd/journal/socket exists)",
	  NULL, OPT_NO_JOURNAL },
	{ "no-sync", 0, CLI_ARG_NONE, NULL,
	  "do not fsync the core before publishing it", NULL, OPT_NO_SYNC },
	{ "no-pagemap", 0, CLI_ARG_NONE, NULL,
	  "read every zero of the stream, even where the crashing process's "
	  "page tables say it holds nothing",
	  NULL, OPT_NO_PAGEMAP },
	{ "record-environ", 0, CLI_ARG_NONE, NULL,
	  "also record the crashing process's environment (at most 64 KiB) "
	  "in the metadata; show prints it to root only",
	  NULL, OPT_RECORD_ENVIRON },
	{ "install", 0, CLI_ARG_NONE, NULL,
	  "write the best pattern the kernel takes into "
	  "/proc/sys/kernel/core_pattern (@@socket, @socket, else the pipe), "
	  "read it back, say what it replaced",
	  NULL, OPT_INSTALL },
	{ "print-pattern", 0, CLI_ARG_NONE, NULL,
	  "print the core_pattern line --install would write", NULL,
	  OPT_PRINT_PATTERN },
	CLI_OPT_QUIET("log nothing but errors"),
	CLI_OPT_VERBOSE("log each step of storing a core, and every "
			"connection"),
	{ 0 },
};

static bool use_kmsg;
/* The least important priority logged: -q errors only, -v the steps. */
static int log_max = KCORE_CH_LOG_INFO;

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

	(void)arg;
	if (priority > log_max) {
		free(safe);
		return;
	}
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

#define N_OPTIONS \
	(sizeof(core_handler_options) / sizeof(core_handler_options[0]))

struct state {
	struct kcore_ch_opts o;
	/* What each option of core_handler_options said last, by its place
	 * in the table ("" for one that takes no value); NULL: not given.
	 * The pattern repeats them (build_pattern). */
	const char *given[N_OPTIONS];
	bool install, print;
	const char *dir;
	const char *socket;
};

/* The place in core_handler_options of the option getopt returns as c
 * (its short name, else its key); -1: none. */
static int option_index(int c)
{
	for (size_t i = 0; core_handler_options[i].name; i++) {
		const struct cli_option *o = &core_handler_options[i];

		if ((o->short_name ? o->short_name : o->key) == c)
			return (int)i;
	}
	return -1;
}

static const char *given(const struct state *st, int c)
{
	int i = option_index(c);

	return i < 0 ? NULL : st->given[i];
}

/* Whether the pattern repeats option c: all but how this run itself is
 * called (and --dump-mode, which the pattern gives as the kernel's %d). */
static bool in_pattern(int c)
{
	return c != OPT_SOCKET && c != OPT_DUMP_MODE && c != OPT_INSTALL &&
	       c != OPT_PRINT_PATTERN && c != 'q' && c != 'v';
}

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

/* The pipe pattern: the options given, in the table's order. */
static int build_pattern(const struct state *st, char *out, size_t size)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
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
	for (size_t i = 0; core_handler_options[i].name; i++) {
		const struct cli_option *o = &core_handler_options[i];
		const char *val = st->given[i];

		if (!val || !in_pattern(o->short_name ? o->short_name : o->key))
			continue;
		if (!pattern_safe(val)) {
			fprintf(stderr,
				"kcoredump core-handler: --%s '%s' cannot be "
				"named in core_pattern (spaces or '%%')\n",
				o->name, cli_esc(val));
			return EXIT_USAGE;
		}
		if (len < size)
			len += (size_t)snprintf(out + len, size - len,
						" --%s%s%s", o->name,
						*val ? " " : "", val);
	}
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

/* One option: 0, or the exit status of a usage error. */
static int handle_option(struct cli_ctx *ctx, struct state *st, int c,
			 const char *arg)
{
	struct kcore_ch_opts *o = &st->o;
	char *end;
	double s;

	switch (c) {
	case 'D':
		st->dir = arg;
		break;
	case OPT_SOCKET:
		if (arg[0] != '/' || strlen(arg) >= 108)
			return cli_usage_error(
				ctx, "core-handler",
				"--socket needs an absolute path "
				"shorter than 108 bytes, not "
				"'%s'",
				arg);
		st->socket = arg;
		break;
	case 'q':
		log_max = KCORE_CH_LOG_ERR;
		o->verbose = false;
		break;
	case 'v':
		log_max = KCORE_CH_LOG_DEBUG;
		o->verbose = true;
		break;
	case 'c': {
		int m = kcore_compress_from_name(arg);

		if (m < 0)
			return cli_usage_error(ctx, "core-handler",
					       "unknown --compress '%s'", arg);
		o->compress = (enum kcore_compress)m;
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
		break;
	}
	case 't':
		s = strtod(arg, &end);
		if (end == arg || *end || !(s >= 0) || s > 86400 * 7)
			return cli_usage_error(ctx, "core-handler",
					       "bad --timeout '%s'", arg);
		o->timeout_ms = (uint64_t)(s * 1000);
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
		break;
	case OPT_BACKTRACE_TIMEOUT:
		s = strtod(arg, &end);
		if (end == arg || *end || !(s > 0) || s > 3600)
			return cli_usage_error(ctx, "core-handler",
					       "bad --backtrace-timeout '%s' "
					       "(--no-backtrace: none)",
					       arg);
		o->backtrace_timeout_ms = (uint64_t)(s * 1000);
		if (!o->backtrace_timeout_ms)
			o->backtrace_timeout_ms = 1;
		break;
	case OPT_NO_BACKTRACE: /* given(): store_core() */
	case OPT_NO_JOURNAL:   /* given(): journal_why_not() */
		break;
	case OPT_MAX_HANDLERS: {
		uint64_t v;

		if (!cli_parse_u64(arg, &v) || v < 1 || v > 256)
			return cli_usage_error(ctx, "core-handler",
					       "--max-handlers is 1 to 256, "
					       "not '%s'",
					       arg);
		o->max_handlers = (unsigned)v;
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
		break;
	case OPT_NO_SYNC:
		o->sync = false;
		break;
	case OPT_NO_PAGEMAP:
		o->no_pagemap = true;
		break;
	case OPT_RECORD_ENVIRON:
		o->record_environ = true;
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
		int r = handle_option(ctx, st, c, arg), i = option_index(c);

		if (r) {
			cli_parser_destroy(p);
			return r;
		}
		if (i >= 0)
			st->given[i] = arg ? arg : "";
	}
	done = cli_parser_end(p, c, ret_rest);
	return done >= 0 ? done : -1;
}

/* Why no journal entry: --no-journal, no journald, or no libsystemd. */
static const char *journal_why_not(const struct state *st)
{
	struct stat sb;

	if (given(st, OPT_NO_JOURNAL))
		return "--no-journal";
#ifdef HAVE_LIBSYSTEMD
	if (stat(JOURNAL_SOCKET, &sb) < 0 || !S_ISSOCK(sb.st_mode))
		return "no journal socket (" JOURNAL_SOCKET ")";
	return NULL;
#else
	(void)sb;
	return "this kcoredump is built without libsystemd";
#endif
}

/* The entry systemd-coredump would log, as the library made it. */
static void send_journal(const struct kcore_ch_result *res)
{
#ifdef HAVE_LIBSYSTEMD
	struct iovec iov[64];
	size_t n = 0;
	char msg[160];
	int r;

	for (size_t i = 0; i < res->journal_count && n < 64; i++)
		iov[n++] = (struct iovec){ res->journal[i],
					   strlen(res->journal[i]) };
	if (!n)
		return;
	r = sd_journal_sendv(iov, (int)n);
	if (r < 0) {
		snprintf(msg, sizeof(msg),
			 "cannot log the journal entry of '%s': %s",
			 res->core_name ? res->core_name : "?", strerror(-r));
		log_line(NULL, KCORE_CH_LOG_WARNING, msg);
	}
#else
	(void)res;
#endif
}

/* The store, its limits, then the library's handler. */
static int store_core(struct state *st)
{
	struct kcore_ch_opts *o = &st->o;
	struct kcore_ch_result res;
	struct kcore_error *err;
	int dir_fd;

	o->cancel = cli_catch_signals();
	/* A last resort if a write blocks past the timeout. */
	if (o->timeout_ms)
		alarm((unsigned)(o->timeout_ms / 1000) + 60);
	err = kcore_coredir_open(st->dir, true, &dir_fd);
	if (err)
		return fail(err);
	o->dir_fd = dir_fd;
	o->dir = st->dir;
	default_limits(dir_fd, o, given(st, OPT_MAX_USE),
		       given(st, OPT_KEEP_FREE));
	o->backtrace_timeout_ms =
		given(st, OPT_NO_BACKTRACE) ? 0 : o->backtrace_timeout_ms;
	o->journal_why_not = journal_why_not(st);
	err = kcore_core_handle(o, &res);
	close(dir_fd);
	if (err)
		return fail(err);
	send_journal(&res);
	kcore_ch_result_deinit(&res);
	return EXIT_OK;
}

/* /proc/PID/comm, kept only if the pidfd is still that process. */
static char *peer_comm(const struct kcore_ch_peer *peer, int64_t pid)
{
	char path[64], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%" PRId64 "/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || !kcore_ch_peer_alive(peer, pid))
		return NULL;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return strdup(buf);
}

/* One connection from the kernel's coredump socket, on fd. */
static int serve_connection(struct state *st, int fd)
{
	struct kcore_ch_opts *o = &st->o;
	struct kcore_ch_peer peer;
	struct kcore_error *err;
	struct timespec ts;
	char *comm = NULL;
	int status;

	/* --timeout counts from this connection, not from the listener's
	 * start. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	o->start_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	o->crash = (struct kcore_ch_crash){ .dump_mode = -1 };
	err = kcore_ch_socket_accept(fd, o->timeout_ms, &o->crash, &peer,
				     &o->via);
	if (err) {
		char *msg = kcore_error_describe(err);

		log_line(NULL, KCORE_CH_LOG_ERR, msg ? msg : "out of memory");
		free(msg);
		kcore_error_destroy(err);
		kcore_ch_peer_deinit(&peer);
		close(fd);
		return EXIT_FAILURE_;
	}
	if (st->o.verbose) {
		char line[256];

		snprintf(line, sizeof(line),
			 "connection via %s from pid %" PRId64 " (uid %" PRIu32
			 ", dump mode %d, pidfd %s)",
			 kcore_ch_via_name(o->via), o->crash.pid, o->crash.uid,
			 o->crash.dump_mode, peer.pidfd >= 0 ? "yes" : "no");
		log_line(NULL, KCORE_CH_LOG_DEBUG, line);
	}
	comm = peer_comm(&peer, o->crash.pid);
	o->crash.comm = comm;
	o->in_fd = fd;
	o->close_input = true;
	o->peer = &peer;
	status = store_core(st);
	o->peer = NULL;
	free(comm);
	kcore_ch_peer_deinit(&peer);
	return status;
}

/* Only to interrupt poll() when a child ends. */
static void on_child(int sig)
{
	(void)sig;
}

/* Accept connections on a listening socket, a child for each. */
static int serve(struct state *st, int lfd)
{
	volatile sig_atomic_t *cancel = cli_catch_signals();
	struct sigaction sa = { .sa_handler = on_child };
	unsigned running = 0, limit = st->o.max_handlers;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	/* Our own crash must not come back to us. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	while (!*cancel) {
		struct pollfd pfd = { .fd = lfd, .events = POLLIN };
		pid_t pid;
		int c;

		while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
			running--;
		/* At most --max-handlers at once; the kernel's
		 * connections wait in the backlog meanwhile. */
		if (running >= limit) {
			/* SIGCHLD cuts the wait short. */
			poll(NULL, 0, 200);
			continue;
		}
		if (poll(&pfd, 1, 1000) <= 0)
			continue;
		c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		pid = fork();
		if (pid == 0) {
			close(lfd);
			signal(SIGCHLD, SIG_DFL);
			_exit(serve_connection(st, c));
		}
		if (pid > 0)
			running++;
		else
			log_line(NULL, KCORE_CH_LOG_ERR,
				 "cannot fork for a connection");
		close(c);
	}
	return EXIT_OK;
}

static int listen_on(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat sb;
	mode_t old;
	bool bound;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (lstat(path, &sb) == 0 && S_ISSOCK(sb.st_mode))
		unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* Born 0600: between bind and a chmod, the umask's mode would let
	 * others connect. */
	old = umask(0077);
	bound = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	umask(old);
	if (!bound || chmod(path, 0600) < 0 || listen(fd, 16) < 0) {
		fprintf(stderr,
			"kcoredump core-handler: cannot listen on %s: %s\n",
			cli_esc(path), strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* A socket systemd passed (LISTEN_FDS), fd 3; -1 if none. */
static int activated_fd(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	int64_t p, n;

	if (!pid || !fds || !parse_i64(pid, &p) || p != getpid() ||
	    !parse_i64(fds, &n) || n < 1)
		return -1;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	fcntl(3, F_SETFD, FD_CLOEXEC);
	return 3;
}

/* fd is a socket: serve it whether it listens or is one connection. */
static int serve_fd(struct state *st, int fd)
{
	int acc = 0;
	socklen_t len = sizeof(acc);

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len) == 0 && acc)
		return serve(st, fd);
	return serve_connection(st, fd);
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
		       .backtrace_timeout_ms =
			       DEFAULT_BACKTRACE_TIMEOUT * 1000u,
		       .crash = { .dump_mode = -1 },
		       .log = log_line },
		.dir = DEFAULT_DIR,
	};
	struct kcore_ch_opts *o = &st.o;
	struct timespec ts;
	struct stat sb;
	int first, rest, status, npos, fd;
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
		if (given(&st, 'D') && st.dir[0] != '/')
			return cli_usage_error(ctx, "core-handler",
					       "--dir must be an absolute path "
					       "in core_pattern");
		status = build_pattern(&st, pattern, sizeof(pattern));
		if (status != EXIT_OK)
			return status;
		return cli_core_pattern(st.socket, pattern, st.install,
					st.o.max_handlers);
	}
	npos = argc - first;
	if (st.socket && npos == 0) {
		fd = listen_on(st.socket);
		if (fd < 0)
			return EXIT_FAILURE_;
		status = serve(&st, fd);
		close(fd);
		unlink(st.socket);
		return status;
	}
	if (npos == 0 && !st.socket) {
		fd = activated_fd();
		if (fd >= 0)
			return serve_fd(&st, fd);
		if (fstat(STDIN_FILENO, &sb) == 0 && S_ISSOCK(sb.st_mode))
			return serve_fd(&st, STDIN_FILENO);
	}
	if (npos < 5 || st.socket) {
		/* Not the kernel's call: the usage errors every command
		 * gives, for options wherever they are. */
		struct state again = st;

		status = parse_options(ctx, &again, argc, argv, &rest);
		if (status >= 0)
			return status;
		if (st.socket)
			return cli_usage_error(ctx, "core-handler",
					       "--socket takes no arguments");
		return cli_usage_error(ctx, "core-handler",
				       "needs PID UID GID SIGNAL TIME [COMM] "
				       "(%%P %%u %%g %%s %%t %%e), got %d "
				       "arguments; or a socket (--socket "
				       "PATH, systemd's, or on stdin)",
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
	status = store_core(&st);
	free(comm);
	return status;
}

const struct cli_command cli_cmd_core_handler = {
	.name = "core-handler",
	.run = cmd_core_handler,
	.options = core_handler_options,
	.args = "[PID UID GID SIGNAL TIME [COMM]]",
	.summary = "store a core from the kernel's core_pattern pipe or "
		   "coredump socket",
};
