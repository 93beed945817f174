/* SPDX-License-Identifier: MIT */
/*
 * Matches on the stored cores' metadata, shared by list and show:
 * coredumpctl's MATCH arguments and -S/-U times.
 */
#ifndef KCOREDUMP_CLI_STORE_MATCH_H
#define KCOREDUMP_CLI_STORE_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcoredump/corehandler.h"

/* The fields a match can name (coredumpctl's, with or without the
 * journal's COREDUMP_ prefix). */
enum store_field { F_PID, F_UID, F_GID, F_SIGNAL, F_COMM, F_EXE, F_NUM };
struct match {
	enum store_field field;
	const char *value;
	int64_t num; /* PID, UID, GID, SIGNAL */
};

bool store_parse_i64(const char *s, int64_t *ret);
/* One MATCH: a number is a PID, a path (with a slash) an executable, a
 * FIELD=VALUE a field, anything else a COMM.  false if it is bad. */
bool store_parse_match(const char *arg, struct match *m);
/* Every field named holds for one of its matches. */
bool store_matches(const struct kcore_stored_core *c, const struct match *m,
		   size_t n);
/* TIME of -S (until false) or -U (until true), seconds since the epoch. */
bool store_parse_time(const char *s, bool until, int64_t *ret);

struct cli_ctx;
struct kcore_json;
/* The fields of core c for list --json and show --json, as the members
 * of an object left open for more. */
void store_json_core(struct kcore_json *j, const struct kcore_stored_core *c);
/*
 * Option opt ('S' or 'U') of command cmd with argument arg into *since
 * or *until.  -1 when it parses, else the exit status of the usage error
 * already reported.
 */
int store_opt_time(struct cli_ctx *ctx, const char *cmd, int opt,
		   const char *arg, int64_t *since, int64_t *until);
/*
 * The MATCH arguments argv[first..argc) of command cmd into *ret (NULL
 * when there are none; free() it) and *ret_n.  -1 when they parse, else
 * the exit status of the usage error already reported.
 */
int store_args_matches(struct cli_ctx *ctx, const char *cmd, int argc,
		       char **argv, int first, struct match **ret,
		       size_t *ret_n);
/*
 * The cores stored in dir (for a user who may not open it, those in its
 * user.UID directory, with subdir set to it) into *ret and *ret_n, for
 * kcore_stored_cores_free().  No directory (nothing was ever stored; no
 * user.UID: nothing this user may read) is no cores.  -1 on success, else
 * the exit status of the error already reported.
 */
int store_load(struct cli_ctx *ctx, const char *dir,
	       struct kcore_stored_core **ret, size_t *ret_n);
/*
 * The newest core in dir whose file is there and that the MATCH
 * arguments argv[first..argc) of command cmd name: *ret_core (NULL when
 * none), in *ret_cores and *ret_n for kcore_stored_cores_free().  -1 on
 * success (a match or none), else the exit status of the error already
 * reported.
 */
int store_newest_match(struct cli_ctx *ctx, const char *cmd, const char *dir,
		       int argc, char **argv, int first,
		       struct kcore_stored_core **ret_cores, size_t *ret_n,
		       struct kcore_stored_core **ret_core);
/* DIR/[SUBDIR/]CORE (or its metadata's name when it names no core);
 * malloc()ed, NULL when out of memory. */
char *store_core_path(const char *dir, const struct kcore_stored_core *c);

#endif
