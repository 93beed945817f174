// SPDX-License-Identifier: MIT
/*
 * kcoredump debug: a debugger on the newest stored core that matches (as
 * coredumpctl debug), with its executable when that is still there.  A
 * .zst/.xz core is extracted first into a private temporary directory,
 * removed when the debugger exits.
 *
 * A debugger opens the paths a core names (gdb: every NT_FILE name and
 * link-map l_name, then the debug links of what it loaded), and the
 * crashing user chose them: a FIFO there blocks it, as root, for ever.
 * So, as info's --open-mapped-files, another user's core (the record's
 * uid, NT_PRPSINFO, AT_UID/AT_EUID) is refused unless asked for; then
 * gdb is started with its sysroot at a directory that does not exist and
 * auto-loading off, so that it opens none of those paths, and is given
 * the executable only as a private copy of the regular file that was
 * opened without following a symlink or blocking (its debug links
 * renamed away).  The debugger dies with us (PR_SET_PDEATHSIG).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
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
	{ "open-mapped-files", 0, CLI_ARG_NONE, NULL,
	  "also debug another user's core (gdb then opens none of the paths "
	  "it names)",
	  NULL, 1101 },
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

static uint64_t le_bytes(const unsigned char *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* What gdb is told first for another user's core: look for no file a
 * core or the executable names (NT_FILE, l_name: under the sysroot),
 * load no script. */
static const char *const gdb_guard[] = {
	"-iex", "set auto-load off",
	"-iex", "set sysroot /nonexistent/kcoredump-no-sysroot",
	"-iex", "set solib-search-path",
};

static int run_debugger(const char *debugger, char *extra, const char *exe,
			const char *core, bool guard, bool verbose)
{
	char *argv[64];
	size_t n = 0;
	const char *base = strrchr(debugger, '/');
	bool lldb = strcmp(base ? base + 1 : debugger, "lldb") == 0;
	pid_t pid, parent = getpid();
	int st;

	argv[n++] = (char *)debugger;
	for (size_t i = 0; guard && i < sizeof(gdb_guard) / sizeof(*gdb_guard);
	     i++)
		argv[n++] = (char *)gdb_guard[i];
	if (extra)
		n += split_args(extra, argv + n, 40);
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
		/* Killed with us: never a debugger left blocked, orphaned. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 ||
		    getppid() != parent)
			_exit(127);
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

/*
 * The executable a record names, opened as a regular file without
 * following a symlink in its last component, blocking (a FIFO) or
 * taking a terminal: its fd, or -1 with why set.
 */
static int open_exe(const char *path, const char **why)
{
	struct stat st;
	int fd;

	*why = NULL;
	if (!path || path[0] != '/') {
		*why = "no path";
		return -1;
	}
	fd = open(path,
		  O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		*why = strerror(errno);
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		*why = "not a regular file";
		close(fd);
		return -1;
	}
	return fd;
}

/* At most this much executable is copied (a sparse copy, but the user
 * may make it as big as a file system allows). */
#define MAX_EXE_COPY (4ull << 30)

/*
 * In a copy (fd, ours) of an ELF executable, the sections that name
 * more files to open (.gnu_debuglink: a name looked up next to the
 * executable, "../" and all; .gnu_debugaltlink) renamed so that gdb
 * does not find them.  Nothing is lost: next to the private copy there
 * is nothing to find.  A file that is not ELF is left as it is.
 */
static void drop_debug_links(int fd)
{
	unsigned char eh[64];
	bool is64;
	uint64_t shoff, shentsize, shnum, shstrndx, stroff, strsize;
	struct stat st;

	if (fstat(fd, &st) != 0 || pread(fd, eh, sizeof(eh), 0) != 64 ||
	    memcmp(eh, "\177ELF", 4) != 0 || eh[5] != 1 /* LSB */)
		return;
	is64 = eh[4] == 2;
#define LE(o, n) le_bytes(eh + (o), (n))
	shoff = is64 ? LE(0x28, 8) : LE(0x20, 4);
	shentsize = is64 ? LE(0x3a, 2) : LE(0x2e, 2);
	shnum = is64 ? LE(0x3c, 2) : LE(0x30, 2);
	shstrndx = is64 ? LE(0x3e, 2) : LE(0x32, 2);
#undef LE
	if (shentsize < (is64 ? 64u : 40u) || shnum == 0 || shnum > 65535 ||
	    shstrndx >= shnum || shoff > (uint64_t)st.st_size ||
	    shnum * shentsize > (uint64_t)st.st_size - shoff)
		return;
	{
		unsigned char sh[64];

		if (pread(fd, sh, shentsize < 64 ? shentsize : 64,
			  (off_t)(shoff + shstrndx * shentsize)) < 40)
			return;
		stroff = is64 ? le_bytes(sh + 0x18, 8) : le_bytes(sh + 0x10, 4);
		strsize =
			is64 ? le_bytes(sh + 0x20, 8) : le_bytes(sh + 0x14, 4);
	}
	if (stroff > (uint64_t)st.st_size ||
	    strsize > (uint64_t)st.st_size - stroff)
		return;
	for (uint64_t i = 0; i < shnum; i++) {
		unsigned char sh[64];
		char name[24];
		uint64_t nm;
		ssize_t got;

		if (pread(fd, sh, 4, (off_t)(shoff + i * shentsize)) != 4)
			return;
		nm = le_bytes(sh, 4);
		if (nm >= strsize)
			continue;
		got = pread(fd, name, sizeof(name) - 1, (off_t)(stroff + nm));
		if (got <= 0)
			continue;
		name[got] = '\0';
		if (strcmp(name, ".gnu_debuglink") == 0 ||
		    strcmp(name, ".gnu_debugaltlink") == 0)
			(void)!pwrite(fd, "X", 1, (off_t)(stroff + nm));
	}
}

/*
 * The executable (fd, checked) copied to dir/exe, holes kept, debug links
 * dropped: the file gdb opens, whatever the user does to the path
 * meanwhile.  Its path in ret, or false with why set.
 */
static bool copy_exe(int fd, const char *dir, char *ret, size_t len,
		     volatile sig_atomic_t *cancel, const char **why)
{
	struct stat st;
	int out;
	off_t in_off = 0, out_off = 0;
	bool ok = true;

	if (fstat(fd, &st) != 0 || (uint64_t)st.st_size > MAX_EXE_COPY) {
		*why = "larger than 4 GiB";
		return false;
	}
	snprintf(ret, len, "%s/exe", dir);
	out = open(ret, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		   0600);
	if (out < 0) {
		*why = strerror(errno);
		return false;
	}
	while (ok && in_off < st.st_size) {
		off_t d = lseek(fd, in_off, SEEK_DATA), h;
		ssize_t n;

		if (d < 0)
			break; /* the rest is a hole */
		h = lseek(fd, d, SEEK_HOLE);
		if (h < 0 || h > st.st_size)
			h = st.st_size;
		in_off = out_off = d;
		while (ok && in_off < h) {
			n = copy_file_range(fd, &in_off, out, &out_off,
					    (size_t)(h - in_off), 0);
			if (n <= 0 || (cancel && *cancel)) {
				*why = n < 0 ? strerror(errno)
					     : "the file changed, or a signal";
				ok = false;
			}
		}
	}
	if (ok && ftruncate(out, st.st_size) != 0) {
		*why = strerror(errno);
		ok = false;
	}
	if (ok)
		drop_debug_links(out);
	close(out);
	if (!ok)
		unlink(ret);
	return ok;
}

/*
 * Whether the core is another user's: the record's uid, or what the
 * core's notes say (an unreadable core counts as another's).  why (not
 * NULL then) says how, for the refusal.
 */
static bool others_core(const char *core, const struct kcore_stored_core *c,
			char **why)
{
	struct kcore_source *src = NULL;
	struct kcore_error *err;
	uid_t me = getuid();

	*why = NULL;
	if (c->uid != (int64_t)me) {
		if (asprintf(why,
			     "'%s': a core of uid %lld's process, not the "
			     "caller's (uid %u)",
			     core, (long long)c->uid, (unsigned)me) < 0)
			*why = NULL;
		return true;
	}
	err = kcore_source_open(core, NULL, &src);
	if (!err)
		err = kcore_source_check_process_uid(src, me);
	kcore_source_destroy(src);
	if (!err)
		return false;
	*why = kcore_error_describe(err);
	kcore_error_destroy(err);
	return true;
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
	     plain[PATH_MAX + 8], exe_copy[PATH_MAX + 8] = "", *why_other;
	struct kcore_stored_core *cores, *c = NULL;
	const char *exe = NULL, *why_exe = NULL, *base;
	struct kcore_error *err = NULL;
	size_t n;
	int opt, first, done, status, exe_fd;
	bool quiet = false, verbose = false, open_mapped = false, other, lldb;

	if (!p)
		return cli_fail(ctx, &kcore_error_nomem);
	while ((opt = cli_parser_next(p, &arg)) >= 0) {
		if (opt == 'D')
			dir = arg;
		else if (opt == 1100)
			debugger = arg;
		else if (opt == 1101)
			open_mapped = true;
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
	base = strrchr(debugger, '/');
	lldb = strcmp(base ? base + 1 : debugger, "lldb") == 0;
	other = others_core(core, c, &why_other);
	if (other && (!open_mapped || lldb)) {
		err = kcore_error_create(
			KCORE_ERR_ACCESS, 0, NULL, "%s: %s",
			why_other ? why_other : "another user's core",
			lldb ? "lldb cannot be kept from the paths it names "
			       "(use gdb)"
			     : "a debugger opens the paths it names; "
			       "--open-mapped-files runs gdb kept from them");
		free(why_other);
		kcore_stored_cores_free(cores, n);
		return cli_fail(ctx, err);
	}
	free(why_other);
	/* The executable, when it is still where it was (not "(deleted)"),
	 * a regular file. */
	exe_fd = open_exe(c->exe, &why_exe);
	if (exe_fd >= 0 && !other)
		exe = c->exe;
	if (compressed(c->core_name) || (other && exe_fd >= 0)) {
		const char *t = getenv("TMPDIR");

		snprintf(tmpdir, sizeof(tmpdir), "%s/kcoredump-debug.XXXXXX",
			 t && *t ? t : "/var/tmp");
		if (!mkdtemp(tmpdir)) {
			err = kcore_error_create(KCORE_ERR_OS, errno, tmpdir,
						 "cannot make a directory");
			tmpdir[0] = '\0';
		}
	}
	/* Another user's executable: a private copy of what was opened. */
	if (!err && other && exe_fd >= 0 &&
	    copy_exe(exe_fd, tmpdir, exe_copy, sizeof(exe_copy),
		     cli_catch_signals(), &why_exe))
		exe = exe_copy;
	if (exe_fd >= 0)
		close(exe_fd);
	if (!err && compressed(c->core_name)) {
		snprintf(plain, sizeof(plain), "%s/core", tmpdir);
		err = kcore_extract(core, plain, false, cli_catch_signals(),
				    NULL);
		if (err)
			unlink(plain);
	}
	if (err) {
		if (exe_copy[0])
			unlink(exe_copy);
		if (tmpdir[0])
			rmdir(tmpdir);
		kcore_stored_cores_free(cores, n);
		return cli_fail(ctx, err);
	}
	if (!quiet) {
		fprintf(stderr, "kcoredump debug: %s on %s", debugger,
			cli_esc(core));
		if (exe)
			fprintf(stderr, " with %s", cli_esc(c->exe));
		else if (c->exe && c->exe[0] == '/')
			fprintf(stderr, " (executable %s not used: %s)",
				cli_esc(c->exe), why_exe ? why_exe : "?");
		else
			fputs(" (no executable)", stderr);
		fputs(other ? ", kept from the paths it names\n" : "\n",
		      stderr);
	}
	status = run_debugger(debugger, extra, exe,
			      compressed(c->core_name) ? plain : core, other,
			      verbose);
	if (status < 0) {
		fprintf(stderr, "kcoredump debug: cannot run '%s': %s\n",
			debugger, strerror(errno));
		status = EXIT_FAILURE_;
	}
	if (compressed(c->core_name))
		unlink(plain);
	if (exe_copy[0])
		unlink(exe_copy);
	if (tmpdir[0])
		rmdir(tmpdir);
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
