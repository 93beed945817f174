/* SPDX-License-Identifier: MIT */
/* The core directory's helpers shared inside libkcore; not installed. */
#ifndef KCOREDUMP_COREDIR_H
#define KCOREDUMP_COREDIR_H

#include "kcoredump/corehandler.h"

/* "core." followed by anything without '/'. */
bool kcore_coredir_name_ok(const char *name);
/* Bytes the core and its metadata take on disk. */
uint64_t kcore_coredir_usage(int dir_fd, const struct kcore_stored_core *c);
/* Remove the core and its metadata (regular files only). */
void kcore_coredir_remove(int dir_fd, const struct kcore_stored_core *c);

#endif
