/* SPDX-License-Identifier: MIT */
/*
 * dump MATCH (as coredumpctl dump): a stored core's plain bytes.
 */
#ifndef KCOREDUMP_CLI_STORE_DUMP_H
#define KCOREDUMP_CLI_STORE_DUMP_H

#include <stdbool.h>

struct cli_ctx;

/* arg names no file and reads as a MATCH (a PID, FIELD=VALUE or a
 * COMM): dump takes it as one. */
bool store_dump_wanted(const char *arg);
/*
 * The newest core in dir that the MATCH arguments argv[first..argc)
 * name, into output ("-": stdout); replaces a file only with force.
 * The exit status.
 */
int store_dump(struct cli_ctx *ctx, const char *cmd, const char *dir, int argc,
	       char **argv, int first, const char *output, bool force,
	       bool quiet);

#endif
