/* SPDX-License-Identifier: MIT */
/* The crashing process's page tables as a map of the zeros in its core
 * stream (corehandler-holes.c); not installed. */
#ifndef KCOREDUMP_COREHANDLER_HOLES_H
#define KCOREDUMP_COREHANDLER_HOLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcoredump/error.h"

struct ch_holes;

/* A PT_LOAD of the stream. */
struct ch_load {
	uint64_t offset, vaddr, filesz, memsz;
};

/*
 * Look at process pid (the one dumping core into the stream), through
 * proc_fd (its directory under procfs, opened while it dumps) and find, in its
 * private anonymous mappings, the runs of at least min_run stream bytes that
 * its page tables leave empty.  When the page tables cannot be trusted to say
 * what the kernel writes (the process is not dumping core, shares its memory
 * with another process, its mappings do not match the loads, ...), *ret is NULL
 * and *ret_why (malloc()ed) says why; that is not an error.
 */
struct kcore_error *ch_holes_create(const char *procfs, int proc_fd,
				    int64_t pid, const struct ch_load *loads,
				    size_t nloads, uint64_t min_run,
				    struct ch_holes **ret, char **ret_why);
void ch_holes_destroy(struct ch_holes *h);

/* Stream bytes before guard may have been decided before the first look
 * at the page tables: never treat them as holes. */
void ch_holes_set_guard(struct ch_holes *h, uint64_t guard);

/* The stream bytes from start to the end of its hole run, in whole
 * units; 0 when start is in none, or before the guard. */
uint64_t ch_holes_run(const struct ch_holes *h, uint64_t start, uint64_t unit);

/* Whether stream byte pos is in a hole run (after the guard). */
bool ch_holes_contains(const struct ch_holes *h, uint64_t pos);

/* Look at the page tables again: *ret_empty when the mapping behind
 * stream bytes [start, end) (inside one run) still has no page. */
struct kcore_error *ch_holes_recheck(struct ch_holes *h, uint64_t start,
				     uint64_t end, bool *ret_empty);

/* Bytes found as holes by the first look, and page-table looks made. */
uint64_t ch_holes_bytes(const struct ch_holes *h);
uint64_t ch_holes_scans(const struct ch_holes *h);

#endif
