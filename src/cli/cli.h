/* SPDX-License-Identifier: MIT */
/*
 * The command line: the command table, option specs and shared helpers.
 * Each command's options are declared once (struct cli_option) and give
 * getopt's table, --help, the man page check and the shell completions.
 */
#ifndef KCOREDUMP_CLI_H
#define KCOREDUMP_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>

#include "kcoredump/kcore.h"

/* Exit statuses (documented in kcoredump(8)). */
enum {
	EXIT_OK = 0,
	EXIT_FAILURE_ = 1, /* I/O error, out of memory, interrupted */
	EXIT_USAGE = 2,
	EXIT_MISMATCH = 3,   /* verify found a difference */
	EXIT_BAD_INPUT = 4,  /* malformed or unsupported input */
	EXIT_ACCESS = 5,     /* permission, capability or lockdown */
	EXIT_NOT_FOUND = 6,  /* no such source (or no /proc/kcore) */
	EXIT_INCOMPLETE = 7, /* written, but some data could not be read (or
			      the source says it is incomplete) */
};

enum cli_arg { CLI_ARG_NONE, CLI_ARG_REQUIRED, CLI_ARG_OPTIONAL };

struct cli_option {
	const char *name; /* long name, without "--" */
	int short_name;	  /* 0 if none */
	enum cli_arg arg;
	const char *argname; /* "FILE", "N", ... */
	const char *help;
	/* Completion: NULL (none), "@file", "@dir" or words "a b c". */
	const char *complete;
	int key; /* value getopt returns; short_name if set */
};

struct cli_command;
struct cli_ctx {
	bool json;
	const char *progname;
	/* The command table (main.c), NULL-terminated: for help and the
	 * completion helper. */
	const struct cli_command *const *commands;
	/* The command line as given, before getopt permutes argv (main.c),
	 * for the metadata note; NULL when out of memory. */
	const char *command_line;
};

struct cli_command {
	const char *name;
	int (*run)(struct cli_ctx *ctx, int argc, char **argv);
	const struct cli_option *options; /* ends with { 0 } */
	const char *args;	   /* positional synopsis, e.g. "[SOURCE]" */
	const char *args_complete; /* "@file" etc. */
	const char *summary;
	bool hidden;
	/* Options shared with other commands (cli_output_options), after
	 * its own; NULL: none. */
	const struct cli_option *group;
};

/* The commands, each defined by its own file (cmd-*.c). */
extern const struct cli_command cli_cmd_dump, cli_cmd_pid, cli_cmd_convert,
	cli_cmd_verify, cli_cmd_extract, cli_cmd_mount, cli_cmd_info,
	cli_cmd_cat, cli_cmd_bench, cli_cmd_core_handler, cli_cmd_list,
	cli_cmd_show, cli_cmd_debug, cli_cmd_complete;
/* The libfuse version kcoredump mount runs on (cmd-mount.c). */
const char *cli_fuse_version(void);
/* The command of that name in a NULL-terminated table, or NULL. */
const struct cli_command *
cli_find_command(const struct cli_command *const *commands, const char *name);

/* -q and -v mean the same in every command (lint-short-options): less
 * and more output, each command saying in its help what that is. */
#define CLI_OPT_QUIET(help)                                       \
	{                                                         \
		"quiet", 'q', CLI_ARG_NONE, NULL, help, NULL, 'q' \
	}
#define CLI_OPT_VERBOSE(help)                                       \
	{                                                           \
		"verbose", 'v', CLI_ARG_NONE, NULL, help, NULL, 'v' \
	}
/* --arch: the machine of a LiME or AVML image (key DOPT_ARCH). */
#define CLI_OPT_ARCH                                                        \
	{                                                                   \
		"arch", 0, CLI_ARG_REQUIRED, "MACHINE",                     \
			"LiME/AVML: the machine, x86_64 or aarch64, where " \
			"its memory does not tell (no VMCOREINFO, no "      \
			"kernel banner)",                                   \
			"x86_64 aarch64", DOPT_ARCH                         \
	}

/* The options every command takes, appended to its own. */
extern const struct cli_option cli_common_options[];
/* The output options dump, convert and pid share (their group), handled
 * by cli_output_option() but for -q, -v, --progress, --no-progress and
 * -j. */
extern const struct cli_option cli_output_options[];

/*
 * Parse argv for cmd.  Returns each option's key with *ret_arg set, -1 at
 * the end (positional arguments then start at *ret_optind), or -2 after
 * printing a usage error.  --help prints help and returns -3.
 */
struct cli_parser;
struct cli_parser *cli_parser_create(const struct cli_command *cmd, int argc,
				     char **argv);
int cli_parser_next(struct cli_parser *p, const char **ret_arg);
int cli_parser_optind(const struct cli_parser *p);
void cli_parser_destroy(struct cli_parser *p);
/* Destroy p after the loop that ended with c; *ret_first is where the
 * positional arguments start.  Returns the exit status when the command
 * is done (--help printed, or a usage error), else -1. */
int cli_parser_end(struct cli_parser *p, int c, int *ret_first);

void cli_print_help(FILE *f, const struct cli_command *cmd);
/* An option's help with each {list} of the library's names filled in
 * ({formats}, {process-formats}, {physical-formats}, {codecs},
 * {compressions}; {list*}: the default first, marked), and its
 * completion words (@list: the names; else the spec's words, or NULL). */
const char *cli_option_help(const struct cli_option *o);
const char *cli_option_words(const struct cli_option *o);
/* The names of a list, table order and "none" last, joined into buf. */
const char *cli_names(const char *list, const char *sep, const char *last_sep,
		      char *buf, size_t size);
/* zlib pages: the codec every makedumpfile, crash and libkdumpfile
 * build reads (Debian 12's makedumpfile 1.7.2 has no zstd, sid's 1.7.8
 * no snappy). */
#define CLI_DEFAULT_CODEC KCORE_CODEC_ZLIB
/* --hash none: no digests (the dump option no_hash); the methods' names
 * are the library's (kcore_block_hash_from_name). */
#define CLI_HASH_NONE "none"
void cli_print_main_help(FILE *f, const struct cli_command *const *commands);

/* Report err on stderr (and as a JSON document with --json); frees it
 * and returns the exit status for it. */
int cli_fail(struct cli_ctx *ctx, struct kcore_error *err);
/* A usage error: message on stderr, returns EXIT_USAGE. */
int cli_usage_error(struct cli_ctx *ctx, const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A library error about the command line (KCORE_ERR_INVALID) as a usage
 * error of cmd, any other through cli_fail(); frees err. */
int cli_usage_fail(struct cli_ctx *ctx, const char *cmd,
		   struct kcore_error *err);
/* The usage error of a bad --exclude value (dump, convert, verify). */
int cli_bad_exclude(struct cli_ctx *ctx, const char *cmd, const char *arg);
int cli_exit_status(const struct kcore_error *err);
/* SIGINT, SIGTERM and SIGHUP set the returned flag, which the library's
 * long operations poll to stop cleanly; SIGPIPE is ignored. */
volatile sig_atomic_t *cli_catch_signals(void);

/* Levenshtein distance of two short strings (99 when one is 63 bytes or
 * longer): for "did you mean" suggestions. */
unsigned cli_edit_distance(const char *a, const char *b);

/* Parse sizes ("4096", "0x1000", "4K", "1M", "2G") and addresses. */
bool cli_parse_u64(const char *s, uint64_t *ret);
bool cli_parse_size(const char *s, uint64_t *ret);
/* "1.5 GiB" style, into buf. */
const char *cli_human_size(uint64_t bytes, char *buf, size_t size);

/*
 * Untrusted text (names and strings from a core, arguments the kernel
 * passes) made safe for a terminal or a log line: control bytes, DEL, C1
 * controls and bytes that are not UTF-8 as \xHH, newline and tab as \n
 * and \t, backslash doubled.  cli_escape_dup() returns a malloc()ed
 * copy; cli_esc() one that lives until 16 more calls (NULL stays NULL).
 */
char *cli_escape_dup(const char *s);
const char *cli_esc(const char *s);

/* Option keys shared by the dump and convert specs. */
enum {
	DOPT_FORMAT = 2000,
	DOPT_COMPRESS,
	DOPT_CODEC,
	DOPT_LEVEL,
	DOPT_THREADS,
	DOPT_BLOCK_SIZE,
	DOPT_VMALLOC,
	DOPT_CALLER,
	DOPT_RANGE,
	DOPT_PHYS,
	DOPT_SEGMENTS,
	DOPT_MAPPING,
	DOPT_FORCE,
	DOPT_SYNC,
	DOPT_SPECIAL_OUTPUT,
	DOPT_PROGRESS,
	DOPT_NO_PROGRESS,
	DOPT_DRY_RUN,
	DOPT_HASH,
	DOPT_FRAME_SIZE,
	DOPT_FILE_SHA256,
	DOPT_ALLOW_RAM_OUTPUT,
	DOPT_RECORD,
	DOPT_CASE,
	DOPT_EXAMINER,
	DOPT_NOTES,
	DOPT_STORED,
	DOPT_ARCH,
	DOPT_SMEAR_CHECK,
	DOPT_READ_ORDER,
	DOPT_LIVE,
};

/* --arch NAME into *machine (e_machine); 0, or the usage error's exit
 * status for a name it does not know. */
int cli_arch_option(struct cli_ctx *ctx, const char *cmd, const char *arg,
		    uint16_t *machine);

/*
 * The output options dump, convert and pid share (-o, -f, --sync,
 * --compress, --hash, --level, -T, --block-size, --frame-size): store option
 * c's value in opts.  0: it was one of them; -1: it was not; otherwise the
 * usage error's exit status for a bad value.
 */
struct kcore_dump_opts;
int cli_output_option(struct cli_ctx *ctx, const char *cmd, int c,
		      const char *arg, struct kcore_dump_opts *opts,
		      bool *compress_set);

/* A dump's segments as JSON (plan-json.c); with done, what the dump
 * found, with hashed their digests. */
struct kcore_json;
struct kcore_plan;
struct kcore_dump_result;
struct kcore_source_info;
void cli_dump_segments_json(struct kcore_json *j, const struct kcore_plan *plan,
			    bool done, bool hashed);
/* core-handler --install (install) or --print-pattern: the best of the
 * socket (sock, else the default one when it is there) and the pipe
 * pattern that the kernel takes; with install, written to core_pattern
 * (core_pipe_limit set to pipe_limit for the pipe).  The exit status
 * (core-handler-install.c). */
int cli_core_pattern(const char *sock, const char *pipe_pattern, bool install,
		     unsigned pipe_limit);

/* What dump and convert print (dump-report.c): the plan (--dry-run, -v)
 * as text or as JSON, and a dump's summary as text or as JSON. */
struct kcore_dump_opts;
struct cli_record;
void cli_dump_print_plan(FILE *f, const struct kcore_plan *plan);
void cli_dump_plan_json(FILE *f, const struct kcore_plan *plan);
void cli_dump_summary_text(FILE *f, const struct kcore_plan *plan,
			   const struct kcore_dump_opts *o,
			   const struct kcore_dump_result *r,
			   const struct cli_record *record);
void cli_dump_summary_json(FILE *f, const struct kcore_plan *plan,
			   const struct kcore_dump_opts *o,
			   const struct kcore_dump_result *r,
			   const struct cli_record *record);

/*
 * dump --record FILE (record.c): the acquisition record as JSON in FILE
 * and as text in FILE with .json replaced by .txt (else FILE.txt).
 * cli_record_open() creates both (unnamed until written) before the dump
 * reads anything: it fails when they exist (without force) or cannot be
 * created.  cli_record_write() fills and publishes them.
 */
struct cli_record;
struct kcore_error *cli_record_open(const char *path, const char *dump_output,
				    bool force, struct cli_record **ret);
struct kcore_error *cli_record_write(struct cli_record *r,
				     const struct cli_ctx *ctx,
				     const struct kcore_source_info *in,
				     const struct kcore_plan *plan,
				     const struct kcore_dump_opts *o,
				     const struct kcore_dump_result *res);
const char *cli_record_json_path(const struct cli_record *r);
const char *cli_record_text_path(const struct cli_record *r);
void cli_record_destroy(struct cli_record *r);

/* dump and convert: parse argv with cmd's spec and run. */
int cli_dump_run(struct cli_ctx *ctx, const struct cli_command *cmd, int argc,
		 char **argv);

/* Progress of a dump on stderr (progress.c); arg is a struct
 * cli_progress. */
struct kcore_dump_stats;
struct cli_progress_timer;
struct cli_progress {
	bool tty;
	bool shown;
	/* The flag cli_catch_signals() sets, or NULL: once set, the line
	 * says "stopping…" (redrawn at once) instead of an ETA. */
	volatile sig_atomic_t *cancel;
	/* cli_progress_start(): a thread that redraws the last figures at
	 * least every 500 ms (a second without a terminal), with the time
	 * that passed since, so that a dump that waits (a slow disk, a
	 * full pipe, the last phase) is seen to. */
	struct cli_progress_timer *timer;
	/* The line for other work than a dump's (verify, mount's
	 * prefetch), fed the same figures; NULL: the dump's line. */
	void (*draw)(struct cli_progress *ps, const struct kcore_dump_stats *st,
		     double elapsed);
};
void cli_dump_progress(void *arg, const struct kcore_dump_stats *st);
void cli_progress_start(struct cli_progress *ps);
/* Stop the redraws (and free the timer); safe without a start. */
void cli_progress_stop(struct cli_progress *ps);
/* Whether a signal asked the work to stop (ps->cancel is set). */
bool cli_progress_stopping(const struct cli_progress *ps);

/*
 * A progress line as fields, each with how long it is kept as the
 * terminal narrows (higher: longer).  cli_progress_fit() joins the
 * fields in order ("  " after the first, ", " between the others),
 * dropping the least kept until the line is narrower than width (0: no
 * limit), and cuts the last one left; cli_progress_print() draws it on
 * stderr, fitted to the terminal (TIOCGWINSZ, else $COLUMNS, else 80)
 * and redrawn in place ("\r\e[K"), or as a whole line without one.
 */
#define CLI_PROGRESS_FIELDS 12
struct cli_progress_line {
	size_t n;
	struct {
		char text[64];
		int keep;
	} f[CLI_PROGRESS_FIELDS];
};
void cli_progress_add(struct cli_progress_line *l, int keep, const char *fmt,
		      ...) __attribute__((format(printf, 3, 4)));
void cli_progress_fit(const struct cli_progress_line *l, unsigned width,
		      char *buf, size_t size);
void cli_progress_print(struct cli_progress *ps,
			const struct cli_progress_line *l);
unsigned cli_term_width(void);
/* Seconds as h:mm:ss ("0:04:05", "26:00:07"). */
const char *cli_hms(double seconds, char *buf, size_t size);
/* "kcoredump CMD ARGS..." for the metadata note, argv[0] (the command,
 * or the program for the no-command shorthand) replaced by CMD and
 * arguments quoted as a shell needs them; malloc()ed. */
char *cli_join_args(const char *cmd, int argc, char **argv);

/*
 * A dump that is incomplete (kcore_dump_incomplete) says so: the summary's
 * line, the JSON summary's "complete" and "incomplete" members and its read
 * errors, and the exit status EXIT_INCOMPLETE.  cli_dump_status() is
 * EXIT_OK or EXIT_INCOMPLETE; with quiet (no summary said so: -q without
 * --json) it says so in one line on stderr.  why: NULL, or the reason the
 * ranges were not read ("the process exited during the copy").
 */
struct kcore_dump_result;
struct kcore_json;
/*
 * The two hashes of a dump: the file's SHA-256 (sha256sum's) and the
 * segment-digest root (the same content hashes alike in every format),
 * with where the segment digests are kept (nostore: "LiME", "AVML", a
 * format without notes; NULL otherwise).
 */
void cli_dump_hashes_text(FILE *f, const struct kcore_dump_result *r,
			  const char *nostore);
/* A dump's "stats" object: dump, convert and pid (one vocabulary). */
void cli_dump_stats_json(struct kcore_json *j,
			 const struct kcore_dump_stats *st);
void cli_dump_hashes_json(struct kcore_json *j,
			  const struct kcore_dump_result *r);
/*
 * Where a dump's time went: the read (its rate's divisor), the end of the
 * file, the wait for the file's SHA-256 after the read (and the time its
 * thread hashed alongside the read), publishing, and the whole.
 */
struct kcore_dump_stats;
void cli_dump_time_text(FILE *f, const struct kcore_dump_stats *st);
void cli_dump_time_json(struct kcore_json *j,
			const struct kcore_dump_stats *st);
/* The format's own JSON object of a dump summary (its writer's detail). */
struct kcore_dump_detail;
void cli_json_detail(struct kcore_json *j, const struct kcore_dump_detail *d);
void cli_dump_incomplete_text(FILE *f, const struct kcore_dump_result *r,
			      const char *why);
void cli_dump_incomplete_json(struct kcore_json *j,
			      const struct kcore_dump_result *r);
int cli_dump_status(const struct kcore_dump_result *r, bool quiet,
		    const char *why);

struct kcore_smear;
/* --smear-check's report (kcore_dump_result.smear): lines of the
 * summary and the record, and a "smear" member (null when not asked). */
void cli_smear_text(FILE *f, const struct kcore_smear *sm);
void cli_smear_json(struct kcore_json *j, const struct kcore_smear *sm);

/* When a dump read an address, from its note's time map: mode says
 * whether addr is virtual, physical, or either (virtual first). */
enum { CLI_READ_TIME_VIRTUAL, CLI_READ_TIME_PHYSICAL, CLI_READ_TIME_EITHER };
struct cli_read_time {
	bool known;
	bool physical; /* addr matched a segment's physical range */
	struct kcore_read_when w;
	char read_start[64];
	const char *why; /* when not known */
};
struct kcore_error *cli_read_time(struct kcore_source *src, uint64_t addr,
				  int mode, struct cli_read_time *ret);
void cli_read_time_text(FILE *f, uint64_t addr, const struct cli_read_time *rt);
void cli_read_time_json(struct kcore_json *j, uint64_t addr,
			const struct cli_read_time *rt);

#endif
